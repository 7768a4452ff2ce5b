//! Maps engine errors onto the typed exceptions of `tidelake.exceptions`.
//!
//! The exception classes are defined in Python (so they can also derive from built-ins such as
//! `FileNotFoundError`) and imported here; every engine error kind has exactly one class.

use pyo3::import_exception;
use pyo3::PyErr;
use tidelake_core::api::{Error, ErrorKind};

import_exception!(tidelake.exceptions, TableNotFoundError);
import_exception!(tidelake.exceptions, SnapshotExpiredError);
import_exception!(tidelake.exceptions, TableAlreadyExistsError);
import_exception!(tidelake.exceptions, CorruptMetadataError);
import_exception!(tidelake.exceptions, SchemaMismatchError);
import_exception!(tidelake.exceptions, CommitConflictError);
import_exception!(tidelake.exceptions, UnsupportedError);
import_exception!(tidelake.exceptions, InvalidArgumentError);
import_exception!(tidelake.exceptions, StorageError);
import_exception!(tidelake.exceptions, ForkSafetyError);
import_exception!(tidelake.exceptions, InternalError);

/// Convert an engine error into the matching Python exception, keeping the source chain.
pub fn to_py(err: Error) -> PyErr {
    let mut msg = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(s) = source {
        let text = s.to_string();
        if !msg.contains(&text) {
            msg.push_str("\n  caused by: ");
            msg.push_str(&text);
        }
        source = s.source();
    }
    match err.kind() {
        ErrorKind::NotFound => TableNotFoundError::new_err(msg),
        ErrorKind::SnapshotExpired => SnapshotExpiredError::new_err(msg),
        ErrorKind::AlreadyExists => TableAlreadyExistsError::new_err(msg),
        ErrorKind::CommitConflict => CommitConflictError::new_err(msg),
        ErrorKind::Corrupt => CorruptMetadataError::new_err(msg),
        ErrorKind::SchemaMismatch => SchemaMismatchError::new_err(msg),
        ErrorKind::Invalid => InvalidArgumentError::new_err(msg),
        ErrorKind::Unsupported => UnsupportedError::new_err(msg),
        ErrorKind::Io => StorageError::new_err(msg),
        ErrorKind::Internal => InternalError::new_err(msg),
    }
}

/// `?`-friendly conversion for binding code.
pub trait IntoPyResult<T> {
    fn py(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, Error> {
    fn py(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}
