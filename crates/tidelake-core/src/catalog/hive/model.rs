//! The Hive Metastore objects of Paimon databases and tables, as Java's `HiveCatalog` writes
//! them: databases (`convertToHiveDatabase`, `getDatabaseImpl`), tables (`newHmsTable`,
//! `updateHmsTable`, `updateHmsTablePars`), partitions (`createPartitions`) and column types
//! (`HiveTypeUtils.toTypeInfo`, with Hive 3's type names).
//!
//! Invariants: the schema files stay the truth: a table's HMS columns, partition keys and
//! parameters are derived from its latest main-branch schema, never read back into one; a table
//! is a Paimon table iff its storage descriptor names Paimon's input and output formats (Java
//! `isPaimonTable`, legacy Flink Table Store names included); fields of an HMS object read from
//! the metastore and written back (an alter) are kept unless Java sets them.

use std::collections::BTreeMap;

use tidelake_spec::options::{
    DATA_FILE_PATH_DIRECTORY, METASTORE_TAG_TO_PARTITION, PARTITION_EXPIRATION_TIME,
};
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::DataType;

use super::thrift::{Struct, Value};
use super::types::{hive_type, HiveColumn};
use crate::error::{Error, Result};

/// Thrift field ids of the HMS structs (hive_metastore.thrift, the same in HMS 3 and 4).
mod id {
    pub(super) const DB_NAME: i16 = 1;
    pub(super) const DB_DESCRIPTION: i16 = 2;
    pub(super) const DB_LOCATION: i16 = 3;
    pub(super) const DB_PARAMETERS: i16 = 4;
    pub(super) const DB_OWNER_NAME: i16 = 6;

    pub(super) const TABLE_NAME: i16 = 1;
    pub(super) const TABLE_DB: i16 = 2;
    pub(super) const TABLE_OWNER: i16 = 3;
    pub(super) const TABLE_CREATE_TIME: i16 = 4;
    pub(super) const TABLE_LAST_ACCESS_TIME: i16 = 5;
    pub(super) const TABLE_RETENTION: i16 = 6;
    pub(super) const TABLE_SD: i16 = 7;
    pub(super) const TABLE_PARTITION_KEYS: i16 = 8;
    pub(super) const TABLE_PARAMETERS: i16 = 9;
    pub(super) const TABLE_TYPE: i16 = 12;
    pub(super) const TABLE_OWNER_TYPE: i16 = 18;

    pub(super) const SD_COLS: i16 = 1;
    pub(super) const SD_LOCATION: i16 = 2;
    pub(super) const SD_INPUT_FORMAT: i16 = 3;
    pub(super) const SD_OUTPUT_FORMAT: i16 = 4;
    pub(super) const SD_COMPRESSED: i16 = 5;
    pub(super) const SD_NUM_BUCKETS: i16 = 6;
    pub(super) const SD_SERDE: i16 = 7;

    pub(super) const SERDE_LIB: i16 = 2;
    pub(super) const SERDE_PARAMETERS: i16 = 3;

    pub(super) const FIELD_NAME: i16 = 1;
    pub(super) const FIELD_TYPE: i16 = 2;
    pub(super) const FIELD_COMMENT: i16 = 3;

    pub(super) const PARTITION_VALUES: i16 = 1;
    pub(super) const PARTITION_DB: i16 = 2;
    pub(super) const PARTITION_TABLE: i16 = 3;
    pub(super) const PARTITION_CREATE_TIME: i16 = 4;
    pub(super) const PARTITION_LAST_ACCESS_TIME: i16 = 5;
    pub(super) const PARTITION_SD: i16 = 6;
}

const INPUT_FORMAT: &str = "org.apache.paimon.hive.mapred.PaimonInputFormat";
const OUTPUT_FORMAT: &str = "org.apache.paimon.hive.mapred.PaimonOutputFormat";
const LEGACY_INPUT_FORMAT: &str = "org.apache.flink.table.store.mapred.TableStoreInputFormat";
const LEGACY_OUTPUT_FORMAT: &str = "org.apache.flink.table.store.mapred.TableStoreOutputFormat";
const SERDE: &str = "org.apache.paimon.hive.PaimonSerDe";
const STORAGE_HANDLER: &str = "org.apache.paimon.hive.PaimonStorageHandler";
/// `hive_metastoreConstants.META_TABLE_STORAGE`.
const STORAGE_HANDLER_PARAMETER: &str = "storage_handler";
/// Java `HiveCatalog.TABLE_TYPE_PROP` and `PAIMON_TABLE_IDENTIFIER`.
const TABLE_TYPE_PARAMETER: &str = "table_type";
const PAIMON_TABLE_TYPE: &str = "PAIMON";
const MANAGED_TABLE: &str = "MANAGED_TABLE";
const EXTERNAL_TABLE: &str = "EXTERNAL_TABLE";
/// Java `CoreOptions.PRIMARY_KEY`, `PARTITION`, `BUCKET_KEY` as table parameters.
const PRIMARY_KEY_PARAMETER: &str = "primary-key";
const PARTITION_PARAMETER: &str = "partition";
const BUCKET_KEY_PARAMETER: &str = "bucket-key";
/// Java `Catalog.COMMENT_PROP`, `OWNER_PROP`, `DB_LOCATION_PROP`.
pub(crate) const COMMENT: &str = "comment";
const OWNER: &str = "owner";
pub(crate) const LOCATION: &str = "location";
/// The prefix of the options copied without `sync-all-properties`.
const HIVE_PREFIX: &str = "hive.";
/// Thrift `PrincipalType.USER`.
const USER_PRINCIPAL: i32 = 1;
/// An Iceberg table over a Paimon table's Iceberg metadata (Java
/// `IcebergHiveMetadataCommitter`): its type, formats, serde and metadata pointers.
const ICEBERG_TABLE_TYPE: &str = "ICEBERG";
const FILE_INPUT_FORMAT: &str = "org.apache.hadoop.mapred.FileInputFormat";
const FILE_OUTPUT_FORMAT: &str = "org.apache.hadoop.mapred.FileOutputFormat";
const LAZY_SIMPLE_SERDE: &str = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe";
const METADATA_LOCATION: &str = "metadata_location";
const PREVIOUS_METADATA_LOCATION: &str = "previous_metadata_location";
/// `StatsSetupConst.DO_NOT_UPDATE_STATS`; `hive_metastoreConstants` `EXTERNAL`.
pub(crate) const DO_NOT_UPDATE_STATS: &str = "DO_NOT_UPDATE_STATS";
const EXTERNAL: &str = "EXTERNAL";

/// A metastore database.
#[derive(Clone, Debug)]
pub(crate) struct HmsDatabase(pub(crate) Struct);

impl HmsDatabase {
    /// Java `convertToHiveDatabase`: `comment`, `owner` and `location` go to their fields, the
    /// other properties to the parameters.
    pub(crate) fn new(name: &str, properties: &BTreeMap<String, String>) -> HmsDatabase {
        let mut db = Struct::default().with(id::DB_NAME, Value::text(name));
        let mut parameters = BTreeMap::new();
        for (key, value) in properties {
            match key.as_str() {
                COMMENT => db.set(id::DB_DESCRIPTION, Value::text(value)),
                OWNER => db.set(id::DB_OWNER_NAME, Value::text(value)),
                LOCATION => db.set(id::DB_LOCATION, Value::text(value)),
                _ => {
                    parameters.insert(key.clone(), value.clone());
                }
            }
        }
        HmsDatabase(db.with(id::DB_PARAMETERS, Value::text_map(&parameters)))
    }

    pub(crate) fn location(&self) -> Option<String> {
        self.0.text(id::DB_LOCATION)
    }

    pub(crate) fn parameters(&self) -> BTreeMap<String, String> {
        self.0.text_map(id::DB_PARAMETERS)
    }

    /// Java `getDatabaseImpl`: the parameters with `comment`, `owner` and `location`.
    pub(crate) fn properties(&self) -> BTreeMap<String, String> {
        let mut properties = self.parameters();
        for (key, field) in [
            (COMMENT, id::DB_DESCRIPTION),
            (OWNER, id::DB_OWNER_NAME),
            (LOCATION, id::DB_LOCATION),
        ] {
            if let Some(value) = self.0.text(field) {
                properties.insert(key.to_string(), value);
            }
        }
        properties
    }
}

/// How a new table is registered.
#[derive(Clone, Debug)]
pub(crate) struct NewTable<'a> {
    pub(crate) database: &'a str,
    pub(crate) name: &'a str,
    pub(crate) location: &'a str,
    /// The table's owner (Java: the Hadoop user).
    pub(crate) owner: &'a str,
    pub(crate) now_seconds: i32,
    /// `sync-all-properties`.
    pub(crate) sync_all: bool,
}

/// A metastore table.
#[derive(Clone, Debug)]
pub(crate) struct HmsTable(pub(crate) Struct);

impl HmsTable {
    /// Java `createHiveTable` (a managed table): `newHmsTable`, then `updateHmsTable`.
    pub(crate) fn new(new: &NewTable<'_>, schema: &TableSchema) -> Result<HmsTable> {
        let mut parameters = synced_parameters(schema, new.sync_all);
        if !new.sync_all {
            for key in [PARTITION_EXPIRATION_TIME, DATA_FILE_PATH_DIRECTORY] {
                if let Some(value) = schema.options().get(key) {
                    parameters.insert(key.to_string(), value.to_string());
                }
            }
        }
        parameters.insert(TABLE_TYPE_PARAMETER.into(), PAIMON_TABLE_TYPE.into());
        parameters.insert(STORAGE_HANDLER_PARAMETER.into(), STORAGE_HANDLER.into());
        let table = Struct::default()
            .with(id::TABLE_NAME, Value::text(new.name))
            .with(id::TABLE_DB, Value::text(new.database))
            .with(id::TABLE_OWNER, Value::text(new.owner))
            .with(id::TABLE_CREATE_TIME, Value::I32(new.now_seconds))
            .with(id::TABLE_LAST_ACCESS_TIME, Value::I32(new.now_seconds))
            .with(id::TABLE_RETENTION, Value::I32(i32::MAX))
            .with(id::TABLE_PARTITION_KEYS, Value::structs([]))
            .with(id::TABLE_PARAMETERS, Value::text_map(&parameters))
            .with(id::TABLE_TYPE, Value::text(MANAGED_TABLE))
            .with(id::TABLE_OWNER_TYPE, Value::I32(USER_PRINCIPAL));
        let mut table = HmsTable(table);
        table.describe(schema, new.location)?;
        Ok(table)
    }

    /// Java `IcebergHiveMetadataCommitter.createTable`: an external Iceberg table of the
    /// columns of `schema` at `location` (the Iceberg table's directory).
    pub(crate) fn iceberg(
        new: &NewTable<'_>,
        schema: &TableSchema,
        skip_update_stats: bool,
    ) -> Result<HmsTable> {
        let parameters = BTreeMap::from([
            (
                DO_NOT_UPDATE_STATS.to_string(),
                skip_update_stats.to_string(),
            ),
            (EXTERNAL.to_string(), "TRUE".to_string()),
            (
                TABLE_TYPE_PARAMETER.to_string(),
                ICEBERG_TABLE_TYPE.to_string(),
            ),
        ]);
        let serde = Struct::default().with(id::SERDE_LIB, Value::text(LAZY_SIMPLE_SERDE));
        let sd = Struct::default()
            .with(id::SD_COLS, all_columns(schema)?)
            .with(id::SD_LOCATION, Value::text(new.location))
            .with(id::SD_INPUT_FORMAT, Value::text(FILE_INPUT_FORMAT))
            .with(id::SD_OUTPUT_FORMAT, Value::text(FILE_OUTPUT_FORMAT))
            // Java's `StorageDescriptor` sends these two whether set or not
            .with(id::SD_COMPRESSED, Value::Bool(false))
            .with(id::SD_NUM_BUCKETS, Value::I32(0))
            .with(id::SD_SERDE, Value::Struct(serde));
        Ok(HmsTable(
            Struct::default()
                .with(id::TABLE_NAME, Value::text(new.name))
                .with(id::TABLE_DB, Value::text(new.database))
                .with(id::TABLE_OWNER, Value::text(new.owner))
                .with(id::TABLE_CREATE_TIME, Value::I32(new.now_seconds))
                .with(id::TABLE_LAST_ACCESS_TIME, Value::I32(new.now_seconds))
                .with(id::TABLE_RETENTION, Value::I32(i32::MAX))
                .with(id::TABLE_SD, Value::Struct(sd))
                .with(id::TABLE_PARTITION_KEYS, Value::structs([]))
                .with(id::TABLE_PARAMETERS, Value::text_map(&parameters))
                .with(id::TABLE_TYPE, Value::text(EXTERNAL_TABLE))
                .with(id::TABLE_OWNER_TYPE, Value::I32(USER_PRINCIPAL)),
        ))
    }

    /// Java `IcebergHiveMetadataCommitter.commitMetadataImpl`: the Iceberg table points at
    /// `metadata` (after `previous`, if any) and has the columns of `schema`.
    pub(crate) fn point_at_iceberg(
        &mut self,
        schema: &TableSchema,
        metadata: &str,
        previous: Option<&str>,
    ) -> Result<()> {
        let mut parameters = self.parameters();
        parameters.insert(METADATA_LOCATION.into(), metadata.into());
        if let Some(previous) = previous {
            parameters.insert(PREVIOUS_METADATA_LOCATION.into(), previous.into());
        }
        self.0
            .set(id::TABLE_PARAMETERS, Value::text_map(&parameters));
        let mut sd = self.0.child(id::TABLE_SD).cloned().unwrap_or_default();
        sd.set(id::SD_COLS, all_columns(schema)?);
        self.0.set(id::TABLE_SD, Value::Struct(sd));
        Ok(())
    }

    /// The Iceberg metadata file the table points at, if it is such a table.
    pub(crate) fn iceberg_metadata(&self) -> Option<String> {
        self.parameters().remove(METADATA_LOCATION)
    }

    /// Java `alterTableToHms`: the parameters (`updateHmsTablePars`, without the options
    /// `removed`), columns and storage of a table after its schema became `schema`.
    pub(crate) fn update(
        &mut self,
        schema: &TableSchema,
        removed: &[String],
        sync_all: bool,
    ) -> Result<()> {
        let mut parameters = self.parameters();
        parameters.extend(synced_parameters(schema, sync_all));
        for key in removed {
            parameters.remove(key);
        }
        self.0
            .set(id::TABLE_PARAMETERS, Value::text_map(&parameters));
        let location = self.location().unwrap_or_default();
        self.describe(schema, &location)
    }

    /// Java `updateHmsTable` of a Paimon table: formats, serde, columns (partition columns as
    /// partition keys for a `metastore.partitioned-table`), comment and location.
    fn describe(&mut self, schema: &TableSchema, location: &str) -> Result<()> {
        if schema.options().contains_key(METASTORE_TAG_TO_PARTITION) {
            return Err(Error::Unsupported(format!(
                "'{METASTORE_TAG_TO_PARTITION}': tidelake does not show tags as metastore partitions"
            )));
        }
        let mut sd = self.0.child(id::TABLE_SD).cloned().unwrap_or_default();
        sd.set(id::SD_INPUT_FORMAT, Value::text(INPUT_FORMAT));
        sd.set(id::SD_OUTPUT_FORMAT, Value::text(OUTPUT_FORMAT));
        let mut serde = sd.child(id::SD_SERDE).cloned().unwrap_or_default();
        serde.set(id::SERDE_PARAMETERS, Value::text_map(&BTreeMap::new()));
        serde.set(id::SERDE_LIB, Value::text(SERDE));
        sd.set(id::SD_SERDE, Value::Struct(serde));
        let partitioned = !schema.partition_keys.is_empty()
            && schema
                .options()
                .partitioned_table_in_metastore()
                .map_err(|e| Error::from_spec("table options", e))?;
        let columns = |keys: bool| -> Result<Value> {
            let fields = schema
                .fields
                .iter()
                .filter(|f| schema.partition_keys.contains(&f.name) == keys);
            Ok(Value::structs(
                fields
                    .map(|f| column(&f.name, &f.data_type, f.description.as_deref()))
                    .collect::<Result<Vec<_>>>()?,
            ))
        };
        if partitioned {
            self.0.set(id::TABLE_PARTITION_KEYS, columns(true)?);
            sd.set(id::SD_COLS, columns(false)?);
        } else {
            sd.set(id::SD_COLS, all_columns(schema)?);
        }
        // Java's `StorageDescriptor` sends these two whether set or not.
        if sd.get(id::SD_COMPRESSED).is_none() {
            sd.set(id::SD_COMPRESSED, Value::Bool(false));
        }
        if sd.get(id::SD_NUM_BUCKETS).is_none() {
            sd.set(id::SD_NUM_BUCKETS, Value::I32(0));
        }
        sd.set(id::SD_LOCATION, Value::text(location));
        self.0.set(id::TABLE_SD, Value::Struct(sd));
        if let Some(comment) = &schema.comment {
            let mut parameters = self.parameters();
            parameters.insert(COMMENT.into(), comment.clone());
            self.0
                .set(id::TABLE_PARAMETERS, Value::text_map(&parameters));
        }
        Ok(())
    }

    pub(crate) fn location(&self) -> Option<String> {
        self.0.child(id::TABLE_SD)?.text(id::SD_LOCATION)
    }

    pub(crate) fn set_location(&mut self, location: &str) {
        let mut sd = self.0.child(id::TABLE_SD).cloned().unwrap_or_default();
        sd.set(id::SD_LOCATION, Value::text(location));
        self.0.set(id::TABLE_SD, Value::Struct(sd));
    }

    /// The same table under another name (Java `renameHiveTable`).
    pub(crate) fn renamed(mut self, database: &str, name: &str) -> HmsTable {
        self.0.set(id::TABLE_DB, Value::text(database));
        self.0.set(id::TABLE_NAME, Value::text(name));
        self
    }

    pub(crate) fn parameters(&self) -> BTreeMap<String, String> {
        self.0.text_map(id::TABLE_PARAMETERS)
    }

    /// Java `isPaimonTable`.
    pub(crate) fn is_paimon(&self) -> bool {
        let formats = self.0.child(id::TABLE_SD).map(|sd| {
            (
                sd.text(id::SD_INPUT_FORMAT).unwrap_or_default(),
                sd.text(id::SD_OUTPUT_FORMAT).unwrap_or_default(),
            )
        });
        matches!(
            formats.as_ref().map(|(i, o)| (i.as_str(), o.as_str())),
            Some((INPUT_FORMAT, OUTPUT_FORMAT) | (LEGACY_INPUT_FORMAT, LEGACY_OUTPUT_FORMAT))
        )
    }

    /// The columns of its storage descriptor (the partition keys are not among them).
    pub(crate) fn columns(&self) -> Vec<HiveColumn> {
        let sd = self.0.child(id::TABLE_SD);
        columns_of(sd.map(|sd| sd.children(id::SD_COLS)).unwrap_or_default())
    }

    pub(crate) fn partition_keys(&self) -> Vec<HiveColumn> {
        columns_of(self.0.children(id::TABLE_PARTITION_KEYS))
    }

    /// The file format of its storage descriptor (Java `HiveCloneUtils.parseFormat`).
    pub(crate) fn file_format(&self) -> Option<&'static str> {
        format_of(self.0.child(id::TABLE_SD)?)
    }

    /// Java `isExternalTable`: the metastore keeps its files when it is dropped.
    pub(crate) fn is_external(&self) -> bool {
        self.0.text(id::TABLE_TYPE).as_deref() == Some(EXTERNAL_TABLE)
    }

    pub(crate) fn name(&self) -> Option<String> {
        self.0.text(id::TABLE_NAME)
    }

    /// Where the files of the partitions are: the location, and `data-file.path-directory`
    /// below it if set (Java `getDataFilePath`).
    pub(crate) fn data_location(&self) -> Option<String> {
        let location = self.location()?;
        Some(match self.parameters().get(DATA_FILE_PATH_DIRECTORY) {
            Some(dir) => format!("{location}/{dir}"),
            None => location,
        })
    }

    /// Java `createPartitions`' partition of `values` (in partition-key order) at `location`,
    /// with the table's storage descriptor.
    pub(crate) fn partition(
        &self,
        database: &str,
        values: &[String],
        location: &str,
        now_seconds: i32,
    ) -> Struct {
        let mut sd = self.0.child(id::TABLE_SD).cloned().unwrap_or_default();
        sd.set(id::SD_LOCATION, Value::text(location));
        Struct::default()
            .with(id::PARTITION_VALUES, Value::texts(values))
            .with(id::PARTITION_DB, Value::text(database))
            .with(
                id::PARTITION_TABLE,
                Value::text(&self.name().unwrap_or_default()),
            )
            .with(id::PARTITION_CREATE_TIME, Value::I32(now_seconds))
            .with(id::PARTITION_LAST_ACCESS_TIME, Value::I32(now_seconds))
            .with(id::PARTITION_SD, Value::Struct(sd))
    }
}

/// A partition of a (non-Paimon) Hive table.
#[derive(Clone, Debug)]
pub(crate) struct HmsPartition(pub(crate) Struct);

impl HmsPartition {
    /// Its values, in partition-key order, as the metastore keeps them (strings).
    pub(crate) fn values(&self) -> Vec<String> {
        self.0
            .get(id::PARTITION_VALUES)
            .map(Value::to_texts)
            .unwrap_or_default()
    }

    pub(crate) fn location(&self) -> Option<String> {
        self.0.child(id::PARTITION_SD)?.text(id::SD_LOCATION)
    }

    /// The file format of its storage descriptor (Java `HiveCloneUtils.parseFormat`).
    pub(crate) fn file_format(&self) -> Option<&'static str> {
        format_of(self.0.child(id::PARTITION_SD)?)
    }
}

fn columns_of(fields: Vec<&Struct>) -> Vec<HiveColumn> {
    fields
        .into_iter()
        .map(|f| HiveColumn {
            name: f.text(id::FIELD_NAME).unwrap_or_default(),
            type_name: f.text(id::FIELD_TYPE).unwrap_or_default(),
            comment: f.text(id::FIELD_COMMENT),
        })
        .collect()
}

/// Java `HiveCloneUtils.parseFormat(StorageDescriptor)`: by the serde library, then by a text
/// input format.
fn format_of(sd: &Struct) -> Option<&'static str> {
    let serde = sd.child(id::SD_SERDE)?;
    let library = serde
        .text(id::SERDE_LIB)
        .unwrap_or_default()
        .to_ascii_lowercase();
    let input = sd.text(id::SD_INPUT_FORMAT).unwrap_or_default();
    Some(if library.contains("avro") {
        "avro"
    } else if library.contains("parquet") {
        "parquet"
    } else if library.contains("orc") {
        "orc"
    } else if input.contains("Text") {
        if library.contains("json") {
            "json"
        } else {
            "csv"
        }
    } else {
        return None;
    })
}

/// The table options a metastore keeps (Java `updateHmsTablePars`): every option with the
/// table's keys (`primary-key`, `partition`, `bucket-key`) under `sync-all-properties`, else
/// the `hive.`-prefixed ones without the prefix.
fn synced_parameters(schema: &TableSchema, sync_all: bool) -> BTreeMap<String, String> {
    let options = schema.options().iter();
    if !sync_all {
        return options
            .filter_map(|(k, v)| Some((k.strip_prefix(HIVE_PREFIX)?.to_string(), v.to_string())))
            .collect();
    }
    let mut parameters: BTreeMap<String, String> = options
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    for (key, columns) in [
        (PRIMARY_KEY_PARAMETER, schema.primary_keys.clone()),
        (PARTITION_PARAMETER, schema.partition_keys.clone()),
        (BUCKET_KEY_PARAMETER, schema.bucket_keys()),
    ] {
        if !columns.is_empty() {
            parameters.insert(key.to_string(), columns.join(","));
        }
    }
    parameters
}

/// A Thrift `FieldSchema`.
/// Every column of `schema`, in order.
fn all_columns(schema: &TableSchema) -> Result<Value> {
    let columns = schema
        .fields
        .iter()
        .map(|f| column(&f.name, &f.data_type, f.description.as_deref()))
        .collect::<Result<Vec<_>>>()?;
    Ok(Value::structs(columns))
}

fn column(name: &str, data_type: &DataType, comment: Option<&str>) -> Result<Struct> {
    let column = Struct::default()
        .with(id::FIELD_NAME, Value::text(name))
        .with(id::FIELD_TYPE, Value::text(&hive_type(data_type)?));
    Ok(match comment {
        Some(c) => column.with(id::FIELD_COMMENT, Value::text(c)),
        None => column,
    })
}

#[cfg(test)]
mod tests {
    use tidelake_spec::types::{DataField, TypeKind};

    use super::*;

    fn schema(options: &[(&str, &str)]) -> TableSchema {
        let field = |id, name: &str, kind| DataField {
            id,
            name: name.into(),
            data_type: DataType::not_null(kind),
            description: (name == "id").then(|| "the key".to_string()),
            default_value: None,
        };
        let fields = vec![
            field(0, "id", TypeKind::BigInt),
            field(1, "dt", TypeKind::VarChar(u32::MAX >> 1)),
        ];
        let options = options
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        TableSchema::new(
            0,
            fields,
            vec!["dt".into()],
            vec!["id".into(), "dt".into()],
            options,
        )
        .unwrap()
    }

    fn new_table(schema: &TableSchema, sync_all: bool) -> HmsTable {
        let new = NewTable {
            database: "db",
            name: "t",
            location: "file:/wh/db.db/t",
            owner: "me",
            now_seconds: 7,
            sync_all,
        };
        HmsTable::new(&new, schema).unwrap()
    }

    fn names(columns: Vec<&Struct>) -> Vec<String> {
        columns
            .iter()
            .map(|c| c.text(id::FIELD_NAME).unwrap())
            .collect()
    }

    #[test]
    fn tables_carry_their_options_and_keys_as_java_writes_them() {
        let options = [
            ("bucket", "2"),
            ("hive.owner-team", "ops"),
            ("partition.expiration-time", "7 d"),
        ];
        let all = new_table(&schema(&options), true);
        let parameters = all.parameters();
        assert_eq!(parameters["bucket"], "2");
        assert_eq!(parameters["hive.owner-team"], "ops");
        assert_eq!(
            (&parameters["primary-key"][..], &parameters["partition"][..]),
            ("id,dt", "dt")
        );
        assert_eq!(parameters["bucket-key"], "id");
        assert_eq!(parameters["table_type"], "PAIMON");
        // without sync-all-properties: the hive.-prefixed options, unprefixed, and the two Java
        // keeps for other engines
        let some = new_table(&schema(&options), false);
        assert_eq!(
            some.parameters(),
            BTreeMap::from([
                ("owner-team".into(), "ops".into()),
                ("partition.expiration-time".into(), "7 d".into()),
                ("table_type".into(), "PAIMON".into()),
                ("storage_handler".into(), STORAGE_HANDLER.into()),
            ])
        );
        // partition columns are columns unless the metastore keeps the partitions
        let sd = all.0.child(id::TABLE_SD).unwrap();
        assert_eq!(names(sd.children(id::SD_COLS)), ["id", "dt"]);
        assert_eq!(
            sd.children(id::SD_COLS)[0]
                .text(id::FIELD_COMMENT)
                .as_deref(),
            Some("the key")
        );
        assert!(all.0.children(id::TABLE_PARTITION_KEYS).is_empty());
        assert_eq!(all.location().as_deref(), Some("file:/wh/db.db/t"));
        assert!(all.is_paimon() && !all.is_external());
        let kept = new_table(&schema(&[("metastore.partitioned-table", "true")]), true);
        let sd = kept.0.child(id::TABLE_SD).unwrap();
        assert_eq!(names(sd.children(id::SD_COLS)), ["id"]);
        assert_eq!(names(kept.0.children(id::TABLE_PARTITION_KEYS)), ["dt"]);
        let partition = kept.partition("db", &["x".into()], "file:/wh/db.db/t/dt=x", 9);
        let partition_sd = partition.child(id::PARTITION_SD).unwrap();
        assert_eq!(
            partition_sd.text(id::SD_LOCATION).as_deref(),
            Some("file:/wh/db.db/t/dt=x")
        );
        assert_eq!(partition_sd.get(id::SD_SERDE), sd.get(id::SD_SERDE));
        // an alter keeps what the metastore added and drops the removed options
        let mut altered = kept.clone();
        let mut parameters = altered.parameters();
        parameters.insert("transient_lastDdlTime".into(), "1".into());
        altered
            .0
            .set(id::TABLE_PARAMETERS, Value::text_map(&parameters));
        altered
            .update(
                &schema(&[("bucket", "3")]),
                &["metastore.partitioned-table".into()],
                true,
            )
            .unwrap();
        let parameters = altered.parameters();
        assert_eq!(parameters["bucket"], "3");
        assert_eq!(parameters["transient_lastDdlTime"], "1");
        assert!(!parameters.contains_key("metastore.partitioned-table"));
    }

    #[test]
    fn database_properties_round_trip_through_their_fields() {
        let properties = BTreeMap::from([
            ("comment".to_string(), "sales".to_string()),
            ("owner".into(), "ops".into()),
            ("location".into(), "/wh/db.db".into()),
            ("tier".into(), "gold".into()),
        ]);
        let db = HmsDatabase::new("db", &properties);
        assert_eq!(db.0.text(id::DB_DESCRIPTION).as_deref(), Some("sales"));
        assert_eq!(
            db.parameters(),
            BTreeMap::from([("tier".into(), "gold".into())])
        );
        assert_eq!(db.properties(), properties);
    }
}
