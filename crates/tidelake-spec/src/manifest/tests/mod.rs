//! Tests of the manifest codecs: every fixture file written by pypaimon 2.1, round trips
//! through our writer, property tests, by-name schema resolution, corrupted input, and a
//! release-mode throughput check (`--ignored`).
//!
//! An independent decoder, apache-avro's generic `Reader`, is used as the oracle: fixture
//! files decoded by us must agree with it field by field, and so must files we write.

mod corrupt;
mod fixtures;
mod perf;
mod resolution;
mod roundtrip;

use std::path::PathBuf;

use apache_avro::types::Value;

use super::record::{AvroRecord, AvroValue, Field, Ty};

/// The fixture warehouse database (`tests/fixtures/paimon-v1` of the repository).
pub(super) fn fixture_db() -> PathBuf {
    crate::schema::fixtures::root().join("warehouse/fx.db")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    List,
    Manifest,
    Index,
}

pub(super) struct FixtureFile {
    pub(super) table: String,
    pub(super) name: String,
    pub(super) kind: Kind,
    pub(super) bytes: Vec<u8>,
}

/// Every file under `fx.db/*/manifest/`, sorted by table and name.
pub(super) fn fixture_files() -> Vec<FixtureFile> {
    let db = fixture_db();
    let mut out = Vec::new();
    let tables = std::fs::read_dir(&db)
        .unwrap_or_else(|e| panic!("fixtures missing at {}: {e}", db.display()));
    for table in tables {
        let table = table.expect("read fx.db entry");
        let dir = table.path().join("manifest");
        let Ok(files) = std::fs::read_dir(&dir) else {
            continue;
        };
        for f in files {
            let f = f.expect("read manifest dir entry");
            let name = f.file_name().to_string_lossy().into_owned();
            let kind = if name.starts_with("manifest-list-") {
                Kind::List
            } else if name.starts_with("index-manifest-") {
                Kind::Index
            } else {
                Kind::Manifest
            };
            let bytes = std::fs::read(f.path()).expect("read fixture file");
            out.push(FixtureFile {
                table: table.file_name().to_string_lossy().into_owned(),
                name,
                kind,
                bytes,
            });
        }
    }
    out.sort_by(|a, b| (&a.table, &a.name).cmp(&(&b.table, &b.name)));
    out
}

/// Asserts that apache-avro decodes `bytes` to the same records as `ours`, field by field.
pub(super) fn assert_same_as_apache<T: AvroRecord>(ours: &[T], bytes: &[u8], what: &str) {
    let reader =
        apache_avro::Reader::new(bytes).unwrap_or_else(|e| panic!("{what}: apache-avro: {e}"));
    let theirs: Vec<Value> = reader
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{what}: apache-avro: {e}"));
    assert_eq!(ours.len(), theirs.len(), "{what}: record count");
    for (i, (o, t)) in ours.iter().zip(&theirs).enumerate() {
        same_record(T::FIELDS, &o.to_fields(), t, &format!("{what}[{i}]"));
    }
}

fn unwrap_union(v: &Value) -> &Value {
    match v {
        Value::Union(_, inner) => inner,
        other => other,
    }
}

fn same_record(fields: &[Field], values: &[AvroValue], theirs: &Value, path: &str) {
    let Value::Record(theirs) = unwrap_union(theirs) else {
        panic!("{path}: not a record: {theirs:?}")
    };
    for (f, v) in fields.iter().zip(values) {
        let at = format!("{path}.{}", f.name);
        match theirs.iter().find(|(n, _)| n == f.name) {
            Some((_, t)) => same_value(&f.ty, v, t, &at),
            None => assert_eq!(
                *v,
                AvroValue::Null,
                "{at}: absent from the file but not null"
            ),
        }
    }
}

fn same_value(ty: &Ty, v: &AvroValue, theirs: &Value, path: &str) {
    let t = unwrap_union(theirs);
    match (ty, v, t) {
        (_, AvroValue::Null, Value::Null) => {}
        (_, AvroValue::Int(a), Value::Int(b)) => assert_eq!(a, b, "{path}"),
        (_, AvroValue::Long(a), Value::Long(b) | Value::TimestampMillis(b)) => {
            assert_eq!(a, b, "{path}")
        }
        (_, AvroValue::String(a), Value::String(b)) => assert_eq!(a, b, "{path}"),
        (_, AvroValue::Bytes(a), Value::Bytes(b)) => assert_eq!(a, b, "{path}"),
        (Ty::Array { item, .. }, AvroValue::Array(a), Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{path}: array length");
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                same_value(item, x, y, &format!("{path}[{i}]"));
            }
        }
        (Ty::Record(fields), AvroValue::Record(a), _) => same_record(fields, a, t, path),
        _ => panic!("{path}: ours {v:?}, apache-avro {t:?}"),
    }
}
