//! Reading one data file (Parquet, ORC or Avro) into Arrow batches of the **current** schema.
//!
//! [`read_data_file`] streams a file written with schema `file_fields` (the schema of its
//! `_SCHEMA_ID`) as batches of `read_fields` (fields of the current schema):
//!
//! * fields are matched by id, the physical column is found by the name in `file_fields`
//!   (renames), a field unknown to the file is all-null, a changed type is cast
//!   (module `evolution`); a file field whose column is physically absent also reads as nulls
//!   (Java's Parquet reader does the same);
//! * output types are exactly `tidelake_spec::arrow::to_arrow_type` of the read fields, whatever
//!   the writer's encoding (see [`output_schema`]);
//! * for primary-key files ([`SystemColumns::KeyValue`]) the output starts with
//!   `_SEQUENCE_NUMBER` (Int64) and `_VALUE_KIND` (Int8); the `_KEY_*` columns are never read
//!   because the key equals the primary-key value columns;
//! * rows whose 0-based position in the file is in the deletion vector are dropped; positions
//!   are counted over the whole file, before any other filtering;
//! * a [`PagePrune`] may skip Parquet pages whose statistics rule out its filter (module
//!   `page_prune`); callers still filter the rows they get;
//! * only needed columns are fetched, with ranged reads: no format loads a whole file; local
//!   files are read in place on the reading thread ([`crate::io::local_file`]).
//!
//! Row order is the file's order; empty batches are never emitted.

mod avro;
mod evolution;
mod orc;
mod page_prune;
mod parquet;

pub use page_prune::PagePrune;
pub use parquet::kept_key_column;

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef};
use arrow_select::filter::filter_record_batch;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{future, StreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use tidelake_spec::types::{DataField, DataType, TypeKind};

use super::deletion_vector::DeletionVector;
use crate::error::{Error, Result};
#[cfg(unix)]
use crate::io::local_file::LocalFile;
use crate::io::FileIO;

pub use tidelake_spec::schema::{SEQUENCE_NUMBER, VALUE_KIND};

/// Batches as decoded by a format reader: physical column names, decoder-chosen types.
type RawStream = BoxStream<'static, Result<RecordBatch>>;

/// On-disk format of a data file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileFormat {
    Parquet,
    Orc,
    Avro,
}

/// Extensions a compressed-file suffix may add after the format (`x.csv.gz`-style); Paimon puts
/// the compression before the format for binary formats (`x.zstd.parquet`), handled too.
const COMPRESSION_EXTENSIONS: &[&str] = &[
    "gz", "bz2", "deflate", "snappy", "lz4", "zst", "zstd", "lzo", "br", "xz", "zlib",
];

impl FileFormat {
    /// The format of a data file, from its name's extension (`data-…-0.parquet`,
    /// `data-…-0.zstd.parquet`, …).
    pub fn from_file_name(name: &str) -> Result<FileFormat> {
        let base = name.rsplit('/').next().unwrap_or(name);
        let mut parts = base.rsplit('.');
        let last = parts.next().unwrap_or_default().to_ascii_lowercase();
        let ext = if COMPRESSION_EXTENSIONS.contains(&last.as_str()) {
            parts.next().unwrap_or_default().to_ascii_lowercase()
        } else {
            last
        };
        match ext.as_str() {
            _ if !base.contains('.') => Err(Error::Unsupported(format!(
                "data file without a format extension: {name}"
            ))),
            "parquet" => Ok(FileFormat::Parquet),
            "orc" => Ok(FileFormat::Orc),
            "avro" => Ok(FileFormat::Avro),
            other => Err(Error::Unsupported(format!(
                "data file format '{other}' of {name}"
            ))),
        }
    }

    /// Paimon's identifier of the format (`file.format` option value and file extension).
    pub fn identifier(self) -> &'static str {
        match self {
            FileFormat::Parquet => "parquet",
            FileFormat::Orc => "orc",
            FileFormat::Avro => "avro",
        }
    }
}

/// Which system columns a data file has and the output must carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SystemColumns {
    /// Append-table file: only the table columns.
    None,
    /// Primary-key file (`_KEY_*`, `_SEQUENCE_NUMBER`, `_VALUE_KIND`, values): the output starts
    /// with `_SEQUENCE_NUMBER` and `_VALUE_KIND`.
    KeyValue,
}

impl SystemColumns {
    fn fields(self) -> Vec<Field> {
        match self {
            SystemColumns::None => Vec::new(),
            SystemColumns::KeyValue => vec![
                Field::new(SEQUENCE_NUMBER, ArrowType::Int64, false),
                Field::new(VALUE_KIND, ArrowType::Int8, false),
            ],
        }
    }
}

/// The schema of the batches [`read_data_file`] yields: the system columns (if any), then
/// `tidelake_spec::arrow::to_arrow_field` of each read field.
pub fn output_schema(read_fields: &[DataField], system: SystemColumns) -> Result<SchemaRef> {
    let table = tidelake_spec::arrow::to_arrow_schema(read_fields)
        .map_err(|e| Error::from_spec("read schema", e))?;
    let mut fields = system.fields();
    fields.extend(table.fields().iter().map(|f| f.as_ref().clone()));
    Ok(Arc::new(Schema::new_with_metadata(
        fields,
        table.metadata().clone(),
    )))
}

/// Stream the rows of data file `rel_path` (relative to `io`'s root) as batches of
/// [`output_schema`]`(read_fields, system)`, at most `batch_size` rows each, without the rows
/// in `deletion`. `prune` may skip Parquet pages none of whose rows can match (never on a file
/// with a deletion vector); the rows it leaves are a superset of the matching ones.
#[allow(clippy::too_many_arguments)]
pub async fn read_data_file(
    io: &FileIO,
    rel_path: &str,
    format: FileFormat,
    file_fields: &[DataField],
    read_fields: &[DataField],
    system: SystemColumns,
    deletion: Option<Arc<DeletionVector>>,
    batch_size: usize,
    prune: Option<&PagePrune>,
) -> Result<BoxStream<'static, Result<RecordBatch>>> {
    let projector = Projector::new(io.display(rel_path), file_fields, read_fields, system)?;
    let columns = projector.physical_columns();
    let batch_size = batch_size.max(1);
    let deletion = deletion.filter(|dv| !dv.is_empty());
    let prune = prune
        .filter(|_| deletion.is_none())
        .map(|p| (p, file_fields, read_fields));
    let raw = match format {
        FileFormat::Parquet => parquet::open(io, rel_path, &columns, batch_size, prune).await?,
        FileFormat::Orc => {
            let nanos = projector.needs_nanoseconds();
            orc::open(io, rel_path, &columns, batch_size, nanos).await?
        }
        FileFormat::Avro => avro::open(io, rel_path, &columns, batch_size).await?,
    };
    let mut next_position = 0u64;
    let stream = raw.filter_map(move |item| {
        let out = item.and_then(|batch| {
            let start = next_position;
            next_position += batch.num_rows() as u64;
            let batch = match &deletion {
                Some(dv) => apply_deletions(batch, start, dv, &projector.path)?,
                None => batch,
            };
            if batch.num_rows() == 0 {
                return Ok(None);
            }
            projector.project(&batch).map(Some)
        });
        future::ready(out.transpose())
    });
    Ok(stream.boxed())
}

/// Drop the rows of `batch` (file positions `start..`) that `dv` deletes.
fn apply_deletions(
    batch: RecordBatch,
    start: u64,
    dv: &DeletionVector,
    path: &str,
) -> Result<RecordBatch> {
    let rows = batch.num_rows() as u64;
    if dv.count_in_range(start, start + rows) == 0 {
        return Ok(batch);
    }
    let keep: BooleanArray = (start..start + rows)
        .map(|pos| Some(!dv.contains(pos)))
        .collect();
    filter_record_batch(&batch, &keep)
        .map_err(|e| Error::arrow(format!("applying deletion vector to {path}"), e))
}

/// Where an output column comes from.
enum Source {
    /// A system column, read by its name.
    System(&'static str),
    /// A table field present in the file's schema.
    File {
        name: String,
        file_type: DataType,
        read_type: DataType,
        label: String,
    },
    /// A field added after the file was written.
    Absent,
}

/// Turns decoded batches into batches of the output schema.
struct Projector {
    path: String,
    schema: SchemaRef,
    sources: Vec<Source>,
}

impl Projector {
    fn new(
        path: String,
        file_fields: &[DataField],
        read_fields: &[DataField],
        system: SystemColumns,
    ) -> Result<Self> {
        let schema = output_schema(read_fields, system)?;
        let mut sources = Vec::with_capacity(schema.fields().len());
        if system == SystemColumns::KeyValue {
            sources.push(Source::System(SEQUENCE_NUMBER));
            sources.push(Source::System(VALUE_KIND));
        }
        for read in read_fields {
            sources.push(match evolution::field_by_id(file_fields, read.id) {
                Some(file) => Source::File {
                    name: file.name.clone(),
                    file_type: file.data_type.clone(),
                    read_type: read.data_type.clone(),
                    label: read.name.clone(),
                },
                None => Source::Absent,
            });
        }
        Ok(Projector {
            path,
            schema,
            sources,
        })
    }

    /// Names of the physical root columns to fetch.
    fn physical_columns(&self) -> Vec<String> {
        self.sources
            .iter()
            .filter_map(|s| match s {
                Source::System(name) => Some(name.to_string()),
                Source::File { name, .. } => Some(name.clone()),
                Source::Absent => None,
            })
            .collect()
    }

    /// Whether a fetched field holds timestamps of sub-microsecond precision.
    fn needs_nanoseconds(&self) -> bool {
        fn nanos(t: &DataType) -> bool {
            match &t.kind {
                TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p) => *p > 6,
                TypeKind::Array(e) | TypeKind::Multiset(e) => nanos(e),
                TypeKind::Map(k, v) => nanos(k) || nanos(v),
                TypeKind::Row(fields) => fields.iter().any(|f| nanos(&f.data_type)),
                _ => false,
            }
        }
        self.sources
            .iter()
            .any(|s| matches!(s, Source::File { read_type, .. } if nanos(read_type)))
    }

    fn project(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let rows = batch.num_rows();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.sources.len());
        for (source, field) in self.sources.iter().zip(self.schema.fields()) {
            let target = field.data_type();
            columns.push(match source {
                Source::System(name) => {
                    let column = batch.column_by_name(name).ok_or_else(|| {
                        Error::corrupt(&self.path, format!("primary-key data file without {name}"))
                    })?;
                    evolution::convert_leaf(column, target, name)?
                }
                Source::File {
                    name,
                    file_type,
                    read_type,
                    label,
                } => match batch.column_by_name(name) {
                    Some(column) => evolution::evolve(column, file_type, read_type, target, label)?,
                    None => new_null_array(target, rows),
                },
                Source::Absent => new_null_array(target, rows),
            });
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)
            .map_err(|e| Error::corrupt(&self.path, e))
    }
}

/// Indices of the `available` root columns whose names are `wanted`; if none is, the first
/// column, so that row counts are still known.
fn select_roots<'a>(available: impl Iterator<Item = &'a str>, wanted: &[String]) -> Vec<usize> {
    let wanted: HashSet<&str> = wanted.iter().map(String::as_str).collect();
    let mut count = 0;
    let picked: Vec<usize> = available
        .enumerate()
        .inspect(|_| count += 1)
        .filter(|(_, name)| wanted.contains(name))
        .map(|(i, _)| i)
        .collect();
    if picked.is_empty() && count > 0 {
        vec![0]
    } else {
        picked
    }
}

/// Ranged reads of one object, for the async format readers.
#[derive(Clone)]
struct RangeReader {
    origin: Origin,
    size: u64,
}

#[derive(Clone)]
enum Origin {
    Store {
        store: Arc<dyn ObjectStore>,
        path: Path,
    },
    /// A local file read in place ([`FileIO::local_file`]).
    #[cfg(unix)]
    Local(Arc<LocalFile>),
}

impl RangeReader {
    async fn new(io: &FileIO, rel_path: &str) -> Result<Self> {
        #[cfg(unix)]
        if let Some(file) = io.local_file(rel_path) {
            let file = file?;
            return Ok(RangeReader {
                size: file.size(),
                origin: Origin::Local(Arc::new(file)),
            });
        }
        let size = io.size(rel_path).await?;
        Ok(RangeReader {
            origin: Origin::Store {
                store: io.store().clone(),
                path: io.path(rel_path)?,
            },
            size,
        })
    }

    /// Whether reads are local and in place (cheap enough for small requests).
    fn is_local(&self) -> bool {
        !matches!(self.origin, Origin::Store { .. })
    }

    async fn get_range(&self, range: std::ops::Range<u64>) -> object_store::Result<Bytes> {
        match &self.origin {
            Origin::Store { store, path } => store.get_range(path, range).await,
            #[cfg(unix)]
            Origin::Local(file) => file.read_range(range),
        }
    }

    async fn get_ranges(
        &self,
        ranges: &[std::ops::Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        match &self.origin {
            Origin::Store { store, path } => store.get_ranges(path, ranges).await,
            #[cfg(unix)]
            Origin::Local(file) => ranges.iter().map(|r| file.read_range(r.clone())).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_from_name() {
        let ok = |n: &str| FileFormat::from_file_name(n).unwrap();
        assert_eq!(ok("data-1-0.parquet"), FileFormat::Parquet);
        assert_eq!(ok("data-1-0.zstd.parquet"), FileFormat::Parquet);
        assert_eq!(ok("bucket-0/data-1-0.ORC"), FileFormat::Orc);
        assert_eq!(ok("data-1-0.avro"), FileFormat::Avro);
        assert_eq!(ok("data-1-0.avro.zst"), FileFormat::Avro);
        assert!(FileFormat::from_file_name("data-1-0.csv").is_err());
        assert!(FileFormat::from_file_name("data-1-0").is_err());
        assert!(FileFormat::from_file_name("x.gz").is_err());
    }

    #[test]
    fn roots_selection() {
        let names = ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "id", "v"];
        let want = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            select_roots(names.into_iter(), &want(&["v", "_VALUE_KIND"])),
            vec![2, 4]
        );
        assert_eq!(select_roots(names.into_iter(), &want(&["gone"])), vec![0]);
        assert_eq!(
            select_roots(std::iter::empty(), &want(&["x"])),
            Vec::<usize>::new()
        );
    }
}
