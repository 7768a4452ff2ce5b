//! Marking partitions done (Java `PartitionMarkDoneAction`): the `mark_partition_done`
//! procedure ([`mark_partitions_done`]) and the end of a batch write on a table with
//! `partition.end-input-to-done` ([`mark_written_done`], as Java Spark's
//! `markDoneIfNeeded`: the distinct partitions of the write's commit messages).
//!
//! Invariants: actions that cannot run (user classes; an HTTP report without its URL;
//! `done-partition` and `mark-event` on a table opened by path; `done-partition` without
//! `metastore.partitioned-table`) are refused before any partition is marked, and before a
//! batch write that would mark commits ([`check_written_done`]). `success-file` writes
//! `<table>/<partition path>/_SUCCESS` with Java's JSON, keeping the creation time of a marker
//! already there and setting the modification time to the [`crate::io::Env`] clock's now;
//! `done-partition` adds `<last key>=<value>.done` to a Hive catalog's metastore (other
//! catalogs create no partitions, as in Java); `mark-event` sends the catalog a load-done
//! event (Hive, REST; ignored by filesystem and JDBC catalogs, as in Java); `http-report` posts
//! Java's JSON report and needs `{"result": "SUCCESS"}` back. A mark follows the
//! commit it marks, so a failure to mark never loses a write: the commit stands and the error
//! names the mark not made.

use std::collections::BTreeSet;

use serde::Serialize;
use tidelake_spec::datum::Datum;
use tidelake_spec::options::{
    MarkDoneAction, METASTORE_PARTITIONED_TABLE, PARTITION_MARK_DONE_ACTION,
    PARTITION_MARK_DONE_ACTION_URL, SUCCESS_FILE_NAME,
};

use crate::error::{Error, Result};
use crate::layout::TableLayout;
use crate::maintenance::success_file;
use crate::table::Table;
use crate::write::message::CommitMessage;

/// Mark the partitions of `specs` (each naming every partition column) done by the table's
/// `partition.mark-done-action`.
pub async fn mark_partitions_done(table: &Table, specs: Vec<Vec<(String, Datum)>>) -> Result<()> {
    let keys = &table.schema().partition_keys;
    if keys.is_empty() {
        return Err(Error::invalid(format!(
            "{} is not partitioned: there is no partition to mark done",
            table.location()
        )));
    }
    let mut partitions = Vec::with_capacity(specs.len());
    for spec in specs {
        let values = keys
            .iter()
            .map(|key| {
                spec.iter()
                    .find(|(name, _)| name == key)
                    .map(|(_, value)| value.clone())
                    .ok_or_else(|| {
                        Error::invalid(format!(
                            "a partition to mark done must give every partition column \
                             {keys:?}; '{key}' is missing"
                        ))
                    })
            })
            .collect::<Result<Vec<Datum>>>()?;
        partitions.push(values);
    }
    mark_done(table, &partitions).await
}

/// The distinct framed partitions of `messages`.
pub fn written_partitions(messages: &[CommitMessage]) -> BTreeSet<Vec<u8>> {
    messages.iter().map(|m| m.partition.clone()).collect()
}

/// Whether a batch write marks the partitions it wrote done (`partition.end-input-to-done`,
/// partitioned tables only).
fn marks_written(table: &Table) -> Result<bool> {
    Ok(!table.schema().partition_keys.is_empty()
        && table
            .schema()
            .options()
            .partition_mark_done_when_end_input()
            .map_err(|e| Error::from_spec("table options", e))?)
}

/// Before a batch write commits: refuse it when it would mark its partitions done by actions
/// that cannot run for the table ([`Marker::of_table`]), so no commit stands without its marks.
pub(crate) fn check_written_done(table: &Table) -> Result<()> {
    if marks_written(table)? {
        Marker::of_table(table)?;
    }
    Ok(())
}

/// After a batch write committed to `written` ([`written_partitions`]): mark them done when
/// the table asks for it ([`marks_written`]).
pub async fn mark_written_done(table: &Table, written: &BTreeSet<Vec<u8>>) -> Result<()> {
    if !marks_written(table)? {
        return Ok(());
    }
    let layout = TableLayout::new(table.schema())?;
    let partitions = written
        .iter()
        .map(|p| layout.decode_partition(p))
        .collect::<Result<Vec<_>>>()?;
    mark_done(table, &partitions).await
}

/// A mark-done action tidelake runs (Java `PartitionMarkDoneAction.createActions`).
#[derive(Clone, Debug)]
enum Marker {
    /// `success-file`: `<partition>/_SUCCESS`.
    SuccessFile,
    /// `done-partition`: the partition with `.done` after its last value, added to the
    /// catalog's metastore (Java `AddDonePartitionAction`).
    DonePartition,
    /// `mark-event`: a load-done event in the catalog (Java `MarkPartitionDoneEventAction`).
    MarkEvent,
    /// `http-report`: a POST to `url` answered with `{"result": "SUCCESS"}` (Java
    /// `HttpReportMarkDoneAction`).
    HttpReport { url: String, params: Option<String> },
}

impl Marker {
    /// The table's actions, refused as Java refuses them when they cannot run: actions that
    /// go through a catalog on a table opened by path (Java: no `PartitionHandler`),
    /// `done-partition` without `metastore.partitioned-table`, an HTTP report without its URL,
    /// user classes.
    fn of_table(table: &Table) -> Result<Vec<Marker>> {
        let options = table.schema().options();
        let spec = |e| Error::from_spec("table options", e);
        let needs_catalog = |action: MarkDoneAction| {
            if table.environment().name().is_some() {
                Ok(())
            } else {
                Err(Error::Unsupported(format!(
                    "{}: option '{PARTITION_MARK_DONE_ACTION}' asks for '{action}', which \
                     goes through the table's catalog: open the table through its catalog",
                    table.location()
                )))
            }
        };
        let mut marks = Vec::new();
        for action in options.partition_mark_done_actions().map_err(spec)? {
            marks.push(match action {
                MarkDoneAction::SuccessFile => Marker::SuccessFile,
                MarkDoneAction::DonePartition => {
                    needs_catalog(action)?;
                    if !options.partitioned_table_in_metastore().map_err(spec)? {
                        return Err(Error::invalid(format!(
                            "{}: option '{PARTITION_MARK_DONE_ACTION}' asks for '{action}': \
                             the table should enable '{METASTORE_PARTITIONED_TABLE}'",
                            table.location()
                        )));
                    }
                    Marker::DonePartition
                }
                MarkDoneAction::MarkEvent => {
                    needs_catalog(action)?;
                    Marker::MarkEvent
                }
                MarkDoneAction::HttpReport => Marker::HttpReport {
                    url: options
                        .partition_mark_done_http_url()
                        .ok_or_else(|| {
                            Error::invalid(format!(
                                "{}: option '{PARTITION_MARK_DONE_ACTION}' asks for '{action}': \
                                 '{PARTITION_MARK_DONE_ACTION_URL}' must be set",
                                table.location()
                            ))
                        })?
                        .to_string(),
                    params: options
                        .partition_mark_done_http_params()
                        .map(str::to_string),
                },
                MarkDoneAction::Custom => {
                    return Err(Error::Unsupported(format!(
                        "{}: option '{PARTITION_MARK_DONE_ACTION}' asks for '{action}': \
                         tidelake does not run user classes",
                        table.location()
                    )))
                }
            });
        }
        Ok(marks)
    }

    /// Mark the partition of `values` (in key order) done.
    async fn run(&self, table: &Table, layout: &TableLayout, values: &[Datum]) -> Result<()> {
        match self {
            Marker::SuccessFile => {
                let path = format!("{}/{SUCCESS_FILE_NAME}", layout.partition_path(values)?);
                success_file::mark(table.io(), &path, table.env().now_millis()).await
            }
            Marker::DonePartition => {
                let Some(metastore) = table.environment().metastore() else {
                    // Java's other catalogs create no partitions
                    return Ok(());
                };
                let mut spec = layout.partition_spec(values)?;
                if let Some((_, last)) = spec.last_mut() {
                    last.push_str(DONE_SUFFIX);
                }
                metastore.add_partitions(&[spec]).await
            }
            Marker::MarkEvent => {
                let spec = layout.partition_spec(values)?;
                table.environment().mark_partitions_done(&[spec]).await
            }
            Marker::HttpReport { url, params } => {
                let report = HttpReport {
                    params: params.as_deref(),
                    table: &table.full_name(),
                    path: table.location(),
                    // Java's `generatePartitionPath`: with a trailing separator
                    partition: &format!("{}/", layout.partition_path(values)?),
                };
                report.post(url).await
            }
        }
    }
}

/// The content type of Java's report (its HTTP client's `StringEntity`), which receivers
/// written for Java's reports accept.
const JAVA_TEXT: &str = "text/plain; charset=UTF-8";

/// The body of an `http-report` (Java `HttpReportMarkDoneRequest`, its members in the order
/// Java's Jackson writes them: the creator's).
#[derive(Serialize)]
struct HttpReport<'a> {
    params: Option<&'a str>,
    table: &'a str,
    path: &'a str,
    partition: &'a str,
}

impl HttpReport<'_> {
    /// POST the report to `url` as Java's `SimpleHttpClient` does: done when the answer is a
    /// success whose `result` is `SUCCESS` (any case), as Java's action requires.
    async fn post(&self, url: &str) -> Result<()> {
        let failed = |detail: String| Error::Io {
            path: url.to_string(),
            source: object_store::Error::Generic {
                store: "http-report",
                source: format!("partition '{}' of {}: {detail}", self.partition, self.table)
                    .into(),
            },
        };
        let body = serde_json::to_string(self).map_err(|e| failed(e.to_string()))?;
        let response = reqwest::Client::new()
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, JAVA_TEXT)
            .body(body)
            .send()
            .await
            .map_err(|e| failed(e.to_string()))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| failed(e.to_string()))?;
        if !status.is_success() || text.trim().is_empty() {
            return Err(failed(format!("the answer is {status} '{text}'")));
        }
        let result = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("result").and_then(|r| r.as_str()).map(str::to_string));
        match result {
            Some(r) if r.eq_ignore_ascii_case("SUCCESS") => Ok(()),
            Some(r) => Err(failed(format!(
                "the answer's `result` should be 'SUCCESS' but is '{r}'"
            ))),
            None => Err(failed(format!("the answer has no `result`: '{text}'"))),
        }
    }
}

/// What `done-partition` appends to the last partition value.
const DONE_SUFFIX: &str = ".done";

/// Run the table's mark-done actions on `partitions` (decoded values in key order): every
/// action for one partition, then the next (as Java's procedure).
async fn mark_done(table: &Table, partitions: &[Vec<Datum>]) -> Result<()> {
    let marks = Marker::of_table(table)?;
    let layout = TableLayout::new(table.schema())?;
    for values in partitions {
        for mark in &marks {
            mark.run(table, &layout, values).await?;
        }
    }
    Ok(())
}
