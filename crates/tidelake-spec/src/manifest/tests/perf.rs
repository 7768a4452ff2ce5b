//! Throughput of manifest decoding (scan planning reads thousands of manifests). Run with
//! `cargo test -p tidelake-spec --release -- --ignored manifest_decode_throughput --nocapture`.

use std::time::Instant;

use super::super::*;

/// A realistic PK-table entry: STRING partition, BIGINT key, stats on 5 value columns.
fn entry(i: i64) -> ManifestEntry {
    let row = |v: i64| {
        let mut b = vec![0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
        b.extend_from_slice(&v.to_le_bytes());
        b
    };
    let stats = |n: usize| SimpleStats {
        min_values: vec![7; 12 + 8 * n],
        max_values: vec![9; 12 + 8 * n],
        null_counts: Some(vec![Some(0); n]),
    };
    ManifestEntry {
        kind: FileKind::Add,
        partition: b"\0\0\0\x01\0\0\0\0\0\0\0\0\x0a\0\0\0\x10\0\0\x002024-05-14\0\0\0\0\0\0"
            .to_vec(),
        bucket: (i % 16) as i32,
        total_buckets: 16,
        file: DataFileMeta {
            file_name: format!("data-8a0c3a8e-4b0e-4c3a-9d0e-{i:012}-0.parquet"),
            file_size: 1_000_000 + i,
            row_count: 10_000,
            min_key: row(i),
            max_key: row(i + 10_000),
            key_stats: stats(1),
            value_stats: stats(5),
            min_sequence_number: i,
            max_sequence_number: i + 10_000,
            schema_id: 0,
            level: 0,
            extra_files: Vec::new(),
            creation_time: Some(1_715_000_000_000 + i),
            delete_row_count: Some(0),
            embedded_index: None,
            file_source: Some(FileSource::Append),
            value_stats_cols: None,
            external_path: None,
            first_row_id: None,
            write_cols: None,
            write_cols_sequences: None,
        },
    }
}

#[test]
#[ignore = "throughput check, meaningful in release mode"]
#[allow(clippy::disallowed_methods)] // a throughput check times in real time
fn manifest_decode_throughput() {
    let entries: Vec<ManifestEntry> = (0..100_000).map(entry).collect();
    let started = Instant::now();
    let bytes = write_manifest(&entries, Codec::Zstd).expect("encode");
    let encoded = started.elapsed();
    let started = Instant::now();
    let back = read_manifest(&bytes).expect("decode");
    let decoded = started.elapsed();
    assert_eq!(back.len(), entries.len());
    assert_eq!(back[99_999], entries[99_999]);
    println!(
        "100k entries, {} bytes zstd: encode {encoded:?}, decode {decoded:?}",
        bytes.len()
    );
    if !cfg!(debug_assertions) {
        assert!(decoded.as_secs_f64() < 1.0, "decode took {decoded:?}");
    }
}
