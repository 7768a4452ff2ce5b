//! Where a branch lives (Java `BranchManager`'s paths): branch `b` keeps its `snapshot/`,
//! `schema/`, `tag/`, `changelog/` and `consumer/` directories under `branch/branch-b/`; data,
//! manifest, index and statistics files stay at the table root, shared by all branches. The
//! main branch, `main`, is the table root itself. This module is the only place that knows the
//! `branch/branch-` prefix ([`branch_io`]); catalogs' `table$branch_<name>` identifiers are
//! [`crate::catalog::identifier`]'s. Creating, deleting and fast-forwarding branches is
//! [`crate::maintenance::branches`].
//!
//! Invariant: a branch exists iff its directory does (Java `branchExists`) and is readable iff
//! its `schema/` holds a schema file.

use crate::error::Result;
use crate::io::FileIO;
use crate::snapshots::check_name;

/// The default branch: the table root.
pub const MAIN_BRANCH: &str = "main";
/// `scan.fallback-branch`: partitions missing from the branch read are read from this one.
pub const SCAN_FALLBACK_BRANCH: &str = "scan.fallback-branch";
const BRANCH_DIR: &str = "branch";
const BRANCH_PREFIX: &str = "branch-";

/// The directory of branch `name` relative to the table root.
pub(crate) fn branch_dir(name: &str) -> String {
    format!("{BRANCH_DIR}/{BRANCH_PREFIX}{name}")
}

/// The root of `branch`'s metadata: the table root for `main`, else `branch/branch-<name>/`.
pub fn branch_io(table_io: &FileIO, branch: &str) -> Result<FileIO> {
    if branch == MAIN_BRANCH {
        return Ok(table_io.clone());
    }
    check_name("branch", branch)?;
    Ok(table_io.child(&branch_dir(branch)))
}

/// Branch names of the table rooted at `io` (not `main`), sorted.
pub async fn list_branches(io: &FileIO) -> Result<Vec<String>> {
    let mut names: Vec<String> = io
        .list_subdirs(BRANCH_DIR)
        .await?
        .into_iter()
        .filter_map(|d| {
            d.strip_prefix(BRANCH_PREFIX)
                .filter(|n| !n.is_empty())
                .map(str::to_string)
        })
        .collect();
    names.sort();
    Ok(names)
}

/// The metadata roots of every branch of the table rooted at `io`, `main` first.
pub(crate) async fn all_branch_ios(io: &FileIO) -> Result<Vec<(String, FileIO)>> {
    let mut out = vec![(MAIN_BRANCH.to_string(), io.clone())];
    for name in list_branches(io).await? {
        let child = io.child(&branch_dir(&name));
        out.push((name, child));
    }
    Ok(out)
}

pub(crate) async fn branch_exists(io: &FileIO, name: &str) -> Result<bool> {
    Ok(list_branches(io).await?.iter().any(|b| b == name))
}
