//! The `metadata.iceberg.*` table options (Java `IcebergOptions`) and where they put the
//! Iceberg metadata directory (Java `IcebergCommitCallback.catalogTableMetadataPath`).
//!
//! Invariant: every storage produces metadata here (`hive-catalog` and `rest-catalog` as
//! `hadoop-catalog`, then registered in a Hive Metastore or committed to an Iceberg REST
//! catalog: their target is resolved, and refused when incomplete, before a writer writes), so
//! a commit never succeeds without the metadata it asks for.

use tidelake_spec::manifest::Codec;
use tidelake_spec::options::{
    Options, METADATA_ICEBERG_FORMAT_VERSION as FORMAT_VERSION, METADATA_ICEBERG_STORAGE as STORAGE,
};

use crate::catalog::hive::client::HmsClient;
use crate::catalog::hive::iceberg::IcebergHiveTable;
use crate::error::{Error, Result};
use crate::iceberg::rest::{rest_options, IcebergRestTable};
use crate::io::FileIO;
use crate::table::Table;

const STORAGE_LOCATION: &str = "metadata.iceberg.storage-location";
const COMPACT_MIN_FILE_NUM: &str = "metadata.iceberg.compaction.min.file-num";
const COMPACT_MAX_FILE_NUM: &str = "metadata.iceberg.compaction.max.file-num";
const DELETE_AFTER_COMMIT: &str = "metadata.iceberg.delete-after-commit.enabled";
const PREVIOUS_VERSIONS_MAX: &str = "metadata.iceberg.previous-versions-max";
const MANIFEST_COMPRESSION: &str = "metadata.iceberg.manifest-compression";
const MANIFEST_LEGACY_VERSION: &str = "metadata.iceberg.manifest-legacy-version";
const URI: &str = "metadata.iceberg.uri";
const HIVE_CONF_DIR: &str = "metadata.iceberg.hive-conf-dir";
const METASTORE_DATABASE: &str = "metadata.iceberg.database";
const METASTORE_TABLE: &str = "metadata.iceberg.table";
const GLUE_SKIP_ARCHIVE: &str = "metadata.iceberg.glue.skip-archive";
const HIVE_SKIP_UPDATE_STATS: &str = "metadata.iceberg.hive-skip-update-stats";

/// Where the metadata of a table goes (Java `IcebergOptions.StorageLocation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StorageLocation {
    /// `<table>/metadata`.
    TableLocation,
    /// `<warehouse>/iceberg/<db>/<table>/metadata`, an Iceberg Hadoop catalog's layout.
    CatalogStorage,
}

/// The Iceberg options of a table that asks for Iceberg metadata.
#[derive(Clone, Debug)]
pub struct IcebergConfig {
    location: StorageLocation,
    /// 2 or 3.
    pub format_version: i32,
    pub compact_min_file_num: usize,
    pub compact_max_file_num: usize,
    pub delete_after_commit: bool,
    pub previous_versions_max: i64,
    pub codec: Codec,
    /// Iceberg 1.4's manifest-list field names (`added_data_files_count`, ...).
    pub legacy_manifest_list: bool,
    pub manifest_target_size: u64,
    /// Deletion vectors exported as Iceberg v3 deletion vectors (format version 3 on a table
    /// with `deletion-vectors.enabled`; writers refuse deletion vectors with version 2).
    pub deletion_vectors: bool,
    /// `hive-catalog` storage: where the metadata is registered.
    hive: Option<HiveOptions>,
    /// `rest-catalog` storage: where the metadata is committed.
    rest: Option<RestOptions>,
}

/// The `metadata.iceberg.*` options of `rest-catalog` storage (Java
/// `IcebergRestMetadataCommitter`): the catalog's properties (`metadata.iceberg.rest.*`) and
/// the table's name there.
#[derive(Clone, Debug)]
struct RestOptions {
    properties: std::collections::BTreeMap<String, String>,
    database: Option<String>,
    table: Option<String>,
}

/// The Iceberg table's name in a catalog (`hive-catalog`, `rest-catalog` storage):
/// `metadata.iceberg.database` / `metadata.iceberg.table`, by default the Paimon table's own
/// catalog name. A table opened by path has none (Java needs the catalog's identifier).
fn catalog_name(
    table: &Table,
    storage: &str,
    database: &Option<String>,
    name: &Option<String>,
) -> Result<(String, String)> {
    let Some((catalog_database, catalog_table)) = table.environment().name() else {
        return Err(Error::Unsupported(format!(
            "{}: '{STORAGE}' = '{storage}' names the Iceberg table by the Paimon table's \
             catalog name: open the table through its catalog",
            table.location()
        )));
    };
    Ok((
        database
            .clone()
            .unwrap_or_else(|| catalog_database.to_string()),
        name.clone().unwrap_or_else(|| catalog_table.to_string()),
    ))
}

/// The `metadata.iceberg.*` options of `hive-catalog` storage (Java
/// `IcebergHiveMetadataCommitter`).
#[derive(Clone, Debug)]
struct HiveOptions {
    uri: Option<String>,
    database: Option<String>,
    table: Option<String>,
    skip_update_stats: bool,
    glue_skip_archive: bool,
}

fn spec(e: tidelake_spec::Error) -> Error {
    Error::from_spec("table options", e)
}

fn or<T>(value: tidelake_spec::Result<Option<T>>, default: T) -> Result<T> {
    Ok(value.map_err(spec)?.unwrap_or(default))
}

impl IcebergConfig {
    /// The configuration of a table whose `metadata.iceberg.storage` asks for metadata this
    /// module writes; `None` when it is unset or `disabled`.
    pub fn of(opts: &Options) -> Result<Option<IcebergConfig>> {
        let storage = opts.get(STORAGE).unwrap_or("disabled").trim();
        let storage = storage.to_ascii_lowercase();
        let default_location = match storage.as_str() {
            "disabled" => return Ok(None),
            "table-location" => StorageLocation::TableLocation,
            "hadoop-catalog" | "hive-catalog" | "rest-catalog" => StorageLocation::CatalogStorage,
            _ => {
                return Err(Error::invalid(format!(
                    "unknown '{STORAGE}' value '{storage}' (expected disabled, \
                     table-location, hadoop-catalog, hive-catalog or rest-catalog)"
                )))
            }
        };
        let location = match opts.get(STORAGE_LOCATION).map(str::trim) {
            None => default_location,
            Some(v) if v.eq_ignore_ascii_case("table-location") => StorageLocation::TableLocation,
            Some(v) if v.eq_ignore_ascii_case("catalog-location") => {
                StorageLocation::CatalogStorage
            }
            Some(v) => {
                return Err(Error::invalid(format!(
                    "unknown '{STORAGE_LOCATION}' value '{v}' (expected table-location or \
                     catalog-location)"
                )))
            }
        };
        let format_version = or(opts.get_i32(FORMAT_VERSION), 2)?;
        if format_version != 2 && format_version != 3 {
            return Err(Error::invalid(format!(
                "'{FORMAT_VERSION}' must be 2 or 3, got {format_version}"
            )));
        }
        let count = |key: &str, default: i32| -> Result<usize> {
            let v = or(opts.get_i32(key), default)?;
            usize::try_from(v)
                .map_err(|_| Error::invalid(format!("'{key}' must not be negative, got {v}")))
        };
        let codec =
            Codec::from_option(opts.get(MANIFEST_COMPRESSION).unwrap_or("snappy")).map_err(spec)?;
        let text = |key: &str| {
            opts.get(key)
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        let hive = match storage.as_str() {
            "hive-catalog" => Some(HiveOptions {
                uri: text(URI),
                database: text(METASTORE_DATABASE),
                table: text(METASTORE_TABLE),
                skip_update_stats: or(opts.get_bool(HIVE_SKIP_UPDATE_STATS), false)?,
                glue_skip_archive: or(opts.get_bool(GLUE_SKIP_ARCHIVE), false)?,
            }),
            _ => None,
        };
        let rest = (storage == "rest-catalog").then(|| RestOptions {
            properties: rest_options(opts.iter()),
            database: text(METASTORE_DATABASE),
            table: text(METASTORE_TABLE),
        });
        Ok(Some(IcebergConfig {
            location,
            format_version,
            compact_min_file_num: count(COMPACT_MIN_FILE_NUM, 10)?,
            compact_max_file_num: count(COMPACT_MAX_FILE_NUM, 50)?,
            delete_after_commit: or(opts.get_bool(DELETE_AFTER_COMMIT), true)?,
            previous_versions_max: or(opts.get_i32(PREVIOUS_VERSIONS_MAX), 0)?.into(),
            codec,
            legacy_manifest_list: or(opts.get_bool(MANIFEST_LEGACY_VERSION), false)?,
            manifest_target_size: opts.manifest_target_file_size().map_err(spec)?,
            deletion_vectors: format_version == 3
                && opts.deletion_vectors_enabled().map_err(spec)?,
            hive,
            rest,
        }))
    }

    /// For `rest-catalog` storage, the Iceberg REST catalog's table the metadata of `table` is
    /// committed to: `metadata.iceberg.database` / `metadata.iceberg.table`, by default the
    /// Paimon table's own catalog name. Refused as Java refuses it: a table opened by path
    /// (Java needs the catalog's identifier), a missing `metadata.iceberg.rest.uri`; and client
    /// properties tidelake does not implement, by name.
    pub(crate) fn rest_table(&self, table: &Table) -> Result<Option<IcebergRestTable>> {
        let Some(rest) = &self.rest else {
            return Ok(None);
        };
        let (database, name) = catalog_name(table, "rest-catalog", &rest.database, &rest.table)?;
        IcebergRestTable::new(
            &rest.properties,
            database,
            name,
            self.previous_versions_max,
            self.delete_after_commit,
        )
        .map(Some)
    }

    /// For `hive-catalog` storage, the metastore table the metadata of `table` is registered
    /// as: `metadata.iceberg.database` / `metadata.iceberg.table`, by default the Paimon
    /// table's own catalog name, at `metadata.iceberg.uri`. Refused as Java refuses it: a
    /// table opened by path (Java needs the catalog's identifier); and, unlike Java, which
    /// then falls back to an embedded metastore, a missing URI (tidelake reads no
    /// `hive-site.xml`).
    pub(crate) fn hive_table(&self, table: &Table) -> Result<Option<IcebergHiveTable>> {
        let Some(hive) = &self.hive else {
            return Ok(None);
        };
        let (database, name) = catalog_name(table, "hive-catalog", &hive.database, &hive.table)?;
        let uri = hive.uri.as_deref().ok_or_else(|| {
            let conf = match table.schema().options().get(HIVE_CONF_DIR) {
                Some(_) => format!(" ('{HIVE_CONF_DIR}' is not read)"),
                None => String::new(),
            };
            Error::invalid(format!(
                "{}: '{STORAGE}' = 'hive-catalog' needs the metastore's '{URI}'{conf}",
                table.location()
            ))
        })?;
        Ok(Some(IcebergHiveTable {
            client: HmsClient::new(uri)?,
            database,
            table: name,
            skip_update_stats: hive.skip_update_stats,
            glue_skip_archive: hive.glue_skip_archive,
        }))
    }

    /// The metadata directory of `table` as a location (Java
    /// `IcebergCommitCallback.catalogTableMetadataPath`): catalog storage needs the table in
    /// a Paimon warehouse (`<warehouse>/<db>.db/<table>`).
    pub fn metadata_location(&self, table: &Table) -> Result<String> {
        let location = table.location().trim_end_matches('/');
        match self.location {
            StorageLocation::TableLocation => Ok(format!("{location}/metadata")),
            StorageLocation::CatalogStorage => {
                let not_warehouse = || {
                    Error::Unsupported(format!(
                        "Iceberg metadata in catalog storage for table {location}: the table \
                         is not in a Paimon warehouse (<warehouse>/<db>.db/<table>); set \
                         'metadata.iceberg.storage' = 'table-location'"
                    ))
                };
                let (db_path, table_name) = location.rsplit_once('/').ok_or_else(not_warehouse)?;
                let (warehouse, db_dir) = db_path.rsplit_once('/').ok_or_else(not_warehouse)?;
                let db = db_dir.strip_suffix(".db").ok_or_else(not_warehouse)?;
                Ok(format!("{warehouse}/iceberg/{db}/{table_name}/metadata"))
            }
        }
    }

    /// A handle on the metadata directory of `table`.
    pub fn metadata_io(&self, table: &Table) -> Result<FileIO> {
        let location = self.metadata_location(table)?;
        if self.location == StorageLocation::TableLocation {
            return Ok(table.io().child("metadata"));
        }
        FileIO::open_with(&location, table.io().options())
    }
}
