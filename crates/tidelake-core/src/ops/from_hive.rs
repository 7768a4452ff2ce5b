//! Hive tables into Paimon tables (Java `HiveMigrator`, the `migrate_table` procedure, and
//! the `clone` procedure from Hive, `HiveTableCloneExtractor`).
//!
//! The source is a Hive table of Parquet, ORC or Avro files (not Paimon's) in a Hive catalog's
//! metastore. A missing target is created as an append table with bucket -1: the source's
//! columns then its partition keys (Hive types as Java reads them), its comment (also kept as
//! option `hive.comment`), and the options given; an existing target must be an append table
//! with bucket -1 whose partition keys have the source's names and types. Every partition's
//! files then go into the target ([`ImportFiles`]) in one snapshot:
//!
//! * [`MigrateTable`] moves them (an APPEND) into `<source>_paimon_` or the target named;
//!   then, unless kept, the source is dropped from the metastore, and when no target was named
//!   the target takes the source's name. As Java, the migration is not atomic as a whole, but
//!   no file is lost: a failure before the commit moves the files back and drops a target it
//!   created; the source is dropped only after the commit.
//! * [`MigrateDatabase`] migrates every table of a database so, going on past failures.
//! * [`CloneHiveTable`] copies them into a table of any catalog, replacing the partitions it
//!   copies (an OVERWRITE: a clone can be run again); the source stays as it is. The target's
//!   database is created when missing; a new target gets `file.format` = the source's
//!   format, an existing one must have it (Java `checkCompatible`). Java rewrites Parquet and ORC
//!   sources' rows into new files ("clone splits") and copies Avro ones; here every format is
//!   copied, which reads the same rows.
//!
//! Files hold no partition columns (Hive keeps them in directory names): readers take them
//! from the partition ([`crate::read`]), as Java's do. Differences from Java: a partitioned
//! source without partitions takes no file (Java would take the table directory's files as
//! the empty partition); Hive's primary-key constraints are not checked.

use std::collections::BTreeMap;

use tidelake_spec::datum::Datum;
use tidelake_spec::options::FILE_FORMAT;
use tidelake_spec::types::DataField;

use crate::catalog::hive::model::{HmsPartition, HmsTable, COMMENT};
use crate::catalog::hive::types::{hive_type, paimon_columns, HiveColumn};
use crate::catalog::identifier::Identifier;
use crate::catalog::Catalog;
use crate::commit::Committed;
use crate::datum_arrow::{arrow_type_of, datum_at, default_value};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::TableLayout;
use crate::read::data_file::FileFormat;
use crate::scan::predicate::Predicate;
use crate::schema_change::TableSpec;
use crate::table::Table;

use super::import::{ImportFiles, ImportSource};

/// Java `HiveMigrator.PAIMON_SUFFIX`: the target's name while the source still exists.
const PAIMON_SUFFIX: &str = "_paimon_";
/// Java `HiveMigrator.from`: the source's comment is also kept as this option.
const HIVE_COMMENT_OPTION: &str = "hive.comment";

/// A Hive table's migration (see the module docs). Built with [`MigrateTable::new`].
#[derive(Clone, Debug)]
pub struct MigrateTable {
    source: String,
    target: Option<String>,
    options: Vec<(String, String)>,
    delete_origin: bool,
}

impl MigrateTable {
    /// Migrate Hive table `source` (`db.table`).
    pub fn new(source: impl Into<String>) -> MigrateTable {
        MigrateTable {
            source: source.into(),
            target: None,
            options: Vec::new(),
            delete_origin: true,
        }
    }

    /// Migrate into `target` (`db.table`), created if missing; the source keeps its name.
    pub fn target(mut self, target: impl Into<String>) -> MigrateTable {
        self.target = Some(target.into());
        self
    }

    /// Options of a target created by the migration.
    pub fn options(mut self, options: Vec<(String, String)>) -> MigrateTable {
        self.options = options;
        self
    }

    /// Keep the source in the metastore (Java `delete_origin => false`): it then lists no file.
    pub fn keep_origin(mut self) -> MigrateTable {
        self.delete_origin = false;
        self
    }

    /// Migrate through `catalog`, a Hive catalog; the target table.
    pub async fn run(&self, catalog: &Catalog) -> Result<Table> {
        let hive = catalog.hive("migrate_table")?;
        let source = Identifier::table(&self.source)?;
        if !self.delete_origin && self.target.is_none() {
            // Java migrates, then fails to give the new table the kept source's name
            return Err(Error::invalid(
                "keeping the Hive table (delete_origin=false) needs a target table name",
            ));
        }
        let target_name = match &self.target {
            Some(t) => t.clone(),
            None => format!("{}{PAIMON_SUFFIX}", self.source),
        };
        let (hms, partitions) = hive.hive_table(&source).await?;
        let (table, created) =
            open_or_create(catalog, &target_name, &hms, self.options.clone()).await?;
        let moved = async {
            let files = ImportFiles::new(&table).without_partition_columns();
            sources(&table, &hms, &partitions, files)?.run().await
        };
        if let Err(e) = moved.await {
            if created {
                // Already failing: the target is dropped on a best-effort basis.
                let _ = catalog.drop_table(&target_name).await;
            }
            return Err(e);
        }
        if self.delete_origin {
            hive.drop_hive_table(&source).await?;
        }
        if self.target.is_none() {
            catalog.rename_table(&target_name, &self.source).await?;
            return catalog.get_table(&self.source).await;
        }
        table.reopen().await
    }
}

/// A Hive database's migration (Java `MigrateDatabaseProcedure` over
/// `HiveMigrator.databaseMigrators`): every table of the metastore's database (Java
/// `client.getAllTables`, Paimon's too), one after another, migrated in place as
/// [`MigrateTable`] migrates one with the options given. A table that fails is counted, with its
/// error, and the others go on (Java logs and counts it). Built with [`MigrateDatabase::new`].
#[derive(Clone, Debug)]
pub struct MigrateDatabase {
    database: String,
    options: Vec<(String, String)>,
}

/// What a [`MigrateDatabase`] did: the tables migrated, and those that failed with their error.
#[derive(Debug, Default)]
pub struct MigratedDatabase {
    pub migrated: Vec<String>,
    pub failed: Vec<(String, Error)>,
}

impl MigrateDatabase {
    /// Migrate every table of Hive database `database`.
    pub fn new(database: impl Into<String>) -> MigrateDatabase {
        MigrateDatabase {
            database: database.into(),
            options: Vec::new(),
        }
    }

    /// Options of the tables the migration creates.
    pub fn options(mut self, options: Vec<(String, String)>) -> MigrateDatabase {
        self.options = options;
        self
    }

    /// Migrate through `catalog`, a Hive catalog (see [`MigrateDatabase`]).
    pub async fn run(&self, catalog: &Catalog) -> Result<MigratedDatabase> {
        let tables = catalog
            .hive("migrate_database")?
            .all_tables(&self.database)
            .await?;
        let mut done = MigratedDatabase::default();
        for table in tables {
            let name = format!("{}.{table}", self.database);
            let migrated = MigrateTable::new(&name)
                .options(self.options.clone())
                .run(catalog)
                .await;
            match migrated {
                Ok(_) => done.migrated.push(name),
                Err(e) => {
                    log::warn!(target: "tidelake.migrate", "migrating {name} failed: {e}");
                    done.failed.push((name, e));
                }
            }
        }
        Ok(done)
    }
}

/// A Hive table's clone (see the module docs). Built with [`CloneHiveTable::new`].
#[derive(Clone, Debug)]
pub struct CloneHiveTable {
    source: String,
    target: String,
    options: Vec<(String, String)>,
    partitions: Option<Predicate>,
}

impl CloneHiveTable {
    /// Clone Hive table `source` (`db.table`) into `target` (`db.table`), created if missing.
    pub fn new(source: impl Into<String>, target: impl Into<String>) -> CloneHiveTable {
        CloneHiveTable {
            source: source.into(),
            target: target.into(),
            options: Vec::new(),
            partitions: None,
        }
    }

    /// Options of a target created by the clone (after `file.format`, which they may set).
    pub fn options(mut self, options: Vec<(String, String)>) -> CloneHiveTable {
        self.options = options;
        self
    }

    /// Only the partitions `filter` (on partition columns) selects (Java `where`).
    pub fn partitions(mut self, filter: Predicate) -> CloneHiveTable {
        self.partitions = Some(filter);
        self
    }

    /// Clone from Hive catalog `source` into catalog `target`: the snapshot replacing the
    /// partitions copied, `None` when the source has no file to copy.
    pub async fn run(&self, source: &Catalog, target: &Catalog) -> Result<Option<Committed>> {
        let hive = source.hive("clone")?;
        let (hms, partitions) = hive.hive_table(&Identifier::table(&self.source)?).await?;
        let format = file_format(hms.file_format(), "the Hive table")?;
        let mut options = vec![(FILE_FORMAT.to_string(), format.identifier().to_string())];
        options.extend(self.options.iter().cloned());
        let id = Identifier::table(&self.target)?;
        target
            .create_database(&id.database, true, &BTreeMap::new())
            .await?;
        let (table, created) = open_or_create(target, &self.target, &hms, options).await?;
        let existing = table.schema().options().file_format();
        if !created && !existing.eq_ignore_ascii_case(format.identifier()) {
            return Err(Error::invalid(format!(
                "the Hive table's files are {}, {} has file.format {existing} (Java refuses it too)",
                format.identifier(),
                table.location()
            )));
        }
        let mut files = ImportFiles::new(&table)
            .without_partition_columns()
            .copying()
            .overwriting();
        if let Some(filter) = &self.partitions {
            files = files.partitions(filter.clone());
        }
        sources(&table, &hms, &partitions, files)?.run().await
    }
}

/// The target table `name` of `catalog`, created from `hms` with `options` when missing
/// (Java `HiveMigrator.from`: the source's columns then its partition keys); whether it was.
async fn open_or_create(
    catalog: &Catalog,
    name: &str,
    hms: &HmsTable,
    mut options: Vec<(String, String)>,
) -> Result<(Table, bool)> {
    match catalog.get_table(name).await {
        Ok(table) => return Ok((table, false)),
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let keys = hms.partition_keys();
    let mut columns = hms.columns();
    columns.extend(keys.iter().map(|k| HiveColumn {
        name: k.name.clone(),
        type_name: k.type_name.clone(),
        comment: k.comment.clone(),
    }));
    let fields: Vec<DataField> = paimon_columns(&columns)?;
    let comment = hms.parameters().get(COMMENT).cloned();
    if let Some(c) = &comment {
        options.push((HIVE_COMMENT_OPTION.to_string(), c.clone()));
    }
    let spec = TableSpec {
        partition_keys: keys.into_iter().map(|k| k.name).collect(),
        options,
        comment,
        ..TableSpec::default()
    };
    let table = catalog.create_table_of_fields(name, fields, &spec).await?;
    Ok((table, true))
}

/// `files` with a source per partition of `hms` (its location when unpartitioned).
fn sources(
    table: &Table,
    hms: &HmsTable,
    partitions: &[HmsPartition],
    mut files: ImportFiles,
) -> Result<ImportFiles> {
    let fields = TableLayout::new(table.schema())?.partition_fields;
    check_partition_keys(table, &fields, &hms.partition_keys())?;
    if fields.is_empty() {
        let location = hms
            .location()
            .ok_or_else(|| Error::invalid("the Hive table has no location"))?;
        return Ok(files.source(ImportSource {
            partition: Vec::new(),
            location,
            format: file_format(hms.file_format(), "the Hive table")?,
        }));
    }
    let default_name = table
        .schema()
        .options()
        .partition_default_name()
        .to_string();
    for p in partitions {
        let values = p.values();
        let what = format!("the Hive partition {values:?}");
        if values.len() != fields.len() {
            return Err(Error::invalid(format!(
                "{what} does not have one value per partition key"
            )));
        }
        let partition = fields
            .iter()
            .zip(&values)
            .map(|(f, v)| partition_value(f, v, &default_name))
            .collect::<Result<Vec<_>>>()?;
        files = files.source(ImportSource {
            partition,
            location: p
                .location()
                .ok_or_else(|| Error::invalid(format!("{what} has no location")))?,
            format: file_format(p.file_format(), &what)?,
        });
    }
    Ok(files)
}

/// A partition value as the metastore keeps it (text; Paimon's `partition.default-name` for
/// null), as Java's `TypeUtils.castFromString`.
fn partition_value(field: &DataField, text: &str, default_name: &str) -> Result<Datum> {
    if text == default_name {
        return Ok(Datum::Null);
    }
    let column = default_value(text, &arrow_type_of(&field.data_type)?, &field.name)?;
    datum_at(column.as_ref(), 0, &field.data_type)
}

/// Java `HiveCloneUtils.parseFormat`, limited to the formats Paimon tables hold.
fn file_format(format: Option<&str>, what: &str) -> Result<FileFormat> {
    match format {
        Some("parquet") => Ok(FileFormat::Parquet),
        Some("orc") => Ok(FileFormat::Orc),
        Some("avro") => Ok(FileFormat::Avro),
        Some(other) => Err(Error::Unsupported(format!(
            "{what} holds {other} files: only Parquet, ORC and Avro tables become Paimon tables"
        ))),
        None => Err(Error::Unsupported(format!(
            "{what} has a storage format Paimon does not know"
        ))),
    }
}

/// Java `HiveMigrator.checkCompatible`: `table`'s partition fields `target` have the Hive
/// partition keys' names and types (by name).
fn check_partition_keys(table: &Table, target: &[DataField], keys: &[HiveColumn]) -> Result<()> {
    let mismatch = || {
        Error::invalid(format!(
            "the Hive table's partition keys ({}) are not the partition keys of {}",
            keys.iter()
                .map(|k| format!("{} {}", k.name, k.type_name))
                .collect::<Vec<_>>()
                .join(", "),
            table.location()
        ))
    };
    if keys.len() != target.len() {
        return Err(mismatch());
    }
    let by_name: BTreeMap<&str, &DataField> = target.iter().map(|f| (f.name.as_str(), f)).collect();
    for key in keys {
        let field = by_name.get(key.name.as_str()).ok_or_else(mismatch)?;
        let normalized: String = key
            .type_name
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if !hive_type(&field.data_type)?.eq_ignore_ascii_case(&normalized) {
            return Err(mismatch());
        }
    }
    Ok(())
}
