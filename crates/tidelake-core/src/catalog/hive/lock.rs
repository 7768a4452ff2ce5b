//! Paimon's Hive commit lock (Java `HiveCatalogLock`): an EXCLUSIVE table-level lock of the
//! Hive Metastore's lock manager on `<database>.<object name>` (`t$branch_b` for a branch), so
//! a Java writer and a tidelake writer of one table exclude each other around the creation of
//! its snapshot and schema files.
//!
//! Protocol (as Java's): `lock` is requested once; while the metastore answers WAITING, its
//! state is polled with `check_lock` after 100 ms, 200 ms, ... up to `lock-check-max-sleep`,
//! until `lock-acquire-timeout` has passed; a lock still waiting then is released (`unlock`) and
//! the commit fails as a conflict. Locks are released with `unlock` by their id, from any
//! connection.
//!
//! Invariants: the section runs only while the metastore has granted this lock; the lock is
//! released after the section whatever it returned; a lock whose release failed (or whose
//! holder died) stays until the metastore times it out (its `metastore.txn.timeout`, as for
//! Java's), holding other writers of the table until then.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use tidelake_spec::catalog_options::CatalogOptions;

use super::client::{HmsClient, LockResponse, LockState};
use super::thrift::{Struct, Value};
use super::{current_user, host_name};
use crate::catalog::{options_error, CatalogLock, Identifier};
use crate::error::{Error, Result};
use crate::io::Env;
use crate::snapshot_commit::TableLock;

/// The first wait between checks is twice this (Java's `nextSleep = 50`, doubled first).
const FIRST_SLEEP: Duration = Duration::from_millis(50);
/// Thrift `LockType.EXCLUSIVE`, `LockLevel.TABLE`.
const EXCLUSIVE: i32 = 3;
const TABLE_LEVEL: i32 = 2;
/// Shown by the metastore's `SHOW LOCKS` as the holder's agent.
const AGENT: &str = "tidelake";

/// How a catalog's tables are locked.
#[derive(Clone, Debug)]
pub(crate) struct HiveLocks {
    client: HmsClient,
    acquire_timeout: Duration,
    check_max_sleep: Duration,
    /// Measures `lock-acquire-timeout` and waits between checks.
    env: Env,
}

impl HiveLocks {
    pub(crate) fn new(client: HmsClient, options: &CatalogOptions, env: Env) -> Result<HiveLocks> {
        Ok(HiveLocks {
            client,
            acquire_timeout: options.lock_acquire_timeout().map_err(options_error)?,
            check_max_sleep: options.lock_check_max_sleep().map_err(options_error)?,
            env,
        })
    }

    /// Java `HiveCatalogLock.lock`: the id of the granted lock.
    async fn acquire(&self, database: &str, object: &str) -> Result<i64> {
        let component = Struct::default()
            .with(1, Value::I32(EXCLUSIVE))
            .with(2, Value::I32(TABLE_LEVEL))
            .with(3, Value::text(database))
            .with(4, Value::text(object));
        let request = Struct::default()
            .with(1, Value::structs([component]))
            .with(3, Value::text(&current_user()))
            .with(4, Value::text(&host_name()))
            .with(5, Value::text(AGENT));
        let mut response: LockResponse = self.client.lock(request).await?;
        let started = self.env.stopwatch();
        let mut sleep = FIRST_SLEEP;
        while response.state == LockState::Waiting {
            sleep = (sleep * 2).min(self.check_max_sleep);
            self.env.sleep(sleep).await;
            response = self.client.check_lock(response.id).await?;
            if started.elapsed() > self.acquire_timeout {
                break;
            }
        }
        if response.state == LockState::Acquired {
            return Ok(response.id);
        }
        if response.state == LockState::Waiting {
            self.release(response.id).await;
        }
        Err(Error::CommitConflict(format!(
            "could not acquire the Hive Metastore lock of {database}.{object} at {} within {} ms \
             (lock-acquire-timeout): another writer holds it",
            self.client.uri(),
            started.elapsed().as_millis()
        )))
    }

    async fn release(&self, id: i64) {
        if let Err(e) = self.client.unlock(id).await {
            // The lock stays until the metastore times it out; the section's outcome stands.
            log::warn!(target: "tidelake.catalog", "releasing Hive Metastore lock {id}: {e}");
        }
    }
}

impl CatalogLock for HiveLocks {
    fn table_lock(&self, id: &Identifier) -> Arc<dyn TableLock> {
        Arc::new(HiveLock {
            locks: self.clone(),
            id: id.clone(),
        })
    }
}

/// The lock of one table (or branch).
#[derive(Clone, Debug)]
struct HiveLock {
    locks: HiveLocks,
    id: Identifier,
}

#[async_trait]
impl TableLock for HiveLock {
    async fn run_locked<'a>(&'a self, section: BoxFuture<'a, Result<()>>) -> Result<()> {
        let lock = self
            .locks
            .acquire(&self.id.database, &self.id.object_name())
            .await?;
        let result = section.await;
        self.locks.release(lock).await;
        result
    }

    fn for_branch(&self, branch: &str) -> Arc<dyn TableLock> {
        self.locks.table_lock(&self.id.on_branch(branch))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;
    use crate::catalog::hive::thrift::{decode_call, encode_reply};
    use crate::error::ErrorKind;
    use crate::io::env::ManualTimer;

    const WAITING: i32 = 2;
    const ACQUIRED: i32 = 1;

    /// What the fake metastore was asked, in order.
    type Calls = Arc<Mutex<Vec<String>>>;

    /// A metastore that answers `lock` (lock id 7) and `check_lock` with the states of `script`
    /// in turn (the last one repeated), and records every call.
    async fn metastore(script: Vec<i32>) -> (HmsClient, Calls) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let uri = format!("thrift://{}", listener.local_addr().unwrap());
        let calls = Calls::default();
        let states = Arc::new(Mutex::new(VecDeque::from(script)));
        let log = calls.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, states.clone(), log.clone()));
            }
        });
        (HmsClient::new(&uri).unwrap(), calls)
    }

    async fn serve(mut socket: TcpStream, states: Arc<Mutex<VecDeque<i32>>>, calls: Calls) {
        let mut buf = Vec::new();
        while socket.read_buf(&mut buf).await.is_ok_and(|n| n > 0) {
            while let Some((method, seq, args, used)) = decode_call(&buf) {
                buf.drain(..used);
                let request = args.child(1).cloned().unwrap_or_default();
                let next_state = || {
                    let mut states = states.lock().unwrap();
                    match states.len() {
                        1 => states[0],
                        _ => states.pop_front().unwrap(),
                    }
                };
                let (call, result) = match method.as_str() {
                    "set_ugi" => {
                        let groups = Struct::default().with(0, Value::texts(["users"]));
                        let reply = encode_reply(&method, seq, &groups);
                        if socket.write_all(&reply).await.is_err() {
                            return;
                        }
                        continue;
                    }
                    "lock" => {
                        let component = request.children(1)[0].clone();
                        let target = format!(
                            "{}.{}",
                            component.text(3).unwrap(),
                            component.text(4).unwrap()
                        );
                        (format!("lock {target}"), Some(next_state()))
                    }
                    "check_lock" => (
                        format!("check {}", request.i64(1).unwrap()),
                        Some(next_state()),
                    ),
                    other => (format!("{other} {}", request.i64(1).unwrap()), None),
                };
                calls.lock().unwrap().push(call);
                let result = match result {
                    Some(state) => Struct::default().with(
                        0,
                        Value::Struct(
                            Struct::default()
                                .with(1, Value::I64(7))
                                .with(2, Value::I32(state)),
                        ),
                    ),
                    None => Struct::default(),
                };
                if socket
                    .write_all(&encode_reply(&method, seq, &result))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
    }

    fn locks(client: HmsClient, timeout: &str, max_sleep: &str, env: Env) -> HiveLocks {
        let options: CatalogOptions = [
            ("lock-acquire-timeout", timeout),
            ("lock-check-max-sleep", max_sleep),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        HiveLocks::new(client, &options, env).unwrap()
    }

    fn manual() -> Env {
        Env::default().with_timer(Arc::new(ManualTimer::default()))
    }

    #[tokio::test]
    async fn a_waiting_lock_is_checked_until_granted_and_released_after_the_section() {
        let (client, calls) = metastore(vec![WAITING, WAITING, WAITING, ACQUIRED]).await;
        let env = manual();
        let lock = locks(client, "1h", "8s", env.clone())
            .table_lock(&Identifier::parse("db.t").unwrap())
            .for_branch("b");
        let waited = env.stopwatch();
        let log = calls.clone();
        lock.run_locked(Box::pin(async move {
            log.lock().unwrap().push("section".into());
            Ok(())
        }))
        .await
        .unwrap();
        assert_eq!(
            *calls.lock().unwrap(),
            [
                "lock db.t$branch_b",
                "check 7",
                "check 7",
                "check 7",
                "section",
                "unlock 7"
            ]
        );
        // Java's waits: 100 ms, 200 ms, 400 ms
        assert_eq!(waited.elapsed(), Duration::from_millis(700));
    }

    #[tokio::test]
    async fn a_lock_not_granted_in_time_is_a_conflict_and_its_request_is_released() {
        let (client, calls) = metastore(vec![WAITING]).await;
        let env = manual();
        let waited = env.stopwatch();
        let e = locks(client, "1h", "1min", env.clone())
            .table_lock(&Identifier::parse("db.t").unwrap())
            .run_locked(Box::pin(async {
                panic!("the section ran without the lock")
            }))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::CommitConflict, "{e}");
        assert!(e.to_string().contains("lock of db.t"), "{e}");
        let waited = waited.elapsed();
        assert!(waited > Duration::from_secs(3600), "{waited:?}");
        assert!(
            waited <= Duration::from_secs(3660),
            "waits of at most lock-check-max-sleep"
        );
        assert_eq!(calls.lock().unwrap().last().unwrap(), "unlock 7");
    }

    #[tokio::test]
    async fn a_failed_section_still_releases_the_lock() {
        let (client, calls) = metastore(vec![ACQUIRED]).await;
        let e = locks(client, "1s", "1s", manual())
            .table_lock(&Identifier::parse("db.t").unwrap())
            .run_locked(Box::pin(async {
                Err(Error::invalid("the section failed"))
            }))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
        assert_eq!(*calls.lock().unwrap(), ["lock db.t", "unlock 7"]);
    }
}
