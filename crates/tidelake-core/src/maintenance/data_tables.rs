//! The system tables that read the table's rows: `ro` (Java `ReadOptimizedTable`) and `binlog`
//! (Java `BinlogTable`, batch read).
//!
//! * `ro`: the latest snapshot's rows without merging work. Primary-key tables read only their
//!   top-level files (level `num-levels - 1`, what a full compaction wrote): rows that later
//!   commits wrote into lower levels are not seen until they are compacted to the top. A split
//!   of top-level files is read raw when none of them holds delete records (Java
//!   `MergeTreeSplitGenerator`: one level, no delete rows), else merged. Append tables read all
//!   their files. The columns are the table's.
//! * `binlog`: the `audit_log` rows with every data column `c` wrapped as a one-element
//!   `ARRAY<c>` (a nullable array of nullable elements), as Java's batch read gives them, and
//!   `rowkind` nullable as Java declares it.

use std::sync::Arc;

use arrow_array::{ArrayRef, ListArray, RecordBatch};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType as ArrowType, Field, Schema};
use futures::stream::TryStreamExt;

use crate::error::{Error, Result};
use crate::maintenance::audit_log::audit_log;
use crate::maintenance::system_tables::SystemTable;
use crate::read::split_read::{read_splits, ReadContext};
use crate::scan::{plan_scan, ScanRequest, Split};
use crate::table::Table;

/// Arrow's name of a list's element field, as [`tidelake_spec::arrow`] names it.
const LIST_ITEM: &str = "item";

pub(crate) async fn read_optimized(table: &Table) -> Result<SystemTable> {
    let plan = plan_scan(table, &ScanRequest::default()).await?;
    let schema = &plan.schema;
    let out = Arc::new(
        tidelake_spec::arrow::to_arrow_schema(&schema.fields)
            .map_err(|e| Error::from_spec("table schema", e))?,
    );
    let splits = if schema.primary_keys.is_empty() {
        plan.splits
    } else {
        let levels = schema
            .options()
            .num_levels()
            .map_err(|e| Error::from_spec("table options", e))?;
        top_level_splits(plan.splits, levels - 1)
    };
    let ctx = Arc::new(ReadContext::whole_rows(table.clone(), schema)?);
    let batches = read_splits(ctx, splits, None).try_collect().await?;
    Ok(SystemTable {
        schema: out,
        batches,
    })
}

/// The splits' files of level `top`, each split raw-convertible when its files have no delete
/// records; splits left without files are dropped.
fn top_level_splits(splits: Vec<Split>, top: i32) -> Vec<Split> {
    splits
        .into_iter()
        .filter_map(|mut split| {
            split.files.retain(|f| f.level == top);
            split.raw_convertible = split
                .files
                .iter()
                .all(|f| f.level != 0 && f.delete_row_count == Some(0));
            (!split.files.is_empty()).then_some(split)
        })
        .collect()
}

pub(crate) async fn binlog(table: &Table) -> Result<SystemTable> {
    let audit = audit_log(table).await?;
    let fields: Vec<Field> = audit
        .schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            if i == 0 {
                // Java's `rowkind` column (`SpecialFields.ROW_KIND`) is a nullable STRING.
                f.as_ref().clone().with_nullable(true)
            } else {
                let item = Field::new(LIST_ITEM, f.data_type().clone(), true);
                Field::new(f.name(), ArrowType::List(Arc::new(item)), true)
                    .with_metadata(f.metadata().clone())
            }
        })
        .collect();
    let out = Arc::new(Schema::new_with_metadata(
        fields,
        audit.schema.metadata().clone(),
    ));
    let batches = audit
        .batches
        .iter()
        .map(|b| {
            let rows = b.num_rows();
            let mut columns: Vec<ArrayRef> = vec![b.column(0).clone()];
            for column in b.columns().iter().skip(1) {
                let item = Field::new(LIST_ITEM, column.data_type().clone(), true);
                let list = ListArray::try_new(
                    Arc::new(item),
                    OffsetBuffer::from_lengths(std::iter::repeat_n(1, rows)),
                    column.clone(),
                    None,
                )
                .map_err(|e| Error::arrow("binlog column", e))?;
                columns.push(Arc::new(list));
            }
            RecordBatch::try_new(out.clone(), columns).map_err(|e| Error::arrow("binlog batch", e))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(SystemTable {
        schema: out,
        batches,
    })
}
