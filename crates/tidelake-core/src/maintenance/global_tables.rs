//! Global system tables of a catalog, in its `sys` database (Java `CatalogUtils`
//! `createGlobalSystemTable`): `all_table_options` (a row per option of every table, Java
//! `AllTableOptionsTable`), `tables` (a row per table, Java `AllTablesTable`) and `partitions`
//! (a row per partition of every partitioned table, Java `AllPartitionsTable`).
//!
//! Tables are visited database by database in the catalog's listing order; a table dropped
//! while the catalog is read is skipped, as Java skips it. Every column is nullable, as Java
//! declares them. `tables`' totals are the catalog's record of the latest commit, so only a
//! catalog that keeps versions (REST) has them; elsewhere they are null, as in Java.
//! `partitions`' rows are `Catalog::listPartitions`' (the catalog's, or the table's own).

use crate::catalog::Catalog;
use crate::error::{Error, Result};
use crate::maintenance::file_tables::list_partitions;
use crate::maintenance::system_tables::{booleans, longs, strings, table_of, SystemTable};
use crate::table::Table;

/// Names of the global system tables [`global_system_table`] serves.
pub const GLOBAL_SYSTEM_TABLES: &[&str] = &["all_table_options", "tables", "partitions"];

/// The database that holds the global system tables (Java `SYSTEM_DATABASE_NAME`).
pub const SYSTEM_DATABASE: &str = "sys";

/// Table option naming the table's kind (Java `CoreOptions.TYPE`), `table` when absent.
const TABLE_TYPE: &str = "type";

/// Read global system table `name` (one of [`GLOBAL_SYSTEM_TABLES`]) of `catalog`.
pub async fn global_system_table(catalog: &Catalog, name: &str) -> Result<SystemTable> {
    match name {
        "all_table_options" => all_table_options(catalog).await,
        "tables" => tables(catalog).await,
        "partitions" => partitions(catalog).await,
        other => Err(Error::not_found(
            "global system table",
            format!(
                "'{SYSTEM_DATABASE}.{other}'; global system tables are: {}",
                GLOBAL_SYSTEM_TABLES.join(", ")
            ),
        )),
    }
}

/// Every table of every database, as `(database, name, table)`, skipping tables that
/// disappear while listed.
async fn all_tables(catalog: &Catalog) -> Result<Vec<(String, String, Table)>> {
    let mut all = Vec::new();
    for database in catalog.list_databases().await? {
        let names = match catalog.list_tables(&database).await {
            Err(Error::NotFound { .. }) => continue,
            other => other?,
        };
        for name in names {
            match catalog.get_table(&format!("{database}.{name}")).await {
                Ok(table) => all.push((database.clone(), name, table)),
                Err(Error::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(all)
}

async fn all_table_options(catalog: &Catalog) -> Result<SystemTable> {
    let mut rows: Vec<[String; 4]> = Vec::new();
    for (database, name, table) in all_tables(catalog).await? {
        let options = table.schema().options.iter();
        let path = std::iter::once(("path", table.location()));
        for (key, value) in options.filter(|(k, _)| *k != "path").chain(path) {
            rows.push([database.clone(), name.clone(), key.into(), value.into()]);
        }
    }
    let column = |i: usize| rows.iter().map(|r| Some(r[i].clone())).collect();
    table_of(vec![
        strings("database_name", true, column(0)),
        strings("table_name", true, column(1)),
        strings("key", true, column(2)),
        strings("value", true, column(3)),
    ])
}

async fn tables(catalog: &Catalog) -> Result<SystemTable> {
    let all = all_tables(catalog).await?;
    let mut totals = Vec::with_capacity(all.len());
    for (database, name, _) in &all {
        totals.push(catalog.table_totals(&format!("{database}.{name}")).await?);
    }
    let option = |key: &str| -> Vec<Option<String>> {
        all.iter()
            .map(|(_, _, t)| t.schema().options.get(key).map(str::to_string))
            .collect()
    };
    let time = |key: &str| -> Result<Vec<Option<i64>>> {
        option(key)
            .into_iter()
            .map(|v| {
                v.map(|text| {
                    text.parse::<i64>().map_err(|_| {
                        Error::invalid(format!("table option '{key}' = {text:?} is no number"))
                    })
                })
                .transpose()
            })
            .collect()
    };
    let total = |f: &dyn Fn(&crate::catalog::TableTotals) -> i64| -> Vec<Option<i64>> {
        totals.iter().map(|t| t.as_ref().map(f)).collect()
    };
    let flag = |f: &dyn Fn(&Table) -> bool| all.iter().map(|(_, _, t)| Some(f(t))).collect();
    table_of(vec![
        strings(
            "database_name",
            true,
            all.iter().map(|(d, _, _)| Some(d.clone())).collect(),
        ),
        strings(
            "table_name",
            true,
            all.iter().map(|(_, n, _)| Some(n.clone())).collect(),
        ),
        strings(
            "table_type",
            true,
            option(TABLE_TYPE)
                .into_iter()
                .map(|v| v.or_else(|| Some("table".to_string())))
                .collect(),
        ),
        booleans(
            "partitioned",
            true,
            flag(&|t| !t.schema().partition_keys.is_empty()),
        ),
        booleans(
            "primary_key",
            true,
            flag(&|t| !t.schema().primary_keys.is_empty()),
        ),
        strings("owner", true, option("owner")),
        longs("created_at", true, time("createdAt")?),
        strings("created_by", true, option("createdBy")),
        longs("updated_at", true, time("updatedAt")?),
        strings("updated_by", true, option("updatedBy")),
        longs("record_count", true, total(&|t| t.record_count)),
        longs("file_size_in_bytes", true, total(&|t| t.file_size_in_bytes)),
        longs("file_count", true, total(&|t| t.file_count)),
        longs(
            "last_file_creation_time",
            true,
            total(&|t| t.last_file_creation_time),
        ),
    ])
}

async fn partitions(catalog: &Catalog) -> Result<SystemTable> {
    let mut rows = Vec::new();
    for (database, name, table) in all_tables(catalog).await? {
        let keys = &table.schema().partition_keys;
        if keys.is_empty() {
            continue;
        }
        let listed = match list_partitions(catalog, &format!("{database}.{name}")).await {
            Err(Error::NotFound { .. }) => continue,
            other => other?,
        };
        for p in listed {
            // Java `PartitionUtils.buildPartitionName`: `k=v` in partition key order
            let partition_name = keys
                .iter()
                .filter_map(|k| p.spec.get(k).map(|v| format!("{k}={v}")))
                .collect::<Vec<_>>()
                .join("/");
            rows.push((database.clone(), name.clone(), partition_name, p));
        }
    }
    let text = |f: &dyn Fn(&(String, String, String, _)) -> String| {
        rows.iter().map(|r| Some(f(r))).collect()
    };
    table_of(vec![
        strings("database_name", true, text(&|r| r.0.clone())),
        strings("table_name", true, text(&|r| r.1.clone())),
        strings("partition_name", true, text(&|r| r.2.clone())),
        longs(
            "record_count",
            true,
            rows.iter().map(|r| Some(r.3.record_count)).collect(),
        ),
        longs(
            "file_size_in_bytes",
            true,
            rows.iter().map(|r| Some(r.3.file_size_in_bytes)).collect(),
        ),
        longs(
            "file_count",
            true,
            rows.iter().map(|r| Some(r.3.file_count)).collect(),
        ),
        longs(
            "last_file_creation_time",
            true,
            rows.iter()
                .map(|r| Some(r.3.last_file_creation_time))
                .collect(),
        ),
        booleans("done", true, rows.iter().map(|r| Some(r.3.done)).collect()),
    ])
}
