//! Python progress callbacks as the core's [`Progress`]: `callback(done, total)` is called with
//! the GIL from whichever thread did the work. A callback cannot stop the work it watches:
//! its exceptions go to `sys.unraisablehook` (printed, as Python does for errors in
//! callbacks nobody can catch), never into the operation.

use std::sync::Arc;

use pyo3::prelude::*;
use tidelake_core::api::Progress;

/// `callback` as a [`Progress`] (`None` stays `None`).
pub(crate) fn py_progress(callback: Option<Py<PyAny>>) -> Option<Progress> {
    callback.map(|callback| -> Progress {
        Arc::new(move |done: usize, total: usize| {
            Python::attach(|py| {
                if let Err(e) = callback.bind(py).call1((done, total)) {
                    e.write_unraisable(py, Some(callback.bind(py)));
                }
            });
        })
    })
}
