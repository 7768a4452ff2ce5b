//! `sum` and `product` (Java `FieldSumAgg`, `FieldProductAgg`).
//!
//! Null inputs are skipped (a null accumulator takes the input). Integer arithmetic is exact
//! for the column width and fails on overflow (Java `ArithmeticException`); FLOAT/DOUBLE use
//! IEEE arithmetic. DECIMAL follows Java `DecimalUtils`/`Decimal.fromBigDecimal`: for
//! precision <= 18 a sum that fits an i64 is kept even beyond the declared precision; otherwise
//! the exact result is rounded HALF_UP to the column scale and becomes null if it exceeds the
//! precision. Retraction: `sum` subtracts (a null accumulator takes the negated input);
//! `product` divides (integer division truncates; division by zero and DECIMAL quotients with
//! a non-terminating expansion fail, like `BigDecimal.divide`).

use arrow_buffer::i256;
use tidelake_spec::types::{DataType, TypeKind};

use super::{AggFn, Cx};
use crate::error::{Error, Result};
use crate::lsm::merge_fn::value::{scalar, Acc, Scalar, Value};

#[derive(Debug, Clone, Copy)]
enum NumKind {
    Int { bits: u32, name: &'static str },
    F32,
    F64,
    Dec { precision: u32, scale: u32 },
}

impl NumKind {
    fn of(t: &DataType) -> Result<NumKind> {
        Ok(match t.kind {
            TypeKind::TinyInt => NumKind::Int {
                bits: 8,
                name: "byte",
            },
            TypeKind::SmallInt => NumKind::Int {
                bits: 16,
                name: "short",
            },
            TypeKind::Int => NumKind::Int {
                bits: 32,
                name: "int",
            },
            TypeKind::BigInt => NumKind::Int {
                bits: 64,
                name: "long",
            },
            TypeKind::Float => NumKind::F32,
            TypeKind::Double => NumKind::F64,
            TypeKind::Decimal { precision, scale } => NumKind::Dec { precision, scale },
            ref other => {
                return Err(Error::invalid(format!(
                    "sum/product need a numeric type, not {other:?}"
                )))
            }
        })
    }
}

/// A non-null number of the column's kind.
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i64),
    F32(f32),
    F64(f64),
    Dec(i128),
}

fn read(cx: &Cx<'_>, acc: &Acc) -> Result<Option<Num>> {
    Ok(match scalar(cx.pool, cx.col, acc)? {
        None => None,
        Some(Scalar::Int(i)) => Some(Num::Int(i)),
        Some(Scalar::F32(f)) => Some(Num::F32(f)),
        Some(Scalar::F64(f)) => Some(Num::F64(f)),
        Some(Scalar::Dec(d)) => Some(Num::Dec(d)),
        Some(other) => {
            return Err(Error::invalid(format!(
                "numeric aggregate on non-numeric value {other:?}"
            )))
        }
    })
}

fn to_acc(n: Option<Num>) -> Acc {
    match n {
        None => Acc::Null,
        Some(Num::Int(i)) => Acc::Val(Value::Int(i)),
        Some(Num::F32(f)) => Acc::Val(Value::F32(f)),
        Some(Num::F64(f)) => Acc::Val(Value::F64(f)),
        Some(Num::Dec(d)) => Acc::Val(Value::Dec(d)),
    }
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

impl Op {
    fn symbol(self) -> &'static str {
        match self {
            Op::Add => "+",
            Op::Sub => "-",
            Op::Mul => "*",
            Op::Div => "/",
        }
    }
}

/// Exact integer `a op b` within `bits`, failing like Java's `*Exact` helpers.
fn int_op(a: i64, b: i64, op: Op, bits: u32, name: &str) -> Result<i64> {
    let overflow = || Error::invalid(format!("{name} overflow: {a} {} {b}", op.symbol()));
    let r = match op {
        Op::Add => a.checked_add(b),
        Op::Sub => a.checked_sub(b),
        Op::Mul => a.checked_mul(b),
        Op::Div => {
            if b == 0 {
                return Err(Error::invalid("/ by zero"));
            }
            a.checked_div(b)
        }
    }
    .ok_or_else(overflow)?;
    let (min, max) = (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1);
    if i128::from(r) < min || i128::from(r) > max {
        return Err(overflow());
    }
    Ok(r)
}

fn pow10(n: u32) -> i256 {
    i256::from_i128(10).wrapping_pow(n)
}

/// `Decimal.fromBigDecimal` precision check: `None` when |v| needs more than `precision` digits.
fn fit(v: i256, precision: u32) -> Option<i128> {
    let bound = pow10(precision);
    if v >= bound || v <= bound.wrapping_neg() {
        None
    } else {
        v.to_i128()
    }
}

/// `n / d` rounded HALF_UP (d != 0).
fn div_half_up(n: i256, d: i256) -> i256 {
    let zero = i256::from_i128(0);
    let q = n.wrapping_div(d);
    let r = n.wrapping_rem(d);
    let twice = r.wrapping_abs().wrapping_mul(i256::from_i128(2));
    if twice >= d.wrapping_abs() {
        let positive = (n < zero) == (d < zero);
        if positive {
            q.wrapping_add(i256::from_i128(1))
        } else {
            q.wrapping_sub(i256::from_i128(1))
        }
    } else {
        q
    }
}

fn gcd(mut a: i256, mut b: i256) -> i256 {
    let zero = i256::from_i128(0);
    while b != zero {
        let t = a.wrapping_rem(b);
        a = b;
        b = t;
    }
    a
}

fn dec_op(a: i128, b: i128, op: Op, precision: u32, scale: u32) -> Result<Option<i128>> {
    match op {
        Op::Add | Op::Sub => {
            if precision <= 18 {
                // DecimalUtils.add/subtract: compact values add as longs, precision unchecked
                if let (Ok(x), Ok(y)) = (i64::try_from(a), i64::try_from(b)) {
                    let r = if matches!(op, Op::Add) {
                        x.checked_add(y)
                    } else {
                        x.checked_sub(y)
                    };
                    if let Some(r) = r {
                        return Ok(Some(i128::from(r)));
                    }
                }
            }
            let (x, y) = (i256::from_i128(a), i256::from_i128(b));
            let r = if matches!(op, Op::Add) {
                x.wrapping_add(y)
            } else {
                x.wrapping_sub(y)
            };
            Ok(fit(r, precision))
        }
        Op::Mul => {
            let product = i256::from_i128(a).wrapping_mul(i256::from_i128(b));
            Ok(fit(div_half_up(product, pow10(scale)), precision))
        }
        Op::Div => {
            let zero = i256::from_i128(0);
            let (x, y) = (i256::from_i128(a), i256::from_i128(b));
            if y == zero {
                return Err(Error::invalid("Division by zero"));
            }
            if x != zero {
                // BigDecimal.divide throws unless the quotient has a terminating expansion
                let mut d = y
                    .wrapping_abs()
                    .wrapping_div(gcd(x.wrapping_abs(), y.wrapping_abs()));
                for p in [2, 5] {
                    let p = i256::from_i128(p);
                    while d.wrapping_rem(p) == zero {
                        d = d.wrapping_div(p);
                    }
                }
                if d != i256::from_i128(1) {
                    return Err(Error::invalid(
                        "Non-terminating decimal expansion; no exact representable decimal result.",
                    ));
                }
            }
            Ok(fit(div_half_up(x.wrapping_mul(pow10(scale)), y), precision))
        }
    }
}

fn apply(kind: NumKind, a: Num, b: Num, op: Op) -> Result<Option<Num>> {
    Ok(match (kind, a, b) {
        (NumKind::Int { bits, name }, Num::Int(x), Num::Int(y)) => {
            Some(Num::Int(int_op(x, y, op, bits, name)?))
        }
        (NumKind::F32, Num::F32(x), Num::F32(y)) => Some(Num::F32(match op {
            Op::Add => x + y,
            Op::Sub => x - y,
            Op::Mul => x * y,
            Op::Div => x / y,
        })),
        (NumKind::F64, Num::F64(x), Num::F64(y)) => Some(Num::F64(match op {
            Op::Add => x + y,
            Op::Sub => x - y,
            Op::Mul => x * y,
            Op::Div => x / y,
        })),
        (NumKind::Dec { precision, scale }, Num::Dec(x), Num::Dec(y)) => {
            dec_op(x, y, op, precision, scale)?.map(Num::Dec)
        }
        _ => {
            return Err(Error::invalid(format!(
                "numeric aggregate: {a:?} and {b:?} do not match {kind:?}"
            )))
        }
    })
}

fn negate(kind: NumKind, n: Num) -> Result<Num> {
    Ok(match (kind, n) {
        (NumKind::Int { bits, name }, Num::Int(x)) => Num::Int(int_op(0, x, Op::Sub, bits, name)?),
        (_, Num::F32(x)) => Num::F32(-x),
        (_, Num::F64(x)) => Num::F64(-x),
        (_, Num::Dec(x)) => Num::Dec(-x),
        (_, Num::Int(x)) => Num::Int(-x),
    })
}

/// `sum`.
pub(crate) struct Sum {
    kind: NumKind,
}

impl Sum {
    pub fn new(t: &DataType) -> Result<Self> {
        Ok(Sum {
            kind: NumKind::of(t)?,
        })
    }
}

impl AggFn for Sum {
    fn agg(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Result<Acc> {
        if acc.is_null() || input.is_null() {
            return Ok(if acc.is_null() { input } else { acc });
        }
        match (read(cx, &acc)?, read(cx, &input)?) {
            (Some(a), Some(b)) => Ok(to_acc(apply(self.kind, a, b, Op::Add)?)),
            _ => Ok(acc),
        }
    }

    fn retract(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Option<Result<Acc>> {
        Some((|| {
            if acc.is_null() {
                return Ok(match read(cx, &input)? {
                    None => Acc::Null,
                    Some(n) => to_acc(Some(negate(self.kind, n)?)),
                });
            }
            if input.is_null() {
                return Ok(acc);
            }
            match (read(cx, &acc)?, read(cx, &input)?) {
                (Some(a), Some(b)) => Ok(to_acc(apply(self.kind, a, b, Op::Sub)?)),
                _ => Ok(acc),
            }
        })())
    }
}

/// `product`.
pub(crate) struct Product {
    kind: NumKind,
}

impl Product {
    pub fn new(t: &DataType) -> Result<Self> {
        Ok(Product {
            kind: NumKind::of(t)?,
        })
    }
}

impl AggFn for Product {
    fn agg(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Result<Acc> {
        if acc.is_null() || input.is_null() {
            return Ok(if acc.is_null() { input } else { acc });
        }
        match (read(cx, &acc)?, read(cx, &input)?) {
            (Some(a), Some(b)) => Ok(to_acc(apply(self.kind, a, b, Op::Mul)?)),
            _ => Ok(acc),
        }
    }

    fn retract(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Option<Result<Acc>> {
        Some((|| {
            if acc.is_null() || input.is_null() {
                return Ok(acc);
            }
            match (read(cx, &acc)?, read(cx, &input)?) {
                (Some(a), Some(b)) => Ok(to_acc(apply(self.kind, a, b, Op::Div)?)),
                _ => Ok(acc),
            }
        })())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_ops_follow_big_decimal() {
        // 1.25 * 1.25 = 1.5625 -> 1.56 (HALF_UP at scale 2), -1.5625 -> -1.56
        assert_eq!(dec_op(125, 125, Op::Mul, 10, 2).unwrap(), Some(156));
        assert_eq!(dec_op(-125, 125, Op::Mul, 10, 2).unwrap(), Some(-156));
        // 0.05 * 0.5 = 0.025 -> 0.03
        assert_eq!(dec_op(5, 50, Op::Mul, 10, 2).unwrap(), Some(3));
        // product beyond precision becomes null
        assert_eq!(dec_op(99_999, 99_999, Op::Mul, 5, 2).unwrap(), None);
        // compact sums keep values beyond the declared precision
        assert_eq!(dec_op(99_999, 1, Op::Add, 5, 2).unwrap(), Some(100_000));
        // non-compact sums are checked
        let max38 = 10i128.pow(38) - 1;
        assert_eq!(dec_op(max38, 1, Op::Add, 38, 0).unwrap(), None);
        assert_eq!(dec_op(max38, -1, Op::Add, 38, 0).unwrap(), Some(max38 - 1));
        // 1.00 / 4.00 = 0.25; 1.00 / 3.00 fails; 1.00 / 8.00 = 0.125 -> 0.13
        assert_eq!(dec_op(100, 400, Op::Div, 10, 2).unwrap(), Some(25));
        assert!(dec_op(100, 300, Op::Div, 10, 2).is_err());
        assert_eq!(dec_op(100, 800, Op::Div, 10, 2).unwrap(), Some(13));
        assert!(dec_op(100, 0, Op::Div, 10, 2).is_err());
    }

    #[test]
    fn integer_ops_are_exact_per_width() {
        assert!(int_op(127, 1, Op::Add, 8, "byte").is_err());
        assert_eq!(int_op(-128, 1, Op::Sub, 16, "short").unwrap(), -129);
        assert!(int_op(-128, -1, Op::Div, 8, "byte").is_err());
        assert!(int_op(5, 0, Op::Div, 32, "int").is_err());
        assert_eq!(int_op(-7, 2, Op::Div, 32, "int").unwrap(), -3);
        assert!(int_op(i64::MAX, 1, Op::Add, 64, "long").is_err());
    }
}
