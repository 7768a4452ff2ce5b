//! Paimon's JDBC commit lock: one row per held lock in `paimon_distributed_locks`, taken by
//! inserting it (the primary key refuses a second holder) and released by deleting it. Java
//! `JdbcCatalogLock`, `JdbcUtils.acquire`/`release` and the SQLite and PostgreSQL
//! `DistributedLockDialect`s: the same table, columns, lock ids and expiry, so a Java writer and
//! a tidelake writer of one table exclude each other.
//!
//! Protocol (as Java's): the lock id is `<catalog-key>.<database>.<table>`; acquiring first
//! deletes the row if it is older than its `expire_time_seconds` (a holder that died), then
//! inserts `(lock_id, acquire-timeout in seconds)`; a failed insert is retried after 100 ms,
//! 200 ms, ... up to `lock-check-max-sleep`, until `lock-acquire-timeout` has passed.
//!
//! Invariants: the section runs only while this process's row is in the table; the row is
//! deleted after the section whatever it returned; a holder that outlives `lock-acquire-timeout`
//! may lose the lock to another (Java's rule too: keep sections short; they are one put).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use tidelake_spec::catalog_options::CatalogOptions;

use super::client::{Arg, Dialect, JdbcClient};
use crate::catalog::{options_error, CatalogLock, Identifier};
use crate::error::{Error, Result};
use crate::io::Env;
use crate::snapshot_commit::TableLock;

pub(crate) const LOCKS_TABLE: &str = "paimon_distributed_locks";

/// The first wait between attempts is twice this (Java's `nextSleep = 50`, doubled first).
const FIRST_SLEEP: Duration = Duration::from_millis(50);

/// The lock table (Java `AbstractDistributedLockDialect.getCreateTableSql`, identical for
/// SQLite and PostgreSQL); `{len}` is `lock-key-max-length`.
fn create_sql(max_key_length: u32) -> String {
    format!(
        "CREATE TABLE {LOCKS_TABLE}(lock_id VARCHAR({max_key_length}) NOT NULL,\
         acquired_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL,\
         expire_time_seconds BIGINT DEFAULT 0 NOT NULL,PRIMARY KEY (lock_id))"
    )
}

fn expired_sql(dialect: Dialect) -> String {
    let age = match dialect {
        Dialect::Sqlite => "strftime('%s', 'now') - strftime('%s', acquired_at)",
        Dialect::Postgres => "EXTRACT(EPOCH FROM AGE(NOW(), acquired_at))",
    };
    format!("DELETE FROM {LOCKS_TABLE} WHERE {age} > expire_time_seconds AND lock_id = ?")
}

/// How a catalog's locks are taken (`lock-acquire-timeout`, `lock-check-max-sleep`).
#[derive(Clone, Debug)]
pub(crate) struct JdbcLocks {
    client: JdbcClient,
    catalog_key: String,
    acquire_timeout: Duration,
    check_max_sleep: Duration,
    /// Measures `lock-acquire-timeout` and waits between attempts.
    env: Env,
}

impl JdbcLocks {
    /// The locks of a catalog's options, creating the lock table if it is missing.
    pub(crate) async fn open(
        client: JdbcClient,
        options: &CatalogOptions,
        env: Env,
    ) -> Result<JdbcLocks> {
        client
            .create_table_if_absent(
                LOCKS_TABLE,
                &create_sql(options.lock_key_max_length().map_err(options_error)?),
            )
            .await?;
        Ok(JdbcLocks {
            client,
            catalog_key: options.catalog_key().to_string(),
            acquire_timeout: options.lock_acquire_timeout().map_err(options_error)?,
            check_max_sleep: options.lock_check_max_sleep().map_err(options_error)?,
            env,
        })
    }

    /// One attempt (Java `JdbcUtils.acquire`): clear an expired row, insert ours.
    async fn try_acquire(&self, lock_id: &str) -> bool {
        let expired = expired_sql(self.client.dialect());
        if let Err(e) = self.client.execute(&expired, &[Arg::Text(lock_id)]).await {
            log::debug!(target: "tidelake.catalog", "clearing an expired lock {lock_id}: {e}");
            return false;
        }
        let insert =
            format!("INSERT INTO {LOCKS_TABLE} (lock_id, expire_time_seconds) VALUES (?, ?)");
        let seconds = i64::try_from(self.acquire_timeout.as_secs()).unwrap_or(i64::MAX);
        // A primary-key violation means someone holds it; any other failure is retried alike.
        matches!(
            self.client
                .execute(&insert, &[Arg::Text(lock_id), Arg::Int(seconds)])
                .await,
            Ok(n) if n > 0
        )
    }

    /// Java `JdbcCatalogLock.lock`.
    async fn acquire(&self, lock_id: &str) -> Result<()> {
        let started = self.env.stopwatch();
        let mut sleep = FIRST_SLEEP;
        while !self.try_acquire(lock_id).await {
            if started.elapsed() > self.acquire_timeout {
                return Err(Error::CommitConflict(format!(
                    "could not acquire the JDBC lock '{lock_id}' of {} within {} ms \
                     (lock-acquire-timeout): another writer holds it",
                    self.client.uri(),
                    started.elapsed().as_millis()
                )));
            }
            sleep = (sleep * 2).min(self.check_max_sleep);
            self.env.sleep(sleep).await;
        }
        Ok(())
    }

    async fn release(&self, lock_id: &str) -> Result<()> {
        let delete = format!("DELETE FROM {LOCKS_TABLE} WHERE lock_id = ?");
        self.client
            .execute(&delete, &[Arg::Text(lock_id)])
            .await
            .map(|_| ())
    }
}

impl CatalogLock for JdbcLocks {
    fn table_lock(&self, id: &Identifier) -> Arc<dyn TableLock> {
        Arc::new(JdbcLock {
            locks: self.clone(),
            lock_id: format!("{}.{}.{}", self.catalog_key, id.database, id.object_name()),
            id: id.clone(),
        })
    }
}

/// The lock of one table.
#[derive(Clone, Debug)]
struct JdbcLock {
    locks: JdbcLocks,
    id: Identifier,
    lock_id: String,
}

#[async_trait]
impl TableLock for JdbcLock {
    async fn run_locked<'a>(&'a self, section: BoxFuture<'a, Result<()>>) -> Result<()> {
        self.locks.acquire(&self.lock_id).await?;
        let result = section.await;
        if let Err(e) = self.locks.release(&self.lock_id).await {
            // The row stays until it expires (lock-acquire-timeout); the section's outcome stands.
            log::warn!(target: "tidelake.catalog", "releasing the JDBC lock '{}': {e}", self.lock_id);
        }
        result
    }

    fn for_branch(&self, branch: &str) -> Arc<dyn TableLock> {
        self.locks.table_lock(&self.id.on_branch(branch))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::io::env::ManualTimer;

    async fn locks(uri: &str, timeout: &str) -> JdbcLocks {
        locks_on(uri, timeout, Env::default()).await
    }

    async fn locks_on(uri: &str, timeout: &str, env: Env) -> JdbcLocks {
        let client = JdbcClient::connect(uri, &BTreeMap::new()).await.unwrap();
        let options: CatalogOptions = [
            ("catalog-key", "k"),
            ("lock-acquire-timeout", timeout),
            ("lock-check-max-sleep", "20ms"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        JdbcLocks::open(client, &options, env).await.unwrap()
    }

    #[tokio::test]
    async fn sections_exclude_each_other_and_release_the_row() {
        let dir = tempfile::tempdir().unwrap();
        let uri = format!("jdbc:sqlite:{}/c.db", dir.path().display());
        let (a, b) = (locks(&uri, "10s").await, locks(&uri, "10s").await);
        let inside = Arc::new(AtomicUsize::new(0));
        let run = |l: JdbcLocks| {
            let inside = inside.clone();
            async move {
                for _ in 0..5 {
                    let lock = l.table_lock(&Identifier::parse("db.t").unwrap());
                    let inside = inside.clone();
                    lock.run_locked(Box::pin(async move {
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
                        Env::default().sleep(Duration::from_millis(5)).await;
                        inside.fetch_sub(1, Ordering::SeqCst);
                        Ok(())
                    }))
                    .await
                    .unwrap();
                }
            }
        };
        tokio::join!(run(a.clone()), run(b));
        let rows = a
            .client
            .query("SELECT lock_id FROM paimon_distributed_locks", &[]);
        assert!(rows.await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_held_lock_times_out_as_a_conflict_and_an_expired_one_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let uri = format!("jdbc:sqlite:{}/c.db", dir.path().display());
        // an hour of lock-acquire-timeout on a manual timer: the attempts' waits pass it
        let env = Env::default().with_timer(Arc::new(ManualTimer::default()));
        let hour = locks_on(&uri, "1h", env.clone()).await;
        let insert =
            "INSERT INTO paimon_distributed_locks (lock_id, expire_time_seconds) VALUES (?, ?)";
        hour.client
            .execute(insert, &[Arg::Text("k.db.held"), Arg::Int(3600)])
            .await
            .unwrap();
        let waited = env.stopwatch();
        let e = hour
            .table_lock(&Identifier::parse("db.held").unwrap())
            .run_locked(Box::pin(async { Ok(()) }))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::CommitConflict, "{e}");
        assert!(e.to_string().contains("k.db.held"), "{e}");
        let waited = waited.elapsed();
        assert!(waited > Duration::from_secs(3600), "{waited:?}");
        assert!(
            waited < Duration::from_secs(3601),
            "waits of at most lock-check-max-sleep"
        );
        let l = locks(&uri, "2s").await;
        // released by its holder (another connection): the next attempt takes it
        let other = locks(&uri, "1s").await;
        let waiting = l.table_lock(&Identifier::parse("db.held").unwrap());
        let release = async {
            Env::default().sleep(Duration::from_millis(300)).await;
            other
                .client
                .execute(
                    "DELETE FROM paimon_distributed_locks WHERE lock_id = 'k.db.held'",
                    &[],
                )
                .await
                .unwrap();
        };
        let (taken, ()) = tokio::join!(waiting.run_locked(Box::pin(async { Ok(()) })), release);
        taken.unwrap();
        // a row older than its expiry (a holder that died) is cleared by the next acquirer
        let stale =
            "INSERT INTO paimon_distributed_locks VALUES (?, datetime('now', '-10 seconds'), ?)";
        l.client
            .execute(stale, &[Arg::Text("k.db.dead"), Arg::Int(1)])
            .await
            .unwrap();
        l.table_lock(&Identifier::parse("db.dead").unwrap())
            .run_locked(Box::pin(async { Ok(()) }))
            .await
            .unwrap();
    }
}
