//! Puffin files of Iceberg deletion vectors (Iceberg "Puffin file format" spec): the
//! `deletion-vector-v1` blobs of one Paimon deletion-vector index file.
//!
//! Layout: `PFA1 | blob* | PFA1 | footer JSON | footer size: i32 LE | flags: 4 bytes | PFA1`.
//! Each blob is uncompressed (the spec forbids compressing deletion vectors), its footer entry
//! names the data file it deletes from (`referenced-data-file`) and its `cardinality`, with
//! `snapshot-id` and `sequence-number` -1 (inherited from the manifest entry, as the spec asks).
//!
//! Invariant: a file's bytes depend only on its blobs, so writers that race to produce the
//! same file write the same bytes.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

const MAGIC: &[u8; 4] = b"PFA1";
const DELETION_VECTOR: &str = "deletion-vector-v1";
/// Iceberg `MetadataColumns.ROW_POSITION`'s field id, the field a deletion vector is about.
const ROW_POSITION_FIELD_ID: i32 = 2_147_483_645;
const REFERENCED_DATA_FILE: &str = "referenced-data-file";
const CARDINALITY: &str = "cardinality";

/// One deletion vector in a Puffin file: where its blob is and what it deletes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blob {
    pub referenced_data_file: String,
    pub cardinality: i64,
    pub offset: i64,
    pub length: i64,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct BlobMetadata {
    #[serde(rename = "type")]
    kind: String,
    fields: Vec<i32>,
    snapshot_id: i64,
    sequence_number: i64,
    offset: i64,
    length: i64,
    #[serde(default)]
    properties: std::collections::BTreeMap<String, String>,
}

#[derive(Serialize, Deserialize)]
struct Footer {
    blobs: Vec<BlobMetadata>,
    #[serde(default)]
    properties: std::collections::BTreeMap<String, String>,
}

/// A Puffin file of `vectors`: (referenced data file, cardinality, `deletion-vector-v1` blob).
/// Returns its bytes and where each blob went.
pub fn write(vectors: Vec<(String, i64, Vec<u8>)>) -> (Vec<u8>, Vec<Blob>) {
    let mut out = MAGIC.to_vec();
    let mut blobs = Vec::with_capacity(vectors.len());
    let mut meta = Vec::with_capacity(vectors.len());
    for (file, cardinality, bytes) in vectors {
        let blob = Blob {
            referenced_data_file: file,
            cardinality,
            offset: out.len() as i64,
            length: bytes.len() as i64,
        };
        out.extend_from_slice(&bytes);
        meta.push(BlobMetadata {
            kind: DELETION_VECTOR.into(),
            fields: vec![ROW_POSITION_FIELD_ID],
            snapshot_id: -1,
            sequence_number: -1,
            offset: blob.offset,
            length: blob.length,
            properties: [
                (
                    REFERENCED_DATA_FILE.to_string(),
                    blob.referenced_data_file.clone(),
                ),
                (CARDINALITY.to_string(), cardinality.to_string()),
            ]
            .into(),
        });
        blobs.push(blob);
    }
    let footer = Footer {
        blobs: meta,
        properties: [("created-by".to_string(), "tidelake".to_string())].into(),
    };
    let json = serde_json::to_vec(&footer).expect("a footer always serialises");
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&json);
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(MAGIC);
    (out, blobs)
}

/// The deletion vectors a Puffin file's footer lists.
pub fn read_blobs(bytes: &[u8], what: &str) -> Result<Vec<Blob>> {
    let corrupt = |why: &str| Error::corrupt(what, why);
    let n = bytes.len();
    if n < 16 || &bytes[..4] != MAGIC || &bytes[n - 4..] != MAGIC {
        return Err(corrupt("not a Puffin file (no PFA1 magic)"));
    }
    if bytes[n - 8] & 1 != 0 {
        return Err(corrupt("compressed Puffin footers are not written here"));
    }
    let size = u32::from_le_bytes(bytes[n - 12..n - 8].try_into().expect("4 bytes"));
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    let start = n
        .checked_sub(12 + size)
        .filter(|s| *s >= 8 && &bytes[s - 4..*s] == MAGIC)
        .ok_or_else(|| corrupt("bad footer size"))?;
    let footer: Footer = serde_json::from_slice(&bytes[start..n - 12])
        .map_err(|e| Error::corrupt(what, format_args!("footer: {e}")))?;
    footer
        .blobs
        .into_iter()
        .filter(|b| b.kind == DELETION_VECTOR)
        .map(|b| {
            let prop = |key: &str| {
                b.properties
                    .get(key)
                    .ok_or_else(|| Error::corrupt(what, format_args!("a blob without '{key}'")))
            };
            Ok(Blob {
                referenced_data_file: prop(REFERENCED_DATA_FILE)?.clone(),
                cardinality: prop(CARDINALITY)?
                    .parse()
                    .map_err(|e| Error::corrupt(what, format_args!("cardinality: {e}")))?,
                offset: b.offset,
                length: b.length,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_round_trip_through_the_footer() {
        let (bytes, blobs) = write(vec![
            ("s3://b/t/a.parquet".into(), 2, vec![1, 2, 3]),
            ("s3://b/t/b.parquet".into(), 1, vec![4, 5]),
        ]);
        assert_eq!(&bytes[..4], MAGIC);
        assert_eq!(blobs[0].offset, 4);
        assert_eq!(blobs[1].offset, 7);
        assert_eq!(&bytes[7..9], &[4, 5]);
        assert_eq!(read_blobs(&bytes, "p").unwrap(), blobs);
        let footer = String::from_utf8_lossy(&bytes);
        assert!(
            footer.contains(r#""type":"deletion-vector-v1""#),
            "{footer}"
        );
        assert!(footer.contains(r#""snapshot-id":-1"#), "{footer}");
        assert!(read_blobs(&bytes[1..], "p").is_err());
    }
}
