//! The one error type of the spec crate: everything here is a decode/encode failure of
//! in-memory bytes or text, so errors say what was malformed and why.

/// Result alias for the spec crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors raised while decoding or encoding Paimon metadata.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Bytes or text that do not follow the Paimon format (truncated, wrong version, bad JSON...).
    #[error("corrupt {what}: {reason}")]
    Corrupt { what: String, reason: String },
    /// A valid construct this implementation does not support (yet).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A value that cannot be represented (wrong type for a column, out of range...).
    #[error("invalid: {0}")]
    Invalid(String),
}

impl Error {
    pub fn corrupt(what: impl Into<String>, reason: impl std::fmt::Display) -> Self {
        Error::Corrupt {
            what: what.into(),
            reason: reason.to_string(),
        }
    }
}
