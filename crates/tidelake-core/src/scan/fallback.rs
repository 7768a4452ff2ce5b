//! `scan.fallback-branch` on batch reads (Java `FallbackReadFileStoreTable`): the partitions
//! the branch read has no split for are read from the fallback branch.
//!
//! As Java: the fallback branch is the table's (latest) `scan.fallback-branch`, for time travel
//! too; a partition is complete when the branch's plan (after filtering) has a split for it;
//! the fallback branch is planned with the same filter and its splits of the other partitions
//! are added, marked with the fallback branch (their files' schemas are that branch's); both
//! branches must have the same columns (ignoring nullability; here also by name) and primary
//! keys; a snapshot id is translated to the fallback branch's snapshot at or before the
//! snapshot's time (the first snapshot when there is none); a tag read adds nothing (see
//! [`add_fallback_splits`]); the bucket option is not passed on.

use std::collections::HashSet;

use crate::branch::SCAN_FALLBACK_BRANCH;
use crate::error::{Error, Result};
use crate::scan::plan::{plan_branch, ScanPlan, ScanRequest, SnapshotSelector};
use crate::table::Table;

/// The fallback branch of the read, if any and not the table's own branch: from the read's
/// options, else the table's latest schema (Java decides by the table's current options, also
/// for time travel).
fn fallback_branch<'a>(table: &'a Table, request: &'a ScanRequest) -> Option<&'a str> {
    let dynamic = request
        .options
        .iter()
        .rev()
        .find(|(k, _)| k == SCAN_FALLBACK_BRANCH)
        .map(|(_, v)| v.as_str());
    dynamic
        .or_else(|| table.schema().options().get(SCAN_FALLBACK_BRANCH))
        .map(str::trim)
        .filter(|b| !b.is_empty() && *b != table.branch())
}

/// Add the fallback branch's splits of the partitions `plan` lacks; see the module docs.
pub(crate) async fn add_fallback_splits(
    table: &Table,
    request: &ScanRequest,
    plan: &mut ScanPlan,
) -> Result<()> {
    let Some(branch) = fallback_branch(table, request).map(str::to_string) else {
        return Ok(());
    };
    let fallback = Table::open_branch(table.io().clone(), &branch).await?;
    check_same_rows(table, &fallback, plan)?;
    let snapshot = match &request.snapshot {
        // Java 1.3.1 resolves `scan.tag-name` on the main branch's tags for every branch
        // (`StaticFromTagStartingScanner`), so the fallback scan reads the very snapshot the
        // read already covers and adds nothing.
        SnapshotSelector::Tag(_) => return Ok(()),
        SnapshotSelector::Id(id) => {
            let millis = table.snapshot_manager().snapshot(*id).await?.time_millis;
            let found = fallback.snapshot_manager().at_or_before(millis).await?;
            SnapshotSelector::Id(found.map_or(1, |s| s.id))
        }
        // As Java: a time before the fallback branch's first snapshot is an error.
        SnapshotSelector::TimestampMs(_) | SnapshotSelector::Latest => request.snapshot.clone(),
    };
    let options = request
        .options
        .iter()
        .filter(|(k, _)| k != "bucket")
        .cloned()
        .collect();
    let fallback_request = ScanRequest {
        snapshot,
        filter: request.filter.clone(),
        options,
    };
    let fallback_plan = plan_branch(&fallback, &fallback_request).await?;
    let complete: HashSet<Vec<u8>> = plan.splits.iter().map(|s| s.partition.clone()).collect();
    plan.splits.extend(
        fallback_plan
            .splits
            .into_iter()
            .filter(|s| !complete.contains(&s.partition))
            .map(|mut s| {
                s.branch = Some(branch.clone());
                s
            }),
    );
    Ok(())
}

/// Java `validateSchema`: same column types ignoring nullability (and same names), same primary
/// keys.
fn check_same_rows(table: &Table, fallback: &Table, plan: &ScanPlan) -> Result<()> {
    let (main, other) = (&plan.schema, fallback.schema());
    let shape = |s: &tidelake_spec::schema::TableSchema| {
        s.fields
            .iter()
            .map(|f| (f.name.clone(), f.data_type.with_nullable(true)))
            .collect::<Vec<_>>()
    };
    if shape(main) != shape(other) || main.primary_keys != other.primary_keys {
        return Err(Error::SchemaMismatch(format!(
            "branch '{}' and its fallback branch '{}' of {} must have the same columns and primary keys: \
             [{}] keyed by [{}] vs [{}] keyed by [{}]",
            table.branch(),
            fallback.branch(),
            table.location(),
            main.field_names().join(", "),
            main.primary_keys.join(", "),
            other.field_names().join(", "),
            other.primary_keys.join(", "),
        )));
    }
    Ok(())
}
