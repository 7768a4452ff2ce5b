//! Paimon's S3 file-system options (Java `S3FileIO`: `s3.*`, `s3a.*` and `fs.s3a.*` catalog
//! options, Hadoop S3A's names) as object_store storage options, so one set of catalog options
//! reaches an S3 warehouse from Java and tidelake alike; the storage options of an S3 location
//! take the same names ([`translate`]).
//!
//! Invariants:
//! * the three prefixes are one (Java rewrites `s3.` and `s3a.` to `fs.s3a.`), and so are
//!   Java's mirrored spellings (`access-key` / `access.key`, `secret-key` / `secret.key`,
//!   `path-style-access` / `path.style.access`);
//! * only S3 locations (`s3://`, `s3a://`) take them; explicit storage options win over catalog
//!   options, and object_store's own key for a setting over Paimon's name for it;
//! * in catalog options, S3A keys with no object_store counterpart (connection pools,
//!   multipart sizes, ...) tune Java's client only and are not carried over; in storage options
//!   they are unknown keys, refused naming them;
//! * retries and timeouts take S3A's names and Hadoop's values (a bare number of milliseconds,
//!   or a number with a unit `ns`, `us`, `ms`, `s`, `m`, `h`, `d`): `attempts.maximum` and
//!   `retry.interval` become object_store's `RetryConfig` ([`retry_config`]; object_store has no
//!   keys for them, so they are kept under their `fs.s3a.` names until then),
//!   `connection.establish.timeout` and `connection.request.timeout` its client's
//!   `connect_timeout` and `timeout`; a timeout of `0` (S3A: none) keeps object_store's default,
//!   since a request that never ends is never retried. A value that does not parse is an
//!   [`Error::Invalid`] naming the key.

use std::time::Duration;

use object_store::RetryConfig;

use super::location::StorageOptions;
use crate::error::{Error, Result};

/// Java `S3FileIO.CONFIG_PREFIXES`, rewritten to the last one.
const PREFIXES: [&str; 3] = ["s3.", "s3a.", "fs.s3a."];

/// The prefix retry options are kept under until [`retry_config`] takes them.
const KEPT: &str = "fs.s3a.";

/// S3A option names (after the prefix, both of Java's spellings) to object_store keys.
const KEYS: [(&str, &str); 7] = [
    ("access-key", "aws_access_key_id"),
    ("access.key", "aws_access_key_id"),
    ("secret-key", "aws_secret_access_key"),
    ("secret.key", "aws_secret_access_key"),
    ("session.token", "aws_session_token"),
    ("endpoint.region", "aws_region"),
    ("endpoint", "aws_endpoint"),
];

/// S3A timeouts (after the prefix) to object_store's client keys.
const TIMEOUTS: [(&str, &str); 2] = [
    ("connection.establish.timeout", "connect_timeout"),
    ("connection.request.timeout", "timeout"),
];

/// S3A's retries of one request (object_store `RetryConfig::max_retries`).
const ATTEMPTS: &str = "attempts.maximum";
/// S3A's first wait between retries (object_store `BackoffConfig::init_backoff`).
const INTERVAL: &str = "retry.interval";

/// Whether `location` is on S3.
pub(crate) fn is_s3(location: &str) -> bool {
    let scheme = location
        .split_once("://")
        .map(|(s, _)| s.to_ascii_lowercase());
    matches!(scheme.as_deref(), Some("s3" | "s3a"))
}

/// The S3A name of `key` (after its prefix), if it has one of Paimon's S3 prefixes.
fn s3a_name(key: &str) -> Option<&str> {
    PREFIXES.iter().find_map(|p| key.strip_prefix(p))
}

/// A Hadoop time duration (`Configuration.getTimeDuration`, milliseconds by default).
fn hadoop_duration(key: &str, value: &str) -> Result<Duration> {
    let value = value.trim();
    let split = value
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let per_unit = match unit.trim().to_ascii_lowercase().as_str() {
        "ns" => Duration::from_nanos(1),
        "us" => Duration::from_micros(1),
        "" | "ms" => Duration::from_millis(1),
        "s" => Duration::from_secs(1),
        "m" => Duration::from_secs(60),
        "h" => Duration::from_secs(3600),
        "d" => Duration::from_secs(86_400),
        _ => {
            return Err(bad_value(
                key,
                value,
                "a duration such as 500ms, 5s or 5000",
            ))
        }
    };
    number
        .parse::<u32>()
        .ok()
        .and_then(|n| per_unit.checked_mul(n))
        .ok_or_else(|| bad_value(key, value, "a duration such as 500ms, 5s or 5000"))
}

fn bad_value(key: &str, value: &str, expected: &str) -> Error {
    Error::invalid(format!(
        "storage option '{key}' = '{value}': expected {expected}"
    ))
}

/// Paimon's S3 options turned into object_store keys (see the module docs).
#[derive(Default)]
struct Translation {
    out: StorageOptions,
    ssl: bool,
    endpoint: Option<String>,
}

impl Translation {
    fn new() -> Translation {
        Translation {
            ssl: true,
            ..Translation::default()
        }
    }

    /// Take `key` (S3A name `name`); `false` when Paimon's S3 options have no such key.
    fn add(&mut self, key: &str, name: &str, value: &str) -> Result<bool> {
        match name {
            "path.style.access" | "path-style-access" => {
                let virtual_hosted = !value.trim().eq_ignore_ascii_case("true");
                self.out.insert(
                    "aws_virtual_hosted_style_request".into(),
                    virtual_hosted.to_string(),
                );
            }
            "connection.ssl.enabled" => self.ssl = !value.trim().eq_ignore_ascii_case("false"),
            "endpoint" => self.endpoint = Some(value.trim().to_string()),
            ATTEMPTS => {
                let attempts: usize = value
                    .trim()
                    .parse()
                    .map_err(|_| bad_value(key, value, "a number of retries"))?;
                self.out
                    .insert(format!("{KEPT}{ATTEMPTS}"), attempts.to_string());
            }
            INTERVAL => {
                let interval = hadoop_duration(key, value)?;
                self.out.insert(
                    format!("{KEPT}{INTERVAL}"),
                    format!("{}ms", interval.as_millis()),
                );
            }
            _ => {
                if let Some((_, target)) = TIMEOUTS.iter().find(|(k, _)| *k == name) {
                    let timeout = hadoop_duration(key, value)?;
                    if !timeout.is_zero() {
                        let ms = timeout.as_millis().max(1);
                        self.out.insert((*target).to_string(), format!("{ms}ms"));
                    }
                } else if let Some((_, target)) = KEYS.iter().find(|(k, _)| *k == name) {
                    self.out.insert((*target).to_string(), value.to_string());
                } else {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    fn finish(mut self) -> StorageOptions {
        // S3A takes a bare host and a scheme from `connection.ssl.enabled`; object_store a URL
        if let Some(endpoint) = self.endpoint {
            let url = if endpoint.contains("://") {
                endpoint
            } else {
                format!("{}://{endpoint}", if self.ssl { "https" } else { "http" })
            };
            if url.starts_with("http://") {
                self.out.insert("allow_http".into(), "true".into());
            }
            self.out.insert("aws_endpoint".into(), url);
        }
        self.out
    }
}

/// The storage options of `location`: the object_store form of the S3 options among
/// `catalog` (Paimon's names; others are skipped), then `explicit` ([`translate`]d), which win
/// (see the module docs).
pub fn storage_options<'a>(
    location: &str,
    catalog: impl IntoIterator<Item = (&'a str, &'a str)>,
    explicit: &StorageOptions,
) -> Result<StorageOptions> {
    let mut out = StorageOptions::new();
    if is_s3(location) {
        let mut translation = Translation::new();
        for (key, value) in catalog {
            if let Some(name) = s3a_name(key) {
                translation.add(key, name, value)?;
            }
        }
        out = translation.finish();
    }
    out.extend(translate(location, explicit)?);
    Ok(out)
}

/// The storage options of `location` with Paimon's S3 names turned into object_store keys
/// (on S3 locations); every other key as it is, winning over those (a key no back-end knows
/// is refused when the store is built, naming it).
pub fn translate(location: &str, options: &StorageOptions) -> Result<StorageOptions> {
    if !is_s3(location) {
        return Ok(options.clone());
    }
    let mut translation = Translation::new();
    let mut rest = StorageOptions::new();
    for (key, value) in options {
        let taken = match s3a_name(key) {
            Some(name) => translation.add(key, name, value)?,
            None => false,
        };
        if !taken {
            rest.insert(key.clone(), value.clone());
        }
    }
    let mut out = translation.finish();
    out.extend(rest);
    Ok(out)
}

/// The retry policy of a [`translate`]d S3 location's client, and its other options: object_store's
/// defaults (10 retries, the first after 100 ms, doubling with jitter up to 15 s, none started
/// after 3 minutes) with S3A's `attempts.maximum` and `retry.interval`.
pub fn retry_config(options: &StorageOptions) -> Result<(RetryConfig, StorageOptions)> {
    let mut retry = RetryConfig::default();
    let mut rest = StorageOptions::new();
    for (key, value) in options {
        match key.strip_prefix(KEPT) {
            Some(ATTEMPTS) => {
                retry.max_retries = value
                    .parse()
                    .map_err(|_| bad_value(key, value, "a number of retries"))?;
            }
            Some(INTERVAL) => {
                let interval = hadoop_duration(key, value)?;
                retry.backoff.init_backoff = interval;
                retry.backoff.max_backoff = retry.backoff.max_backoff.max(interval);
            }
            _ => {
                rest.insert(key.clone(), value.clone());
            }
        }
    }
    Ok((retry, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(
        location: &str,
        catalog: &[(&str, &str)],
        explicit: &[(&str, &str)],
    ) -> Vec<(String, String)> {
        let explicit: StorageOptions = explicit
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        storage_options(location, catalog.iter().copied(), &explicit)
            .unwrap()
            .into_iter()
            .collect()
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn every_prefix_and_spelling_maps_to_one_key() {
        let catalog = [
            ("s3.endpoint", "http://127.0.0.1:9000"),
            ("s3a.access-key", "ak"),
            ("fs.s3a.secret.key", "sk"),
            ("s3.path.style.access", "true"),
            ("s3.endpoint.region", "eu-west-1"),
            ("fs.s3a.session.token", "st"),
            ("fs.s3a.connection.maximum", "100"),
            ("warehouse", "s3://b/wh"),
            ("metastore", "jdbc"),
        ];
        assert_eq!(
            of("s3://b/wh", &catalog, &[]),
            pairs(&[
                ("allow_http", "true"),
                ("aws_access_key_id", "ak"),
                ("aws_endpoint", "http://127.0.0.1:9000"),
                ("aws_region", "eu-west-1"),
                ("aws_secret_access_key", "sk"),
                ("aws_session_token", "st"),
                ("aws_virtual_hosted_style_request", "false"),
            ])
        );
    }

    #[test]
    fn a_bare_endpoint_takes_its_scheme_from_the_ssl_option() {
        let bare = [("s3.endpoint", "minio:9000")];
        assert_eq!(
            of("s3a://b/wh", &bare, &[]),
            pairs(&[("aws_endpoint", "https://minio:9000")])
        );
        let plain = [
            ("s3.endpoint", "minio:9000"),
            ("s3.connection.ssl.enabled", "false"),
        ];
        assert_eq!(
            of("s3://b/wh", &plain, &[]),
            pairs(&[
                ("allow_http", "true"),
                ("aws_endpoint", "http://minio:9000")
            ])
        );
    }

    #[test]
    fn explicit_options_win_and_other_locations_take_none() {
        let catalog = [
            ("s3.access-key", "from-catalog"),
            ("s3.endpoint.region", "r"),
        ];
        assert_eq!(
            of("s3://b/wh", &catalog, &[("aws_access_key_id", "explicit")]),
            pairs(&[("aws_access_key_id", "explicit"), ("aws_region", "r")])
        );
        assert_eq!(of("/tmp/wh", &catalog, &[]), vec![]);
        assert_eq!(
            of("gs://b/wh", &catalog, &[("google_service_account", "x")]),
            pairs(&[("google_service_account", "x")])
        );
    }

    #[test]
    fn retries_and_timeouts_take_hadoop_values() {
        let catalog = [
            ("s3.attempts.maximum", "3"),
            ("fs.s3a.retry.interval", "250"),
            ("s3a.connection.request.timeout", "2s"),
            ("s3.connection.establish.timeout", "0"),
            ("fs.s3a.retry.limit", "7"),
        ];
        let options = of("s3://b/wh", &catalog, &[("timeout", "9s")]);
        assert_eq!(
            options,
            pairs(&[
                ("fs.s3a.attempts.maximum", "3"),
                ("fs.s3a.retry.interval", "250ms"),
                ("timeout", "9s"),
            ])
        );
        let (retry, rest) = retry_config(&options.into_iter().collect()).unwrap();
        assert_eq!(retry.max_retries, 3);
        assert_eq!(retry.backoff.init_backoff, Duration::from_millis(250));
        assert_eq!(
            rest.into_iter().collect::<Vec<_>>(),
            pairs(&[("timeout", "9s")])
        );
    }

    #[test]
    fn storage_options_take_paimon_names_and_refuse_bad_values() {
        let explicit: StorageOptions = [
            ("s3.endpoint", "http://h:9000"),
            ("s3.connection.establish.timeout", "1m"),
            ("s3.no-such-key", "x"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(
            translate("s3a://b/t", &explicit)
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>(),
            pairs(&[
                ("allow_http", "true"),
                ("aws_endpoint", "http://h:9000"),
                ("connect_timeout", "60000ms"),
                ("s3.no-such-key", "x"),
            ])
        );
        assert_eq!(translate("gs://b/t", &explicit).unwrap(), explicit);
        for (key, value) in [
            ("s3.attempts.maximum", "-1"),
            ("s3.retry.interval", "soon"),
            ("fs.s3a.connection.request.timeout", "5 parsecs"),
        ] {
            let bad: StorageOptions = [(key.to_string(), value.to_string())].into();
            let message = translate("s3://b/t", &bad).unwrap_err().to_string();
            assert!(
                message.contains(key) && message.contains(value),
                "{message}"
            );
        }
    }
}
