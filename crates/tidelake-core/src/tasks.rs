//! Helpers for the tokio tasks that writers, compaction and readers spawn: how many CPU-bound
//! tasks to run at once, turning a task that panicked or was cancelled into an error, and the
//! [`Progress`] callback long operations report to.
//!
//! Invariant: a panic never crosses a task boundary as a panic; it becomes an
//! [`Error::Internal`] naming what failed and the panic's message.

use std::any::Any;
use std::fmt::Display;

use tokio::task::JoinHandle;

use crate::error::{Error, Result};

/// Told `(done, total)` as a long operation advances: once before the first unit of work,
/// then after each one (compaction: buckets rewritten; reads: rows of the splits read, counted
/// as planned, before merging). Called from whichever thread did the work.
pub type Progress = std::sync::Arc<dyn Fn(usize, usize) + Send + Sync>;

/// The cores this process may use (1 when unknown): the bound for CPU-bound tasks in flight.
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// The message a panic was raised with (`panic!` payloads are a `&str` or a `String`).
pub fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic")
}

/// The result of the task `handle`; a panicked or cancelled task is an internal error
/// "`what` failed".
pub(crate) async fn joined<T>(handle: JoinHandle<Result<T>>, what: impl Display) -> Result<T> {
    handle.await.unwrap_or_else(|e| {
        let why = if e.is_panic() {
            panic_message(&*e.into_panic()).to_string()
        } else {
            e.to_string()
        };
        Err(Error::Internal(format!("{what} failed: {why}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[tokio::test]
    async fn a_panicking_task_is_an_internal_error_with_its_message() {
        let handle = tokio::spawn(async {
            if cores() > 0 {
                panic!("bucket 3 has no runs");
            }
            Ok(())
        });
        let err = joined(handle, "flushing bucket 3").await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Internal);
        assert!(
            err.to_string()
                .contains("flushing bucket 3 failed: bucket 3 has no runs"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_task_result_passes_through() {
        let handle = tokio::spawn(async { Ok(7) });
        assert_eq!(joined(handle, "x").await.unwrap(), 7);
    }
}
