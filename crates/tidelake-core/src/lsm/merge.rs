//! The sorted-run merge of a primary-key split: k-way merge by key, then the merge function
//! per key (Java `SortMergeReaderWithLoserTree`/`SortMergeReaderWithMinHeap` +
//! `ReducerMergeFunctionWrapper` + `DropDeleteReader`).
//!
//! Input: one stream per sorted run, batches shaped `[_SEQUENCE_NUMBER: Int64, _VALUE_KIND:
//! Int8, v0..vn]`; within a run keys ascend strictly (each key at most once). Output: batches
//! `[_VALUE_KIND: Int8, v0..vn]` in key order, at most `batch_size` rows each.
//!
//! Order: key (Java key comparator, see the `cursor` module), then user `sequence.field` columns, then
//! `_SEQUENCE_NUMBER`, then retracts before adds. A key found in one run only is emitted as
//! is, kind included (Java's reducer wrapper skips the merge function for single records);
//! keys in several runs go through the merge function. Without `keep_retracts`, -U/-D results
//! are dropped.
//!
//! Levels are not modelled here: every record of a key is merged. Java's `LookupMergeFunction`
//! for lookup tables (level-0 records merge with only the newest record above level 0) is
//! applied by the callers, which hand such tables' files above level 0 in as one run of each
//! key's newest record (`ReadContext::section_runs`).
//!
//! Streaming: each run holds one batch at a time; input batches stay alive only while a
//! cursor is on them or pending output rows point into them (released at the next flush).
//! Fast path: the winning run's rows whose keys are below every other run's current key are
//! taken as a range without per-key work (found by galloping from the winner's position, since
//! such stretches are mostly a few rows long), and a flush that is one contiguous range of one
//! batch is a zero-copy slice. Keys of fixed-width columns are compared as packed integers,
//! kept per run in a flat array for the loser tree (`cursor` module).

mod cursor;
mod loser_tree;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef};
use futures::stream::{BoxStream, StreamExt};
use tidelake_spec::options::{Options, SortOrder};
use tidelake_spec::types::DataField;

use crate::error::{Error, Result};
use crate::lsm::merge_fn::config::{engine_from_options, option_error};
use crate::lsm::merge_fn::output::OutputRows;
use crate::lsm::merge_fn::value::{Pool, Rec, VALUE_OFFSET};
use crate::lsm::merge_fn::{self, MergeEngineConfig, MergeFunction, PartialUpdateConfig};
use cursor::{check_input_schema, compare, Cursor, Encoder, OwnedKey, EXHAUSTED};
use loser_tree::LoserTree;

/// How to merge the sorted runs of a primary-key split.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeConfig {
    /// Positions of the key columns among the value columns v0..vn, in key order.
    pub key_indices: Vec<usize>,
    /// Positions of the `sequence.field` columns among v0..vn; compared after the key and
    /// before `_SEQUENCE_NUMBER`.
    pub sequence_indices: Vec<usize>,
    /// `sequence.field.sort-order = descending`.
    pub sequence_descending: bool,
    /// The merge engine and its settings.
    pub engine: MergeEngineConfig,
    /// `ignore-delete` (with Java's fallback keys).
    pub ignore_delete: bool,
    /// `false` (batch read): drop -U/-D results. `true` (changelog/compaction): emit them.
    pub keep_retracts: bool,
}

impl MergeConfig {
    /// Build the configuration from Paimon table options.
    ///
    /// `value_fields` are the value columns v0..vn (the table's fields, or a projection that
    /// includes the key, `sequence.field` and sequence-group columns); `key_names` are the
    /// primary keys as Java passes them to the merge functions (`TableSchema.primaryKeys()`,
    /// partition columns included: they are constant within a bucket, so comparing them too
    /// does not change the order). Unknown aggregate functions are `Error::Unsupported`, aggregate
    /// functions on unsuitable types and inconsistent options `Error::Invalid`.
    /// `keep_retracts` starts `false`.
    pub fn from_options(
        value_fields: &[DataField],
        key_names: &[String],
        options: &Options,
    ) -> Result<MergeConfig> {
        let position = |name: &str, what: &str| {
            value_fields
                .iter()
                .position(|f| f.name == name)
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "{what} column '{name}' is not among the value columns"
                    ))
                })
        };
        let key_indices = key_names
            .iter()
            .map(|k| position(k, "primary key"))
            .collect::<Result<Vec<_>>>()?;
        let sequence_indices = options
            .sequence_field()
            .iter()
            .map(|s| position(s, "sequence.field"))
            .collect::<Result<Vec<_>>>()?;
        let sequence_descending =
            options.sequence_field_sort_order().map_err(option_error)? == SortOrder::Descending;
        let ignore_delete = options.ignore_delete().map_err(option_error)?;
        let engine = engine_from_options(value_fields, key_names, options, ignore_delete)?;
        Ok(MergeConfig {
            key_indices,
            sequence_indices,
            sequence_descending,
            engine,
            ignore_delete,
            keep_retracts: false,
        })
    }

    /// Whether a key's merged row is just its newest record: `deduplicate` without
    /// `sequence.field` or `ignore-delete` (the newest record decides, a retract removing
    /// the key).
    pub fn newest_record_wins(&self) -> bool {
        matches!(self.engine, MergeEngineConfig::Deduplicate)
            && self.sequence_indices.is_empty()
            && !self.ignore_delete
    }

    /// Check the configuration against the number of value columns.
    fn check(&self, value_columns: usize) -> Result<()> {
        let per_column = match &self.engine {
            MergeEngineConfig::PartialUpdate(PartialUpdateConfig {
                nullable,
                aggregates,
                ..
            }) => Some((nullable.len(), aggregates.len())),
            MergeEngineConfig::Aggregation(c) => Some((c.nullable.len(), c.aggregates.len())),
            _ => None,
        };
        if let Some((a, b)) = per_column {
            if a != value_columns || b != value_columns {
                return Err(Error::invalid(format!(
                    "merge config describes {a} columns but the runs have {value_columns} value columns"
                )));
            }
        }
        Ok(())
    }
}

/// Merge sorted runs into rows `[_VALUE_KIND, v0..vn]` in key order, at most `batch_size`
/// rows per batch. See the module docs for order, semantics and memory use.
pub fn merge_sorted_runs(
    runs: Vec<BoxStream<'static, Result<RecordBatch>>>,
    config: Arc<MergeConfig>,
    batch_size: usize,
) -> BoxStream<'static, Result<RecordBatch>> {
    let state = MergeState {
        config,
        batch_size,
        cursors: runs
            .into_iter()
            .map(|stream| Cursor { stream, head: None })
            .collect(),
        pool: Pool::default(),
        current: Vec::new(),
        tree: None,
        encoder: None,
        schema: None,
        merge_fn: None,
        output: None,
        group: Vec::new(),
        group_key: OwnedKey::default(),
        retired: Vec::new(),
        deferred: Vec::new(),
    };
    futures::stream::try_unfold(state, |mut state| async move {
        Ok(state.next_batch().await?.map(|batch| (batch, state)))
    })
    .boxed()
}

struct MergeState {
    config: Arc<MergeConfig>,
    batch_size: usize,
    cursors: Vec<Cursor>,
    pool: Pool,
    /// Each cursor's current packed key ([`EXHAUSTED`] at the end) when keys pack
    /// ([`Encoder::packs_keys`]), else empty: the loser tree's fast path (`cursor::compare`).
    current: Vec<u128>,
    /// Built once every cursor has its first batch.
    tree: Option<LoserTree>,
    /// Built from the first batch seen.
    encoder: Option<Encoder>,
    /// Output schema, from the first batch seen.
    schema: Option<SchemaRef>,
    merge_fn: Option<Box<dyn MergeFunction>>,
    output: Option<OutputRows>,
    /// Records of the key being merged.
    group: Vec<Rec>,
    /// Encoded key of the key being merged.
    group_key: OwnedKey,
    /// Slots whose cursor moved on during the current step.
    retired: Vec<u32>,
    /// Retired slots still referenced by pending output.
    deferred: Vec<u32>,
}

impl MergeState {
    async fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.tree.is_none() {
            if self.batch_size == 0 {
                return Err(Error::invalid("merge batch size must be at least 1"));
            }
            for run in 0..self.cursors.len() {
                self.load(run).await?;
            }
            if self.encoder.as_ref().is_some_and(Encoder::packs_keys) {
                self.current = vec![EXHAUSTED; self.cursors.len()];
                (0..self.cursors.len()).for_each(|run| self.refresh_current(run));
            }
            let (cursors, current) = (&self.cursors, &self.current);
            self.tree = Some(LoserTree::new(cursors.len(), |a, b| {
                compare(cursors, current, a, b)
            }));
        }
        if self.cursors.is_empty() || self.output.is_none() {
            // no runs, or no batch at all (the first batch creates the output)
            return Ok(None);
        }
        loop {
            if self.pending() >= self.batch_size {
                return self.flush().map(Some);
            }
            let w = self.tree().winner();
            if self.cursors[w].head.is_none() {
                // every run is exhausted
                return if self.pending() > 0 {
                    self.flush().map(Some)
                } else {
                    Ok(None)
                };
            }
            let n = self.unique_prefix(w);
            if n > 0 {
                let head = self.cursors[w].head.as_ref().expect("winner has a head");
                let output = self
                    .output
                    .as_mut()
                    .expect("output exists once a batch was seen");
                output.push_range(head.slot, head.pos, &head.kinds[head.pos..head.pos + n]);
                self.advance(w, n).await?;
            } else {
                self.merge_key(w).await?;
            }
            self.settle_retired();
        }
    }

    fn tree(&self) -> &LoserTree {
        self.tree.as_ref().expect("tree is built before merging")
    }

    fn pending(&self) -> usize {
        self.output.as_ref().map_or(0, OutputRows::len)
    }

    /// How many rows from the winner's position have keys below every other run's current
    /// key (capped by the room left in the output batch). Zero means the winner's key is
    /// shared with another run.
    fn unique_prefix(&self, w: usize) -> usize {
        let head = self.cursors[w].head.as_ref().expect("winner has a head");
        let room = (self.batch_size - self.pending()).min(head.len - head.pos);
        let (cursors, current) = (&self.cursors, &self.current);
        let bound = self
            .tree()
            .runner_up(|a, b| compare(cursors, current, a, b))
            .and_then(|r| cursors[r].head.as_ref());
        let Some(bound) = bound else { return room };
        let below = |i: usize| head.key_cmp(head.pos + i, bound, bound.pos).is_lt();
        if !below(0) {
            return 0;
        }
        // Keys ascend strictly within a run: the rows below the bound are a prefix. Stretches
        // are mostly short (random upserts), so gallop from the start for an upper bound on
        // its end, then binary search: O(log n) comparisons for a stretch of n rows.
        let (mut lo, mut hi, mut step) = (1, room, 1);
        while lo < room {
            let probe = (lo - 1 + step).min(room - 1);
            if below(probe) {
                lo = probe + 1;
                step *= 2;
            } else {
                hi = probe;
                break;
            }
        }
        while lo < hi {
            let mid = (lo + hi) / 2;
            if below(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Gather every record of the winner's key and merge them.
    async fn merge_key(&mut self, mut w: usize) -> Result<()> {
        self.group.clear();
        let head = self.cursors[w].head.as_ref().expect("winner has a head");
        self.group_key.set(head);
        loop {
            let rec = self.cursors[w]
                .head
                .as_ref()
                .expect("group member has a head")
                .rec();
            self.group.push(rec);
            self.advance(w, 1).await?;
            w = self.tree().winner();
            match &self.cursors[w].head {
                Some(h) if h.key_is(&self.group_key) => {}
                _ => break,
            }
        }
        let output = self
            .output
            .as_mut()
            .expect("output exists once a batch was seen");
        if let [single] = self.group.as_slice() {
            output.push_whole(single, single.kind);
            return Ok(());
        }
        let merge_fn = self
            .merge_fn
            .as_mut()
            .expect("merge function exists once a batch was seen");
        merge_fn.merge(&self.group, &self.pool, output)
    }

    /// Move cursor `w` (the winner) forward by `n` rows and replay the tree.
    async fn advance(&mut self, w: usize, n: usize) -> Result<()> {
        let head = self.cursors[w]
            .head
            .as_mut()
            .expect("advanced cursor has a head");
        head.pos += n;
        if head.pos >= head.len {
            self.retired.push(head.slot);
            self.load(w).await?;
        }
        self.refresh_current(w);
        let (cursors, current) = (&self.cursors, &self.current);
        self.tree
            .as_mut()
            .expect("tree is built before merging")
            .replay(|a, b| compare(cursors, current, a, b));
        Ok(())
    }

    /// Bring `current[run]` up to date with its cursor (nothing without packed keys).
    fn refresh_current(&mut self, run: usize) {
        if let Some(slot) = self.current.get_mut(run) {
            *slot = match &self.cursors[run].head {
                Some(h) => h.packed.as_ref().expect("keys pack (Encoder::packs_keys)")[h.pos],
                None => EXHAUSTED,
            };
        }
    }

    /// Put the next non-empty batch of run `run` under its cursor, or mark it exhausted.
    async fn load(&mut self, run: usize) -> Result<()> {
        loop {
            let next = self.cursors[run].stream.next().await;
            let batch = match next {
                None => {
                    self.cursors[run].head = None;
                    return Ok(());
                }
                Some(batch) => batch?,
            };
            if self.encoder.is_none() {
                self.init(&batch)?;
            }
            if batch.num_rows() == 0 {
                continue;
            }
            let encoder = self.encoder.as_ref().expect("initialised above");
            let slot = self.pool.insert(batch);
            match encoder.head(self.pool.batch(slot), slot) {
                Ok(head) => {
                    self.cursors[run].head = Some(head);
                    return Ok(());
                }
                Err(e) => {
                    self.pool.release(slot);
                    return Err(e);
                }
            }
        }
    }

    /// Set up everything that depends on the input shape, from the first batch.
    fn init(&mut self, batch: &RecordBatch) -> Result<()> {
        let input_schema = batch.schema();
        check_input_schema(&input_schema)?;
        let value_columns = input_schema.fields().len() - VALUE_OFFSET;
        self.config.check(value_columns)?;
        let mut fields = vec![Arc::new(Field::new("_VALUE_KIND", ArrowType::Int8, false))];
        fields.extend(input_schema.fields().iter().skip(VALUE_OFFSET).cloned());
        self.schema = Some(Arc::new(Schema::new(fields)));
        self.encoder = Some(Encoder::new(
            input_schema,
            &self.config.key_indices,
            &self.config.sequence_indices,
            self.config.sequence_descending,
        )?);
        self.merge_fn = Some(merge_fn::create(
            &self.config.engine,
            self.config.ignore_delete,
        )?);
        self.output = Some(OutputRows::new(value_columns, self.config.keep_retracts));
        Ok(())
    }

    /// Release the batches cursors left, unless pending output still points into them.
    fn settle_retired(&mut self) {
        let output = self
            .output
            .as_ref()
            .expect("output exists once a batch was seen");
        for slot in self.retired.drain(..) {
            if output.references(slot) {
                self.deferred.push(slot);
            } else {
                self.pool.release(slot);
            }
        }
    }

    fn flush(&mut self) -> Result<RecordBatch> {
        let schema = self
            .schema
            .as_ref()
            .expect("schema exists once a batch was seen");
        let output = self
            .output
            .as_mut()
            .expect("output exists once a batch was seen");
        let batch = output.flush(&self.pool, schema)?;
        for slot in self.deferred.drain(..) {
            self.pool.release(slot);
        }
        Ok(batch)
    }
}
