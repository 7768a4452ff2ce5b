//! Helpers for the tokio tasks that writers, compaction and readers spawn: how many CPU-bound
//! tasks to run at once, and turning a task that panicked or was cancelled into an error.

use std::fmt::Display;

use tokio::task::JoinHandle;

use crate::error::{Error, Result};

/// The cores this process may use (1 when unknown): the bound for CPU-bound tasks in flight.
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// The result of the task `handle`; a panicked or cancelled task is an error "`what` failed".
pub(crate) async fn joined<T>(handle: JoinHandle<Result<T>>, what: impl Display) -> Result<T> {
    handle.await.unwrap_or_else(|e| Err(Error::invalid(format!("{what} failed: {e}"))))
}
