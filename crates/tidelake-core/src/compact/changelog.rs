//! Changelog produced by compaction, for `changelog-producer=full-compaction` and `lookup`
//! (Java `ChangelogMergeTreeRewriter`, `FullChangelogMergeFunctionWrapper`,
//! `LookupChangelogMergeFunctionWrapper`, `FirstRowMergeFunctionWrapper`).
//!
//! When (Java `rewriteChangelog` / `upgradeChangelog`):
//! * full-compaction: a rewrite or an upgrade whose output level is the max level;
//! * lookup: a rewrite to a level above 0 that holds a level-0 file, or the upgrade of a
//!   level-0 file (upgrades that produce changelog rewrite the file).
//!
//! How: the merged rows of a rewrite (`[_SEQUENCE_NUMBER, _VALUE_KIND, v0..vn]`, retracts
//! kept) are joined by key with the *before* rows of the same section: the section's files at
//! the max level (full-compaction: Java's `topLevelKv`) or at any level above 0 (lookup: the
//! newest of them is Java's `highLevel`), merged by deduplication so each key has its newest
//! record; lookup keys without one take the newest record found below the output level, as
//! queued by the rewrite's lookup (Java's `lookup` of `highLevel`). The streams are in key
//! order, so the join holds one batch of each.
//!
//! Per key, with `after` the merged row and `before` the joined row, if any:
//! * full-compaction: no `before` → `+I after` when `after` is an add; `before` is the key's
//!   only record (`after` carries its sequence number) → nothing; else `-D before` when
//!   `after` is a retract, otherwise `-U before, +U after`;
//! * lookup: the key has no level-0 record (`after` is not newer than `before`) → nothing;
//!   else as full-compaction, a retract `before` counting as none;
//! * lookup on first-row tables (whatever the producer): `+I after` only when no level above
//!   0 holds the key; a key found in the levels below the output (outside the unit) is an old
//!   key whose new record first-row drops from the output, without changelog.
//!
//! With `changelog-producer.row-deduplicate`, `-U/+U` pairs whose values are equal (but for
//! the columns `changelog-producer.row-deduplicate-ignore-fields` names, Java's
//! `ValueEqualiserSupplier.fromIgnoreFields`) are not emitted. Sequence numbers identify the key's only record because records of one key are
//! numbered in write order and higher levels hold older records. First-row units look the
//! levels below the output up with the unit's `DeeperLookup` (see `lookup`).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, Int8Type};
use arrow_array::{Array, ArrayRef, BooleanArray, Int8Array, RecordBatch};
use arrow_row::{Row, Rows};
use arrow_select::interleave::interleave;
use futures::stream::{BoxStream, TryStreamExt};
use tidelake_spec::options::{ChangelogProducer, MergeEngine, Options};
use tidelake_spec::row_kind::RowKind;

use crate::error::{Error, Result};
use crate::lsm::key::KeyEncoder;

/// Columns before the value columns in merged rows (`_SEQUENCE_NUMBER`, `_VALUE_KIND`).
pub(super) const VALUE_OFFSET: usize = 2;

/// How a table's compactions produce changelog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangelogMode {
    /// `changelog-producer=full-compaction`.
    FullCompaction,
    /// `changelog-producer=lookup`, other merge engines than first-row.
    Lookup,
    /// `changelog-producer=lookup` with `merge-engine=first-row`.
    FirstRowLookup,
}

/// The changelog settings of a table's compactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangelogSpec {
    pub mode: ChangelogMode,
    /// Whether changelog files are written (first-row tables without a producer only use the
    /// lookup to drop new records of old keys).
    pub produce: bool,
    /// `changelog-producer.row-deduplicate`.
    pub row_deduplicate: bool,
}

impl ChangelogSpec {
    /// The spec of a table, `None` when its compactions need neither changelog nor lookup.
    /// First-row tables support only `none` and `lookup` (Java's schema validation).
    pub fn from_options(opts: &Options) -> Result<Option<ChangelogSpec>> {
        let spec = |e| Error::from_spec("table options", e);
        let first_row = opts.merge_engine().map_err(spec)? == MergeEngine::FirstRow;
        let (mode, produce) = match opts.changelog_producer().map_err(spec)? {
            ChangelogProducer::FullCompaction if first_row => {
                return Err(Error::invalid(
                    "merge-engine=first-row supports only changelog-producer none or lookup, not full-compaction",
                ))
            }
            ChangelogProducer::FullCompaction => (ChangelogMode::FullCompaction, true),
            ChangelogProducer::Lookup if first_row => (ChangelogMode::FirstRowLookup, true),
            // first-row compacts with lookup whatever the producer (Java)
            ChangelogProducer::None if first_row => (ChangelogMode::FirstRowLookup, false),
            ChangelogProducer::Lookup => (ChangelogMode::Lookup, true),
            _ => return Ok(None),
        };
        Ok(Some(ChangelogSpec {
            mode,
            produce,
            row_deduplicate: opts.changelog_producer_row_deduplicate().map_err(spec)?,
        }))
    }

    /// Java `rewriteChangelog`: does rewriting files of `levels` into `output_level` produce
    /// changelog?
    pub fn on_rewrite(
        &self,
        output_level: i32,
        max_level: i32,
        mut levels: impl Iterator<Item = i32>,
    ) -> bool {
        match self.mode {
            ChangelogMode::FullCompaction => output_level == max_level,
            _ => output_level != 0 && levels.any(|l| l == 0),
        }
    }

    /// Java `upgradeChangelog`: does moving a file of `level` to `output_level` produce
    /// changelog (and so rewrite the file)?
    pub fn on_upgrade(&self, output_level: i32, max_level: i32, level: i32) -> bool {
        match self.mode {
            ChangelogMode::FullCompaction => output_level == max_level,
            _ => level == 0,
        }
    }

    /// Whether a file of `level` holds *before* records (see the module docs).
    pub fn is_before_level(&self, level: i32, max_level: i32) -> bool {
        match self.mode {
            ChangelogMode::FullCompaction => level == max_level,
            _ => level > 0,
        }
    }
}

/// A forward cursor over key-ordered `[_SEQUENCE_NUMBER, _VALUE_KIND, v0..vn]` rows, each key
/// at most once.
pub struct KeyCursor {
    stream: BoxStream<'static, Result<RecordBatch>>,
    /// Current batch, its keys and the next row to look at.
    head: Option<(RecordBatch, Rows, usize)>,
    exhausted: bool,
    /// The stream's end only means "no more rows yet" ([`KeyCursor::resumable`]).
    resumable: bool,
    /// Rows of the batches loaded so far (the current one included).
    loaded: u64,
}

impl KeyCursor {
    pub fn new(stream: BoxStream<'static, Result<RecordBatch>>) -> KeyCursor {
        KeyCursor {
            stream,
            head: None,
            exhausted: false,
            resumable: false,
            loaded: 0,
        }
    }

    /// A cursor over a stream that ends whenever it holds no row yet and may yield more
    /// later (a queue filled by a producer running ahead of every key sought).
    pub(super) fn resumable(stream: BoxStream<'static, Result<RecordBatch>>) -> KeyCursor {
        KeyCursor {
            resumable: true,
            ..KeyCursor::new(stream)
        }
    }

    /// [`KeyCursor::seek`], also giving the position of the row holding `key` in the stream.
    pub(super) async fn seek_positioned(
        &mut self,
        keys: &mut KeyEncoder,
        key: Row<'_>,
    ) -> Result<Option<(RecordBatch, usize, u64)>> {
        let found = self.seek(keys, key).await?;
        // the row is in the batch loaded last
        Ok(found.map(|(batch, row)| {
            let position = self.loaded - batch.num_rows() as u64 + row as u64;
            (batch, row, position)
        }))
    }

    /// Move to `key` (never backwards); the batch and row holding it, if any.
    pub(super) async fn seek(
        &mut self,
        keys: &mut KeyEncoder,
        key: Row<'_>,
    ) -> Result<Option<(RecordBatch, usize)>> {
        loop {
            if self.head.is_none() {
                if self.exhausted {
                    return Ok(None);
                }
                match self.stream.try_next().await? {
                    None => {
                        self.exhausted = !self.resumable;
                        return Ok(None);
                    }
                    Some(batch) if batch.num_rows() == 0 => continue,
                    Some(batch) => {
                        self.loaded += batch.num_rows() as u64;
                        let rows = keys.encode(&batch, VALUE_OFFSET)?;
                        self.head = Some((batch, rows, 0));
                    }
                }
            }
            let (batch, rows, pos) = self.head.as_mut().expect("head loaded above");
            while *pos < rows.num_rows() && rows.row(*pos) < key {
                *pos += 1;
            }
            if *pos == rows.num_rows() {
                self.head = None;
                continue;
            }
            if rows.row(*pos) != key {
                return Ok(None);
            }
            *pos += 1;
            return Ok(Some((batch.clone(), *pos - 1)));
        }
    }
}

/// The *before* rows of a section joined with its merged rows.
pub struct ChangelogJoin {
    spec: ChangelogSpec,
    keys: KeyEncoder,
    before: KeyCursor,
    /// Lookup: the rows found below the output level, the before record of keys without one
    /// in `before`.
    looked_up: Option<KeyCursor>,
    /// Value columns row deduplication does not compare, by name.
    ignored: Vec<String>,
}

/// A changelog row: the source batch (an index into the before batches, `usize::MAX`: the
/// merged batch), row, kind.
type Pick = (usize, usize, i8);

/// The before record of a key.
#[derive(Clone, Copy)]
struct Before {
    src: usize,
    pos: usize,
    seq: i64,
    add: bool,
}

/// What joining one merged batch gives.
pub struct Joined {
    /// The changelog rows, if any.
    pub changelog: Option<RecordBatch>,
    /// Which merged rows stay in the data files (`None`: all).
    pub keep: Option<BooleanArray>,
}

impl ChangelogJoin {
    /// Join merged rows with `before` (newest before record per key, in key order, as
    /// `[_SEQUENCE_NUMBER, _VALUE_KIND, v0..vn]`); keys are the value columns `key_indices`.
    /// `looked_up`: the newest record below the output level of keys not in `before`.
    pub fn new(
        spec: ChangelogSpec,
        key_indices: Vec<usize>,
        before: BoxStream<'static, Result<RecordBatch>>,
        looked_up: Option<KeyCursor>,
    ) -> ChangelogJoin {
        ChangelogJoin {
            spec,
            keys: KeyEncoder::new(key_indices),
            before: KeyCursor::new(before),
            looked_up,
            ignored: Vec::new(),
        }
    }

    /// This join with row deduplication not comparing the value columns named `fields`
    /// (`changelog-producer.row-deduplicate-ignore-fields`).
    pub fn ignoring_fields(mut self, fields: Vec<String>) -> ChangelogJoin {
        self.ignored = fields;
        self
    }

    /// The changelog rows of one merged batch (retracts kept). `old_keys` (first-row lookup):
    /// which merged rows have a record in the levels below the output, outside the unit; they
    /// are new records of old keys, which first-row drops (Java `FirstRowMergeFunctionWrapper`).
    pub async fn changes(
        &mut self,
        merged: &RecordBatch,
        old_keys: Option<&[bool]>,
    ) -> Result<Joined> {
        let keys = self.keys.encode(merged, VALUE_OFFSET)?;
        let seqs = sequences(merged)?;
        let compared: Vec<usize> = (VALUE_OFFSET..merged.num_columns())
            .filter(|&c| !self.ignored.contains(merged.schema().field(c).name()))
            .collect();
        // before batches this merged batch joined with, in order
        let mut sources: Vec<RecordBatch> = Vec::new();
        let mut picks: Vec<Pick> = Vec::new();
        let mut keep: Option<Vec<bool>> = None;
        for row in 0..merged.num_rows() {
            let after_add = is_add(kind_at(merged, row)?);
            let after = |kind| (usize::MAX, row, kind);
            let mut found = self.before.seek(&mut self.keys, keys.row(row)).await?;
            if let (None, Some(looked_up)) = (&found, self.looked_up.as_mut()) {
                found = looked_up.seek(&mut self.keys, keys.row(row)).await?;
            }
            let before = match found {
                Some((batch, pos)) => {
                    if !sources.last().is_some_and(|s| same_batch(s, &batch)) {
                        sources.push(batch);
                    }
                    let src = sources.len() - 1;
                    Some(Before {
                        src,
                        pos,
                        seq: sequences(&sources[src])?.value(pos),
                        add: is_add(kind_at(&sources[src], pos)?),
                    })
                }
                None => None,
            };
            let before = match (self.spec.mode, before) {
                (ChangelogMode::FirstRowLookup, Some(_)) => continue,
                (ChangelogMode::FirstRowLookup, None) => {
                    if old_keys.is_some_and(|old| old[row]) {
                        keep.get_or_insert_with(|| vec![true; merged.num_rows()])[row] = false;
                        continue;
                    }
                    None
                }
                // the key's only record (full) / no level-0 record (lookup)
                (_, Some(b)) if seqs.value(row) <= b.seq => continue,
                (ChangelogMode::Lookup, Some(b)) if !b.add => None,
                (_, b) => b,
            };
            match before {
                None if after_add => picks.push(after(RowKind::Insert.code())),
                None => {}
                Some(b) if !after_add => picks.push((b.src, b.pos, RowKind::Delete.code())),
                Some(b)
                    if self.spec.row_deduplicate
                        && same_values(&sources[b.src], b.pos, merged, row, &compared) => {}
                Some(b) => {
                    picks.push((b.src, b.pos, RowKind::UpdateBefore.code()));
                    picks.push(after(RowKind::UpdateAfter.code()));
                }
            }
        }
        let changelog = if picks.is_empty() {
            None
        } else {
            Some(build(&sources, merged, &picks)?)
        };
        Ok(Joined {
            changelog,
            keep: keep.map(BooleanArray::from),
        })
    }
}

fn is_add(kind: i8) -> bool {
    RowKind::from_code(kind).is_some_and(RowKind::is_add)
}

fn kind_at(batch: &RecordBatch, row: usize) -> Result<i8> {
    batch
        .column(1)
        .as_primitive_opt::<Int8Type>()
        .map(|k| k.value(row))
        .ok_or_else(|| Error::invalid("_VALUE_KIND is not TINYINT"))
}

fn sequences(batch: &RecordBatch) -> Result<&arrow_array::Int64Array> {
    batch
        .column(0)
        .as_primitive_opt::<Int64Type>()
        .ok_or_else(|| Error::invalid("_SEQUENCE_NUMBER is not BIGINT"))
}

/// Whether `a` and `b` are the same batch (shared columns).
pub(super) fn same_batch(a: &RecordBatch, b: &RecordBatch) -> bool {
    a.num_rows() == b.num_rows()
        && a.columns()
            .iter()
            .zip(b.columns())
            .all(|(x, y)| Arc::ptr_eq(x, y))
}

/// Java's value comparison: the `compared` columns equal (nulls equal nulls).
fn same_values(a: &RecordBatch, i: usize, b: &RecordBatch, j: usize, compared: &[usize]) -> bool {
    compared.iter().all(|&c| {
        let (x, y) = (a.column(c), b.column(c));
        x.slice(i, 1).to_data() == y.slice(j, 1).to_data()
    })
}

/// The picked rows as one batch shaped like `merged`, `_VALUE_KIND` replaced.
fn build(sources: &[RecordBatch], merged: &RecordBatch, picks: &[Pick]) -> Result<RecordBatch> {
    let merged_source = sources.len();
    let indices: Vec<(usize, usize)> = picks
        .iter()
        .map(|&(src, row, _)| {
            (
                if src == usize::MAX {
                    merged_source
                } else {
                    src
                },
                row,
            )
        })
        .collect();
    let mut columns = Vec::with_capacity(merged.num_columns());
    for c in 0..merged.num_columns() {
        if c == 1 {
            let kinds: Int8Array = picks.iter().map(|&(_, _, k)| Some(k)).collect();
            columns.push(Arc::new(kinds) as ArrayRef);
            continue;
        }
        let arrays: Vec<&dyn Array> = sources
            .iter()
            .chain(std::iter::once(merged))
            .map(|b| b.column(c).as_ref())
            .collect();
        columns.push(interleave(&arrays, &indices).map_err(|e| Error::arrow("changelog rows", e))?);
    }
    RecordBatch::try_new(merged.schema(), columns).map_err(|e| Error::arrow("changelog rows", e))
}

#[cfg(test)]
mod tests {
    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{DataType as ArrowType, Field, Schema};
    use futures::stream::{self, StreamExt};

    use super::*;

    /// `[_SEQUENCE_NUMBER, _VALUE_KIND, k, v]` rows.
    fn batch(rows: &[(i64, i8, i64, &str)]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("_SEQUENCE_NUMBER", ArrowType::Int64, false),
            Field::new("_VALUE_KIND", ArrowType::Int8, false),
            Field::new("k", ArrowType::Int64, false),
            Field::new("v", ArrowType::Utf8, true),
        ]));
        let column =
            |f: fn(&(i64, i8, i64, &str)) -> i64| Int64Array::from_iter_values(rows.iter().map(f));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(column(|r| r.0)),
                Arc::new(rows.iter().map(|r| Some(r.1)).collect::<Int8Array>()),
                Arc::new(column(|r| r.2)),
                Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.3))),
            ],
        )
        .unwrap()
    }

    fn rows(b: &RecordBatch) -> Vec<(i64, i8, i64, String)> {
        let seq = b.column(0).as_primitive::<Int64Type>();
        let kind = b.column(1).as_primitive::<Int8Type>();
        let k = b.column(2).as_primitive::<Int64Type>();
        let v = b.column(3).as_string::<i32>();
        (0..b.num_rows())
            .map(|i| {
                (
                    seq.value(i),
                    kind.value(i),
                    k.value(i),
                    v.value(i).to_string(),
                )
            })
            .collect()
    }

    /// Join `merged` (one batch per entry) with `before` (split across two batches).
    async fn changelog(
        mode: ChangelogMode,
        row_deduplicate: bool,
        before: &[(i64, i8, i64, &str)],
        merged: &[&[(i64, i8, i64, &str)]],
    ) -> Vec<(i64, i8, i64, String)> {
        changelog_ignoring(mode, row_deduplicate, &[], before, merged).await
    }

    /// [`changelog`] with row deduplication not comparing `ignored` columns.
    async fn changelog_ignoring(
        mode: ChangelogMode,
        row_deduplicate: bool,
        ignored: &[&str],
        before: &[(i64, i8, i64, &str)],
        merged: &[&[(i64, i8, i64, &str)]],
    ) -> Vec<(i64, i8, i64, String)> {
        let (a, b) = before.split_at(before.len() / 2);
        let before = stream::iter(vec![Ok(batch(a)), Ok(batch(b))]).boxed();
        let spec = ChangelogSpec {
            mode,
            produce: true,
            row_deduplicate,
        };
        let mut join = ChangelogJoin::new(spec, vec![0], before, None)
            .ignoring_fields(ignored.iter().map(|f| f.to_string()).collect());
        let mut out = Vec::new();
        for m in merged {
            if let Some(changes) = join.changes(&batch(m), None).await.unwrap().changelog {
                out.extend(rows(&changes));
            }
        }
        out
    }

    const I: i8 = RowKind::Insert.code();
    const D: i8 = RowKind::Delete.code();
    const UB: i8 = RowKind::UpdateBefore.code();
    const UA: i8 = RowKind::UpdateAfter.code();

    /// Before: keys 1, 2, 3, 5 (old values); merged: 1 untouched, 2 updated to the same value,
    /// 3 deleted, 4 new, 5 updated, 6 written and deleted.
    const BEFORE: &[(i64, i8, i64, &str)] = &[
        (1, I, 1, "a"),
        (2, I, 2, "b"),
        (3, I, 3, "c"),
        (4, I, 5, "e"),
    ];
    const MERGED_1: &[(i64, i8, i64, &str)] = &[(1, I, 1, "a"), (10, I, 2, "b"), (11, D, 3, "c")];
    const MERGED_2: &[(i64, i8, i64, &str)] = &[(12, I, 4, "d"), (13, UA, 5, "E"), (14, D, 6, "f")];

    #[tokio::test]
    async fn full_compaction_and_lookup_diff_against_the_older_record() {
        let expected = vec![
            (2, UB, 2, "b".to_string()),
            (10, UA, 2, "b".to_string()),
            (3, D, 3, "c".to_string()),
            (12, I, 4, "d".to_string()),
            (4, UB, 5, "e".to_string()),
            (13, UA, 5, "E".to_string()),
        ];
        for mode in [ChangelogMode::FullCompaction, ChangelogMode::Lookup] {
            assert_eq!(
                changelog(mode, false, BEFORE, &[MERGED_1, MERGED_2]).await,
                expected,
                "{mode:?}"
            );
        }
        // row-deduplicate drops the -U/+U pair of equal values
        let deduplicated: Vec<_> = expected.iter().filter(|r| r.2 != 2).cloned().collect();
        assert_eq!(
            changelog(ChangelogMode::Lookup, true, BEFORE, &[MERGED_1, MERGED_2]).await,
            deduplicated
        );
        // ignoring `v`, key 5's changed value is a duplicate too; ignoring alone changes nothing
        let ignoring_v: Vec<_> = deduplicated.iter().filter(|r| r.2 != 5).cloned().collect();
        for mode in [ChangelogMode::FullCompaction, ChangelogMode::Lookup] {
            let all = &[MERGED_1, MERGED_2];
            assert_eq!(
                changelog_ignoring(mode, true, &["v"], BEFORE, all).await,
                ignoring_v,
                "{mode:?}"
            );
            assert_eq!(
                changelog_ignoring(mode, false, &["v"], BEFORE, all).await,
                expected,
                "{mode:?}"
            );
        }
    }

    #[tokio::test]
    async fn lookup_treats_a_retracted_before_as_none_and_first_row_only_inserts() {
        let before: &[(i64, i8, i64, &str)] = &[(1, D, 1, "a"), (2, I, 2, "b")];
        let merged: &[(i64, i8, i64, &str)] = &[(5, I, 1, "A"), (6, I, 2, "B"), (7, I, 3, "C")];
        assert_eq!(
            changelog(ChangelogMode::Lookup, false, before, &[merged]).await,
            vec![
                (5, I, 1, "A".to_string()),
                (2, UB, 2, "b".to_string()),
                (6, UA, 2, "B".to_string()),
                (7, I, 3, "C".to_string()),
            ]
        );
        // full-compaction keeps Java's top-level record whatever its kind
        assert_eq!(
            changelog(ChangelogMode::FullCompaction, false, before, &[merged]).await[0].1,
            UB
        );
        assert_eq!(
            changelog(ChangelogMode::FirstRowLookup, false, before, &[merged]).await,
            vec![(7, I, 3, "C".to_string())]
        );
    }
}
