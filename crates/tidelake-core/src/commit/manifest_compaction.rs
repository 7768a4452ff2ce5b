//! Compacting a table's manifests on demand (Java `FileStoreCommitImpl.compactManifest`, the
//! `compact_manifest` procedure): the latest snapshot's data manifests (base + delta) are
//! merged as every commit merges them (see [`super::merge`]) but with
//! `manifest.merge-min-count` = 1 and `manifest.full-compaction-threshold-size` = 1 byte, so
//! every DELETE entry is applied and small manifests are combined, and the result becomes the
//! base of a COMPACT snapshot with an empty delta (commit identifier `Long.MAX_VALUE`, the
//! latest snapshot's properties kept), as Java writes it.
//!
//! Manifests that are not partition-sorted ([`partition_sorted`]: DELETE entries, or ranges of
//! the first partition column that overlap, as commits leave them) are all rewritten, their
//! entries sorted by partition and bucket and rolled at `manifest.target-file-size`, so that
//! each manifest holds a narrow range of partitions and a plan of a few partitions skips the
//! others by their statistics (Java's procedure keeps manifests of the target size as they
//! are; the live files are the same).
//!
//! Invariants: the new snapshot describes the same live files as the one it follows (the
//! merge's invariant); no snapshot is created when merging would leave the manifests as they
//! are; a concurrent commit makes the attempt retry on the new latest snapshot (the commit
//! loop), whose manifests are merged anew. The table's other options (`manifest.target-file-size`,
//! `manifest.compression`, retries) apply as to any commit.

use std::collections::HashSet;

use tidelake_spec::manifest::ManifestFileMeta;
use tidelake_spec::snapshot::{CommitKind, Snapshot, BATCH_COMMIT_IDENTIFIER};

use crate::commit::attempt::{AttemptChanges, Request, Source};
use crate::commit::file_store_commit::FileStoreCommit;
use crate::commit::manifest_writer::CreatedFiles;
use crate::commit::merge::{partition_sorted, Merger};
use crate::commit::metrics::Committed;
use crate::error::Result;
use crate::state::data_manifests;

impl FileStoreCommit {
    /// Merge the latest snapshot's data manifests fully and commit them as a COMPACT snapshot
    /// (see the module docs); nothing is committed when they are already compact or the table
    /// has no snapshot.
    pub async fn compact_manifests(mut self) -> Result<Committed> {
        self.settings.merge.min_count = 1;
        self.settings.merge.full_compaction_threshold = 1;
        let Some(latest) = self.table.snapshot_manager().latest().await? else {
            return Ok(Committed::default());
        };
        let manifests = data_manifests(&self.table, &latest).await?;
        self.settings.merge.rewrite_all =
            manifests.len() > 1 && !partition_sorted(&self.layout, &manifests);
        if !self.settings.merge.rewrite_all && !self.merge_changes(&latest).await? {
            return Ok(Committed::default());
        }
        let properties = latest.properties.clone().unwrap_or_default();
        let request = Request {
            identifier: BATCH_COMMIT_IDENTIFIER,
            kind: CommitKind::Compact,
            detect_conflicts: false,
            properties: &properties,
            operation: None,
            base: None,
            check_new_files: false,
            on_top_of: None,
        };
        let changes = AttemptChanges::default();
        Ok(self
            .try_commit(&mut Source::Fixed(changes), &request)
            .await?
            .into())
    }

    /// Whether merging `latest`'s data manifests with this committer's options changes them
    /// (the merged manifests written to find out are deleted again).
    async fn merge_changes(&self, latest: &Snapshot) -> Result<bool> {
        let before = data_manifests(&self.table, latest).await?;
        let names = |metas: &[ManifestFileMeta]| -> HashSet<String> {
            metas.iter().map(|m| m.file_name.clone()).collect()
        };
        let before_names = names(&before);
        let merger = Merger {
            table: &self.table,
            layout: &self.layout,
            writer: &self.writer,
            options: &self.settings.merge,
            schema_id: latest.schema_id,
        };
        let mut scratch = CreatedFiles::default();
        let merged = merger.merge(before, &mut scratch).await;
        scratch.delete_all(self.table.io()).await;
        Ok(names(&merged?) != before_names)
    }
}
