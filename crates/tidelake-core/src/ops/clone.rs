//! The `clone` procedure (Java `CloneAction`, Flink's `CALL sys.clone(...)`): tables of one
//! catalog copied into tables of another (or the same) catalog, from Hive tables
//! ([`CloneHiveTable`]) or from Paimon tables ([`ClonePaimonTable`]); one table, every table
//! of a database, or every table of the catalog ([`CloneTables`]).
//!
//! Selection (Java `ClonePaimonTableUtils.buildSource`, `CloneHiveTableUtils.buildSource`):
//! with a source table, the target database and table must be named and no included or
//! excluded tables given; with a source database alone, each of its tables goes to the target
//! database (which must be named) under its own name; with neither, every table of every
//! database goes to the same database and name in the target catalog (no target may be
//! named). Included and excluded tables are `db.table` names: an excluded one is skipped, and
//! when any are included only those are taken. Paimon sources are the catalog's Paimon
//! tables; Hive sources every table of the metastore (Java `client.getAllTables`). Nothing
//! selected is [`Error::Invalid`].
//!
//! A Paimon table's clone ([`ClonePaimonTable`], Java `ClonePaimonSchemaFunction`,
//! `ListCloneSplitsFunction`, `CloneSplitsFunction`, `CommitMessageTableOperator`):
//!
//! ```text
//!  the source's latest snapshot planned (the `where` filter on partition columns checked)
//!        ─► target database created when missing; a missing target table created with the
//!           source's columns (names, types, comments, defaults; fresh ids), partition and
//!           primary keys, and options but `bucket` and `path`: an append table keeps
//!           `bucket` only with `bucket-key`, a primary-key table gets `bucket` = -2
//!           (postpone: Java clones no other bucket mode)
//!        ─► the source's latest rows (merged, deletion vectors applied) of the partitions
//!           `where` selects ─► written anew into the target (new files, levels and sequence
//!           numbers: no file is copied; a postpone-bucket target keeps them in the postpone
//!           bucket until compacted, as Java's)
//!        ─► one OVERWRITE snapshot of the partitions written (the whole table when it is
//!           unpartitioned or `dynamic-partition-overwrite` is false); no snapshot when no
//!           row was read
//! ```
//!
//! Stricter than Java: an existing target whose columns (names and types) are not the
//! source's is refused (Java writes the rows into it by position), and so is a target that is
//! the source itself; a clone that fails drops the target table it created (Java leaves it).
//! Tables are cloned one after another; the first failure stops the clone, and the tables
//! cloned before it stay cloned (each table's clone is one commit).

use std::collections::{BTreeMap, BTreeSet};

use tidelake_spec::bucket::POSTPONE_BUCKET;
use tidelake_spec::options::{BUCKET, BUCKET_KEY, PATH};
use tidelake_spec::schema::assign_field_ids;
use tidelake_spec::types::DataField;

use crate::catalog::identifier::Identifier;
use crate::catalog::Catalog;
use crate::commit::{Committed, OverwriteScope};
use crate::datum_arrow::arrow_type_of;
use crate::error::{Error, ErrorKind, Result};
use crate::scan::predicate::Predicate;
use crate::schema_change::TableSpec;
use crate::table::Table;
use crate::write::table_write::TableWrite;

use super::{CloneHiveTable, PlannedRead, Read, TableCommit};

/// Where a clone's tables come from (Java's `clone_from`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloneFrom {
    /// Hive tables of a Hive catalog's metastore (Parquet, ORC or Avro files).
    Hive,
    /// Paimon tables of any catalog.
    Paimon,
}

impl CloneFrom {
    /// Java's `clone_from` value (`hive` or `paimon`, any case).
    pub fn parse(name: &str) -> Result<CloneFrom> {
        match name.to_ascii_lowercase().as_str() {
            "hive" => Ok(CloneFrom::Hive),
            "paimon" => Ok(CloneFrom::Paimon),
            other => Err(Error::Unsupported(format!(
                "clone_from '{other}': tables are cloned from 'hive' or 'paimon'"
            ))),
        }
    }
}

/// A Paimon table's clone (see the module docs). Built with [`ClonePaimonTable::new`].
#[derive(Clone, Debug)]
pub struct ClonePaimonTable {
    source: String,
    target: String,
    partitions: Option<Predicate>,
}

impl ClonePaimonTable {
    /// Clone Paimon table `source` (`db.table`) into `target` (`db.table`), created if missing.
    pub fn new(source: impl Into<String>, target: impl Into<String>) -> ClonePaimonTable {
        ClonePaimonTable {
            source: source.into(),
            target: target.into(),
            partitions: None,
        }
    }

    /// Only the partitions `filter` (on partition columns) selects (Java `where`).
    pub fn partitions(mut self, filter: Predicate) -> ClonePaimonTable {
        self.partitions = Some(filter);
        self
    }

    /// Clone from catalog `source` into catalog `target`: the OVERWRITE snapshot, `None` when
    /// no row was read. The source's rows are planned (the filter checked) before anything is
    /// created; a failure after drops the target when this clone created it.
    pub async fn run(&self, source: &Catalog, target: &Catalog) -> Result<Option<Committed>> {
        let from = source.get_table(&self.source).await?;
        let planned = Read::of_partitions(&from, self.partitions.as_ref())?
            .plan()
            .await?;
        let id = Identifier::table(&self.target)?;
        let existing = match target.get_table(&self.target).await {
            Ok(table) => Some(table),
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        if let Some(into) = existing {
            check_target(&from, &into)?;
            return copy(planned, &into).await;
        }
        let (fields, spec) = target_schema(&from)?;
        target
            .create_database(&id.database, true, &BTreeMap::new())
            .await?;
        let into = target
            .create_table_of_fields(&self.target, fields, &spec)
            .await?;
        let copied = copy(planned, &into).await;
        if copied.is_err() {
            // Already failing: the target is dropped on a best-effort basis.
            let _ = target.drop_table(&self.target).await;
        }
        copied
    }
}

/// Write the rows `planned` reads into `into`, then commit (see the module docs).
async fn copy(planned: PlannedRead, into: &Table) -> Result<Option<Committed>> {
    let into = into.reopen().await?;
    let mut write = TableWrite::for_overwrite(into.clone()).await?;
    let messages = planned
        .reader
        .write_into(planned.plan.splits, &mut write)
        .await?;
    if messages.is_empty() {
        return Ok(None);
    }
    let dynamic = into
        .schema()
        .options()
        .dynamic_partition_overwrite()
        .map_err(|e| Error::from_spec("table options", e))?;
    let scope = if dynamic {
        OverwriteScope::Dynamic
    } else {
        OverwriteScope::Static(None)
    };
    let user = format!("tidelake-clone-{}", into.env().uuid());
    let commit = TableCommit::new(into, user);
    let committed = commit.overwrite(scope, messages.clone()).await;
    if committed.is_err() {
        commit.discard_unless_landed(&messages).await;
    }
    committed.map(Some)
}

/// Java `ClonePaimonSchemaFunction`: the columns and spec of a clone of `source`.
fn target_schema(source: &Table) -> Result<(Vec<DataField>, TableSpec)> {
    let schema = source.schema();
    let mut next_id = 0;
    let fields = assign_field_ids(schema.fields.clone(), &mut next_id)
        .map_err(|e| Error::from_spec("table schema", e))?;
    let mut options: Vec<(String, String)> = schema
        .options()
        .iter()
        .filter(|(k, _)| !k.eq_ignore_ascii_case(BUCKET) && !k.eq_ignore_ascii_case(PATH))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let source_options = schema.options();
    if schema.primary_keys.is_empty() {
        if source_options.get(BUCKET_KEY).is_some() {
            // a bucketed append table keeps its buckets (`bucket-key` is among the options)
            if let Some(bucket) = source_options.get(BUCKET) {
                options.push((BUCKET.to_string(), bucket.to_string()));
            }
        }
    } else {
        // Java clones primary-key tables into postpone buckets only
        options.push((BUCKET.to_string(), POSTPONE_BUCKET.to_string()));
    }
    let spec = TableSpec {
        primary_keys: schema.primary_keys.clone(),
        partition_keys: schema.partition_keys.clone(),
        bucket: None,
        options,
        comment: None,
    };
    Ok((fields, spec))
}

/// An existing target takes the source's rows: the same column names and types, and not the
/// source itself.
fn check_target(from: &Table, into: &Table) -> Result<()> {
    if from.location() == into.location() {
        return Err(Error::invalid(format!(
            "the clone's target is its source, {}",
            from.location()
        )));
    }
    let columns = |t: &Table| -> Result<Vec<(String, arrow_schema::DataType)>> {
        t.schema()
            .fields
            .iter()
            .map(|f| Ok((f.name.clone(), arrow_type_of(&f.data_type)?)))
            .collect()
    };
    let (ours, theirs) = (columns(from)?, columns(into)?);
    if ours != theirs {
        let show = |c: &[(String, arrow_schema::DataType)]| {
            c.iter()
                .map(|(n, t)| format!("{n} {t}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(Error::invalid(format!(
            "{} has columns ({}), not the source's ({}): it cannot take the clone",
            into.location(),
            show(&theirs),
            show(&ours)
        )));
    }
    Ok(())
}

/// One table a [`CloneTables`] cloned: `db.table` names, and the snapshot made (`None`:
/// nothing to copy).
#[derive(Debug)]
pub struct ClonedTable {
    pub source: String,
    pub target: String,
    pub committed: Option<Committed>,
}

/// The `clone` procedure (see the module docs). Built with [`CloneTables::new`].
#[derive(Clone, Debug)]
pub struct CloneTables {
    from: CloneFrom,
    database: Option<String>,
    table: Option<String>,
    target_database: Option<String>,
    target_table: Option<String>,
    included: Vec<String>,
    excluded: Vec<String>,
    options: Vec<(String, String)>,
    partitions: Option<Predicate>,
}

impl CloneTables {
    /// Clone every table of the source catalog, from `from`.
    pub fn new(from: CloneFrom) -> CloneTables {
        CloneTables {
            from,
            database: None,
            table: None,
            target_database: None,
            target_table: None,
            included: Vec::new(),
            excluded: Vec::new(),
            options: Vec::new(),
            partitions: None,
        }
    }

    /// The source database (Java `database`); alone, all its tables.
    pub fn database(mut self, database: impl Into<String>) -> CloneTables {
        self.database = Some(database.into());
        self
    }

    /// The source table of the source database (Java `table`).
    pub fn table(mut self, table: impl Into<String>) -> CloneTables {
        self.table = Some(table.into());
        self
    }

    /// The target database (Java `target_database`).
    pub fn target_database(mut self, database: impl Into<String>) -> CloneTables {
        self.target_database = Some(database.into());
        self
    }

    /// The target table (Java `target_table`).
    pub fn target_table(mut self, table: impl Into<String>) -> CloneTables {
        self.target_table = Some(table.into());
        self
    }

    /// Only these `db.table` sources (Java `included_tables`).
    pub fn included(mut self, tables: Vec<String>) -> CloneTables {
        self.included = tables;
        self
    }

    /// Never these `db.table` sources (Java `excluded_tables`).
    pub fn excluded(mut self, tables: Vec<String>) -> CloneTables {
        self.excluded = tables;
        self
    }

    /// Options of targets created from Hive tables ([`CloneHiveTable::options`]); a clone from
    /// Paimon takes none (its targets have the source's).
    pub fn options(mut self, options: Vec<(String, String)>) -> CloneTables {
        self.options = options;
        self
    }

    /// Only the partitions `filter` (on partition columns) selects (Java `where`).
    pub fn partitions(mut self, filter: Predicate) -> CloneTables {
        self.partitions = Some(filter);
        self
    }

    /// Clone from catalog `source` into catalog `target`, table after table; what was cloned.
    pub async fn run(&self, source: &Catalog, target: &Catalog) -> Result<Vec<ClonedTable>> {
        if self.from == CloneFrom::Paimon && !self.options.is_empty() {
            return Err(Error::invalid(
                "a clone from Paimon takes no options: its targets get the source's",
            ));
        }
        let pairs = self.pairs(source).await?;
        let mut cloned = Vec::new();
        for (from, into) in pairs {
            let committed = match self.from {
                CloneFrom::Paimon => {
                    let mut clone = ClonePaimonTable::new(&from, &into);
                    if let Some(filter) = &self.partitions {
                        clone = clone.partitions(filter.clone());
                    }
                    clone.run(source, target).await
                }
                CloneFrom::Hive => {
                    let mut clone = CloneHiveTable::new(&from, &into).options(self.options.clone());
                    if let Some(filter) = &self.partitions {
                        clone = clone.partitions(filter.clone());
                    }
                    clone.run(source, target).await
                }
            }
            .inspect_err(|e| {
                if !cloned.is_empty() {
                    log::warn!(target: "tidelake.clone", "cloning {from} into {into} failed ({e}); \
                        cloned before it: {}", cloned.iter().map(|c: &ClonedTable| c.source.as_str())
                        .collect::<Vec<_>>().join(", "));
                }
            })?;
            cloned.push(ClonedTable {
                source: from,
                target: into,
                committed,
            });
        }
        Ok(cloned)
    }

    /// Java `buildSource`: the (source, target) `db.table` pairs, after its checks.
    async fn pairs(&self, source: &Catalog) -> Result<Vec<(String, String)>> {
        let check = |ok: bool, message: &str| {
            if ok {
                Ok(())
            } else {
                Err(Error::invalid(message.to_string()))
            }
        };
        let mut pairs = Vec::new();
        match (&self.database, &self.table) {
            (None, table) => {
                check(table.is_none(), "a source table needs its database")?;
                check(
                    self.target_database.is_none() && self.target_table.is_none(),
                    "a clone of every table of the catalog names no target database or table",
                )?;
                for database in source.list_databases().await? {
                    for name in self.select(source, &database).await? {
                        pairs.push((name.clone(), name));
                    }
                }
            }
            (Some(database), None) => {
                let target = self.target_database.as_deref().ok_or_else(|| {
                    Error::invalid("a clone of every table of a database needs the target database")
                })?;
                check(
                    self.target_table.is_none(),
                    "a clone of every table of a database names no target table",
                )?;
                for name in self.select(source, database).await? {
                    let table = Identifier::table(&name)?.table;
                    pairs.push((name, format!("{target}.{table}")));
                }
            }
            (Some(database), Some(table)) => {
                let (Some(target_database), Some(target_table)) =
                    (&self.target_database, &self.target_table)
                else {
                    return Err(Error::invalid(
                        "a clone of one table needs the target database and table",
                    ));
                };
                check(
                    self.included.is_empty() && self.excluded.is_empty(),
                    "a clone of one table takes no included or excluded tables",
                )?;
                pairs.push((
                    format!("{database}.{table}"),
                    format!("{target_database}.{target_table}"),
                ));
            }
        }
        if pairs.is_empty() {
            return Err(Error::invalid(
                "no table of the source catalog was selected",
            ));
        }
        Ok(pairs)
    }

    /// The `db.table` names of `database`'s sources that the included and excluded tables
    /// select (Java `listTables`).
    async fn select(&self, source: &Catalog, database: &str) -> Result<Vec<String>> {
        let tables = match self.from {
            CloneFrom::Paimon => source.list_tables(database).await?,
            CloneFrom::Hive => source.hive("clone")?.all_tables(database).await?,
        };
        let included: BTreeSet<&str> = self.included.iter().map(String::as_str).collect();
        let excluded: BTreeSet<&str> = self.excluded.iter().map(String::as_str).collect();
        Ok(tables
            .into_iter()
            .map(|t| format!("{database}.{t}"))
            .filter(|name| {
                !excluded.contains(name.as_str())
                    && (included.is_empty() || included.contains(name.as_str()))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    //! A primary-key table cloned between filesystem catalogs: Java's schema rules (postpone
    //! buckets, the other options kept), one OVERWRITE snapshot of rows in the postpone bucket;
    //! Java's selection rules refused before anything is made.

    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use tidelake_spec::snapshot::CommitKind;

    use super::*;
    use crate::io::FileIO;
    use crate::test_support::write_and_commit;

    fn catalog(dir: &std::path::Path) -> Catalog {
        std::fs::create_dir_all(dir).unwrap();
        Catalog::new(FileIO::open(dir.to_str().unwrap()).unwrap())
    }

    #[tokio::test]
    async fn a_primary_key_table_is_cloned_into_postpone_buckets() {
        let dir = tempfile::tempdir().unwrap();
        let (src, dst) = (
            catalog(&dir.path().join("src")),
            catalog(&dir.path().join("dst")),
        );
        src.create_database("db", false, &BTreeMap::new())
            .await
            .unwrap();
        let schema = Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("v", DataType::Utf8, true),
        ]);
        let spec = TableSpec {
            primary_keys: vec!["k".into()],
            bucket: Some(2),
            options: vec![("file.format".into(), "avro".into())],
            ..TableSpec::default()
        };
        let t = src.create_table("db.t", &schema, &spec).await.unwrap();
        let batch = RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(Int64Array::from(vec![1, 2, 3])),
                Arc::new(StringArray::from(vec!["a", "b", "c"])),
            ],
        )
        .unwrap();
        write_and_commit(&t, &batch, 0, "w").await;

        let committed = ClonePaimonTable::new("db.t", "copy.t")
            .run(&src, &dst)
            .await
            .unwrap()
            .unwrap();
        let c = dst.get_table("copy.t").await.unwrap();
        assert_eq!(c.schema().options().bucket().unwrap(), POSTPONE_BUCKET);
        assert_eq!(c.schema().options().file_format(), "avro");
        assert_eq!(c.schema().primary_keys, ["k"]);
        let snapshot = c.snapshot_manager().latest().await.unwrap().unwrap();
        assert_eq!(Some(snapshot.id), committed.last_id());
        assert_eq!(snapshot.commit_kind, CommitKind::Overwrite);
        assert_eq!(snapshot.total_record_count, 3);

        // Java's selection rules, refused before anything is made
        let refused = [
            CloneTables::new(CloneFrom::Paimon).database("db"),
            CloneTables::new(CloneFrom::Paimon).target_database("x"),
            CloneTables::new(CloneFrom::Paimon).table("t"),
            CloneTables::new(CloneFrom::Paimon)
                .database("db")
                .table("t")
                .target_database("x")
                .target_table("t")
                .excluded(vec!["db.t".into()]),
            CloneTables::new(CloneFrom::Paimon)
                .database("db")
                .target_database("x")
                .included(vec!["db.nope".into()]),
        ];
        for clone in refused {
            let e = clone.run(&src, &dst).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
        }
        assert!(dst.get_table("x.t").await.is_err());
    }
}
