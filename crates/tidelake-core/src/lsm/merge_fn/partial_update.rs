//! The `partial-update` engine, mirroring Java `PartialUpdateMergeFunction` statement by
//! statement (including its quirks, which matter for byte-identical results):
//!
//! * Without sequence groups each column takes the latest non-null value; a null in a NOT NULL
//!   column is an error. Aggregate functions are not consulted on this path.
//! * With sequence groups (`fields.<seq>.sequence-group`), a protected column is overwritten —
//!   even with null — only by records whose group sequence fields compare >= the current ones
//!   (ascending, nulls first); records with all group sequence fields null leave the group
//!   alone; older records feed the column's aggregator reversed (`aggReversed`).
//! * Retracts (-U/-D): the first record of a key, if a retract, initialises the row's NOT NULL
//!   columns with its values (nullable ones stay null). Then `ignore-delete` skips it; sequence
//!   groups retract their columns (set null or the aggregator's `retract`), and -D on a group
//!   listed in `partial-update.remove-record-on-sequence-group` resets the row (all null, then
//!   the NOT NULL columns from the record) and marks it deleted;
//!   `partial-update.remove-record-on-delete` does the same for any -D; otherwise a retract is
//!   an error.
//! * The result is -D if the last record removed the row or no +I/+U record was seen, else +I.
use tidelake_spec::row_kind::RowKind;

use super::aggregate::FieldAggregator;
use super::config::PartialUpdateConfig;
use super::output::OutputRows;
use super::value::{compare_nulls_first, not_null, reset_to_not_null, Acc, Pool, Rec};
use super::MergeFunction;
use crate::error::{Error, Result};
use std::cmp::Ordering;

pub(crate) struct PartialUpdate {
    ignore_delete: bool,
    remove_record_on_delete: bool,
    sequence_groups_defined: bool,
    /// Sequence fields of each group.
    groups: Vec<Vec<usize>>,
    /// Per column: the group protecting it or of which it is a sequence field.
    field_group: Vec<Option<usize>>,
    /// Per column: whether -D on the group this sequence field belongs to removes the row.
    partial_delete: Vec<bool>,
    aggregators: Vec<Option<FieldAggregator>>,
    nullable: Vec<bool>,
    // per-key state
    row: Vec<Acc>,
    processed: Vec<bool>,
    updated: Vec<bool>,
    current_delete: bool,
    meet_insert: bool,
    not_null_filled: bool,
}

impl PartialUpdate {
    pub fn new(config: &PartialUpdateConfig, ignore_delete: bool) -> Result<Self> {
        let n = config.nullable.len();
        let mut field_group = vec![None; n];
        let mut groups = Vec::with_capacity(config.sequence_groups.len());
        for (id, group) in config.sequence_groups.iter().enumerate() {
            for &p in group.protected_fields.iter().chain(&group.sequence_fields) {
                let slot = field_group.get_mut(p).ok_or_else(|| out_of_range(p, n))?;
                *slot = Some(id);
            }
            groups.push(group.sequence_fields.clone());
        }
        let mut partial_delete = vec![false; n];
        for &p in &config.remove_record_on_sequence_group {
            *partial_delete
                .get_mut(p)
                .ok_or_else(|| out_of_range(p, n))? = true;
        }
        if config.aggregates.len() != n {
            return Err(Error::invalid(
                "partial-update config: one aggregate entry per column",
            ));
        }
        let aggregators = config
            .aggregates
            .iter()
            .enumerate()
            .map(|(col, spec)| {
                spec.as_ref()
                    .map(|s| FieldAggregator::new(s, col))
                    .transpose()
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(PartialUpdate {
            ignore_delete,
            remove_record_on_delete: config.remove_record_on_delete,
            sequence_groups_defined: config.sequence_groups_defined,
            groups,
            field_group,
            partial_delete,
            aggregators,
            nullable: config.nullable.clone(),
            row: vec![Acc::Null; n],
            processed: vec![false; n],
            updated: vec![false; n],
            current_delete: false,
            meet_insert: false,
            not_null_filled: false,
        })
    }

    fn reset(&mut self) {
        self.row.iter_mut().for_each(|a| *a = Acc::Null);
        self.meet_insert = false;
        self.not_null_filled = false;
        self.current_delete = false;
        self.aggregators
            .iter_mut()
            .flatten()
            .for_each(FieldAggregator::reset);
    }

    fn add(&mut self, rec: &Rec, pool: &Pool) -> Result<()> {
        self.current_delete = false;
        if rec.kind.is_retract() {
            if !self.not_null_filled {
                // the row is all null here (reset), as Java's `initRow` expects
                reset_to_not_null(&mut self.row, &self.nullable, rec, pool)?;
                self.not_null_filled = true;
            }
            if self.ignore_delete {
                return Ok(());
            }
            if self.sequence_groups_defined {
                return self.retract_with_sequence_group(rec, pool);
            }
            if self.remove_record_on_delete {
                if rec.kind == RowKind::Delete {
                    self.current_delete = true;
                    reset_to_not_null(&mut self.row, &self.nullable, rec, pool)?;
                }
                return Ok(());
            }
            return Err(Error::invalid(
                "By default, Partial update can not accept delete records, you can choose one of \
                 the following solutions: 1. Configure 'ignore-delete' to ignore delete records. \
                 2. Configure 'partial-update.remove-record-on-delete' to remove the whole row \
                 when receiving delete records. 3. Configure 'sequence-group's to retract partial \
                 columns. Also configure 'partial-update.remove-record-on-sequence-group' to \
                 remove the whole row when receiving deleted records of `specified sequence group`.",
            ));
        }
        if self.groups.is_empty() {
            self.update_non_null_fields(rec, pool)?;
        } else {
            self.update_with_sequence_group(rec, pool)?;
        }
        self.meet_insert = true;
        self.not_null_filled = true;
        Ok(())
    }

    fn update_non_null_fields(&mut self, rec: &Rec, pool: &Pool) -> Result<()> {
        for i in 0..self.row.len() {
            match pool.input(rec, i) {
                Acc::Null if !self.nullable[i] => return Err(not_null(i)),
                Acc::Null => {}
                input => self.row[i] = input,
            }
        }
        Ok(())
    }

    /// Java `isEmptySequenceGroup`: all sequence fields of `group` null in `rec` (then they
    /// are marked processed).
    fn is_empty_group(&mut self, rec: &Rec, pool: &Pool, group: usize) -> bool {
        let fields = &self.groups[group];
        if fields.iter().any(|&f| !pool.input(rec, f).is_null()) {
            return false;
        }
        for &f in fields {
            self.processed[f] = true;
        }
        true
    }

    /// Compare `rec`'s sequence fields of `group` with the row's (ascending, nulls first).
    fn compare_group(&self, rec: &Rec, pool: &Pool, group: usize) -> Result<Ordering> {
        for &f in &self.groups[group] {
            let ord = compare_nulls_first(pool, f, &pool.input(rec, f), &self.row[f])?;
            if ord != Ordering::Equal {
                return Ok(ord);
            }
        }
        Ok(Ordering::Equal)
    }

    fn update_with_sequence_group(&mut self, rec: &Rec, pool: &Pool) -> Result<()> {
        self.processed.iter_mut().for_each(|p| *p = false);
        for i in 0..self.row.len() {
            let input = pool.input(rec, i);
            let Some(group) = self.field_group[i] else {
                match self.aggregators[i].as_mut() {
                    Some(agg) => {
                        let acc = std::mem::take(&mut self.row[i]);
                        self.row[i] = agg.agg(pool, acc, input)?;
                    }
                    None if !input.is_null() => self.row[i] = input,
                    None => {}
                }
                continue;
            };
            if self.processed[i] || self.is_empty_group(rec, pool, group) {
                continue;
            }
            if self.compare_group(rec, pool, group)? != Ordering::Less {
                if self.groups[group].contains(&i) {
                    for k in 0..self.groups[group].len() {
                        let f = self.groups[group][k];
                        self.row[f] = pool.input(rec, f);
                        self.processed[f] = true;
                    }
                    continue;
                }
                let acc = std::mem::take(&mut self.row[i]);
                self.row[i] = match self.aggregators[i].as_mut() {
                    Some(agg) => agg.agg(pool, acc, input)?,
                    None => input,
                };
            } else if let Some(agg) = self.aggregators[i].as_mut() {
                let acc = std::mem::take(&mut self.row[i]);
                self.row[i] = agg.agg_reversed(pool, acc, input)?;
            }
        }
        Ok(())
    }

    fn retract_with_sequence_group(&mut self, rec: &Rec, pool: &Pool) -> Result<()> {
        self.processed.iter_mut().for_each(|p| *p = false);
        self.updated.iter_mut().for_each(|u| *u = false);
        for i in 0..self.row.len() {
            let Some(group) = self.field_group[i] else {
                continue;
            };
            if self.processed[i] || self.is_empty_group(rec, pool, group) {
                continue;
            }
            if self.compare_group(rec, pool, group)? != Ordering::Less {
                if self.groups[group].contains(&i) {
                    for k in 0..self.groups[group].len() {
                        let f = self.groups[group][k];
                        if !self.updated[f] {
                            if rec.kind == RowKind::Delete && self.partial_delete[f] {
                                self.current_delete = true;
                                return reset_to_not_null(&mut self.row, &self.nullable, rec, pool);
                            }
                            self.row[f] = pool.input(rec, f);
                            self.updated[f] = true;
                        }
                        self.processed[f] = true;
                    }
                } else {
                    let acc = std::mem::take(&mut self.row[i]);
                    self.row[i] = match self.aggregators[i].as_mut() {
                        None => Acc::Null,
                        Some(agg) => agg.retract(pool, acc, pool.input(rec, i))?,
                    };
                }
            } else if let Some(agg) = self.aggregators[i].as_mut() {
                let acc = std::mem::take(&mut self.row[i]);
                self.row[i] = agg.retract(pool, acc, pool.input(rec, i))?;
            }
        }
        Ok(())
    }
}

fn out_of_range(p: usize, n: usize) -> Error {
    Error::invalid(format!(
        "partial-update config: column {p} out of range (0..{n})"
    ))
}

impl MergeFunction for PartialUpdate {
    fn merge(&mut self, records: &[Rec], pool: &Pool, out: &mut OutputRows) -> Result<()> {
        self.reset();
        for rec in records {
            self.add(rec, pool)?;
        }
        let kind = if self.current_delete || !self.meet_insert {
            RowKind::Delete
        } else {
            RowKind::Insert
        };
        out.push_computed(kind, &mut self.row);
        Ok(())
    }
}
