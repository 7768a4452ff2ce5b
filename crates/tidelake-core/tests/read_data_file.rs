//! Data-file reader and deletion vectors against the Paimon fixtures
//! (`tests/fixtures/paimon-v1`, written by pypaimon 2.1.0).
//!
//! Metadata the reader does not own (schemas, manifests, index manifests) is decoded here
//! directly with serde_json / apache-avro so these tests only depend on `read::data_file`,
//! `read::deletion_vector` and the type model.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use apache_avro::types::Value as Avro;
use arrow_array::{Array, Int64Array, RecordBatch};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use futures::TryStreamExt;
use serde_json::Value as Json;
use tidelake_core::io::FileIO;
use tidelake_core::read::data_file::{read_data_file, FileFormat, SystemColumns};
use tidelake_core::read::deletion_vector::{
    read_deletion_vector, write_deletion_vector_file, DeletionVector,
};
use tidelake_core::test_support::{fixture_tables, fixtures, read_arrow_file};
use tidelake_spec::type_json::field_from_json;
use tidelake_spec::types::DataField;

fn table_dir(table: &str) -> PathBuf {
    fixtures().join("warehouse/fx.db").join(table)
}

fn all_tables() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures().join("warehouse/fx.db"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().join("schema").is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A parsed `schema/schema-N`.
struct TableSchema {
    fields: Vec<DataField>,
    primary_key: bool,
}

fn schemas(table: &str) -> BTreeMap<i64, TableSchema> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(table_dir(table).join("schema")).unwrap() {
        let path = entry.unwrap().path();
        let json: Json = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let fields = json["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| field_from_json(f).unwrap());
        let primary_key = !json["primaryKeys"].as_array().unwrap().is_empty();
        let schema = TableSchema {
            fields: fields.collect(),
            primary_key,
        };
        out.insert(json["id"].as_i64().unwrap(), schema);
    }
    out
}

// ---------------------------------------------------------------- Avro metadata helpers

fn avro_records(path: &Path) -> Vec<Vec<(String, Avro)>> {
    let bytes = std::fs::read(path).unwrap();
    apache_avro::Reader::new(&bytes[..])
        .unwrap()
        .map(|r| match r.unwrap() {
            Avro::Record(fields) => fields,
            other => panic!("not a record: {other:?}"),
        })
        .collect()
}

fn get<'a>(record: &'a [(String, Avro)], name: &str) -> &'a Avro {
    let value = &record
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .1;
    match value {
        Avro::Union(_, inner) => inner,
        v => v,
    }
}

fn as_i64(v: &Avro) -> i64 {
    match v {
        Avro::Int(i) => i64::from(*i),
        Avro::Long(l) => *l,
        other => panic!("not an integer: {other:?}"),
    }
}

fn as_str(v: &Avro) -> &str {
    match v {
        Avro::String(s) => s,
        other => panic!("not a string: {other:?}"),
    }
}

/// A data file as described by a manifest entry.
#[derive(Clone, Debug)]
struct FileMeta {
    name: String,
    row_count: i64,
    schema_id: i64,
}

/// Manifest entries `(kind, file)` of one manifest file.
fn manifest_entries(table: &str, manifest: &str) -> Vec<(i64, FileMeta)> {
    avro_records(&table_dir(table).join("manifest").join(manifest))
        .iter()
        .map(|entry| {
            let Avro::Record(file) = get(entry, "_FILE") else {
                panic!("bad _FILE")
            };
            let meta = FileMeta {
                name: as_str(get(file, "_FILE_NAME")).to_string(),
                row_count: as_i64(get(file, "_ROW_COUNT")),
                schema_id: as_i64(get(file, "_SCHEMA_ID")),
            };
            (as_i64(get(entry, "_KIND")), meta)
        })
        .collect()
}

/// Every data/changelog file named by any manifest of the table.
fn all_file_metas(table: &str) -> HashMap<String, FileMeta> {
    let mut out = HashMap::new();
    for entry in std::fs::read_dir(table_dir(table).join("manifest")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.starts_with("manifest-") && !name.starts_with("manifest-list-") {
            for (_, meta) in manifest_entries(table, &name) {
                out.insert(meta.name.clone(), meta);
            }
        }
    }
    out
}

fn snapshot_json(table: &str, id: i64) -> Json {
    let path = table_dir(table).join(format!("snapshot/snapshot-{id}"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn manifest_list_files(table: &str, list: &str) -> Vec<String> {
    avro_records(&table_dir(table).join("manifest").join(list))
        .iter()
        .map(|r| as_str(get(r, "_FILE_NAME")).to_string())
        .collect()
}

/// Files live in snapshot `id` (base + delta manifest lists, ADD minus DELETE).
fn live_files(table: &str, id: i64) -> Vec<FileMeta> {
    let snap = snapshot_json(table, id);
    let mut live: BTreeMap<String, FileMeta> = BTreeMap::new();
    for list in ["baseManifestList", "deltaManifestList"] {
        for manifest in manifest_list_files(table, snap[list].as_str().unwrap()) {
            for (kind, meta) in manifest_entries(table, &manifest) {
                if kind == 0 {
                    live.insert(meta.name.clone(), meta);
                } else {
                    live.remove(&meta.name);
                }
            }
        }
    }
    live.into_values().collect()
}

/// Files added by snapshot `id` (its delta manifest list).
fn added_files(table: &str, id: i64) -> Vec<FileMeta> {
    let snap = snapshot_json(table, id);
    manifest_list_files(table, snap["deltaManifestList"].as_str().unwrap())
        .iter()
        .flat_map(|m| manifest_entries(table, m))
        .filter(|(kind, _)| *kind == 0)
        .map(|(_, meta)| meta)
        .collect()
}

// ---------------------------------------------------------------- data files

/// Relative paths (to the table root) of every data and changelog file under bucket dirs.
fn data_file_paths(table: &str) -> Vec<String> {
    fn walk(dir: &Path, rel: &str, in_bucket: bool, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel_child = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if entry.file_type().unwrap().is_dir() {
                let skip = rel.is_empty()
                    && [
                        "index",
                        "manifest",
                        "schema",
                        "snapshot",
                        "tag",
                        "changelog",
                    ]
                    .contains(&name.as_str());
                if !skip {
                    walk(
                        &entry.path(),
                        &rel_child,
                        in_bucket || name.starts_with("bucket-"),
                        out,
                    );
                }
            } else if in_bucket {
                out.push(rel_child);
            }
        }
    }
    let mut out = Vec::new();
    walk(&table_dir(table), "", false, &mut out);
    out.sort();
    out
}

fn file_name(rel: &str) -> &str {
    rel.rsplit('/').next().unwrap()
}

async fn read_file(
    table: &str,
    rel: &str,
    file_fields: &[DataField],
    read_fields: &[DataField],
    system: SystemColumns,
    dv: Option<Arc<DeletionVector>>,
    batch_size: usize,
) -> Vec<RecordBatch> {
    let io = FileIO::open(table_dir(table).to_str().unwrap()).unwrap();
    let format = FileFormat::from_file_name(rel).unwrap();
    let stream = read_data_file(
        &io,
        rel,
        format,
        file_fields,
        read_fields,
        system,
        dv,
        batch_size,
        None,
    )
    .await
    .unwrap_or_else(|e| panic!("{table}/{rel}: {e}"));
    stream
        .try_collect()
        .await
        .unwrap_or_else(|e| panic!("{table}/{rel}: {e}"))
}

/// The schema the reader must produce, built independently of the reader.
fn expected_schema(read_fields: &[DataField], system: SystemColumns) -> Schema {
    let table = tidelake_spec::arrow::to_arrow_schema(read_fields).unwrap();
    let mut fields = Vec::new();
    if system == SystemColumns::KeyValue {
        fields.push(Field::new("_SEQUENCE_NUMBER", ArrowType::Int64, false));
        fields.push(Field::new("_VALUE_KIND", ArrowType::Int8, false));
    }
    fields.extend(table.fields().iter().map(|f| f.as_ref().clone()));
    Schema::new_with_metadata(fields, table.metadata().clone())
}

fn parquet_rows(path: &Path) -> i64 {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    reader.metadata().file_metadata().num_rows()
}

#[tokio::test]
async fn every_fixture_data_file_reads_with_the_latest_schema() {
    let mut files_read = 0;
    for table in all_tables() {
        let schemas = schemas(&table);
        let (_, latest) = schemas.iter().next_back().unwrap();
        let system = if latest.primary_key {
            SystemColumns::KeyValue
        } else {
            SystemColumns::None
        };
        let expected = expected_schema(&latest.fields, system);
        let metas = all_file_metas(&table);
        let paths = data_file_paths(&table);
        assert!(!paths.is_empty(), "{table}: no data files");
        for rel in paths {
            let meta = metas
                .get(file_name(&rel))
                .unwrap_or_else(|| panic!("{table}/{rel} is in no manifest"));
            let file_fields = &schemas[&meta.schema_id].fields;
            let batch_size = 3;
            let batches = read_file(
                &table,
                &rel,
                file_fields,
                &latest.fields,
                system,
                None,
                batch_size,
            )
            .await;
            let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
            assert_eq!(
                rows as i64, meta.row_count,
                "{table}/{rel}: row count vs manifest"
            );
            if rel.ends_with(".parquet") {
                let physical = parquet_rows(&table_dir(&table).join(&rel));
                assert_eq!(
                    rows as i64, physical,
                    "{table}/{rel}: row count vs parquet footer"
                );
            }
            for batch in &batches {
                assert!(batch.num_rows() <= batch_size && batch.num_rows() > 0);
                assert_eq!(batch.schema().as_ref(), &expected, "{table}/{rel}: schema");
            }
            files_read += 1;
        }
    }
    assert!(files_read >= 100, "only {files_read} data files found");
}

// ---------------------------------------------------------------- value comparisons

/// Rows rendered as strings (one per row, sorted): a multiset of rows.
fn row_multiset(batches: &[RecordBatch]) -> Vec<String> {
    let options = FormatOptions::default().with_null("<null>");
    let mut rows = Vec::new();
    for batch in batches {
        let formatters: Vec<ArrayFormatter> = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).unwrap())
            .collect();
        for row in 0..batch.num_rows() {
            let cells: Vec<String> = formatters
                .iter()
                .map(|f| f.value(row).to_string())
                .collect();
            rows.push(cells.join(" | "));
        }
    }
    rows.sort();
    rows
}

/// Drop the system columns of primary-key output.
fn without_system(batches: Vec<RecordBatch>, system: SystemColumns) -> Vec<RecordBatch> {
    match system {
        SystemColumns::None => batches,
        SystemColumns::KeyValue => batches
            .into_iter()
            .map(|b| {
                let kinds = b
                    .column(1)
                    .as_any()
                    .downcast_ref::<arrow_array::Int8Array>()
                    .unwrap();
                assert!(kinds.iter().all(|k| k.is_some()), "null _VALUE_KIND");
                b.project(&(2..b.num_columns()).collect::<Vec<_>>())
                    .unwrap()
            })
            .collect(),
    }
}

/// Read `files` (with their own schemas) as schema `read_schema_id` and compare with `expected`.
async fn assert_files_match(
    table: &str,
    files: &[FileMeta],
    read_schema_id: i64,
    dvs: &HashMap<String, Arc<DeletionVector>>,
    expected_file: &str,
) {
    let schemas = schemas(table);
    let read = &schemas[&read_schema_id];
    let system = if read.primary_key {
        SystemColumns::KeyValue
    } else {
        SystemColumns::None
    };
    let paths = data_file_paths(table);
    let mut batches = Vec::new();
    for meta in files {
        let rel = paths.iter().find(|p| file_name(p) == meta.name).unwrap();
        let file_fields = &schemas[&meta.schema_id].fields;
        let dv = dvs.get(&meta.name).cloned();
        let got = read_file(table, rel, file_fields, &read.fields, system, dv, 4).await;
        batches.extend(without_system(got, system));
    }
    let expected = [read_arrow_file(&fixtures().join(expected_file))];
    let expected_schema = expected[0].schema();
    for batch in &batches {
        let got = batch.schema();
        assert_eq!(
            got.fields().len(),
            expected_schema.fields().len(),
            "{expected_file}"
        );
        for (g, e) in got.fields().iter().zip(expected_schema.fields()) {
            assert_eq!(g.name(), e.name(), "{expected_file}");
            assert_eq!(
                g.data_type(),
                e.data_type(),
                "{expected_file}: column {}",
                g.name()
            );
        }
    }
    let got_rows = row_multiset(&batches);
    let expected_rows = row_multiset(&expected);
    assert_eq!(
        got_rows, expected_rows,
        "{table}: rows differ from {expected_file}"
    );
}

async fn assert_snapshot1(table: &str) {
    let files = added_files(table, 1);
    assert!(!files.is_empty());
    let expected = format!("expected/{table}/snapshot-1.arrow");
    assert_files_match(table, &files, 0, &HashMap::new(), &expected).await;
}

#[tokio::test]
async fn all_types_values_match_expected() {
    assert_snapshot1("all_types").await;
}

#[tokio::test]
async fn pk_types_values_match_expected() {
    assert_snapshot1("pk_types").await;
}

#[tokio::test]
async fn orc_values_match_expected() {
    assert_snapshot1("append_orc").await;
}

#[tokio::test]
async fn avro_values_match_expected() {
    assert_snapshot1("pk_avro").await;
}

#[tokio::test]
async fn schema_evolution_maps_fields_by_id() {
    let table = "schema_evolution";
    let none = HashMap::new();
    // Each snapshot read uses the schema of that snapshot; files come from all schemas.
    for id in 1..=3 {
        let schema_id = snapshot_json(table, id)["schemaId"].as_i64().unwrap();
        let files = live_files(table, id);
        let expected = format!("expected/{table}/snapshot-{id}.arrow");
        assert_files_match(table, &files, schema_id, &none, &expected).await;
    }
    // The old `c` (dropped field id 4) must not leak into the new `c` (field id 7).
    let schemas = schemas(table);
    let latest = &schemas[&2].fields;
    for meta in live_files(table, 3).iter().filter(|m| m.schema_id == 0) {
        let rel = format!("bucket-0/{}", meta.name);
        let old = &schemas[&0].fields;
        let batches = read_file(table, &rel, old, latest, SystemColumns::None, None, 100).await;
        for batch in batches {
            for name in ["c", "extra", "first_col"] {
                let col = batch.column_by_name(name).unwrap();
                assert_eq!(
                    col.null_count(),
                    col.len(),
                    "{name} must be all null in old files"
                );
            }
            assert!(batch.column_by_name("name").unwrap().null_count() < batch.num_rows());
        }
    }
}

// ---------------------------------------------------------------- deletion vectors

/// Deletion vectors of snapshot `id`, by data file name, checked against the manifest's
/// cardinalities; also re-encodes each index file and compares bytes.
fn snapshot_dvs(table: &str, id: i64) -> HashMap<String, Arc<DeletionVector>> {
    let mut out = HashMap::new();
    let snap = snapshot_json(table, id);
    let Some(index_manifest) = snap["indexManifest"].as_str() else {
        return out;
    };
    for entry in avro_records(&table_dir(table).join("manifest").join(index_manifest)) {
        assert_eq!(as_i64(get(&entry, "_KIND")), 0);
        assert_eq!(as_str(get(&entry, "_INDEX_TYPE")), "DELETION_VECTORS");
        let index_file = as_str(get(&entry, "_FILE_NAME"));
        let bytes = std::fs::read(table_dir(table).join("index").join(index_file)).unwrap();
        assert_eq!(bytes.len() as i64, as_i64(get(&entry, "_FILE_SIZE")));
        let Avro::Array(ranges) = get(&entry, "_DELETIONS_VECTORS_RANGES") else {
            panic!()
        };
        let mut decoded = Vec::new();
        for range in ranges {
            let Avro::Record(r) = range else {
                panic!("bad range")
            };
            let (file, offset, length) = (
                as_str(get(r, "f0")),
                as_i64(get(r, "f1")),
                as_i64(get(r, "f2")),
            );
            let dv = read_deletion_vector(&bytes, offset as u64, length as u64).unwrap();
            assert_eq!(dv.cardinality() as i64, as_i64(get(r, "_CARDINALITY")));
            decoded.push((file.to_string(), dv.clone(), offset as u64, length as u64));
            out.insert(file.to_string(), Arc::new(dv));
        }
        assert_eq!(decoded.len() as i64, as_i64(get(&entry, "_ROW_COUNT")));
        // Our encoder reproduces the index file byte for byte (ranges in file order).
        decoded.sort_by_key(|d| d.2);
        let input: Vec<(String, DeletionVector)> = decoded
            .iter()
            .map(|(f, dv, _, _)| (f.clone(), dv.clone()))
            .collect();
        let (written, metas) = write_deletion_vector_file(&input);
        assert_eq!(written, bytes, "re-encoded {index_file}");
        for ((f, dv, off, len), (mf, moff, mlen, card)) in decoded.iter().zip(&metas) {
            assert_eq!((f, *off, *len, dv.cardinality()), (mf, *moff, *mlen, *card));
        }
    }
    out
}

#[tokio::test]
async fn append_deletion_vectors_filter_rows() {
    let table = "append_deletion_vectors";
    let tables = fixture_tables();
    let meta = tables.iter().find(|t| t["name"] == table);
    let snapshots = meta.unwrap()["snapshots"].as_array().unwrap();
    let mut saw_deletes = false;
    for snap in snapshots {
        let id = snap["id"].as_i64().unwrap();
        let dvs = snapshot_dvs(table, id);
        let files = live_files(table, id);
        let deleted: u64 = dvs.values().map(|d| d.cardinality()).sum();
        let total: i64 = files.iter().map(|f| f.row_count).sum();
        let expected_rows = snap["expected"]["rows"].as_i64().unwrap();
        assert_eq!(
            total - deleted as i64,
            expected_rows,
            "snapshot {id}: row arithmetic"
        );
        let live: HashSet<&str> = files.iter().map(|f| f.name.as_str()).collect();
        assert!(
            dvs.keys().all(|f| live.contains(f.as_str())),
            "DV for a dead file"
        );
        saw_deletes |= deleted > 0;
        let expected_file = snap["expected"]["file"].as_str().unwrap();
        assert_files_match(table, &files, 0, &dvs, expected_file).await;
    }
    assert!(saw_deletes);
}

#[tokio::test]
async fn deletion_vector_positions_cover_whole_file_across_batches() {
    // Positions are file positions, not batch positions: batch size 1 and 4 agree.
    let table = "append_deletion_vectors";
    let dvs = snapshot_dvs(table, 5);
    let schemas = schemas(table);
    let fields = &schemas[&0].fields;
    for meta in live_files(table, 5) {
        let rel = format!("bucket-0/{}", meta.name);
        let dv = dvs.get(&meta.name).cloned();
        let mut ids = Vec::new();
        for batch_size in [1, 4, 1000] {
            let batches = read_file(
                table,
                &rel,
                fields,
                fields,
                SystemColumns::None,
                dv.clone(),
                batch_size,
            )
            .await;
            let got: Vec<i64> = batches
                .iter()
                .flat_map(|b| {
                    let c = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
                    c.values().to_vec()
                })
                .collect();
            ids.push(got);
        }
        assert_eq!(ids[0], ids[1]);
        assert_eq!(ids[1], ids[2]);
        let deleted = dv.map(|d| d.cardinality()).unwrap_or(0) as i64;
        assert_eq!(ids[0].len() as i64, meta.row_count - deleted);
    }
}

// ---------------------------------------------------------------- Java-style Parquet layout

/// A primary-key file as Java writes it (INT32 `_VALUE_KIND`, `element`/`key_value` names,
/// nanosecond timestamps for TIMESTAMP(6), large strings, variable binary for BINARY(n)),
/// several row groups, read through schema evolution and a deletion vector.
#[tokio::test]
async fn java_layout_parquet_with_row_groups_and_deletions() {
    use arrow_array::builder::{Int32Builder, MapBuilder, MapFieldNames, StringBuilder};
    use arrow_array::{
        ArrayRef, BinaryArray, Int32Array, LargeStringArray, ListArray, TimestampNanosecondArray,
    };
    use arrow_buffer::OffsetBuffer;
    use tidelake_spec::types::{DataType, TypeKind};

    let rows = 10usize;
    let mut map = MapBuilder::new(
        Some(MapFieldNames {
            entry: "key_value".into(),
            key: "key".into(),
            value: "value".into(),
        }),
        Int32Builder::new(),
        StringBuilder::new(),
    );
    for i in 0..rows {
        map.keys().append_value(i as i32);
        map.values().append_value(format!("v{i}"));
        map.append(true).unwrap();
    }
    let list = ListArray::new(
        Arc::new(Field::new("element", ArrowType::Int32, true)),
        OffsetBuffer::from_lengths(vec![1; rows]),
        Arc::new(Int32Array::from_iter_values(0..rows as i32)),
        None,
    );
    let ids: Vec<i64> = (0..rows as i64).collect();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("_KEY_id", Arc::new(Int64Array::from(ids.clone()))),
        (
            "_SEQUENCE_NUMBER",
            Arc::new(Int64Array::from_iter_values(100..100 + rows as i64)),
        ),
        ("_VALUE_KIND", Arc::new(Int32Array::from(vec![0; rows]))),
        ("id", Arc::new(Int64Array::from(ids))),
        (
            "old_name",
            Arc::new(LargeStringArray::from_iter_values(
                (0..rows).map(|i| format!("s{i}")),
            )),
        ),
        (
            "ts",
            Arc::new(TimestampNanosecondArray::from_iter_values(
                (0..rows as i64).map(|i| i * 1_000_001),
            )),
        ),
        (
            "fb",
            Arc::new(BinaryArray::from_iter_values(
                (0..rows).map(|i| [i as u8, 0]),
            )),
        ),
        ("arr", Arc::new(list)),
        ("m", Arc::new(map.finish())),
    ];
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(3))
        .build();
    let file = std::fs::File::create(dir.path().join("data-java-0.parquet")).unwrap();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();

    let t = DataType::new;
    let file_fields = vec![
        DataField::new(0, "id", DataType::not_null(TypeKind::BigInt)),
        DataField::new(1, "old_name", DataType::string()),
        DataField::new(2, "ts", t(TypeKind::Timestamp(6))),
        DataField::new(3, "fb", t(TypeKind::Binary(2))),
        DataField::new(4, "arr", t(TypeKind::Array(Box::new(t(TypeKind::Int))))),
        DataField::new(
            5,
            "m",
            t(TypeKind::Map(
                Box::new(DataType::not_null(TypeKind::Int)),
                Box::new(DataType::string()),
            )),
        ),
    ];
    // Current schema: renamed string, array widened to BIGINT, new column, `fb` dropped.
    let mut read_fields = file_fields.clone();
    read_fields[1].name = "new_name".into();
    read_fields[4].data_type = t(TypeKind::Array(Box::new(t(TypeKind::BigInt))));
    read_fields.remove(3);
    read_fields.push(DataField::new(6, "added", t(TypeKind::Double)));

    let dv: DeletionVector = [0u64, 2, 3, 7, 9].into_iter().collect();
    let io = FileIO::open(dir.path().to_str().unwrap()).unwrap();
    let stream = read_data_file(
        &io,
        "data-java-0.parquet",
        FileFormat::Parquet,
        &file_fields,
        &read_fields,
        SystemColumns::KeyValue,
        Some(Arc::new(dv)),
        2,
        None,
    )
    .await
    .unwrap();
    let batches: Vec<RecordBatch> = stream.try_collect().await.unwrap();
    let expected = expected_schema(&read_fields, SystemColumns::KeyValue);
    let mut seqs = Vec::new();
    let mut rendered = Vec::new();
    for b in &batches {
        assert_eq!(b.schema().as_ref(), &expected);
        let seq = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        seqs.extend(seq.values().iter().copied());
        rendered.extend(row_multiset(std::slice::from_ref(b)));
    }
    assert_eq!(seqs, vec![101, 104, 105, 106, 108]);
    assert!(
        rendered.contains(
            &"104 | 0 | 4 | s4 | 1970-01-01T00:00:00.004 | [4] | {4: v4} | <null>".to_string()
        ),
        "{rendered:#?}"
    );
}
