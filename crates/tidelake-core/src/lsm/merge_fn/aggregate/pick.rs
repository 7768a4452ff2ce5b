//! Functions whose result is one of their inputs, plus `bool_and`/`bool_or`:
//! `last_value` (Java `FieldLastValueAgg`), `last_non_null_value` (`FieldLastNonNullValueAgg`),
//! `first_value` (`FieldFirstValueAgg`), `first_non_null_value`
//! (`FieldFirstNonNullValueAgg`), `min`/`max` (`FieldMinAgg`/`FieldMaxAgg`, compared like
//! `InternalRowUtils.compare`), `primary-key` (`FieldPrimaryKeyAgg`), `bool_and`/`bool_or`
//! (`FieldBoolAndAgg`/`FieldBoolOrAgg`).
//!
//! The first-value functions are stateful per key like Java's (an `initialized` flag that only
//! `reset` clears), which is what makes their `aggReversed` behave as in Java.

use std::cmp::Ordering;

use super::{AggFn, Cx};
use crate::error::{Error, Result};
use crate::lsm::merge_fn::value::{java_cmp, scalar, Acc, Scalar, Value};

pub(crate) struct LastValue;

impl AggFn for LastValue {
    fn agg(&mut self, _cx: &Cx<'_>, _acc: Acc, input: Acc) -> Result<Acc> {
        Ok(input)
    }

    fn retract(&mut self, _cx: &Cx<'_>, _acc: Acc, _input: Acc) -> Option<Result<Acc>> {
        Some(Ok(Acc::Null))
    }
}

pub(crate) struct LastNonNullValue;

impl AggFn for LastNonNullValue {
    fn agg(&mut self, _cx: &Cx<'_>, acc: Acc, input: Acc) -> Result<Acc> {
        Ok(if input.is_null() { acc } else { input })
    }

    fn retract(&mut self, _cx: &Cx<'_>, acc: Acc, input: Acc) -> Option<Result<Acc>> {
        Some(Ok(if input.is_null() { acc } else { Acc::Null }))
    }
}

#[derive(Default)]
pub(crate) struct FirstValue {
    initialized: bool,
}

impl AggFn for FirstValue {
    fn agg(&mut self, _cx: &Cx<'_>, acc: Acc, input: Acc) -> Result<Acc> {
        if self.initialized {
            Ok(acc)
        } else {
            self.initialized = true;
            Ok(input)
        }
    }

    fn reset(&mut self) {
        self.initialized = false;
    }
}

#[derive(Default)]
pub(crate) struct FirstNonNullValue {
    initialized: bool,
}

impl AggFn for FirstNonNullValue {
    fn agg(&mut self, _cx: &Cx<'_>, acc: Acc, input: Acc) -> Result<Acc> {
        if !self.initialized && !input.is_null() {
            self.initialized = true;
            Ok(input)
        } else {
            Ok(acc)
        }
    }

    fn reset(&mut self) {
        self.initialized = false;
    }
}

/// `Ordering` of two non-null accumulators of the column.
fn compare(cx: &Cx<'_>, a: &Acc, b: &Acc) -> Result<Ordering> {
    match (scalar(cx.pool, cx.col, a)?, scalar(cx.pool, cx.col, b)?) {
        (Some(x), Some(y)) => java_cmp(&x, &y),
        _ => Err(Error::invalid("min/max compared a null value")),
    }
}

pub(crate) struct Max;

impl AggFn for Max {
    fn agg(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Result<Acc> {
        if acc.is_null() || input.is_null() {
            return Ok(if acc.is_null() { input } else { acc });
        }
        Ok(if compare(cx, &acc, &input)? == Ordering::Less {
            input
        } else {
            acc
        })
    }
}

pub(crate) struct Min;

impl AggFn for Min {
    fn agg(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Result<Acc> {
        if acc.is_null() || input.is_null() {
            return Ok(if acc.is_null() { input } else { acc });
        }
        Ok(if compare(cx, &acc, &input)? == Ordering::Less {
            acc
        } else {
            input
        })
    }
}

pub(crate) struct PrimaryKey;

impl AggFn for PrimaryKey {
    fn agg(&mut self, _cx: &Cx<'_>, _acc: Acc, input: Acc) -> Result<Acc> {
        Ok(input)
    }

    fn retract(&mut self, _cx: &Cx<'_>, _acc: Acc, input: Acc) -> Option<Result<Acc>> {
        Some(Ok(input))
    }
}

fn boolean(cx: &Cx<'_>, acc: &Acc) -> Result<bool> {
    match scalar(cx.pool, cx.col, acc)? {
        Some(Scalar::Bool(b)) => Ok(b),
        other => Err(Error::invalid(format!(
            "bool_and/bool_or on a non-boolean value {other:?}"
        ))),
    }
}

pub(crate) struct BoolAnd;

impl AggFn for BoolAnd {
    fn agg(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Result<Acc> {
        if acc.is_null() || input.is_null() {
            return Ok(if acc.is_null() { input } else { acc });
        }
        Ok(Acc::Val(Value::Bool(
            boolean(cx, &acc)? && boolean(cx, &input)?,
        )))
    }
}

pub(crate) struct BoolOr;

impl AggFn for BoolOr {
    fn agg(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Result<Acc> {
        if acc.is_null() || input.is_null() {
            return Ok(if acc.is_null() { input } else { acc });
        }
        Ok(Acc::Val(Value::Bool(
            boolean(cx, &acc)? || boolean(cx, &input)?,
        )))
    }
}
