//! [`PartitionSet`]: a set of partitions to read the live files of, matched against entries by
//! their framed bytes and against manifests by their partition statistics (a manifest is
//! skipped only when its statistics exclude every partition of the set).

use std::cmp::Ordering;
use std::collections::HashSet;

use tidelake_spec::binary_row::decode_framed;
use tidelake_spec::datum::Datum;
use tidelake_spec::manifest::ManifestFileMeta;
use tidelake_spec::types::DataType;

use crate::datum_arrow::compare_datums;
use crate::layout::TableLayout;

/// A set of partitions, kept both as framed bytes (for entries) and decoded (for pruning
/// manifests by their partition statistics).
#[derive(Debug, Default)]
pub(crate) struct PartitionSet {
    framed: HashSet<Vec<u8>>,
    decoded: Vec<Vec<Datum>>,
    types: Vec<DataType>,
}

impl PartitionSet {
    /// The distinct partitions among `partitions`; undecodable ones are kept for matching but
    /// disable pruning (every manifest may then hold them).
    pub(crate) fn new<'a>(
        layout: &TableLayout,
        partitions: impl IntoIterator<Item = &'a [u8]>,
    ) -> PartitionSet {
        let mut set = PartitionSet {
            types: layout.partition_types.clone(),
            ..PartitionSet::default()
        };
        for p in partitions {
            if set.framed.insert(p.to_vec()) {
                // An undecodable partition matches every manifest (no pruning for it).
                let values = decode_framed(p, &set.types).unwrap_or_default();
                set.decoded.push(values);
            }
        }
        set
    }

    pub(crate) fn contains(&self, framed: &[u8]) -> bool {
        self.framed.contains(framed)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.framed.is_empty()
    }

    /// False only when `meta`'s partition statistics exclude every partition of the set.
    pub(crate) fn may_be_in(&self, meta: &ManifestFileMeta) -> bool {
        if self.types.is_empty() {
            return !self.is_empty();
        }
        let stats = &meta.partition_stats;
        let (Ok(mins), Ok(maxs)) = (
            decode_framed(&stats.min_values, &self.types),
            decode_framed(&stats.max_values, &self.types),
        ) else {
            return true;
        };
        let nulls = stats.null_counts.clone().unwrap_or_default();
        self.decoded.iter().any(|values| {
            values.len() != self.types.len()
                || values.iter().enumerate().all(|(i, v)| {
                    if v.is_null() {
                        return nulls.get(i).copied().flatten() != Some(0);
                    }
                    let above_min =
                        mins[i].is_null() || compare_datums(v, &mins[i]) != Some(Ordering::Less);
                    let below_max =
                        maxs[i].is_null() || compare_datums(v, &maxs[i]) != Some(Ordering::Greater);
                    above_min && below_max
                })
        })
    }
}
