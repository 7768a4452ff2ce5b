//! Dynamic bucket mode (`bucket = -1` on a primary-key table whose key contains every
//! partition key): the key → bucket map kept in `HASH` index files (Java
//! `HashBucketAssigner` / `SimpleHashBucketAssigner`, `HashIndexFile`).
//!
//! Invariants:
//! * a key hash seen before always goes to its recorded bucket, so a key never lives in two
//!   buckets;
//! * a new hash goes to the lowest bucket holding fewer than `dynamic-bucket.target-row-num`
//!   hashes, or to a new bucket (the lowest unused id) when all are full;
//! * each (partition, bucket) has exactly one live `HASH` index file: the complete list of its
//!   hashes as big-endian int32s. A bucket that gained hashes gets a new file replacing the old.

use std::collections::{BTreeMap, HashMap};

use tidelake_spec::manifest::{decode_hash_index, encode_hash_index, IndexFileMeta, HASH_INDEX};

use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::layout::TableLayout;
use crate::state::{live_index_entries, IndexPaths};
use crate::table::Table;

/// The hash index of one partition.
#[derive(Debug, Default)]
struct PartitionIndex {
    bucket_of: HashMap<i32, i32>,
    /// Hashes per bucket, in insertion order (old ones first).
    hashes: BTreeMap<i32, Vec<i32>>,
    /// The live index file of each bucket before this write.
    files: HashMap<i32, IndexFileMeta>,
    /// Buckets that gained hashes since loading.
    changed: Vec<i32>,
}

/// The directory of `bucket` of (framed) `partition`, relative to the table root.
fn bucket_dir(layout: &TableLayout, partition: &[u8], bucket: i32) -> Result<String> {
    layout.bucket_path(&layout.decode_partition(partition)?, bucket)
}

/// Index files to commit for one (partition, bucket).
#[derive(Debug)]
pub struct IndexUpdate {
    pub partition: Vec<u8>,
    pub bucket: i32,
    pub new_file: IndexFileMeta,
    pub old_file: Option<IndexFileMeta>,
}

/// Assigns buckets to key hashes for every partition a writer touches.
#[derive(Debug)]
pub struct DynamicBucketAssigner {
    target_rows: u64,
    partitions: HashMap<Vec<u8>, PartitionIndex>,
    /// Live HASH index files of the snapshot the writer started from, by partition.
    existing: HashMap<Vec<u8>, Vec<(i32, IndexFileMeta)>>,
    io: FileIO,
    layout: TableLayout,
    paths: IndexPaths,
    file_prefix: String,
    file_counter: usize,
}

impl DynamicBucketAssigner {
    /// Load the index file list of the latest snapshot (hash files are read lazily per
    /// partition); with `ignore_previous` (overwrites) start from an empty index.
    pub async fn new(table: &Table, target_rows: u64, ignore_previous: bool) -> Result<Self> {
        let mut existing: HashMap<Vec<u8>, Vec<(i32, IndexFileMeta)>> = HashMap::new();
        let live = match ignore_previous {
            true => None,
            false => {
                table
                    .snapshot_manager()
                    .read_latest(|snap| async move { live_index_entries(table, &snap).await })
                    .await?
            }
        };
        for e in live.map_or_else(Vec::new, |(_, entries)| entries) {
            if e.index_file.index_type == HASH_INDEX {
                existing
                    .entry(e.partition)
                    .or_default()
                    .push((e.bucket, e.index_file));
            }
        }
        Ok(DynamicBucketAssigner {
            target_rows: target_rows.max(1),
            partitions: HashMap::new(),
            existing,
            io: table.io().clone(),
            layout: TableLayout::new(table.schema())?,
            paths: IndexPaths::new(table.schema())?,
            file_prefix: format!("index-{}-", table.env().uuid()),
            file_counter: 0,
        })
    }

    async fn load(&mut self, partition: &[u8]) -> Result<()> {
        if self.partitions.contains_key(partition) {
            return Ok(());
        }
        let mut index = PartitionIndex::default();
        for (bucket, file) in self.existing.remove(partition).unwrap_or_default() {
            let rel = self
                .paths
                .path(&bucket_dir(&self.layout, partition, bucket)?, &file);
            let bytes = match self.io.read_opt(&rel).await? {
                Some(bytes) => bytes,
                // Replaced by a concurrent commit and expired since this writer opened: this
                // write's index would replace a file that is no longer live, a certain conflict.
                None => {
                    return Err(Error::CommitConflict(format!(
                        "the key index of bucket {bucket} ({}) was replaced and expired since this writer opened; \
                         write again",
                        self.io.display(&rel)
                    )))
                }
            };
            let hashes = decode_hash_index("hash index", &bytes)
                .map_err(|e| Error::from_spec(self.io.display(&rel), e))?;
            for h in &hashes {
                index.bucket_of.insert(*h, bucket);
            }
            index.hashes.entry(bucket).or_default().extend(hashes);
            index.files.insert(bucket, file);
        }
        self.partitions.insert(partition.to_vec(), index);
        Ok(())
    }

    /// The bucket of each hash of `partition`, assigning new hashes.
    pub async fn assign(&mut self, partition: &[u8], hashes: &[i32]) -> Result<Vec<i32>> {
        self.load(partition).await?;
        let target = self.target_rows;
        let index = self.partitions.get_mut(partition).expect("loaded above");
        Ok(hashes
            .iter()
            .map(|h| {
                if let Some(b) = index.bucket_of.get(h) {
                    return *b;
                }
                let bucket = index
                    .hashes
                    .iter()
                    .find(|(_, hs)| (hs.len() as u64) < target)
                    .map(|(b, _)| *b)
                    .unwrap_or_else(|| {
                        (0..)
                            .find(|b| !index.hashes.contains_key(b))
                            .expect("a free bucket id exists")
                    });
                index.bucket_of.insert(*h, bucket);
                index.hashes.entry(bucket).or_default().push(*h);
                if !index.changed.contains(&bucket) {
                    index.changed.push(bucket);
                }
                bucket
            })
            .collect())
    }

    /// Write a new index file for every bucket that gained hashes; returns what to commit.
    pub async fn flush(&mut self) -> Result<Vec<IndexUpdate>> {
        let mut updates = Vec::new();
        let mut parts: Vec<_> = self.partitions.iter_mut().collect();
        parts.sort_by(|a, b| a.0.cmp(b.0));
        for (partition, index) in parts {
            for bucket in std::mem::take(&mut index.changed) {
                let hashes = &index.hashes[&bucket];
                let bytes = encode_hash_index(hashes);
                let name = format!("{}{}", self.file_prefix, self.file_counter);
                self.file_counter += 1;
                let dir = bucket_dir(&self.layout, partition, bucket)?;
                let path = self.paths.new_path(&self.io, &dir, &name)?;
                self.io.write(&path.path, bytes.clone()).await?;
                let new_file = IndexFileMeta {
                    index_type: HASH_INDEX.to_string(),
                    file_name: name,
                    file_size: bytes.len() as i64,
                    row_count: hashes.len() as i64,
                    dv_ranges: None,
                    external_path: path.external,
                    global_index: None,
                };
                let old_file = index.files.insert(bucket, new_file.clone());
                updates.push(IndexUpdate {
                    partition: partition.clone(),
                    bucket,
                    new_file,
                    old_file,
                });
            }
        }
        Ok(updates)
    }
}
