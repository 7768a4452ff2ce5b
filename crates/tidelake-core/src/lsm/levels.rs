//! The LSM levels of one bucket (Java `Levels`, `SortedRun`, `LevelSortedRun`).
//!
//! Level 0 holds freshly written files, each its own sorted run, ordered newest first (larger
//! `_MAX_SEQUENCE_NUMBER` first, then by file name, as Java's level-0 `TreeSet`); every level
//! 1..=max is one sorted run. [`Levels::runs`] lists the runs in the order the picker expects.
//!
//! The number of levels is `num-levels`, raised to hold the deepest level present (Java
//! restores `max(num-levels, deepest + 1)`). Key ranges are not checked by [`Levels`]: the
//! rewriter re-partitions whatever it reads by key range, so a level that overlaps (written by
//! a foreign writer) is still compacted correctly. [`overlapping_files`] finds such overlaps
//! (commit conflict checks, `maintenance::verify`).

use std::cmp::Ordering;
use std::collections::HashMap;

use tidelake_spec::binary_row::decode_framed;
use tidelake_spec::datum::Datum;
use tidelake_spec::manifest::{DataFileMeta, ManifestEntry};
use tidelake_spec::types::DataType;

use super::key::compare_keys;
use super::picker::{CompactUnit, RunStat};
use crate::error::{Error, Result};
use crate::scan::split::{DeletionFileRef, SplitFile};

/// Files of one level >= 1 of one (partition, bucket) whose key ranges overlap: every pair of
/// neighbours, once each level's files are sorted by min key, where the first's max key is not
/// below the second's min key (a level >= 1 is one sorted run). `key_types` are the trimmed
/// primary key's; a key range that does not decode is [`Error::Corrupt`].
pub(crate) fn overlapping_files<'a>(
    entries: impl IntoIterator<Item = &'a ManifestEntry>,
    key_types: &[DataType],
) -> Result<Vec<(&'a ManifestEntry, &'a ManifestEntry)>> {
    type KeyRange<'a> = (Vec<Datum>, Vec<Datum>, &'a ManifestEntry);
    let mut levels: HashMap<(&[u8], i32, i32), Vec<KeyRange>> = HashMap::new();
    for e in entries.into_iter().filter(|e| e.file.level >= 1) {
        let decode = |bytes: &[u8]| {
            decode_framed(bytes, key_types).map_err(|err| {
                Error::corrupt(
                    format!("manifest entry of {}", e.file.file_name),
                    format!("cannot decode its key range: {err}"),
                )
            })
        };
        let range = (decode(&e.file.min_key)?, decode(&e.file.max_key)?, e);
        levels
            .entry((e.partition.as_slice(), e.bucket, e.file.level))
            .or_default()
            .push(range);
    }
    let mut out = Vec::new();
    for files in levels.values_mut() {
        files.sort_by(|a, b| compare_keys(&a.0, &b.0));
        for pair in files.windows(2) {
            if compare_keys(&pair[0].1, &pair[1].0) != Ordering::Less {
                out.push((pair[0].2, pair[1].2));
            }
        }
    }
    Ok(out)
}

/// A live data file of the bucket, with what reading it needs.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelFile {
    pub meta: DataFileMeta,
    /// Path relative to the table root (or the file's external path).
    pub path: String,
    pub deletion: Option<DeletionFileRef>,
}

impl LevelFile {
    /// The reader's view of the file.
    pub fn split_file(&self) -> SplitFile {
        SplitFile::new(self.path.clone(), &self.meta, self.deletion.clone())
    }
}

/// A sorted run: one level-0 file, or every file of one level >= 1.
#[derive(Debug, Clone, Copy)]
pub struct LevelRun<'a> {
    pub level: i32,
    pub files: &'a [LevelFile],
}

impl LevelRun<'_> {
    pub fn stat(&self) -> RunStat {
        let size = self
            .files
            .iter()
            .map(|f| u64::try_from(f.meta.file_size).unwrap_or(0))
            .sum();
        RunStat {
            level: self.level,
            size,
        }
    }
}

/// The files of one bucket by level.
#[derive(Debug, Clone)]
pub struct Levels {
    /// `levels[0]` is level 0 (newest first); `levels[i]` the files of level `i`.
    levels: Vec<Vec<LevelFile>>,
}

impl Levels {
    /// Arrange `files` into `max(num_levels, deepest level + 1)` levels (at least 2).
    pub fn new(files: Vec<LevelFile>, num_levels: i32) -> Result<Levels> {
        let deepest = files.iter().map(|f| f.meta.level).max().unwrap_or(0);
        if let Some(bad) = files.iter().find(|f| f.meta.level < 0) {
            return Err(Error::corrupt(
                &bad.path,
                format!("negative level {}", bad.meta.level),
            ));
        }
        let count = num_levels.max(deepest.saturating_add(1)).max(2);
        let mut levels: Vec<Vec<LevelFile>> = vec![Vec::new(); usize::try_from(count).unwrap_or(2)];
        for f in files {
            let level = usize::try_from(f.meta.level).unwrap_or(0);
            levels[level].push(f);
        }
        levels[0].sort_by(|a, b| {
            b.meta
                .max_sequence_number
                .cmp(&a.meta.max_sequence_number)
                .then_with(|| a.meta.file_name.cmp(&b.meta.file_name))
        });
        Ok(Levels { levels })
    }

    pub fn number_of_levels(&self) -> i32 {
        i32::try_from(self.levels.len()).unwrap_or(i32::MAX)
    }

    pub fn max_level(&self) -> i32 {
        self.number_of_levels() - 1
    }

    /// The highest level holding a file, 0 when only level 0 does, -1 when the bucket is empty
    /// (Java `nonEmptyHighestLevel`).
    pub fn non_empty_highest_level(&self) -> i32 {
        self.levels
            .iter()
            .rposition(|l| !l.is_empty())
            .map_or(-1, |i| i32::try_from(i).unwrap_or(i32::MAX))
    }

    /// Sorted runs: each level-0 file (newest first), then each non-empty level.
    pub fn runs(&self) -> Vec<LevelRun<'_>> {
        let level0 = self.levels[0].iter().map(|f| LevelRun {
            level: 0,
            files: std::slice::from_ref(f),
        });
        let higher = self
            .levels
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(_, files)| !files.is_empty());
        level0
            .chain(higher.map(|(i, files)| LevelRun {
                level: i32::try_from(i).unwrap_or(i32::MAX),
                files,
            }))
            .collect()
    }

    /// The runs as the picker sees them.
    pub fn run_stats(&self) -> Vec<RunStat> {
        self.runs().iter().map(LevelRun::stat).collect()
    }

    /// The files of the unit's runs, in run order.
    pub fn files_of(&self, unit: &CompactUnit) -> Vec<LevelFile> {
        self.runs()
            .iter()
            .take(unit.runs)
            .flat_map(|r| r.files.iter().cloned())
            .collect()
    }

    /// Every file, in run order.
    pub fn all_files(&self) -> impl Iterator<Item = &LevelFile> {
        self.levels[0]
            .iter()
            .chain(self.levels[1..].iter().flatten())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use tidelake_spec::manifest::{FileSource, SimpleStats, EMPTY_ROW};

    use super::*;

    /// A file of `size` bytes at `level` whose newest record has sequence `max_seq`.
    pub(crate) fn level_file(name: &str, level: i32, size: i64, max_seq: i64) -> LevelFile {
        LevelFile {
            meta: DataFileMeta {
                file_name: name.to_string(),
                file_size: size,
                row_count: 1,
                min_key: EMPTY_ROW.to_vec(),
                max_key: EMPTY_ROW.to_vec(),
                key_stats: SimpleStats::empty(),
                value_stats: SimpleStats::empty(),
                min_sequence_number: 0,
                max_sequence_number: max_seq,
                schema_id: 0,
                level,
                extra_files: Vec::new(),
                creation_time: None,
                delete_row_count: Some(0),
                embedded_index: None,
                file_source: Some(FileSource::Append),
                value_stats_cols: None,
                external_path: None,
                first_row_id: None,
                write_cols: None,
                write_cols_sequences: None,
            },
            path: format!("bucket-0/{name}"),
            deletion: None,
        }
    }

    #[test]
    fn runs_follow_java_order() {
        let levels = Levels::new(
            vec![
                level_file("a", 0, 10, 3),
                level_file("c", 2, 100, 1),
                level_file("b", 0, 20, 7),
                level_file("d", 2, 50, 2),
                level_file("e", 0, 5, 7),
            ],
            4,
        )
        .unwrap();
        let runs: Vec<(i32, Vec<&str>)> = levels
            .runs()
            .iter()
            .map(|r| {
                (
                    r.level,
                    r.files.iter().map(|f| f.meta.file_name.as_str()).collect(),
                )
            })
            .collect();
        // level 0 newest first, equal max sequence by name; then level 2 as one run
        assert_eq!(
            runs,
            vec![
                (0, vec!["b"]),
                (0, vec!["e"]),
                (0, vec!["a"]),
                (2, vec!["c", "d"])
            ]
        );
        assert_eq!(
            levels.run_stats()[3],
            RunStat {
                level: 2,
                size: 150
            }
        );
        assert_eq!(levels.non_empty_highest_level(), 2);
        assert_eq!(levels.max_level(), 3);
        let unit = CompactUnit {
            output_level: 1,
            runs: 2,
        };
        let names: Vec<String> = levels
            .files_of(&unit)
            .into_iter()
            .map(|f| f.meta.file_name)
            .collect();
        assert_eq!(names, vec!["b", "e"]);
    }

    #[test]
    fn levels_grow_to_hold_the_deepest_file() {
        let levels = Levels::new(vec![level_file("x", 7, 1, 0)], 3).unwrap();
        assert_eq!(levels.number_of_levels(), 8);
        assert_eq!(
            Levels::new(Vec::new(), 3)
                .unwrap()
                .non_empty_highest_level(),
            -1
        );
        assert_eq!(
            Levels::new(vec![level_file("y", 0, 1, 0)], 3)
                .unwrap()
                .non_empty_highest_level(),
            0
        );
    }
}
