//! Native reads: which parts of a planned scan a reader other than the engine (Spark's own
//! vectorized Parquet reader, through `tidelake.spark`) can read to exactly the engine's rows,
//! and which only the engine's merge can read.
//!
//! [`native_units`] turns every split of a [`ScanPlan`] into [`ReadUnit`]s:
//!
//! * [`ReadUnit::Files`]: data files whose rows (value columns, by name) are the split's rows
//!   for their keys, less the rows whose `_VALUE_KIND` is -U or -D where
//!   [`NativeFile::drop_retracts`], less the positions of the file's deletion vector
//!   ([`NativeFile::deletion`]; [`deleted_positions`] decodes them). These are the files of
//!   raw-convertible splits (append tables, deletion-vector and first-row tables: the engine
//!   reads them without merging, see [`crate::scan::plan`]), and on deduplicate tables the
//!   files that are a key-range section of their bucket alone (Java `IntervalPartition`,
//!   [`crate::lsm::sorted_runs`]): sections share no key and a file holds a key once, so the
//!   merge of a one-file section is that file's record of each key (less deleted positions),
//!   dropped when it retracts.
//! * [`ReadUnit::BaseDelta`]: the other sections of a bucket whose merged row is each key's
//!   newest record ([`MergeConfig::newest_record_wins`]) when every file below the bucket's
//!   highest level (the *delta*) is newer than every file of that level (the *base*, one sorted
//!   run): a key in no delta file has the base's record, a key in a delta file is decided by
//!   the delta alone. So the rows are the base's rows (retracts dropped) whose primary key is
//!   in no delta file, plus the engine's merge of the delta files only ([`ReadUnit::BaseDelta::merge`]).
//!   Only for primary keys whose equality is the same in every engine (no floating-point
//!   column: SQL engines take -0.0 = 0.0 and NaN = NaN, Paimon's binary keys do not).
//! * [`ReadUnit::Engine`]: a split the engine reads (a bucket's other sections, packed to
//!   `source.split.target-size` as Java `MergeTreeSplitGenerator` packs them; files a foreign
//!   reader cannot read; everything of merge engines other than deduplicate but their
//!   raw-convertible splits).
//!
//! A native file gives all its rows: a reader of a filtered scan applies the filter to them as
//! the engine applies it to merged rows (planning prunes primary-key files by key only, so the
//! kept files still hold every version of each key they hold).
//!
//! A file is natively readable when it is Parquet inside the table directory (no external
//! path), written with the scan's schema (read by column name) and holding whole rows without
//! row ids (no data evolution, no row tracking), in a split of the table's own branch that is
//! not a diff, and known to hold its partition's columns (foreign readers take them from
//! the file; the engine from the partition, see [`super::partition_columns`]). Invariant: for every split, the units made of it read exactly the rows the
//! engine reads of it.
//!
//! Files with a deletion vector and base/delta buckets are [`ReadUnit::Files`] / [`ReadUnit::BaseDelta`]
//! only with [`Deletes::Joined`] (the foreign reader removes the deleted rows by joins); with
//! [`Deletes::Engine`] the engine reads them (on Spark the joins cost more than the engine's
//! read: benches/README.md, "Merged reads through Spark's own Parquet reader").
//!
//! [`pack_splits`] packs splits into tasks of about `source.split.target-size` (Java
//! `BinPacking.packForOrdered`, each file weighing at least `source.split.open-file-cost`).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use serde::{Deserialize, Serialize};
use tidelake_spec::binary_row::decode_framed;
use tidelake_spec::options::MergeEngine;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::{DataType, TypeKind};

use crate::error::{Error, Result};
use crate::lsm::key::compare_keys;
use crate::lsm::merge::MergeConfig;
use crate::lsm::sorted_runs;
use crate::read::evolution;
use crate::read::split_read::decode_deletion_vector;
use crate::scan::plan::ScanPlan;
use crate::scan::split::{DeletionFileRef, Split, SplitFile};
use crate::table::Table;

/// A data file a foreign reader reads (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NativeFile {
    /// Path relative to the table root.
    pub path: String,
    pub file_name: String,
    pub file_size: i64,
    pub row_count: i64,
    /// The file may hold retract rows: rows whose `_VALUE_KIND` is not an add
    /// ([`tidelake_spec::row_kind::RowKind::is_add`]: -U, -D) must be dropped.
    pub drop_retracts: bool,
    /// The file's deletion vector: its positions must be dropped.
    pub deletion: Option<DeletionFileRef>,
}

/// Part of a planned scan, read one way (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReadUnit {
    /// Files read natively, each to its own rows.
    Files { files: Vec<NativeFile> },
    /// The rows of `base` whose primary key is in no file of `delta`, plus the engine's read
    /// of `merge` (a split of the `delta` files).
    BaseDelta {
        base: Vec<NativeFile>,
        delta: Vec<NativeFile>,
        merge: Split,
    },
    /// A split only the engine reads.
    Engine { split: Split },
}

/// Who removes the rows a data file holds but the read does not return, where that takes more
/// than dropping retracts: a deletion vector's positions, and a base's rows whose key a delta
/// file holds (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deletes {
    /// The engine reads such files ([`ReadUnit::Engine`]).
    Engine,
    /// The foreign reader does, by joins ([`ReadUnit::Files`] with [`NativeFile::deletion`],
    /// [`ReadUnit::BaseDelta`]).
    Joined,
}

/// How splits are packed: Java `source.split.target-size` and `source.split.open-file-cost`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Packing {
    pub target_size: u64,
    pub open_file_cost: u64,
}

impl Packing {
    /// The table options' packing (Paimon's defaults: 128 MiB, 4 MiB).
    pub fn of(schema: &TableSchema) -> Result<Packing> {
        let opts = schema.options();
        let spec = |e| Error::from_spec("table options", e);
        Ok(Packing {
            target_size: opts.split_target_size().map_err(spec)?,
            open_file_cost: opts.split_open_file_cost().map_err(spec)?,
        })
    }

    /// A split's or a raw file's weight: each file at least the open-file cost (Java
    /// `MergeTreeSplitGenerator` for deletion-vector buckets).
    fn weight(&self, files: &[SplitFile]) -> u64 {
        files.iter().map(|f| size(f).max(self.open_file_cost)).sum()
    }

    /// A key-range section's weight: its size, at least the open-file cost (Java
    /// `MergeTreeSplitGenerator.packSplits`).
    fn section_weight(&self, section: &[SplitFile]) -> u64 {
        section
            .iter()
            .map(size)
            .sum::<u64>()
            .max(self.open_file_cost)
    }
}

fn size(file: &SplitFile) -> u64 {
    u64::try_from(file.file_size).unwrap_or(0)
}

/// Java `BinPacking.packForOrdered`: items in order, a new bin whenever the next item would
/// take the current one past `target` (an item heavier than `target` gets a bin of its own).
fn pack_ordered<T>(items: Vec<T>, weight: impl Fn(&T) -> u64, target: u64) -> Vec<Vec<T>> {
    let mut bins = Vec::new();
    let mut bin = Vec::new();
    let mut bin_weight = 0u64;
    for item in items {
        let w = weight(&item);
        if !bin.is_empty() && bin_weight.saturating_add(w) > target {
            bins.push(std::mem::take(&mut bin));
            bin_weight = 0;
        }
        bin_weight = bin_weight.saturating_add(w);
        bin.push(item);
    }
    if !bin.is_empty() {
        bins.push(bin);
    }
    bins
}

/// The indexes of `splits` packed into tasks, in order (see [`Packing`]); every split is in
/// exactly one task.
pub fn pack_splits(splits: &[Split], packing: Packing) -> Vec<Vec<usize>> {
    pack_ordered(
        (0..splits.len()).collect(),
        |&i| packing.weight(&splits[i].files),
        packing.target_size,
    )
}

/// The read units of `plan`'s splits (see the module docs); Engine splits are packed as
/// `packing` says; `deletes` says who removes deleted rows.
pub fn native_units(plan: &ScanPlan, packing: Packing, deletes: Deletes) -> Result<Vec<ReadUnit>> {
    let classifier = Classifier::new(&plan.schema, packing, deletes)?;
    let mut units = Vec::new();
    for split in &plan.splits {
        classifier.split_units(split, &mut units)?;
    }
    Ok(units)
}

struct Classifier<'a> {
    schema: &'a TableSchema,
    packing: Packing,
    deletes: Deletes,
    has_primary_key: bool,
    /// Deduplicate tables: a one-file section is its file's rows less retracts.
    deduplicate: bool,
    /// A key's merged row is its newest record: base/delta buckets can be read natively.
    newest_record_wins: bool,
    /// Types of the trimmed primary key (what `min_key`/`max_key` hold).
    key_types: Vec<DataType>,
    /// Every primary-key column compares the same in every engine.
    exact_key_equality: bool,
}

impl<'a> Classifier<'a> {
    fn new(schema: &'a TableSchema, packing: Packing, deletes: Deletes) -> Result<Self> {
        let has_primary_key = !schema.primary_keys.is_empty();
        let (deduplicate, newest_record_wins) = if has_primary_key {
            let opts = schema.options();
            let engine = opts
                .merge_engine()
                .map_err(|e| Error::from_spec("table options", e))?;
            let deduplicate = engine == MergeEngine::Deduplicate;
            let newest_record_wins = deduplicate
                && MergeConfig::from_options(&schema.fields, &schema.primary_keys, opts)?
                    .newest_record_wins();
            (deduplicate, newest_record_wins)
        } else {
            (false, false)
        };
        let field_type = |name: &String| {
            schema
                .field(name)
                .map(|f| f.data_type.clone())
                .ok_or_else(|| Error::invalid(format!("primary key '{name}' is not a column")))
        };
        let key_types = schema
            .trimmed_primary_keys()
            .iter()
            .map(field_type)
            .collect::<Result<Vec<_>>>()?;
        let exact_key_equality = schema
            .primary_keys
            .iter()
            .map(field_type)
            .collect::<Result<Vec<_>>>()?
            .iter()
            .all(|t| exact_equality(&t.kind));
        Ok(Classifier {
            schema,
            packing,
            deletes,
            has_primary_key,
            deduplicate,
            newest_record_wins,
            key_types,
            exact_key_equality,
        })
    }

    /// Whether a foreign reader reads `file` of `split` by column name to its stored rows.
    fn readable(&self, split: &Split, file: &SplitFile) -> bool {
        split.branch.is_none()
            && split.before_files.is_none()
            && file.write_cols.is_none()
            && file.first_row_id.is_none()
            && file.holds_partition_columns
            && file.schema_id == self.schema.id
            && file.file_name.ends_with(".parquet")
            && !file.path.starts_with('/')
            && !crate::io::is_location(&file.path)
    }

    /// Whether `file` of `split` is a native file: readable, and without a deletion vector
    /// unless the foreign reader applies them.
    fn native_file(&self, split: &Split, file: &SplitFile) -> bool {
        self.readable(split, file) && (file.deletion.is_none() || self.deletes == Deletes::Joined)
    }

    fn native(&self, file: &SplitFile) -> NativeFile {
        NativeFile {
            path: file.path.clone(),
            file_name: file.file_name.clone(),
            file_size: file.file_size,
            row_count: file.row_count,
            // append files have no row kinds; a primary-key file may hold retracts unless it
            // says it holds none
            drop_retracts: self.has_primary_key && file.delete_row_count != Some(0),
            deletion: file.deletion.clone(),
        }
    }

    /// `split` with only `files` (`raw`: readable without merging).
    fn sub_split(split: &Split, files: Vec<SplitFile>, raw: bool) -> Split {
        Split {
            files,
            raw_convertible: raw,
            before_files: None,
            ..split.clone()
        }
    }

    fn split_units(&self, split: &Split, units: &mut Vec<ReadUnit>) -> Result<()> {
        let whole_for_engine = split.branch.is_some()
            || split.before_files.is_some()
            || (!self.has_primary_key && evolution::needs_merge(&split.files));
        if whole_for_engine {
            units.push(ReadUnit::Engine {
                split: split.clone(),
            });
            return Ok(());
        }
        if split.raw_convertible {
            let (native, other): (Vec<&SplitFile>, Vec<&SplitFile>) =
                split.files.iter().partition(|f| self.native_file(split, f));
            if !native.is_empty() {
                units.push(ReadUnit::Files {
                    files: native.into_iter().map(|f| self.native(f)).collect(),
                });
            }
            let other: Vec<SplitFile> = other.into_iter().cloned().collect();
            let packing = self.packing;
            for files in pack_ordered(
                other,
                |f| packing.weight(std::slice::from_ref(f)),
                packing.target_size,
            ) {
                units.push(ReadUnit::Engine {
                    split: Self::sub_split(split, files, true),
                });
            }
            return Ok(());
        }
        let sections: Vec<Vec<SplitFile>> =
            sorted_runs::partition(split.files.clone(), &self.key_types)?
                .into_iter()
                .map(|runs| runs.into_iter().flatten().collect())
                .collect();
        let mut merged: Vec<Vec<SplitFile>> = Vec::new();
        let mut native = Vec::new();
        for section in sections {
            match section.as_slice() {
                [file] if self.deduplicate && self.native_file(split, file) => {
                    native.push(self.native(file));
                }
                _ => merged.push(section),
            }
        }
        if !native.is_empty() {
            units.push(ReadUnit::Files { files: native });
        }
        if merged.is_empty() {
            return Ok(());
        }
        if let Some(unit) = self.base_delta(split, &merged)? {
            units.push(unit);
            return Ok(());
        }
        let packing = self.packing;
        for bin in pack_ordered(merged, |s| packing.section_weight(s), packing.target_size) {
            units.push(ReadUnit::Engine {
                split: Self::sub_split(split, bin.into_iter().flatten().collect(), false),
            });
        }
        Ok(())
    }

    /// The base/delta read of `sections` (a bucket's sections that need a merge), when the
    /// foreign reader joins ([`Deletes::Joined`]) and it is exact: newest record wins, every file natively readable and without deletion vector (those of
    /// merge-on-read tables are left to the engine), the files of the sections' highest level
    /// (above 0) one sorted run and older than every other file of the sections.
    fn base_delta(&self, split: &Split, sections: &[Vec<SplitFile>]) -> Result<Option<ReadUnit>> {
        if self.deletes == Deletes::Engine || !self.newest_record_wins || !self.exact_key_equality {
            return Ok(None);
        }
        let files: Vec<&SplitFile> = sections.iter().flatten().collect();
        if !files
            .iter()
            .all(|f| f.deletion.is_none() && self.readable(split, f))
        {
            return Ok(None);
        }
        let top = files.iter().map(|f| f.level).max().unwrap_or(0);
        if top == 0 {
            return Ok(None);
        }
        let (base, delta): (Vec<&SplitFile>, Vec<&SplitFile>) =
            files.into_iter().partition(|f| f.level == top);
        let base_newest = base.iter().map(|f| f.max_sequence_number).max();
        let delta_oldest = delta.iter().map(|f| f.min_sequence_number).min();
        match (base_newest, delta_oldest) {
            (Some(b), Some(d)) if d > b => {}
            _ => return Ok(None),
        }
        if !self.one_sorted_run(&base)? {
            return Ok(None);
        }
        let merge = Self::sub_split(split, delta.iter().map(|f| (*f).clone()).collect(), false);
        Ok(Some(ReadUnit::BaseDelta {
            base: base.into_iter().map(|f| self.native(f)).collect(),
            delta: delta.into_iter().map(|f| self.native(f)).collect(),
            merge,
        }))
    }

    /// Whether `files`' key ranges overlap nowhere (a level above 0 always is a sorted run;
    /// checked because the base read relies on it).
    fn one_sorted_run(&self, files: &[&SplitFile]) -> Result<bool> {
        let mut ranges = files
            .iter()
            .map(|f| {
                let decode = |b: &[u8]| {
                    decode_framed(b, &self.key_types)
                        .map_err(|e| Error::from_spec(format!("key range of {}", f.path), e))
                };
                Ok((decode(&f.min_key)?, decode(&f.max_key)?))
            })
            .collect::<Result<Vec<_>>>()?;
        ranges.sort_by(|a, b| compare_keys(&a.0, &b.0));
        Ok(ranges
            .windows(2)
            .all(|w| compare_keys(&w[0].1, &w[1].0) == Ordering::Less))
    }
}

/// Whether values of `kind` are equal in SQL engines exactly when their Paimon binary forms
/// are (floating point is not: -0.0 = 0.0 and NaN = NaN there).
fn exact_equality(kind: &TypeKind) -> bool {
    !matches!(
        kind,
        TypeKind::Float
            | TypeKind::Double
            | TypeKind::Array(_)
            | TypeKind::Multiset(_)
            | TypeKind::Map(..)
            | TypeKind::Row(_)
            | TypeKind::Variant
            | TypeKind::Blob
    )
}

/// Column of [`deleted_positions`]: the data file's name.
pub const FILE_NAME_COLUMN: &str = "file_name";
/// Column of [`deleted_positions`]: a deleted row's 0-based position in its file.
pub const POSITION_COLUMN: &str = "position";

/// The deleted positions of `files`' deletion vectors, as rows `(file_name, position)` in
/// file order then position order (files without a deletion vector have none). Each index
/// file is read once.
pub async fn deleted_positions(table: &Table, files: &[NativeFile]) -> Result<RecordBatch> {
    let mut index_files: HashMap<&str, Arc<Vec<u8>>> = HashMap::new();
    let mut names: Vec<&str> = Vec::new();
    let mut positions: Vec<i64> = Vec::new();
    for file in files {
        let Some(dv) = &file.deletion else { continue };
        let bytes = match index_files.get(dv.path.as_str()) {
            Some(b) => b.clone(),
            None => {
                let b = Arc::new(table.io().read(&dv.path).await?.to_vec());
                index_files.insert(&dv.path, b.clone());
                b
            }
        };
        let vector = decode_deletion_vector(table, &dv.path, &bytes, dv.offset, dv.length)?;
        for pos in vector.iter() {
            let pos = i64::try_from(pos).map_err(|_| {
                Error::corrupt(table.io().display(&dv.path), "a deleted position past 2^63")
            })?;
            names.push(&file.file_name);
            positions.push(pos);
        }
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new(FILE_NAME_COLUMN, ArrowType::Utf8, false),
        Field::new(POSITION_COLUMN, ArrowType::Int64, false),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(names)),
            Arc::new(Int64Array::from(positions)),
        ],
    )
    .map_err(|e| Error::arrow("deleted positions", e))
}

#[cfg(test)]
#[path = "native_tests.rs"]
mod tests;
