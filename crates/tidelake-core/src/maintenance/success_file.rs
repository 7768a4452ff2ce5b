//! `_SUCCESS` markers (Java `SuccessFile`): a partition marked done (`success-file` action) and
//! a tag created with `tag.create-success-file` (`SuccessFileTagCallback`).
//!
//! Invariant: marking again keeps the time the marker was first written and sets the
//! modification time (Java `updateModificationTime`); a marker that does not parse is
//! [`Error::Corrupt`], never overwritten.

use tidelake_spec::options::SuccessFile;

use crate::error::{Error, Result};
use crate::io::FileIO;

/// Write or refresh the marker at `path` of `io` as of epoch milliseconds `now`.
pub(crate) async fn mark(io: &FileIO, path: &str, now: i64) -> Result<()> {
    let existing = match io.read_opt(path).await? {
        Some(bytes) => Some(
            SuccessFile::from_json(&String::from_utf8_lossy(&bytes))
                .map_err(|e| Error::corrupt(io.display(path), e))?,
        ),
        None => None,
    };
    io.write(path, SuccessFile::marked_at(existing, now).to_json())
        .await
}
