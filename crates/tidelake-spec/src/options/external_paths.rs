//! External data paths (Java `CoreOptions.DATA_FILE_EXTERNAL_PATHS`,
//! `DATA_FILE_EXTERNAL_PATHS_STRATEGY`, `DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS`), parsed once
//! into the roots new data files go to.
//!
//! Java 1.3.1 rules kept here (`AbstractFileStore.createExternalPaths`):
//! * `data-file.external-paths` is a comma-separated list of root URIs, each trimmed; every
//!   root needs a scheme (`file:/...`, `s3://bucket/...`);
//! * `data-file.external-paths.strategy` decides whether they are used: `none` (the default:
//!   not even when roots are listed), `round-robin` (every root), `specific-fs` (only the roots
//!   whose scheme equals `data-file.external-paths.specific-fs`, case-insensitively, which
//!   must then be set);
//! * a strategy other than `none` that leaves no root is an error;
//! * roots are written as Java's `Path` prints them ([`java_path`]): `file:///tmp/x/` becomes
//!   `file:/tmp/x`, so `_EXTERNAL_PATH` values equal Java's.
//!
//! A new data file of a bucket goes to `<root>/<bucket directory relative to the table>/<name>`
//! (Java `ExternalPathProvider`); which root is chosen per file is the writers' business.

use std::str::FromStr;

use super::{java_split, java_trim, Options};
use crate::error::{Error, Result};

pub const DATA_FILE_EXTERNAL_PATHS: &str = "data-file.external-paths";
pub const DATA_FILE_EXTERNAL_PATHS_STRATEGY: &str = "data-file.external-paths.strategy";
pub const DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS: &str = "data-file.external-paths.specific-fs";

/// `data-file.external-paths.strategy`: which external roots new data files go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExternalPathStrategy {
    /// External roots are not used (data files go under the table directory).
    None,
    /// Only the roots of the file system `data-file.external-paths.specific-fs` names.
    SpecificFs,
    /// Every root, one after the other.
    RoundRobin,
}

option_enum!(ExternalPathStrategy, DATA_FILE_EXTERNAL_PATHS_STRATEGY, {
    None => "none",
    SpecificFs => "specific-fs",
    RoundRobin => "round-robin",
});

impl Options {
    /// `data-file.external-paths.strategy` (default `none`).
    pub fn external_path_strategy(&self) -> Result<ExternalPathStrategy> {
        self.get_enum(
            DATA_FILE_EXTERNAL_PATHS_STRATEGY,
            ExternalPathStrategy::None,
        )
    }

    /// Every root `data-file.external-paths` lists, as Java's `Path` prints it, whatever the
    /// strategy (where files of the table may have been written); empty when unset.
    pub fn data_file_external_roots(&self) -> Result<Vec<String>> {
        let Some(value) = self.get(DATA_FILE_EXTERNAL_PATHS) else {
            return Ok(Vec::new());
        };
        java_split(value)
            .into_iter()
            .map(|p| {
                let root = java_trim(p);
                java_path(root).map_err(|reason| {
                    Error::Invalid(format!(
                        "option '{DATA_FILE_EXTERNAL_PATHS}': root '{root}' {reason}"
                    ))
                })
            })
            .collect()
    }

    /// The roots new data files go to (see the module docs): empty when the strategy is
    /// `none` or no root is listed; [`Error::Invalid`] naming the option at fault otherwise.
    pub fn data_file_write_roots(&self) -> Result<Vec<String>> {
        let strategy = self.external_path_strategy()?;
        let roots = self.data_file_external_roots()?;
        if roots.is_empty() || strategy == ExternalPathStrategy::None {
            return Ok(Vec::new());
        }
        let roots = match strategy {
            ExternalPathStrategy::SpecificFs => {
                let fs = self
                    .get(DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS)
                    .ok_or_else(|| {
                        Error::Invalid(format!(
                            "option '{DATA_FILE_EXTERNAL_PATHS_STRATEGY}' = 'specific-fs' needs \
                         '{DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS}', the scheme of the roots to use"
                        ))
                    })?;
                let picked: Vec<String> = roots
                    .into_iter()
                    .filter(|r| scheme(r).is_some_and(|s| s.eq_ignore_ascii_case(fs)))
                    .collect();
                if picked.is_empty() {
                    return Err(Error::Invalid(format!(
                        "option '{DATA_FILE_EXTERNAL_PATHS}': no root has the scheme \
                         '{fs}' that '{DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS}' names"
                    )));
                }
                picked
            }
            _ => roots,
        };
        Ok(roots)
    }
}

/// The scheme of a location (`s3` of `s3://b/p`), `None` without one. Like a URI's: a letter,
/// then letters, digits, `+`, `-` or `.`, before the first `:` (and before any `/`).
pub fn scheme(location: &str) -> Option<&str> {
    let (scheme, _) = location.split_once(':')?;
    let mut chars = scheme.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some(scheme)
}

/// `location` as Java Paimon's `Path` prints it: repeated `/` collapsed, no trailing `/`, and
/// an empty authority dropped (`file:///tmp/x/` is `file:/tmp/x`). `Err` (a reason) when it
/// has no scheme or no path.
pub fn java_path(location: &str) -> std::result::Result<String, &'static str> {
    let Some(scheme) = scheme(location) else {
        return Err("has no scheme (write file:/..., s3://bucket/...)");
    };
    let rest = &location[scheme.len() + 1..];
    let (authority, path) = match rest.strip_prefix("//") {
        Some(after) => after.split_at(after.find('/').unwrap_or(after.len())),
        None => ("", rest),
    };
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if segments.is_empty() && authority.is_empty() {
        return Err("has no path");
    }
    let path = format!("/{}", segments.join("/"));
    Ok(if authority.is_empty() {
        format!("{scheme}:{path}")
    } else {
        format!(
            "{scheme}://{authority}{}",
            if path == "/" { "" } else { &path }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::opts;
    use super::*;

    const TWO: &str = "file:///tmp/a/, s3://bucket/b";

    #[test]
    fn strategy_none_ignores_the_roots() {
        assert!(opts(&[]).data_file_write_roots().unwrap().is_empty());
        let listed = opts(&[(DATA_FILE_EXTERNAL_PATHS, TWO)]);
        assert_eq!(
            listed.external_path_strategy().unwrap(),
            ExternalPathStrategy::None
        );
        assert!(listed.data_file_write_roots().unwrap().is_empty());
        // every listed root is still where files of the table may be
        assert_eq!(
            listed.data_file_external_roots().unwrap(),
            ["file:/tmp/a", "s3://bucket/b"]
        );
    }

    #[test]
    fn round_robin_uses_every_root_as_java_prints_it() {
        let o = opts(&[
            (
                DATA_FILE_EXTERNAL_PATHS,
                "file:///tmp/a/, s3://bucket//b/c/,",
            ),
            (DATA_FILE_EXTERNAL_PATHS_STRATEGY, "Round-Robin"),
        ]);
        assert_eq!(
            o.data_file_write_roots().unwrap(),
            ["file:/tmp/a", "s3://bucket/b/c"]
        );
    }

    #[test]
    fn specific_fs_keeps_the_roots_of_its_scheme() {
        let o = opts(&[
            (DATA_FILE_EXTERNAL_PATHS, TWO),
            (DATA_FILE_EXTERNAL_PATHS_STRATEGY, "specific-fs"),
            (DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS, "S3"),
        ]);
        assert_eq!(o.data_file_write_roots().unwrap(), ["s3://bucket/b"]);
        let none_left = opts(&[
            (DATA_FILE_EXTERNAL_PATHS, TWO),
            (DATA_FILE_EXTERNAL_PATHS_STRATEGY, "specific-fs"),
            (DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS, "oss"),
        ]);
        let err = none_left.data_file_write_roots().unwrap_err().to_string();
        assert!(err.contains(DATA_FILE_EXTERNAL_PATHS), "{err}");
        let unnamed = opts(&[
            (DATA_FILE_EXTERNAL_PATHS, TWO),
            (DATA_FILE_EXTERNAL_PATHS_STRATEGY, "specific-fs"),
        ]);
        let err = unnamed.data_file_write_roots().unwrap_err().to_string();
        assert!(err.contains(DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS), "{err}");
    }

    #[test]
    fn bad_values_name_their_option() {
        for (o, key) in [
            (
                opts(&[
                    (DATA_FILE_EXTERNAL_PATHS, TWO),
                    (DATA_FILE_EXTERNAL_PATHS_STRATEGY, "random"),
                ]),
                DATA_FILE_EXTERNAL_PATHS_STRATEGY,
            ),
            (
                opts(&[
                    (DATA_FILE_EXTERNAL_PATHS, "/tmp/no-scheme"),
                    (DATA_FILE_EXTERNAL_PATHS_STRATEGY, "round-robin"),
                ]),
                DATA_FILE_EXTERNAL_PATHS,
            ),
            (
                opts(&[
                    (DATA_FILE_EXTERNAL_PATHS, "file:/a,,file:/b"),
                    (DATA_FILE_EXTERNAL_PATHS_STRATEGY, "round-robin"),
                ]),
                DATA_FILE_EXTERNAL_PATHS,
            ),
        ] {
            let err = o.data_file_write_roots().unwrap_err();
            assert!(
                matches!(&err, Error::Invalid(m) if m.contains(&format!("'{key}'"))),
                "{err:?}"
            );
        }
    }

    #[test]
    fn java_paths() {
        assert_eq!(java_path("file:/tmp/x").unwrap(), "file:/tmp/x");
        assert_eq!(java_path("file:///tmp//x/").unwrap(), "file:/tmp/x");
        assert_eq!(java_path("s3://b").unwrap(), "s3://b");
        assert_eq!(java_path("s3a://b/p/").unwrap(), "s3a://b/p");
        assert!(java_path("relative/dir").is_err());
        assert!(java_path("file:").is_err());
        assert_eq!(scheme("dt=1:2/x"), None);
        assert_eq!(scheme("oss://b"), Some("oss"));
    }
}
