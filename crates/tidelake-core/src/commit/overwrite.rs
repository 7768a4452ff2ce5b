//! Overwrite scopes and their evaluation (Java `FileStoreCommitImpl.overwritePartition`,
//! `dropPartitions`, `truncateTable`, `OverwriteChangesProvider`, `tryUpgrade`).
//!
//! An overwrite deletes every live file (and index file) of the partitions its scope selects
//! in the latest snapshot and adds the new files, as one OVERWRITE snapshot. The deletions are
//! recomputed on every attempt, so files another writer added meanwhile are replaced too.
//!
//! Invariants: a partition filter names partition columns only ([`Error::Invalid`] otherwise);
//! with a static scope every new file must lie inside the scope; partitions are matched on
//! their decoded values, once per distinct partition.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use tidelake_spec::datum::Datum;
use tidelake_spec::manifest::{FileKind, ManifestEntry};
use tidelake_spec::types::DataType;

use crate::commit::conflict::partition_display;
use crate::datum_arrow::{compare_datums, datums_to_array};
use crate::error::{Error, Result};
use crate::layout::TableLayout;
use crate::lsm::key::compare_keys;
use crate::scan::predicate::{BoundPredicate, Predicate};

/// Which partitions an overwrite replaces.
#[derive(Debug, Clone)]
pub enum OverwriteScope {
    /// Static overwrite: the partitions the filter selects; `None` is the whole table.
    Static(Option<PartitionFilter>),
    /// Dynamic partition overwrite: exactly the partitions the new files are in (the whole
    /// table when it is unpartitioned); nothing is replaced when there are no new files.
    Dynamic,
}

impl OverwriteScope {
    /// The static overwrite of exactly `partitions` (framed; every partition of an
    /// unpartitioned table).
    pub(crate) fn of_partitions<'p>(
        layout: &TableLayout,
        partitions: impl IntoIterator<Item = &'p Vec<u8>>,
    ) -> Result<OverwriteScope> {
        if layout.partition_fields.is_empty() {
            return Ok(OverwriteScope::Static(None));
        }
        let specs = partitions
            .into_iter()
            .map(|p| {
                let values = layout.decode_partition(p)?;
                Ok(layout
                    .partition_fields
                    .iter()
                    .map(|f| f.name.clone())
                    .zip(values)
                    .collect())
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(OverwriteScope::Static(Some(PartitionFilter::AnyOf(specs))))
    }
}

/// A selection of partitions by their values.
#[derive(Debug, Clone)]
pub enum PartitionFilter {
    /// `column = value` for each pair (a subset of the partition columns); [`Datum::Null`]
    /// selects the null (default-name) partition value.
    Spec(Vec<(String, Datum)>),
    /// Partitions matching any of the specs.
    AnyOf(Vec<Vec<(String, Datum)>>),
    /// A filter that references partition columns only.
    Predicate(Predicate),
}

enum Test {
    /// Each spec as (partition column position, value).
    Specs(Vec<Vec<(usize, Datum)>>),
    Predicate(BoundPredicate),
    /// Exactly these framed partitions (dynamic overwrite).
    Partitions(HashSet<Vec<u8>>),
}

/// A compiled [`PartitionFilter`] with a per-partition verdict cache.
pub(crate) struct PartitionMatcher {
    test: Test,
    verdicts: HashMap<Vec<u8>, bool>,
}

impl PartitionMatcher {
    /// The matcher of an optional predicate on partition columns (`None`: every partition).
    pub(crate) fn of_predicate(
        layout: &TableLayout,
        filter: Option<&Predicate>,
    ) -> Result<Option<PartitionMatcher>> {
        filter
            .map(|f| PartitionMatcher::new(layout, &PartitionFilter::Predicate(f.clone())))
            .transpose()
    }

    pub(crate) fn new(layout: &TableLayout, filter: &PartitionFilter) -> Result<PartitionMatcher> {
        let compile_spec = |spec: &[(String, Datum)]| -> Result<Vec<(usize, Datum)>> {
            spec.iter()
                .map(|(name, value)| {
                    let pos = layout.partition_fields.iter().position(|f| &f.name == name).ok_or_else(|| {
                        Error::invalid(format!(
                            "'{name}' is not a partition column; the partition columns are: [{}]",
                            layout.partition_fields.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(", ")
                        ))
                    })?;
                    Ok((pos, value.clone()))
                })
                .collect()
        };
        let test = match filter {
            PartitionFilter::Spec(spec) => Test::Specs(vec![compile_spec(spec)?]),
            PartitionFilter::AnyOf(specs) => Test::Specs(
                specs
                    .iter()
                    .map(|s| compile_spec(s))
                    .collect::<Result<_>>()?,
            ),
            PartitionFilter::Predicate(p) => {
                Test::Predicate(p.bind(&layout.partition_fields).map_err(|e| {
                    Error::invalid(format!(
                        "a partition filter may only use partition columns: {e}"
                    ))
                })?)
            }
        };
        Ok(PartitionMatcher {
            test,
            verdicts: HashMap::new(),
        })
    }

    /// Select exactly the given framed partitions.
    pub(crate) fn of_partitions<'a>(
        partitions: impl IntoIterator<Item = &'a [u8]>,
    ) -> PartitionMatcher {
        let set = partitions.into_iter().map(<[u8]>::to_vec).collect();
        PartitionMatcher {
            test: Test::Partitions(set),
            verdicts: HashMap::new(),
        }
    }

    /// Whether the framed partition is selected.
    pub(crate) fn matches(&mut self, layout: &TableLayout, framed: &[u8]) -> Result<bool> {
        if let Some(v) = self.verdicts.get(framed) {
            return Ok(*v);
        }
        let verdict = match &self.test {
            Test::Partitions(set) => return Ok(set.contains(framed)),
            Test::Specs(specs) => {
                let values = layout.decode_partition(framed)?;
                specs.iter().any(|spec| {
                    spec.iter()
                        .all(|(pos, want)| match (values.get(*pos), want) {
                            (Some(Datum::Null), Datum::Null) => true,
                            (Some(Datum::Null), _) | (Some(_), Datum::Null) | (None, _) => false,
                            (Some(have), want) => {
                                compare_datums(have, want) == Some(std::cmp::Ordering::Equal)
                            }
                        })
                })
            }
            Test::Predicate(p) => {
                evaluate_on_partition(p, layout, &layout.decode_partition(framed)?)?
            }
        };
        self.verdicts.insert(framed.to_vec(), verdict);
        Ok(verdict)
    }
}

/// Evaluate `predicate` on one partition, as a one-row batch of the partition columns.
fn evaluate_on_partition(
    predicate: &BoundPredicate,
    layout: &TableLayout,
    values: &[Datum],
) -> Result<bool> {
    let schema = tidelake_spec::arrow::to_arrow_schema(&layout.partition_fields)
        .map_err(|e| Error::from_spec("partition columns", e))?;
    let columns: Vec<ArrayRef> = layout
        .partition_fields
        .iter()
        .zip(values)
        .map(|(f, v)| datums_to_array(std::slice::from_ref(v), &f.data_type))
        .collect::<Result<_>>()?;
    let batch = RecordBatch::try_new(Arc::new(schema), columns)
        .map_err(|e| Error::arrow("partition values as a batch", e))?;
    let verdict = predicate.evaluate(&batch)?;
    Ok(verdict.len() == 1 && verdict.value(0))
}

/// Check that every new file of a static overwrite lies inside its scope (Java: "The changes
/// in ... does not belong to this partition").
pub(crate) fn check_inside(
    matcher: &mut PartitionMatcher,
    layout: &TableLayout,
    entries: &[ManifestEntry],
) -> Result<()> {
    for e in entries {
        if !matcher.matches(layout, &e.partition)? {
            return Err(Error::invalid(format!(
                "file {} of {} is outside the partitions being overwritten",
                e.file.file_name,
                partition_display(layout, &e.partition)
            )));
        }
    }
    Ok(())
}

/// Java `tryUpgrade` (option `overwrite-upgrade`, primary-key tables): when every new file is
/// an ADD at level 0 of a real bucket, each bucket whose files have pairwise disjoint key
/// ranges moves them all to the highest level, so readers that skip level 0 see them at once.
pub(crate) fn try_upgrade(
    entries: Vec<ManifestEntry>,
    key_types: &[DataType],
    max_level: i32,
) -> Result<Vec<ManifestEntry>> {
    if max_level <= 0
        || entries
            .iter()
            .any(|e| e.kind != FileKind::Add || e.file.level > 0 || e.bucket < 0)
    {
        return Ok(entries);
    }
    let mut groups: Vec<Vec<ManifestEntry>> = Vec::new();
    let mut index: HashMap<(Vec<u8>, i32), usize> = HashMap::new();
    for e in entries {
        let key = (e.partition.clone(), e.bucket);
        match index.get(&key) {
            Some(&i) => groups[i].push(e),
            None => {
                index.insert(key, groups.len());
                groups.push(vec![e]);
            }
        }
    }
    let decode = |e: &ManifestEntry, bytes: &[u8]| {
        tidelake_spec::binary_row::decode_framed(bytes, key_types).map_err(|err| {
            Error::invalid(format!(
                "key range of new file {} cannot be decoded: {err}",
                e.file.file_name
            ))
        })
    };
    let mut result = Vec::new();
    for group in groups {
        let mut ranges = group
            .iter()
            .map(|e| Ok((decode(e, &e.file.min_key)?, decode(e, &e.file.max_key)?)))
            .collect::<Result<Vec<_>>>()?;
        ranges.sort_by(|a, b| compare_keys(&a.0, &b.0));
        let disjoint = ranges
            .windows(2)
            .all(|w| compare_keys(&w[0].1, &w[1].0) == std::cmp::Ordering::Less);
        if disjoint {
            result.extend(group.into_iter().map(|mut e| {
                e.file.level = max_level;
                e
            }));
        } else {
            result.extend(group);
        }
    }
    Ok(result)
}
