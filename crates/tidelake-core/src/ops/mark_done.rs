//! Marking partitions done (Java `PartitionMarkDoneAction`): the `mark_partition_done`
//! procedure ([`mark_partitions_done`]) and the end of a batch write on a table with
//! `partition.end-input-to-done` ([`mark_written_done`], as Java Spark's
//! `markDoneIfNeeded`: the distinct partitions of the write's commit messages).
//!
//! Invariants: an action tidelake does not implement (anything but `success-file`) is refused
//! with [`Error::Unsupported`] before any marker is written; the `success-file` action writes
//! `<table>/<partition path>/_SUCCESS` with Java's JSON, keeping the creation time of a marker
//! already there and setting the modification time to the [`crate::io::Env`] clock's now. A
//! marker is written after the commit it follows, so a failure to mark never loses a write: the
//! commit stands and the storage error names the marker not written.

use std::collections::BTreeSet;

use tidelake_spec::datum::Datum;
use tidelake_spec::options::{
    MarkDoneAction, SuccessFile, PARTITION_MARK_DONE_ACTION, SUCCESS_FILE_NAME,
};

use crate::error::{Error, Result};
use crate::layout::TableLayout;
use crate::table::Table;
use crate::write::message::CommitMessage;

/// Mark the partitions of `specs` (each naming every partition column) done by the table's
/// `partition.mark-done-action`.
pub async fn mark_partitions_done(table: &Table, specs: Vec<Vec<(String, Datum)>>) -> Result<()> {
    let keys = &table.schema().partition_keys;
    if keys.is_empty() {
        return Err(Error::invalid(format!(
            "{} is not partitioned: there is no partition to mark done",
            table.location()
        )));
    }
    let mut partitions = Vec::with_capacity(specs.len());
    for spec in specs {
        let values = keys
            .iter()
            .map(|key| {
                spec.iter()
                    .find(|(name, _)| name == key)
                    .map(|(_, value)| value.clone())
                    .ok_or_else(|| {
                        Error::invalid(format!(
                            "a partition to mark done must give every partition column \
                             {keys:?}; '{key}' is missing"
                        ))
                    })
            })
            .collect::<Result<Vec<Datum>>>()?;
        partitions.push(values);
    }
    mark_done(table, &partitions).await
}

/// The distinct framed partitions of `messages`.
pub fn written_partitions(messages: &[CommitMessage]) -> BTreeSet<Vec<u8>> {
    messages.iter().map(|m| m.partition.clone()).collect()
}

/// After a batch write committed to `written` ([`written_partitions`]): mark them done when
/// the table asks for it (`partition.end-input-to-done`, partitioned tables only).
pub async fn mark_written_done(table: &Table, written: &BTreeSet<Vec<u8>>) -> Result<()> {
    let options = table.schema().options();
    if table.schema().partition_keys.is_empty()
        || !options
            .partition_mark_done_when_end_input()
            .map_err(|e| Error::from_spec("table options", e))?
    {
        return Ok(());
    }
    let layout = TableLayout::new(table.schema())?;
    let partitions = written
        .iter()
        .map(|p| layout.decode_partition(p))
        .collect::<Result<Vec<_>>>()?;
    mark_done(table, &partitions).await
}

/// Run the table's mark-done actions on `partitions` (decoded values in key order).
async fn mark_done(table: &Table, partitions: &[Vec<Datum>]) -> Result<()> {
    let actions = table
        .schema()
        .options()
        .partition_mark_done_actions()
        .map_err(|e| Error::from_spec("table options", e))?;
    if let Some(other) = actions.iter().find(|a| **a != MarkDoneAction::SuccessFile) {
        return Err(Error::Unsupported(format!(
            "{}: option '{PARTITION_MARK_DONE_ACTION}' asks for '{other}': tidelake marks \
             partitions done with 'success-file' only",
            table.location()
        )));
    }
    let layout = TableLayout::new(table.schema())?;
    for values in partitions {
        let path = format!("{}/{SUCCESS_FILE_NAME}", layout.partition_path(values)?);
        write_success_file(table, &path).await?;
    }
    Ok(())
}

/// Create or update the `_SUCCESS` file at `path` (relative to the table root).
async fn write_success_file(table: &Table, path: &str) -> Result<()> {
    let now = table.env().now_millis();
    let file = match table.io().read_opt(path).await? {
        Some(bytes) => SuccessFile {
            modification_time: now,
            ..SuccessFile::from_json(&String::from_utf8_lossy(&bytes))
                .map_err(|e| Error::corrupt(path, e))?
        },
        None => SuccessFile {
            creation_time: now,
            modification_time: now,
        },
    };
    table.io().write(path, file.to_json()).await
}
