//! Sort compaction ([`SortCompaction`]; Java `CompactProcedure.sortCompactUnAwareBucketTable`,
//! `CALL sys.compact(order_strategy => ..., order_by => ...)`): the rows of the selected
//! partitions of a bucket-unaware append table rewritten in an order (`order`, `zorder`,
//! `hilbert`, see [`RowOrder`]), so that the files' statistics on those columns let reads skip
//! files (data skipping).
//!
//! ```text
//!  latest snapshot ─► splits of the selected partitions (deletion vectors applied)
//!        ─► per partition: rows ─► overwrite writer sorting in the order (external sort:
//!           spills past `write-buffer-size`, see `crate::write::external_sort`)
//!           ─► rolling files of `target-file-size`
//!        ─► one snapshot replacing exactly the files read (a row-level commit)
//! ```
//!
//! Rules (Java's): bucket-unaware append tables only (`bucket = -1`, no primary key), else
//! [`Error::Unsupported`]; the order columns must exist, be orderable and not be partition
//! columns, `hilbert` needs two of them, the partition filter may only use partition columns,
//! and tables with `clustering.incremental` are refused (Java: "do not support sort compact"),
//! all [`Error::Invalid`]. Nothing selected: nothing committed.
//!
//! Memory: one partition is sorted at a time, its unsorted run bounded by `write-buffer-size`
//! plus a merge's batches (see `crate::write::external_sort`); its spilled runs are local
//! temporary files removed once the partition is written, or on failure.
//!
//! Failure: before the commit, every file written is deleted.
//!
//! Concurrency (stricter than Java, whose commit is a partition overwrite that replaces rows
//! another writer committed to a selected partition while the sort ran): the commit removes
//! exactly the files read and adds the sorted ones, refused if a commit since removed or
//! changed a file read (`TableCommit::row_level`). Rows appended meanwhile stay, in their own
//! (unsorted) files: no acknowledged write is lost. The deletion vectors of the files read
//! leave with them (their rows were read with the vectors applied); a commit since that
//! deleted more rows of a file read is a conflict too.

use std::collections::BTreeMap;

use tidelake_spec::options::OrderType;

use crate::commit::Committed;
use crate::error::{Error, Result};
use crate::scan::predicate::Predicate;
use crate::scan::Split;
use crate::table::Table;
use crate::write::sort_key::RowOrder;
use crate::write::table_write::TableWrite;

use super::{Read, TableCommit};

/// The sort compaction of a table: its rows in `order` by `columns`, every partition or those
/// [`SortCompaction::partitions`] selects.
#[derive(Debug, Clone)]
pub struct SortCompaction {
    table: Table,
    order: OrderType,
    columns: Vec<String>,
    partitions: Option<Predicate>,
}

impl SortCompaction {
    pub fn new(table: &Table, order: OrderType, columns: Vec<String>) -> SortCompaction {
        SortCompaction {
            table: table.clone(),
            order,
            columns,
            partitions: None,
        }
    }

    /// Only the partitions `filter` (on partition columns) selects.
    pub fn partitions(mut self, filter: Predicate) -> SortCompaction {
        self.partitions = Some(filter);
        self
    }

    /// Check the request against the latest schema, sort and commit (see the module docs): the
    /// OVERWRITE snapshot, none when nothing was selected.
    pub async fn run(self) -> Result<Committed> {
        let table = self.table.reopen().await?;
        let order = self.check(&table)?;
        let planned = Read::of_partitions(&table, self.partitions.as_ref())?
            .plan()
            .await?;
        let mut partitions: BTreeMap<Vec<u8>, Vec<Split>> = BTreeMap::new();
        for split in planned.plan.splits {
            partitions
                .entry(split.partition.clone())
                .or_default()
                .push(split);
        }
        if partitions.is_empty() {
            return Ok(Committed::default());
        }
        let read_snapshot = planned.plan.snapshot.as_ref().map(|snap| snap.id);
        let rewritten: Vec<Split> = partitions.values().flatten().cloned().collect();
        let user = format!("tidelake-sort-compact-{}", table.env().uuid());
        let mut write = TableWrite::for_overwrite(table.clone())
            .await?
            .sorted_by(order)?;
        let mut messages = Vec::new();
        for (_, splits) in partitions {
            // one partition sorted at a time: its spilled runs go at each prepare
            match planned.reader.write_into(splits, &mut write).await {
                Ok(m) => messages.extend(m),
                Err(e) => {
                    TableCommit::new(table.clone(), user.clone())
                        .discard(&messages)
                        .await;
                    return Err(e);
                }
            }
        }
        let commit = TableCommit::new(table.clone(), user);
        let committed = commit
            .row_level(messages.clone(), &rewritten, read_snapshot)
            .await;
        if committed.is_err() {
            commit.discard_unless_landed(&messages).await;
        }
        committed
    }

    /// The order, after Java's checks (see the module docs).
    fn check(&self, table: &Table) -> Result<RowOrder> {
        let schema = table.schema();
        let in_partition: Vec<&String> = self
            .columns
            .iter()
            .filter(|c| schema.partition_keys.contains(c))
            .collect();
        if !in_partition.is_empty() {
            return Err(Error::invalid(format!(
                "order_by should not contain partition cols, because it is meaningless, your \
                 order_by cols are {:?}, and partition cols are {:?}",
                self.columns, schema.partition_keys
            )));
        }
        let opts = schema.options();
        let spec = |e| Error::from_spec("table options", e);
        if opts.clustering_incremental().map_err(spec)? {
            return Err(Error::invalid(
                "the table has 'clustering.incremental' = 'true' (incremental clustering): \
                 Paimon does not sort-compact such tables",
            ));
        }
        if !schema.primary_keys.is_empty() || opts.bucket().map_err(spec)? != -1 {
            return Err(Error::Unsupported(format!(
                "sort compaction ({}) of a table that is not a bucket-unaware append table \
                 (bucket = -1 without a primary key); Paimon only supports unaware-bucket \
                 append-only tables",
                self.order
            )));
        }
        RowOrder::new(schema, &self.columns, self.order)
    }
}
