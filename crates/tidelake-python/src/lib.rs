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
mod compact;
mod errors;
mod maintenance;
mod runtime;
mod scan;
mod stream;
mod table;
mod write;

#[pymodule]
fn _internal(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<table::RawTable>()?;
    m.add_class::<scan::RawScan>()?;
    m.add_class::<catalog::RawCatalog>()?;
    m.add_class::<write::RawWriter>()?;
    m.add_class::<stream::RawBatches>()?;
    m.add_function(wrap_pyfunction!(write::message_target, m)?)?;
    m.add_function(wrap_pyfunction!(scan::parse_filter_text, m)?)?;
    Ok(())
}
