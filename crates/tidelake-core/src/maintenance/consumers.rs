//! Consumers: `consumer/consumer-<id>` files recording where a streaming reader resumes
//! (Java `ConsumerManager`, `Consumer`).
//!
//! Format: Jackson's pretty JSON of `{"nextSnapshot": N}` (`{\n  "nextSnapshot" : N\n}`);
//! unknown members are ignored on read. Snapshots with id ≥ the smallest `nextSnapshot` are
//! never expired. Consumer files are replaced in place (Java `overwriteFileUtf8`).
//!
//! Invariant: a consumer id is non-blank and has no `/`, so its file always lives directly in
//! `consumer/`.

use futures::stream::{self, StreamExt, TryStreamExt};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::snapshots::check_name;
use crate::table::Table;

const CONSUMER_DIR: &str = "consumer";
const CONSUMER_PREFIX: &str = "consumer-";

fn consumer_path(id: &str) -> String {
    format!("{CONSUMER_DIR}/{CONSUMER_PREFIX}{id}")
}

/// The file content Java writes for `next_snapshot`.
pub fn consumer_json(next_snapshot: i64) -> String {
    format!("{{\n  \"nextSnapshot\" : {next_snapshot}\n}}")
}

/// `nextSnapshot` of a consumer file.
pub fn parse_consumer(bytes: &[u8]) -> std::result::Result<i64, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    value
        .get("nextSnapshot")
        .and_then(Value::as_i64)
        .ok_or_else(|| "missing integer 'nextSnapshot'".to_string())
}

/// Consumer ids with their file status, from the directory listing.
async fn list(io: &FileIO) -> Result<Vec<(String, i64)>> {
    Ok(io
        .list_dir(CONSUMER_DIR)
        .await?
        .into_iter()
        .filter_map(|f| {
            let name = f.path.rsplit('/').next()?;
            let id = name
                .strip_prefix(CONSUMER_PREFIX)
                .filter(|id| !id.is_empty())?;
            Some((id.to_string(), f.last_modified_ms))
        })
        .collect())
}

/// Read consumer `id`; `None` when it does not exist.
pub async fn consumer(io: &FileIO, id: &str) -> Result<Option<i64>> {
    let rel = consumer_path(id);
    match io.read_opt(&rel).await? {
        None => Ok(None),
        Some(bytes) => parse_consumer(&bytes)
            .map(Some)
            .map_err(|e| Error::corrupt(io.display(&rel), e)),
    }
}

/// Every consumer as (id, next snapshot), sorted by id (Java `ConsumerManager.consumers`).
/// A consumer deleted while listing is skipped.
pub async fn consumers(io: &FileIO) -> Result<Vec<(String, i64)>> {
    let ids = list(io).await?;
    let found: Vec<Option<(String, i64)>> = stream::iter(ids)
        .map(|(id, _)| async move { Ok::<_, Error>(consumer(io, &id).await?.map(|n| (id, n))) })
        .buffered(16)
        .try_collect()
        .await?;
    let mut all: Vec<(String, i64)> = found.into_iter().flatten().collect();
    all.sort();
    Ok(all)
}

/// The smallest `nextSnapshot` of all consumers (Java `minNextSnapshot`).
pub async fn min_next_snapshot(io: &FileIO) -> Result<Option<i64>> {
    Ok(consumers(io).await?.into_iter().map(|(_, n)| n).min())
}

/// Point consumer `id` at `next_snapshot`, creating it if needed. As Java's
/// `ResetConsumerAction`, the snapshot must exist.
pub async fn reset_consumer(table: &Table, id: &str, next_snapshot: i64) -> Result<()> {
    check_name("consumer", id)?;
    table.snapshot_manager().snapshot(next_snapshot).await?;
    table
        .branch_io()
        .write(
            &consumer_path(id),
            consumer_json(next_snapshot).into_bytes(),
        )
        .await
}

/// Delete consumer `id` (no error when it does not exist, as Java).
pub async fn delete_consumer(table: &Table, id: &str) -> Result<()> {
    check_name("consumer", id)?;
    table.branch_io().delete(&consumer_path(id)).await
}

/// Delete consumers whose file was last modified before `older_than_ms` (Java
/// `ConsumerManager.expire`, option `consumer.expiration-time`); returns their ids.
pub async fn expire_consumers(io: &FileIO, older_than_ms: i64) -> Result<Vec<String>> {
    let mut expired = Vec::new();
    for (id, modified) in list(io).await? {
        if modified < older_than_ms {
            io.delete(&consumer_path(&id)).await?;
            expired.push(id);
        }
    }
    expired.sort();
    Ok(expired)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_format_round_trips() {
        let text = consumer_json(42);
        assert_eq!(text, "{\n  \"nextSnapshot\" : 42\n}");
        assert_eq!(parse_consumer(text.as_bytes()), Ok(42));
        assert_eq!(parse_consumer(br#"{"nextSnapshot": 7, "other": 1}"#), Ok(7));
        assert!(parse_consumer(b"{}").is_err());
        assert!(parse_consumer(b"not json").is_err());
    }

    #[test]
    fn names_are_single_path_components() {
        assert!(check_name("consumer", "job-1").is_ok());
        assert!(check_name("consumer", " ").is_err());
        assert!(check_name("consumer", "a/b").is_err());
    }
}
