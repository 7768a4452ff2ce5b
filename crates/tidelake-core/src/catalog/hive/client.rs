//! The Hive Metastore's Thrift service: the calls Paimon's `HiveCatalog` and `HiveCatalogLock`
//! make through Hive's `HiveMetaStoreClient`, in the forms both HMS 3 and HMS 4 serve
//! (`get_table_req`, `get_table_objects_by_name_req`, `add_partitions_req`), over TCP
//! connections to the first metastore of `uri` that accepts one.
//!
//! Invariants: a connection is used by one call at a time and goes back to the pool only after
//! a whole reply was read from it, so a reply is never read by another call; a call that fails
//! in transport (refused, reset, timed out, a reply that is not Thrift) is an [`Error::Io`]
//! naming the metastore, its outcome unknown, and empties the pool (its connections may be as
//! stale as the failed one); an exception the metastore declares is mapped to the error kind
//! the caller can act on (`NoSuchObjectException`: not found, `AlreadyExistsException`: already
//! exists, `InvalidObject`/`InvalidOperation`: invalid, anything else: a storage error).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::current_user;
use super::thrift::{decode_reply, encode_call, Decoded, Reply, Struct, Value};
use crate::error::{Error, Result};
use Exception::{
    AlreadyExists, InvalidObject, InvalidOperation, InvalidPartition, Meta, NoSuchLock,
    NoSuchObject, Txn, UnknownDb, UnknownPartition, UnknownTable,
};

/// Java `MetastoreConf.CLIENT_SOCKET_TIMEOUT`'s default, for connecting and for each reply.
const SOCKET_TIMEOUT: Duration = Duration::from_secs(600);
/// The metastore's default port.
const DEFAULT_PORT: u16 = 9083;
const URI_SCHEME: &str = "thrift://";
/// What an `UnknownTableException` is not found.
pub(crate) const METASTORE_TABLE: &str = "metastore table";
/// Thrift `PartitionEventType.LOAD_DONE`.
const LOAD_DONE: i32 = 1;

/// The exceptions a call declares, in the order of their ids (the first is result field 1).
#[derive(Clone, Copy, Debug)]
enum Exception {
    NoSuchObject,
    UnknownDb,
    UnknownTable,
    UnknownPartition,
    NoSuchLock,
    AlreadyExists,
    InvalidObject,
    InvalidOperation,
    InvalidPartition,
    Meta,
    Txn,
}

impl Exception {
    fn error(self, uri: &str, method: &str, message: String) -> Error {
        match self {
            Exception::UnknownTable => Error::not_found(METASTORE_TABLE, message),
            Exception::NoSuchObject
            | Exception::UnknownDb
            | Exception::UnknownPartition
            | Exception::NoSuchLock => Error::not_found("metastore object", message),
            Exception::AlreadyExists => Error::AlreadyExists(message),
            Exception::InvalidObject
            | Exception::InvalidOperation
            | Exception::InvalidPartition => {
                Error::Invalid(format!("the Hive Metastore refused {method}: {message}"))
            }
            Exception::Meta | Exception::Txn => io_error(uri, format!("{method}: {message}")),
        }
    }
}

/// The state of a metastore lock (Thrift `LockState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LockState {
    Acquired,
    Waiting,
    /// Aborted (timed out) or not acquired.
    Refused,
}

/// A lock request's answer: its id and state.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LockResponse {
    pub(crate) id: i64,
    pub(crate) state: LockState,
}

fn io_error(uri: &str, message: String) -> Error {
    Error::Io {
        path: uri.to_string(),
        source: object_store::Error::Generic {
            store: "hive metastore",
            source: message.into(),
        },
    }
}

/// `host:port` of each `thrift://host[:port]` of a comma-separated `uri`.
fn addresses(uri: &str) -> Result<Vec<String>> {
    uri.split(',')
        .map(|one| {
            let one = one.trim();
            let bad = || {
                Error::invalid(format!(
                    "Hive Metastore uri '{one}' is not thrift://host:port (option 'uri')"
                ))
            };
            let authority = one.strip_prefix(URI_SCHEME).ok_or_else(bad)?;
            let authority = authority.strip_suffix('/').unwrap_or(authority);
            if authority.is_empty() || authority.contains('/') {
                return Err(bad());
            }
            match authority.rsplit_once(':') {
                Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                    Ok(authority.to_string())
                }
                Some(_) => Err(bad()),
                None => Ok(format!("{authority}:{DEFAULT_PORT}")),
            }
        })
        .collect()
}

/// One connection: calls on it are numbered.
struct Connection {
    stream: TcpStream,
    seq: i32,
    buf: Vec<u8>,
}

impl Connection {
    async fn call(&mut self, method: &str, args: &Struct) -> std::result::Result<Reply, String> {
        self.seq = self.seq.wrapping_add(1);
        let request = encode_call(method, self.seq, args);
        self.stream
            .write_all(&request)
            .await
            .map_err(|e| format!("sending {method}: {e}"))?;
        self.buf.clear();
        loop {
            if !self.buf.is_empty() {
                match decode_reply(&self.buf, method, self.seq)? {
                    Decoded::Done(reply, used) if used == self.buf.len() => return Ok(reply),
                    Decoded::Done(..) => return Err(format!("bytes after the reply to {method}")),
                    Decoded::Incomplete => {}
                }
            }
            let read = tokio::time::timeout(SOCKET_TIMEOUT, self.stream.read_buf(&mut self.buf))
                .await
                .map_err(|_| format!("no reply to {method} within {SOCKET_TIMEOUT:?}"))?
                .map_err(|e| format!("reading the reply to {method}: {e}"))?;
            if read == 0 {
                return Err(format!(
                    "the metastore closed the connection during {method}"
                ));
            }
        }
    }
}

/// A Hive Metastore client. Cheap to clone; clones share the connections.
#[derive(Clone)]
pub(crate) struct HmsClient {
    uri: String,
    addresses: Vec<String>,
    idle: Arc<Mutex<Vec<Connection>>>,
}

impl std::fmt::Debug for HmsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HmsClient").field("uri", &self.uri).finish()
    }
}

impl HmsClient {
    /// A client of the metastores of `uri` (`thrift://host:port`, comma-separated for several):
    /// nothing is connected yet.
    pub(crate) fn new(uri: &str) -> Result<HmsClient> {
        Ok(HmsClient {
            uri: uri.to_string(),
            addresses: addresses(uri)?,
            idle: Arc::default(),
        })
    }

    pub(crate) fn uri(&self) -> &str {
        &self.uri
    }

    async fn connect(&self) -> Result<Connection> {
        let mut failures = Vec::new();
        for address in &self.addresses {
            match tokio::time::timeout(SOCKET_TIMEOUT, TcpStream::connect(address)).await {
                Ok(Ok(stream)) => {
                    // requests are written whole: no reason to wait for more
                    let _ = stream.set_nodelay(true);
                    let mut connection = Connection {
                        stream,
                        seq: 0,
                        buf: Vec::new(),
                    };
                    // Hive's client names its user on each connection, so a metastore that acts
                    // as its callers (`metastore.execute.setugi`) touches files as this user; a
                    // metastore that refuses the call is used all the same
                    let user = Struct::of([Value::text(&current_user()), Value::texts([""; 0])]);
                    match connection.call("set_ugi", &user).await {
                        Ok(_) => return Ok(connection),
                        Err(e) => failures.push(format!("{address}: {e}")),
                    }
                }
                Ok(Err(e)) => failures.push(format!("{address}: {e}")),
                Err(_) => failures.push(format!("{address}: no answer within {SOCKET_TIMEOUT:?}")),
            }
        }
        Err(io_error(
            &self.uri,
            format!(
                "cannot connect to the Hive Metastore ({})",
                failures.join("; ")
            ),
        ))
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Connection>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Call `method`: its return value (`None` for `void`), or the error its declared
    /// `exceptions` (by id, from 1) or the transport gave.
    async fn call(
        &self,
        method: &str,
        args: Struct,
        exceptions: &[Exception],
    ) -> Result<Option<Value>> {
        let pooled = self.idle().pop();
        let mut connection = match pooled {
            Some(c) => c,
            None => self.connect().await?,
        };
        let reply = match connection.call(method, &args).await {
            Ok(reply) => {
                self.idle().push(connection);
                reply
            }
            Err(message) => {
                self.idle().clear();
                return Err(io_error(&self.uri, message));
            }
        };
        let fields = match reply {
            Reply::Failed(message) => {
                return Err(io_error(&self.uri, format!("{method}: {message}")))
            }
            Reply::Result(result) => result.into_fields(),
        };
        match fields.into_iter().next() {
            None => Ok(None),
            Some((0, value)) => Ok(Some(value)),
            Some((id, Value::Struct(e))) => {
                let message = e.text(1).unwrap_or_default();
                match usize::try_from(id - 1).ok().and_then(|i| exceptions.get(i)) {
                    Some(exception) => Err(exception.error(&self.uri, method, message)),
                    None => Err(io_error(
                        &self.uri,
                        format!("{method}: exception {id}: {message}"),
                    )),
                }
            }
            Some((id, _)) => Err(io_error(
                &self.uri,
                format!("{method}: unexpected result field {id}"),
            )),
        }
    }

    /// A call that returns nothing.
    async fn void(&self, method: &str, args: Struct, exceptions: &[Exception]) -> Result<()> {
        self.call(method, args, exceptions).await.map(drop)
    }

    /// A call that returns a value.
    async fn value(&self, method: &str, args: Struct, exceptions: &[Exception]) -> Result<Value> {
        self.call(method, args, exceptions)
            .await?
            .ok_or_else(|| io_error(&self.uri, format!("{method} returned nothing")))
    }

    async fn strings(&self, method: &str, args: Struct) -> Result<Vec<String>> {
        let value = self.value(method, args, &[Meta]).await?;
        Ok(value.to_texts())
    }

    async fn structure(
        &self,
        method: &str,
        args: Struct,
        exceptions: &[Exception],
    ) -> Result<Struct> {
        match self.value(method, args, exceptions).await? {
            Value::Struct(s) => Ok(s),
            other => Err(io_error(
                &self.uri,
                format!("{method} returned {other:?}, not a struct"),
            )),
        }
    }

    /// `None` for a [`Error::NotFound`].
    fn found<T>(result: Result<T>) -> Result<Option<T>> {
        match result {
            Ok(v) => Ok(Some(v)),
            Err(Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub(crate) async fn all_databases(&self) -> Result<Vec<String>> {
        self.strings("get_all_databases", Struct::default()).await
    }

    pub(crate) async fn database(&self, name: &str) -> Result<Option<Struct>> {
        let args = Struct::of([Value::text(name)]);
        let exceptions = [NoSuchObject, Meta];
        Self::found(self.structure("get_database", args, &exceptions).await)
    }

    pub(crate) async fn create_database(&self, database: Struct) -> Result<()> {
        let args = Struct::of([Value::Struct(database)]);
        self.void(
            "create_database",
            args,
            &[AlreadyExists, InvalidObject, Meta],
        )
        .await
    }

    pub(crate) async fn alter_database(&self, name: &str, database: Struct) -> Result<()> {
        let args = Struct::of([Value::text(name), Value::Struct(database)]);
        self.void("alter_database", args, &[Meta, NoSuchObject])
            .await
    }

    /// Drop a database with its tables, deleting their files (Java's `dropDatabase(name, true,
    /// false, true)`).
    pub(crate) async fn drop_database(&self, name: &str) -> Result<()> {
        let args = Struct::of([Value::text(name), Value::Bool(true), Value::Bool(true)]);
        self.void(
            "drop_database",
            args,
            &[NoSuchObject, InvalidOperation, Meta],
        )
        .await
    }

    pub(crate) async fn all_tables(&self, database: &str) -> Result<Vec<String>> {
        let args = Struct::of([Value::text(database)]);
        self.strings("get_all_tables", args).await
    }

    pub(crate) async fn table(&self, database: &str, table: &str) -> Result<Option<Struct>> {
        let request = Struct::of([Value::text(database), Value::text(table)]);
        let args = Struct::of([Value::Struct(request)]);
        let exceptions = [Meta, NoSuchObject];
        let result = Self::found(self.structure("get_table_req", args, &exceptions).await)?;
        Ok(result.and_then(|r| r.child(1).cloned()))
    }

    /// The tables of `names` that exist (Java `getTableObjectsByName`).
    pub(crate) async fn tables(&self, database: &str, names: &[String]) -> Result<Vec<Struct>> {
        let request = Struct::of([Value::text(database), Value::texts(names)]);
        let args = Struct::of([Value::Struct(request)]);
        let result = self
            .structure(
                "get_table_objects_by_name_req",
                args,
                &[Meta, InvalidOperation, UnknownDb],
            )
            .await?;
        Ok(result.children(1).into_iter().cloned().collect())
    }

    pub(crate) async fn create_table(&self, table: Struct) -> Result<()> {
        let args = Struct::of([Value::Struct(table)]);
        let exceptions = [AlreadyExists, InvalidObject, Meta, NoSuchObject];
        self.void("create_table", args, &exceptions).await
    }

    /// Java `alter_table_with_environmentContext`.
    pub(crate) async fn alter_table(
        &self,
        database: &str,
        name: &str,
        table: Struct,
        context: &BTreeMap<String, String>,
    ) -> Result<()> {
        let args = Struct::of([
            Value::text(database),
            Value::text(name),
            Value::Struct(table),
            environment(context),
        ]);
        let exceptions = [InvalidOperation, Meta];
        self.void("alter_table_with_environment_context", args, &exceptions)
            .await
    }

    /// Java `dropTable(db, name, deleteData, false, ifPurge)`.
    pub(crate) async fn drop_table(
        &self,
        database: &str,
        name: &str,
        delete_data: bool,
        context: &BTreeMap<String, String>,
    ) -> Result<()> {
        let args = Struct::of([
            Value::text(database),
            Value::text(name),
            Value::Bool(delete_data),
            environment(context),
        ]);
        let exceptions = [NoSuchObject, Meta];
        self.void("drop_table_with_environment_context", args, &exceptions)
            .await
    }

    /// Every partition of a table (Java `listPartitions(db, table, Short.MAX_VALUE)`; -1 asks
    /// the metastore for all of them).
    pub(crate) async fn partitions(&self, database: &str, table: &str) -> Result<Vec<Struct>> {
        let args = Struct::of([Value::text(database), Value::text(table), Value::I16(-1)]);
        match self
            .value("get_partitions", args, &[NoSuchObject, Meta])
            .await?
        {
            Value::List(_, items) => Ok(items
                .into_iter()
                .filter_map(|v| match v {
                    Value::Struct(s) => Some(s),
                    _ => None,
                })
                .collect()),
            other => Err(io_error(
                &self.uri,
                format!("get_partitions returned {other:?}, not a list"),
            )),
        }
    }

    /// Add partitions that do not exist yet (Java `add_partitions(parts, true, false)`).
    pub(crate) async fn add_partitions(
        &self,
        database: &str,
        table: &str,
        partitions: Vec<Struct>,
    ) -> Result<()> {
        let request = Struct::of([
            Value::text(database),
            Value::text(table),
            Value::structs(partitions),
            Value::Bool(true),
            Value::Bool(false),
        ]);
        let args = Struct::of([Value::Struct(request)]);
        self.void(
            "add_partitions_req",
            args,
            &[InvalidObject, AlreadyExists, Meta],
        )
        .await
    }

    /// Drop a partition by its values, keeping its files; `false` if it did not exist.
    pub(crate) async fn drop_partition(
        &self,
        database: &str,
        table: &str,
        values: &[String],
    ) -> Result<bool> {
        let args = Struct::of([
            Value::text(database),
            Value::text(table),
            Value::texts(values),
            Value::Bool(false),
        ]);
        let exceptions = [NoSuchObject, Meta];
        Ok(Self::found(self.void("drop_partition", args, &exceptions).await)?.is_some())
    }

    /// Request a lock (a Thrift `LockRequest`).
    /// A load-done event for a partition (`key -> value` of every partition column; Java
    /// `markPartitionForEvent(db, table, spec, PartitionEventType.LOAD_DONE)`).
    pub(crate) async fn mark_partition_done(
        &self,
        database: &str,
        table: &str,
        spec: &BTreeMap<String, String>,
    ) -> Result<()> {
        let args = Struct::of([
            Value::text(database),
            Value::text(table),
            Value::text_map(spec),
            Value::I32(LOAD_DONE),
        ]);
        let exceptions = [
            Meta,
            NoSuchObject,
            UnknownDb,
            UnknownTable,
            UnknownPartition,
            InvalidPartition,
        ];
        self.void("markPartitionForEvent", args, &exceptions).await
    }

    pub(crate) async fn lock(&self, request: Struct) -> Result<LockResponse> {
        let args = Struct::of([Value::Struct(request)]);
        let response = self.structure("lock", args, &[Txn, Txn]).await?;
        self.lock_response(response)
    }

    pub(crate) async fn check_lock(&self, id: i64) -> Result<LockResponse> {
        let args = Struct::of([Value::Struct(Struct::of([Value::I64(id)]))]);
        let response = self
            .structure("check_lock", args, &[Txn, Txn, NoSuchLock])
            .await?;
        self.lock_response(response)
    }

    pub(crate) async fn unlock(&self, id: i64) -> Result<()> {
        let args = Struct::of([Value::Struct(Struct::of([Value::I64(id)]))]);
        self.void("unlock", args, &[NoSuchLock, Txn]).await
    }

    /// Thrift `LockResponse` (1: lockid, 2: state: 1 acquired, 2 waiting, 3 abort, 4 not acquired).
    fn lock_response(&self, response: Struct) -> Result<LockResponse> {
        let (Some(id), Some(state)) = (response.i64(1), response.i32(2)) else {
            return Err(io_error(
                &self.uri,
                format!("a lock response without id or state: {response:?}"),
            ));
        };
        let state = match state {
            1 => LockState::Acquired,
            2 => LockState::Waiting,
            _ => LockState::Refused,
        };
        Ok(LockResponse { id, state })
    }
}

/// Thrift `EnvironmentContext`.
fn environment(properties: &BTreeMap<String, String>) -> Value {
    Value::Struct(Struct::of([Value::text_map(properties)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_thrift_hosts_and_ports() {
        assert_eq!(
            addresses("thrift://h1:9083, thrift://h2/,thrift://10.0.0.1:1").unwrap(),
            ["h1:9083", "h2:9083", "10.0.0.1:1"]
        );
        for bad in [
            "h:9083",
            "http://h:9083",
            "thrift://",
            "thrift://h:x",
            "thrift://h:1/db",
        ] {
            let e = addresses(bad).unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::Invalid, "{bad}: {e}");
        }
    }

    #[tokio::test]
    async fn an_unreachable_metastore_is_a_storage_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let client = HmsClient::new(&format!("thrift://127.0.0.1:{port}")).unwrap();
        let e = client.all_databases().await.unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Io, "{e}");
        assert!(e.to_string().contains("cannot connect"), "{e}");
    }
}
