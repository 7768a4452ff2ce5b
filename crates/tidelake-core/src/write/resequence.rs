//! Re-sequencing a write's own files so that it can land after commits made since its writer
//! opened, instead of being refused and written again from its source.
//!
//! A primary-key writer numbers its rows above each bucket's largest sequence number at its
//! base snapshot. When another writer committed overlapping keys to the bucket meanwhile, the
//! commit refuses the write (it would land ordered before an older one, see
//! `commit::new_files`). The write's new files in such a bucket are then rewritten with every
//! sequence number raised by one offset per bucket, so that they order above everything
//! committed there while keeping their own order, and the commit is tried again: the write
//! committed last wins, as if its writer had opened after the other commit. Values, schema,
//! level, file source and format are kept; only `_SEQUENCE_NUMBER` and the metadata that
//! follows from it change, so every reader (Java's too) reads them as any level-0 file.
//!
//! Invariants: the caller decides which buckets qualify (`FileStoreCommit::stale_sequences`:
//! only plain new files, no compaction results or index changes); the original files are
//! kept, to be deleted by the caller once the rewritten ones are committed; on any error every
//! file written here is deleted.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use futures::TryStreamExt;
use tidelake_spec::manifest::{DataFileMeta, FileSource};

use crate::error::{Error, Result};
use crate::layout::TableLayout;
use crate::read::data_file::{read_data_file, FileFormat, SystemColumns};
use crate::table::Table;
use crate::write::file_writer::{FileLayout, RollingWriter, WriterConfig};
use crate::write::message::{BucketId, CommitMessage};

/// Rows per batch while a file is rewritten.
const BATCH_ROWS: usize = 4096;

/// Messages whose files were rewritten, and the files involved (paths relative to the root).
#[derive(Debug, Default)]
pub(crate) struct Resequenced {
    pub(crate) messages: Vec<CommitMessage>,
    /// The originals the rewritten files replace.
    pub(crate) replaced: Vec<String>,
    /// The rewritten files.
    pub(crate) written: Vec<String>,
}

/// Rewrite the new files of `messages` in each bucket of `above` so that their sequence
/// numbers start above the bucket's entry there; the messages' base becomes `base`, the
/// snapshot `above` was read at.
pub(crate) async fn resequence(
    table: &Table,
    messages: Vec<CommitMessage>,
    above: &HashMap<BucketId, i64>,
    base: i64,
) -> Result<Resequenced> {
    let layout = TableLayout::new(table.schema())?;
    let mut lowest: HashMap<BucketId, i64> = HashMap::new();
    for m in &messages {
        for f in &m.new_files {
            let low = lowest
                .entry((m.partition.clone(), m.bucket))
                .or_insert(i64::MAX);
            *low = (*low).min(f.min_sequence_number);
        }
    }
    let mut out = Resequenced::default();
    let result = async {
        for mut m in messages {
            let id = (m.partition.clone(), m.bucket);
            let shift = above
                .get(&id)
                .map(|&max| max.saturating_add(1).saturating_sub(lowest[&id]))
                .filter(|s| *s > 0);
            if let Some(shift) = shift {
                let dir = layout.bucket_path(&layout.decode_partition(&m.partition)?, m.bucket)?;
                let mut files = Vec::with_capacity(m.new_files.len());
                for f in &m.new_files {
                    let rewritten = rewrite(table, &dir, f, shift).await?;
                    out.replaced.push(f.path(&dir));
                    out.written.extend(rewritten.iter().map(|r| r.path(&dir)));
                    files.extend(rewritten);
                }
                m.new_files = files;
                m.base_snapshot = Some(base);
            }
            out.messages.push(m);
        }
        Ok::<_, Error>(())
    }
    .await;
    match result {
        Ok(()) => Ok(out),
        Err(e) => {
            for path in &out.written {
                let _ = table.io().delete(path).await; // already failing: the first error wins
            }
            Err(e)
        }
    }
}

/// `file` of bucket directory `dir` written again with sequence numbers raised by `shift`.
async fn rewrite(
    table: &Table,
    dir: &str,
    file: &DataFileMeta,
    shift: i64,
) -> Result<Vec<DataFileMeta>> {
    let schema = table.schema_by_id(file.schema_id).await?;
    let path = file.path(dir);
    let stream = read_data_file(
        table.io(),
        &path,
        FileFormat::from_file_name(&file.file_name)?,
        &schema.fields,
        &schema.fields,
        SystemColumns::KeyValue,
        None,
        BATCH_ROWS,
        None,
    )
    .await?;
    let options = schema.options();
    let mut writer = RollingWriter::new(
        table.io().clone(),
        dir.to_string(),
        Arc::clone(&schema),
        FileLayout::KeyValue,
        file.level,
        file.file_source.unwrap_or(FileSource::Append),
        options.data_file_prefix().to_string(),
        WriterConfig::from_options(options, FileLayout::KeyValue, file.level, false)?,
    )?;
    let copied = async {
        let mut stream = stream;
        while let Some(batch) = stream.try_next().await? {
            writer.write(&shifted(&batch, shift, &path)?).await?;
        }
        Ok::<_, Error>(())
    }
    .await;
    match copied {
        Ok(()) => writer.close().await,
        Err(e) => {
            let _ = writer.abort().await; // already failing: the first error wins
            Err(e)
        }
    }
}

/// `batch` (key-value rows, `_SEQUENCE_NUMBER` first) with every sequence number + `shift`.
fn shifted(batch: &RecordBatch, shift: i64, path: &str) -> Result<RecordBatch> {
    let numbers = batch.column(0).as_primitive::<Int64Type>();
    let raised: Vec<i64> = numbers
        .values()
        .iter()
        .map(|n| n.checked_add(shift))
        .collect::<Option<_>>()
        .ok_or_else(|| Error::corrupt(path, "sequence numbers too large to re-sequence"))?;
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    columns[0] = Arc::new(Int64Array::from(raised));
    RecordBatch::try_new(batch.schema(), columns)
        .map_err(|e| Error::arrow("re-sequencing a data file", e))
}
