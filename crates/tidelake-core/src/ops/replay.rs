//! The one replay policy of operations that write and commit in one call (one-shot writes,
//! row-level changes, distributed row-level jobs): an attempt refused because nothing of it
//! landed (a conflicting commit, or a snapshot it read expiring meanwhile) is run again from
//! the newest state, up to [`REPLAYS`] times, waiting between attempts as commit retries do
//! (exponential from `commit.min-retry-wait` to `commit.max-retry-wait`, with jitter) and never
//! starting one once `commit.timeout` has passed.

use std::time::Duration;

use crate::commit::RetryWait;
use crate::error::{Error, ErrorKind, Result};
use crate::io::Env;
use crate::table::Table;

/// How many times an operation is run again after being refused.
pub const REPLAYS: u32 = 5;

/// When to run a refused operation again; see the module docs.
#[derive(Clone, Debug)]
pub struct ReplayPolicy {
    wait: RetryWait,
    timeout: Option<Duration>,
    env: Env,
}

impl ReplayPolicy {
    /// The policy of `table`'s options.
    pub fn of(table: &Table) -> Result<ReplayPolicy> {
        let options = table.schema().options();
        let spec = |e| Error::from_spec("table options", e);
        Ok(ReplayPolicy {
            wait: RetryWait::of(options).map_err(spec)?,
            timeout: options.commit_timeout().map_err(spec)?,
            env: table.env().clone(),
        })
    }

    /// Whether `error` means that nothing of the attempt landed and it may run again.
    pub fn replays(error: &Error) -> bool {
        matches!(
            error.kind(),
            ErrorKind::CommitConflict | ErrorKind::SnapshotExpired
        )
    }

    /// The wait before replay `replay` (0 = the first) of an operation that has run for
    /// `elapsed`; `None` when the operation has had its [`REPLAYS`] or its `commit.timeout`.
    pub fn wait(&self, replay: u32, elapsed: Duration) -> Option<Duration> {
        if replay >= REPLAYS || self.timeout.is_some_and(|t| elapsed >= t) {
            return None;
        }
        Some(self.wait.before(replay, &self.env))
    }
}
