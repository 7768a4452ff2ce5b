//! A connection to the database behind Paimon's JDBC catalog, from the catalog's JDBC URI:
//! SQLite (`jdbc:sqlite:<file>`, embedded through rusqlite's bundled SQLite) or PostgreSQL
//! (`jdbc:postgresql://host:port/db`, through tokio-postgres). Java `JdbcClientPool`.
//!
//! Statements are written once with JDBC's `?` placeholders (as Java's are) and bound in order;
//! PostgreSQL gets them numbered. Every value is text except [`Arg::Int`].
//!
//! Invariants: a statement either runs whole or fails with an [`Error::Io`] naming the
//! database (never a panic); a SQLite file this client creates is put in WAL journal mode, which
//! Java's JDBC catalog needs with `lock.enabled` (a rollback-journal file makes its second open
//! fail with SQLITE_BUSY); no statement leaves a cursor open between calls.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{Error, Result};

/// SQLite's wait for a locked database before a statement fails (sqlite-jdbc's default).
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(3);

/// Which SQL dialect the database speaks (Java `DistributedLockDialectFactory`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

/// A statement argument.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Arg<'a> {
    Text(&'a str),
    Int(i64),
}

/// A cheap-to-clone handle on one connection.
#[derive(Clone)]
pub(crate) struct JdbcClient {
    uri: Arc<str>,
    conn: Conn,
}

#[derive(Clone)]
enum Conn {
    Sqlite(Arc<Mutex<rusqlite::Connection>>),
    Postgres(Arc<tokio_postgres::Client>),
}

impl fmt::Debug for JdbcClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JdbcClient({})", self.uri)
    }
}

fn db_error(uri: &str, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::Io {
        path: uri.to_string(),
        source: object_store::Error::Generic {
            store: "jdbc",
            source: Box::new(e),
        },
    }
}

/// The SQLite file of `jdbc:sqlite:<file>[?...]` (`file:` prefix allowed).
fn sqlite_path(rest: &str) -> Result<&str> {
    let path = rest.split('?').next().unwrap_or(rest);
    let path = path.strip_prefix("file:").unwrap_or(path);
    if path.is_empty() || path == ":memory:" {
        return Err(Error::invalid(
            "a JDBC catalog on SQLite needs a database file (jdbc:sqlite:/path/catalog.db); an \
             in-memory database would be private to one process",
        ));
    }
    Ok(path)
}

impl JdbcClient {
    /// Connect to the database of `uri` (`jdbc:sqlite:...` or `jdbc:postgresql://...`) with the
    /// catalog's `jdbc.*` properties (`user`, `password`; SQLite: `journal_mode`).
    pub(crate) async fn connect(uri: &str, properties: &BTreeMap<String, String>) -> Result<Self> {
        let rest = uri.strip_prefix("jdbc:").ok_or_else(|| {
            Error::invalid(format!(
                "invalid JDBC URI '{uri}': it must start with 'jdbc:'"
            ))
        })?;
        let conn = if let Some(file) = rest.strip_prefix("sqlite:") {
            Conn::Sqlite(Arc::new(Mutex::new(open_sqlite(
                uri,
                sqlite_path(file)?,
                properties,
            )?)))
        } else if rest.starts_with("postgresql:") {
            Conn::Postgres(Arc::new(connect_postgres(uri, rest, properties).await?))
        } else {
            let protocol = rest.split(':').next().unwrap_or(rest);
            return Err(Error::Unsupported(format!(
                "JDBC catalog on '{protocol}' ({uri}): tidelake speaks SQLite (jdbc:sqlite:) and \
                 PostgreSQL (jdbc:postgresql:)"
            )));
        };
        Ok(JdbcClient {
            uri: uri.into(),
            conn,
        })
    }

    pub(crate) fn dialect(&self) -> Dialect {
        match self.conn {
            Conn::Sqlite(_) => Dialect::Sqlite,
            Conn::Postgres(_) => Dialect::Postgres,
        }
    }

    pub(crate) fn uri(&self) -> &str {
        &self.uri
    }

    /// Run a statement; the number of rows it changed.
    pub(crate) async fn execute(&self, sql: &str, args: &[Arg<'_>]) -> Result<u64> {
        match &self.conn {
            Conn::Sqlite(conn) => {
                self.on_sqlite(conn, sql, args, |conn, sql, params| {
                    conn.execute(sql, rusqlite::params_from_iter(params.iter()))
                        .map(|n| n as u64)
                })
                .await
            }
            Conn::Postgres(client) => {
                let sql = numbered(sql);
                let params = pg_params(args);
                client
                    .execute(sql.as_str(), &pg_refs(&params))
                    .await
                    .map_err(|e| db_error(&self.uri, e))
            }
        }
    }

    /// Run a query; the text of each of its rows' columns (`NULL` as `None`).
    pub(crate) async fn query(
        &self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> Result<Vec<Vec<Option<String>>>> {
        match &self.conn {
            Conn::Sqlite(conn) => {
                self.on_sqlite(conn, sql, args, |conn, sql, params| {
                    let mut stmt = conn.prepare(sql)?;
                    let width = stmt.column_count();
                    let rows =
                        stmt.query_map(rusqlite::params_from_iter(params.iter()), |row| {
                            (0..width)
                                .map(|i| row.get::<_, Option<String>>(i))
                                .collect()
                        })?;
                    rows.collect()
                })
                .await
            }
            Conn::Postgres(client) => {
                let sql = numbered(sql);
                let params = pg_params(args);
                let rows = client
                    .query(sql.as_str(), &pg_refs(&params))
                    .await
                    .map_err(|e| db_error(&self.uri, e))?;
                rows.iter()
                    .map(|row| {
                        (0..row.len())
                            .map(|i| row.try_get::<_, Option<String>>(i))
                            .collect::<std::result::Result<Vec<_>, _>>()
                            .map_err(|e| db_error(&self.uri, e))
                    })
                    .collect()
            }
        }
    }

    /// Run `work` on the SQLite connection off the async threads, with the arguments bound as
    /// SQLite values.
    async fn on_sqlite<T: Send + 'static>(
        &self,
        conn: &Arc<Mutex<rusqlite::Connection>>,
        sql: &str,
        args: &[Arg<'_>],
        work: impl FnOnce(&rusqlite::Connection, &str, Vec<rusqlite::types::Value>) -> rusqlite::Result<T>
            + Send
            + 'static,
    ) -> Result<T> {
        let (conn, sql, params) = (conn.clone(), sql.to_string(), sqlite_params(args));
        let uri = self.uri.clone();
        let run = move || {
            let conn = conn.lock().map_err(|_| poisoned(&uri))?;
            work(&conn, &sql, params).map_err(|e| db_error(&uri, e))
        };
        tokio::task::spawn_blocking(run)
            .await
            .map_err(|e| Error::Internal(format!("a statement on {} panicked: {e}", self.uri)))?
    }

    /// Run `CREATE TABLE` unless the table exists (Java checks `DatabaseMetaData.getTables`).
    pub(crate) async fn create_table_if_absent(&self, name: &str, ddl: &str) -> Result<()> {
        let exists = match self.dialect() {
            Dialect::Sqlite => "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?",
            Dialect::Postgres => {
                "SELECT table_name FROM information_schema.tables WHERE table_name = ?"
            }
        };
        if !self.query(exists, &[Arg::Text(name)]).await?.is_empty() {
            return Ok(());
        }
        match self.execute(ddl, &[]).await {
            Ok(_) => Ok(()),
            // another process created it meanwhile
            Err(_) if !self.query(exists, &[Arg::Text(name)]).await?.is_empty() => Ok(()),
            Err(e) => Err(e),
        }
    }
}

fn poisoned(uri: &str) -> Error {
    Error::Internal(format!("the connection to {uri} was poisoned by a panic"))
}

fn sqlite_params(args: &[Arg<'_>]) -> Vec<rusqlite::types::Value> {
    args.iter()
        .map(|a| match a {
            Arg::Text(t) => rusqlite::types::Value::Text(t.to_string()),
            Arg::Int(i) => rusqlite::types::Value::Integer(*i),
        })
        .collect()
}

type PgParam = Box<dyn tokio_postgres::types::ToSql + Sync + Send>;

fn pg_params(args: &[Arg<'_>]) -> Vec<PgParam> {
    args.iter()
        .map(|a| -> PgParam {
            match a {
                Arg::Text(t) => Box::new(t.to_string()),
                Arg::Int(i) => Box::new(*i),
            }
        })
        .collect()
}

fn pg_refs(params: &[PgParam]) -> Vec<&(dyn tokio_postgres::types::ToSql + Sync)> {
    params
        .iter()
        .map(|p| p.as_ref() as &(dyn tokio_postgres::types::ToSql + Sync))
        .collect()
}

/// JDBC's `?` placeholders as PostgreSQL's `$1, $2, ...` (no statement here has a `?` inside a
/// literal).
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(c);
        }
    }
    out
}

fn open_sqlite(
    uri: &str,
    path: &str,
    properties: &BTreeMap<String, String>,
) -> Result<rusqlite::Connection> {
    let new_file = !std::path::Path::new(path).exists();
    if let Some(parent) = std::path::Path::new(path).parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent).map_err(|e| db_error(uri, e))?;
        }
    }
    let conn = rusqlite::Connection::open(path).map_err(|e| db_error(uri, e))?;
    conn.busy_timeout(SQLITE_BUSY_TIMEOUT)
        .map_err(|e| db_error(uri, e))?;
    let journal = properties
        .get("journal_mode")
        .map(String::as_str)
        .or(new_file.then_some("WAL"));
    if let Some(mode) = journal {
        if !mode.chars().all(|c| c.is_ascii_alphabetic()) {
            return Err(Error::invalid(format!(
                "jdbc.journal_mode '{mode}' is not a SQLite journal mode"
            )));
        }
        conn.query_row(&format!("PRAGMA journal_mode = {mode}"), [], |_| Ok(()))
            .map_err(|e| db_error(uri, e))?;
    }
    Ok(conn)
}

async fn connect_postgres(
    uri: &str,
    rest: &str,
    properties: &BTreeMap<String, String>,
) -> Result<tokio_postgres::Client> {
    let url = url::Url::parse(rest)
        .map_err(|e| Error::invalid(format!("invalid JDBC URI '{uri}': {e}")))?;
    let mut config = tokio_postgres::Config::new();
    config
        .host(url.host_str().unwrap_or("localhost"))
        .port(url.port().unwrap_or(5432))
        .dbname(url.path().trim_start_matches('/'))
        .connect_timeout(Duration::from_secs(30));
    let mut settings: BTreeMap<String, String> = url
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    settings.extend(properties.iter().map(|(k, v)| (k.clone(), v.clone())));
    for (key, value) in &settings {
        match key.as_str() {
            "user" => {
                config.user(value);
            }
            "password" => {
                config.password(value);
            }
            "sslmode" | "ssl" if value != "disable" && value != "false" => {
                return Err(Error::Unsupported(format!(
                    "{key}={value} for {uri}: tidelake's PostgreSQL client connects without TLS"
                )));
            }
            _ => {}
        }
    }
    let (client, connection) = config
        .connect(tokio_postgres::NoTls)
        .await
        .map_err(|e| db_error(uri, e))?;
    let uri = uri.to_string();
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            log::warn!(target: "tidelake.catalog", "connection to {uri} closed: {e}");
        }
    });
    Ok(client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_for_postgres() {
        assert_eq!(
            numbered("DELETE FROM t WHERE a = ? AND b = ?"),
            "DELETE FROM t WHERE a = $1 AND b = $2"
        );
    }

    #[tokio::test]
    async fn sqlite_statements_round_trip_and_new_files_use_wal() {
        let dir = tempfile::tempdir().unwrap();
        let uri = format!("jdbc:sqlite:{}/sub/c.db", dir.path().display());
        let c = JdbcClient::connect(&uri, &BTreeMap::new()).await.unwrap();
        c.create_table_if_absent("t", "CREATE TABLE t(a VARCHAR(10), b BIGINT)")
            .await
            .unwrap();
        c.create_table_if_absent("t", "CREATE TABLE t(a VARCHAR(10), b BIGINT)")
            .await
            .unwrap();
        let n = c
            .execute(
                "INSERT INTO t VALUES (?, ?)",
                &[Arg::Text("x"), Arg::Int(7)],
            )
            .await
            .unwrap();
        assert_eq!(n, 1);
        let rows = c
            .query("SELECT a FROM t WHERE b = ?", &[Arg::Int(7)])
            .await
            .unwrap();
        assert_eq!(rows, vec![vec![Some("x".to_string())]]);
        let mode = c.query("PRAGMA journal_mode", &[]).await.unwrap();
        assert_eq!(mode[0][0].as_deref(), Some("wal"));
    }

    #[tokio::test]
    async fn bad_uris_are_typed_errors() {
        let e = JdbcClient::connect("sqlite:/x", &BTreeMap::new())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Invalid, "{e}");
        let e = JdbcClient::connect("jdbc:mysql://h/db", &BTreeMap::new())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Unsupported, "{e}");
        let e = JdbcClient::connect("jdbc:sqlite::memory:", &BTreeMap::new())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Invalid, "{e}");
    }
}
