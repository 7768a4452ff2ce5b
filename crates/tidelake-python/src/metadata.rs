//! Snapshots, tags, schema versions and partitions as Python dicts of their fields, read from
//! tidelake's typed structs: `tidelake._metadata` builds its `Snapshot`, `Tag`,
//! `SchemaVersion` and `Partition` from them, and no Paimon JSON is parsed in Python.
//!
//! Values keep the forms the Python API has always exposed: a snapshot's `raw` is its file's
//! JSON object (camelCase keys), a schema's fields are Paimon's field JSON objects, a tag's
//! `create_time` is Jackson's `LocalDateTime` array and `time_retained` is in seconds.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;
use tidelake_core::api::catalog::Partition;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::snapshot::{Snapshot, Tag};
use tidelake_spec::type_json::field_to_json;

/// A JSON value as the Python object `json.loads` would give.
fn json_to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => s.into_pyobject(py)?.into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(json_to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(members) => {
            let dict = PyDict::new(py);
            for (k, v) in members {
                dict.set_item(k, json_to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}

/// The fields of `tidelake.Partition`.
pub(crate) fn partition_fields<'py>(
    py: Python<'py>,
    p: &Partition,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("spec", &p.spec)?;
    d.set_item("record_count", p.record_count)?;
    d.set_item("file_size_in_bytes", p.file_size_in_bytes)?;
    d.set_item("file_count", p.file_count)?;
    d.set_item("last_file_creation_time", p.last_file_creation_time)?;
    d.set_item("done", p.done)?;
    Ok(d)
}

/// The fields of `tidelake.Snapshot`.
pub(crate) fn snapshot_fields<'py>(py: Python<'py>, s: &Snapshot) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("id", s.id)?;
    d.set_item("schema_id", s.schema_id)?;
    d.set_item("commit_kind", s.commit_kind.as_str())?;
    d.set_item("time_millis", s.time_millis)?;
    d.set_item("total_record_count", s.total_record_count)?;
    d.set_item("delta_record_count", s.delta_record_count)?;
    d.set_item("changelog_record_count", s.changelog_record_count)?;
    d.set_item("commit_user", &s.commit_user)?;
    d.set_item("commit_identifier", s.commit_identifier)?;
    d.set_item("watermark", s.watermark)?;
    d.set_item("raw", json_to_py(py, &s.to_value())?)?;
    Ok(d)
}

/// The fields of `tidelake.Tag` named `name`.
pub(crate) fn tag_fields<'py>(
    py: Python<'py>,
    name: &str,
    t: &Tag,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", name)?;
    d.set_item("snapshot_id", t.snapshot.id)?;
    d.set_item("schema_id", t.snapshot.schema_id)?;
    d.set_item("time_millis", t.snapshot.time_millis)?;
    let create_time = t.tag_create_time.map(|time| time.to_json());
    d.set_item(
        "create_time",
        json_to_py(py, create_time.as_ref().unwrap_or(&Value::Null))?,
    )?;
    d.set_item(
        "time_retained",
        t.tag_time_retained.map(|r| r.as_secs_f64()),
    )?;
    Ok(d)
}

/// The fields of `tidelake.SchemaVersion`.
pub(crate) fn schema_fields<'py>(py: Python<'py>, s: &TableSchema) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("id", s.id)?;
    let fields = PyList::empty(py);
    for f in &s.fields {
        fields.append(json_to_py(py, &field_to_json(f))?)?;
    }
    d.set_item("fields", fields)?;
    d.set_item("partition_keys", &s.partition_keys)?;
    d.set_item("primary_keys", &s.primary_keys)?;
    let options = PyDict::new(py);
    for (k, v) in s.options.iter() {
        options.set_item(k, v)?;
    }
    d.set_item("options", options)?;
    d.set_item("comment", &s.comment)?;
    d.set_item("time_millis", s.time_millis)?;
    d.set_item("highest_field_id", s.highest_field_id)?;
    Ok(d)
}
