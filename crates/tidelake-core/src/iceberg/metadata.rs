//! Iceberg table metadata files, `v<N>.metadata.json` (Iceberg spec "Table Metadata"; Java
//! `IcebergMetadata`, `IcebergSnapshot`, `IcebergRef`).
//!
//! Invariants: version N describes Paimon snapshot N (metadata version = snapshot id =
//! Iceberg snapshot id = sequence number, as Java writes them); schemas and partition specs
//! are kept as JSON values so that metadata Java wrote round-trips unchanged.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

use crate::error::{Error, Result};

/// `version-hint.text` (Iceberg `org.apache.iceberg.hadoop.Util.VERSION_HINT_FILENAME`).
pub const VERSION_HINT: &str = "version-hint.text";

/// The file name of metadata version `n`.
pub fn metadata_file(n: i64) -> String {
    format!("v{n}.metadata.json")
}

/// The version of a metadata file name (`v12.metadata.json` → 12).
pub fn metadata_version(name: &str) -> Option<i64> {
    name.strip_prefix('v')?
        .strip_suffix(".metadata.json")?
        .parse()
        .ok()
}

/// Iceberg snapshot summary (only `operation`, as Java writes it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub operation: String,
    #[serde(flatten)]
    pub other: Map<String, Json>,
}

impl Summary {
    pub fn of(operation: &str) -> Summary {
        Summary {
            operation: operation.to_string(),
            other: Map::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct IcebergSnapshot {
    pub sequence_number: i64,
    pub snapshot_id: i64,
    pub timestamp_ms: i64,
    pub summary: Summary,
    pub manifest_list: String,
    pub schema_id: i64,
}

/// A tag (Java `IcebergRef`: tags never expire on the Iceberg side).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct IcebergRef {
    pub snapshot_id: i64,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ref_age_ms: Option<i64>,
}

impl IcebergRef {
    pub fn tag(snapshot_id: i64) -> IcebergRef {
        IcebergRef {
            snapshot_id,
            kind: "tag".into(),
            max_ref_age_ms: Some(i64::MAX),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct TableMetadata {
    pub format_version: i32,
    pub table_uuid: String,
    pub location: String,
    pub last_sequence_number: i64,
    pub last_updated_ms: i64,
    pub last_column_id: i32,
    pub schemas: Vec<Json>,
    pub current_schema_id: i64,
    pub partition_specs: Vec<Json>,
    pub default_spec_id: i32,
    pub last_partition_id: i32,
    pub sort_orders: Vec<Json>,
    pub default_sort_order_id: i32,
    pub snapshots: Vec<IcebergSnapshot>,
    pub current_snapshot_id: i64,
    #[serde(default)]
    pub properties: Map<String, Json>,
    #[serde(default)]
    pub refs: BTreeMap<String, IcebergRef>,
}

impl TableMetadata {
    pub fn parse(bytes: &[u8], what: &str) -> Result<TableMetadata> {
        serde_json::from_slice(bytes).map_err(|e| Error::corrupt(what, e))
    }

    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).expect("metadata always serialises")
    }

    /// The current snapshot.
    pub fn current_snapshot(&self) -> Option<&IcebergSnapshot> {
        self.snapshots
            .iter()
            .find(|s| s.snapshot_id == self.current_snapshot_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_from_file_names() {
        assert_eq!(metadata_version(&metadata_file(12)), Some(12));
        assert_eq!(metadata_version("version-hint.text"), None);
        assert_eq!(metadata_version("vX.metadata.json"), None);
    }
}
