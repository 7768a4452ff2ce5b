//! `listagg` (Java `FieldListaggAgg`): concatenate strings with a delimiter.
//!
//! Null and blank inputs (only Java whitespace) are skipped; a null or blank accumulator is
//! replaced by the input. With `distinct`, the accumulator is split on the whole delimiter
//! (keeping empty tokens, like `BinaryStringUtils.splitByWholeSeparatorPreserveAllTokens`; an
//! empty delimiter splits on " ") and only input tokens that are neither blank nor already
//! present are appended. `aggReversed` prepends (Java's default argument swap).

use std::collections::HashSet;

use super::{AggFn, Cx};
use crate::error::{Error, Result};
use crate::lsm::merge_fn::value::{scalar, Acc, Scalar, Value};

pub(crate) struct ListAgg {
    delimiter: String,
    distinct: bool,
}

impl ListAgg {
    pub fn new(delimiter: &str, distinct: bool) -> Self {
        ListAgg {
            delimiter: delimiter.to_string(),
            distinct,
        }
    }
}

/// Java `Character.isWhitespace` (UTF-16 based, so supplementary characters never are).
fn java_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n'
            | '\u{000B}'
            | '\u{000C}'
            | '\r'
            | '\u{001C}'..='\u{001F}'
            | ' '
            | '\u{1680}'
            | '\u{2000}'..='\u{2006}'
            | '\u{2008}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{205F}'
            | '\u{3000}'
    )
}

fn is_blank(s: &str) -> bool {
    s.chars().all(java_whitespace)
}

/// `splitByWholeSeparatorPreserveAllTokens`.
fn split<'a>(s: &'a str, delimiter: &'a str) -> Vec<&'a str> {
    if s.is_empty() {
        return Vec::new();
    }
    let delimiter = if delimiter.is_empty() { " " } else { delimiter };
    s.split(delimiter).collect()
}

fn text<'a>(cx: &'a Cx<'_>, acc: &'a Acc) -> Result<Option<&'a str>> {
    match scalar(cx.pool, cx.col, acc)? {
        None => Ok(None),
        Some(Scalar::Bytes(b)) => std::str::from_utf8(b)
            .map(Some)
            .map_err(|e| Error::invalid(format!("listagg on invalid UTF-8: {e}"))),
        Some(other) => Err(Error::invalid(format!(
            "listagg on a non-string value {other:?}"
        ))),
    }
}

impl AggFn for ListAgg {
    fn agg(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Result<Acc> {
        let input_text = match text(cx, &input)? {
            Some(t) if !is_blank(t) => t,
            _ => return Ok(acc),
        };
        let acc_text = match text(cx, &acc)? {
            Some(t) if !is_blank(t) => t,
            _ => return Ok(input),
        };
        let mut result =
            String::with_capacity(acc_text.len() + self.delimiter.len() + input_text.len());
        result.push_str(acc_text);
        if self.distinct {
            let mut seen: HashSet<&str> = split(acc_text, &self.delimiter).into_iter().collect();
            let mut appended = false;
            for token in split(input_text, &self.delimiter) {
                if is_blank(token) || !seen.insert(token) {
                    continue;
                }
                result.push_str(&self.delimiter);
                result.push_str(token);
                appended = true;
            }
            if !appended {
                return Ok(acc);
            }
        } else {
            result.push_str(&self.delimiter);
            result.push_str(input_text);
        }
        Ok(Acc::Val(Value::Str(result)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_preserves_all_tokens() {
        assert_eq!(split("a,,b,", ","), vec!["a", "", "b", ""]);
        assert!(split("", ",").is_empty());
        assert_eq!(split("a b", ""), vec!["a", "b"]);
        assert_eq!(split("a--b", "--"), vec!["a", "b"]);
    }

    #[test]
    fn blank_is_java_whitespace() {
        assert!(is_blank(" \t\u{1F}\u{3000}"));
        assert!(is_blank(""));
        assert!(!is_blank("\u{00A0}"));
        assert!(!is_blank("\u{0085}"));
    }
}
