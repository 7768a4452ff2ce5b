//! `snapshot/snapshot-N` and `tag/tag-NAME` files, the `LATEST`/`EARLIEST` hints and the
//! names of these files (Java `Snapshot`, `Tag`, `HintFileUtils`).
//!
//! Reading: unknown members are ignored (as Java does), optional members may be absent or
//! JSON null, `totalRecordCount`/`deltaRecordCount` default to 0 when absent or null (nullable
//! before Paimon 1.4; Java reads them into primitives). Every other required member must be
//! present with the right JSON type, else [`Error::Corrupt`] naming "snapshot" or "tag".
//!
//! Writing: members in pypaimon's order (version, id, schemaId, baseManifestList,
//! deltaManifestList, totalRecordCount, deltaRecordCount, commitUser, commitIdentifier,
//! commitKind, timeMillis, then the optional ones: baseManifestListSize,
//! deltaManifestListSize, changelogManifestList, changelogManifestListSize, indexManifest,
//! changelogRecordCount, watermark, statistics, nextRowId, properties, operation, uuid,
//! writerVersion), absent optional members omitted. Snapshots are pretty-printed like
//! pypaimon (`json.dumps(indent=2)`); tags are one line like pypaimon's `json.dumps(tag)`
//! (`", "` and `": "` separators). Java reads both (its member order differs, which is
//! irrelevant to JSON readers).
//!
//! Tag extras follow Java's Jackson setup (`JavaTimeModule`, timestamps as numbers):
//! `tagCreateTime` is a `LocalDateTime` array `[year, month, day, hour, minute(, second(,
//! nanoOfSecond))]` with trailing zero components omitted, and `tagTimeRetained` a `Duration`
//! as decimal seconds. We write the duration like pypaimon, as a float (`86400.0`); Java
//! writes `86400.000000000`; both read both. Reading goes through `f64`, so a retention with
//! more than ~15 significant digits loses its last nanoseconds.

use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::schema::{parse_numbered_name, pretty_json};

/// Snapshot file format version written by current Paimon.
pub const CURRENT_VERSION: i32 = 3;
/// `commitIdentifier` of batch (non-streaming) commits: `Long.MAX_VALUE`.
pub const BATCH_COMMIT_IDENTIFIER: i64 = i64::MAX;
/// Hint file holding the latest snapshot id.
pub const LATEST_HINT: &str = "LATEST";
/// Hint file holding the earliest snapshot id.
pub const EARLIEST_HINT: &str = "EARLIEST";

/// What a commit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommitKind {
    /// New files added (and possibly removed) by writes.
    Append,
    /// Files rewritten by compaction.
    Compact,
    /// Partitions or the whole table replaced.
    Overwrite,
    /// Statistics collected.
    Analyze,
}

impl CommitKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            CommitKind::Append => "APPEND",
            CommitKind::Compact => "COMPACT",
            CommitKind::Overwrite => "OVERWRITE",
            CommitKind::Analyze => "ANALYZE",
        }
    }
}

impl FromStr for CommitKind {
    type Err = Error;

    /// Exact upper-case names, as Jackson reads Java enums.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "APPEND" => Ok(CommitKind::Append),
            "COMPACT" => Ok(CommitKind::Compact),
            "OVERWRITE" => Ok(CommitKind::Overwrite),
            "ANALYZE" => Ok(CommitKind::Analyze),
            other => Err(Error::corrupt(
                "snapshot",
                format!("unknown commitKind '{other}'"),
            )),
        }
    }
}

impl std::fmt::Display for CommitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One snapshot: the table state after one commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub version: i32,
    pub id: i64,
    /// Latest schema id at commit time.
    pub schema_id: i64,
    /// Manifest list with the whole state of the previous snapshot.
    pub base_manifest_list: String,
    /// Manifest list with this commit's changes.
    pub delta_manifest_list: String,
    pub total_record_count: i64,
    pub delta_record_count: i64,
    pub commit_user: String,
    pub commit_identifier: i64,
    pub commit_kind: CommitKind,
    /// Commit wall time, epoch milliseconds.
    pub time_millis: i64,
    pub base_manifest_list_size: Option<i64>,
    pub delta_manifest_list_size: Option<i64>,
    pub changelog_manifest_list: Option<String>,
    pub changelog_manifest_list_size: Option<i64>,
    /// Index manifest with every live index file.
    pub index_manifest: Option<String>,
    pub changelog_record_count: Option<i64>,
    pub watermark: Option<i64>,
    /// File name in `statistics/`.
    pub statistics: Option<String>,
    /// Row tracking: next unassigned row id.
    pub next_row_id: Option<i64>,
    /// Free-form properties, in file order.
    pub properties: Option<Vec<(String, String)>>,
    /// Java 2.0+ `Operation` name (`WRITE`, `OVERWRITE`, `DELETE`, ...), kept verbatim.
    pub operation: Option<String>,
    pub uuid: Option<String>,
    pub writer_version: Option<String>,
}

impl Snapshot {
    /// Decodes a snapshot file.
    pub fn from_json(bytes: &[u8]) -> Result<Self> {
        let object = parse_object(bytes, "snapshot")?;
        Snapshot::from_object(&object, "snapshot")
    }

    /// Encodes the snapshot file (pretty-printed, no trailing newline).
    pub fn to_json(&self) -> String {
        pretty_json(&self.to_value())
    }

    /// The snapshot file's JSON object (what [`Snapshot::to_json`] prints).
    pub fn to_value(&self) -> Value {
        Value::Object(self.to_object())
    }

    fn from_object(object: &Map<String, Value>, what: &'static str) -> Result<Self> {
        let m = Members { object, what };
        Ok(Snapshot {
            version: m.required_i32("version")?,
            id: m.required_i64("id")?,
            schema_id: m.required_i64("schemaId")?,
            base_manifest_list: m.required_string("baseManifestList")?,
            delta_manifest_list: m.required_string("deltaManifestList")?,
            total_record_count: m.optional_i64("totalRecordCount")?.unwrap_or(0),
            delta_record_count: m.optional_i64("deltaRecordCount")?.unwrap_or(0),
            commit_user: m.required_string("commitUser")?,
            commit_identifier: m.required_i64("commitIdentifier")?,
            commit_kind: m
                .required_string("commitKind")?
                .parse()
                .map_err(|_| m.corrupt("unknown 'commitKind'"))?,
            time_millis: m.required_i64("timeMillis")?,
            base_manifest_list_size: m.optional_i64("baseManifestListSize")?,
            delta_manifest_list_size: m.optional_i64("deltaManifestListSize")?,
            changelog_manifest_list: m.optional_string("changelogManifestList")?,
            changelog_manifest_list_size: m.optional_i64("changelogManifestListSize")?,
            index_manifest: m.optional_string("indexManifest")?,
            changelog_record_count: m.optional_i64("changelogRecordCount")?,
            watermark: m.optional_i64("watermark")?,
            statistics: m.optional_string("statistics")?,
            next_row_id: m.optional_i64("nextRowId")?,
            properties: m.optional_properties("properties")?,
            operation: m.optional_string("operation")?,
            uuid: m.optional_string("uuid")?,
            writer_version: m.optional_string("writerVersion")?,
        })
    }

    fn to_object(&self) -> Map<String, Value> {
        let mut o = Map::new();
        let mut put = |key: &str, value: Value| {
            o.insert(key.to_string(), value);
        };
        put("version", self.version.into());
        put("id", self.id.into());
        put("schemaId", self.schema_id.into());
        put("baseManifestList", self.base_manifest_list.as_str().into());
        put(
            "deltaManifestList",
            self.delta_manifest_list.as_str().into(),
        );
        put("totalRecordCount", self.total_record_count.into());
        put("deltaRecordCount", self.delta_record_count.into());
        put("commitUser", self.commit_user.as_str().into());
        put("commitIdentifier", self.commit_identifier.into());
        put("commitKind", self.commit_kind.as_str().into());
        put("timeMillis", self.time_millis.into());
        let mut optional = |key: &str, value: Option<Value>| {
            if let Some(value) = value {
                o.insert(key.to_string(), value);
            }
        };
        let text = |s: &Option<String>| s.as_deref().map(Value::from);
        optional(
            "baseManifestListSize",
            self.base_manifest_list_size.map(Value::from),
        );
        optional(
            "deltaManifestListSize",
            self.delta_manifest_list_size.map(Value::from),
        );
        optional("changelogManifestList", text(&self.changelog_manifest_list));
        optional(
            "changelogManifestListSize",
            self.changelog_manifest_list_size.map(Value::from),
        );
        optional("indexManifest", text(&self.index_manifest));
        optional(
            "changelogRecordCount",
            self.changelog_record_count.map(Value::from),
        );
        optional("watermark", self.watermark.map(Value::from));
        optional("statistics", text(&self.statistics));
        optional("nextRowId", self.next_row_id.map(Value::from));
        optional(
            "properties",
            self.properties.as_ref().map(|p| {
                Value::Object(
                    p.iter()
                        .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
                        .collect(),
                )
            }),
        );
        optional("operation", text(&self.operation));
        optional("uuid", text(&self.uuid));
        optional("writerVersion", text(&self.writer_version));
        o
    }
}

/// Java `LocalDateTime` (no time zone), as stored in `tagCreateTime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LocalDateTime {
    pub year: i32,
    /// 1..=12
    pub month: u8,
    /// 1..=31
    pub day: u8,
    pub hour: u8,
    pub minute: u8,
    pub second: u8,
    /// 0..1_000_000_000
    pub nano: u32,
}

impl LocalDateTime {
    /// Jackson's array form: trailing zero second / nano components are omitted.
    pub fn to_json(self) -> Value {
        let mut parts: Vec<Value> = vec![
            self.year.into(),
            self.month.into(),
            self.day.into(),
            self.hour.into(),
            self.minute.into(),
        ];
        if self.second != 0 || self.nano != 0 {
            parts.push(self.second.into());
            if self.nano != 0 {
                parts.push(self.nano.into());
            }
        }
        Value::Array(parts)
    }

    /// The array form (5 to 7 numbers) or an ISO `yyyy-MM-ddTHH:mm[:ss[.fffffffff]]` string.
    fn from_json(value: &Value) -> std::result::Result<Self, String> {
        let numbers: Vec<i64> = match value {
            Value::Array(items) if (5..=7).contains(&items.len()) => items
                .iter()
                .map(|v| {
                    v.as_i64()
                        .ok_or_else(|| format!("non-integer component {v}"))
                })
                .collect::<std::result::Result<_, _>>()?,
            Value::String(text) => parse_iso_local_date_time(text)?,
            other => return Err(format!("not a LocalDateTime: {other}")),
        };
        let get = |i: usize| numbers.get(i).copied().unwrap_or(0);
        let small =
            |i: usize, range: std::ops::RangeInclusive<i64>| -> std::result::Result<u8, String> {
                let v = get(i);
                if range.contains(&v) {
                    u8::try_from(v).map_err(|e| e.to_string())
                } else {
                    Err(format!("component {i} = {v} out of range"))
                }
            };
        Ok(LocalDateTime {
            year: i32::try_from(get(0)).map_err(|e| e.to_string())?,
            month: small(1, 1..=12)?,
            day: small(2, 1..=31)?,
            hour: small(3, 0..=23)?,
            minute: small(4, 0..=59)?,
            second: small(5, 0..=59)?,
            nano: u32::try_from(get(6))
                .ok()
                .filter(|n| *n < 1_000_000_000)
                .ok_or_else(|| format!("nano {} out of range", get(6)))?,
        })
    }
}

/// `2024-01-02T03:04[:05[.123456789]]` → [y, mo, d, h, mi, s, nanos].
fn parse_iso_local_date_time(text: &str) -> std::result::Result<Vec<i64>, String> {
    let bad = || format!("not an ISO local date-time: '{text}'");
    let (date, time) = text.split_once('T').ok_or_else(bad)?;
    let mut out = Vec::with_capacity(7);
    for part in date.splitn(3, '-') {
        out.push(part.parse::<i64>().map_err(|_| bad())?);
    }
    let (hms, fraction) = match time.split_once('.') {
        Some((hms, fraction)) => (hms, Some(fraction)),
        None => (time, None),
    };
    for part in hms.split(':') {
        out.push(part.parse::<i64>().map_err(|_| bad())?);
    }
    if let Some(fraction) = fraction {
        if fraction.is_empty()
            || fraction.len() > 9
            || !fraction.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(bad());
        }
        let nanos = format!("{fraction:0<9}")
            .parse::<i64>()
            .map_err(|_| bad())?;
        if out.len() != 6 {
            return Err(bad());
        }
        out.push(nanos);
    }
    if !(5..=7).contains(&out.len()) {
        return Err(bad());
    }
    Ok(out)
}

/// A tag: a named, retained copy of a snapshot plus its creation time and retention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    pub snapshot: Snapshot,
    pub tag_create_time: Option<LocalDateTime>,
    pub tag_time_retained: Option<Duration>,
}

impl Tag {
    /// Decodes a tag file.
    pub fn from_json(bytes: &[u8]) -> Result<Self> {
        let object = parse_object(bytes, "tag")?;
        let snapshot = Snapshot::from_object(&object, "tag")?;
        let tag_create_time = match object.get("tagCreateTime") {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                LocalDateTime::from_json(value)
                    .map_err(|e| Error::corrupt("tag", format!("'tagCreateTime': {e}")))?,
            ),
        };
        let tag_time_retained = match object.get("tagTimeRetained") {
            None | Some(Value::Null) => None,
            Some(value) => Some(duration_from_json(value)?),
        };
        Ok(Tag {
            snapshot,
            tag_create_time,
            tag_time_retained,
        })
    }

    /// Encodes the tag file on one line, as pypaimon does.
    pub fn to_json(&self) -> String {
        let mut object = self.snapshot.to_object();
        if let Some(time) = self.tag_create_time {
            object.insert("tagCreateTime".into(), time.to_json());
        }
        if let Some(retained) = self.tag_time_retained {
            object.insert(
                "tagTimeRetained".into(),
                Value::from(retained.as_secs_f64()),
            );
        }
        python_compact_json(&Value::Object(object))
    }
}

fn duration_from_json(value: &Value) -> Result<Duration> {
    let bad = || {
        Error::corrupt(
            "tag",
            format!("'tagTimeRetained' is not a duration: {value}"),
        )
    };
    if let Some(seconds) = value.as_u64() {
        return Ok(Duration::from_secs(seconds));
    }
    let seconds = value
        .as_f64()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .ok_or_else(bad)?;
    let whole = seconds.trunc();
    // Round the fraction to whole nanoseconds so 0.1 s reads back as 100 ms.
    let nanos = ((seconds - whole) * 1e9).round();
    Duration::try_from_secs_f64(whole)
        .ok()
        .and_then(|d| d.checked_add(Duration::from_nanos(nanos as u64)))
        .ok_or_else(bad)
}

/// `json.dumps(value)` with Python's default separators: `", "` and `": "`, one line.
fn python_compact_json(value: &Value) -> String {
    struct PythonFormatter;
    impl serde_json::ser::Formatter for PythonFormatter {
        fn begin_array_value<W: ?Sized + std::io::Write>(
            &mut self,
            writer: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first {
                Ok(())
            } else {
                writer.write_all(b", ")
            }
        }

        fn begin_object_key<W: ?Sized + std::io::Write>(
            &mut self,
            writer: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first {
                Ok(())
            } else {
                writer.write_all(b", ")
            }
        }

        fn begin_object_value<W: ?Sized + std::io::Write>(
            &mut self,
            writer: &mut W,
        ) -> std::io::Result<()> {
            writer.write_all(b": ")
        }
    }
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, PythonFormatter);
    // Writing a `Value` into a Vec cannot fail, and serde_json only emits UTF-8.
    value
        .serialize(&mut serializer)
        .expect("a JSON value always serialises");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

fn parse_object(bytes: &[u8], what: &'static str) -> Result<Map<String, Value>> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(Error::corrupt(what, "not a JSON object")),
        Err(e) => Err(Error::corrupt(what, e)),
    }
}

/// Typed access to the members of a snapshot-like JSON object.
struct Members<'a> {
    object: &'a Map<String, Value>,
    what: &'static str,
}

impl Members<'_> {
    fn corrupt(&self, reason: impl std::fmt::Display) -> Error {
        Error::corrupt(self.what, reason)
    }

    /// The member, treating JSON null as absent.
    fn get(&self, key: &str) -> Option<&Value> {
        self.object.get(key).filter(|v| !v.is_null())
    }

    fn optional_i64(&self, key: &str) -> Result<Option<i64>> {
        self.get(key)
            .map(|v| {
                v.as_i64()
                    .ok_or_else(|| self.corrupt(format!("'{key}' is not an integer: {v}")))
            })
            .transpose()
    }

    fn required_i64(&self, key: &str) -> Result<i64> {
        self.optional_i64(key)?
            .ok_or_else(|| self.corrupt(format!("missing '{key}'")))
    }

    fn required_i32(&self, key: &str) -> Result<i32> {
        let value = self.required_i64(key)?;
        i32::try_from(value).map_err(|_| self.corrupt(format!("'{key}' out of range: {value}")))
    }

    fn optional_string(&self, key: &str) -> Result<Option<String>> {
        self.get(key)
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(self.corrupt(format!("'{key}' is not a string: {other}"))),
            })
            .transpose()
    }

    fn required_string(&self, key: &str) -> Result<String> {
        self.optional_string(key)?
            .ok_or_else(|| self.corrupt(format!("missing '{key}'")))
    }

    fn optional_properties(&self, key: &str) -> Result<Option<Vec<(String, String)>>> {
        let Some(value) = self.get(key) else {
            return Ok(None);
        };
        let Value::Object(members) = value else {
            return Err(self.corrupt(format!("'{key}' is not an object")));
        };
        members
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                other => Err(self.corrupt(format!("'{key}.{k}' is not a string: {other}"))),
            })
            .collect::<Result<_>>()
            .map(Some)
    }
}

/// Decodes a `LATEST` / `EARLIEST` hint: a decimal snapshot id, surrounding whitespace allowed.
pub fn parse_hint(bytes: &[u8]) -> Result<i64> {
    let text = std::str::from_utf8(bytes).map_err(|e| Error::corrupt("snapshot hint", e))?;
    text.trim()
        .parse::<i64>()
        .map_err(|_| Error::corrupt("snapshot hint", format!("not a snapshot id: {text:?}")))
}

/// `snapshot-<id>`.
pub fn snapshot_file_name(id: i64) -> String {
    format!("snapshot-{id}")
}

/// The id of a `snapshot-<id>` file name; `None` for hints, hidden/temporary files and junk.
pub fn parse_snapshot_file_name(name: &str) -> Option<i64> {
    parse_numbered_name(name, "snapshot-")
}

/// `tag-<name>`.
pub fn tag_file_name(tag: &str) -> String {
    format!("tag-{tag}")
}

/// The directory inside `tag/` where `tag.create-success-file` puts a `<tag>_SUCCESS` file
/// per tag (Java `SuccessFileTagCallback`). Its name starts with `tag-` too: tags are the
/// *files* named `tag-<name>` (Java's listing counts the directory, but fails to read it as a
/// tag and skips it).
pub const TAG_SUCCESS_FILE_DIR: &str = "tag-success-file";

/// The name of tag `tag`'s success file inside [`TAG_SUCCESS_FILE_DIR`].
pub fn tag_success_file_name(tag: &str) -> String {
    format!("{tag}{}", crate::options::SUCCESS_FILE_NAME)
}

/// The tag name of a `tag-<name>` file name; `None` for other (e.g. hidden temporary) files.
pub fn parse_tag_file_name(name: &str) -> Option<&str> {
    name.strip_prefix("tag-").filter(|tag| !tag.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::fixtures::{files, tables};

    fn sample() -> Snapshot {
        Snapshot {
            version: CURRENT_VERSION,
            id: 7,
            schema_id: 1,
            base_manifest_list: "manifest-list-a-0".into(),
            delta_manifest_list: "manifest-list-a-1".into(),
            total_record_count: 10,
            delta_record_count: -2,
            commit_user: "user".into(),
            commit_identifier: BATCH_COMMIT_IDENTIFIER,
            commit_kind: CommitKind::Compact,
            time_millis: 1_795_315_028_951,
            base_manifest_list_size: Some(1),
            delta_manifest_list_size: Some(2),
            changelog_manifest_list: Some("manifest-list-a-changelog".into()),
            changelog_manifest_list_size: Some(3),
            index_manifest: Some("index-manifest-b".into()),
            changelog_record_count: Some(4),
            watermark: Some(i64::MIN),
            statistics: Some("stat-c-0".into()),
            next_row_id: Some(5),
            properties: Some(vec![("z".into(), "1".into()), ("a".into(), "ü".into())]),
            operation: Some("MERGE".into()),
            uuid: Some("u".into()),
            writer_version: Some("tidelake".into()),
        }
    }

    #[test]
    fn fixture_snapshots_re_encode_identically_and_match_manifest() {
        let mut count = 0;
        for (table, dir) in tables() {
            let name = table["name"].as_str().expect("name");
            let expected = table["snapshots"].as_array().expect("snapshots");
            let paths = files(&dir.join("snapshot"), "snapshot-");
            assert_eq!(paths.len(), expected.len(), "{name}: snapshot count");
            for path in paths {
                let bytes = std::fs::read(&path).expect("read snapshot");
                let snapshot = Snapshot::from_json(&bytes)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let text = String::from_utf8(bytes).expect("UTF-8");
                assert_eq!(snapshot.to_json(), text, "{}", path.display());
                let file_name = path.file_name().and_then(|n| n.to_str()).expect("name");
                assert_eq!(parse_snapshot_file_name(file_name), Some(snapshot.id));

                let want = expected
                    .iter()
                    .find(|s| s["id"].as_i64() == Some(snapshot.id))
                    .unwrap_or_else(|| {
                        panic!("{name}: snapshot {} not in fixtures.json", snapshot.id)
                    });
                assert_eq!(
                    snapshot.commit_kind.as_str(),
                    want["commit_kind"].as_str().expect("kind")
                );
                assert_eq!(
                    Some(snapshot.schema_id),
                    want["schema_id"].as_i64(),
                    "{name}"
                );
                assert_eq!(
                    Some(snapshot.time_millis),
                    want["time_millis"].as_i64(),
                    "{name}"
                );
                assert_eq!(
                    Some(snapshot.total_record_count),
                    want["total_record_count"].as_i64()
                );
                assert_eq!(
                    Some(snapshot.delta_record_count),
                    want["delta_record_count"].as_i64()
                );
                assert_eq!(
                    snapshot.changelog_record_count,
                    want["changelog_record_count"].as_i64()
                );
                assert_eq!(
                    snapshot.changelog_manifest_list.is_some(),
                    want["has_changelog_manifest_list"].as_bool().expect("flag")
                );
                assert_eq!(
                    snapshot.index_manifest.is_some(),
                    want["has_index_manifest"].as_bool().expect("flag")
                );
                count += 1;
            }
            let latest = std::fs::read(dir.join("snapshot").join(LATEST_HINT)).expect("LATEST");
            assert_eq!(
                Some(parse_hint(&latest).unwrap()),
                table["latest_snapshot_id"].as_i64()
            );
        }
        assert!(count >= 60, "only {count} snapshots checked");
    }

    #[test]
    fn fixture_tags_re_encode_identically() {
        let mut count = 0;
        for (_, dir) in tables() {
            for path in files(&dir.join("tag"), "tag-") {
                let bytes = std::fs::read(&path).expect("read tag");
                let tag =
                    Tag::from_json(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                assert_eq!(tag.to_json(), String::from_utf8(bytes).expect("UTF-8"));
                let file_name = path.file_name().and_then(|n| n.to_str()).expect("name");
                let tag_name = parse_tag_file_name(file_name).expect("tag name");
                assert_eq!(tag_file_name(tag_name), file_name);
                // A tag points at an existing snapshot with the same content.
                let snapshot_path = dir
                    .join("snapshot")
                    .join(snapshot_file_name(tag.snapshot.id));
                let snapshot = Snapshot::from_json(&std::fs::read(snapshot_path).expect("read"))
                    .expect("snapshot");
                assert_eq!(snapshot, tag.snapshot);
                count += 1;
            }
        }
        assert!(count >= 2, "only {count} tags checked");
    }

    #[test]
    fn every_member_round_trips() {
        let snapshot = sample();
        let text = snapshot.to_json();
        assert_eq!(Snapshot::from_json(text.as_bytes()).unwrap(), snapshot);
        let keys: Vec<String> = match serde_json::from_str::<Value>(&text).unwrap() {
            Value::Object(o) => o.keys().cloned().collect(),
            _ => panic!(),
        };
        assert_eq!(
            keys,
            [
                "version",
                "id",
                "schemaId",
                "baseManifestList",
                "deltaManifestList",
                "totalRecordCount",
                "deltaRecordCount",
                "commitUser",
                "commitIdentifier",
                "commitKind",
                "timeMillis",
                "baseManifestListSize",
                "deltaManifestListSize",
                "changelogManifestList",
                "changelogManifestListSize",
                "indexManifest",
                "changelogRecordCount",
                "watermark",
                "statistics",
                "nextRowId",
                "properties",
                "operation",
                "uuid",
                "writerVersion",
            ]
        );
    }

    #[test]
    fn lenient_where_java_is() {
        let text = r#"{"version": 3, "id": 1, "schemaId": 0, "baseManifestList": "b",
            "deltaManifestList": "d", "commitUser": "u", "commitIdentifier": 1,
            "commitKind": "APPEND", "timeMillis": 2, "logOffsets": {}, "futureField": [1],
            "totalRecordCount": null, "changelogManifestList": null}"#;
        let snapshot = Snapshot::from_json(text.as_bytes()).unwrap();
        assert_eq!(snapshot.total_record_count, 0);
        assert_eq!(snapshot.delta_record_count, 0);
        assert_eq!(snapshot.changelog_manifest_list, None);
    }

    #[test]
    fn corrupt_snapshots() {
        let good = sample().to_json();
        for n in (0..good.len()).step_by(11) {
            let err = Snapshot::from_json(&good.as_bytes()[..n]).unwrap_err();
            assert!(
                matches!(err, Error::Corrupt { ref what, .. } if what == "snapshot"),
                "{err}"
            );
        }
        for (from, to) in [
            ("\"COMPACT\"", "\"compact\""),
            ("\"id\": 7", "\"id\": \"7\""),
            ("\"version\": 3", "\"version\": 3000000000"),
            ("\"commitUser\": \"user\"", "\"commitUser\": 5"),
            ("\"schemaId\": 1,", ""),
            ("\"z\": \"1\"", "\"z\": 1"),
        ] {
            let text = good.replacen(from, to, 1);
            assert!(
                matches!(
                    Snapshot::from_json(text.as_bytes()),
                    Err(Error::Corrupt { .. })
                ),
                "{from} -> {to}"
            );
        }
        assert!(matches!(
            Snapshot::from_json(b"[1]"),
            Err(Error::Corrupt { .. })
        ));
    }

    #[test]
    fn tag_extras_follow_jackson() {
        let mut tag = Tag {
            snapshot: sample(),
            tag_create_time: Some(LocalDateTime {
                year: 2024,
                month: 5,
                day: 14,
                hour: 3,
                minute: 4,
                second: 0,
                nano: 0,
            }),
            tag_time_retained: Some(Duration::from_secs(86_400)),
        };
        let text = tag.to_json();
        assert!(
            text.ends_with(r#""tagCreateTime": [2024, 5, 14, 3, 4], "tagTimeRetained": 86400.0}"#),
            "{text}"
        );
        assert_eq!(Tag::from_json(text.as_bytes()).unwrap(), tag);

        tag.tag_create_time = Some(LocalDateTime {
            second: 5,
            nano: 120_000_000,
            ..tag.tag_create_time.unwrap()
        });
        tag.tag_time_retained = Some(Duration::from_millis(1_500));
        let text = tag.to_json();
        assert!(
            text.contains(r#""tagCreateTime": [2024, 5, 14, 3, 4, 5, 120000000]"#),
            "{text}"
        );
        assert!(text.contains(r#""tagTimeRetained": 1.5"#), "{text}");
        assert_eq!(Tag::from_json(text.as_bytes()).unwrap(), tag);

        // Java's Jackson output: decimal seconds with 9 fraction digits; ISO strings also read.
        let java = text.replace("1.5}", "1.500000000}").replace(
            "[2024, 5, 14, 3, 4, 5, 120000000]",
            "\"2024-05-14T03:04:05.12\"",
        );
        assert_eq!(Tag::from_json(java.as_bytes()).unwrap(), tag);
        let integral = text.replace("1.5}", "7}");
        assert_eq!(
            Tag::from_json(integral.as_bytes())
                .unwrap()
                .tag_time_retained,
            Some(Duration::from_secs(7))
        );

        for bad in ["[2024, 13, 1, 0, 0]", "[2024, 1, 1]", "\"yesterday\"", "{}"] {
            let text = text.replace("[2024, 5, 14, 3, 4, 5, 120000000]", bad);
            assert!(
                matches!(Tag::from_json(text.as_bytes()), Err(Error::Corrupt { ref what, .. }) if what == "tag"),
                "{bad}"
            );
        }
        let negative = text.replace("1.5}", "-1.5}");
        assert!(Tag::from_json(negative.as_bytes()).is_err());
    }

    #[test]
    fn hints_and_names() {
        assert_eq!(parse_hint(b"5").unwrap(), 5);
        assert_eq!(parse_hint(b" 12\n").unwrap(), 12);
        for bad in [&b""[..], b"x", b"1 2", b"\xff"] {
            assert!(matches!(parse_hint(bad), Err(Error::Corrupt { .. })));
        }
        assert_eq!(snapshot_file_name(3), "snapshot-3");
        assert_eq!(parse_snapshot_file_name("snapshot-3"), Some(3));
        for bad in [
            "LATEST",
            "EARLIEST",
            ".snapshot-3.abc.tmp",
            "snapshot-3.tmp",
            "snapshot-",
            "snapshot-+3",
        ] {
            assert_eq!(parse_snapshot_file_name(bad), None, "{bad}");
        }
        assert_eq!(tag_file_name("mid"), "tag-mid");
        assert_eq!(parse_tag_file_name("tag-mid"), Some("mid"));
        assert_eq!(parse_tag_file_name(".tag-mid.x.tmp"), None);
        assert_eq!(
            "OVERWRITE".parse::<CommitKind>().unwrap(),
            CommitKind::Overwrite
        );
        assert_eq!(CommitKind::Analyze.to_string(), "ANALYZE");
        assert!("append".parse::<CommitKind>().is_err());
    }
}
