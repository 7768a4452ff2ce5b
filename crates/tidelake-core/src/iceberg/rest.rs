//! A Paimon table's Iceberg metadata committed to an Iceberg REST catalog
//! (`metadata.iceberg.storage = rest-catalog`, Java `IcebergRestMetadataCommitter`), so Iceberg
//! engines find it by name there: after each metadata version is written (as for
//! `hadoop-catalog`), the catalog's table receives that version's schemas, partition spec and
//! snapshot as REST table updates.
//!
//! Java's rules: the namespace is created when missing; a missing table is created with an
//! empty schema (Iceberg numbers a new table's field ids itself, Paimon's start at 0), so every
//! Paimon schema id is one more in the catalog; the first version goes in whole (schemas, the
//! current one, Java's two table properties, the partition spec, the snapshot as `main`), later
//! ones as what changed (new schemas, the snapshot, snapshots no longer kept removed); a table
//! that holds another table's snapshots is dropped (without purging files) and created again.
//!
//! Differences kept: Java sends a change only when the catalog holds the previous snapshot and
//! otherwise recreates the table; tidelake sends it from whatever older snapshot of the same
//! Paimon table (recognised by its manifest lists) the catalog holds, adding every snapshot it
//! lacks, so racing writers never drop the table under its readers. Every update carries the
//! catalog's requirements (the table's uuid and the `main` snapshot it was computed from), so a
//! concurrent committer's update is never overwritten but computed again on what the catalog
//! then holds; a version older than the one the catalog's table holds is not sent, so
//! committers finishing out of order never move the table back. The metadata files are
//! written before the catalog learns of them.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde::Deserialize;
use serde_json::{json, Value};

use super::metadata::{IcebergSnapshot, TableMetadata};
use crate::catalog::rest::client::{RestClient, RestError};
use crate::error::{Error, Result};

/// `metadata.iceberg.rest.*`: the Iceberg REST catalog's own properties (Java passes them to
/// Iceberg's `RESTCatalog`).
pub(crate) const REST_PREFIX: &str = "metadata.iceberg.rest.";

/// The properties of the REST client tidelake implements; `clients` and `cache-enabled`
/// configure Java's client pool and table cache, which tidelake does not have.
const URI: &str = "uri";
const WAREHOUSE: &str = "warehouse";
const PREFIX: &str = "prefix";
const TOKEN: &str = "token";
const HEADER: &str = "header.";
const IGNORED: &[&str] = &["clients", "cache-enabled"];

/// Iceberg table properties Java sets on the catalog's table.
const PREVIOUS_VERSIONS_MAX: &str = "write.metadata.previous-versions-max";
const DELETE_AFTER_COMMIT: &str = "write.metadata.delete-after-commit.enabled";

/// How many times an update refused because the catalog's table changed meanwhile is
/// computed again.
const ATTEMPTS: usize = 8;

/// Where and how the Iceberg table is committed.
#[derive(Clone, Debug)]
pub(crate) struct IcebergRestTable {
    client: RestClient,
    warehouse: Option<String>,
    prefix: Option<String>,
    namespace: String,
    table: String,
    previous_versions_max: i64,
    delete_after_commit: bool,
}

/// The catalog's table as a load or create answers it.
#[derive(Debug, Deserialize)]
struct LoadTable {
    metadata: Value,
}

impl LoadTable {
    fn uuid(&self) -> Value {
        self.metadata
            .get("table-uuid")
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// The `main` snapshot, none for a table without one.
    fn current_snapshot(&self) -> Option<i64> {
        self.metadata
            .get("current-snapshot-id")
            .and_then(Value::as_i64)
            .filter(|id| *id >= 0)
    }

    fn current_schema(&self) -> i64 {
        self.metadata
            .get("current-schema-id")
            .and_then(Value::as_i64)
            .unwrap_or(0)
    }

    /// The table's snapshots: id and manifest list.
    fn snapshots(&self) -> BTreeMap<i64, &str> {
        self.metadata
            .get("snapshots")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|s| {
                let id = s.get("snapshot-id").and_then(Value::as_i64)?;
                Some((id, s.get("manifest-list").and_then(Value::as_str)?))
            })
            .collect()
    }

    /// Whether the table holds `version`'s Paimon table: its current manifest list is in the
    /// version's metadata directory `dir`, and every snapshot both have has the same manifest
    /// list (a Paimon table dropped and created again at the same place has other lists).
    fn holds_table_of(&self, version: &TableMetadata, dir: &str) -> bool {
        let held = self.snapshots();
        let current = self.current_snapshot().and_then(|id| held.get(&id));
        current.is_some_and(|list| list.rsplit_once('/').map(|(d, _)| d) == Some(dir))
            && version.snapshots.iter().all(|s| {
                held.get(&s.snapshot_id)
                    .is_none_or(|l| *l == s.manifest_list)
            })
    }
}

/// What to do with the catalog's table for one version.
enum Plan {
    /// The table holds this version or a newer one.
    Done,
    /// Send the changes since the table's current snapshot, an older one of this table.
    Increment(LoadTable),
    /// Drop the table (if any: another table's) and create it from the whole version.
    Recreate(Option<LoadTable>),
}

impl IcebergRestTable {
    /// The table `namespace.table` of the catalog configured by `rest` (the
    /// `metadata.iceberg.rest.*` options without their prefix).
    pub(crate) fn new(
        rest: &BTreeMap<String, String>,
        namespace: String,
        table: String,
        previous_versions_max: i64,
        delete_after_commit: bool,
    ) -> Result<IcebergRestTable> {
        let mut headers = BTreeMap::new();
        for (key, value) in rest {
            if let Some(name) = key.strip_prefix(HEADER) {
                headers.insert(name.to_string(), value.clone());
            } else if key == TOKEN {
                let (name, value) = RestClient::bearer(value);
                headers.insert(name, value);
            } else if ![URI, WAREHOUSE, PREFIX].contains(&key.as_str())
                && !IGNORED.contains(&key.as_str())
            {
                return Err(Error::Unsupported(format!(
                    "'{REST_PREFIX}{key}': tidelake's Iceberg REST client takes '{URI}', \
                     '{WAREHOUSE}', '{PREFIX}', '{TOKEN}' and '{HEADER}*' (OAuth2 credentials, \
                     request signing and the other Iceberg client properties are not implemented)"
                )));
            }
        }
        let uri = rest.get(URI).ok_or_else(|| {
            Error::invalid(format!(
                "'metadata.iceberg.storage' = 'rest-catalog' needs the catalog's \
                 '{REST_PREFIX}{URI}'"
            ))
        })?;
        Ok(IcebergRestTable {
            client: RestClient::new(uri, &headers)?,
            warehouse: rest.get(WAREHOUSE).cloned(),
            prefix: rest.get(PREFIX).cloned(),
            namespace,
            table,
            previous_versions_max,
            delete_after_commit,
        })
    }

    /// Commit `version` (Paimon snapshot id = Iceberg snapshot id; see the module docs).
    pub(crate) async fn commit(&self, version: &TableMetadata) -> Result<()> {
        let Some(snapshot) = version.current_snapshot() else {
            return Ok(());
        };
        let id = snapshot.snapshot_id;
        let config = self.client.config(self.warehouse.as_deref()).await?;
        let own = self.prefix.clone().map(|p| (PREFIX.to_string(), p));
        let prefix = config.merge(own).remove(PREFIX);
        let client = self.client.clone().with_prefix(prefix.as_deref());
        let version = shifted(version);
        self.create_namespace(&client).await?;
        let dir = snapshot
            .manifest_list
            .rsplit_once('/')
            .map_or("", |(dir, _)| dir);
        let mut refused = None;
        for _ in 0..ATTEMPTS {
            let plan = match self.load(&client).await? {
                Some(t) if t.holds_table_of(&version, dir) => match t.current_snapshot() {
                    Some(current) if current >= id => Plan::Done,
                    _ => Plan::Increment(t),
                },
                t => Plan::Recreate(t),
            };
            let (requirements, updates) = match plan {
                Plan::Done => return Ok(()),
                Plan::Increment(t) => (requirements(&t), self.increment(&t, &version)),
                Plan::Recreate(old) => {
                    if old.is_some() {
                        self.drop_table(&client).await?;
                    }
                    match self.create(&client).await {
                        Ok(t) => (requirements(&t), self.afresh(&version)),
                        // another committer created it first: look again
                        Err(e) if retried(&e) => {
                            refused = Some(e);
                            continue;
                        }
                        Err(e) => return Err(e.into_error()),
                    }
                }
            };
            let body = json!({
                "identifier": {"namespace": [self.namespace], "name": self.table},
                "requirements": requirements,
                "updates": updates,
            });
            match client
                .post::<Value>(
                    &self.table_path(&client),
                    &body,
                    "committing Iceberg metadata",
                )
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) if retried(&e) => refused = Some(e),
                Err(e) => return Err(e.into_error()),
            }
        }
        Err(match refused {
            Some(e) => e.into_error(),
            None => Error::CommitConflict(format!(
                "Iceberg table {}.{} of the REST catalog kept changing during {ATTEMPTS} \
                 attempts to commit snapshot {id}",
                self.namespace, self.table
            )),
        })
    }

    fn table_path(&self, client: &RestClient) -> String {
        client.path(&["namespaces", &self.namespace, "tables", &self.table])
    }

    /// The namespace, created when missing (one created meanwhile by another committer is
    /// fine, whatever the catalog answered to this one's request).
    async fn create_namespace(&self, client: &RestClient) -> Result<()> {
        let path = client.path(&["namespaces", &self.namespace]);
        let exists = || async {
            match client.get::<Value>(&path, "loading the namespace").await {
                Ok(_) => Ok(true),
                Err(e) if e.is(reqwest::StatusCode::NOT_FOUND) => Ok(false),
                Err(e) => Err(e.into_error()),
            }
        };
        if exists().await? {
            return Ok(());
        }
        let body = json!({"namespace": [self.namespace], "properties": {}});
        match client
            .post::<Value>(
                &client.path(&["namespaces"]),
                &body,
                "creating the namespace",
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(_) if exists().await? => Ok(()),
            Err(e) => Err(e.into_error()),
        }
    }

    async fn load(&self, client: &RestClient) -> Result<Option<LoadTable>> {
        match client
            .get::<LoadTable>(&self.table_path(client), "loading the Iceberg table")
            .await
        {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.is(reqwest::StatusCode::NOT_FOUND) => Ok(None),
            Err(e) => Err(e.into_error()),
        }
    }

    /// Java `createTable`: an empty schema, the catalog's default location.
    async fn create(&self, client: &RestClient) -> std::result::Result<LoadTable, RestError> {
        let body = json!({
            "name": self.table,
            "schema": {"type": "struct", "schema-id": 0, "fields": []},
            "stage-create": false,
            "properties": {},
        });
        let path = client.path(&["namespaces", &self.namespace, "tables"]);
        client
            .post::<LoadTable>(&path, &body, "creating the Iceberg table")
            .await
    }

    /// Java `dropTable`: without purging (the files are the Paimon table's).
    async fn drop_table(&self, client: &RestClient) -> Result<()> {
        match client
            .delete(&self.table_path(client), "dropping the Iceberg table")
            .await
        {
            Err(e) if e.is_missing() => Ok(()),
            done => done,
        }
    }

    /// Java `updatesForCorrectBase(..., isNewTable = true)`: every schema, the current one and
    /// the table properties, the partition spec, the snapshot as `main`.
    fn afresh(&self, version: &TableMetadata) -> Vec<Value> {
        let mut updates: Vec<Value> = version
            .schemas
            .iter()
            .map(|s| add_schema(s, version.last_column_id))
            .collect();
        updates
            .push(json!({"action": "set-current-schema", "schema-id": version.current_schema_id}));
        updates.push(json!({"action": "set-properties", "updates": {
            PREVIOUS_VERSIONS_MAX: self.previous_versions_max.to_string(),
            DELETE_AFTER_COMMIT: self.delete_after_commit.to_string(),
        }}));
        if let Some(spec) = version.partition_specs.iter().find(|s| {
            s.get("spec-id").and_then(Value::as_i64) == Some(version.default_spec_id.into())
        }) {
            updates.push(json!({"action": "add-spec", "spec": spec}));
        }
        updates.push(json!({"action": "set-default-spec", "spec-id": version.default_spec_id}));
        updates.extend(version.current_snapshot().map(add_snapshot));
        updates.extend(set_main(version));
        updates
    }

    /// Java `updatesForCorrectBase(..., isNewTable = false)`, from whatever older snapshot of
    /// this Paimon table the catalog's table holds (Java drops and creates the table when it is
    /// not the previous one): the schemas newer than the table's current one, every snapshot of
    /// the version it lacks and the current one as `main`, the table's snapshots the version no
    /// longer keeps removed.
    fn increment(&self, table: &LoadTable, version: &TableMetadata) -> Vec<Value> {
        let current = table.current_schema();
        let mut updates = Vec::new();
        if version.current_schema_id != current {
            updates.extend(
                version
                    .schemas
                    .iter()
                    .filter(|s| s.get("schema-id").and_then(Value::as_i64) > Some(current))
                    .map(|s| add_schema(s, version.last_column_id)),
            );
            updates.push(
                json!({"action": "set-current-schema", "schema-id": version.current_schema_id}),
            );
        }
        let held: BTreeSet<i64> = table.snapshots().into_keys().collect();
        let mut missing: Vec<&IcebergSnapshot> = version
            .snapshots
            .iter()
            .filter(|s| !held.contains(&s.snapshot_id))
            .collect();
        missing.sort_by_key(|s| s.sequence_number);
        updates.extend(missing.into_iter().map(add_snapshot));
        updates.extend(set_main(version));
        let kept: HashSet<i64> = version.snapshots.iter().map(|s| s.snapshot_id).collect();
        let removed: Vec<i64> = held.into_iter().filter(|id| !kept.contains(id)).collect();
        if !removed.is_empty() {
            updates.push(json!({"action": "remove-snapshots", "snapshot-ids": removed}));
        }
        updates
    }
}

/// Whether a refused request is worth computing again from the table as the catalog then
/// holds it: a requirement failed or the table was created (409), another committer dropped it
/// (404), or the catalog failed (5xx: whether it took the request is seen when the table is
/// loaded again; the requirements make a second application fail).
fn retried(e: &RestError) -> bool {
    e.is(reqwest::StatusCode::CONFLICT)
        || e.is(reqwest::StatusCode::NOT_FOUND)
        || e.status.is_server_error()
}

/// The catalog's requirements of an update computed from `table` as loaded: the same table
/// (its uuid) at the same `main` snapshot (none for a new table).
fn requirements(table: &LoadTable) -> Value {
    json!([
        {"type": "assert-table-uuid", "uuid": table.uuid()},
        {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": table.current_snapshot()},
    ])
}

fn add_schema(schema: &Value, last_column_id: i32) -> Value {
    json!({"action": "add-schema", "schema": schema, "last-column-id": last_column_id})
}

fn add_snapshot(snapshot: &IcebergSnapshot) -> Value {
    json!({"action": "add-snapshot", "snapshot": snapshot})
}

/// The current snapshot as `main` (Java `setBranchSnapshot`, after the snapshot is added).
fn set_main(version: &TableMetadata) -> Option<Value> {
    version.current_snapshot().map(|s| {
        json!({"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
               "snapshot-id": s.snapshot_id})
    })
}

/// Java `adjustMetadataForRest`: every schema id one more (schema 0 of the catalog's table is
/// the empty schema it was created with).
fn shifted(version: &TableMetadata) -> TableMetadata {
    let mut out = version.clone();
    for schema in &mut out.schemas {
        if let Some(id) = schema.get("schema-id").and_then(Value::as_i64) {
            schema["schema-id"] = json!(id + 1);
        }
    }
    out.current_schema_id += 1;
    for s in &mut out.snapshots {
        s.schema_id += 1;
    }
    out
}

/// The `metadata.iceberg.rest.*` options of `options` without their prefix.
pub(crate) fn rest_options<'a>(
    options: impl Iterator<Item = (&'a str, &'a str)>,
) -> BTreeMap<String, String> {
    options
        .filter_map(|(k, v)| {
            k.strip_prefix(REST_PREFIX)
                .map(|k| (k.to_string(), v.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_client_properties_are_refused_by_name() {
        let mut rest = BTreeMap::new();
        rest.insert("uri".to_string(), "http://127.0.0.1:1/".to_string());
        rest.insert("clients".to_string(), "1".to_string());
        rest.insert("header.X-Tenant".to_string(), "a".to_string());
        assert!(IcebergRestTable::new(&rest, "db".into(), "t".into(), 0, true).is_ok());
        rest.insert("credential".to_string(), "id:secret".to_string());
        let err = IcebergRestTable::new(&rest, "db".into(), "t".into(), 0, true).unwrap_err();
        assert!(
            matches!(&err, Error::Unsupported(m) if m.contains("'metadata.iceberg.rest.credential'")),
            "{err:?}"
        );
        let none = IcebergRestTable::new(&BTreeMap::new(), "db".into(), "t".into(), 0, true);
        assert!(matches!(none, Err(Error::Invalid(_))), "{none:?}");
    }

    /// A version of snapshots `ids` (lists under `dir`), schemas 0..=`schema`, before the shift.
    fn version(dir: &str, ids: &[i64], schema: i64) -> TableMetadata {
        let snapshots: Vec<Value> = ids
            .iter()
            .map(|id| {
                json!({"sequence-number": id, "snapshot-id": id, "timestamp-ms": 0,
                       "summary": {"operation": "append"}, "schema-id": schema,
                       "manifest-list": format!("{dir}/snap-{id}.avro")})
            })
            .collect();
        let schemas: Vec<Value> = (0..=schema)
            .map(|i| json!({"type": "struct", "schema-id": i, "fields": []}))
            .collect();
        let v = json!({"format-version": 2, "table-uuid": "u", "location": "l",
            "last-sequence-number": ids.last(), "last-updated-ms": 0, "last-column-id": 3,
            "schemas": schemas, "current-schema-id": schema, "partition-specs": [], "default-spec-id": 0,
            "last-partition-id": 999, "sort-orders": [], "default-sort-order-id": 0,
            "snapshots": snapshots, "current-snapshot-id": ids.last()});
        shifted(&TableMetadata::parse(v.to_string().as_bytes(), "test").unwrap())
    }

    fn loaded(metadata: &TableMetadata) -> LoadTable {
        LoadTable {
            metadata: serde_json::from_slice(&metadata.to_json()).unwrap(),
        }
    }

    #[test]
    fn a_catalog_table_behind_gets_every_snapshot_it_lacks() {
        let ours = version("/w/iceberg/db/t/metadata", &[3, 4, 5, 6], 2);
        let behind = loaded(&version("/w/iceberg/db/t/metadata", &[1, 2, 3], 0));
        assert!(behind.holds_table_of(&ours, "/w/iceberg/db/t/metadata"));
        let rest = IcebergRestTable::new(
            &[("uri".to_string(), "http://127.0.0.1:1".to_string())].into(),
            "db".into(),
            "t".into(),
            0,
            true,
        )
        .unwrap();
        let updates = rest.increment(&behind, &ours);
        let actions: Vec<(String, Value)> = updates
            .iter()
            .map(|u| {
                let action = u["action"].as_str().unwrap().to_string();
                let detail = u
                    .get("snapshot")
                    .map(|s| s["snapshot-id"].clone())
                    .or(u.get("schema").map(|s| s["schema-id"].clone()))
                    .or(u.get("snapshot-ids").cloned())
                    .or(u.get("schema-id").cloned())
                    .or(u.get("snapshot-id").cloned())
                    .unwrap_or(Value::Null);
                (action, detail)
            })
            .collect();
        let expected: Vec<(String, Value)> = [
            ("add-schema", json!(2)),
            ("add-schema", json!(3)),
            ("set-current-schema", json!(3)),
            ("add-snapshot", json!(4)),
            ("add-snapshot", json!(5)),
            ("add-snapshot", json!(6)),
            ("set-snapshot-ref", json!(6)),
            ("remove-snapshots", json!([1, 2])),
        ]
        .into_iter()
        .map(|(a, d)| (a.to_string(), d))
        .collect();
        assert_eq!(actions, expected);
    }

    #[test]
    fn another_tables_snapshots_are_not_this_tables() {
        let ours = version("/w/iceberg/db/t/metadata", &[1], 0);
        // the same place, other manifest lists: a Paimon table dropped and created again
        let old = loaded(&version("/w/iceberg/db/t/metadata", &[1, 2], 0));
        let mut relisted = old.metadata.clone();
        relisted["snapshots"][0]["manifest-list"] =
            json!("/w/iceberg/db/t/metadata/snap-1-other.avro");
        let old = LoadTable { metadata: relisted };
        assert!(!old.holds_table_of(&ours, "/w/iceberg/db/t/metadata"));
        let elsewhere = loaded(&version("/w/iceberg/db/u/metadata", &[1, 2], 0));
        assert!(!elsewhere.holds_table_of(&ours, "/w/iceberg/db/t/metadata"));
        // ahead of this version: the same table
        let ahead = loaded(&version("/w/iceberg/db/t/metadata", &[1, 2], 0));
        assert!(ahead.holds_table_of(&ours, "/w/iceberg/db/t/metadata"));
    }
}
