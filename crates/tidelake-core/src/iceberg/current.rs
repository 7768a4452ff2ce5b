//! Reading back the Iceberg table a Paimon snapshot was described as (for
//! `tidelake doctor --verify`): the metadata version of the snapshot, the version the hint
//! names, and the data files of the version's current Iceberg snapshot.
//!
//! Invariant: nothing is written; the manifests are decoded by [`super::manifest`], the
//! decoder of the metadata [`super::sync`] reuses as its base, and data file locations are
//! computed by [`data_file_location`], the function `sync` writes them with.

use tidelake_spec::manifest::ManifestEntry as PaimonEntry;

use super::manifest::{self, file_name, CONTENT_DATA};
use super::metadata::{metadata_file, TableMetadata, VERSION_HINT};
use super::options::IcebergConfig;
use crate::branch::MAIN_BRANCH;
use crate::error::Result;
use crate::layout::TableLayout;
use crate::table::Table;

/// Where a Paimon data file lives, as the location Iceberg metadata names it by.
pub fn data_file_location(table: &Table, layout: &TableLayout, e: &PaimonEntry) -> Result<String> {
    if let Some(p) = &e.file.external_path {
        return Ok(p.clone());
    }
    let values = layout.decode_partition(&e.partition)?;
    let bucket = layout.bucket_path(&values, e.bucket)?;
    Ok(format!(
        "{}/{bucket}/{}",
        table.location().trim_end_matches('/'),
        e.file.file_name
    ))
}

/// One data file of an Iceberg snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IcebergDataFile {
    pub location: String,
    pub record_count: i64,
    pub file_size: i64,
}

/// What the Iceberg metadata of one Paimon snapshot says.
#[derive(Clone, Debug)]
pub struct IcebergState {
    /// The metadata file of the snapshot's version, as errors name it.
    pub metadata_path: String,
    /// The version `version-hint.text` names (`None`: no readable hint).
    pub hint: Option<i64>,
    /// `None`: the snapshot's metadata version is missing.
    pub version: Option<IcebergVersion>,
    /// Whether the table is a primary-key table: its Iceberg table lists only the files that
    /// need no merge (which of them depends on how the version was built, Java's rule).
    pub primary_key: bool,
}

/// One metadata version's current snapshot.
#[derive(Clone, Debug)]
pub struct IcebergVersion {
    /// Its current snapshot id (`None`: it has no current snapshot).
    pub current_snapshot: Option<i64>,
    /// The live data files of its current snapshot.
    pub files: Vec<IcebergDataFile>,
}

/// The Iceberg metadata of snapshot `id` of `table`; `None` when the table does not ask for
/// Iceberg metadata (or is a branch other than main, which gets none).
pub async fn read_state(table: &Table, id: i64) -> Result<Option<IcebergState>> {
    if table.branch() != MAIN_BRANCH {
        return Ok(None);
    }
    let Some(cfg) = IcebergConfig::of(table.schema().options())? else {
        return Ok(None);
    };
    let io = cfg.metadata_io(table)?;
    let hint = io
        .read_opt(VERSION_HINT)
        .await?
        .and_then(|b| String::from_utf8_lossy(&b).trim().parse().ok());
    let name = metadata_file(id);
    let metadata_path = io.display(&name);
    let mut state = IcebergState {
        metadata_path: metadata_path.clone(),
        hint,
        version: None,
        primary_key: !table.schema().primary_keys.is_empty(),
    };
    let Some(bytes) = io.read_opt(&name).await? else {
        return Ok(Some(state));
    };
    let metadata = TableMetadata::parse(&bytes, &metadata_path)?;
    let partition = TableLayout::new(table.schema())?.partition_fields;
    let mut files = Vec::new();
    if let Some(current) = metadata.current_snapshot() {
        let list_name = file_name(&current.manifest_list);
        let list =
            manifest::read_manifest_list(&io.read(list_name).await?, &io.display(list_name))?;
        for m in list.iter().filter(|m| m.content == CONTENT_DATA) {
            let name = m.file_name();
            let entries =
                manifest::read_manifest(&io.read(name).await?, &partition, &io.display(name))?;
            files.extend(
                entries
                    .into_iter()
                    .filter(|e| e.is_live())
                    .map(|e| IcebergDataFile {
                        location: e.data_file.file_path,
                        record_count: e.data_file.record_count,
                        file_size: e.data_file.file_size_in_bytes,
                    }),
            );
        }
    }
    state.version = Some(IcebergVersion {
        current_snapshot: metadata.current_snapshot().map(|s| s.snapshot_id),
        files,
    });
    Ok(Some(state))
}
