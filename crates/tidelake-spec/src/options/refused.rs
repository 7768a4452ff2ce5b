//! Options tidelake refuses: those asking writers for behaviour it does not implement
//! ([`Options::check_writable`]), and manifests in another format than Avro, which neither its
//! reads nor its writes could agree with Java on ([`Options::check_manifest_format`]).
//!
//! Invariant: a refusal is an [`Error::Unsupported`] naming the option and its value; reads of
//! a table with a write-only refusal are fine.

use super::{
    java_trim, Options, DELETION_VECTORS_ENABLED, LOG_SYSTEM, MANIFEST_FORMAT,
    METADATA_ICEBERG_FORMAT_VERSION, METADATA_ICEBERG_STORAGE, PARTITION_MARK_DONE_ACTION,
};
use crate::error::{Error, Result};

/// Options whose behaviour Java writers or committers implement and tidelake does not: a
/// tidelake write to such a table would leave it inconsistent for Java readers (no file
/// indexes of an unknown type, no callbacks, ...). Writers and committers refuse them
/// ([`Options::check_writable`]) when set to a non-empty value; reads ignore them. A `*`
/// matches any field-name segment (`file-index.bloom-filter.columns`, ...).
const WRITE_UNSUPPORTED: &[(&str, &str)] = &[
    ("file-index.*.columns", "data-file indexes"),
    ("tag.callbacks", "tag callbacks"),
    ("commit.callbacks", "commit callbacks"),
];

/// Options [`WRITE_UNSUPPORTED`] matches that tidelake's writers do implement: the bloom-filter,
/// bitmap, bsi and range-bitmap file indexes (see [`crate::file_index`]).
const WRITE_SUPPORTED: &[&str] = &[
    "file-index.bloom-filter.columns",
    "file-index.bitmap.columns",
    "file-index.bsi.columns",
    "file-index.range-bitmap.columns",
];

/// Whether `key` matches `pattern` (a `*` stands for one or more characters).
fn key_matches(pattern: &str, key: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == key,
        Some((prefix, suffix)) => {
            key.len() > prefix.len() + suffix.len()
                && key.starts_with(prefix)
                && key.ends_with(suffix)
        }
    }
}

impl Options {
    /// [`Error::Unsupported`] unless `manifest.format` is unset or `avro`: Java writes and reads
    /// manifest lists, manifests and index manifests in that format (lower-cased), tidelake
    /// only in Avro, so neither reads nor writes of such a table can agree with Java.
    pub fn check_manifest_format(&self) -> Result<()> {
        match self.get(MANIFEST_FORMAT).map(java_trim) {
            Some(format) if !format.eq_ignore_ascii_case("avro") => {
                Err(Error::Unsupported(format!(
                    "option '{MANIFEST_FORMAT}' = '{format}': tidelake reads and writes Avro \
                     manifests only (Java's default)"
                )))
            }
            _ => Ok(()),
        }
    }

    /// [`Error::Unsupported`] naming the first option that asks writers for behaviour tidelake
    /// does not implement ([`WRITE_UNSUPPORTED`]); reading such a table is fine.
    pub fn check_writable(&self) -> Result<()> {
        self.check_manifest_format()?;
        if let Some(log) = self.get(LOG_SYSTEM).map(java_trim) {
            if !log.eq_ignore_ascii_case("none") {
                return Err(Error::Unsupported(format!(
                    "writing a table with option '{LOG_SYSTEM}' = '{log}': tidelake does not \
                     send changes to a log system, so Flink's streaming reads of the log would \
                     miss them (reads are fine)"
                )));
            }
        }
        for (key, value) in self.iter() {
            let value = value.trim();
            if WRITE_SUPPORTED.contains(&key) {
                continue;
            }
            for (pattern, what) in WRITE_UNSUPPORTED {
                if key_matches(pattern, key) && !value.is_empty() {
                    return Err(Error::Unsupported(format!(
                        "writing a table with option '{key}' = '{value}': tidelake does not \
                         implement {what} (reads are fine; remove the option to write)"
                    )));
                }
            }
        }
        if self.get(PARTITION_MARK_DONE_ACTION).is_some() {
            if let Some(action) = self
                .partition_mark_done_actions()?
                .into_iter()
                .find(|a| !a.tidelake_runs())
            {
                return Err(Error::Unsupported(format!(
                    "writing a table with option '{PARTITION_MARK_DONE_ACTION}' = '{}': tidelake \
                     does not run the '{action}' action, a Java class (reads are fine; use \
                     success-file, done-partition, mark-event or http-report to write)",
                    self.get(PARTITION_MARK_DONE_ACTION).unwrap_or_default()
                )));
            }
        }
        let iceberg = self.get(METADATA_ICEBERG_STORAGE).map(str::trim);
        if iceberg.is_some_and(|v| !v.eq_ignore_ascii_case("disabled"))
            && self.deletion_vectors_enabled()?
            && self.get_i32(METADATA_ICEBERG_FORMAT_VERSION)? != Some(3)
        {
            return Err(Error::Unsupported(format!(
                "writing a table with options '{METADATA_ICEBERG_STORAGE}' and \
                 '{DELETION_VECTORS_ENABLED}': Iceberg has deletion vectors from format \
                 version 3 on (set '{METADATA_ICEBERG_FORMAT_VERSION}' = '3'; reads are fine)"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::opts;
    use super::*;

    #[test]
    fn iceberg_metadata_with_deletion_vectors_is_refused() {
        let err = opts(&[
            ("metadata.iceberg.storage", "table-location"),
            ("deletion-vectors.enabled", "true"),
        ])
        .check_writable()
        .unwrap_err();
        assert!(
            matches!(&err, Error::Unsupported(m) if m.contains("format-version' = '3'")),
            "{err:?}"
        );
        let v3 = opts(&[
            ("metadata.iceberg.storage", "table-location"),
            ("metadata.iceberg.format-version", "3"),
            ("deletion-vectors.enabled", "true"),
        ]);
        assert!(v3.check_writable().is_ok());
        for pairs in [
            [
                ("metadata.iceberg.storage", "disabled"),
                ("deletion-vectors.enabled", "true"),
            ],
            [
                ("metadata.iceberg.storage", "table-location"),
                ("deletion-vectors.enabled", "false"),
            ],
            [
                ("metadata.iceberg.format-version", "3"),
                ("deletion-vectors.enabled", "true"),
            ],
        ] {
            assert!(opts(&pairs).check_writable().is_ok(), "{pairs:?}");
        }
    }

    #[test]
    fn check_writable_names_options_writers_do_not_implement() {
        for (key, value) in [
            ("file-index.unknown-type.columns", "a,b"),
            ("partition.mark-done-action", "success-file,custom"),
            ("partition.mark-done-action", "custom"),
            ("log.system", "kafka"),
        ] {
            let err = opts(&[("bucket", "1"), (key, value)])
                .check_writable()
                .unwrap_err();
            assert!(
                matches!(&err, Error::Unsupported(m) if m.contains(&format!("'{key}'"))),
                "{key}: {err:?}"
            );
        }
        for (key, value) in [
            ("metadata.iceberg.storage", "DISABLED"),
            ("metadata.iceberg.storage", "table-location"),
            ("metadata.iceberg.storage", "Hadoop-Catalog"),
            ("metadata.iceberg.storage", "rest-catalog"),
            ("tag.automatic-creation", "process-time"),
            ("tag.automatic-creation", "batch"),
            ("sink.watermark-time-zone", "UTC"),
            ("sink.watermark-time-zone", "Asia/Shanghai"),
            ("sink.process-time-zone", "GMT+08:00"),
            ("tag.create-success-file", "true"),
            ("index-file-in-data-file-dir", "false"),
            ("index-file-in-data-file-dir", "TRUE"),
            ("full-compaction.delta-commits", "3"),
            ("file-index.read.enabled", "true"),
            ("file-index.in-manifest-threshold", "500 bytes"),
            ("file-index.bloom-filter.columns", ""),
            ("file-index.bloom-filter.columns", "a,b"),
            ("file-index.bitmap.columns", "c"),
            ("file-index.bsi.columns", "a,b"),
            ("file-index.range-bitmap.columns", "a"),
            ("changelog-producer", "lookup"),
            ("partition.mark-done-action", "success-file"),
            ("partition.end-input-to-done", "true"),
            ("record-level.expire-time", "1 d"),
            ("log.system", "NONE"),
        ] {
            assert!(
                opts(&[(key, value)]).check_writable().is_ok(),
                "{key}={value}"
            );
        }
    }

    #[test]
    fn manifest_formats_other_than_avro_are_refused() {
        for value in ["parquet", "ORC", " json "] {
            let o = opts(&[("manifest.format", value)]);
            for err in [o.check_manifest_format(), o.check_writable()] {
                let err = err.unwrap_err();
                assert!(
                    matches!(&err, Error::Unsupported(m) if m.contains("'manifest.format'")
                        && m.contains(value.trim())),
                    "{value}: {err:?}"
                );
            }
        }
        for value in ["avro", "AVRO", " avro"] {
            assert!(opts(&[("manifest.format", value)]).check_writable().is_ok());
        }
        assert!(Options::new().check_manifest_format().is_ok());
    }
}
