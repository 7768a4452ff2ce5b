//! [`CommitMessage`]: what one writer task hands to the committer for one (partition, bucket),
//! mirroring Java `CommitMessageImpl` with its `DataIncrement` (new, deleted and changelog
//! files, index changes) and `CompactIncrement` (files before and after compaction, compaction
//! changelog, index changes).
//!
//! Messages cross process boundaries (pickled bytes from Python workers), so they have a
//! versioned byte form: a JSON envelope `{"version": 1, ...}` whose file lists are Avro
//! containers written with the spec crate's own manifest codecs (one manifest holding every
//! data file, one index manifest holding every index file, plus per-list counts), hex-encoded.
//! Reusing the manifest codecs keeps every `DataFileMeta`/`IndexFileMeta` field byte-exact
//! without a second serialisation of the format model.
//!
//! Invariants: [`CommitMessage::from_bytes`] accepts only [`COMMIT_MESSAGE_VERSION`] and
//! rejects anything else, malformed input included, with [`Error::Invalid`]; a decoded message
//! equals the encoded one.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use tidelake_spec::manifest::{
    read_index_manifest, read_manifest, write_index_manifest, write_manifest, Codec, DataFileMeta,
    FileKind, IndexFileMeta, IndexManifestEntry, ManifestEntry,
};

use crate::error::{Error, Result};
use crate::layout::TableLayout;

/// Version of the byte form written by [`CommitMessage::to_bytes`].
pub const COMMIT_MESSAGE_VERSION: u32 = 1;

/// (framed partition BinaryRow, bucket): one bucket of a table.
pub(crate) type BucketId = (Vec<u8>, i32);

/// The changes of one (partition, bucket) to commit (Java `CommitMessageImpl`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CommitMessage {
    /// Framed BinaryRow of the partition values (the 12-byte empty row when unpartitioned).
    pub partition: Vec<u8>,
    pub bucket: i32,
    /// Bucket count the files were written with (`_TOTAL_BUCKETS`).
    pub total_buckets: i32,
    /// `DataIncrement.newFiles`: files added by writing.
    pub new_files: Vec<DataFileMeta>,
    /// `DataIncrement.deletedFiles`: files removed by writing (append-table deletes); their
    /// presence turns the APPEND into an OVERWRITE commit with conflict checks.
    pub deleted_files: Vec<DataFileMeta>,
    /// `DataIncrement.changelogFiles`.
    pub changelog_files: Vec<DataFileMeta>,
    /// `DataIncrement.newIndexFiles`.
    pub new_index_files: Vec<IndexFileMeta>,
    /// `DataIncrement.deletedIndexFiles`.
    pub deleted_index_files: Vec<IndexFileMeta>,
    /// `CompactIncrement.compactBefore`: files rewritten by compaction.
    pub compact_before: Vec<DataFileMeta>,
    /// `CompactIncrement.compactAfter`: files compaction produced.
    pub compact_after: Vec<DataFileMeta>,
    /// `CompactIncrement.changelogFiles`.
    pub compact_changelog: Vec<DataFileMeta>,
    /// `CompactIncrement.newIndexFiles` (e.g. deletion vectors rewritten by compaction).
    pub compact_new_index_files: Vec<IndexFileMeta>,
    /// `CompactIncrement.deletedIndexFiles`.
    pub compact_deleted_index_files: Vec<IndexFileMeta>,
    /// The snapshot the writer restored the bucket's state (sequence numbers) from: `Some(0)`
    /// for a table that had none, `None` when unknown (overwrite writers, hand-built messages).
    /// Only files committed after it can hold larger sequence numbers or this message's files,
    /// so the commit's checks read the deltas since it (tidelake's own field, not Java's).
    pub base_snapshot: Option<i64>,
}

/// The JSON envelope of the byte form.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    version: u32,
    partition: String,
    bucket: i32,
    total_buckets: i32,
    /// Lengths of the six data-file lists, in field order.
    data_counts: [usize; 6],
    /// Hex of an Avro manifest holding every data file, list after list.
    data_files: String,
    /// Lengths of the four index-file lists, in field order.
    index_counts: [usize; 4],
    /// Hex of an Avro index manifest holding every index file, list after list.
    index_files: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    base_snapshot: Option<i64>,
}

impl CommitMessage {
    /// An empty message for one (partition, bucket).
    pub fn new(partition: Vec<u8>, bucket: i32, total_buckets: i32) -> CommitMessage {
        CommitMessage {
            partition,
            bucket,
            total_buckets,
            ..CommitMessage::default()
        }
    }

    /// True when the message carries no change at all (Java `CommitMessageImpl.isEmpty`).
    pub fn is_empty(&self) -> bool {
        self.data_lists().iter().all(|l| l.is_empty())
            && self.index_lists().iter().all(|l| l.is_empty())
    }

    fn data_lists(&self) -> [&Vec<DataFileMeta>; 6] {
        [
            &self.new_files,
            &self.deleted_files,
            &self.changelog_files,
            &self.compact_before,
            &self.compact_after,
            &self.compact_changelog,
        ]
    }

    fn index_lists(&self) -> [&Vec<IndexFileMeta>; 4] {
        [
            &self.new_index_files,
            &self.deleted_index_files,
            &self.compact_new_index_files,
            &self.compact_deleted_index_files,
        ]
    }

    /// The versioned byte form (see the module docs).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let envelope = Envelope {
            version: COMMIT_MESSAGE_VERSION,
            partition: to_hex(&self.partition),
            bucket: self.bucket,
            total_buckets: self.total_buckets,
            data_counts: self.data_lists().map(Vec::len),
            data_files: data_files_hex(
                &self.partition,
                self.bucket,
                self.total_buckets,
                self.data_lists().iter().flat_map(|list| list.iter()),
            )?,
            index_counts: self.index_lists().map(Vec::len),
            index_files: index_files_hex(
                &self.partition,
                self.bucket,
                self.index_lists().iter().flat_map(|list| list.iter()),
            )?,
            base_snapshot: self.base_snapshot,
        };
        crate::versioned::encode(&envelope, "commit message")
    }

    /// Decode [`CommitMessage::to_bytes`] output; other versions and malformed input are
    /// [`Error::Invalid`].
    pub fn from_bytes(bytes: &[u8]) -> Result<CommitMessage> {
        let invalid =
            |reason: String| Error::invalid(format!("not a tidelake commit message: {reason}"));
        let envelope: Envelope =
            crate::versioned::decode(bytes, "commit message", COMMIT_MESSAGE_VERSION)?;
        let partition = from_hex(&envelope.partition)
            .ok_or_else(|| invalid("bad partition hex".to_string()))?;
        let data = data_files_from_hex(&envelope.data_files).map_err(invalid)?;
        let index = index_files_from_hex(&envelope.index_files).map_err(invalid)?;
        let mut files = split_counts(data, &envelope.data_counts)
            .ok_or_else(|| invalid("data file counts do not match the files".to_string()))?
            .into_iter();
        let mut index_files = split_counts(index, &envelope.index_counts)
            .ok_or_else(|| invalid("index file counts do not match the files".to_string()))?
            .into_iter();
        // `split_counts` returns exactly one list per count.
        let mut next = || files.next().unwrap_or_default();
        let (new_files, deleted_files, changelog_files) = (next(), next(), next());
        let (compact_before, compact_after, compact_changelog) = (next(), next(), next());
        let mut next_index = || index_files.next().unwrap_or_default();
        let (new_index_files, deleted_index_files) = (next_index(), next_index());
        let (compact_new_index_files, compact_deleted_index_files) = (next_index(), next_index());
        Ok(CommitMessage {
            partition,
            bucket: envelope.bucket,
            total_buckets: envelope.total_buckets,
            new_files,
            deleted_files,
            changelog_files,
            new_index_files,
            deleted_index_files,
            compact_before,
            compact_after,
            compact_changelog,
            compact_new_index_files,
            compact_deleted_index_files,
            base_snapshot: envelope.base_snapshot,
        })
    }
}

/// The manifest entries of a batch of messages, split the way Java `ManifestEntryChanges`
/// splits them: the APPEND part (new files as ADD then deleted files as DELETE, changelog,
/// index deletions then additions) and the COMPACT part (files before compaction as DELETE
/// then files after as ADD, changelog, index deletions then additions).
#[derive(Debug, Default)]
pub(crate) struct Changes {
    pub append_table: Vec<ManifestEntry>,
    pub append_changelog: Vec<ManifestEntry>,
    pub append_index: Vec<IndexManifestEntry>,
    pub compact_table: Vec<ManifestEntry>,
    pub compact_changelog: Vec<ManifestEntry>,
    pub compact_index: Vec<IndexManifestEntry>,
}

impl Changes {
    /// Collect `messages`; a partition that does not decode with the table's partition
    /// columns is [`Error::Invalid`].
    pub(crate) fn collect(messages: &[CommitMessage], layout: &TableLayout) -> Result<Changes> {
        let mut checked: HashSet<&[u8]> = HashSet::new();
        let mut changes = Changes::default();
        for m in messages {
            if checked.insert(m.partition.as_slice()) {
                layout.decode_partition(&m.partition).map_err(|e| {
                    Error::invalid(format!(
                        "commit message for bucket {} has a bad partition: {e}",
                        m.bucket
                    ))
                })?;
            }
            let entry = |kind: FileKind, file: &DataFileMeta| ManifestEntry {
                kind,
                partition: m.partition.clone(),
                bucket: m.bucket,
                total_buckets: m.total_buckets,
                file: file.clone(),
            };
            let index = |kind: FileKind, file: &IndexFileMeta| IndexManifestEntry {
                kind,
                partition: m.partition.clone(),
                bucket: m.bucket,
                index_file: file.clone(),
            };
            changes
                .append_table
                .extend(m.new_files.iter().map(|f| entry(FileKind::Add, f)));
            changes
                .append_table
                .extend(m.deleted_files.iter().map(|f| entry(FileKind::Delete, f)));
            changes
                .append_changelog
                .extend(m.changelog_files.iter().map(|f| entry(FileKind::Add, f)));
            changes.append_index.extend(
                m.deleted_index_files
                    .iter()
                    .map(|f| index(FileKind::Delete, f)),
            );
            changes
                .append_index
                .extend(m.new_index_files.iter().map(|f| index(FileKind::Add, f)));
            changes
                .compact_table
                .extend(m.compact_before.iter().map(|f| entry(FileKind::Delete, f)));
            changes
                .compact_table
                .extend(m.compact_after.iter().map(|f| entry(FileKind::Add, f)));
            changes
                .compact_changelog
                .extend(m.compact_changelog.iter().map(|f| entry(FileKind::Add, f)));
            changes.compact_index.extend(
                m.compact_deleted_index_files
                    .iter()
                    .map(|f| index(FileKind::Delete, f)),
            );
            changes.compact_index.extend(
                m.compact_new_index_files
                    .iter()
                    .map(|f| index(FileKind::Add, f)),
            );
        }
        Ok(changes)
    }
}

/// Hex of an Avro manifest holding `files` of one (partition, bucket): the byte form of data-file
/// lists in commit messages and compaction tasks (the manifest codec keeps every field exact).
pub(crate) fn data_files_hex<'a>(
    partition: &[u8],
    bucket: i32,
    total_buckets: i32,
    files: impl Iterator<Item = &'a DataFileMeta>,
) -> Result<String> {
    let entries: Vec<ManifestEntry> = files
        .map(|file| ManifestEntry {
            kind: FileKind::Add,
            partition: partition.to_vec(),
            bucket,
            total_buckets,
            file: file.clone(),
        })
        .collect();
    let bytes =
        write_manifest(&entries, Codec::Null).map_err(|e| Error::from_spec("data file list", e))?;
    Ok(to_hex(&bytes))
}

/// The files of [`data_files_hex`]; the reason when `hex` is not such a manifest.
pub(crate) fn data_files_from_hex(hex: &str) -> std::result::Result<Vec<DataFileMeta>, String> {
    let bytes = from_hex(hex).ok_or_else(|| "bad data file hex".to_string())?;
    let entries = read_manifest(&bytes).map_err(|e| e.to_string())?;
    Ok(entries.into_iter().map(|e| e.file).collect())
}

/// Hex of an Avro index manifest holding `files` of one (partition, bucket).
pub(crate) fn index_files_hex<'a>(
    partition: &[u8],
    bucket: i32,
    files: impl Iterator<Item = &'a IndexFileMeta>,
) -> Result<String> {
    let entries: Vec<IndexManifestEntry> = files
        .map(|file| IndexManifestEntry {
            kind: FileKind::Add,
            partition: partition.to_vec(),
            bucket,
            index_file: file.clone(),
        })
        .collect();
    let bytes = write_index_manifest(&entries, Codec::Null)
        .map_err(|e| Error::from_spec("index file list", e))?;
    Ok(to_hex(&bytes))
}

/// The files of [`index_files_hex`]; the reason when `hex` is not such a manifest.
pub(crate) fn index_files_from_hex(hex: &str) -> std::result::Result<Vec<IndexFileMeta>, String> {
    let bytes = from_hex(hex).ok_or_else(|| "bad index file hex".to_string())?;
    let entries = read_index_manifest(&bytes).map_err(|e| e.to_string())?;
    Ok(entries.into_iter().map(|e| e.index_file).collect())
}

/// Refuse a batch in which two messages name one data file in the same role (new, deleted,
/// changelog, before or after compaction) of one (partition, bucket): the same message passed
/// twice. Committed, it would ADD the file twice, which Java (and tidelake) read as a corrupt
/// table. Checked by every commit path before anything else, so no caller can bypass it. (A
/// file twice inside one message is a malformed compaction, left to the conflict checks.)
pub(crate) fn check_distinct(messages: &[CommitMessage]) -> Result<()> {
    let mut seen: HashSet<(&'static str, &[u8], i32, &str)> = HashSet::new();
    for m in messages {
        let mut mine = HashSet::new();
        let roles: [(&'static str, &Vec<DataFileMeta>); 6] = [
            ("new", &m.new_files),
            ("deleted", &m.deleted_files),
            ("changelog", &m.changelog_files),
            ("compacted", &m.compact_before),
            ("compaction result", &m.compact_after),
            ("compaction changelog", &m.compact_changelog),
        ];
        for (role, files) in roles {
            for f in files {
                let key = (role, m.partition.as_slice(), m.bucket, f.file_name.as_str());
                if mine.insert(key) && !seen.insert(key) {
                    return Err(Error::invalid(format!(
                        "{role} file {} of bucket {} appears twice in the messages of one commit \
                         (the same commit message passed twice?); nothing was committed",
                        f.file_name, m.bucket
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Cut `items` into consecutive lists of the given lengths; `None` unless they add up.
pub(crate) fn split_counts<T>(items: Vec<T>, counts: &[usize]) -> Option<Vec<Vec<T>>> {
    let total = counts
        .iter()
        .try_fold(0usize, |acc, c| acc.checked_add(*c))?;
    if total != items.len() {
        return None;
    }
    let mut rest = items.into_iter();
    Some(
        counts
            .iter()
            .map(|c| rest.by_ref().take(*c).collect())
            .collect(),
    )
}

pub(crate) fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

pub(crate) fn from_hex(text: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| {
        char::from(c)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    bytes
        .chunks_exact(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}
