//! The `metadata.iceberg.*` table options (Java `IcebergOptions`) and where they put the
//! Iceberg metadata directory (Java `IcebergCommitCallback.catalogTableMetadataPath`).
//!
//! Invariant: only `table-location` and `hadoop-catalog` storage produce metadata here; the
//! catalog-backed kinds (`hive-catalog`, `rest-catalog`) are refused by writers
//! (`Options::check_writable`), so a commit never succeeds without the metadata it asks for.

use tidelake_spec::manifest::Codec;
use tidelake_spec::options::{
    Options, METADATA_ICEBERG_FORMAT_VERSION as FORMAT_VERSION, METADATA_ICEBERG_STORAGE as STORAGE,
};

use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::table::Table;

const STORAGE_LOCATION: &str = "metadata.iceberg.storage-location";
const COMPACT_MIN_FILE_NUM: &str = "metadata.iceberg.compaction.min.file-num";
const COMPACT_MAX_FILE_NUM: &str = "metadata.iceberg.compaction.max.file-num";
const DELETE_AFTER_COMMIT: &str = "metadata.iceberg.delete-after-commit.enabled";
const PREVIOUS_VERSIONS_MAX: &str = "metadata.iceberg.previous-versions-max";
const MANIFEST_COMPRESSION: &str = "metadata.iceberg.manifest-compression";
const MANIFEST_LEGACY_VERSION: &str = "metadata.iceberg.manifest-legacy-version";

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
        let default_location = match storage.to_ascii_lowercase().as_str() {
            "disabled" => return Ok(None),
            "table-location" => StorageLocation::TableLocation,
            "hadoop-catalog" => StorageLocation::CatalogStorage,
            "hive-catalog" | "rest-catalog" => {
                return Err(Error::Unsupported(format!(
                    "'{STORAGE}' = '{storage}': Iceberg metadata in a Hive or REST catalog"
                )))
            }
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
