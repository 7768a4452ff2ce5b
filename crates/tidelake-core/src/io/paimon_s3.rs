//! Paimon's S3 file-system options (Java `S3FileIO`: `s3.*`, `s3a.*` and `fs.s3a.*` catalog
//! options, Hadoop S3A's names) as object_store storage options, so one set of catalog options
//! reaches an S3 warehouse from Java and tidelake alike.
//!
//! Invariants:
//! * the three prefixes are one (Java rewrites `s3.` and `s3a.` to `fs.s3a.`), and so are
//!   Java's mirrored spellings (`access-key` / `access.key`, `secret-key` / `secret.key`,
//!   `path-style-access` / `path.style.access`);
//! * only S3 locations (`s3://`, `s3a://`) take them; explicit storage options win over them;
//! * S3A keys with no object_store counterpart (connection pools, multipart sizes, ...) tune
//!   Java's client only and are not carried over.

use super::location::StorageOptions;

/// Java `S3FileIO.CONFIG_PREFIXES`, rewritten to the last one.
const PREFIXES: [&str; 3] = ["s3.", "s3a.", "fs.s3a."];

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

/// Whether `location` is on S3.
fn is_s3(location: &str) -> bool {
    let scheme = location
        .split_once("://")
        .map(|(s, _)| s.to_ascii_lowercase());
    matches!(scheme.as_deref(), Some("s3" | "s3a"))
}

/// The storage options of `location`: the object_store form of the S3 options among
/// `catalog` (Paimon's names), then `explicit`, which win (see the module docs).
pub fn storage_options<'a>(
    location: &str,
    catalog: impl IntoIterator<Item = (&'a str, &'a str)>,
    explicit: &StorageOptions,
) -> StorageOptions {
    let mut out = StorageOptions::new();
    if is_s3(location) {
        let mut ssl = true;
        let mut endpoint = None;
        for (key, value) in catalog {
            let Some(name) = PREFIXES.iter().find_map(|p| key.strip_prefix(p)) else {
                continue;
            };
            match name {
                "path.style.access" | "path-style-access" => {
                    let virtual_hosted = !value.trim().eq_ignore_ascii_case("true");
                    out.insert(
                        "aws_virtual_hosted_style_request".into(),
                        virtual_hosted.to_string(),
                    );
                }
                "connection.ssl.enabled" => ssl = !value.trim().eq_ignore_ascii_case("false"),
                "endpoint" => endpoint = Some(value.trim().to_string()),
                _ => {
                    if let Some((_, target)) = KEYS.iter().find(|(k, _)| *k == name) {
                        out.insert((*target).to_string(), value.to_string());
                    }
                }
            }
        }
        // S3A takes a bare host and a scheme from `connection.ssl.enabled`; object_store a URL
        if let Some(endpoint) = endpoint {
            let url = if endpoint.contains("://") {
                endpoint
            } else {
                format!("{}://{endpoint}", if ssl { "https" } else { "http" })
            };
            if url.starts_with("http://") {
                out.insert("allow_http".into(), "true".into());
            }
            out.insert("aws_endpoint".into(), url);
        }
    }
    out.extend(explicit.iter().map(|(k, v)| (k.clone(), v.clone())));
    out
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
}
