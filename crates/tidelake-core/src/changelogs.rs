//! Long-lived changelogs (Java `Changelog`, `ChangelogManager`): with a decoupled changelog
//! lifecycle (`changelog.num-retained.*` / `changelog.time-retained` above the snapshot
//! retention), expiring snapshot `N` first copies it to `changelog/changelog-N`, so its
//! changelog (or, without a changelog producer, its delta) stays readable until the changelog
//! retention expires it (see [`crate::maintenance::expire`]).
//!
//! Invariants:
//! * `changelog/changelog-N` holds snapshot `N`'s JSON unchanged (Java writes the snapshot's
//!   fields through `Changelog`, a `Snapshot` subclass with the same JSON);
//! * long-lived changelog ids are contiguous and below the earliest snapshot: expiration
//!   writes them in ascending order, each before its snapshot file goes, and deletes them in
//!   ascending order;
//! * `changelog/LATEST` and `changelog/EARLIEST` are hints, trusted only when their file
//!   exists (Java `HintFileUtils.findLatest`/`findEarliest`); otherwise the directory is listed.

use tidelake_spec::snapshot::{parse_hint, Snapshot};

use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::snapshots::{write_hint, MAX_HINT_PROBES};

pub(crate) const CHANGELOG_DIR: &str = "changelog";
const EARLIEST_HINT: &str = "changelog/EARLIEST";
const LATEST_HINT: &str = "changelog/LATEST";

/// `changelog/changelog-<id>`.
pub(crate) fn changelog_path(id: i64) -> String {
    format!("{CHANGELOG_DIR}/changelog-{id}")
}

/// The id of a long-lived changelog file name `changelog-<N>`.
pub(crate) fn changelog_id(name: &str) -> Option<i64> {
    let digits = name.strip_prefix("changelog-")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The long-lived changelogs of one table (or branch) root.
#[derive(Clone, Debug)]
pub(crate) struct ChangelogStore {
    io: FileIO,
}

impl ChangelogStore {
    pub(crate) fn new(io: FileIO) -> Self {
        ChangelogStore { io }
    }

    async fn hint(&self, rel: &str) -> Result<Option<i64>> {
        Ok(self
            .io
            .read_opt(rel)
            .await?
            .and_then(|b| parse_hint(&b).ok())
            .filter(|k| *k > 0))
    }

    /// Ids of every `changelog-N` file, ascending.
    pub(crate) async fn list_ids(&self) -> Result<Vec<i64>> {
        let mut ids: Vec<i64> = self
            .io
            .list_dir(CHANGELOG_DIR)
            .await?
            .iter()
            .filter_map(|f| f.path.rsplit('/').next().and_then(changelog_id))
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    pub(crate) async fn exists(&self, id: i64) -> Result<bool> {
        self.io.exists(&changelog_path(id)).await
    }

    /// The earliest long-lived changelog id (`None` without any).
    pub(crate) async fn earliest_id(&self) -> Result<Option<i64>> {
        if let Some(k) = self.hint(EARLIEST_HINT).await? {
            if self.exists(k).await? {
                return Ok(Some(k));
            }
        }
        Ok(self.list_ids().await?.first().copied())
    }

    /// The latest long-lived changelog id (`None` without any).
    pub(crate) async fn latest_id(&self) -> Result<Option<i64>> {
        if let Some(k) = self.hint(LATEST_HINT).await? {
            if self.exists(k).await? {
                let mut latest = k;
                while latest - k < MAX_HINT_PROBES && self.exists(latest + 1).await? {
                    latest += 1;
                }
                if latest - k < MAX_HINT_PROBES {
                    return Ok(Some(latest));
                }
            }
        }
        Ok(self.list_ids().await?.last().copied())
    }

    /// Long-lived changelog `id`, `None` when there is none.
    pub(crate) async fn read(&self, id: i64) -> Result<Option<Snapshot>> {
        let rel = changelog_path(id);
        match self.io.read_opt(&rel).await? {
            Some(bytes) => Snapshot::from_json(&bytes)
                .map(Some)
                .map_err(|e| Error::from_spec(self.io.display(&rel), e)),
            None => Ok(None),
        }
    }

    /// Keep `snapshot` as long-lived changelog (Java `commitChangelog` then
    /// `commitLongLivedChangelogLatestHint`).
    pub(crate) async fn write(&self, snapshot: &Snapshot) -> Result<()> {
        self.io
            .write(
                &changelog_path(snapshot.id),
                snapshot.to_json().into_bytes(),
            )
            .await?;
        write_hint(&self.io, LATEST_HINT, snapshot.id).await
    }

    pub(crate) async fn delete(&self, id: i64) -> Result<()> {
        self.io.delete(&changelog_path(id)).await
    }

    pub(crate) async fn write_earliest_hint(&self, id: i64) -> Result<()> {
        write_hint(&self.io, EARLIEST_HINT, id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changelog_file_names() {
        assert_eq!(changelog_id("changelog-12"), Some(12));
        assert_eq!(changelog_id("changelog-"), None);
        assert_eq!(changelog_id("changelog-1a"), None);
        assert_eq!(changelog_id("EARLIEST"), None);
        assert_eq!(changelog_path(7), "changelog/changelog-7");
    }
}
