//! Bounded-time mutation fuzzing of the metadata decoders against hostile input (cargo-fuzz
//! needs a nightly toolchain; this runs on stable inside `cargo test`).
//!
//! Seeds are real files from the shared Paimon fixtures (manifest lists, manifests, index
//! manifests, snapshot and schema JSON) plus their uncompressed re-encodings and the framed
//! BinaryRows they hold. Each iteration applies 1-4 random mutations (bit flips, interesting
//! bytes, huge varints and big-endian ints, insertions, deletions, duplications, truncation)
//! and feeds the result to a decoder (usually its own, sometimes another). A decoder may return
//! any error, but must not panic, must not take longer than [`SLOW`] and must not ask for one
//! allocation above [`MAX_ALLOCATION`] (the global allocator below refuses it, which aborts
//! the test binary).
//!
//! Time budget: `TIDELAKE_FUZZ_SECS` (default 20). Seed: `TIDELAKE_FUZZ_SEED` (default: the
//! clock; printed, so a finding can be replayed). Findings become regression tests next to the
//! decoder they broke.

use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tidelake_spec::binary_row::{decode_framed, decode_row};
use tidelake_spec::manifest::{
    read_index_manifest, read_manifest, read_manifest_list, write_index_manifest, write_manifest,
    write_manifest_list, Codec,
};
use tidelake_spec::schema::TableSchema;
use tidelake_spec::snapshot::Snapshot;
use tidelake_spec::types::DataType;

/// Larger single allocations are refused.
const MAX_ALLOCATION: usize = 600 << 20;
/// One decode taking longer than this is a finding.
const SLOW: Duration = Duration::from_secs(2);

struct Capped;

unsafe impl GlobalAlloc for Capped {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOCATION {
            return std::ptr::null_mut();
        }
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > MAX_ALLOCATION {
            return std::ptr::null_mut();
        }
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOC: Capped = Capped;

/// xorshift64*: small, seedable, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn fixtures() -> PathBuf {
    let dir = std::env::var_os("TIDELAKE_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/paimon-v1")
        });
    assert!(
        dir.join("fixtures.json").is_file(),
        "fixtures not found at {}",
        dir.display()
    );
    dir
}

fn files_in(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_in(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Target {
    ManifestList,
    Manifest,
    IndexManifest,
    SnapshotJson,
    SchemaJson,
    BinaryRow,
}

const TARGETS: [Target; 6] = [
    Target::ManifestList,
    Target::Manifest,
    Target::IndexManifest,
    Target::SnapshotJson,
    Target::SchemaJson,
    Target::BinaryRow,
];

struct Corpus {
    seeds: Vec<(Target, Vec<u8>)>,
    /// Row types to decode BinaryRows with: every fixture schema's fields, keys and partitions.
    row_types: Vec<Vec<DataType>>,
}

fn corpus() -> Corpus {
    let mut files = Vec::new();
    files_in(&fixtures().join("warehouse"), &mut files);
    files.sort();
    let mut seeds = Vec::new();
    let mut row_types = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let parent = path
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        let bytes = std::fs::read(&path).unwrap();
        match (parent.as_str(), name.as_str()) {
            ("manifest", n) if n.starts_with("manifest-list-") => {
                let list = read_manifest_list(&bytes).unwrap();
                seeds.push((
                    Target::ManifestList,
                    write_manifest_list(&list, Codec::Null).unwrap(),
                ));
                for m in &list {
                    seeds.push((Target::BinaryRow, m.partition_stats.min_values.clone()));
                }
                seeds.push((Target::ManifestList, bytes));
            }
            ("manifest", n) if n.starts_with("index-manifest-") => {
                let entries = read_index_manifest(&bytes).unwrap();
                seeds.push((
                    Target::IndexManifest,
                    write_index_manifest(&entries, Codec::Null).unwrap(),
                ));
                seeds.push((Target::IndexManifest, bytes));
            }
            ("manifest", n) if n.starts_with("manifest-") => {
                let entries = read_manifest(&bytes).unwrap();
                seeds.push((
                    Target::Manifest,
                    write_manifest(&entries, Codec::Null).unwrap(),
                ));
                for e in entries.iter().take(4) {
                    seeds.push((Target::BinaryRow, e.partition.clone()));
                    seeds.push((Target::BinaryRow, e.file.min_key.clone()));
                    seeds.push((Target::BinaryRow, e.file.value_stats.max_values.clone()));
                }
                seeds.push((Target::Manifest, bytes));
            }
            ("snapshot", n) if n.starts_with("snapshot-") => {
                seeds.push((Target::SnapshotJson, bytes))
            }
            ("schema", n) if n.starts_with("schema-") => {
                let schema = TableSchema::from_json(&bytes).unwrap();
                let types_of = |names: &[String]| -> Vec<DataType> {
                    names
                        .iter()
                        .filter_map(|n| schema.fields.iter().find(|f| &f.name == n))
                        .map(|f| f.data_type.clone())
                        .collect()
                };
                row_types.push(schema.fields.iter().map(|f| f.data_type.clone()).collect());
                row_types.push(types_of(&schema.primary_keys));
                row_types.push(types_of(&schema.partition_keys));
                seeds.push((Target::SchemaJson, bytes));
            }
            _ => {}
        }
    }
    for t in TARGETS {
        assert!(seeds.iter().any(|(s, _)| *s == t), "no seed for {t:?}");
    }
    Corpus { seeds, row_types }
}

const INTERESTING: [u8; 8] = [0x00, 0x01, 0x7f, 0x80, 0xff, b'"', b'{', b'9'];

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut b = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(b.len() + 1);
        match rng.below(8) {
            0 if !b.is_empty() => {
                let i = at.min(b.len() - 1);
                b[i] ^= 1 << rng.below(8);
            }
            1 if !b.is_empty() => {
                let i = at.min(b.len() - 1);
                b[i] = INTERESTING[rng.below(INTERESTING.len())];
            }
            // a huge or negative zig-zag varint where a length or count may be
            2 => {
                let varint: &[u8] = match rng.below(3) {
                    0 => &[0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
                    1 => &[0x81, 0x80, 0x80, 0x80, 0x10],
                    _ => &[0xff, 0xff, 0xff, 0xff, 0x0f],
                };
                let end = (at + varint.len()).min(b.len());
                b.splice(at..end, varint.iter().copied());
            }
            // a big-endian i32 (BinaryRow arity, offsets and lengths)
            3 => {
                let v: [u8; 4] = [0x7f, 0xff, 0xff, 0xff - rng.below(16) as u8];
                let end = (at + 4).min(b.len());
                b.splice(at..end, v);
            }
            4 => {
                let n = 1 + rng.below(16);
                let noise: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                b.splice(at..at, noise);
            }
            5 if at < b.len() => {
                let end = (at + 1 + rng.below(64)).min(b.len());
                b.drain(at..end);
            }
            6 if at < b.len() => {
                let end = (at + 1 + rng.below(64)).min(b.len());
                let copy = b[at..end].to_vec();
                let to = rng.below(b.len() + 1);
                b.splice(to..to, copy);
            }
            _ => b.truncate(at),
        }
    }
    b
}

/// Feed `input` to the decoder of `target`; errors are fine, panics and slowness are not.
fn decode(target: Target, input: &[u8], types: &[DataType]) {
    match target {
        Target::ManifestList => drop(read_manifest_list(input)),
        Target::Manifest => drop(read_manifest(input)),
        Target::IndexManifest => drop(read_index_manifest(input)),
        Target::SnapshotJson => drop(Snapshot::from_json(input)),
        Target::SchemaJson => drop(TableSchema::from_json(input)),
        Target::BinaryRow => {
            drop(decode_framed(input, types));
            drop(decode_row(input, types));
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
#[allow(clippy::disallowed_methods)] // the clock seeds a fresh run unless TIDELAKE_FUZZ_SEED is set; the run lasts real seconds
fn decoders_survive_mutated_input() {
    let secs: u64 = std::env::var("TIDELAKE_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let seed: u64 = std::env::var("TIDELAKE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let corpus = corpus();
    let mut rng = Rng(seed | 1);
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut runs = [0u64; TARGETS.len()];
    // Silence the default hook: a panic is reported below with its input.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut finding = None;
    while Instant::now() < deadline && finding.is_none() {
        let (own, seed_bytes) = &corpus.seeds[rng.below(corpus.seeds.len())];
        let input = mutate(&mut rng, seed_bytes);
        let types = &corpus.row_types[rng.below(corpus.row_types.len())];
        // Cross-feed sometimes: any decoder must survive any other file's bytes too.
        let target = if rng.below(8) == 0 {
            TARGETS[rng.below(TARGETS.len())]
        } else {
            *own
        };
        let started = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| decode(target, &input, types)));
        runs[TARGETS.iter().position(|t| *t == target).unwrap()] += 1;
        if outcome.is_err() || started.elapsed() > SLOW {
            let what = if outcome.is_err() {
                "panicked"
            } else {
                "was slow"
            };
            finding = Some(format!(
                "{target:?} {what} ({:?}) on input {} (types {types:?})",
                started.elapsed(),
                hex(&input)
            ));
        }
    }
    std::panic::set_hook(hook);
    println!(
        "fuzzed {secs}s with TIDELAKE_FUZZ_SEED={seed}: {} inputs {:?}",
        runs.iter().sum::<u64>(),
        TARGETS.iter().zip(runs).collect::<Vec<_>>()
    );
    if let Some(f) = finding {
        panic!("finding (replay with TIDELAKE_FUZZ_SEED={seed}): {f}");
    }
}
