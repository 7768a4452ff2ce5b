use std::sync::Arc;
use arrow_array::{ArrayRef, Float64Array, Int64Array, Int8Array, Int32Array, RecordBatch, StringArray};
use tidelake_core::io::FileIO;
use tidelake_core::read::data_file::{output_schema, SystemColumns};
use tidelake_core::write::file_writer::{FileLayout, RollingWriter, WriterConfig};
use tidelake_core::write::bucket::bucket_ids;
use tidelake_spec::manifest::FileSource;
use tidelake_spec::options::Options;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::{DataField, DataType, TypeKind, MAX_LENGTH};
#[tokio::test]
async fn perf() {
    let dir = tempfile::tempdir().unwrap();
    let io = FileIO::open(dir.path().to_str().unwrap()).unwrap();
    let fields = vec![DataField::new(0,"id",DataType::not_null(TypeKind::BigInt)),DataField::new(1,"s",DataType::new(TypeKind::VarChar(MAX_LENGTH))),DataField::new(2,"i",DataType::new(TypeKind::Int)),DataField::new(3,"d",DataType::new(TypeKind::Double))];
    let schema = Arc::new(TableSchema::new(0, fields.clone(), vec![], vec!["id".into()], Options::new()).unwrap());
    let n = 100_000i64;
    let mut batches = vec![];
    for b in 0..20 { let base = b * n;
        let cols: Vec<ArrayRef> = vec![Arc::new(Int64Array::from_iter_values(base..base+n)), Arc::new(Int8Array::from(vec![0i8; n as usize])),
          Arc::new(Int64Array::from_iter_values(base..base+n)), Arc::new(StringArray::from_iter_values((base..base+n).map(|i| format!("name-{i}-{}", i*31%977)))),
          Arc::new(Int32Array::from_iter_values((0..n).map(|i| i as i32))), Arc::new(Float64Array::from_iter_values((0..n).map(|i| i as f64 * 0.5)))];
        batches.push(RecordBatch::try_new(output_schema(&fields, SystemColumns::KeyValue).unwrap(), cols).unwrap()); }
    let config = WriterConfig::from_options(&schema.options, FileLayout::KeyValue, 0, false).unwrap();
    let mut w = RollingWriter::new(io.clone(), "bucket-0".into(), schema.clone(), FileLayout::KeyValue, 0, FileSource::Append, "data-".into(), config).unwrap();
    let t = std::time::Instant::now();
    for b in &batches { w.write(b).await.unwrap(); }
    let metas = w.close().await.unwrap();
    println!("write 2M rows: {:?}, files {}, size {}", t.elapsed(), metas.len(), metas[0].file_size);
    let t = std::time::Instant::now();
    let mut total = 0; for b in &batches { total += bucket_ids(b, &[2], &[fields[0].data_type.clone()], 16).unwrap().len(); }
    println!("bucket_ids bigint 2M: {:?} {total}", t.elapsed());
    let t = std::time::Instant::now();
    for b in &batches { bucket_ids(b, &[3], &[fields[1].data_type.clone()], 16).unwrap(); }
    println!("bucket_ids string 2M: {:?}", t.elapsed());
}
