//! The text filter language (the CLI's `--filter`), compiled to the JSON filter tree that
//! [`Predicate::from_json`](super::Predicate::from_json) reads, so that text, the Python API's
//! DNF tuples and Spark's pushed filters all meet in one model.
//!
//! Grammar: terms joined by `and`, which binds tighter than `or` (no parentheses). A term is
//! `col OP value` (OP one of `= == != <> < <= > >=`), `col [not] in (v1, v2, ...)` or
//! `col is [not] null`. Values: integers, floats (`2.5`, `1e3`), `'quoted'` or `"quoted"`
//! strings (a doubled quote or a backslash escapes), `true`/`false`, unquoted ISO dates and
//! timestamps (`2024-05-14`, `2024-05-14T10:00:00.5+02:00`), and bare words (strings).
//! Columns may be `back-quoted`. Keywords are case-insensitive.
//!
//! Invariant: the tree is always `or` of `and`s of leaves; an error names the text and the
//! position (1-based, in characters) where reading stopped.

use serde_json::{json, Value};

use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Value(Value),
    Ident(String),
    Op(&'static str),
    Punct(char),
    /// `and`, `or`, `not`, `in`, `is`, `null` (lower-cased).
    Keyword(&'static str),
}

const KEYWORDS: [&str; 6] = ["and", "or", "not", "in", "is", "null"];

/// Parse filter `text` into the JSON filter tree.
pub fn parse_filter_text(text: &str) -> Result<Value> {
    let tokens = tokenize(text)?;
    if tokens.is_empty() {
        return Err(Error::invalid("bad filter: it is empty"));
    }
    Parser {
        text,
        tokens,
        at: 0,
    }
    .parse()
}

fn bad(text: &str, reason: impl std::fmt::Display) -> Error {
    Error::invalid(format!("bad filter {text:?}: {reason}"))
}

fn is_word_char(c: char) -> bool {
    !c.is_whitespace() && !"'\"`()<>=!,".contains(c)
}

/// `\w` of Python's `re`: letters, digits and `_`.
fn is_regex_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn tokenize(text: &str) -> Result<Vec<(Token, usize)>> {
    let chars: Vec<char> = text.trim_end().chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let c = chars[i];
        let (token, end) = if c == '\'' || c == '"' {
            let (s, end) = quoted_string(&chars, i).ok_or_else(|| {
                let rest: String = chars[i..].iter().collect();
                bad(text, format!("cannot read {:?}", rest.trim()))
            })?;
            (Token::Value(Value::String(s)), end)
        } else if c == '`' {
            let close = chars[i + 1..]
                .iter()
                .position(|&c| c == '`')
                .filter(|&n| n > 0);
            let Some(n) = close else {
                let rest: String = chars[i..].iter().collect();
                return Err(bad(text, format!("cannot read {:?}", rest.trim())));
            };
            (
                Token::Ident(chars[i + 1..i + 1 + n].iter().collect()),
                i + n + 2,
            )
        } else if let Some(end) = temporal(&chars, i) {
            (
                Token::Value(Value::String(chars[i..end].iter().collect())),
                end,
            )
        } else if let Some((value, end)) = number(&chars, i) {
            (Token::Value(value), end)
        } else if let Some((op, end)) = operator(&chars, i) {
            (Token::Op(op), end)
        } else if "(),".contains(c) {
            (Token::Punct(c), i + 1)
        } else if is_word_char(c) {
            let end = i + chars[i..].iter().take_while(|&&c| is_word_char(c)).count();
            let word: String = chars[i..end].iter().collect();
            let lower = word.to_lowercase();
            let token = if let Some(k) = KEYWORDS.iter().find(|k| **k == lower) {
                Token::Keyword(k)
            } else if lower == "true" || lower == "false" {
                Token::Value(Value::Bool(lower == "true"))
            } else {
                Token::Ident(word)
            };
            (token, end)
        } else {
            let rest: String = chars[i..].iter().collect();
            return Err(bad(text, format!("cannot read {:?}", rest.trim())));
        };
        out.push((token, start));
        i = end;
    }
    Ok(out)
}

/// A `'…'` or `"…"` string at `i`: a backslash escapes the next character, a doubled quote is
/// one quote. `None` when it is not terminated.
fn quoted_string(chars: &[char], i: usize) -> Option<(String, usize)> {
    let quote = chars[i];
    let mut out = String::new();
    let mut j = i + 1;
    while j < chars.len() {
        match chars[j] {
            '\\' if j + 1 < chars.len() => {
                out.push(chars[j + 1]);
                j += 2;
            }
            c if c == quote => {
                if chars.get(j + 1) == Some(&quote) {
                    out.push(quote);
                    j += 2;
                } else {
                    return Some((out, j + 1));
                }
            }
            c => {
                out.push(c);
                j += 1;
            }
        }
    }
    None
}

fn digits(chars: &[char], i: usize) -> usize {
    chars[i.min(chars.len())..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count()
}

/// An ISO date or timestamp at `i` (`YYYY-MM-DD[(T| )HH:MM[:SS[.f+]][Z|±HH[:]MM]]`) not
/// followed by a word character, `.`, `:` or `-`; its end.
fn temporal(chars: &[char], i: usize) -> Option<usize> {
    let exact = |at: usize, n: usize| {
        digits(chars, at) >= n && (at + n >= chars.len() || !chars[at + n].is_ascii_digit())
    };
    let is = |at: usize, c: char| chars.get(at) == Some(&c);
    if !(exact(i, 4) && is(i + 4, '-') && exact(i + 5, 2) && is(i + 7, '-') && exact(i + 8, 2)) {
        return None;
    }
    let date_end = i + 10;
    let mut end = date_end;
    if matches!(chars.get(end), Some('T') | Some(' '))
        && exact(end + 1, 2)
        && is(end + 3, ':')
        && exact(end + 4, 2)
    {
        end += 6;
        if is(end, ':') && exact(end + 1, 2) {
            end += 3;
            if is(end, '.') && digits(chars, end + 1) > 0 {
                end += 1 + digits(chars, end + 1);
            }
        }
        if is(end, 'Z') {
            end += 1;
        } else if (is(end, '+') || is(end, '-')) && exact(end + 1, 2) {
            let colon = usize::from(is(end + 3, ':'));
            if exact(end + 3 + colon, 2) {
                end += 5 + colon;
            }
        }
    }
    let free = |at: usize| {
        chars
            .get(at)
            .is_none_or(|&c| !(is_regex_word(c) || ".:-".contains(c)))
    };
    if free(end) {
        Some(end)
    } else if end != date_end && free(date_end) {
        // Python's regex backtracks to the bare date when the time part is followed by junk.
        Some(date_end)
    } else {
        None
    }
}

/// A number at `i` (`[-+]?(d+.d*|.d+|d+)([eE][-+]?d+)?`) not followed by a word character or
/// `.`: an integer, or a float when it has a fraction or an exponent.
fn number(chars: &[char], i: usize) -> Option<(Value, usize)> {
    let mut j = i;
    if matches!(chars.get(j), Some('-') | Some('+')) {
        j += 1;
    }
    let int_digits = digits(chars, j);
    j += int_digits;
    let mut float = false;
    if chars.get(j) == Some(&'.') {
        let frac = digits(chars, j + 1);
        if int_digits == 0 && frac == 0 {
            return None;
        }
        j += 1 + frac;
        float = true;
    } else if int_digits == 0 {
        return None;
    }
    if matches!(chars.get(j), Some('e') | Some('E')) {
        let sign = usize::from(matches!(chars.get(j + 1), Some('-') | Some('+')));
        let exp = digits(chars, j + 1 + sign);
        if exp > 0 {
            j += 1 + sign + exp;
            float = true;
        }
    }
    if chars.get(j).is_some_and(|&c| is_regex_word(c) || c == '.') {
        return None;
    }
    let raw: String = chars[i..j].iter().collect();
    let value = match (float, raw.parse::<i64>()) {
        (false, Ok(n)) => Value::from(n),
        _ => {
            let f: f64 = raw.parse().ok()?;
            serde_json::Number::from_f64(f)
                .map(Value::Number)
                .unwrap_or_else(|| {
                    // JSON has no infinities; the filter model reads these spellings for floats.
                    Value::String(if f > 0.0 { "Infinity" } else { "-Infinity" }.to_string())
                })
        }
    };
    Some((value, j))
}

fn operator(chars: &[char], i: usize) -> Option<(&'static str, usize)> {
    let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
    let op2 = match two.as_str() {
        "<=" => Some("le"),
        ">=" => Some("ge"),
        "==" => Some("eq"),
        "!=" | "<>" => Some("ne"),
        _ => None,
    };
    if let Some(op) = op2 {
        return Some((op, i + 2));
    }
    match chars[i] {
        '=' => Some(("eq", i + 1)),
        '<' => Some(("lt", i + 1)),
        '>' => Some(("gt", i + 1)),
        _ => None,
    }
}

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<(Token, usize)>,
    at: usize,
}

impl Parser<'_> {
    fn expected(&self, what: &str) -> Error {
        let place = match self.tokens.get(self.at) {
            Some((_, pos)) => format!("at position {}", pos + 1),
            None => "at the end".to_string(),
        };
        bad(self.text, format!("expected {what} {place}"))
    }

    fn keyword(&mut self, k: &str) -> bool {
        let found = matches!(self.tokens.get(self.at), Some((Token::Keyword(t), _)) if *t == k);
        self.at += usize::from(found);
        found
    }

    fn punct(&mut self, c: char) -> bool {
        let found = matches!(self.tokens.get(self.at), Some((Token::Punct(p), _)) if *p == c);
        self.at += usize::from(found);
        found
    }

    fn value(&mut self) -> Result<Value> {
        let value = match self.tokens.get(self.at) {
            Some((Token::Value(v), _)) => v.clone(),
            Some((Token::Ident(word), _)) => Value::String(word.clone()),
            _ => return Err(self.expected("a value")),
        };
        self.at += 1;
        Ok(value)
    }

    fn term(&mut self) -> Result<Value> {
        let Some((Token::Ident(column), _)) = self.tokens.get(self.at).cloned() else {
            return Err(self.expected("a column name"));
        };
        self.at += 1;
        if self.keyword("is") {
            let negated = self.keyword("not");
            if !self.keyword("null") {
                return Err(self.expected("'null'"));
            }
            let op = if negated { "is_not_null" } else { "is_null" };
            return Ok(json!({"op": op, "field": column}));
        }
        let negated = self.keyword("not");
        if self.keyword("in") {
            if !self.punct('(') {
                return Err(self.expected("'('"));
            }
            let mut values = vec![self.value()?];
            while self.punct(',') {
                values.push(self.value()?);
            }
            if !self.punct(')') {
                return Err(self.expected("',' or ')'"));
            }
            let op = if negated { "not_in" } else { "in" };
            return Ok(json!({"op": op, "field": column, "values": values}));
        }
        if negated {
            return Err(self.expected("'in' after 'not'"));
        }
        let Some((Token::Op(op), _)) = self.tokens.get(self.at).cloned() else {
            return Err(self.expected("an operator (= != < <= > >= in, is null)"));
        };
        self.at += 1;
        let value = self.value()?;
        Ok(json!({"op": op, "field": column, "value": value}))
    }

    fn parse(mut self) -> Result<Value> {
        let mut clauses = Vec::new();
        loop {
            let mut conjunction = vec![self.term()?];
            while self.keyword("and") {
                conjunction.push(self.term()?);
            }
            clauses.push(json!({"op": "and", "args": conjunction}));
            if !self.keyword("or") {
                break;
            }
        }
        if self.at != self.tokens.len() {
            return Err(self.expected("'and', 'or' or the end"));
        }
        Ok(json!({"op": "or", "args": clauses}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::predicate::Predicate;

    fn leaf(text: &str) -> Value {
        let tree = parse_filter_text(text).unwrap();
        Predicate::from_json(&tree).unwrap();
        assert_eq!(tree["args"].as_array().unwrap().len(), 1, "{tree}");
        tree["args"][0]["args"][0].clone()
    }

    #[test]
    fn values_operators_and_keywords() {
        assert_eq!(
            leaf("n >= 50"),
            json!({"op": "ge", "field": "n", "value": 50})
        );
        assert_eq!(
            leaf("a <> -3"),
            json!({"op": "ne", "field": "a", "value": -3})
        );
        assert_eq!(
            leaf("a == 1e3"),
            json!({"op": "eq", "field": "a", "value": 1000.0})
        );
        assert_eq!(
            leaf("b < .5"),
            json!({"op": "lt", "field": "b", "value": 0.5})
        );
        assert_eq!(
            leaf("s = 'it''s'"),
            json!({"op": "eq", "field": "s", "value": "it's"})
        );
        assert_eq!(
            leaf(r#"s = "a \"b\"""#),
            json!({"op": "eq", "field": "s", "value": "a \"b\""})
        );
        assert_eq!(
            leaf("s = word"),
            json!({"op": "eq", "field": "s", "value": "word"})
        );
        assert_eq!(
            leaf("flag = TRUE"),
            json!({"op": "eq", "field": "flag", "value": true})
        );
        assert_eq!(
            leaf("d >= 2024-05-14"),
            json!({"op": "ge", "field": "d", "value": "2024-05-14"})
        );
        assert_eq!(
            leaf("ts < 2024-05-14 10:00:00.5+02:00"),
            json!({"op": "lt", "field": "ts", "value": "2024-05-14 10:00:00.5+02:00"})
        );
        assert_eq!(
            leaf("id NOT IN ('a', 2)"),
            json!({"op": "not_in", "field": "id", "values": ["a", 2]})
        );
        assert_eq!(
            leaf("`odd col` is not null"),
            json!({"op": "is_not_null", "field": "odd col"})
        );
        assert_eq!(
            leaf("n = 5abc"),
            json!({"op": "eq", "field": "n", "value": "5abc"})
        );
        assert_eq!(
            leaf("x = 1e999"),
            json!({"op": "eq", "field": "x", "value": "Infinity"})
        );
    }

    #[test]
    fn and_binds_tighter_than_or() {
        let tree = parse_filter_text("a = 1 or b < 2.5 AND c != \"q\"").unwrap();
        assert_eq!(
            tree,
            json!({"op": "or", "args": [
                {"op": "and", "args": [{"op": "eq", "field": "a", "value": 1}]},
                {"op": "and", "args": [
                    {"op": "lt", "field": "b", "value": 2.5},
                    {"op": "ne", "field": "c", "value": "q"},
                ]},
            ]})
        );
    }

    #[test]
    fn errors_name_the_text_and_the_place() {
        for (text, expected) in [
            ("", "empty"),
            ("n >=", "expected a value at the end"),
            ("n 5", "expected an operator"),
            (">= 5", "expected a column name at position 1"),
            ("n = 1 and", "expected a column name at the end"),
            ("id in 1", "expected '('"),
            ("id in (1, 2", "expected ',' or ')'"),
            ("x is not", "expected 'null'"),
            ("x not = 1", "expected 'in' after 'not'"),
            ("n = 'unterminated", "cannot read \"'unterminated\""),
            (
                "n = 1 m = 2",
                "expected 'and', 'or' or the end at position 7",
            ),
            ("(n = 1)", "expected a column name at position 1"),
        ] {
            let err = parse_filter_text(text).unwrap_err().to_string();
            assert!(
                err.contains(expected) && err.contains("bad filter"),
                "{text}: {err}"
            );
        }
    }
}
