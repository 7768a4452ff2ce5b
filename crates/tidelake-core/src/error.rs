//! The one error type of the engine crate.
//!
//! Variants are coarse and say what the caller can do about them; [`Error::kind`] maps each to
//! an [`ErrorKind`] that the Python binding turns into a typed exception.

use std::fmt;

/// Result alias for the engine crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a caller can do about an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The table (or a snapshot, tag, schema of it) does not exist.
    NotFound,
    /// The snapshot asked for, or being read, was expired (its files deleted); re-plan on a
    /// newer snapshot.
    SnapshotExpired,
    /// Something being created already exists.
    AlreadyExists,
    /// Another writer won the race; re-read and retry.
    CommitConflict,
    /// Metadata or data bytes are not valid Paimon.
    Corrupt,
    /// Input data does not fit the table schema.
    SchemaMismatch,
    /// Bad argument (filter, option, snapshot id...).
    Invalid,
    /// A valid Paimon feature not implemented here.
    Unsupported,
    /// Storage failed (network, permissions, disk).
    Io,
    /// A bug in tidelake (a task panicked); the table is left as its last commit made it.
    Internal,
}

/// Errors raised by the engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("{what} not found: {detail}")]
    NotFound { what: String, detail: String },
    #[error("snapshot {id} has expired: {detail}")]
    SnapshotExpired { id: i64, detail: String },
    #[error("{0} already exists")]
    AlreadyExists(String),
    #[error("commit conflict: {0}")]
    CommitConflict(String),
    #[error("corrupt file {path}: {reason}")]
    Corrupt { path: String, reason: String },
    #[error("schema mismatch: {0}")]
    SchemaMismatch(String),
    #[error("{0}")]
    Invalid(String),
    #[error("unsupported: {0}")]
    Unsupported(String),
    #[error("internal error (a tidelake bug, please report it): {0}")]
    Internal(String),
    #[error("storage error on {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: object_store::Error,
    },
    #[error("{context}: {source}")]
    Arrow {
        context: String,
        #[source]
        source: arrow_schema::ArrowError,
    },
    #[error("{context}: {source}")]
    Parquet {
        context: String,
        #[source]
        source: parquet::errors::ParquetError,
    },
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::SnapshotExpired { .. } => ErrorKind::SnapshotExpired,
            Error::AlreadyExists(_) => ErrorKind::AlreadyExists,
            Error::CommitConflict(_) => ErrorKind::CommitConflict,
            Error::Corrupt { .. } | Error::Parquet { .. } => ErrorKind::Corrupt,
            Error::SchemaMismatch(_) => ErrorKind::SchemaMismatch,
            Error::Invalid(_) => ErrorKind::Invalid,
            Error::Unsupported(_) => ErrorKind::Unsupported,
            Error::Internal(_) => ErrorKind::Internal,
            Error::Io {
                source: object_store::Error::NotFound { .. },
                ..
            } => ErrorKind::NotFound,
            Error::Io { .. } => ErrorKind::Io,
            Error::Arrow { source, .. } => match source {
                arrow_schema::ArrowError::CastError(_)
                | arrow_schema::ArrowError::SchemaError(_) => ErrorKind::SchemaMismatch,
                arrow_schema::ArrowError::InvalidArgumentError(_) => ErrorKind::Invalid,
                _ => ErrorKind::Corrupt,
            },
        }
    }

    /// Whether what was asked for is not there: [`ErrorKind::NotFound`], or a snapshot that
    /// expiration deleted ([`ErrorKind::SnapshotExpired`]).
    pub fn is_missing(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::NotFound | ErrorKind::SnapshotExpired
        )
    }

    /// The file a missing-file error names (storage found nothing at that path).
    pub fn missing_file(&self) -> Option<&str> {
        match self {
            Error::NotFound { what, detail } if what == "file" => Some(detail),
            Error::Io {
                path,
                source: object_store::Error::NotFound { .. },
            } => Some(path),
            _ => None,
        }
    }

    pub fn not_found(what: impl Into<String>, detail: impl fmt::Display) -> Self {
        Error::NotFound {
            what: what.into(),
            detail: detail.to_string(),
        }
    }

    pub fn corrupt(path: impl fmt::Display, reason: impl fmt::Display) -> Self {
        Error::Corrupt {
            path: path.to_string(),
            reason: reason.to_string(),
        }
    }

    pub fn invalid(msg: impl fmt::Display) -> Self {
        Error::Invalid(msg.to_string())
    }

    pub fn arrow(context: impl fmt::Display, source: arrow_schema::ArrowError) -> Self {
        Error::Arrow {
            context: context.to_string(),
            source,
        }
    }

    /// A Parquet error; a storage error the Parquet reader or writer passed through stays a
    /// storage error (a lost connection is not a corrupt file).
    pub fn parquet(context: impl fmt::Display, source: parquet::errors::ParquetError) -> Self {
        let external = match source {
            parquet::errors::ParquetError::External(e) => e,
            source => {
                return Error::Parquet {
                    context: context.to_string(),
                    source,
                }
            }
        };
        let external = match external.downcast::<object_store::Error>() {
            Ok(store) => {
                return Error::Io {
                    path: context.to_string(),
                    source: *store,
                }
            }
            Err(other) => other,
        };
        // Writers stream through `AsyncWrite`, which wraps store errors in `std::io::Error`.
        let external = match external.downcast::<std::io::Error>() {
            Ok(io) => {
                let kind = io.kind();
                let source = match io
                    .into_inner()
                    .map(|inner| inner.downcast::<object_store::Error>())
                {
                    Some(Ok(store)) => *store,
                    Some(Err(inner)) => object_store::Error::Generic {
                        store: "io",
                        source: inner,
                    },
                    None => object_store::Error::Generic {
                        store: "io",
                        source: Box::new(std::io::Error::from(kind)),
                    },
                };
                return Error::Io {
                    path: context.to_string(),
                    source,
                };
            }
            Err(other) => other,
        };
        match external.downcast::<Error>() {
            Ok(ours) => *ours,
            Err(other) => Error::Parquet {
                context: context.to_string(),
                source: parquet::errors::ParquetError::External(other),
            },
        }
    }

    /// Attach the file a spec-level decode error came from.
    pub fn from_spec(path: impl fmt::Display, err: tidelake_spec::Error) -> Self {
        match err {
            tidelake_spec::Error::Corrupt { what, reason } => {
                Error::corrupt(path, format!("{what}: {reason}"))
            }
            tidelake_spec::Error::Unsupported(m) => Error::Unsupported(format!("{path}: {m}")),
            tidelake_spec::Error::Invalid(m) => Error::Invalid(m),
            other => Error::corrupt(path, other),
        }
    }
}
