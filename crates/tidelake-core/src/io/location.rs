//! Turning a table location plus storage options into an [`ObjectStore`] and a root path.
//!
//! A location is a local path (absolute or relative), a `file:` URI (`file:/abs`, as Spark and
//! Hadoop write it, or `file:///abs`), or any URL object_store has a back-end for in this build:
//! `s3://` / `s3a://` (AWS S3 and S3-compatible servers), `gs://`, `az://` / `abfs://` /
//! `azure://` (Azure).
//!
//! Invariants:
//! * cloud stores start from the standard environment (`AmazonS3Builder::from_env` and its GCS
//!   and Azure siblings: `AWS_ACCESS_KEY_ID`, `AWS_REGION`, `AWS_ENDPOINT`, ...) and then apply
//!   the explicit storage options, which win;
//! * an option key no back-end knows is an [`Error::Invalid`] naming it, never ignored: a typo
//!   in `aws_endpoint` must not silently send requests to AWS;
//! * S3 locations also take Paimon's S3 file-system options, retries and timeouts among them
//!   ([`paimon_s3`]); other back-ends keep object_store's retry policy;
//! * an S3 store opened with [`S3Credentials`] signs every request with them, whatever
//!   credentials its options or the environment name (a REST catalog's data tokens);
//! * keys starting with `tidelake.fault.` are test-only fault injection (`instrumented`, in
//!   builds with the `fault-injection` feature) and are never passed to a back-end; a build
//!   without it (a release wheel) refuses them with [`Error::Unsupported`];
//! * local paths are normalised lexically (`.` and `..`), URL paths must not contain `..`.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::Arc;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey, AwsCredentialProvider};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreScheme, RetryConfig};
use url::Url;

#[cfg(feature = "fault-injection")]
use super::instrumented::FaultPlan;
use super::paimon_s3;
use crate::error::{Error, Result};

/// Prefix of the fault-injection storage options.
pub const FAULT_PREFIX: &str = "tidelake.fault.";

/// Storage options: back-end configuration keys (`aws_endpoint`, `aws_region`,
/// `google_service_account`, `azure_storage_account_name`, `allow_http`, ...) to values.
pub type StorageOptions = BTreeMap<String, String>;

/// Credentials that sign every request to an S3 store (see the module docs).
pub type S3Credentials = AwsCredentialProvider;

/// A resolved location.
pub(super) struct Resolved {
    pub store: Arc<dyn ObjectStore>,
    pub root: Path,
    /// Display form: `/abs/dir` or `s3://bucket/prefix`, without a trailing `/`.
    pub location: String,
    pub local_root: Option<std::path::PathBuf>,
    /// The store itself when it is the plain local filesystem (no fault injection wrapped
    /// around it), for reads that skip object_store's blocking-pool hop.
    pub local_fs: Option<Arc<LocalFileSystem>>,
}

/// Resolve `location` with `options`, its S3 requests signed with `credentials` when given
/// (see the module docs).
pub(super) fn resolve(
    location: &str,
    options: &StorageOptions,
    credentials: Option<&S3Credentials>,
) -> Result<Resolved> {
    let (faults, backend): (StorageOptions, StorageOptions) = options
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .partition(|(k, _)| k.starts_with(FAULT_PREFIX));
    let mut resolved = match remote_url(location)? {
        Some(url) => resolve_url(location, &url, &backend, credentials)?,
        None if credentials.is_some() => {
            return Err(Error::invalid(format!(
                "S3 credentials do not apply to the local path '{location}'"
            )))
        }
        None => {
            if let Some(key) = backend.keys().next() {
                return Err(Error::invalid(format!(
                    "storage option '{key}' does not apply to the local path '{location}'"
                )));
            }
            resolve_local(location)?
        }
    };
    inject_faults(&mut resolved, &faults)?;
    Ok(resolved)
}

/// Wrap the store in the fault the `tidelake.fault.*` options describe, if any.
#[cfg(feature = "fault-injection")]
fn inject_faults(resolved: &mut Resolved, faults: &StorageOptions) -> Result<()> {
    if let Some(plan) = FaultPlan::from_options(faults)? {
        resolved.store = plan.wrap(resolved.store.clone());
        resolved.local_fs = None;
    }
    Ok(())
}

/// Fault injection is not in this build: any `tidelake.fault.*` option is refused.
#[cfg(not(feature = "fault-injection"))]
fn inject_faults(_: &mut Resolved, faults: &StorageOptions) -> Result<()> {
    match faults.keys().next() {
        None => Ok(()),
        Some(key) => Err(Error::Unsupported(format!(
            "storage option '{key}': fault injection is for tests only and not in this build"
        ))),
    }
}

/// The URL of a non-local location, `None` for a local path or `file://` URL.
fn remote_url(location: &str) -> Result<Option<Url>> {
    if location.starts_with("file:") || !location.contains("://") {
        return Ok(None);
    }
    let url = Url::parse(location)
        .map_err(|e| Error::invalid(format!("bad location URL '{location}': {e}")))?;
    Ok(Some(url))
}

/// The path of a local location: itself, or the absolute path of a `file:` URI in any of its
/// forms (`file:/abs`, as Spark and Hadoop write it, `file:///abs`, `file://localhost/abs`).
/// The path is taken as written (no percent-decoding), as before `file:/` was understood.
fn local_path(location: &str) -> Result<&str> {
    let Some(rest) = location.strip_prefix("file:") else {
        return Ok(location);
    };
    let path = match rest.strip_prefix("//") {
        Some(authority_and_path) => {
            let at = authority_and_path
                .find('/')
                .unwrap_or(authority_and_path.len());
            let (host, path) = authority_and_path.split_at(at);
            if !host.is_empty() && !host.eq_ignore_ascii_case("localhost") {
                return Err(Error::invalid(format!(
                    "bad location '{location}': a file: URI names a local path, not host '{host}'"
                )));
            }
            path
        }
        None => rest,
    };
    if !path.starts_with('/') {
        return Err(Error::invalid(format!(
            "bad location '{location}': a file: URI needs an absolute path"
        )));
    }
    Ok(path)
}

fn resolve_local(location: &str) -> Result<Resolved> {
    let local = local_path(location)?;
    let abs = normalize(
        &std::path::absolute(local)
            .map_err(|e| Error::invalid(format!("bad path '{location}': {e}")))?,
    );
    let root = Path::from_absolute_path(&abs)
        .map_err(|e| Error::invalid(format!("bad path '{location}': {e}")))?;
    let local_fs = Arc::new(LocalFileSystem::new());
    Ok(Resolved {
        store: local_fs.clone(),
        root,
        location: abs.to_string_lossy().trim_end_matches('/').to_string(),
        local_root: Some(abs),
        local_fs: Some(local_fs),
    })
}

fn resolve_url(
    location: &str,
    url: &Url,
    options: &StorageOptions,
    credentials: Option<&S3Credentials>,
) -> Result<Resolved> {
    let bad = |e: &dyn std::fmt::Display| Error::invalid(format!("bad location '{location}': {e}"));
    // `s3a://` is what Hadoop-configured Paimon deployments write; the bucket layout is S3's.
    let (scheme, url) = if url.scheme() == "s3a" {
        let mut s3 = url.clone();
        s3.set_scheme("s3")
            .map_err(|()| bad(&"cannot rewrite s3a:// to s3://"))?;
        (ObjectStoreScheme::AmazonS3, s3)
    } else {
        let scheme = ObjectStoreScheme::parse(url)
            .map_err(|_| unsupported(location, url))?
            .0;
        (scheme, url.clone())
    };
    let (_, root) = ObjectStoreScheme::parse(&url).map_err(|e| bad(&e))?;
    // The URL parser resolves dot segments silently: look at what the caller wrote.
    let written_path = location.split_once("://").map_or("", |(_, rest)| rest);
    if written_path
        .split('/')
        .any(|s| s == ".." || s == "." || s.eq_ignore_ascii_case("%2e%2e"))
    {
        return Err(bad(&"'.' and '..' segments are not allowed in URLs"));
    }
    // Each cloud builder: the environment, the URL, then every option (unknown keys refused),
    // then anything else the back-end takes.
    macro_rules! cloud {
        ($builder:ty, $key:ty, $options:expr, $retry:expr) => {
            cloud!($builder, $key, $options, $retry, |b| b)
        };
        ($builder:ty, $key:ty, $options:expr, $retry:expr, $finish:expr) => {
            Arc::new(
                $finish(
                    configured(
                        <$builder>::from_env().with_url(url.as_str()),
                        $options,
                        |b, k: $key, v| b.with_config(k, v),
                    )?
                    .with_retry($retry),
                )
                .build()
                .map_err(|e| bad(&e))?,
            )
        };
    }
    if credentials.is_some() && scheme != ObjectStoreScheme::AmazonS3 {
        return Err(Error::invalid(format!(
            "S3 credentials do not apply to '{location}'"
        )));
    }
    let store: Arc<dyn ObjectStore> = match scheme {
        ObjectStoreScheme::AmazonS3 => {
            let (retry, options) =
                paimon_s3::retry_config(&paimon_s3::translate(location, options)?)?;
            cloud!(
                AmazonS3Builder,
                AmazonS3ConfigKey,
                &options,
                retry,
                |b: AmazonS3Builder| match credentials {
                    Some(c) => b.with_credentials(c.clone()),
                    None => b,
                }
            )
        }
        ObjectStoreScheme::GoogleCloudStorage => {
            cloud!(
                GoogleCloudStorageBuilder,
                GoogleConfigKey,
                options,
                RetryConfig::default()
            )
        }
        ObjectStoreScheme::MicrosoftAzure => {
            cloud!(
                MicrosoftAzureBuilder,
                AzureConfigKey,
                options,
                RetryConfig::default()
            )
        }
        _ => return Err(unsupported(location, &url)),
    };
    Ok(Resolved {
        store,
        root,
        location: location.trim_end_matches('/').to_string(),
        local_root: None,
        local_fs: None,
    })
}

/// The object path of absolute `location` on the storage of the root at `root_location`
/// (`local`: the local filesystem), and the local directory it names there: the same
/// filesystem for `file:` locations, the same scheme (`s3a` is `s3`) and bucket or container
/// otherwise. [`Error::Unsupported`] for a location on other storage, [`Error::Invalid`] for
/// `.` or `..` segments. Segments are taken verbatim, as root-relative paths are.
pub(super) fn on_same_storage(
    root_location: &str,
    local: bool,
    location: &str,
) -> Result<(Path, Option<std::path::PathBuf>)> {
    let other = || {
        Error::Unsupported(format!(
            "'{location}' is not on the storage of '{root_location}': tidelake reaches files \
             on the table's own storage only"
        ))
    };
    let path = if local {
        if !location.starts_with("file:") {
            return Err(other());
        }
        local_path(location)?
    } else {
        let (scheme, authority, path) = split_url(location).ok_or_else(other)?;
        let (root_scheme, root_authority, _) = split_url(root_location).ok_or_else(other)?;
        let canonical = |s: &str| {
            let s = s.to_ascii_lowercase();
            if s == "s3a" {
                "s3".to_string()
            } else {
                s
            }
        };
        if canonical(scheme) != canonical(root_scheme) || authority != root_authority {
            return Err(other());
        }
        path
    };
    if path.split('/').any(|s| s == ".." || s == ".") {
        return Err(Error::invalid(format!(
            "bad location '{location}': '.' and '..' segments are not allowed"
        )));
    }
    let root = super::join_verbatim(Path::default(), path);
    Ok((root, local.then(|| std::path::PathBuf::from(path))))
}

/// `scheme://authority/path` split in three (the path with its leading `/`).
fn split_url(location: &str) -> Option<(&str, &str, &str)> {
    let (scheme, rest) = location.split_once("://")?;
    let at = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(at);
    Some((scheme, authority, path))
}

fn unsupported(location: &str, url: &Url) -> Error {
    Error::Unsupported(format!(
        "storage scheme '{}://' of '{location}' (supported: local paths, file://, s3://, s3a://, gs://, az://, abfs://)",
        url.scheme()
    ))
}

/// Apply every option to a builder; a key the back-end does not know is an error.
fn configured<B, K: FromStr>(
    builder: B,
    options: &StorageOptions,
    with: impl Fn(B, K, &str) -> B,
) -> Result<B> {
    options.iter().try_fold(builder, |b, (key, value)| {
        match K::from_str(&key.to_ascii_lowercase()) {
            Ok(k) => Ok(with(b, k, value)),
            Err(_) => Err(Error::invalid(format!(
                "unknown storage option '{key}' for this storage scheme"
            ))),
        }
    })
}

/// Resolve `.` and `..` lexically (the object-store path model rejects them); symlinks are
/// left alone.
fn normalize(path: &std::path::Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut out = std::path::PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}
