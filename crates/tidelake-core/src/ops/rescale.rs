//! Rescale ([`Rescale`]; Java `RescaleAction`, Flink's `CALL sys.rescale(table, bucket_num,
//! partition)`): the rows of a fixed-bucket table, or of its selected partitions, rewritten into
//! another number of buckets in one OVERWRITE snapshot, so that a partition's bucket count can
//! change (after `ALTER TABLE ... SET ('bucket' = ...)`, or for one partition alone).
//!
//! ```text
//!  latest snapshot S ─► rows of the selected partitions (merged, deletion vectors applied)
//!        ─► overwrite writer with `bucket_num` buckets (no sequence numbers restored)
//!        ─► one OVERWRITE snapshot of exactly the partitions read, refused if any of their
//!           data or index files changed since S
//! ```
//!
//! Rules (Java's): the table needs a snapshot, and the selection a data file, else
//! [`Error::Invalid`] ("no need to rescale"); `bucket_num` defaults to the table's `bucket`
//! option, and a postpone-bucket table (`bucket = -2`) needs it. The table's `bucket` option is
//! not changed: the rewritten partitions keep `bucket_num` buckets (writers keep a partition's
//! count), partitions written later get the option's.
//!
//! Stricter than Java: tables without a bucket count (`bucket = -1`: dynamic-bucket primary
//! keys and bucket-unaware appends) are refused ([`Error::Unsupported`]), since their files
//! would get a count their writers do not follow; a postpone-bucket table whose selected
//! partitions still hold rows in the postpone bucket is refused until they are compacted
//! (batch reads do not see those rows, and the overwrite would drop them). Java commits with
//! `commit.strict-mode.last-safe-snapshot`, which refuses another user's COMPACT or OVERWRITE
//! since S but replaces rows appended meanwhile; here the overwrite replaces exactly what was
//! read ([`TableCommit::overwriting_read_at`]): any commit to the selected partitions since S
//! refuses it with [`Error::CommitConflict`], and nothing acknowledged is lost.
//!
//! Memory: rows stream from the reader into the writer, whose buffers are bounded by
//! `write-buffer-size`. Failure: every file written is deleted before the error returns.

use std::collections::BTreeSet;

use tidelake_spec::bucket::POSTPONE_BUCKET;
use tidelake_spec::snapshot::Snapshot;

use crate::commit::{Committed, OverwriteScope, PartitionMatcher};
use crate::error::{Error, Result};
use crate::layout::TableLayout;
use crate::scan::predicate::Predicate;
use crate::state::{LiveFiles, Pruning};
use crate::table::Table;
use crate::write::table_write::TableWrite;

use super::{Read, TableCommit};

/// The rescale of a table into `bucket_num` buckets (by default its `bucket` option), every
/// partition or those [`Rescale::partitions`] selects.
#[derive(Debug, Clone)]
pub struct Rescale {
    table: Table,
    bucket_num: Option<i32>,
    partitions: Option<Predicate>,
}

impl Rescale {
    pub fn new(table: &Table) -> Rescale {
        Rescale {
            table: table.clone(),
            bucket_num: None,
            partitions: None,
        }
    }

    /// The number of buckets the rows are rewritten into.
    pub fn bucket_num(mut self, buckets: i32) -> Rescale {
        self.bucket_num = Some(buckets);
        self
    }

    /// Only the partitions `filter` (on partition columns) selects.
    pub fn partitions(mut self, filter: Predicate) -> Rescale {
        self.partitions = Some(filter);
        self
    }

    /// Check, rewrite and commit (see the module docs): the OVERWRITE snapshot.
    pub async fn run(self) -> Result<Committed> {
        let table = self.table.reopen().await?;
        let buckets = self.buckets(&table)?;
        let planned = Read::of_partitions(&table, self.partitions.as_ref())?
            .plan()
            .await?;
        let Some(snapshot) = planned.plan.snapshot.clone() else {
            return Err(Error::invalid(format!(
                "table {} has no snapshot: no need to rescale",
                table.location()
            )));
        };
        self.refuse_postponed_rows(&table, &snapshot).await?;
        let splits = planned.plan.splits;
        let partitions: BTreeSet<Vec<u8>> = splits.iter().map(|s| s.partition.clone()).collect();
        if partitions.is_empty() {
            return Err(Error::invalid(
                "the selected partitions have no data files: no need to rescale",
            ));
        }
        let user = format!("tidelake-rescale-{}", table.env().uuid());
        let commit = TableCommit::new(table.clone(), user).overwriting_read_at(snapshot.id);
        let mut write = TableWrite::for_overwrite_into(table.clone(), buckets).await?;
        let messages = planned.reader.write_into(splits, &mut write).await?;
        let scope = OverwriteScope::of_partitions(&TableLayout::new(table.schema())?, &partitions)?;
        let committed = commit.overwrite(scope, messages.clone()).await;
        if committed.is_err() {
            commit.discard_unless_landed(&messages).await;
        }
        committed
    }

    /// A postpone-bucket table's rows not yet compacted into real buckets are not read, so a
    /// rescale of their partitions would drop them: refused until they are compacted.
    async fn refuse_postponed_rows(&self, table: &Table, snapshot: &Snapshot) -> Result<()> {
        let layout = TableLayout::new(table.schema())?;
        let mut selected = PartitionMatcher::of_predicate(&layout, self.partitions.as_ref())?;
        let postponed = LiveFiles::read(
            table,
            snapshot,
            Pruning::all().buckets(|b| b == POSTPONE_BUCKET),
        )
        .await?
        .into_entries();
        for e in postponed {
            let hit = match selected.as_mut() {
                Some(m) => m.matches(&layout, &e.partition)?,
                None => true,
            };
            if hit {
                return Err(Error::invalid(format!(
                    "partition {} holds rows in the postpone bucket that batch reads do not \
                     see yet: compact the table first, then rescale",
                    layout.partition_path(&layout.decode_partition(&e.partition)?)?
                )));
            }
        }
        Ok(())
    }

    /// The bucket count to write, after Java's checks (see the module docs).
    fn buckets(&self, table: &Table) -> Result<i32> {
        let option = table
            .schema()
            .options()
            .bucket()
            .map_err(|e| Error::from_spec("table options", e))?;
        match (option, self.bucket_num) {
            (_, Some(n)) if n <= 0 => Err(Error::invalid(format!(
                "bucket_num must be a positive number of buckets, not {n}"
            ))),
            (-1, _) => Err(Error::Unsupported(
                "rescaling a table with 'bucket' = '-1' (dynamic-bucket primary keys or a \
                 bucket-unaware append table): it has no bucket count to change"
                    .to_string(),
            )),
            (POSTPONE_BUCKET, None) => Err(Error::invalid(
                "rescaling a postpone-bucket table ('bucket' = '-2') needs the resulting \
                 bucket_num",
            )),
            (_, Some(n)) => Ok(n),
            (n, None) => Ok(n),
        }
    }
}
