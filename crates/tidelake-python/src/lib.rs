//! `tidelake._internal`: the PyO3 binding of the tidelake engine.
//!
//! This crate holds no table logic: each module converts Python arguments to owned Rust values,
//! runs the engine with the GIL released ([`runtime::block_on`]) and converts results back
//! (Arrow through the C data interface, metadata as Paimon JSON). Engine errors become the typed
//! exceptions of `tidelake.exceptions` ([`errors`]).

use pyo3::prelude::*;

mod arrow_arg;
mod branch;
mod catalog;
mod cdc;
mod compact;
mod dml;
mod errors;
mod lookup;
mod maintenance;
mod metadata;
mod native_read;
mod progress;
mod row_level;
mod runtime;
mod scan;
mod stream;
mod table;
mod write;

/// Forwards the core's `log` events to Python's `logging` (loggers `tidelake.commit`,
/// `tidelake.expire`, ...). Logger levels are cached on first use; [`reset_logging`] drops the cache.
static LOGGING: std::sync::OnceLock<Option<pyo3_log::ResetHandle>> = std::sync::OnceLock::new();

/// Make the next events see the Python loggers' current levels and handlers.
#[pyfunction]
fn reset_logging() {
    if let Some(Some(handle)) = LOGGING.get() {
        handle.reset();
    }
}

/// Make a named failpoint of the engine panic, stall or fail (development builds only;
/// `UnsupportedError` in release wheels): see `tidelake_core::io::set_failpoint`.
#[pyfunction]
fn set_failpoint(name: &str, actions: &str) -> PyResult<()> {
    errors::IntoPyResult::py(tidelake_core::api::set_failpoint(name, actions))
}

/// Move the engine's wall clock `offset_ms` away from the system's (development builds only;
/// `UnsupportedError` in release wheels): see `tidelake_core::io::env::set_clock_offset`.
#[pyfunction]
fn set_clock_offset(offset_ms: i64) -> PyResult<()> {
    if tidelake_core::api::set_clock_offset(offset_ms) {
        Ok(())
    } else {
        errors::IntoPyResult::py(Err(tidelake_core::api::Error::Unsupported(
            "set_clock_offset: this build has no fault injection (a release build)".to_string(),
        )))
    }
}

#[pymodule]
fn _internal(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add(
        "SYSTEM_TABLES",
        pyo3::types::PyTuple::new(m.py(), tidelake_core::api::maintenance::SYSTEM_TABLES)?,
    )?;
    m.add(
        "GLOBAL_SYSTEM_TABLES",
        pyo3::types::PyTuple::new(
            m.py(),
            tidelake_core::api::maintenance::GLOBAL_SYSTEM_TABLES,
        )?,
    )?;
    m.add(
        "SYSTEM_DATABASE",
        tidelake_core::api::maintenance::SYSTEM_DATABASE,
    )?;
    m.add_class::<table::RawTable>()?;
    m.add_class::<scan::RawScan>()?;
    m.add_class::<catalog::RawCatalog>()?;
    m.add_class::<write::RawWriter>()?;
    m.add_class::<stream::RawBatches>()?;
    m.add_class::<compact::RawCompactionPlan>()?;
    m.add_class::<lookup::RawLookuper>()?;
    m.add_class::<row_level::RawRowLevelTask>()?;
    m.add_class::<row_level::RawRowLevelChange>()?;
    m.add_function(wrap_pyfunction!(write::message_target, m)?)?;
    m.add_function(wrap_pyfunction!(compact::run_compaction_task, m)?)?;
    m.add_function(wrap_pyfunction!(compact::compaction_task_target, m)?)?;
    m.add_function(wrap_pyfunction!(reset_logging, m)?)?;
    m.add_function(wrap_pyfunction!(set_failpoint, m)?)?;
    m.add_function(wrap_pyfunction!(set_clock_offset, m)?)?;
    m.add_function(wrap_pyfunction!(cdc::cdc_decode, m)?)?;
    let _ = LOGGING.set(pyo3_log::try_init().ok());
    m.add_function(wrap_pyfunction!(scan::parse_filter_text, m)?)?;
    m.add_function(wrap_pyfunction!(native_read::pack_split_payloads, m)?)?;
    Ok(())
}
