//! Merge results waiting to be emitted, and their assembly into an output `RecordBatch`.
//!
//! A result row is either a whole input row (pass-through, deduplicate, first-row) or a computed
//! row (partial-update, aggregation) whose cells are nulls, references into input batches or
//! computed values. Nothing is copied until [`OutputRows::flush`]: whole rows that form one
//! contiguous range of one batch become a zero-copy slice, a few ranges are concatenated, and
//! everything else is gathered with `arrow_select::interleave` from the retained batches, one
//! array of computed values per column and a one-element null array.
//!
//! Invariants: every slot referenced here stays live in the [`Pool`] until the next flush
//! ([`OutputRows::references`] lets the merge loop defer releasing such slots); retract results
//! are dropped on push unless `keep_retracts`.

use std::sync::Arc;

use arrow_array::{new_null_array, Array, ArrayRef, Int8Array, RecordBatch};
use arrow_schema::SchemaRef;
use arrow_select::concat::concat;
use arrow_select::interleave::interleave;
use tidelake_spec::row_kind::RowKind;

use super::value::{values_to_array, Acc, Pool, Rec, Value, VALUE_OFFSET};
use crate::error::{Error, Result};

/// Marks a computed row in [`OutputRows::picks`].
const COMPUTED: u32 = u32::MAX;

/// One cell of a computed row.
#[derive(Clone, Copy)]
enum Cell {
    Null,
    Ref {
        slot: u32,
        row: u32,
    },
    /// Index into the column's computed values.
    Owned(u32),
}

/// Result rows accumulated since the last flush.
pub(crate) struct OutputRows {
    keep_retracts: bool,
    kinds: Vec<i8>,
    /// Per row: `(slot, row)` of a whole input row, or `(COMPUTED, _)`.
    picks: Vec<(u32, u32)>,
    /// Per value column: cells of the computed rows, in row order.
    cells: Vec<Vec<Cell>>,
    /// Per value column: computed values referenced by `Cell::Owned`.
    owned: Vec<Vec<Value>>,
    /// Per slot: whether a pending row refers to it.
    referenced: Vec<bool>,
}

impl OutputRows {
    pub fn new(value_columns: usize, keep_retracts: bool) -> Self {
        OutputRows {
            keep_retracts,
            kinds: Vec::new(),
            picks: Vec::new(),
            cells: vec![Vec::new(); value_columns],
            owned: vec![Vec::new(); value_columns],
            referenced: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    /// Whether a pending row refers to `slot`.
    pub fn references(&self, slot: u32) -> bool {
        self.referenced.get(slot as usize).copied().unwrap_or(false)
    }

    fn mark(&mut self, slot: u32) {
        let i = slot as usize;
        if i >= self.referenced.len() {
            self.referenced.resize(i + 1, false);
        }
        self.referenced[i] = true;
    }

    fn keeps(&self, kind: RowKind) -> bool {
        self.keep_retracts || kind.is_add()
    }

    /// Emit the input row of `rec` unchanged, with row kind `kind`.
    pub fn push_whole(&mut self, rec: &Rec, kind: RowKind) {
        if self.keeps(kind) {
            self.mark(rec.slot);
            self.kinds.push(kind.code());
            self.picks.push((rec.slot, rec.row));
        }
    }

    /// Emit rows `start..start + kinds.len()` of `slot` unchanged; `kinds` are their codes.
    pub fn push_range(&mut self, slot: u32, start: usize, kinds: &[i8]) {
        self.mark(slot);
        let start = u32::try_from(start).expect("batch rows fit in u32");
        for (row, &code) in (start..).zip(kinds) {
            // codes were validated when the batch was loaded: 1 and 3 are the retracts
            if self.keep_retracts || code == 0 || code == 2 {
                self.kinds.push(code);
                self.picks.push((slot, row));
            }
        }
    }

    /// Emit a computed row; its accumulators are taken out of `row`.
    pub fn push_computed(&mut self, kind: RowKind, row: &mut [Acc]) {
        if !self.keeps(kind) {
            return;
        }
        self.kinds.push(kind.code());
        self.picks.push((COMPUTED, 0));
        for (col, acc) in row.iter_mut().enumerate() {
            let cell = match std::mem::take(acc) {
                Acc::Null => Cell::Null,
                Acc::Ref(c) => {
                    self.mark(c.slot);
                    Cell::Ref {
                        slot: c.slot,
                        row: c.row,
                    }
                }
                Acc::Val(v) => {
                    let owned = &mut self.owned[col];
                    owned.push(v);
                    Cell::Owned(u32::try_from(owned.len() - 1).expect("batch rows fit in u32"))
                }
            };
            self.cells[col].push(cell);
        }
    }

    /// Assemble the pending rows into a batch of `schema` (`_VALUE_KIND`, v0..vn) and reset.
    pub fn flush(&mut self, pool: &Pool, schema: &SchemaRef) -> Result<RecordBatch> {
        let value_columns = schema.fields().len() - 1;
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(value_columns + 1);
        columns.push(Arc::new(Int8Array::from(std::mem::take(&mut self.kinds))));
        let has_computed = self.picks.iter().any(|p| p.0 == COMPUTED);
        if !has_computed {
            self.whole_rows(pool, value_columns, &mut columns)?;
        } else {
            let sources = self.sources(pool);
            for col in 0..value_columns {
                columns.push(self.gather_column(pool, &sources, schema, col)?);
            }
        }
        self.picks.clear();
        self.cells.iter_mut().for_each(Vec::clear);
        self.owned.iter_mut().for_each(Vec::clear);
        self.referenced.iter_mut().for_each(|r| *r = false);
        RecordBatch::try_new(schema.clone(), columns)
            .map_err(|e| Error::arrow("assembling merged rows", e))
    }

    /// Columns of an output made of whole input rows only.
    fn whole_rows(
        &self,
        pool: &Pool,
        value_columns: usize,
        columns: &mut Vec<ArrayRef>,
    ) -> Result<()> {
        // contiguous (slot, start, len) ranges
        let mut ranges: Vec<(u32, u32, usize)> = Vec::new();
        for &(slot, row) in &self.picks {
            match ranges.last_mut() {
                Some((s, start, len)) if *s == slot && *start as usize + *len == row as usize => {
                    *len += 1
                }
                _ => ranges.push((slot, row, 1)),
            }
        }
        if ranges.len() == 1 {
            let (slot, start, len) = ranges[0];
            let batch = pool.batch(slot);
            for col in 0..value_columns {
                columns.push(batch.column(col + VALUE_OFFSET).slice(start as usize, len));
            }
            return Ok(());
        }
        if ranges.len() * 8 <= self.picks.len() {
            for col in 0..value_columns {
                let slices: Vec<ArrayRef> = ranges
                    .iter()
                    .map(|&(slot, start, len)| pool.value(slot, col).slice(start as usize, len))
                    .collect();
                let refs: Vec<&dyn Array> = slices.iter().map(|a| a.as_ref()).collect();
                columns.push(concat(&refs).map_err(|e| Error::arrow("concatenating rows", e))?);
            }
            return Ok(());
        }
        let (slots, source_of) = self.sources(pool);
        let indices: Vec<(usize, usize)> = self
            .picks
            .iter()
            .map(|&(slot, row)| (source_of[slot as usize], row as usize))
            .collect();
        for col in 0..value_columns {
            let arrays: Vec<&dyn Array> =
                slots.iter().map(|&s| pool.value(s, col).as_ref()).collect();
            columns.push(
                interleave(&arrays, &indices).map_err(|e| Error::arrow("gathering rows", e))?,
            );
        }
        Ok(())
    }

    /// The distinct slots referenced, and a map slot → position among them.
    fn sources(&self, pool: &Pool) -> (Vec<u32>, Vec<usize>) {
        let mut source_of = vec![usize::MAX; pool.capacity()];
        let mut slots = Vec::new();
        for (slot, referenced) in self.referenced.iter().enumerate() {
            if *referenced {
                source_of[slot] = slots.len();
                slots.push(u32::try_from(slot).expect("slot ids fit in u32"));
            }
        }
        (slots, source_of)
    }

    /// One value column of an output that has computed rows.
    fn gather_column(
        &self,
        pool: &Pool,
        (slots, source_of): &(Vec<u32>, Vec<usize>),
        schema: &SchemaRef,
        col: usize,
    ) -> Result<ArrayRef> {
        let data_type = schema.field(col + 1).data_type();
        let mut arrays: Vec<ArrayRef> = slots.iter().map(|&s| pool.value(s, col).clone()).collect();
        let owned_source = arrays.len();
        if !self.owned[col].is_empty() {
            arrays.push(values_to_array(data_type, &self.owned[col])?);
        }
        let null_source = arrays.len();
        arrays.push(new_null_array(data_type, 1));
        let mut cells = self.cells[col].iter();
        let mut indices = Vec::with_capacity(self.picks.len());
        for &(slot, row) in &self.picks {
            if slot != COMPUTED {
                indices.push((source_of[slot as usize], row as usize));
                continue;
            }
            let cell = cells.next().expect("one cell per computed row and column");
            indices.push(match *cell {
                Cell::Null => (null_source, 0),
                Cell::Ref { slot, row } => (source_of[slot as usize], row as usize),
                Cell::Owned(i) => (owned_source, i as usize),
            });
        }
        let refs: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
        interleave(&refs, &indices).map_err(|e| Error::arrow("gathering merged values", e))
    }
}
