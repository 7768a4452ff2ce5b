//! The `aggregation` engine, mirroring Java `AggregateMergeFunction`, and the per-column
//! aggregate functions (Java `FieldAggregator` and its `Field*Agg` subclasses), which the
//! partial-update engine also uses inside sequence groups.
//!
//! Per key, records are folded in merge order: each column's accumulator starts null and every
//! record calls the column's `agg` (+I/+U) or `retract` (-U/-D). With
//! `aggregation.remove-record-on-delete`, a -D instead resets the row (its NOT NULL columns
//! take the -D's values, the others become null) and marks the result deleted (later records
//! aggregate onto that row, as in Java). The result is -D if the last record did that,
//! otherwise +I. Key columns use the `primary-key` function (take the input), `sequence.field`
//! columns `last_value`, every other column its `fields.<f>.aggregate-function`, else
//! `fields.default-aggregate-function`, else `last_non_null_value`.
//!
//! Functions without a retraction fail on -U/-D unless `fields.<f>.ignore-retract` is set
//! (Java `FieldIgnoreRetractAgg`). Functions whose result is one of their inputs (first/last
//! values, min/max, primary key) keep references to input cells; the others compute values.
//!
//! Submodules: `numeric` (sum, product), `pick` (value-selecting functions and the boolean
//! ones), `listagg`, `collection` (collect, merge_map, merge_map_with_keytime), `nested`
//! (nested_update, nested_partial_update), `sketch` (hll_sketch, theta_sketch, rbm32), with
//! shared element helpers in `elements`.

mod collection;
mod elements;
mod listagg;
mod nested;
mod numeric;
mod pick;
mod sketch;

use tidelake_spec::row_kind::RowKind;

use super::config::{AggregateFunction, AggregateSpec, AggregationConfig};
use super::output::OutputRows;
use super::value::{reset_to_not_null, Acc, Pool, Rec};
use super::MergeFunction;
use crate::error::{Error, Result};

/// What an aggregate function sees of its column.
pub(crate) struct Cx<'a> {
    pub pool: &'a Pool,
    /// The value column aggregated.
    pub col: usize,
}

/// One aggregate function (Java `FieldAggregator`).
pub(crate) trait AggFn: Send {
    /// Java `agg(accumulator, inputField)`.
    fn agg(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Result<Acc>;

    /// Java `aggReversed`: the input is older than the accumulator.
    fn agg_reversed(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Result<Acc> {
        self.agg(cx, input, acc)
    }

    /// Java `retract`; `None` when the function cannot retract.
    fn retract(&mut self, _cx: &Cx<'_>, _acc: Acc, _input: Acc) -> Option<Result<Acc>> {
        None
    }

    /// Forget per-key state.
    fn reset(&mut self) {}
}

/// The aggregate function of one column, with its `ignore-retract` setting.
pub(crate) struct FieldAggregator {
    col: usize,
    field: String,
    name: &'static str,
    ignore_retract: bool,
    function: Box<dyn AggFn>,
}

impl FieldAggregator {
    pub fn new(spec: &AggregateSpec, col: usize) -> Result<Self> {
        let function: Box<dyn AggFn> = match &spec.function {
            AggregateFunction::Sum => Box::new(numeric::Sum::new(&spec.data_type)?),
            AggregateFunction::Product => Box::new(numeric::Product::new(&spec.data_type)?),
            AggregateFunction::Min => Box::new(pick::Min),
            AggregateFunction::Max => Box::new(pick::Max),
            AggregateFunction::LastValue => Box::new(pick::LastValue),
            AggregateFunction::LastNonNullValue => Box::new(pick::LastNonNullValue),
            AggregateFunction::FirstValue => Box::new(pick::FirstValue::default()),
            AggregateFunction::FirstNonNullValue => Box::new(pick::FirstNonNullValue::default()),
            AggregateFunction::PrimaryKey => Box::new(pick::PrimaryKey),
            AggregateFunction::BoolAnd => Box::new(pick::BoolAnd),
            AggregateFunction::BoolOr => Box::new(pick::BoolOr),
            AggregateFunction::ListAgg {
                delimiter,
                distinct,
            } => Box::new(listagg::ListAgg::new(delimiter, *distinct)),
            AggregateFunction::Collect { distinct } => {
                Box::new(collection::Collect::new(&spec.data_type, *distinct)?)
            }
            AggregateFunction::MergeMap => Box::new(collection::MergeMap),
            AggregateFunction::MergeMapWithKeyTime { ts_field } => {
                Box::new(collection::MergeMapWithKeyTime {
                    ts_field: *ts_field,
                })
            }
            AggregateFunction::NestedUpdate {
                key,
                null_strategy,
                sequence,
                count_limit,
            } => Box::new(nested::NestedUpdate {
                key: key.clone(),
                null_strategy: *null_strategy,
                sequence: sequence.clone(),
                count_limit: *count_limit,
            }),
            AggregateFunction::HllSketch => Box::new(sketch::Union(sketch::Kind::Hll)),
            AggregateFunction::ThetaSketch => Box::new(sketch::Union(sketch::Kind::Theta)),
            AggregateFunction::Rbm32 => Box::new(sketch::Union(sketch::Kind::Rbm32)),
            AggregateFunction::NestedPartialUpdate { key, null_strategy } => {
                Box::new(nested::NestedPartialUpdate {
                    key: key.clone(),
                    null_strategy: *null_strategy,
                })
            }
        };
        Ok(FieldAggregator {
            col,
            field: spec.field.clone(),
            name: spec.function.name(),
            ignore_retract: spec.ignore_retract,
            function,
        })
    }

    pub fn agg(&mut self, pool: &Pool, acc: Acc, input: Acc) -> Result<Acc> {
        self.function.agg(
            &Cx {
                pool,
                col: self.col,
            },
            acc,
            input,
        )
    }

    pub fn agg_reversed(&mut self, pool: &Pool, acc: Acc, input: Acc) -> Result<Acc> {
        self.function.agg_reversed(
            &Cx {
                pool,
                col: self.col,
            },
            acc,
            input,
        )
    }

    pub fn retract(&mut self, pool: &Pool, acc: Acc, input: Acc) -> Result<Acc> {
        if self.ignore_retract {
            return Ok(acc);
        }
        match self.function.retract(
            &Cx {
                pool,
                col: self.col,
            },
            acc,
            input,
        ) {
            Some(result) => result,
            None => Err(Error::Unsupported(format!(
                "Aggregate function '{}' (column '{}') does not support retraction; set \
                 'fields.{}.ignore-retract'='true' to ignore retraction messages",
                self.name, self.field, self.field
            ))),
        }
    }

    pub fn reset(&mut self) {
        self.function.reset();
    }
}

/// Java `AggregateMergeFunction`.
pub(crate) struct Aggregate {
    remove_record_on_delete: bool,
    aggregators: Vec<FieldAggregator>,
    nullable: Vec<bool>,
    row: Vec<Acc>,
}

impl Aggregate {
    pub fn new(config: &AggregationConfig) -> Result<Self> {
        if config.aggregates.len() != config.nullable.len() {
            return Err(Error::invalid(
                "aggregation config: one aggregate and nullability per column",
            ));
        }
        let aggregators = config
            .aggregates
            .iter()
            .enumerate()
            .map(|(col, spec)| FieldAggregator::new(spec, col))
            .collect::<Result<Vec<_>>>()?;
        Ok(Aggregate {
            remove_record_on_delete: config.remove_record_on_delete,
            aggregators,
            nullable: config.nullable.clone(),
            row: vec![Acc::Null; config.nullable.len()],
        })
    }
}

impl MergeFunction for Aggregate {
    fn merge(&mut self, records: &[Rec], pool: &Pool, out: &mut OutputRows) -> Result<()> {
        self.row.iter_mut().for_each(|a| *a = Acc::Null);
        self.aggregators.iter_mut().for_each(FieldAggregator::reset);
        let mut current_delete = false;
        for rec in records {
            current_delete = self.remove_record_on_delete && rec.kind == RowKind::Delete;
            if current_delete {
                reset_to_not_null(&mut self.row, &self.nullable, rec, pool)?;
                continue;
            }
            let retract = rec.kind.is_retract();
            for (i, agg) in self.aggregators.iter_mut().enumerate() {
                let acc = std::mem::take(&mut self.row[i]);
                let input = pool.input(rec, i);
                self.row[i] = if retract {
                    agg.retract(pool, acc, input)?
                } else {
                    agg.agg(pool, acc, input)?
                };
            }
        }
        let kind = if current_delete {
            RowKind::Delete
        } else {
            RowKind::Insert
        };
        out.push_computed(kind, &mut self.row);
        Ok(())
    }
}
