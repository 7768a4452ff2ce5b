//! Where a table's files live, derived from its schema: partition and key columns, partition
//! directory names and bucket directories (Java `FileStorePathFactory`); [`DataPath`]: where
//! each new data file of a bucket goes (table directory or external roots).
//!
//! Invariants: directories are always recomputed from the partition BinaryRow, never listed,
//! exactly as Java readers do; every bucket directory is below `data-file.path-directory` when
//! the table sets it (Java `relativeBucketPath`), in the table and under external roots alike.

mod data_path;

pub use data_path::{DataPath, NewFilePath};
use tidelake_spec::binary_row::decode_framed;
use tidelake_spec::datum::Datum;
use tidelake_spec::partition::PartitionComputer;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::{DataField, DataType};

use crate::error::{Error, Result};

/// Partition/key/bucket layout of one schema version.
#[derive(Debug, Clone)]
pub struct TableLayout {
    pub partition_fields: Vec<DataField>,
    pub partition_types: Vec<DataType>,
    /// Primary key minus partition keys, as fields of the schema.
    pub trimmed_key_fields: Vec<DataField>,
    computer: PartitionComputer,
    /// `data-file.path-directory`, without surrounding slashes (`None`: unset or empty).
    data_dir: Option<String>,
}

impl TableLayout {
    pub fn new(schema: &TableSchema) -> Result<TableLayout> {
        let fields_of = |names: &[String]| -> Result<Vec<DataField>> {
            names
                .iter()
                .map(|n| {
                    schema.field(n).cloned().ok_or_else(|| {
                        Error::corrupt(
                            format!("schema-{}", schema.id),
                            format!("key column '{n}' is not in the schema"),
                        )
                    })
                })
                .collect()
        };
        let partition_fields = fields_of(&schema.partition_keys)?;
        let trimmed_key_fields = fields_of(&schema.trimmed_primary_keys())?;
        let partition_types: Vec<DataType> = partition_fields
            .iter()
            .map(|f| f.data_type.clone())
            .collect();
        let opts = schema.options();
        let legacy = opts
            .partition_legacy_name()
            .map_err(|e| Error::from_spec("table options", e))?;
        let computer = PartitionComputer::new(
            schema.partition_keys.clone(),
            partition_types.clone(),
            opts.partition_default_name(),
            legacy,
        )
        .map_err(|e| Error::from_spec("table options", e))?;
        let data_dir = opts
            .data_file_path_directory()
            .map(|d| d.trim_matches('/'))
            .filter(|d| !d.is_empty())
            .map(str::to_string);
        Ok(TableLayout {
            partition_fields,
            partition_types,
            trimmed_key_fields,
            computer,
            data_dir,
        })
    }

    pub fn key_types(&self) -> Vec<DataType> {
        self.trimmed_key_fields
            .iter()
            .map(|f| f.data_type.clone())
            .collect()
    }

    /// Decode a framed partition BinaryRow.
    pub fn decode_partition(&self, framed: &[u8]) -> Result<Vec<Datum>> {
        decode_framed(framed, &self.partition_types)
            .map_err(|e| Error::from_spec("manifest partition", e))
    }

    /// `k1=v1/k2=v2` for a decoded partition (empty for unpartitioned tables).
    pub fn partition_path(&self, values: &[Datum]) -> Result<String> {
        self.computer
            .partition_path(values)
            .map_err(|e| Error::from_spec("partition", e))
    }

    /// Unescaped `(name, value)` pairs for display.
    pub fn partition_spec(&self, values: &[Datum]) -> Result<Vec<(String, String)>> {
        self.computer
            .partition_spec(values)
            .map_err(|e| Error::from_spec("partition", e))
    }

    /// The bucket directory of a (partition, bucket), relative to the table root.
    pub fn bucket_path(&self, partition: &[Datum], bucket: i32) -> Result<String> {
        let bucket_dir = if bucket == -2 {
            "bucket-postpone".to_string()
        } else {
            format!("bucket-{bucket}")
        };
        let part = self.partition_path(partition)?;
        let mut path = String::new();
        for dir in self
            .data_dir
            .iter()
            .chain((!part.is_empty()).then_some(&part))
        {
            path.push_str(dir);
            path.push('/');
        }
        path.push_str(&bucket_dir);
        Ok(path)
    }

    /// The directory under the table root (or an external root) that holds the partition and
    /// bucket directories (`data-file.path-directory`; `None`: the root itself).
    pub fn data_dir(&self) -> Option<&str> {
        self.data_dir.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use tidelake_spec::options::Options;
    use tidelake_spec::types::TypeKind;

    use super::*;

    fn layout(partition_keys: &[&str], options: &[(&str, &str)]) -> TableLayout {
        let field = |id, name: &str| DataField {
            id,
            name: name.into(),
            data_type: DataType::not_null(TypeKind::Int),
            description: None,
            default_value: None,
        };
        let mut opts = Options::new();
        for (k, v) in options {
            opts.set(*k, *v);
        }
        let keys = partition_keys.iter().map(|k| k.to_string()).collect();
        let schema = TableSchema::new(0, vec![field(0, "k"), field(1, "dt")], keys, vec![], opts);
        TableLayout::new(&schema.unwrap()).unwrap()
    }

    #[test]
    fn bucket_directories_are_below_the_data_directory_when_set() {
        let dt = [Datum::Int(7)];
        assert_eq!(
            layout(&["dt"], &[]).bucket_path(&dt, 1).unwrap(),
            "dt=7/bucket-1"
        );
        let data = layout(&["dt"], &[("data-file.path-directory", "/a/b/")]);
        assert_eq!(data.data_dir(), Some("a/b"));
        assert_eq!(data.bucket_path(&dt, 1).unwrap(), "a/b/dt=7/bucket-1");
        assert_eq!(
            data.bucket_path(&dt, -2).unwrap(),
            "a/b/dt=7/bucket-postpone"
        );
        let flat = layout(&[], &[("data-file.path-directory", "data")]);
        assert_eq!(flat.bucket_path(&[], 0).unwrap(), "data/bucket-0");
        assert_eq!(
            layout(&[], &[("data-file.path-directory", "")]).data_dir(),
            None
        );
    }
}
