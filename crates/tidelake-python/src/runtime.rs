//! The binding's single tokio runtime and the one helper every blocking call goes through.
//!
//! Invariants: the runtime is created lazily on first use; a process forked after that gets a
//! [`ForkSafetyError`] instead of a deadlock; Rust work always runs with the GIL released; a
//! panic in that work reaches Python as `tidelake.exceptions.InternalError`, never as a panic;
//! an exception Python code run meanwhile left set (logging interrupted by Ctrl-C) is raised.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::OnceLock;

use futures::FutureExt;
use pyo3::prelude::*;
use tidelake_core::api::{panic_message, Error};
use tokio::runtime::Runtime;

use crate::errors::{to_py, ForkSafetyError};

static RUNTIME: OnceLock<(u32, Runtime)> = OnceLock::new();

fn runtime() -> PyResult<&'static Runtime> {
    let (pid, rt) = RUNTIME.get_or_init(|| {
        let threads = std::env::var("TIDELAKE_RUNTIME_THREADS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(2)
            });
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("tidelake-worker")
            .enable_all()
            .build()
            .expect("cannot start the tokio runtime");
        (std::process::id(), rt)
    });
    if *pid != std::process::id() {
        return Err(ForkSafetyError::new_err(
            "tidelake was used before this process was forked; use the 'spawn' start method \
             or import tidelake only in the child",
        ));
    }
    Ok(rt)
}

/// Run a future to completion on the shared runtime with the GIL released; a panic becomes an
/// `InternalError`. An exception raised on this thread meanwhile (Ctrl-C while the engine's
/// log events ran Python's logging, which leaves it set) is raised once the work is done.
pub fn block_on<F>(py: Python<'_>, fut: F) -> PyResult<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    let rt = runtime()?;
    let output = py
        .detach(|| rt.block_on(AssertUnwindSafe(fut).catch_unwind()))
        .map_err(|panic| to_py(Error::Internal(panic_message(&*panic).to_string())))?;
    match PyErr::take(py) {
        Some(raised) => Err(raised),
        None => Ok(output),
    }
}
