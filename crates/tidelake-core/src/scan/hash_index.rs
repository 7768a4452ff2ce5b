//! Dynamic-bucket `HASH` index files in planning and lookups: a bucket whose index lists none of
//! the hashes of the keys a filter pins ([`super::bucket_filter::BucketFilter::key_hashes`])
//! holds no row of those keys and is not read.
//!
//! Invariants (skipping never changes a result):
//! * a dynamic-bucket writer records the hash of every key it puts in a bucket in that
//!   bucket's index before committing, and never removes one (`crate::write::dynamic_bucket`;
//!   Java `HashIndexMaintainer`), so every bucket holding a version of a key lists its hash;
//! * a bucket without a `HASH` index file in the snapshot is always read;
//! * index files are immutable: with a read cache on the table's I/O they are decoded (and
//!   sorted, for binary search) once; without one a one-off check scans the decoded hashes.

use std::collections::HashSet;
use std::sync::Arc;

use tidelake_spec::manifest::decode_hash_index;

use crate::error::{Error, Result};
use crate::io::FileIO;

/// Most wanted hashes looked up one by one in an unsorted index (more: a hash set).
const LINEAR_WANTED: usize = 8;

/// The key hashes of one bucket's `HASH` index file.
#[derive(Debug)]
pub(crate) struct KeyHashes {
    hashes: Vec<i32>,
    sorted: bool,
}

impl KeyHashes {
    /// Whether the index lists any of `wanted`.
    pub(crate) fn holds_any(&self, wanted: &[i32]) -> bool {
        if self.sorted {
            return wanted.iter().any(|h| self.hashes.binary_search(h).is_ok());
        }
        if wanted.len() <= LINEAR_WANTED {
            return wanted.iter().any(|h| self.hashes.contains(h));
        }
        let wanted: HashSet<i32> = wanted.iter().copied().collect();
        self.hashes.iter().any(|h| wanted.contains(h))
    }
}

/// The hashes `HASH` index file `path` lists, sorted when they are kept (in the read cache,
/// or by the caller: `reused`) so that each later check is a binary search.
pub(crate) async fn load(io: &FileIO, path: &str, reused: bool) -> Result<Arc<KeyHashes>> {
    let cache = io.read_cache();
    if let Some(hashes) = cache.and_then(|c| c.get::<KeyHashes>(path)) {
        return Ok(hashes);
    }
    let bytes = io.read(path).await?;
    let mut hashes = decode_hash_index("hash index", &bytes)
        .map_err(|e| Error::from_spec(io.display(path), e))?;
    let sorted = reused || cache.is_some();
    if sorted {
        hashes.sort_unstable();
    }
    let loaded = Arc::new(KeyHashes { hashes, sorted });
    if let Some(c) = cache {
        c.insert(path, loaded.clone(), bytes.len());
    }
    Ok(loaded)
}

/// The hashes of the `HASH` index files at `paths` ([`index_path`]), each [`load`]ed.
pub(crate) async fn load_all(
    io: &FileIO,
    paths: &[String],
    reused: bool,
) -> Result<Vec<Arc<KeyHashes>>> {
    futures::future::try_join_all(paths.iter().map(|p| load(io, p, reused))).await
}

/// Whether a bucket whose `HASH` index files list `index` may hold a key with one of `wanted`
/// hashes (the pinned keys' hashes, [`super::bucket_filter::BucketFilter::key_hashes`]): true
/// when it has no index file, when some of its files were hashed from other key bytes
/// (`other_key_types`: written under a schema whose key types differ), or when an index file
/// lists one of the hashes.
pub(crate) fn bucket_may_hold(
    index: &[Arc<KeyHashes>],
    wanted: &[i32],
    other_key_types: bool,
) -> bool {
    index.is_empty() || other_key_types || index.iter().any(|h| h.holds_any(wanted))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_and_unsorted_indexes_answer_alike() {
        let hashes: Vec<i32> = (0..100).map(|i| i * 7 - 300).collect();
        let unsorted = KeyHashes {
            hashes: hashes.iter().rev().copied().collect(),
            sorted: false,
        };
        let sorted = KeyHashes {
            hashes,
            sorted: true,
        };
        let many: Vec<i32> = (0..20).map(|i| i * 1000 + 1).collect();
        for wanted in [
            vec![],
            vec![-300],
            vec![1, 2, 3],
            vec![5, 393],
            many.clone(),
        ] {
            let expect = wanted
                .iter()
                .any(|h| (h + 300) % 7 == 0 && (-300..=393).contains(h));
            assert_eq!(unsorted.holds_any(&wanted), expect, "{wanted:?}");
            assert_eq!(sorted.holds_any(&wanted), expect, "{wanted:?}");
        }
        let mut with_hit = many;
        with_hit.push(393);
        assert!(unsorted.holds_any(&with_hit) && sorted.holds_any(&with_hit));
    }

    #[test]
    fn a_bucket_may_hold_a_key_its_index_lists_or_cannot_rule_out() {
        let index = vec![Arc::new(KeyHashes {
            hashes: vec![1, 5, 9],
            sorted: true,
        })];
        assert!(bucket_may_hold(&index, &[9], false));
        assert!(!bucket_may_hold(&index, &[2, 3], false));
        assert!(
            bucket_may_hold(&index, &[2, 3], true),
            "files hashed from other key bytes"
        );
        assert!(
            bucket_may_hold(&[], &[2, 3], false),
            "a bucket without index file"
        );
    }
}
