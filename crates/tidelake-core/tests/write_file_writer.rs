//! Rolling data-file writer: files written for every type read back identically with
//! `read_data_file`, and their `DataFileMeta` (keys, stats, sequence numbers, sizes, names)
//! describes them truthfully.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, Int8Array, RecordBatch};
use futures::TryStreamExt;
use parquet::file::reader::{FileReader, SerializedFileReader};
use proptest::prelude::*;
use tidelake_core::api::Error;
use tidelake_core::datum_arrow::{compare_datums, datum_at, datums_to_array};
use tidelake_core::io::env::{Env, ManualClock, SequentialIds};
use tidelake_core::io::FileIO;
use tidelake_core::read::data_file::{output_schema, read_data_file, FileFormat, SystemColumns};
use tidelake_core::write::file_writer::{FileLayout, RollingWriter, WriterConfig};
use tidelake_spec::binary_row::decode_framed;
use tidelake_spec::datum::Datum;
use tidelake_spec::manifest::{DataFileMeta, FileSource, SimpleStats, EMPTY_ROW};
use tidelake_spec::options::Options;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::{DataField, DataType, TypeKind, MAX_LENGTH};

fn t(kind: TypeKind) -> DataType {
    DataType::new(kind)
}

fn nn(kind: TypeKind) -> DataType {
    DataType::not_null(kind)
}

fn string() -> DataType {
    t(TypeKind::VarChar(MAX_LENGTH))
}

/// Every column type tidelake writes, nested ones included.
fn all_type_fields() -> Vec<DataField> {
    let kinds: Vec<(&str, DataType)> = vec![
        ("id", nn(TypeKind::BigInt)),
        ("b", t(TypeKind::Boolean)),
        ("i8", t(TypeKind::TinyInt)),
        ("i16", t(TypeKind::SmallInt)),
        ("i32", t(TypeKind::Int)),
        ("f32", t(TypeKind::Float)),
        ("f64", t(TypeKind::Double)),
        (
            "dec5",
            t(TypeKind::Decimal {
                precision: 5,
                scale: 2,
            }),
        ),
        (
            "dec18",
            t(TypeKind::Decimal {
                precision: 18,
                scale: 4,
            }),
        ),
        (
            "dec38",
            t(TypeKind::Decimal {
                precision: 38,
                scale: 10,
            }),
        ),
        ("s", string()),
        ("c", t(TypeKind::Char(4))),
        ("vb", t(TypeKind::VarBinary(MAX_LENGTH))),
        ("bn", t(TypeKind::Binary(3))),
        ("dt", t(TypeKind::Date)),
        ("tm", t(TypeKind::Time(3))),
        ("ts0", t(TypeKind::Timestamp(0))),
        ("ts3", t(TypeKind::Timestamp(3))),
        ("ts6", t(TypeKind::Timestamp(6))),
        ("ts9", t(TypeKind::Timestamp(9))),
        ("ltz3", t(TypeKind::LocalZonedTimestamp(3))),
        ("ltz9", t(TypeKind::LocalZonedTimestamp(9))),
        ("arr", t(TypeKind::Array(Box::new(t(TypeKind::Int))))),
        (
            "arr_nn",
            t(TypeKind::Array(Box::new(nn(TypeKind::VarChar(MAX_LENGTH))))),
        ),
        (
            "mp",
            t(TypeKind::Map(
                Box::new(nn(TypeKind::VarChar(MAX_LENGTH))),
                Box::new(t(TypeKind::BigInt)),
            )),
        ),
        ("ms", t(TypeKind::Multiset(Box::new(string())))),
    ];
    let mut fields: Vec<DataField> = kinds
        .into_iter()
        .enumerate()
        .map(|(i, (name, ty))| DataField::new(i as i32, name, ty))
        .collect();
    let row = t(TypeKind::Row(vec![
        DataField::new(100, "x", nn(TypeKind::Int)),
        DataField::new(101, "y", string()),
        DataField::new(102, "z", t(TypeKind::Array(Box::new(t(TypeKind::Double))))),
    ]));
    fields.push(DataField::new(50, "row", row));
    let deep = t(TypeKind::Array(Box::new(t(TypeKind::Map(
        Box::new(nn(TypeKind::VarChar(MAX_LENGTH))),
        Box::new(t(TypeKind::Array(Box::new(nn(TypeKind::Int))))),
    )))));
    fields.push(DataField::new(51, "deep", deep));
    fields
}

fn schema(
    fields: Vec<DataField>,
    primary_keys: &[&str],
    options: &[(&str, &str)],
) -> Arc<TableSchema> {
    let mut opts = Options::new();
    for (k, v) in options {
        opts.set(*k, *v);
    }
    Arc::new(
        TableSchema::new(
            0,
            fields,
            Vec::new(),
            primary_keys.iter().map(|s| s.to_string()).collect(),
            opts,
        )
        .unwrap(),
    )
}

fn ts(millis: i64, nanos: i32) -> Datum {
    Datum::Timestamp { millis, nanos }
}

fn s(v: &str) -> Datum {
    Datum::String(v.to_string())
}

/// Hand-picked rows: extremes, nulls, NaN, long and unicode strings, nested values.
fn sample_rows() -> Vec<Vec<Datum>> {
    let long = "a string much longer than sixteen characters, with ünïcödé ✓".to_string();
    vec![
        vec![
            Datum::BigInt(i64::MIN),
            Datum::Boolean(false),
            Datum::TinyInt(i8::MIN),
            Datum::SmallInt(i16::MIN),
            Datum::Int(i32::MIN),
            Datum::Float(f32::NEG_INFINITY),
            Datum::Double(-0.0),
            Datum::Decimal(-99_999),
            Datum::Decimal(-999_999_999_999_999_999),
            Datum::Decimal(-(10i128.pow(38) - 1)),
            s(""),
            s("abcd"),
            Datum::Bytes(vec![]),
            Datum::Bytes(vec![0, 0, 0]),
            Datum::Date(-719_162),
            Datum::Time(0),
            ts(-62_135_596_800_000, 0),
            ts(-1, 0),
            ts(-1, 999_000),
            ts(-1, 999_999),
            ts(0, 0),
            ts(1, 1),
            Datum::Array(vec![]),
            Datum::Array(vec![s("x")]),
            Datum::Map(vec![]),
            Datum::Map(vec![(s("k"), Datum::Int(2))]),
            Datum::Row(vec![Datum::Int(1), Datum::Null, Datum::Null]),
            Datum::Array(vec![Datum::Map(vec![(s("k"), Datum::Array(vec![Datum::Int(1), Datum::Int(2)]))])]),
        ],
        vec![
            Datum::BigInt(0),
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
            Datum::Null,
        ],
        vec![
            Datum::BigInt(7),
            Datum::Boolean(true),
            Datum::TinyInt(5),
            Datum::SmallInt(-5),
            Datum::Int(42),
            Datum::Float(f32::NAN),
            Datum::Double(2.5),
            Datum::Decimal(125),
            Datum::Decimal(12_345_678),
            Datum::Decimal(10i128.pow(30)),
            s(&long),
            s("日本語"),
            Datum::Bytes(vec![0xFF; 40]),
            Datum::Bytes(vec![1, 2, 3]),
            Datum::Date(19_857),
            Datum::Time(3_723_000),
            ts(1_704_067_200_000, 0),
            ts(1_704_067_200_123, 0),
            ts(1_704_067_200_123, 456_000),
            ts(1_704_067_200_123, 456_789),
            ts(1_704_067_200_999, 0),
            ts(1_704_067_200_999, 999_999),
            Datum::Array(vec![Datum::Int(1), Datum::Null, Datum::Int(3)]),
            Datum::Array(vec![s("a"), s("")]),
            Datum::Map(vec![(s("a"), Datum::BigInt(1)), (s("b"), Datum::Null)]),
            Datum::Map(vec![(s("m"), Datum::Int(1)), (s("n"), Datum::Int(3))]),
            Datum::Row(vec![
                Datum::Int(-1),
                s("why"),
                Datum::Array(vec![Datum::Double(f64::NAN), Datum::Null]),
            ]),
            Datum::Array(vec![]),
        ],
        vec![
            Datum::BigInt(i64::MAX),
            Datum::Boolean(true),
            Datum::TinyInt(i8::MAX),
            Datum::SmallInt(i16::MAX),
            Datum::Int(i32::MAX),
            Datum::Float(f32::MAX),
            Datum::Double(f64::INFINITY),
            Datum::Decimal(99_999),
            Datum::Decimal(999_999_999_999_999_999),
            Datum::Decimal(10i128.pow(38) - 1),
            s("\u{10FFFF}\u{10FFFF}\u{10FFFF}\u{10FFFF}\u{10FFFF}\u{10FFFF}\u{10FFFF}\u{10FFFF}\u{10FFFF}\u{10FFFF}\u{10FFFF}\u{10FFFF}\u{10FFFF}\u{10FFFF}\u{10FFFF}\u{10FFFF}\u{10FFFF}"),
            s("zz"),
            Datum::Bytes(b"abc".to_vec()),
            Datum::Bytes(vec![0xFF, 0xFF, 0xFF]),
            Datum::Date(2_932_896),
            Datum::Time(86_399_999),
            ts(253_402_300_799_000, 0),
            ts(253_402_300_799_999, 0),
            ts(253_402_300_799_999, 999_000),
            ts(9_223_372_036_854, 775_807),
            ts(253_402_300_799_999, 0),
            ts(9_223_372_036_854, 775_807),
            Datum::Array(vec![Datum::Null]),
            Datum::Array(vec![]),
            Datum::Map(vec![(s(""), Datum::BigInt(i64::MAX))]),
            Datum::Map(vec![]),
            Datum::Null,
            Datum::Array(vec![
                Datum::Null,
                Datum::Map(vec![(s("a"), Datum::Array(vec![])), (s("b"), Datum::Null)]),
            ]),
        ],
    ]
}

fn columns_of(rows: &[Vec<Datum>], fields: &[DataField]) -> Vec<ArrayRef> {
    fields
        .iter()
        .enumerate()
        .map(|(c, f)| {
            let values: Vec<Datum> = rows.iter().map(|r| r[c].clone()).collect();
            datums_to_array(&values, &f.data_type).unwrap()
        })
        .collect()
}

fn kv_batch(rows: &[Vec<Datum>], fields: &[DataField], seqs: &[i64], kinds: &[i8]) -> RecordBatch {
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(seqs.to_vec())),
        Arc::new(Int8Array::from(kinds.to_vec())),
    ];
    columns.extend(columns_of(rows, fields));
    RecordBatch::try_new(
        output_schema(fields, SystemColumns::KeyValue).unwrap(),
        columns,
    )
    .unwrap()
}

fn append_batch(rows: &[Vec<Datum>], fields: &[DataField]) -> RecordBatch {
    RecordBatch::try_new(
        output_schema(fields, SystemColumns::None).unwrap(),
        columns_of(rows, fields),
    )
    .unwrap()
}

struct Table {
    _dir: tempfile::TempDir,
    io: FileIO,
}

fn table() -> Table {
    let dir = tempfile::tempdir().unwrap();
    let io = FileIO::open(dir.path().to_str().unwrap()).unwrap();
    Table { _dir: dir, io }
}

fn writer(io: &FileIO, schema: &Arc<TableSchema>, layout: FileLayout, level: i32) -> RollingWriter {
    let config = WriterConfig::from_options(&schema.options, layout, level, false).unwrap();
    RollingWriter::new(
        io.clone(),
        "bucket-0".into(),
        schema.clone(),
        layout,
        level,
        FileSource::Append,
        "data-".into(),
        config,
    )
    .unwrap()
}

async fn read_back(
    io: &FileIO,
    meta: &DataFileMeta,
    fields: &[DataField],
    layout: FileLayout,
) -> RecordBatch {
    let system = match layout {
        FileLayout::KeyValue => SystemColumns::KeyValue,
        FileLayout::Append => SystemColumns::None,
    };
    let path = format!("bucket-0/{}", meta.file_name);
    let stream = read_data_file(
        io,
        &path,
        FileFormat::Parquet,
        fields,
        fields,
        system,
        None,
        1000,
        None,
    )
    .await
    .unwrap();
    let batches: Vec<RecordBatch> = stream.try_collect().await.unwrap();
    let schema = output_schema(fields, system).unwrap();
    arrow_select::concat::concat_batches(&schema, &batches).unwrap()
}

fn assert_batches_eq(actual: &RecordBatch, expected: &RecordBatch) {
    assert_eq!(actual.schema(), expected.schema());
    assert_eq!(actual.num_rows(), expected.num_rows());
    for (i, field) in expected.schema().fields().iter().enumerate() {
        assert_eq!(
            actual.column(i).to_data(),
            expected.column(i).to_data(),
            "column {}",
            field.name()
        );
    }
}

/// Decoded stats of the columns named by `value_stats_cols` (all fields when null).
fn stats_by_column(
    meta: &DataFileMeta,
    fields: &[DataField],
) -> Vec<(DataField, Datum, Datum, Option<i64>)> {
    let covered: Vec<DataField> = match &meta.value_stats_cols {
        None => fields.to_vec(),
        Some(names) => names
            .iter()
            .map(|n| fields.iter().find(|f| &f.name == n).unwrap().clone())
            .collect(),
    };
    decode_stats(&meta.value_stats, &covered)
}

fn decode_stats(
    stats: &SimpleStats,
    fields: &[DataField],
) -> Vec<(DataField, Datum, Datum, Option<i64>)> {
    let types: Vec<DataType> = fields.iter().map(|f| f.data_type.clone()).collect();
    let mins = decode_framed(&stats.min_values, &types).unwrap();
    let maxs = decode_framed(&stats.max_values, &types).unwrap();
    let nulls = stats.null_counts.clone().unwrap();
    assert_eq!(nulls.len(), fields.len());
    fields
        .iter()
        .cloned()
        .zip(mins)
        .zip(maxs)
        .zip(nulls)
        .map(|(((f, lo), hi), n)| (f, lo, hi, n))
        .collect()
}

/// Every non-null bound bounds every value; null counts are exact when present.
fn assert_true_bounds(meta: &DataFileMeta, fields: &[DataField], rows: &[Vec<Datum>]) {
    for (field, lo, hi, nulls) in stats_by_column(meta, fields) {
        let c = fields.iter().position(|f| f.name == field.name).unwrap();
        let values: Vec<&Datum> = rows.iter().map(|r| &r[c]).collect();
        if let Some(n) = nulls {
            assert_eq!(
                n as usize,
                values.iter().filter(|v| v.is_null()).count(),
                "{}",
                field.name
            );
        }
        for v in values.iter().filter(|v| !v.is_null()) {
            if !lo.is_null() {
                assert_ne!(
                    compare_datums(&lo, v),
                    Some(Ordering::Greater),
                    "{}: min {lo:?} > {v:?}",
                    field.name
                );
                assert!(compare_datums(&lo, v).is_some());
            }
            if !hi.is_null() {
                assert_ne!(
                    compare_datums(&hi, v),
                    Some(Ordering::Less),
                    "{}: max {hi:?} < {v:?}",
                    field.name
                );
                assert!(compare_datums(&hi, v).is_some());
            }
        }
    }
}

#[tokio::test]
async fn key_value_file_round_trip_and_meta() {
    let tbl = table();
    let fields = all_type_fields();
    let schema = schema(fields.clone(), &["id"], &[]);
    let rows = sample_rows();
    let batch = kv_batch(&rows, &fields, &[10, 11, 12, 13], &[0, 3, 2, 1]);
    const NOW: i64 = 1_750_000_000_123;
    let env = Env::new(
        Arc::new(ManualClock::new(NOW)),
        Arc::new(SequentialIds::default()),
    );
    let mut w = writer(&tbl.io.with_env(env), &schema, FileLayout::KeyValue, 0);
    w.write(&batch).await.unwrap();
    let metas = w.close().await.unwrap();
    assert_eq!(metas.len(), 1);
    let meta = &metas[0];
    assert_batches_eq(
        &read_back(&tbl.io, meta, &fields, FileLayout::KeyValue).await,
        &batch,
    );

    let name = &meta.file_name;
    assert_eq!(name, "data-00000000-0000-0000-0000-000000000001-0.parquet");
    assert_eq!(
        meta.file_size as u64,
        tbl.io.size(&format!("bucket-0/{name}")).await.unwrap()
    );
    assert_eq!(meta.row_count, 4);
    let key = [nn(TypeKind::BigInt)];
    assert_eq!(
        decode_framed(&meta.min_key, &key).unwrap(),
        vec![Datum::BigInt(i64::MIN)]
    );
    assert_eq!(
        decode_framed(&meta.max_key, &key).unwrap(),
        vec![Datum::BigInt(i64::MAX)]
    );
    let key_stats = decode_stats(&meta.key_stats, &fields[..1]);
    assert_eq!(
        (
            key_stats[0].1.clone(),
            key_stats[0].2.clone(),
            key_stats[0].3
        ),
        (Datum::BigInt(i64::MIN), Datum::BigInt(i64::MAX), Some(0))
    );
    assert_eq!(
        (meta.min_sequence_number, meta.max_sequence_number),
        (10, 13)
    );
    assert_eq!(meta.delete_row_count, Some(2));
    assert_eq!(meta.level, 0);
    assert_eq!(meta.schema_id, 0);
    assert_eq!(meta.file_source, Some(FileSource::Append));
    assert!(meta.extra_files.is_empty());
    assert_eq!(
        (meta.embedded_index.clone(), meta.external_path.clone()),
        (None, None)
    );
    assert_eq!((meta.first_row_id, meta.write_cols.clone()), (None, None));
    assert_eq!(meta.creation_time, Some(NOW));

    // Default truncate(16) with dense store: nested columns have no stats and are not listed.
    let cols = meta.value_stats_cols.clone().unwrap();
    let nested = ["arr", "arr_nn", "mp", "ms", "row", "deep"];
    let expected: Vec<&str> = fields
        .iter()
        .map(|f| f.name.as_str())
        .filter(|n| !nested.contains(n))
        .collect();
    assert_eq!(cols, expected);
    assert_true_bounds(meta, &fields, &rows);
    let stats = stats_by_column(meta, &fields);
    let get = |n: &str| stats.iter().find(|(f, ..)| f.name == n).unwrap().clone();
    // NaN: no bounds; -0.0 min; long strings truncated, max rounded up; 0x10FFFF cannot be.
    assert_eq!((get("f32").1, get("f32").2), (Datum::Null, Datum::Null));
    assert_eq!(get("f64").1, Datum::Double(-0.0));
    assert_eq!(
        (get("s").1, get("s").2, get("s").3),
        (Datum::Null, Datum::Null, Some(1))
    );
    assert_eq!(
        (get("ts9").1, get("ts9").2, get("ts9").3),
        (Datum::Null, Datum::Null, Some(1))
    );
    assert_eq!(get("ts6").2, ts(253_402_300_799_999, 999_000));
    // 0xFF… cannot be rounded up within 16 bytes: no bounds, as Java.
    assert_eq!(
        (get("vb").1, get("vb").2, get("vb").3),
        (Datum::Null, Datum::Null, Some(1))
    );
    assert_eq!(get("dec38").1, Datum::Decimal(-(10i128.pow(38) - 1)));
    assert_eq!(get("b").1, Datum::Boolean(false));
}

#[tokio::test]
async fn append_file_round_trip_with_sequence_numbers() {
    let tbl = table();
    let fields = all_type_fields();
    let schema = schema(fields.clone(), &[], &[("metadata.stats-mode", "full")]);
    let rows = sample_rows();
    let batch = append_batch(&rows, &fields);
    let mut w = writer(&tbl.io, &schema, FileLayout::Append, 0).with_first_sequence_number(100);
    w.write(&batch).await.unwrap();
    w.write(&batch.slice(0, 0)).await.unwrap();
    w.write(&batch.slice(1, 2)).await.unwrap();
    let metas = w.close().await.unwrap();
    assert_eq!(metas.len(), 1);
    let meta = &metas[0];
    let read = read_back(&tbl.io, meta, &fields, FileLayout::Append).await;
    let expected =
        arrow_select::concat::concat_batches(&batch.schema(), &[batch.clone(), batch.slice(1, 2)])
            .unwrap();
    assert_batches_eq(&read, &expected);
    assert_eq!(
        (meta.min_sequence_number, meta.max_sequence_number),
        (100, 105)
    );
    assert_eq!(
        (meta.min_key.as_slice(), meta.max_key.as_slice()),
        (&EMPTY_ROW[..], &EMPTY_ROW[..])
    );
    assert_eq!(meta.key_stats, SimpleStats::empty());
    assert_eq!(meta.delete_row_count, Some(0));
    let mut all_rows = rows.clone();
    all_rows.extend(rows[1..3].iter().cloned());
    assert_true_bounds(meta, &fields, &all_rows);
    let stats = stats_by_column(meta, &fields);
    let s_max = stats
        .iter()
        .find(|(f, ..)| f.name == "s")
        .unwrap()
        .2
        .clone();
    assert_eq!(s_max, rows[3][10]);
}

/// Java `ParquetSchemaConverter` output for `all_type_fields` (TIMESTAMP(p > 6) as INT96).
const JAVA_LAYOUT: &str = r#"message paimon_schema {
  REQUIRED INT64 _KEY_id [1073741823];
  REQUIRED INT64 _SEQUENCE_NUMBER [2147483646];
  REQUIRED INT32 _VALUE_KIND [2147483645] (INTEGER(8,true));
  REQUIRED INT64 id [0];
  OPTIONAL BOOLEAN b [1];
  OPTIONAL INT32 i8 [2] (INTEGER(8,true));
  OPTIONAL INT32 i16 [3] (INTEGER(16,true));
  OPTIONAL INT32 i32 [4];
  OPTIONAL FLOAT f32 [5];
  OPTIONAL DOUBLE f64 [6];
  OPTIONAL INT32 dec5 [7] (DECIMAL(5,2));
  OPTIONAL INT64 dec18 [8] (DECIMAL(18,4));
  OPTIONAL FIXED_LEN_BYTE_ARRAY (16) dec38 [9] (DECIMAL(38,10));
  OPTIONAL BYTE_ARRAY s [10] (STRING);
  OPTIONAL BYTE_ARRAY c [11] (STRING);
  OPTIONAL BYTE_ARRAY vb [12];
  OPTIONAL BYTE_ARRAY bn [13];
  OPTIONAL INT32 dt [14] (DATE);
  OPTIONAL INT32 tm [15] (TIME(MILLIS,true));
  OPTIONAL INT64 ts0 [16] (TIMESTAMP(MILLIS,false));
  OPTIONAL INT64 ts3 [17] (TIMESTAMP(MILLIS,false));
  OPTIONAL INT64 ts6 [18] (TIMESTAMP(MICROS,false));
  OPTIONAL INT96 ts9 [19];
  OPTIONAL INT64 ltz3 [20] (TIMESTAMP(MILLIS,true));
  OPTIONAL INT96 ltz9 [21];
  OPTIONAL group arr [22] (LIST) {
    REPEATED group list {
      OPTIONAL INT32 element [536893440];
    }
  }
  OPTIONAL group arr_nn [23] (LIST) {
    REPEATED group list {
      REQUIRED BYTE_ARRAY element [536894464] (STRING);
    }
  }
  OPTIONAL group mp [24] (MAP) {
    REPEATED group key_value {
      REQUIRED BYTE_ARRAY key [536846334] (STRING);
      OPTIONAL INT64 value [536895488];
    }
  }
  OPTIONAL group ms [25] (MAP) {
    REPEATED group key_value {
      REQUIRED BYTE_ARRAY key [536845310] (STRING);
      REQUIRED INT32 value [536896512];
    }
  }
  OPTIONAL group row [50] {
    REQUIRED INT32 x [100];
    OPTIONAL BYTE_ARRAY y [101] (STRING);
    OPTIONAL group z [102] (LIST) {
      REPEATED group list {
        OPTIONAL DOUBLE element [536975360];
      }
    }
  }
  OPTIONAL group deep [51] (LIST) {
    REPEATED group list {
      OPTIONAL group element [536923136] (MAP) {
        REPEATED group key_value {
          REQUIRED BYTE_ARRAY key [536818685] (STRING);
          OPTIONAL group value [536923137] (LIST) {
            REPEATED group list {
              REQUIRED INT32 element [536923138];
            }
          }
        }
      }
    }
  }
}
"#;

#[tokio::test]
async fn parquet_schema_mirrors_java() {
    let tbl = table();
    let fields = all_type_fields();
    let schema = schema(fields.clone(), &["id"], &[]);
    let mut w = writer(&tbl.io, &schema, FileLayout::KeyValue, 0);
    w.write(&kv_batch(&sample_rows(), &fields, &[0, 1, 2, 3], &[0; 4]))
        .await
        .unwrap();
    let meta = w.close().await.unwrap().remove(0);
    let bytes = tbl
        .io
        .read(&format!("bucket-0/{}", meta.file_name))
        .await
        .unwrap();
    let reader = SerializedFileReader::new(bytes).unwrap();
    let file_meta = reader.metadata().file_metadata();
    assert!(file_meta
        .key_value_metadata()
        .is_none_or(|kv| kv.iter().all(|e| e.key != "ARROW:schema")));
    let root = file_meta.schema();
    assert_eq!(root.name(), "paimon_schema");
    let top: Vec<(String, i32)> = root
        .get_fields()
        .iter()
        .map(|f| (f.name().to_string(), f.get_basic_info().id()))
        .collect();
    assert_eq!(top[0], ("_KEY_id".to_string(), 1_073_741_823));
    assert_eq!(top[1], ("_SEQUENCE_NUMBER".to_string(), 2_147_483_646));
    assert_eq!(top[2], ("_VALUE_KIND".to_string(), 2_147_483_645));
    assert_eq!(top.len(), 3 + fields.len());
    for (field, (name, id)) in fields.iter().zip(&top[3..]) {
        assert_eq!((&field.name, field.id), (name, *id));
    }
    let mut printed = Vec::new();
    parquet::schema::printer::print_schema(&mut printed, root);
    assert_eq!(String::from_utf8(printed).unwrap(), JAVA_LAYOUT);
}

#[tokio::test]
async fn rolls_by_size_and_row_count() {
    let tbl = table();
    let fields = vec![
        DataField::new(0, "id", nn(TypeKind::BigInt)),
        DataField::new(1, "v", string()),
    ];
    let rows: Vec<Vec<Datum>> = (0..5000)
        .map(|i| {
            vec![
                Datum::BigInt(i),
                s(&format!("value-{i:08}-{}", i * 7919 % 1000)),
            ]
        })
        .collect();
    let seqs: Vec<i64> = (0..5000).collect();
    let batch = kv_batch(&rows, &fields, &seqs, &vec![0; 5000]);
    let schema = schema(fields.clone(), &["id"], &[("target-file-size", "1kb")]);
    let mut w = writer(&tbl.io, &schema, FileLayout::KeyValue, 0);
    for offset in (0..5000).step_by(700) {
        w.write(&batch.slice(offset, 700.min(5000 - offset)))
            .await
            .unwrap();
    }
    let metas = w.close().await.unwrap();
    assert!(metas.len() >= 5, "{} files", metas.len());
    let uuid = &metas[0].file_name["data-".len().."data-".len() + 36];
    let mut read = Vec::new();
    for (n, meta) in metas.iter().enumerate() {
        assert_eq!(meta.file_name, format!("data-{uuid}-{n}.parquet"));
        assert!(meta.row_count <= 1000);
        let part = read_back(&tbl.io, meta, &fields, FileLayout::KeyValue).await;
        let first = datum_at(part.column(2).as_ref(), 0, &fields[0].data_type).unwrap();
        assert_eq!(
            decode_framed(&meta.min_key, &[fields[0].data_type.clone()]).unwrap(),
            vec![first]
        );
        assert_eq!(
            meta.min_sequence_number,
            match &decode_framed(&meta.min_key, &[fields[0].data_type.clone()]).unwrap()[0] {
                Datum::BigInt(v) => *v,
                other => panic!("{other:?}"),
            }
        );
        assert_eq!(
            meta.max_sequence_number - meta.min_sequence_number + 1,
            meta.row_count
        );
        assert_eq!(
            meta.file_size as u64,
            tbl.io
                .size(&format!("bucket-0/{}", meta.file_name))
                .await
                .unwrap()
        );
        read.push(part);
    }
    let all = arrow_select::concat::concat_batches(&batch.schema(), &read).unwrap();
    assert_batches_eq(&all, &batch);

    let schema = schema_with_rows(&fields, "300");
    let mut w = writer(&tbl.io, &schema, FileLayout::KeyValue, 0);
    w.write(&batch).await.unwrap();
    let metas = w.close().await.unwrap();
    assert_eq!(metas.len(), 17);
    assert!(metas[..16].iter().all(|m| m.row_count == 300));
    assert_eq!(metas[16].row_count, 200);
}

fn schema_with_rows(fields: &[DataField], rows: &str) -> Arc<TableSchema> {
    schema(fields.to_vec(), &["id"], &[("target-file-row-num", rows)])
}

#[tokio::test]
async fn abort_deletes_every_file() {
    let tbl = table();
    let fields = vec![
        DataField::new(0, "id", nn(TypeKind::BigInt)),
        DataField::new(1, "v", string()),
    ];
    let rows: Vec<Vec<Datum>> = (0..3000)
        .map(|i| vec![Datum::BigInt(i), s("some value")])
        .collect();
    let batch = append_batch(&rows, &fields);
    let schema = schema(fields.clone(), &[], &[("target-file-size", "1kb")]);
    let mut w = writer(&tbl.io, &schema, FileLayout::Append, 0);
    w.write(&batch).await.unwrap();
    w.write(&batch.slice(0, 10)).await.unwrap();
    assert!(!tbl.io.list_dir("bucket-0").await.unwrap().is_empty());
    w.abort().await.unwrap();
    assert!(tbl.io.list_dir("bucket-0").await.unwrap().is_empty());
}

#[tokio::test]
async fn failures_clean_up_and_poison_the_writer() {
    let tbl = table();
    let fields = vec![
        DataField::new(0, "id", nn(TypeKind::BigInt)),
        DataField::new(1, "v", nn(TypeKind::Int)),
    ];
    let schema = schema(fields.clone(), &["id"], &[]);
    let good = kv_batch(
        &[vec![Datum::BigInt(1), Datum::Int(1)]],
        &fields,
        &[0],
        &[0],
    );
    let mut w = writer(&tbl.io, &schema, FileLayout::KeyValue, 0);
    w.write(&good).await.unwrap();
    // A NOT NULL column holding a null (the batch's own schema allows it).
    let loose: Vec<DataField> = fields
        .iter()
        .map(|f| DataField::new(f.id, &f.name, f.data_type.with_nullable(true)))
        .collect();
    let bad = kv_batch(&[vec![Datum::BigInt(2), Datum::Null]], &loose, &[1], &[0]);
    let err = w.write(&bad).await.unwrap_err();
    assert!(matches!(err, Error::SchemaMismatch(_)), "{err}");
    assert!(tbl.io.list_dir("bucket-0").await.unwrap().is_empty());
    assert!(w.write(&good).await.is_err());
    let bad_kind = kv_batch(
        &[vec![Datum::BigInt(1), Datum::Int(1)]],
        &fields,
        &[0],
        &[4],
    );
    let mut w = writer(&tbl.io, &schema, FileLayout::KeyValue, 0);
    assert!(w.write(&bad_kind).await.is_err());
    // Layout, level and format are checked up front.
    let config = WriterConfig::from_options(&schema.options, FileLayout::Append, 0, false).unwrap();
    let new = |layout, level| {
        RollingWriter::new(
            tbl.io.clone(),
            "b".into(),
            schema.clone(),
            layout,
            level,
            FileSource::Append,
            "data-".into(),
            config.clone(),
        )
    };
    assert!(new(FileLayout::Append, 0).is_err());
    assert!(new(FileLayout::KeyValue, 3).is_ok());
    let mut opts = Options::new();
    opts.set("file.format", "csv");
    assert!(matches!(
        WriterConfig::from_options(&opts, FileLayout::KeyValue, 0, false),
        Err(Error::Unsupported(_))
    ));
}

#[tokio::test]
async fn stats_modes_and_dense_store() {
    let tbl = table();
    let fields = vec![
        DataField::new(0, "id", nn(TypeKind::BigInt)),
        DataField::new(1, "a", string()),
        DataField::new(2, "b", t(TypeKind::Int)),
        DataField::new(3, "arr", t(TypeKind::Array(Box::new(t(TypeKind::Int))))),
    ];
    let rows = vec![
        vec![
            Datum::BigInt(1),
            s("a-very-long-string-value"),
            Datum::Null,
            Datum::Null,
        ],
        vec![
            Datum::BigInt(2),
            s("b"),
            Datum::Int(5),
            Datum::Array(vec![]),
        ],
    ];
    let batch = append_batch(&rows, &fields);
    let run = |options: Vec<(&'static str, &'static str)>| {
        let schema = schema(fields.clone(), &[], &options);
        let io = tbl.io.clone();
        let batch = batch.clone();
        async move {
            let mut w = writer(&io, &schema, FileLayout::Append, 0);
            w.write(&batch).await.unwrap();
            w.close().await.unwrap().remove(0)
        }
    };
    let meta = run(vec![]).await;
    assert_eq!(
        meta.value_stats_cols,
        Some(vec!["id".into(), "a".into(), "b".into()])
    );
    let stats = stats_by_column(&meta, &fields);
    assert_eq!(stats[1].1, s("a-very-long-stri"));
    assert_eq!(stats[1].2, s("b"));

    let meta = run(vec![("metadata.stats-mode", "none")]).await;
    assert_eq!(meta.value_stats_cols, Some(vec![]));
    assert_eq!(meta.value_stats, SimpleStats::empty());

    let meta = run(vec![
        ("metadata.stats-mode", "counts"),
        ("fields.b.stats-mode", "full"),
    ])
    .await;
    let stats = stats_by_column(&meta, &fields);
    assert_eq!(
        stats.iter().map(|s| s.3).collect::<Vec<_>>(),
        vec![Some(0), Some(0), Some(1)]
    );
    assert_eq!(
        (stats[1].1.clone(), stats[2].1.clone()),
        (Datum::Null, Datum::Int(5))
    );

    let meta = run(vec![
        ("metadata.stats-dense-store", "false"),
        ("metadata.stats-mode", "full"),
    ])
    .await;
    assert_eq!(meta.value_stats_cols, None);
    let stats = stats_by_column(&meta, &fields);
    assert_eq!(stats[1].1, s("a-very-long-string-value"));
    assert_eq!(stats[3].3, None);

    let only_flat = fields[..3].to_vec();
    let schema = schema(only_flat.clone(), &[], &[]);
    let mut w = writer(&tbl.io, &schema, FileLayout::Append, 0);
    w.write(&append_batch(&[rows[0][..3].to_vec()], &only_flat))
        .await
        .unwrap();
    assert_eq!(w.close().await.unwrap()[0].value_stats_cols, None);
}

fn random_rows() -> impl Strategy<Value = Vec<Vec<Datum>>> {
    let row = (
        prop_oneof![1 => Just(Datum::Null), 4 => any::<i32>().prop_map(Datum::Int)],
        prop_oneof![
            1 => Just(Datum::Null),
            1 => Just(Datum::Double(f64::NAN)),
            6 => any::<f64>().prop_map(Datum::Double),
        ],
        prop_oneof![1 => Just(Datum::Null), 4 => "\\PC{0,40}".prop_map(Datum::String)],
        prop_oneof![
            1 => Just(Datum::Null),
            4 => proptest::collection::vec(prop_oneof![Just(0u8), Just(0xFFu8), any::<u8>()], 0..30).prop_map(Datum::Bytes),
        ],
        prop_oneof![1 => Just(Datum::Null), 4 => (-(10i128.pow(20)) + 1..10i128.pow(20)).prop_map(Datum::Decimal)],
        prop_oneof![
            1 => Just(Datum::Null),
            4 => (-10_000_000_000_000i64..10_000_000_000_000, 0i32..1000).prop_map(|(m, u)| ts(m, u * 1000)),
        ],
    );
    proptest::collection::vec(row, 1..60).prop_map(|rows| {
        rows.into_iter()
            .map(|(a, b, c, d, e, f)| vec![a, b, c, d, e, f])
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn stats_are_true_bounds(rows in random_rows(), mode in prop_oneof![Just("truncate(16)"), Just("truncate(3)"), Just("full")]) {
        let fields = vec![
            DataField::new(0, "i", t(TypeKind::Int)),
            DataField::new(1, "d", t(TypeKind::Double)),
            DataField::new(2, "s", string()),
            DataField::new(3, "b", t(TypeKind::VarBinary(MAX_LENGTH))),
            DataField::new(4, "dec", t(TypeKind::Decimal { precision: 20, scale: 3 })),
            DataField::new(5, "ts", t(TypeKind::LocalZonedTimestamp(6))),
        ];
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let tbl = table();
            let schema = schema(fields.clone(), &[], &[("metadata.stats-mode", mode)]);
            let batch = append_batch(&rows, &fields);
            let mut w = writer(&tbl.io, &schema, FileLayout::Append, 0);
            w.write(&batch).await.unwrap();
            let meta = w.close().await.unwrap().remove(0);
            assert_true_bounds(&meta, &fields, &rows);
            assert_batches_eq(&read_back(&tbl.io, &meta, &fields, FileLayout::Append).await, &batch);
        });
    }
}
