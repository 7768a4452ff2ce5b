//! Round trips of ORC and Avro data files through the writer and the data-file reader.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int16Array,
    Int32Array, Int64Array, Int8Array, RecordBatch, StringArray, Time32MillisecondArray,
    TimestampMicrosecondArray, TimestampMillisecondArray,
};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use futures::TryStreamExt;
use tidelake_spec::arrow::to_arrow_schema;
use tidelake_spec::datum::Datum;
use tidelake_spec::options::Options;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::{DataField, DataType, TypeKind, MAX_LENGTH};

use super::*;
use crate::read::data_file::{read_data_file, SystemColumns};

fn field(id: i32, name: &str, kind: TypeKind) -> DataField {
    DataField::new(id, name, DataType::new(kind))
}

/// Columns of the primitive types both ORC and Avro writers take.
fn primitive_fields() -> Vec<DataField> {
    vec![
        DataField::new(0, "id", DataType::not_null(TypeKind::Int)),
        field(1, "b", TypeKind::Boolean),
        field(2, "i8", TypeKind::TinyInt),
        field(3, "i16", TypeKind::SmallInt),
        field(4, "i64", TypeKind::BigInt),
        field(5, "f64", TypeKind::Double),
        field(6, "s", TypeKind::VarChar(MAX_LENGTH)),
        field(7, "vb", TypeKind::VarBinary(MAX_LENGTH)),
        field(8, "d", TypeKind::Date),
        field(9, "tm", TypeKind::Time(3)),
        field(10, "ts3", TypeKind::Timestamp(3)),
        field(11, "ltz6", TypeKind::LocalZonedTimestamp(6)),
    ]
}

fn primitive_batch(fields: &[DataField]) -> RecordBatch {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(vec![1, 2, 3])),
        Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])),
        Arc::new(Int8Array::from(vec![Some(-128), Some(127), None])),
        Arc::new(Int16Array::from(vec![Some(-32768), None, Some(7)])),
        Arc::new(Int64Array::from(vec![Some(i64::MIN), Some(i64::MAX), None])),
        Arc::new(Float64Array::from(vec![Some(-1.5), None, Some(2.25)])),
        Arc::new(StringArray::from(vec![Some("unicode ☃"), Some(""), None])),
        Arc::new(BinaryArray::from(vec![
            Some(&b"\x00\xff"[..]),
            None,
            Some(&b""[..]),
        ])),
        Arc::new(Date32Array::from(vec![Some(-1), Some(19_000), None])),
        Arc::new(Time32MillisecondArray::from(vec![
            Some(86_399_999),
            None,
            Some(0),
        ])),
        Arc::new(TimestampMillisecondArray::from(vec![
            Some(-86_400_001),
            Some(1_709_999_999_999),
            None,
        ])),
        Arc::new(
            TimestampMicrosecondArray::from(vec![
                None,
                Some(1_710_000_000_124_456),
                Some(-1_000_000),
            ])
            .with_timezone("UTC"),
        ),
    ];
    let schema = to_arrow_schema(fields).unwrap();
    RecordBatch::try_new(Arc::new(schema), columns).unwrap()
}

async fn write_files(
    dir: &std::path::Path,
    schema: TableSchema,
    layout: FileLayout,
    batch: &RecordBatch,
) -> Result<(FileIO, Vec<DataFileMeta>)> {
    let io = FileIO::open(dir.to_str().unwrap()).unwrap();
    let config = WriterConfig::from_options(&schema.options, layout, 0, false)?;
    let mut writer = RollingWriter::new(
        io.clone(),
        "bucket-0".into(),
        Arc::new(schema),
        layout,
        0,
        FileSource::Append,
        "data-".into(),
        config,
    )?;
    writer.write(batch).await?;
    Ok((io, writer.close().await?))
}

async fn read_back(
    io: &FileIO,
    meta: &DataFileMeta,
    fields: &[DataField],
    system: SystemColumns,
) -> RecordBatch {
    let path = format!("bucket-0/{}", meta.file_name);
    let format = FileFormat::from_file_name(&meta.file_name).unwrap();
    let stream = read_data_file(io, &path, format, fields, fields, system, None, 1024, None)
        .await
        .unwrap();
    let batches: Vec<RecordBatch> = stream.try_collect().await.unwrap();
    arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap()
}

fn options(format: &str, compression: &str) -> Options {
    let mut options = Options::new();
    options.set("file.format", format);
    options.set("file.compression", compression);
    options.set("metadata.stats-mode", "full");
    options
}

#[tokio::test]
async fn orc_and_avro_append_files_round_trip() {
    for (format, codec) in [
        ("orc", "zstd"),
        ("orc", "none"),
        ("avro", "snappy"),
        ("avro", "null"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let fields = primitive_fields();
        let schema =
            TableSchema::new(0, fields.clone(), vec![], vec![], options(format, codec)).unwrap();
        let batch = primitive_batch(&fields);
        let (io, metas) = write_files(dir.path(), schema, FileLayout::Append, &batch)
            .await
            .unwrap();
        assert_eq!(metas.len(), 1);
        assert!(
            metas[0].file_name.ends_with(&format!(".{format}")),
            "{}",
            metas[0].file_name
        );
        assert_eq!(metas[0].row_count, 3);
        let back = read_back(&io, &metas[0], &fields, SystemColumns::None).await;
        assert_eq!(back.columns(), batch.columns(), "{format}/{codec}");
        // Stats as Java computes them for the format: bounds of ints, none of binaries.
        let stats = &metas[0].value_stats;
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        let at = |name: &str| names.iter().position(|n| *n == name).unwrap();
        let min =
            tidelake_spec::binary_row::decode_framed(&stats.min_values, &field_types(&fields))
                .unwrap();
        let max =
            tidelake_spec::binary_row::decode_framed(&stats.max_values, &field_types(&fields))
                .unwrap();
        assert_eq!(min[at("i64")], Datum::BigInt(i64::MIN));
        assert_eq!(max[at("i64")], Datum::BigInt(i64::MAX));
        assert_eq!(min[at("vb")], Datum::Null);
        assert_eq!(stats.null_counts.as_ref().unwrap()[at("vb")], Some(1));
    }
}

fn field_types(fields: &[DataField]) -> Vec<DataType> {
    fields.iter().map(|f| f.data_type.clone()).collect()
}

#[tokio::test]
async fn orc_and_avro_key_value_files_round_trip() {
    for format in ["orc", "avro"] {
        let dir = tempfile::tempdir().unwrap();
        let fields = primitive_fields();
        let schema = TableSchema::new(
            0,
            fields.clone(),
            vec![],
            vec!["id".into()],
            options(format, "zstd"),
        )
        .unwrap();
        let values = primitive_batch(&fields);
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![10, 11, 12])),
            Arc::new(Int8Array::from(vec![0, 2, 3])),
        ];
        columns.extend(values.columns().iter().cloned());
        let mut schema_fields = vec![
            Field::new(SEQUENCE_NUMBER, ArrowType::Int64, false),
            Field::new(VALUE_KIND, ArrowType::Int8, false),
        ];
        schema_fields.extend(values.schema().fields().iter().map(|f| f.as_ref().clone()));
        let batch = RecordBatch::try_new(Arc::new(Schema::new(schema_fields)), columns).unwrap();
        let (io, metas) = write_files(dir.path(), schema, FileLayout::KeyValue, &batch)
            .await
            .unwrap();
        let meta = &metas[0];
        assert_eq!(
            (meta.min_sequence_number, meta.max_sequence_number),
            (10, 12)
        );
        assert_eq!(meta.delete_row_count, Some(1));
        let back = read_back(&io, meta, &fields, SystemColumns::KeyValue).await;
        assert_eq!(back.columns(), batch.columns(), "{format}");
    }
}

#[tokio::test]
async fn orc_and_avro_write_decimals_and_nested_types() {
    let row = TypeKind::Row(vec![
        field(10, "x", TypeKind::Int),
        field(11, "y", TypeKind::VarChar(MAX_LENGTH)),
    ]);
    let fields = vec![
        DataField::new(0, "id", DataType::not_null(TypeKind::Int)),
        field(
            1,
            "dec",
            TypeKind::Decimal {
                precision: 38,
                scale: 10,
            },
        ),
        field(
            2,
            "arr",
            TypeKind::Array(Box::new(DataType::new(TypeKind::SmallInt))),
        ),
        field(3, "st", row),
        field(
            4,
            "smap",
            TypeKind::Map(
                Box::new(DataType::not_null(TypeKind::VarChar(MAX_LENGTH))),
                Box::new(DataType::new(TypeKind::BigInt)),
            ),
        ),
        field(
            5,
            "imap",
            TypeKind::Map(
                Box::new(DataType::not_null(TypeKind::Int)),
                Box::new(DataType::new(TypeKind::Char(3))),
            ),
        ),
        field(
            6,
            "ms",
            TypeKind::Multiset(Box::new(DataType::new(TypeKind::Date))),
        ),
    ];
    let schema_ref = to_arrow_schema(&fields).unwrap();
    let dec = Decimal128Array::from(vec![
        Some(-12_345_678_901_234_567_890_123_456_780_123_456_789i128),
        None,
    ])
    .with_precision_and_scale(38, 10)
    .unwrap();
    let mut columns: Vec<ArrayRef> = vec![Arc::new(Int32Array::from(vec![1, 2])), Arc::new(dec)];
    for f in &schema_ref.fields()[2..] {
        columns.push(nested_values(f.data_type()));
    }
    let batch = RecordBatch::try_new(Arc::new(schema_ref), columns).unwrap();
    for (format, codec) in [("avro", "deflate"), ("orc", "zstd")] {
        let dir = tempfile::tempdir().unwrap();
        let schema =
            TableSchema::new(0, fields.clone(), vec![], vec![], options(format, codec)).unwrap();
        let (io, metas) = write_files(dir.path(), schema, FileLayout::Append, &batch)
            .await
            .unwrap();
        let back = read_back(&io, &metas[0], &fields, SystemColumns::None).await;
        assert_eq!(back.columns(), batch.columns(), "{format}");
        // Nested columns keep a null count in Avro files (Java collects one per record) and in
        // ORC files (Java reads ORC's column statistics), but no bounds.
        let stats = &metas[0].value_stats;
        assert_eq!(stats.null_counts.as_ref().unwrap()[3], Some(1), "{format}");
        let min =
            tidelake_spec::binary_row::decode_framed(&stats.min_values, &field_types(&fields))
                .unwrap();
        assert_eq!(min[3], Datum::Null, "{format}");
    }
}

/// Two rows of `ty`: a value, then a null.
fn nested_values(ty: &ArrowType) -> ArrayRef {
    let null = arrow_array::new_null_array(ty, 1);
    arrow_select::concat::concat(&[sample(ty).as_ref(), null.as_ref()]).unwrap()
}

/// One non-null value of `ty` (the nested types of the test above).
fn sample(ty: &ArrowType) -> ArrayRef {
    match ty {
        ArrowType::List(_) => Arc::new(arrow_array::ListArray::from_iter_primitive::<
            arrow_array::types::Int16Type,
            _,
            _,
        >(vec![Some(vec![Some(1), None, Some(-32768)])])),
        ArrowType::Struct(fields) => Arc::new(arrow_array::StructArray::new(
            fields.clone(),
            vec![
                Arc::new(Int32Array::from(vec![7])),
                Arc::new(StringArray::from(vec!["q"])),
            ],
            None,
        )),
        ArrowType::Map(entries, _) => {
            let ArrowType::Struct(kv) = entries.data_type() else {
                unreachable!()
            };
            let keys: ArrayRef = match kv[0].data_type() {
                ArrowType::Utf8 => Arc::new(StringArray::from(vec!["k1", "k2"])),
                ArrowType::Int32 => Arc::new(Int32Array::from(vec![5, -5])),
                _ => Arc::new(Date32Array::from(vec![0, 19_000])),
            };
            let values: ArrayRef = match kv[1].data_type() {
                ArrowType::Int64 => Arc::new(Int64Array::from(vec![Some(1), None])),
                ArrowType::Utf8 => Arc::new(StringArray::from(vec![Some("abc"), None])),
                _ => Arc::new(Int32Array::from(vec![2, 1])),
            };
            let entries_array = arrow_array::StructArray::new(kv.clone(), vec![keys, values], None);
            Arc::new(arrow_array::MapArray::new(
                entries.clone(),
                arrow_buffer::OffsetBuffer::new(vec![0, 2].into()),
                entries_array,
                None,
                false,
            ))
        }
        other => panic!("no sample for {other}"),
    }
}

#[tokio::test]
async fn types_a_format_cannot_hold_are_refused_by_name() {
    let cases = [
        ("orc", TypeKind::Variant, "ORC"),
        (
            "orc",
            TypeKind::Array(Box::new(DataType::new(TypeKind::Variant))),
            "ORC",
        ),
        ("avro", TypeKind::Timestamp(9), "Avro"),
        ("avro", TypeKind::LocalZonedTimestamp(7), "Avro"),
    ];
    for (format, kind, label) in cases {
        let dir = tempfile::tempdir().unwrap();
        let fields = vec![
            DataField::new(0, "id", DataType::not_null(TypeKind::Int)),
            DataField::new(1, "bad_col", DataType::new(kind.clone())),
        ];
        let schema = TableSchema::new(0, fields, vec![], vec![], options(format, "zstd")).unwrap();
        let config =
            WriterConfig::from_options(&schema.options, FileLayout::Append, 0, false).unwrap();
        let io = FileIO::open(dir.path().to_str().unwrap()).unwrap();
        let err = RollingWriter::new(
            io,
            "bucket-0".into(),
            Arc::new(schema),
            FileLayout::Append,
            0,
            FileSource::Append,
            "data-".into(),
            config,
        )
        .err()
        .unwrap_or_else(|| panic!("{format} took {kind:?}"));
        let text = err.to_string();
        assert!(matches!(err, Error::Unsupported(_)), "{text}");
        assert!(text.contains("bad_col") && text.contains(label), "{text}");
    }
}

#[test]
fn codecs_follow_java_names_per_format() {
    for (format, codec, ok) in [
        ("orc", "zlib", true),
        ("orc", "lzo", false),
        ("orc", "gzip", false),
        ("avro", "zstd", true),
        ("avro", "bzip2", true),
        ("avro", "xz", false),
        ("avro", "lz4", false),
    ] {
        let fields = primitive_fields();
        let schema = TableSchema::new(0, fields, vec![], vec![], options(format, codec)).unwrap();
        let config =
            WriterConfig::from_options(&schema.options, FileLayout::Append, 0, false).unwrap();
        let columns: Vec<PhysicalColumn> = Vec::new();
        let result = Encoding::new(&columns, &config);
        assert_eq!(result.is_ok(), ok, "{format}/{codec}");
        if let Err(e) = result {
            assert!(
                matches!(e, Error::Unsupported(_)) && e.to_string().contains(codec),
                "{e}"
            );
        }
    }
}

#[tokio::test]
async fn orc_refuses_timestamps_it_cannot_store_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let fields = vec![field(0, "ts", TypeKind::Timestamp(3))];
    let schema =
        TableSchema::new(0, fields.clone(), vec![], vec![], options("orc", "none")).unwrap();
    let batch = RecordBatch::try_new(
        to_arrow_schema(&fields).unwrap().into(),
        vec![Arc::new(TimestampMillisecondArray::from(vec![Some(-1)]))],
    )
    .unwrap();
    let err = write_files(dir.path(), schema, FileLayout::Append, &batch)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");
    // The writer deleted what it had started.
    assert!(
        !dir.path().join("bucket-0").exists()
            || std::fs::read_dir(dir.path().join("bucket-0"))
                .unwrap()
                .next()
                .is_none()
    );
}

#[tokio::test]
async fn orc_and_avro_files_roll_at_the_target_size() {
    for format in ["orc", "avro"] {
        let dir = tempfile::tempdir().unwrap();
        let fields = vec![
            DataField::new(0, "id", DataType::not_null(TypeKind::Int)),
            field(1, "s", TypeKind::VarChar(MAX_LENGTH)),
        ];
        let mut opts = options(format, if format == "orc" { "none" } else { "null" });
        opts.set("target-file-size", "16 kb");
        let schema = TableSchema::new(0, fields.clone(), vec![], vec![], opts).unwrap();
        let rows = 20_000;
        let batch = RecordBatch::try_new(
            to_arrow_schema(&fields).unwrap().into(),
            vec![
                Arc::new(Int32Array::from_iter_values(0..rows)),
                Arc::new(StringArray::from_iter_values(
                    (0..rows).map(|i| format!("value-{i:08}")),
                )),
            ],
        )
        .unwrap();
        let (io, metas) = write_files(dir.path(), schema, FileLayout::Append, &batch)
            .await
            .unwrap();
        assert!(metas.len() > 2, "{format}: {} files", metas.len());
        assert_eq!(
            metas.iter().map(|m| m.row_count).sum::<i64>(),
            i64::from(rows)
        );
        let mut read = 0;
        for meta in &metas {
            assert!(
                meta.file_size < 16 * 1024 * 4,
                "{format}: {} bytes",
                meta.file_size
            );
            read += read_back(&io, meta, &fields, SystemColumns::None)
                .await
                .num_rows();
        }
        assert_eq!(read, rows as usize);
    }
}
