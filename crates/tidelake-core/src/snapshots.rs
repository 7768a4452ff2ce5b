//! Snapshots, tags and their hint files, found the way Java Paimon finds them
//! (`SnapshotManager`, `HintFileUtils`, `TagManager`).
//!
//! Invariants:
//! * `LATEST`/`EARLIEST` are hints only: from `LATEST = k` (or, without it, from `EARLIEST`)
//!   the snapshot files `k+1, k+2, ...` are probed until one is missing (a stale hint costs one
//!   HEAD per snapshot it lags, up to [`MAX_HINT_PROBES`]; no listing, which matters on object
//!   stores), `EARLIEST = k` is trusted when `snapshot-k` exists; otherwise the directory is
//!   listed;
//! * snapshot ids are contiguous between earliest and latest (expiration removes a prefix);
//! * a snapshot or tag file that fails to parse is a [`Error::Corrupt`] naming the file.

use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};
use tidelake_spec::snapshot::{
    parse_hint, parse_snapshot_file_name, snapshot_file_name, tag_file_name, Snapshot, Tag,
};

use crate::error::{Error, Result};
use crate::io::FileIO;

const SNAPSHOT_DIR: &str = "snapshot";
const TAG_DIR: &str = "tag";
const LATEST: &str = "snapshot/LATEST";
const EARLIEST: &str = "snapshot/EARLIEST";

/// How far past a stale `LATEST` hint snapshots are probed before the directory is listed.
pub const MAX_HINT_PROBES: i64 = 64;

/// How many snapshot files are fetched at once when a whole history is loaded.
const PARALLEL_READS: usize = 16;

/// Reads snapshots and tags of one table (or branch) root.
#[derive(Clone, Debug)]
pub struct SnapshotManager {
    io: FileIO,
}

impl SnapshotManager {
    pub fn new(io: FileIO) -> Self {
        SnapshotManager { io }
    }

    fn snapshot_path(id: i64) -> String {
        format!("{SNAPSHOT_DIR}/{}", snapshot_file_name(id))
    }

    async fn read_hint(&self, rel: &str) -> Result<Option<i64>> {
        // A garbled hint is ignored, as Java does: the directory listing is the truth.
        Ok(self.io.read_opt(rel).await?.and_then(|b| parse_hint(&b).ok()))
    }

    /// Ids of all snapshot files, ascending.
    pub async fn list_ids(&self) -> Result<Vec<i64>> {
        let mut ids: Vec<i64> = self
            .io
            .list_dir(SNAPSHOT_DIR)
            .await?
            .iter()
            .filter_map(|f| parse_snapshot_file_name(f.path.rsplit('/').next().unwrap_or("")))
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// The latest snapshot id, or `None` for a table without snapshots.
    pub async fn latest_id(&self) -> Result<Option<i64>> {
        let hint = match self.read_hint(LATEST).await?.filter(|k| *k > 0) {
            Some(k) => Some(k),
            None => self.read_hint(EARLIEST).await?.filter(|k| *k > 0),
        };
        if let Some(k) = hint {
            if self.io.exists(&Self::snapshot_path(k)).await? {
                let mut latest = k;
                while latest - k < MAX_HINT_PROBES {
                    if !self.io.exists(&Self::snapshot_path(latest + 1)).await? {
                        return Ok(Some(latest));
                    }
                    latest += 1;
                }
            }
        }
        Ok(self.list_ids().await?.last().copied())
    }

    /// The earliest snapshot id still present, or `None`.
    pub async fn earliest_id(&self) -> Result<Option<i64>> {
        if let Some(k) = self.read_hint(EARLIEST).await?.filter(|k| *k > 0) {
            if self.io.exists(&Self::snapshot_path(k)).await? {
                return Ok(Some(k));
            }
        }
        Ok(self.list_ids().await?.first().copied())
    }

    /// Read snapshot `id`; a missing one is [`Error::NotFound`] naming the available range.
    pub async fn snapshot(&self, id: i64) -> Result<Snapshot> {
        let rel = Self::snapshot_path(id);
        match self.io.read_opt(&rel).await? {
            Some(bytes) => Snapshot::from_json(&bytes).map_err(|e| Error::from_spec(self.io.display(&rel), e)),
            None => Err(self.missing_snapshot(id).await),
        }
    }

    async fn missing_snapshot(&self, id: i64) -> Error {
        let range = match (self.earliest_id().await, self.latest_id().await) {
            (Ok(Some(e)), Ok(Some(l))) => format!("available snapshots are {e}..={l}"),
            (Ok(None), _) | (_, Ok(None)) => "the table has no snapshots".to_string(),
            _ => "the snapshot directory could not be listed".to_string(),
        };
        Error::not_found("snapshot", format!("snapshot {id} of {}; {range}", self.io.location()))
    }

    pub async fn latest(&self) -> Result<Option<Snapshot>> {
        match self.latest_id().await? {
            Some(id) => Ok(Some(self.snapshot(id).await?)),
            None => Ok(None),
        }
    }

    /// Every snapshot from earliest to latest, in id order.
    pub async fn all(&self) -> Result<Vec<Snapshot>> {
        let ids = self.list_ids().await?;
        stream::iter(ids.into_iter().map(|id| self.snapshot(id)))
            .buffered(PARALLEL_READS)
            .try_collect()
            .await
    }

    /// The newest snapshot committed at or before `timestamp_ms` (Java
    /// `earlierOrEqualTimeMills`), found by binary search over the id range.
    pub async fn at_or_before(&self, timestamp_ms: i64) -> Result<Option<Snapshot>> {
        let (Some(mut lo), Some(mut hi)) = (self.earliest_id().await?, self.latest_id().await?) else {
            return Ok(None);
        };
        let first = self.snapshot(lo).await?;
        if first.time_millis > timestamp_ms {
            return Ok(None);
        }
        let mut best = first;
        while lo < hi {
            let mid = lo + (hi - lo + 1) / 2;
            let snap = self.snapshot(mid).await?;
            if snap.time_millis <= timestamp_ms {
                lo = mid;
                best = snap;
            } else {
                hi = mid - 1;
            }
        }
        Ok(Some(best))
    }

    /// Tag names, sorted.
    pub async fn tag_names(&self) -> Result<Vec<String>> {
        let mut names: Vec<String> = self
            .io
            .list_dir(TAG_DIR)
            .await?
            .iter()
            .filter_map(|f| f.path.rsplit('/').next()?.strip_prefix("tag-").map(str::to_string))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Read tag `name`; a missing one is [`Error::NotFound`] listing the existing tags.
    pub async fn tag(&self, name: &str) -> Result<Tag> {
        let rel = format!("{TAG_DIR}/{}", tag_file_name(name));
        match self.io.read_opt(&rel).await? {
            Some(bytes) => Tag::from_json(&bytes).map_err(|e| Error::from_spec(self.io.display(&rel), e)),
            None => {
                let names = self.tag_names().await.unwrap_or_default();
                Err(Error::not_found(
                    "tag",
                    format!("tag '{name}' of {}; existing tags: [{}]", self.io.location(), names.join(", ")),
                ))
            }
        }
    }

    /// Every tag with its name, sorted by name.
    pub async fn tags(&self) -> Result<Vec<(String, Arc<Tag>)>> {
        let names = self.tag_names().await?;
        stream::iter(names.into_iter().map(|n| async move {
            let tag = self.tag(&n).await?;
            Ok::<_, Error>((n, Arc::new(tag)))
        }))
        .buffered(PARALLEL_READS)
        .try_collect()
        .await
    }
}
