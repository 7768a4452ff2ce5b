//! JSON form of Paimon data types and fields, as Java `DataType.serializeJson` writes and
//! `DataTypeJsonParser` reads them, plus the SQL-ish [`Display`](std::fmt::Display) of types.
//!
//! * Atomic types are JSON strings holding Java's `asSQLString()`: `INT NOT NULL`,
//!   `DECIMAL(10, 2)`, `STRING`, `TIMESTAMP(3) WITH LOCAL TIME ZONE`, ... When reading, the
//!   string goes through a port of Java's atomic-type parser: keywords in any case, default
//!   lengths/precisions, aliases (`INTEGER`, `NUMERIC`, `DOUBLE PRECISION`, pypaimon's
//!   `TIMESTAMP_LTZ(p)`), explicit `NULL` and the suffix forms `INT ARRAY` / `INT MULTISET`.
//! * ARRAY, MULTISET, MAP and ROW are objects whose `type` member is the kind name plus
//!   ` NOT NULL` when not nullable. pypaimon also writes a `nullable` member; Java ignores it
//!   and so do we (we never write it).
//! * A field is `{"id", "name", "type", ["description"], ["defaultValue"]}`. Field ids are
//!   required, except inside a bare type read by [`type_from_json`], where Java numbers
//!   id-less ROW fields from 0 and refuses a mix of given and generated ids.
//!
//! Writing always produces Java's exact form, so `type_from_json(&type_to_json(t)) == t`.

use std::fmt;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::types::{DataField, DataType, TypeKind, MAX_LENGTH};

const WHAT: &str = "data type";

fn corrupt(reason: impl fmt::Display) -> Error {
    Error::corrupt(WHAT, reason)
}

/// Encodes `data_type` as Java's JSON (a string for atomic types, an object for nested ones).
pub fn type_to_json(data_type: &DataType) -> Value {
    let nested = |name: &str, members: Vec<(&str, Value)>| {
        let mut object = Map::new();
        object.insert(
            "type".to_string(),
            Value::String(with_nullability(name, data_type)),
        );
        for (key, value) in members {
            object.insert(key.to_string(), value);
        }
        Value::Object(object)
    };
    match &data_type.kind {
        TypeKind::Array(element) => nested("ARRAY", vec![("element", type_to_json(element))]),
        TypeKind::Multiset(element) => nested("MULTISET", vec![("element", type_to_json(element))]),
        TypeKind::Map(key, value) => nested(
            "MAP",
            vec![("key", type_to_json(key)), ("value", type_to_json(value))],
        ),
        TypeKind::Row(fields) => nested(
            "ROW",
            vec![(
                "fields",
                Value::Array(fields.iter().map(field_to_json).collect()),
            )],
        ),
        _ => Value::String(data_type.to_string()),
    }
}

/// Encodes a field as `{"id", "name", "type", ["description"], ["defaultValue"]}`.
pub fn field_to_json(field: &DataField) -> Value {
    let mut object = Map::new();
    object.insert("id".to_string(), Value::from(field.id));
    object.insert("name".to_string(), Value::String(field.name.clone()));
    object.insert("type".to_string(), type_to_json(&field.data_type));
    if let Some(description) = &field.description {
        object.insert(
            "description".to_string(),
            Value::String(description.clone()),
        );
    }
    if let Some(default_value) = &field.default_value {
        object.insert(
            "defaultValue".to_string(),
            Value::String(default_value.clone()),
        );
    }
    Value::Object(object)
}

/// Decodes a type. ROW fields without an `id` get ids 0, 1, ... in reading order.
pub fn type_from_json(json: &Value) -> Result<DataType> {
    let mut generated = -1;
    parse_type(json, Some(&mut generated))
}

/// Decodes a field; its `id` and those of nested ROW fields are required.
pub fn field_from_json(json: &Value) -> Result<DataField> {
    parse_field(json, None)
}

/// `ids` is Java's field-id counter: `None` when ids are required, else the last id generated
/// (-1 while none was).
fn parse_type(json: &Value, mut ids: Option<&mut i32>) -> Result<DataType> {
    let object = match json {
        Value::String(text) => return parse_atomic_type(text),
        Value::Object(object) => object,
        other => {
            return Err(corrupt(format!(
                "expected a string or an object, got {other}"
            )))
        }
    };
    let type_string = match object.get("type") {
        Some(Value::String(s)) => s.as_str(),
        _ => {
            return Err(corrupt(format!(
                "nested type without a string 'type': {json}"
            )))
        }
    };
    let member = |name: &str| {
        object
            .get(name)
            .ok_or_else(|| corrupt(format!("'{type_string}' without '{name}'")))
    };
    // Java decides with startsWith / contains("NOT NULL"), in this order.
    let nullable = !type_string.contains("NOT NULL");
    let kind = if type_string.starts_with("ARRAY") {
        TypeKind::Array(Box::new(parse_type(member("element")?, ids)?))
    } else if type_string.starts_with("VECTOR") {
        return Err(Error::Unsupported(format!("data type {type_string}")));
    } else if type_string.starts_with("MULTISET") {
        TypeKind::Multiset(Box::new(parse_type(member("element")?, ids)?))
    } else if type_string.starts_with("MAP") {
        let key = parse_type(member("key")?, ids.as_deref_mut())?;
        let value = parse_type(member("value")?, ids)?;
        TypeKind::Map(Box::new(key), Box::new(value))
    } else if type_string.starts_with("ROW") {
        let Value::Array(items) = member("fields")? else {
            return Err(corrupt("ROW 'fields' is not an array"));
        };
        let mut fields = Vec::with_capacity(items.len());
        for item in items {
            fields.push(parse_field(item, ids.as_deref_mut())?);
        }
        TypeKind::Row(fields)
    } else {
        return Err(corrupt(format!("unknown nested type '{type_string}'")));
    };
    Ok(DataType { nullable, kind })
}

fn parse_field(json: &Value, mut ids: Option<&mut i32>) -> Result<DataField> {
    let Value::Object(object) = json else {
        return Err(corrupt(format!("field is not an object: {json}")));
    };
    let id = match (object.get("id"), ids.as_deref_mut()) {
        (Some(id), counter) => {
            if counter.is_some_and(|generated| *generated != -1) {
                return Err(corrupt("partial field ids are not allowed"));
            }
            id.as_i64()
                .and_then(|id| i32::try_from(id).ok())
                .ok_or_else(|| corrupt(format!("field id {id} is not a 32-bit integer")))?
        }
        (None, Some(generated)) => {
            *generated = generated
                .checked_add(1)
                .ok_or_else(|| corrupt("too many fields"))?;
            *generated
        }
        (None, None) => return Err(corrupt(format!("field without 'id': {json}"))),
    };
    let name = match object.get("name") {
        Some(Value::String(name)) => name.clone(),
        _ => return Err(corrupt(format!("field {id} without a string 'name'"))),
    };
    let type_json = object
        .get("type")
        .ok_or_else(|| corrupt(format!("field '{name}' without 'type'")))?;
    let data_type = parse_type(type_json, ids)?;
    Ok(DataField {
        id,
        name,
        data_type,
        description: optional_text(object, "description")?,
        default_value: optional_text(object, "defaultValue")?,
    })
}

/// An optional string member; JSON null counts as absent.
fn optional_text(object: &Map<String, Value>, key: &str) -> Result<Option<String>> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(corrupt(format!("'{key}' is not a string: {other}"))),
    }
}

// ---- SQL strings --------------------------------------------------------------------------

fn with_nullability(text: &str, data_type: &DataType) -> String {
    if data_type.nullable {
        text.to_string()
    } else {
        format!("{text} NOT NULL")
    }
}

/// Java `asSQLString()`: `INT NOT NULL`, `ARRAY<INT NOT NULL>`, ``ROW<`a` INT, `b` STRING>``...
impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            TypeKind::Boolean => f.write_str("BOOLEAN")?,
            TypeKind::TinyInt => f.write_str("TINYINT")?,
            TypeKind::SmallInt => f.write_str("SMALLINT")?,
            TypeKind::Int => f.write_str("INT")?,
            TypeKind::BigInt => f.write_str("BIGINT")?,
            TypeKind::Float => f.write_str("FLOAT")?,
            TypeKind::Double => f.write_str("DOUBLE")?,
            TypeKind::Decimal { precision, scale } => write!(f, "DECIMAL({precision}, {scale})")?,
            TypeKind::Char(length) => write!(f, "CHAR({length})")?,
            TypeKind::VarChar(MAX_LENGTH) => f.write_str("STRING")?,
            TypeKind::VarChar(length) => write!(f, "VARCHAR({length})")?,
            TypeKind::Binary(length) => write!(f, "BINARY({length})")?,
            TypeKind::VarBinary(MAX_LENGTH) => f.write_str("BYTES")?,
            TypeKind::VarBinary(length) => write!(f, "VARBINARY({length})")?,
            TypeKind::Date => f.write_str("DATE")?,
            TypeKind::Time(precision) => write!(f, "TIME({precision})")?,
            TypeKind::Timestamp(precision) => write!(f, "TIMESTAMP({precision})")?,
            TypeKind::LocalZonedTimestamp(precision) => {
                write!(f, "TIMESTAMP({precision}) WITH LOCAL TIME ZONE")?
            }
            TypeKind::Array(element) => write!(f, "ARRAY<{element}>")?,
            TypeKind::Multiset(element) => write!(f, "MULTISET<{element}>")?,
            TypeKind::Map(key, value) => write!(f, "MAP<{key}, {value}>")?,
            TypeKind::Row(fields) => {
                f.write_str("ROW<")?;
                for (i, field) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{field}")?;
                }
                f.write_str(">")?;
            }
            TypeKind::Variant => f.write_str("VARIANT")?,
            TypeKind::Blob => f.write_str("BLOB")?,
        }
        if !self.nullable {
            f.write_str(" NOT NULL")?;
        }
        Ok(())
    }
}

/// Java `DataField.asSQLString()`: ```name` TYPE [COMMENT '...'] [DEFAULT value]``.
impl fmt::Display for DataField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` {}", self.name.replace('`', "``"), self.data_type)?;
        if let Some(description) = self.description.as_deref().filter(|d| !d.is_empty()) {
            write!(f, " COMMENT '{}'", description.replace('\'', "''"))?;
        }
        if let Some(default_value) = &self.default_value {
            write!(f, " DEFAULT {default_value}")?;
        }
        Ok(())
    }
}

// ---- atomic type parser (port of the Java tokenizer and token parser) ---------------------

#[derive(Debug, Clone, PartialEq)]
enum Token {
    BeginSubtype,
    EndSubtype,
    BeginParameter,
    EndParameter,
    ListSeparator,
    Dot,
    /// Quoted `'...'` or `` `...` `` text; never valid in an atomic type, kept for messages.
    Quoted(String),
    Int(String),
    /// An upper-cased keyword.
    Keyword(String),
    Identifier(String),
}

const KEYWORDS: &[&str] = &[
    "CHAR",
    "VARCHAR",
    "STRING",
    "BOOLEAN",
    "BINARY",
    "VARBINARY",
    "BYTES",
    "DECIMAL",
    "NUMERIC",
    "DEC",
    "TINYINT",
    "SMALLINT",
    "INT",
    "INTEGER",
    "BIGINT",
    "FLOAT",
    "DOUBLE",
    "PRECISION",
    "DATE",
    "TIME",
    "WITH",
    "WITHOUT",
    "LOCAL",
    "ZONE",
    "TIMESTAMP",
    "TIMESTAMP_LTZ",
    "INTERVAL",
    "YEAR",
    "MONTH",
    "DAY",
    "HOUR",
    "MINUTE",
    "SECOND",
    "TO",
    "ARRAY",
    "VECTOR",
    "MULTISET",
    "MAP",
    "ROW",
    "NULL",
    "RAW",
    "LEGACY",
    "VARIANT",
    "BLOB",
    "GEOMETRY",
    "GEOGRAPHY",
    "NOT",
];

fn is_delimiter(c: char) -> bool {
    c.is_whitespace() || matches!(c, '<' | '>' | '(' | ')' | ',' | '.')
}

fn tokenize(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '<' => tokens.push(Token::BeginSubtype),
            '>' => tokens.push(Token::EndSubtype),
            '(' => tokens.push(Token::BeginParameter),
            ')' => tokens.push(Token::EndParameter),
            ',' => tokens.push(Token::ListSeparator),
            '.' => tokens.push(Token::Dot),
            '\'' | '`' => {
                // A doubled delimiter escapes itself.
                let mut quoted = String::new();
                i += 1;
                while i < chars.len() {
                    if chars[i] == c && chars.get(i + 1) == Some(&c) {
                        quoted.push(c);
                        i += 1;
                    } else if chars[i] == c {
                        break;
                    } else {
                        quoted.push(chars[i]);
                    }
                    i += 1;
                }
                tokens.push(Token::Quoted(quoted));
            }
            c if c.is_whitespace() => {}
            c if c.is_ascii_digit() => {
                let start = i;
                while i + 1 < chars.len() && chars[i + 1].is_ascii_digit() {
                    i += 1;
                }
                tokens.push(Token::Int(chars[start..=i].iter().collect()));
            }
            _ => {
                let start = i;
                while i + 1 < chars.len() && !is_delimiter(chars[i + 1]) {
                    i += 1;
                }
                let word: String = chars[start..=i].iter().collect();
                let upper = word.to_uppercase();
                if KEYWORDS.contains(&upper.as_str()) {
                    tokens.push(Token::Keyword(upper));
                } else {
                    tokens.push(Token::Identifier(word));
                }
            }
        }
        i += 1;
    }
    tokens
}

struct TypeParser<'a> {
    input: &'a str,
    tokens: Vec<Token>,
    position: usize,
}

/// Parses an atomic type string such as `DECIMAL(10, 2) NOT NULL` or `TIMESTAMP_LTZ(3)`.
pub fn parse_atomic_type(text: &str) -> Result<DataType> {
    let mut parser = TypeParser {
        input: text,
        tokens: tokenize(text),
        position: 0,
    };
    let data_type = parser.type_with_nullability()?;
    match parser.tokens.get(parser.position) {
        None => Ok(data_type),
        Some(token) => Err(parser.error(format!("unexpected token {token:?}"))),
    }
}

impl TypeParser<'_> {
    fn error(&self, cause: impl fmt::Display) -> Error {
        corrupt(format!("cannot parse type '{}': {cause}", self.input))
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.position)
    }

    fn next(&mut self) -> Result<Token> {
        let token = self
            .peek()
            .cloned()
            .ok_or_else(|| self.error("unexpected end"))?;
        self.position += 1;
        Ok(token)
    }

    fn next_is_keyword(&self, keyword: &str) -> bool {
        matches!(self.peek(), Some(Token::Keyword(k)) if k == keyword)
    }

    /// Consumes `keyword` if it comes next.
    fn accept_keyword(&mut self, keyword: &str) -> bool {
        let found = self.next_is_keyword(keyword);
        if found {
            self.position += 1;
        }
        found
    }

    fn expect_keyword(&mut self, keyword: &str) -> Result<()> {
        if self.accept_keyword(keyword) {
            Ok(())
        } else {
            Err(self.error(format!("keyword {keyword} expected")))
        }
    }

    fn expect(&mut self, expected: Token) -> Result<()> {
        let token = self.next()?;
        if token == expected {
            Ok(())
        } else {
            Err(self.error(format!("{expected:?} expected but was {token:?}")))
        }
    }

    fn int(&mut self) -> Result<u32> {
        match self.next()? {
            Token::Int(digits) => digits
                .parse::<i32>()
                .ok()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| self.error(format!("invalid integer {digits}"))),
            other => Err(self.error(format!("integer expected but was {other:?}"))),
        }
    }

    /// `(n)` if present.
    fn optional_parameter(&mut self) -> Result<Option<u32>> {
        if self.peek() != Some(&Token::BeginParameter) {
            return Ok(None);
        }
        self.position += 1;
        let value = self.int()?;
        self.expect(Token::EndParameter)?;
        Ok(Some(value))
    }

    /// `NOT NULL` → false; explicit or implicit `NULL` → true.
    fn nullability(&mut self) -> Result<bool> {
        if self.next_is_keyword("NOT")
            && matches!(self.tokens.get(self.position + 1), Some(Token::Keyword(k)) if k == "NULL")
        {
            self.position += 2;
            return Ok(false);
        }
        self.accept_keyword("NULL");
        Ok(true)
    }

    fn type_with_nullability(&mut self) -> Result<DataType> {
        let kind = self.type_by_keyword()?;
        let element = DataType {
            nullable: self.nullability()?,
            kind,
        };
        // Suffix notation: `INT ARRAY`, `INT MULTISET`.
        if self.accept_keyword("ARRAY") {
            return Ok(DataType {
                kind: TypeKind::Array(Box::new(element)),
                nullable: self.nullability()?,
            });
        }
        if self.accept_keyword("MULTISET") {
            return Ok(DataType {
                kind: TypeKind::Multiset(Box::new(element)),
                nullable: self.nullability()?,
            });
        }
        Ok(element)
    }

    fn length(&mut self, name: &str) -> Result<u32> {
        let length = self.optional_parameter()?.unwrap_or(1);
        if length < 1 {
            return Err(self.error(format!("{name} length must be at least 1")));
        }
        Ok(length)
    }

    fn precision(&mut self, name: &str, default: u32) -> Result<u32> {
        let precision = self.optional_parameter()?.unwrap_or(default);
        if precision > 9 {
            return Err(self.error(format!("{name} precision must be between 0 and 9")));
        }
        Ok(precision)
    }

    fn type_by_keyword(&mut self) -> Result<TypeKind> {
        let keyword = match self.next()? {
            Token::Keyword(keyword) => keyword,
            other => return Err(self.error(format!("type keyword expected but was {other:?}"))),
        };
        Ok(match keyword.as_str() {
            "CHAR" => TypeKind::Char(self.length("CHAR")?),
            "VARCHAR" => TypeKind::VarChar(self.length("VARCHAR")?),
            "STRING" => TypeKind::VarChar(MAX_LENGTH),
            "BOOLEAN" => TypeKind::Boolean,
            "BINARY" => TypeKind::Binary(self.length("BINARY")?),
            "VARBINARY" => TypeKind::VarBinary(self.length("VARBINARY")?),
            "BYTES" => TypeKind::VarBinary(MAX_LENGTH),
            "DECIMAL" | "NUMERIC" | "DEC" => self.decimal()?,
            "TINYINT" => TypeKind::TinyInt,
            "SMALLINT" => TypeKind::SmallInt,
            "INT" | "INTEGER" => TypeKind::Int,
            "BIGINT" => TypeKind::BigInt,
            "FLOAT" => TypeKind::Float,
            "DOUBLE" => {
                self.accept_keyword("PRECISION");
                TypeKind::Double
            }
            "DATE" => TypeKind::Date,
            "TIME" => {
                let precision = self.precision("TIME", 0)?;
                if self.accept_keyword("WITHOUT") {
                    self.time_zone_suffix()?;
                }
                TypeKind::Time(precision)
            }
            "TIMESTAMP" => {
                let precision = self.precision("TIMESTAMP", 6)?;
                if self.accept_keyword("WITHOUT") {
                    self.time_zone_suffix()?;
                    TypeKind::Timestamp(precision)
                } else if self.accept_keyword("WITH") {
                    self.expect_keyword("LOCAL")?;
                    self.time_zone_suffix()?;
                    TypeKind::LocalZonedTimestamp(precision)
                } else {
                    TypeKind::Timestamp(precision)
                }
            }
            "TIMESTAMP_LTZ" => TypeKind::LocalZonedTimestamp(self.precision("TIMESTAMP_LTZ", 6)?),
            "VARIANT" => TypeKind::Variant,
            "BLOB" => TypeKind::Blob,
            "GEOMETRY" | "GEOGRAPHY" | "VECTOR" => {
                return Err(Error::Unsupported(format!("data type {}", self.input)))
            }
            other => return Err(self.error(format!("unsupported type {other}"))),
        })
    }

    fn time_zone_suffix(&mut self) -> Result<()> {
        self.expect_keyword("TIME")?;
        self.expect_keyword("ZONE")
    }

    fn decimal(&mut self) -> Result<TypeKind> {
        let (mut precision, mut scale) = (10, 0);
        if self.peek() == Some(&Token::BeginParameter) {
            self.position += 1;
            precision = self.int()?;
            if self.peek() == Some(&Token::ListSeparator) {
                self.position += 1;
                scale = self.int()?;
            }
            self.expect(Token::EndParameter)?;
        }
        if !(1..=38).contains(&precision) {
            return Err(self.error("DECIMAL precision must be between 1 and 38"));
        }
        if scale > precision {
            return Err(self.error("DECIMAL scale must be between 0 and the precision"));
        }
        Ok(TypeKind::Decimal { precision, scale })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn t(kind: TypeKind) -> DataType {
        DataType::new(kind)
    }

    fn nn(kind: TypeKind) -> DataType {
        DataType::not_null(kind)
    }

    #[test]
    fn atomic_strings_follow_java() {
        let cases = [
            (nn(TypeKind::Int), "INT NOT NULL"),
            (
                t(TypeKind::Decimal {
                    precision: 10,
                    scale: 2,
                }),
                "DECIMAL(10, 2)",
            ),
            (t(TypeKind::VarChar(MAX_LENGTH)), "STRING"),
            (t(TypeKind::VarChar(20)), "VARCHAR(20)"),
            (t(TypeKind::Char(5)), "CHAR(5)"),
            (t(TypeKind::VarBinary(MAX_LENGTH)), "BYTES"),
            (t(TypeKind::VarBinary(8)), "VARBINARY(8)"),
            (nn(TypeKind::Binary(4)), "BINARY(4) NOT NULL"),
            (t(TypeKind::Time(0)), "TIME(0)"),
            (t(TypeKind::Timestamp(9)), "TIMESTAMP(9)"),
            (
                t(TypeKind::LocalZonedTimestamp(3)),
                "TIMESTAMP(3) WITH LOCAL TIME ZONE",
            ),
            (t(TypeKind::Variant), "VARIANT"),
            (nn(TypeKind::Blob), "BLOB NOT NULL"),
        ];
        for (data_type, text) in cases {
            assert_eq!(type_to_json(&data_type), json!(text));
            assert_eq!(type_from_json(&json!(text)).unwrap(), data_type, "{text}");
        }
    }

    #[test]
    fn atomic_parser_accepts_java_variants() {
        let cases = [
            ("TIMESTAMP_LTZ(6)", t(TypeKind::LocalZonedTimestamp(6))),
            ("TIMESTAMP_LTZ", t(TypeKind::LocalZonedTimestamp(6))),
            ("TIMESTAMP", t(TypeKind::Timestamp(6))),
            ("timestamp(3) without time zone", t(TypeKind::Timestamp(3))),
            (
                "TIMESTAMP WITH LOCAL TIME ZONE NOT NULL",
                nn(TypeKind::LocalZonedTimestamp(6)),
            ),
            ("TIME", t(TypeKind::Time(0))),
            (
                "DECIMAL",
                t(TypeKind::Decimal {
                    precision: 10,
                    scale: 0,
                }),
            ),
            (
                "NUMERIC(5)",
                t(TypeKind::Decimal {
                    precision: 5,
                    scale: 0,
                }),
            ),
            (
                "DEC(38,10)",
                t(TypeKind::Decimal {
                    precision: 38,
                    scale: 10,
                }),
            ),
            ("CHAR", t(TypeKind::Char(1))),
            ("VARCHAR", t(TypeKind::VarChar(1))),
            ("BINARY", t(TypeKind::Binary(1))),
            ("VARBINARY", t(TypeKind::VarBinary(1))),
            ("INTEGER NULL", t(TypeKind::Int)),
            ("DOUBLE PRECISION", t(TypeKind::Double)),
            ("int not null", nn(TypeKind::Int)),
            (
                "INT NOT NULL ARRAY NOT NULL",
                nn(TypeKind::Array(Box::new(nn(TypeKind::Int)))),
            ),
            (
                "STRING MULTISET",
                t(TypeKind::Multiset(Box::new(t(TypeKind::VarChar(
                    MAX_LENGTH,
                ))))),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_atomic_type(text).unwrap(), expected, "{text}");
        }
    }

    #[test]
    fn atomic_parser_rejects_garbage() {
        for text in [
            "",
            "INTT",
            "INT INT",
            "DECIMAL(39, 0)",
            "DECIMAL(5, 6)",
            "DECIMAL(0)",
            "VARCHAR(0)",
            "TIMESTAMP(10)",
            "TIME(12)",
            "CHAR(99999999999)",
            "DECIMAL(10, 2",
            "TIMESTAMP WITH TIME ZONE",
            "ARRAY<INT>",
            "NOT NULL",
        ] {
            assert!(
                matches!(parse_atomic_type(text), Err(Error::Corrupt { .. })),
                "{text} should be rejected"
            );
        }
        assert!(matches!(
            parse_atomic_type("GEOMETRY"),
            Err(Error::Unsupported(_))
        ));
    }

    #[test]
    fn nested_objects() {
        let data_type = t(TypeKind::Map(
            Box::new(nn(TypeKind::VarChar(MAX_LENGTH))),
            Box::new(nn(TypeKind::Array(Box::new(t(TypeKind::Row(vec![
                DataField::new(7, "x", t(TypeKind::Int)),
            ])))))),
        ));
        let expected = json!({
            "type": "MAP",
            "key": "STRING NOT NULL",
            "value": {
                "type": "ARRAY NOT NULL",
                "element": {"type": "ROW", "fields": [{"id": 7, "name": "x", "type": "INT"}]}
            }
        });
        assert_eq!(type_to_json(&data_type), expected);
        assert_eq!(type_from_json(&expected).unwrap(), data_type);
        assert_eq!(
            data_type.to_string(),
            "MAP<STRING NOT NULL, ARRAY<ROW<`x` INT>> NOT NULL>"
        );
    }

    #[test]
    fn pypaimon_nullable_member_is_ignored() {
        let json = json!({"type": "ARRAY NOT NULL", "element": "INT", "nullable": true});
        let parsed = type_from_json(&json).unwrap();
        assert_eq!(parsed, nn(TypeKind::Array(Box::new(t(TypeKind::Int)))));
        assert_eq!(
            type_to_json(&parsed),
            json!({"type": "ARRAY NOT NULL", "element": "INT"})
        );
    }

    #[test]
    fn field_members() {
        let mut field = DataField::new(3, "amount", nn(TypeKind::BigInt));
        field.description = Some("it's".to_string());
        field.default_value = Some("0".to_string());
        let json = field_to_json(&field);
        assert_eq!(
            json,
            json!({"id": 3, "name": "amount", "type": "BIGINT NOT NULL",
                   "description": "it's", "defaultValue": "0"})
        );
        assert_eq!(field_from_json(&json).unwrap(), field);
        assert_eq!(
            field.to_string(),
            "`amount` BIGINT NOT NULL COMMENT 'it''s' DEFAULT 0"
        );
        let null_description = json!({"id": 1, "name": "a", "type": "INT", "description": null});
        assert_eq!(
            field_from_json(&null_description).unwrap().description,
            None
        );
    }

    #[test]
    fn field_ids() {
        // Ids are required on fields ...
        assert!(field_from_json(&json!({"name": "a", "type": "INT"})).is_err());
        assert!(field_from_json(&json!({"id": 1, "name": "a", "type": {
            "type": "ROW", "fields": [{"name": "b", "type": "INT"}]}}))
        .is_err());
        // ... but generated inside a bare type, as Java does.
        let row = type_from_json(&json!({"type": "ROW", "fields": [
            {"name": "a", "type": "INT"},
            {"name": "b", "type": {"type": "ROW", "fields": [{"name": "c", "type": "INT"}]}}
        ]}))
        .unwrap();
        let TypeKind::Row(fields) = &row.kind else {
            panic!("not a row")
        };
        assert_eq!((fields[0].id, fields[1].id), (0, 1));
        let TypeKind::Row(inner) = &fields[1].data_type.kind else {
            panic!("not a row")
        };
        assert_eq!(inner[0].id, 2);
        let partial = json!({"type": "ROW", "fields": [
            {"name": "a", "type": "INT"}, {"id": 5, "name": "b", "type": "INT"}]});
        assert!(type_from_json(&partial).is_err());
    }

    #[test]
    fn malformed_json_is_corrupt() {
        for json in [
            json!(5),
            json!(null),
            json!({"element": "INT"}),
            json!({"type": "ARRAY"}),
            json!({"type": "ROW", "fields": {}}),
            json!({"type": "WHAT", "element": "INT"}),
            json!({"type": "MAP", "key": "INT"}),
        ] {
            assert!(
                matches!(type_from_json(&json), Err(Error::Corrupt { .. })),
                "{json}"
            );
        }
        let bad_id = json!({"id": 4294967296i64, "name": "a", "type": "INT"});
        assert!(field_from_json(&bad_id).is_err());
    }

    fn arb_type() -> impl Strategy<Value = DataType> {
        let leaf = prop_oneof![
            Just(TypeKind::Boolean),
            Just(TypeKind::TinyInt),
            Just(TypeKind::SmallInt),
            Just(TypeKind::Int),
            Just(TypeKind::BigInt),
            Just(TypeKind::Float),
            Just(TypeKind::Double),
            (1u32..=38)
                .prop_flat_map(|p| (Just(p), 0..=p))
                .prop_map(|(precision, scale)| TypeKind::Decimal { precision, scale }),
            prop_oneof![1u32..100, Just(MAX_LENGTH)].prop_map(TypeKind::Char),
            prop_oneof![1u32..100, Just(MAX_LENGTH)].prop_map(TypeKind::VarChar),
            (1u32..100).prop_map(TypeKind::Binary),
            prop_oneof![1u32..100, Just(MAX_LENGTH)].prop_map(TypeKind::VarBinary),
            Just(TypeKind::Date),
            (0u32..=9).prop_map(TypeKind::Time),
            (0u32..=9).prop_map(TypeKind::Timestamp),
            (0u32..=9).prop_map(TypeKind::LocalZonedTimestamp),
            Just(TypeKind::Variant),
            Just(TypeKind::Blob),
        ];
        let leaf = (leaf, any::<bool>()).prop_map(|(kind, nullable)| DataType { nullable, kind });
        leaf.prop_recursive(4, 24, 4, |inner| {
            let kind = prop_oneof![
                inner.clone().prop_map(|e| TypeKind::Array(Box::new(e))),
                inner.clone().prop_map(|e| TypeKind::Multiset(Box::new(e))),
                (inner.clone(), inner.clone())
                    .prop_map(|(k, v)| TypeKind::Map(Box::new(k), Box::new(v))),
                prop::collection::vec((inner, "[a-z_`' ]{1,6}", any::<i32>()), 0..4).prop_map(
                    |fields| {
                        TypeKind::Row(
                            fields
                                .into_iter()
                                .map(|(data_type, name, id)| DataField::new(id, name, data_type))
                                .collect(),
                        )
                    }
                ),
            ];
            (kind, any::<bool>()).prop_map(|(kind, nullable)| DataType { nullable, kind })
        })
    }

    proptest! {
        #[test]
        fn json_round_trip(data_type in arb_type()) {
            let json = type_to_json(&data_type);
            prop_assert_eq!(type_from_json(&json).unwrap(), data_type.clone());
            if let Value::String(text) = json {
                prop_assert_eq!(parse_atomic_type(&text).unwrap(), data_type);
            }
        }
    }
}
