//! The compaction a writer drives, as the writer sees it (Java `CompactManager`, which
//! `MergeTreeWriter` takes from `KeyValueFileStoreWrite#createWriter` instead of building it).
//!
//! [`TableWrite`](super::table_write::TableWrite) holds no compaction logic: its caller passes a
//! [`CompactionFactory`], the writer builds its [`WriterCompaction`] with it when the table
//! compacts in writers (primary-key tables that are not `write-only`, not postpone-bucket
//! tables, not overwrite writers), and calls it at three points of each bucket's life:
//!
//! * after every level-0 flush of the bucket ([`WriterCompaction::after_flush`]);
//! * at `prepare_commit`, once per touched bucket, to move what compaction did since the last
//!   `prepare_commit` into the bucket's message ([`WriterCompaction::prepare`]), then once
//!   for the writer ([`WriterCompaction::end_cycle`]);
//! * at `abort`, once per touched bucket ([`WriterCompaction::abort`]).
//!
//! The implementation (compaction inside writers, `crate::compact`) lives above the write
//! layer; this trait is all the writer knows of it, so `write` never depends on `compact`.
//!
//! Invariants the writer relies on: compaction is best effort (it never fails or loses a
//! write: `after_flush` and `prepare` report nothing), it only ever fills the `compact_*`
//! fields of a message, and `abort` leaves no file of it that no message references.

use async_trait::async_trait;
use tidelake_spec::manifest::DataFileMeta;

use crate::error::Result;
use crate::table::Table;
use crate::write::message::CommitMessage;

/// One bucket a writer writes: (partition, bucket, the partition's bucket count).
#[derive(Debug, Clone, Copy)]
pub struct BucketRef<'a> {
    pub partition: &'a [u8],
    pub bucket: i32,
    pub total_buckets: i32,
}

/// The compaction of one writer's buckets (each bucket keyed by partition and bucket).
#[async_trait]
pub trait WriterCompaction: Send {
    /// `flushed` were just written to level 0 of `target`; `unlisted` are all files the writer
    /// flushed to it since its last `prepare_commit` (`flushed` included), which a view of the
    /// bucket loaded now from the latest snapshot lacks.
    async fn after_flush(
        &mut self,
        target: BucketRef<'_>,
        flushed: &[DataFileMeta],
        unlisted: &[DataFileMeta],
    );

    /// Move the compaction increment of the bucket of `message` (its partition and bucket) into
    /// its `compact_*` fields (Java `prepareCommit(waitCompaction)`).
    async fn prepare(&mut self, message: &mut CommitMessage);

    /// Every touched bucket was prepared: the next cycle starts.
    fn end_cycle(&mut self);

    /// Stop the bucket's compaction and delete every file it wrote that no message holds.
    async fn abort(&mut self, partition: &[u8], bucket: i32) -> Result<()>;

    /// Whether `prepare` waits for the compactions it triggers (see
    /// [`TableWrite::set_wait_compaction`](super::table_write::TableWrite::set_wait_compaction)).
    fn set_wait(&mut self, wait: bool);

    /// The sorted runs of each bucket in the compaction's view.
    #[cfg(test)]
    fn sorted_runs(&self) -> Vec<usize>;
}

/// Builds the compaction of a new writer of `table` (Java `createCompactManager`).
pub type CompactionFactory = fn(&Table) -> Result<Box<dyn WriterCompaction>>;
