//! Where the deletion vectors of data files live: the ranges a deletion-vector index file
//! (type [`DELETION_VECTORS_INDEX`], located by [`super::IndexPaths`]) holds, one per data file
//! name.

use serde::{Deserialize, Serialize};
use tidelake_spec::manifest::{IndexFileMeta, DELETION_VECTORS_INDEX};

use crate::error::{Error, Result};

/// Where a data file's deletion vector lives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeletionFileRef {
    /// Path of the index file: relative to the table root (`index/index-...`, or in the bucket
    /// directory), or its external path.
    pub path: String,
    pub offset: u64,
    pub length: u64,
    pub cardinality: Option<i64>,
}

/// The deletion vectors a deletion-vector index file, at `path`, holds, per data file name
/// (none for other index types). A negative offset or length is [`Error::Corrupt`].
pub(crate) fn index_file_refs(
    index_file: &IndexFileMeta,
    path: &str,
) -> Result<Vec<(String, DeletionFileRef)>> {
    if index_file.index_type != DELETION_VECTORS_INDEX {
        return Ok(Vec::new());
    }
    index_file
        .dv_ranges
        .iter()
        .flatten()
        .map(|r| {
            let bad = |what: &str| {
                Error::corrupt(
                    path,
                    format!("negative deletion vector {what} for {}", r.data_file_name),
                )
            };
            let dv = DeletionFileRef {
                path: path.to_string(),
                offset: u64::try_from(r.offset).map_err(|_| bad("offset"))?,
                length: u64::try_from(r.length).map_err(|_| bad("length"))?,
                cardinality: r.cardinality,
            };
            Ok((r.data_file_name.clone(), dv))
        })
        .collect()
}
