//! Hive column types and Paimon types, both ways (Java `HiveTypeUtils`, with Hive 3's type
//! infos): [`hive_type`] names a Paimon type as the metastore keeps it, [`paimon_columns`] reads
//! the columns of a Hive table (a migration's source) as Paimon fields.
//!
//! Invariants: a Hive type string is parsed as Hive's `TypeInfoUtils` reads it (names are
//! case-insensitive; `decimal` alone is `decimal(10,0)`); types Paimon cannot hold (`interval`,
//! `uniontype`, `void`) are [`Error::Unsupported`] naming the column. Field ids are Java
//! `Schema.Builder`'s: each column's id, then the ids of the fields nested in it, from 0.

use tidelake_spec::types::{DataField, DataType, TypeKind, MAX_LENGTH};

use crate::error::{Error, Result};

/// `HiveChar.MAX_CHAR_LENGTH`, `HiveVarchar.MAX_VARCHAR_LENGTH`.
const MAX_CHAR_LENGTH: u32 = 255;
const MAX_VARCHAR_LENGTH: u32 = 65535;
/// Hive's `decimal` without arguments (`HiveDecimal.USER_DEFAULT_PRECISION` / `_SCALE`).
const DEFAULT_DECIMAL: (u32, u32) = (10, 0);
/// Precision of Hive's `timestamp` in Paimon (Java `DataTypes.TIMESTAMP_MILLIS`) and of its
/// `timestamp with local time zone` (`DataTypes.TIMESTAMP_WITH_LOCAL_TIME_ZONE`).
const TIMESTAMP_PRECISION: u32 = 3;
const LOCAL_TIMESTAMP_PRECISION: u32 = 6;

/// The Hive type name of a Paimon type (Java `HiveTypeUtils.toTypeInfo(t).getTypeName()` with
/// Hive 3's type infos).
pub(crate) fn hive_type(data_type: &DataType) -> Result<String> {
    Ok(match &data_type.kind {
        TypeKind::Boolean => "boolean".into(),
        TypeKind::TinyInt => "tinyint".into(),
        TypeKind::SmallInt => "smallint".into(),
        TypeKind::Int => "int".into(),
        TypeKind::BigInt => "bigint".into(),
        TypeKind::Float => "float".into(),
        TypeKind::Double => "double".into(),
        TypeKind::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
        TypeKind::Char(n) if *n <= MAX_CHAR_LENGTH => format!("char({n})"),
        TypeKind::VarChar(n) if *n <= MAX_VARCHAR_LENGTH => format!("varchar({n})"),
        TypeKind::Char(_) | TypeKind::VarChar(_) | TypeKind::Time(_) => "string".into(),
        TypeKind::Binary(_) | TypeKind::VarBinary(_) => "binary".into(),
        TypeKind::Date => "date".into(),
        TypeKind::Timestamp(_) => "timestamp".into(),
        TypeKind::LocalZonedTimestamp(_) => "timestamp with local time zone".into(),
        TypeKind::Array(element) => format!("array<{}>", hive_type(element)?),
        TypeKind::Multiset(element) => format!("map<{},int>", hive_type(element)?),
        TypeKind::Map(key, value) => format!("map<{},{}>", hive_type(key)?, hive_type(value)?),
        TypeKind::Row(fields) => {
            let fields = fields
                .iter()
                .map(|f| Ok(format!("{}:{}", f.name, hive_type(&f.data_type)?)))
                .collect::<Result<Vec<_>>>()?;
            format!("struct<{}>", fields.join(","))
        }
        TypeKind::Variant => "struct<value:binary,metadata:binary>".into(),
        TypeKind::Blob => {
            return Err(Error::Unsupported(
                "a BLOB column has no Hive type (Paimon's Hive catalog refuses it too)".into(),
            ))
        }
    })
}

/// A Hive column: name, type string, comment.
pub(crate) struct HiveColumn {
    pub name: String,
    pub type_name: String,
    pub comment: Option<String>,
}

/// The Paimon fields of Hive columns (Java `HiveMigrator.from`: `HiveTypeUtils.toPaimonType`
/// of each type, nullable, with its comment), with Java's ids.
pub(crate) fn paimon_columns(columns: &[HiveColumn]) -> Result<Vec<DataField>> {
    let mut next_id = 0;
    columns
        .iter()
        .map(|c| {
            let id = next_id;
            next_id += 1;
            let data_type = Parser::new(&c.type_name)
                .whole(&mut next_id)
                .map_err(|why| {
                    Error::Unsupported(format!(
                        "Hive column '{}' of type '{}': {why}",
                        c.name, c.type_name
                    ))
                })?;
            let mut field = DataField::new(id, c.name.clone(), data_type);
            field.description = c.comment.clone();
            Ok(field)
        })
        .collect()
}

/// A recursive-descent reader of one Hive type string (Hive's `TypeInfoParser` grammar:
/// `name`, `name(n[,n])`, `array<t>`, `map<k,v>`, `struct<f:t,...>`).
struct Parser<'a> {
    text: &'a str,
    at: usize,
}

type Parsed<T> = std::result::Result<T, String>;

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Parser<'a> {
        Parser { text, at: 0 }
    }

    /// The whole string as one type; nested row fields take ids from `next_id`.
    fn whole(mut self, next_id: &mut i32) -> Parsed<DataType> {
        let t = self.data_type(next_id)?;
        self.skip_spaces();
        match self.rest() {
            "" => Ok(t),
            rest => Err(format!("unexpected '{rest}'")),
        }
    }

    fn rest(&self) -> &'a str {
        &self.text[self.at..]
    }

    fn skip_spaces(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }

    /// A name: letters, digits, `_` and `$` (Hive's identifier characters).
    fn word(&mut self) -> Parsed<&'a str> {
        self.skip_spaces();
        let rest = self.rest();
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
            .unwrap_or(rest.len());
        if len == 0 {
            return Err(match rest.chars().next() {
                Some(c) => format!("unexpected '{c}'"),
                None => "unexpected end".into(),
            });
        }
        self.at += len;
        Ok(&rest[..len])
    }

    /// Consume `symbol` if it comes next.
    fn eat(&mut self, symbol: char) -> bool {
        self.skip_spaces();
        let found = self.rest().starts_with(symbol);
        if found {
            self.at += symbol.len_utf8();
        }
        found
    }

    fn expect(&mut self, symbol: char) -> Parsed<()> {
        if self.eat(symbol) {
            Ok(())
        } else {
            Err(format!("expected '{symbol}' at '{}'", self.rest()))
        }
    }

    /// Consume the words of `phrase` (case-insensitive) if they come next.
    fn eat_words(&mut self, phrase: &[&str]) -> bool {
        let start = self.at;
        for expected in phrase {
            match self.word() {
                Ok(w) if w.eq_ignore_ascii_case(expected) => {}
                _ => {
                    self.at = start;
                    return false;
                }
            }
        }
        true
    }

    /// `(n)` or `(n, m)`; `None` when no parenthesis follows.
    fn arguments(&mut self) -> Parsed<Option<Vec<u32>>> {
        if !self.eat('(') {
            return Ok(None);
        }
        let mut values = Vec::new();
        loop {
            let word = self.word()?;
            values.push(
                word.parse::<u32>()
                    .map_err(|_| format!("'{word}' is not a length"))?,
            );
            if self.eat(')') {
                return Ok(Some(values));
            }
            self.expect(',')?;
        }
    }

    fn length(&mut self, name: &str) -> Parsed<u32> {
        match self.arguments()?.as_deref() {
            Some([n]) => Ok(*n),
            _ => Err(format!("{name} needs one length")),
        }
    }

    fn data_type(&mut self, next_id: &mut i32) -> Parsed<DataType> {
        let name = self.word()?.to_ascii_lowercase();
        let kind = match name.as_str() {
            "boolean" => TypeKind::Boolean,
            "tinyint" => TypeKind::TinyInt,
            "smallint" => TypeKind::SmallInt,
            "int" | "integer" => TypeKind::Int,
            "bigint" => TypeKind::BigInt,
            "float" => TypeKind::Float,
            "double" => {
                self.eat_words(&["precision"]);
                TypeKind::Double
            }
            "decimal" | "numeric" => {
                let (precision, scale) = match self.arguments()?.as_deref() {
                    None => DEFAULT_DECIMAL,
                    Some([p]) => (*p, 0),
                    Some([p, s]) => (*p, *s),
                    Some(_) => return Err("decimal takes a precision and a scale".into()),
                };
                TypeKind::Decimal { precision, scale }
            }
            "char" => TypeKind::Char(self.length("char")?),
            "varchar" => TypeKind::VarChar(self.length("varchar")?),
            "string" => TypeKind::VarChar(MAX_LENGTH),
            "binary" => TypeKind::VarBinary(MAX_LENGTH),
            "date" => TypeKind::Date,
            "timestamp" if self.eat_words(&["with", "local", "time", "zone"]) => {
                TypeKind::LocalZonedTimestamp(LOCAL_TIMESTAMP_PRECISION)
            }
            "timestamp" => TypeKind::Timestamp(TIMESTAMP_PRECISION),
            "timestamplocaltz" => TypeKind::LocalZonedTimestamp(LOCAL_TIMESTAMP_PRECISION),
            "array" => {
                self.expect('<')?;
                let element = self.data_type(next_id)?;
                self.expect('>')?;
                TypeKind::Array(Box::new(element))
            }
            "map" => {
                self.expect('<')?;
                let key = self.data_type(next_id)?;
                self.expect(',')?;
                let value = self.data_type(next_id)?;
                self.expect('>')?;
                TypeKind::Map(Box::new(key), Box::new(value))
            }
            "struct" => {
                self.expect('<')?;
                let mut fields = Vec::new();
                if !self.eat('>') {
                    loop {
                        let name = self.word()?.to_string();
                        self.expect(':')?;
                        let id = *next_id;
                        *next_id += 1;
                        fields.push(DataField::new(id, name, self.data_type(next_id)?));
                        if self.eat('>') {
                            break;
                        }
                        self.expect(',')?;
                    }
                }
                TypeKind::Row(fields)
            }
            other => return Err(format!("Paimon has no type for Hive's '{other}'")),
        };
        Ok(DataType::new(kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(kind: TypeKind) -> DataType {
        DataType::new(kind)
    }

    #[test]
    fn paimon_types_have_hive_3_names() {
        let cases = [
            (
                TypeKind::Decimal {
                    precision: 10,
                    scale: 2,
                },
                "decimal(10,2)",
            ),
            (TypeKind::Char(255), "char(255)"),
            (TypeKind::Char(256), "string"),
            (TypeKind::VarChar(u32::MAX >> 1), "string"),
            (TypeKind::VarChar(10), "varchar(10)"),
            (TypeKind::VarBinary(7), "binary"),
            (TypeKind::Time(3), "string"),
            (TypeKind::Timestamp(9), "timestamp"),
            (
                TypeKind::LocalZonedTimestamp(3),
                "timestamp with local time zone",
            ),
            (
                TypeKind::Multiset(Box::new(t(TypeKind::Int))),
                "map<int,int>",
            ),
            (
                TypeKind::Map(
                    Box::new(t(TypeKind::VarChar(5))),
                    Box::new(t(TypeKind::Array(Box::new(t(TypeKind::BigInt))))),
                ),
                "map<varchar(5),array<bigint>>",
            ),
            (
                TypeKind::Row(vec![
                    DataField {
                        id: 1,
                        name: "a".into(),
                        data_type: t(TypeKind::TinyInt),
                        description: None,
                        default_value: None,
                    },
                    DataField {
                        id: 2,
                        name: "b".into(),
                        data_type: t(TypeKind::Date),
                        description: None,
                        default_value: None,
                    },
                ]),
                "struct<a:tinyint,b:date>",
            ),
            (TypeKind::Variant, "struct<value:binary,metadata:binary>"),
        ];
        for (kind, name) in cases {
            assert_eq!(hive_type(&t(kind.clone())).unwrap(), name, "{kind:?}");
        }
        let e = hive_type(&t(TypeKind::Blob)).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Unsupported);
    }

    fn column(name: &str, type_name: &str) -> HiveColumn {
        HiveColumn {
            name: name.into(),
            type_name: type_name.into(),
            comment: None,
        }
    }

    #[test]
    fn hive_types_read_as_java_reads_them() {
        let cases = [
            ("INT", TypeKind::Int),
            ("string", TypeKind::VarChar(MAX_LENGTH)),
            ("varchar(12)", TypeKind::VarChar(12)),
            ("char( 3 )", TypeKind::Char(3)),
            (
                "decimal",
                TypeKind::Decimal {
                    precision: 10,
                    scale: 0,
                },
            ),
            (
                "decimal(7)",
                TypeKind::Decimal {
                    precision: 7,
                    scale: 0,
                },
            ),
            (
                "decimal(20,4)",
                TypeKind::Decimal {
                    precision: 20,
                    scale: 4,
                },
            ),
            ("binary", TypeKind::VarBinary(MAX_LENGTH)),
            ("timestamp", TypeKind::Timestamp(3)),
            (
                "timestamp with local time zone",
                TypeKind::LocalZonedTimestamp(6),
            ),
            ("double precision", TypeKind::Double),
        ];
        for (name, kind) in cases {
            let fields = paimon_columns(&[column("c", name)]).unwrap();
            assert_eq!(fields[0].data_type, t(kind), "{name}");
        }
        let fields = paimon_columns(&[
            column("a", "struct<x:int,y:array<struct<z:string>>>"),
            column("b", "map<string,bigint>"),
        ])
        .unwrap();
        assert_eq!(fields[0].id, 0);
        let TypeKind::Row(nested) = &fields[0].data_type.kind else {
            panic!("{:?}", fields[0]);
        };
        assert_eq!((nested[0].id, nested[1].id), (1, 2));
        let TypeKind::Array(element) = &nested[1].data_type.kind else {
            panic!("{nested:?}");
        };
        let TypeKind::Row(inner) = &element.kind else {
            panic!("{element:?}");
        };
        assert_eq!((inner[0].id, inner[0].name.as_str()), (3, "z"));
        assert_eq!(fields[1].id, 4);
        // the round trip through the metastore's names
        for f in &fields {
            let name = hive_type(&f.data_type).unwrap();
            let back = paimon_columns(&[column("c", &name)]).unwrap();
            assert_eq!(hive_type(&back[0].data_type).unwrap(), name);
        }
        for bad in [
            "uniontype<int,string>",
            "interval_day_time",
            "array<int",
            "int x",
            "varchar",
        ] {
            let e = paimon_columns(&[column("bad", bad)]).unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::Unsupported, "{bad}");
            assert!(e.to_string().contains("'bad'"), "{e}");
        }
    }
}
