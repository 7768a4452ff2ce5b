//! The versioned byte form of values that travel between processes or wait with a caller
//! (commit messages, compaction and row-level tasks, prepared row-level changes): a JSON
//! object with a `version` field.
//!
//! Invariant: a reader accepts its own version only and names any other, so bytes made by
//! another build are refused, never misread.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, Result};

/// `value` (which holds its `version` field) as bytes; `what` names it in errors.
pub(crate) fn encode<T: Serialize>(value: &T, what: &str) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| Error::invalid(format!("cannot encode {what}: {e}")))
}

/// Decode the bytes of [`encode`], whose `version` must be `version`: another version or
/// malformed bytes are an [`Error::Invalid`] naming `what`.
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8], what: &str, version: u32) -> Result<T> {
    let invalid = |reason: String| Error::invalid(format!("not a tidelake {what}: {reason}"));
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
    match value.get("version").and_then(serde_json::Value::as_u64) {
        Some(v) if v == u64::from(version) => {}
        Some(v) => {
            return Err(Error::invalid(format!(
                "{what} version {v} is not supported (this build reads version {version})"
            )))
        }
        None => return Err(invalid("missing 'version'".to_string())),
    }
    serde_json::from_value(value).map_err(|e| invalid(e.to_string()))
}
