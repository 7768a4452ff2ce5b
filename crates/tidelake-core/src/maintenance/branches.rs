//! Branch operations (Java `BranchManager`, `FileSystemBranchManager`): creating, deleting and
//! fast-forwarding branches. Where a branch lives is [`crate::branch`].
//!
//! Names (Java `validateBranch`): not `main`, not blank, not only digits; and, stricter than
//! Java, no `/` (a name must not leave `branch/`).
//!
//! Invariants:
//! * a branch exists iff its directory does (Java `branchExists`) and is readable iff its
//!   `schema/` holds a schema file;
//! * creating copies, from the branch the table is opened on, the schema files up to the
//!   starting point's schema (the first one with `put_if_absent`: of two concurrent creations
//!   of one name one fails), then the starting snapshot (and the tag file when starting from a
//!   tag), and finally checks that the starting snapshot or tag still exists in its source:
//!   maintenance lists branches only after deleting snapshot and tag files (see
//!   `maintenance::refs::protect_other_branches`), so either it saw the new branch or the
//!   creation fails and removes the branch;
//! * fast-forwarding replaces the current branch's history from the target's earliest
//!   snapshot on (Java's steps: the `LATEST` hint goes first, then snapshots, schemas and tags
//!   at or after that point, then the target's files are copied over). Java also copies the
//!   target's hint files; here only snapshot files are copied and hints are left to be
//!   re-derived, so a copied `EARLIEST` never points past the current branch's older snapshots.
//!   As in Java (and as rollback), this replaces history: a commit to the current branch racing
//!   it can be overwritten, so its writers must be stopped first;
//! * deleting a branch deletes its directory (Java `dropBranch`); writers of that branch must be
//!   stopped first (a commit landing afterwards leaves an unreadable directory behind).
//!
//! A table whose catalog versions snapshots (a REST server) has its branches created (empty or
//! from a tag of main), deleted and fast-forwarded (main to a branch) by the catalog instead:
//! the server keeps its own record of each branch, which commits to the branch need.

use tidelake_spec::snapshot::parse_snapshot_file_name;

use crate::branch::{
    branch_dir, branch_exists, branch_io, list_branches, MAIN_BRANCH, SCAN_FALLBACK_BRANCH,
};
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::snapshot_commit::BranchChange;
use crate::snapshots::{
    check_name, snapshot_path, tag_path, LATEST_HINT_PATH, SNAPSHOT_DIR, TAG_DIR,
};
use crate::table::{list_schema_ids, schema_path, Table};

/// Java `BranchManager.validateBranch` (plus no `/`).
fn validate_name(name: &str) -> Result<()> {
    if name == MAIN_BRANCH {
        return Err(Error::invalid(format!(
            "branch name '{MAIN_BRANCH}' is the default branch and cannot be used"
        )));
    }
    check_name("branch", name)?;
    if name.chars().all(|c| c.is_ascii_digit()) {
        return Err(Error::invalid(format!(
            "branch name cannot be a pure numeric string but is '{name}'"
        )));
    }
    Ok(())
}

fn missing_branch(io: &FileIO, name: &str, existing: &[String]) -> Error {
    Error::not_found(
        "branch",
        format!(
            "branch '{name}' of table {}; existing branches: [{}]",
            io.location(),
            existing.join(", ")
        ),
    )
}

/// Where a new branch starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BranchStart {
    /// No snapshot: the latest schema only (Java `createBranch(name)`).
    Empty,
    /// A snapshot of the current branch (its file and schemas are copied).
    Snapshot(i64),
    /// A tag of the current branch (Java `createBranch(name, tag)`: tag, snapshot, schemas).
    Tag(String),
}

/// Create branch `name` of `table`'s table from `start` on the branch `table` is opened on; see
/// the module docs.
pub async fn create_branch(table: &Table, name: &str, start: &BranchStart) -> Result<()> {
    validate_name(name)?;
    if let Some(catalog) = table.environment().snapshot_commit() {
        let from_tag = match start {
            _ if table.branch() != MAIN_BRANCH => {
                return Err(Error::Unsupported(format!(
                    "creating branch '{name}' from branch '{}' of a REST catalog table: the \
                     server creates branches from the main branch",
                    table.branch()
                )))
            }
            BranchStart::Empty => None,
            BranchStart::Tag(tag) => Some(tag.as_str()),
            BranchStart::Snapshot(id) => {
                return Err(Error::Unsupported(format!(
                    "creating branch '{name}' from snapshot {id} of a REST catalog table: the \
                     server creates branches from a tag (create a tag of the snapshot first)"
                )))
            }
        };
        return catalog
            .change_branch(BranchChange::Create { name, from_tag })
            .await;
    }
    let io = table.io();
    if branch_exists(io, name).await? {
        return Err(Error::AlreadyExists(format!(
            "branch '{name}' of table {}",
            io.location()
        )));
    }
    let source = table.branch_io();
    let sm = table.snapshot_manager();
    let (snapshot, tag_bytes) = match start {
        BranchStart::Empty => (None, None),
        BranchStart::Snapshot(id) => (Some(sm.snapshot(*id).await?), None),
        BranchStart::Tag(tag) => {
            check_name("tag", tag)?;
            let snapshot = sm.tag(tag).await?.snapshot;
            (Some(snapshot), Some(source.read(&tag_path(tag)).await?))
        }
    };
    let schema_id = snapshot.as_ref().map_or(table.schema().id, |s| s.schema_id);
    let target = branch_io(io, name)?;
    let mut claimed = false;
    for id in list_schema_ids(source)
        .await?
        .into_iter()
        .filter(|id| *id <= schema_id)
    {
        let bytes = source.read(&schema_path(id)).await?;
        let created = target.put_if_absent(&schema_path(id), bytes).await?;
        if !claimed && !created {
            return Err(Error::AlreadyExists(format!(
                "branch '{name}' of table {}",
                io.location()
            )));
        }
        claimed = true;
    }
    let Some(snapshot) = snapshot else {
        return Ok(());
    };
    // The snapshot file as it is (Java copies it); a tag whose snapshot expired gives its own.
    let snapshot_file = match source.read_opt(&snapshot_path(snapshot.id)).await? {
        Some(bytes) => bytes,
        None => snapshot.to_json().into_bytes().into(),
    };
    target
        .write(&snapshot_path(snapshot.id), snapshot_file)
        .await?;
    let still_there = match (start, tag_bytes) {
        (BranchStart::Tag(tag), Some(bytes)) => {
            target.write(&tag_path(tag), bytes).await?;
            source.exists(&tag_path(tag)).await?
        }
        _ => sm.exists(snapshot.id).await?,
    };
    if !still_there {
        io.delete_dir(&branch_dir(name)).await?;
        return Err(Error::not_found(
            "snapshot",
            format!(
                "the start of branch '{name}' ({}) was deleted from {} while the branch was created",
                match start {
                    BranchStart::Tag(tag) => format!("tag '{tag}'"),
                    _ => format!("snapshot {}", snapshot.id),
                },
                source.location()
            ),
        ));
    }
    Ok(())
}

/// Delete branch `name` and its metadata (Java `deleteBranch`): not `main`, not the branch the
/// table is opened on, not the table's `scan.fallback-branch`. Data files only it referenced
/// become orphans.
pub async fn delete_branch(table: &Table, name: &str) -> Result<()> {
    if name == MAIN_BRANCH || name == table.branch() {
        return Err(Error::invalid(format!(
            "cannot delete branch '{name}': it is the main or the current branch"
        )));
    }
    if table.schema().options().get(SCAN_FALLBACK_BRANCH) == Some(name) {
        return Err(Error::invalid(format!(
            "cannot delete the fallback branch '{name}': reset '{SCAN_FALLBACK_BRANCH}' first"
        )));
    }
    check_name("branch", name)?;
    if let Some(catalog) = table.environment().snapshot_commit() {
        return catalog.change_branch(BranchChange::Drop(name)).await;
    }
    let io = table.io();
    let existing = list_branches(io).await?;
    if !existing.iter().any(|b| b == name) {
        return Err(missing_branch(io, name, &existing));
    }
    io.delete_dir(&branch_dir(name)).await
}

/// Fast-forward the branch `table` is opened on to branch `name` (Java `fastForward`); see the
/// module docs.
pub async fn fast_forward(table: &Table, name: &str) -> Result<()> {
    if name == MAIN_BRANCH {
        return Err(Error::invalid(format!(
            "branch '{MAIN_BRANCH}' cannot be fast-forwarded from"
        )));
    }
    if name == table.branch() {
        return Err(Error::invalid(format!(
            "fast-forward from the current branch '{name}' is not allowed"
        )));
    }
    check_name("branch", name)?;
    if let Some(catalog) = table.environment().snapshot_commit() {
        if table.branch() != MAIN_BRANCH {
            return Err(Error::Unsupported(format!(
                "fast-forwarding branch '{}' of a REST catalog table: the server fast-forwards \
                 the main branch",
                table.branch()
            )));
        }
        return catalog.change_branch(BranchChange::FastForward(name)).await;
    }
    let io = table.io();
    let existing = list_branches(io).await?;
    if !existing.iter().any(|b| b == name) {
        return Err(missing_branch(io, name, &existing));
    }
    let from = Table::open_branch(io.clone(), name).await?;
    let from_sm = from.snapshot_manager();
    let Some(earliest) = from_sm.earliest_id().await? else {
        return Err(Error::invalid(format!(
            "cannot fast-forward to branch '{name}': it has no snapshot"
        )));
    };
    let earliest_schema = from_sm.snapshot(earliest).await?.schema_id;
    let (dst, src) = (table.branch_io(), from.branch_io());
    let sm = table.snapshot_manager();

    dst.delete(LATEST_HINT_PATH).await?;
    let mut stale: Vec<String> = Vec::new();
    stale.extend(
        sm.list_ids()
            .await?
            .into_iter()
            .filter(|id| *id >= earliest)
            .rev()
            .map(snapshot_path),
    );
    for (tag, t) in sm.tags().await? {
        if t.snapshot.id >= earliest {
            stale.push(tag_path(&tag));
        }
    }
    stale.extend(
        list_schema_ids(dst)
            .await?
            .into_iter()
            .filter(|id| *id >= earliest_schema)
            .map(schema_path),
    );
    for rel in &stale {
        dst.delete(rel).await?;
    }
    for id in list_schema_ids(src).await? {
        dst.write(&schema_path(id), src.read(&schema_path(id)).await?)
            .await?;
    }
    copy_files(src, dst, SNAPSHOT_DIR, |n| {
        parse_snapshot_file_name(n).is_some()
    })
    .await?;
    copy_files(src, dst, TAG_DIR, |n| n.starts_with("tag-")).await
}

/// Copy the files of directory `dir` whose names `keep` accepts from `src` to `dst`.
async fn copy_files(
    src: &FileIO,
    dst: &FileIO,
    dir: &str,
    keep: impl Fn(&str) -> bool,
) -> Result<()> {
    for f in src.list_dir(dir).await? {
        let Some(file) = f.path.rsplit('/').next().filter(|n| keep(n)) else {
            continue;
        };
        let rel = format!("{dir}/{file}");
        dst.write(&rel, src.read(&rel).await?).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
