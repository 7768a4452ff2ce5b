//! Splitting a primary-key bucket's files into sections and sorted runs (Java `IntervalPartition`).
//!
//! Files are sorted by (min key, max key). A new *section* starts when a file's min key is
//! greater than every max key seen so far in the current section, so sections never share a
//! key and can be merged independently, one after the other. Inside a section, files are packed
//! greedily into the fewest *sorted runs* whose files do not overlap: a file joins the run whose
//! last max key is smallest, if that key is below the file's min key; else it opens a new run.

use std::cmp::Ordering;

use tidelake_spec::binary_row::decode_framed;
use tidelake_spec::datum::Datum;
use tidelake_spec::types::DataType;

use crate::error::{Error, Result};
use crate::lsm::key::compare_keys;
use crate::scan::split::SplitFile;

/// Sections of a bucket, each a list of sorted runs, each run files in key order.
pub type Sections = Vec<Vec<Vec<SplitFile>>>;

struct Keyed {
    min: Vec<Datum>,
    max: Vec<Datum>,
    file: SplitFile,
}

/// Partition `files` into sections of sorted runs using their min/max keys.
pub fn partition(files: Vec<SplitFile>, key_types: &[DataType]) -> Result<Sections> {
    let mut keyed = files
        .into_iter()
        .map(|file| {
            let decode = |b: &[u8]| {
                decode_framed(b, key_types)
                    .map_err(|e| Error::from_spec(format!("key range of {}", file.path), e))
            };
            Ok(Keyed {
                min: decode(&file.min_key)?,
                max: decode(&file.max_key)?,
                file,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    keyed.sort_by(|a, b| compare_keys(&a.min, &b.min).then_with(|| compare_keys(&a.max, &b.max)));

    let mut sections: Sections = Vec::new();
    let mut current: Vec<Keyed> = Vec::new();
    let mut bound: Option<Vec<Datum>> = None;
    for k in keyed {
        if let Some(b) = &bound {
            if compare_keys(&k.min, b) == Ordering::Greater {
                sections.push(pack_runs(std::mem::take(&mut current)));
                bound = None;
            }
        }
        if bound
            .as_ref()
            .is_none_or(|b| compare_keys(&k.max, b) == Ordering::Greater)
        {
            bound = Some(k.max.clone());
        }
        current.push(k);
    }
    if !current.is_empty() {
        sections.push(pack_runs(current));
    }
    Ok(sections)
}

/// Greedy packing of one section's files (sorted by min key) into non-overlapping runs.
fn pack_runs(files: Vec<Keyed>) -> Vec<Vec<SplitFile>> {
    let mut runs: Vec<(Vec<Datum>, Vec<SplitFile>)> = Vec::new();
    for k in files {
        let best = runs
            .iter()
            .enumerate()
            .min_by(|(_, a), (_, b)| compare_keys(&a.0, &b.0))
            .filter(|(_, (max, _))| compare_keys(max, &k.min) == Ordering::Less)
            .map(|(i, _)| i);
        match best {
            Some(i) => {
                runs[i].0 = k.max;
                runs[i].1.push(k.file);
            }
            None => runs.push((k.max, vec![k.file])),
        }
    }
    runs.into_iter().map(|(_, files)| files).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidelake_spec::binary_row::encode_framed;
    use tidelake_spec::types::TypeKind;

    fn file(name: &str, min: i32, max: i32) -> SplitFile {
        let t = [DataType::not_null(TypeKind::Int)];
        SplitFile {
            path: name.into(),
            file_name: name.into(),
            file_size: 1,
            row_count: 1,
            schema_id: 0,
            level: 0,
            min_sequence_number: 0,
            max_sequence_number: 0,
            delete_row_count: Some(0),
            min_key: encode_framed(&[Datum::Int(min)], &t).unwrap(),
            max_key: encode_framed(&[Datum::Int(max)], &t).unwrap(),
            deletion: None,
            first_row_id: None,
            write_cols: None,
            index: None,
            holds_partition_columns: true,
        }
    }

    fn names(s: &Sections) -> Vec<Vec<Vec<String>>> {
        s.iter()
            .map(|sec| {
                sec.iter()
                    .map(|r| r.iter().map(|f| f.file_name.clone()).collect())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn disjoint_files_form_separate_sections() {
        let t = [DataType::not_null(TypeKind::Int)];
        let s = partition(vec![file("b", 5, 9), file("a", 0, 4)], &t).unwrap();
        assert_eq!(names(&s), vec![vec![vec!["a"]], vec![vec!["b"]]]);
    }

    #[test]
    fn overlapping_files_pack_into_min_runs() {
        let t = [DataType::not_null(TypeKind::Int)];
        // a and b overlap; c follows a without overlap, so it joins a's run.
        let s = partition(vec![file("a", 0, 4), file("b", 2, 8), file("c", 5, 6)], &t).unwrap();
        assert_eq!(names(&s), vec![vec![vec!["a", "c"], vec!["b"]]]);
    }

    #[test]
    fn equal_boundary_keys_overlap() {
        let t = [DataType::not_null(TypeKind::Int)];
        let s = partition(vec![file("a", 0, 4), file("b", 4, 8)], &t).unwrap();
        assert_eq!(names(&s), vec![vec![vec!["a"], vec!["b"]]]);
    }
}
