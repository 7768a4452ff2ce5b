//! Paimon's catalog options: the keys, defaults and fallbacks of Java `CatalogOptions`,
//! `JdbcCatalogOptions` and `RESTCatalogOptions`, so a catalog is configured with the same map a
//! Java or pypaimon user passes to `CatalogFactory`.
//!
//! Invariants: every key is spelled as Java spells it (`lock-acquire-timeout` with dashes:
//! `lock.acquire-timeout` means nothing to Java either); a value that does not parse is an
//! [`Error::Invalid`] naming the key.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::options::Options;

pub const METASTORE: &str = "metastore";
pub const WAREHOUSE: &str = "warehouse";
pub const URI: &str = "uri";
pub const LOCK_ENABLED: &str = "lock.enabled";
pub const LOCK_TYPE: &str = "lock.type";
pub const LOCK_CHECK_MAX_SLEEP: &str = "lock-check-max-sleep";
pub const LOCK_ACQUIRE_TIMEOUT: &str = "lock-acquire-timeout";
/// `JdbcCatalogOptions.CATALOG_KEY`: the catalog's rows in the shared JDBC tables.
pub const CATALOG_KEY: &str = "catalog-key";
pub const LOCK_KEY_MAX_LENGTH: &str = "lock-key-max-length";
/// `JdbcCatalog.PROPERTY_PREFIX`: every `jdbc.*` key is a connection property.
pub const JDBC_PREFIX: &str = "jdbc.";
/// Options copied into every table the catalog creates (Java `copyTableDefaultOptions`).
pub const TABLE_DEFAULT_PREFIX: &str = "table-default.";
/// `RESTCatalogOptions.TOKEN_PROVIDER` / `TOKEN`.
pub const TOKEN_PROVIDER: &str = "token.provider";
pub const TOKEN: &str = "token";
/// `RESTCatalogInternalOptions.PREFIX`: the path segment after `/v1/`, from the config endpoint.
pub const REST_PREFIX: &str = "prefix";
/// `RESTApi.HEADER_PREFIX`: extra HTTP headers.
pub const HEADER_PREFIX: &str = "header.";
/// `RESTCatalogOptions.DATA_TOKEN_ENABLED`: load storage credentials for each table.
pub const DATA_TOKEN_ENABLED: &str = "data-token.enabled";

/// The lock type that names Paimon's JDBC lock (Java `JdbcCatalogLockFactory.IDENTIFIER`).
pub const JDBC_LOCK_TYPE: &str = "jdbc";
/// The lock type that names Paimon's Hive Metastore lock (Java `HiveCatalogLock.LOCK_IDENTIFIER`).
pub const HIVE_LOCK_TYPE: &str = "hive";
/// `CatalogOptions.SYNC_ALL_PROPERTIES`: a Hive catalog copies every table option into the
/// metastore's table parameters (else only the `hive.`-prefixed ones, prefix removed).
pub const SYNC_ALL_PROPERTIES: &str = "sync-all-properties";
/// `CatalogOptions.TABLE_TYPE`: `managed` (default) or `external` tables in a Hive catalog.
pub const TABLE_TYPE: &str = "table.type";
/// `HiveCatalogOptions.LOCATION_IN_PROPERTIES`: table locations in parameters, not the storage
/// descriptor.
pub const LOCATION_IN_PROPERTIES: &str = "location-in-properties";

/// Java `CatalogOptions.LOCK_CHECK_MAX_SLEEP` default.
pub const DEFAULT_LOCK_CHECK_MAX_SLEEP: Duration = Duration::from_secs(8);
/// Java `CatalogOptions.LOCK_ACQUIRE_TIMEOUT` default.
pub const DEFAULT_LOCK_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(8 * 60);
/// Java `JdbcCatalogOptions.CATALOG_KEY` default.
pub const DEFAULT_CATALOG_KEY: &str = "jdbc";
/// Java `JdbcCatalogOptions.LOCK_KEY_MAX_LENGTH` default.
pub const DEFAULT_LOCK_KEY_MAX_LENGTH: u32 = 255;

/// `metastore`: which catalog (Java `CatalogOptions.METASTORE`, default `filesystem`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metastore {
    FileSystem,
    Jdbc,
    Rest,
    Hive,
}

impl FromStr for Metastore {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "filesystem" => Ok(Metastore::FileSystem),
            "jdbc" => Ok(Metastore::Jdbc),
            "rest" => Ok(Metastore::Rest),
            "hive" => Ok(Metastore::Hive),
            other => Err(Error::Invalid(format!(
                "option '{METASTORE}': '{other}' is not one of [filesystem, jdbc, rest, hive]"
            ))),
        }
    }
}

/// A catalog's options, as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogOptions {
    options: Options,
}

impl FromIterator<(String, String)> for CatalogOptions {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(iter: I) -> Self {
        CatalogOptions {
            options: iter.into_iter().collect(),
        }
    }
}

impl CatalogOptions {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.options.get(key)
    }

    /// Entries in the order given.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.options.iter()
    }

    /// The same options with `key` set.
    pub fn with(mut self, key: &str, value: impl Into<String>) -> CatalogOptions {
        self.options.set(key, value);
        self
    }

    pub fn metastore(&self) -> Result<Metastore> {
        self.get(METASTORE)
            .map_or(Ok(Metastore::FileSystem), Metastore::from_str)
    }

    pub fn warehouse(&self) -> Option<&str> {
        self.get(WAREHOUSE).filter(|w| !w.is_empty())
    }

    pub fn uri(&self) -> Option<&str> {
        self.get(URI).filter(|u| !u.is_empty())
    }

    /// `lock.enabled`; unset means Java's default (on for object stores).
    pub fn lock_enabled(&self) -> Result<Option<bool>> {
        self.options.get_bool(LOCK_ENABLED)
    }

    pub fn lock_type(&self) -> Option<&str> {
        self.get(LOCK_TYPE).filter(|t| !t.is_empty())
    }

    pub fn lock_check_max_sleep(&self) -> Result<Duration> {
        Ok(self
            .options
            .get_duration(LOCK_CHECK_MAX_SLEEP)?
            .unwrap_or(DEFAULT_LOCK_CHECK_MAX_SLEEP))
    }

    pub fn lock_acquire_timeout(&self) -> Result<Duration> {
        Ok(self
            .options
            .get_duration(LOCK_ACQUIRE_TIMEOUT)?
            .unwrap_or(DEFAULT_LOCK_ACQUIRE_TIMEOUT))
    }

    pub fn catalog_key(&self) -> &str {
        self.get(CATALOG_KEY).unwrap_or(DEFAULT_CATALOG_KEY)
    }

    pub fn lock_key_max_length(&self) -> Result<u32> {
        match self.options.get_i32(LOCK_KEY_MAX_LENGTH)? {
            None => Ok(DEFAULT_LOCK_KEY_MAX_LENGTH),
            Some(n) if n > 0 => Ok(n as u32),
            Some(n) => Err(Error::Invalid(format!(
                "option '{LOCK_KEY_MAX_LENGTH}' must be positive, got {n}"
            ))),
        }
    }

    /// The `jdbc.*` connection properties, without the prefix.
    pub fn jdbc_properties(&self) -> BTreeMap<String, String> {
        self.with_prefix(JDBC_PREFIX)
    }

    /// The `table-default.*` options, without the prefix.
    pub fn table_defaults(&self) -> BTreeMap<String, String> {
        self.with_prefix(TABLE_DEFAULT_PREFIX)
    }

    /// The `header.*` HTTP headers, without the prefix.
    pub fn headers(&self) -> BTreeMap<String, String> {
        self.with_prefix(HEADER_PREFIX)
    }

    /// `sync-all-properties`, default true (Java's, so a metastore never loses an option).
    pub fn sync_all_properties(&self) -> Result<bool> {
        Ok(self.options.get_bool(SYNC_ALL_PROPERTIES)?.unwrap_or(true))
    }

    pub fn data_token_enabled(&self) -> Result<bool> {
        Ok(self.options.get_bool(DATA_TOKEN_ENABLED)?.unwrap_or(false))
    }

    fn with_prefix(&self, prefix: &str) -> BTreeMap<String, String> {
        self.iter()
            .filter_map(|(k, v)| Some((k.strip_prefix(prefix)?.to_string(), v.to_string())))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(pairs: &[(&str, &str)]) -> CatalogOptions {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_and_spellings_are_javas() {
        let o = options(&[]);
        assert_eq!(o.metastore().unwrap(), Metastore::FileSystem);
        assert_eq!(o.lock_enabled().unwrap(), None);
        assert_eq!(o.lock_acquire_timeout().unwrap(), Duration::from_secs(480));
        assert_eq!(o.lock_check_max_sleep().unwrap(), Duration::from_secs(8));
        assert_eq!(o.catalog_key(), "jdbc");
        assert_eq!(o.lock_key_max_length().unwrap(), 255);

        let o = options(&[
            ("metastore", "JDBC"),
            ("lock.enabled", "true"),
            ("lock-acquire-timeout", "3s"),
            ("lock-check-max-sleep", "500 ms"),
            ("lock.acquire-timeout", "1s"),
            ("catalog-key", "probe"),
            ("jdbc.user", "paimon"),
            ("table-default.bucket", "2"),
        ]);
        assert_eq!(o.metastore().unwrap(), Metastore::Jdbc);
        assert_eq!(o.lock_enabled().unwrap(), Some(true));
        assert_eq!(o.lock_acquire_timeout().unwrap(), Duration::from_secs(3));
        assert_eq!(
            o.lock_check_max_sleep().unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(o.catalog_key(), "probe");
        assert_eq!(o.jdbc_properties()["user"], "paimon");
        assert_eq!(o.table_defaults()["bucket"], "2");
    }

    #[test]
    fn bad_values_name_their_key() {
        let e = options(&[("metastore", "zookeeper")])
            .metastore()
            .unwrap_err();
        assert!(e.to_string().contains("metastore"), "{e}");
        let e = options(&[("lock-acquire-timeout", "soon")])
            .lock_acquire_timeout()
            .unwrap_err();
        assert!(e.to_string().contains("lock-acquire-timeout"), "{e}");
        let e = options(&[("lock.enabled", "yes")])
            .lock_enabled()
            .unwrap_err();
        assert!(e.to_string().contains("lock.enabled"), "{e}");
    }
}
