//! Rolling data-file writers: Arrow batches in, Parquet, ORC or Avro data files (`file.format`,
//! module `encoding`) and their [`DataFileMeta`] out (Java `RollingFileWriterImpl` over
//! `KeyValueDataFileWriter` / `RowDataFileWriter`).
//!
//! Layouts ([`FileLayout`], format spec §6.1/§6.2):
//! * `KeyValue` input is `[_SEQUENCE_NUMBER Int64, _VALUE_KIND Int8, <every table column>]`,
//!   rows sorted by trimmed primary key (Java order), each key at most once per data file
//!   (changelog files repeat a key, one record per change) — the caller sorts and
//!   deduplicates (postpone files excepted: [`RollingWriter::unsorted`]); files hold
//!   `_KEY_<k>` (copies of the trimmed key columns), `_SEQUENCE_NUMBER`, `_VALUE_KIND`, then
//!   every table column;
//! * `Append` input and files are just the table columns.
//!
//! Rolling: a file is closed once its estimated size (bytes flushed + the open row group's
//! anticipated encoded size, Java `ParquetWriter.getDataSize`; for ORC and Avro the bytes
//! written so far) reaches `target-file-size`, or
//! its rows reach `target-file-row-num` (new data only). Like Java, the size is checked every
//! [`ROLL_CHECK_ROWS`] rows (input batches are sliced accordingly), so a file overshoots the
//! target by at most that many rows. Files are named `<prefix><uuid>-<n>.<format>` (or
//! `.<codec ext>.<format>` with `file.suffix.include.compression`) with one uuid per writer
//! and `n` counting from 0 (Java `DataFilePathFactory`).
//!
//! Metadata matches Java's: min/max key = framed BinaryRow of the first/last row's trimmed key;
//! key stats over `_KEY_*` (mode `truncate(128)` unless `fields._KEY_<k>.stats-mode`), value
//! stats per `metadata.stats-mode` with `metadata.stats-dense-store` (see `stats`); sequence
//! numbers from `_SEQUENCE_NUMBER` (key-value) or one per row counted from
//! [`RollingWriter::with_first_sequence_number`] (append); `_DELETE_ROW_COUNT` = exact number
//! of -U/-D rows (0 for append files); `_CREATION_TIME` = local wall clock encoded as UTC
//! (Java `LocalDateTime.now()`); append files are always level 0 (`DataFileMeta.forAppend`).
//!
//! Invariants: at most one row group of a file is in memory, the rest is already uploaded
//! (`parquet`); a NOT NULL column (nested fields included) holding a null is rejected before
//! anything is written; any failure deletes every file this writer created and makes it
//! unusable, as Java's rolling writer aborts on error; [`RollingWriter::abort`] deletes every
//! file including a partial one. `data-file.thin-mode` is not applied: files always carry the
//! `_KEY_*` columns, which every reader accepts.

mod avro;
mod encoding;
pub(crate) mod file_index;
mod imported;
mod orc;
mod parquet;
mod sink;
mod stats;

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, Int8Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef};
use tidelake_spec::arrow::to_arrow_type;
use tidelake_spec::binary_row::encode_framed;
use tidelake_spec::datum::Datum;
use tidelake_spec::file_index::{column_indexes, in_manifest_threshold, ColumnIndex};
use tidelake_spec::manifest::{DataFileMeta, FileSource, SimpleStats, EMPTY_ROW};
use tidelake_spec::options::Options;
use tidelake_spec::row_kind::RowKind;
use tidelake_spec::schema::{
    key_field_name_and_id, TableSchema, SEQUENCE_NUMBER_FIELD_ID, VALUE_KIND_FIELD_ID,
};
use tidelake_spec::types::{DataField, DataType, TypeKind};

use self::encoding::{EncodedFile, Encoding};
use self::file_index::{FileIndexes, IndexPlan};
pub(crate) use self::imported::imported_file_meta;
use self::parquet::PhysicalColumn;
use self::stats::{ColumnStats, StatsConfig, StatsMode};
use crate::datum_arrow::{compare_datums, datum_at};
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::layout::{DataPath, NewFilePath};
use crate::read::data_file::{FileFormat, SEQUENCE_NUMBER, VALUE_KIND};

/// Rows written between two size checks (Java `RollingFileWriter.CHECK_ROLLING_RECORD_CNT`).
pub const ROLL_CHECK_ROWS: usize = 1000;
/// parquet-mr's default data page size (`ParquetProperties.DEFAULT_PAGE_SIZE`).
const DEFAULT_PAGE_BYTES: u64 = 1024 * 1024;

/// parquet-mr's default rows per data page (`DEFAULT_PAGE_ROW_COUNT_LIMIT`), kept for append files.
const DEFAULT_PAGE_ROWS: usize = 20_000;

/// Rows per data page of key-value files unless `parquet.page.row.count.limit` says otherwise.
/// A lookup decodes, per key, one page of each column read in the file holding its newest
/// record, so smaller pages make lookups of many keys cheaper and full reads dearer (measured
/// on the lookup benchmark's table: 1,000 keys 96 ms at 2,048 rows, 64 ms at 1,024, 49 ms at
/// 512; full merged reads about +5% at 1,024, +17% at 512; see benches/LOG.md).
const KEYED_PAGE_ROWS: usize = 1_024;

/// Java's default Parquet row-group size (`ParquetWriter.DEFAULT_BLOCK_SIZE`).
const DEFAULT_BLOCK_SIZE: u64 = 128 * 1024 * 1024;
/// Java ORC's default stripe size (`orc.stripe.size`).
const DEFAULT_STRIPE_SIZE: u64 = 64 * 1024 * 1024;

/// What a data file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileLayout {
    /// Primary-key files: `_KEY_*`, `_SEQUENCE_NUMBER`, `_VALUE_KIND`, table columns.
    KeyValue,
    /// Append-table files: the table columns.
    Append,
}

/// Writer settings resolved from table options.
#[derive(Debug, Clone)]
pub struct WriterConfig {
    /// `file.format` (or its per-level / changelog override).
    pub format: FileFormat,
    /// `target-file-size` (128 MiB for primary-key tables, 256 MiB otherwise).
    pub target_file_size: u64,
    /// `target-file-row-num` (unlimited by default); ignored for compaction output.
    pub target_file_row_num: u64,
    /// `file.compression` (or its per-level / changelog override; for ORC `orc.compress`).
    pub compression: String,
    /// `avro.codec` (Avro files; wins over `compression`).
    pub avro_codec: Option<String>,
    /// `file.compression.zstd-level`.
    pub zstd_level: i32,
    /// Parquet row-group / ORC stripe size: `file.block-size`, else `parquet.block.size`
    /// (128 MiB) / `orc.stripe.size` (64 MiB).
    pub block_bytes: u64,
    /// `file.suffix.include.compression`: names end in `.<codec ext>.<format>`.
    pub suffix_include_compression: bool,
    /// `parquet.enable.dictionary` (default true), as Java hands it to parquet-mr.
    pub dictionary: bool,
    /// Parquet data pages end at `parquet.page.size` bytes (parquet-mr's default, 1 MiB) or at
    /// `parquet.page.row.count.limit` rows: parquet-mr's 20,000 for append files,
    /// [`KEYED_PAGE_ROWS`] for key-value files, whose pages point lookups and key ranges decode
    /// (the page index prunes whole pages, so a smaller page is less to decode per key).
    pub page_bytes: usize,
    /// See [`WriterConfig::page_bytes`].
    pub page_rows: usize,
    /// `file-index.<type>.*`: the indexes each file gets on its columns.
    pub file_indexes: Vec<ColumnIndex>,
    /// `file-index.in-manifest-threshold`.
    pub index_in_manifest_threshold: u64,
    /// The external roots new files go to ([`Options::data_file_write_roots`]); empty: the
    /// table directory.
    pub external_roots: Arc<[String]>,
    stats: StatsConfig,
}

impl WriterConfig {
    /// Settings for files of `layout` at `level`; `changelog` selects the `changelog-file.*`
    /// overrides. Formats other than Parquet, ORC and Avro, and options
    /// [`Options::check_writable`](tidelake_spec::options::Options::check_writable) refuses, are
    /// [`Error::Unsupported`].
    pub fn from_options(
        options: &Options,
        layout: FileLayout,
        level: i32,
        changelog: bool,
    ) -> Result<WriterConfig> {
        let spec = |e| Error::from_spec("table options", e);
        options.check_writable().map_err(spec)?;
        let key_value = layout == FileLayout::KeyValue;
        // Java KeyValueFileWriterFactory: changelog override, else per-level, else default.
        let resolve = |changelog_key: &str, per_level_key: &str, default: String| {
            if key_value && changelog {
                if let Some(v) = options.get(changelog_key) {
                    return Ok(v.to_string());
                }
            }
            if key_value {
                if let Some(v) = per_level(options, per_level_key, level)? {
                    return Ok(v);
                }
            }
            Ok::<_, Error>(default)
        };
        let format = resolve(
            "changelog-file.format",
            "file.format.per.level",
            options.file_format(),
        )?;
        let format = match format.to_ascii_lowercase().as_str() {
            "parquet" => FileFormat::Parquet,
            "orc" => FileFormat::Orc,
            "avro" => FileFormat::Avro,
            other => {
                return Err(Error::Unsupported(format!(
                    "writing file.format={other}: tidelake writes parquet, orc and avro data files"
                )))
            }
        };
        let mut compression = resolve(
            "changelog-file.compression",
            "file.compression.per.level",
            options.file_compression().to_string(),
        )?;
        // Java OrcWriterFactory: an explicit orc.compress wins.
        if let (FileFormat::Orc, Some(orc)) = (format, options.get("orc.compress")) {
            compression = orc.to_string();
        }
        let stats_mode = resolve(
            "changelog-file.stats-mode",
            "metadata.stats-mode.per.level",
            options.metadata_stats_mode().to_string(),
        )?;
        let (format_key, format_default) = match format {
            FileFormat::Orc => ("orc.stripe.size", DEFAULT_STRIPE_SIZE),
            _ => ("parquet.block.size", DEFAULT_BLOCK_SIZE),
        };
        let block_bytes = match options.get_memory_size("file.block-size").map_err(spec)? {
            Some(bytes) => bytes,
            None => options
                .get_memory_size(format_key)
                .map_err(spec)?
                .unwrap_or(format_default),
        };
        let row_num = options.get_i64("target-file-row-num").map_err(spec)?;
        Ok(WriterConfig {
            format,
            target_file_size: options.target_file_size(key_value).map_err(spec)?,
            target_file_row_num: match row_num {
                Some(n) if n > 0 => u64::try_from(n).unwrap_or(u64::MAX),
                Some(n) => {
                    return Err(Error::invalid(format!(
                        "target-file-row-num must be positive, but is {n}"
                    )))
                }
                None => u64::MAX,
            },
            compression,
            avro_codec: options.get("avro.codec").map(str::to_string),
            zstd_level: options.file_compression_zstd_level().map_err(spec)?,
            block_bytes,
            suffix_include_compression: options.file_suffix_include_compression().map_err(spec)?,
            dictionary: options
                .get_bool("parquet.enable.dictionary")
                .map_err(spec)?
                .unwrap_or(true),
            page_bytes: usize::try_from(
                options
                    .get_memory_size("parquet.page.size")
                    .map_err(spec)?
                    .unwrap_or(DEFAULT_PAGE_BYTES)
                    .max(1),
            )
            .unwrap_or(usize::MAX),
            page_rows: match options
                .get_i64("parquet.page.row.count.limit")
                .map_err(spec)?
            {
                Some(n) if n > 0 => usize::try_from(n).unwrap_or(usize::MAX),
                Some(n) => {
                    return Err(Error::invalid(format!(
                        "parquet.page.row.count.limit must be positive, but is {n}"
                    )))
                }
                None if key_value => KEYED_PAGE_ROWS,
                None => DEFAULT_PAGE_ROWS,
            },
            file_indexes: column_indexes(options).map_err(spec)?,
            index_in_manifest_threshold: in_manifest_threshold(options).map_err(spec)?,
            external_roots: options.data_file_write_roots().map_err(spec)?.into(),
            stats: StatsConfig::new(options, &stats_mode)?,
        })
    }
}

/// The value for `level` in a Java map option such as `0:avro,3:parquet`.
fn per_level(options: &Options, key: &str, level: i32) -> Result<Option<String>> {
    let Some(raw) = options.get(key) else {
        return Ok(None);
    };
    for entry in raw.split(',').filter(|e| !e.trim().is_empty()) {
        let (k, v) = entry.split_once(':').ok_or_else(|| {
            Error::invalid(format!("option '{key}' = '{raw}': expected level:value"))
        })?;
        let k: i32 = k.trim().parse().map_err(|_| {
            Error::invalid(format!("option '{key}' = '{raw}': '{k}' is not a level"))
        })?;
        if k == level {
            return Ok(Some(v.trim().to_string()));
        }
    }
    Ok(None)
}

/// File-name extension of a compression codec (Java `HadoopCompressionType.fileExtension`).
fn compression_extension(compression: &str) -> Option<String> {
    let lower = compression.to_ascii_lowercase();
    match lower.as_str() {
        "" | "none" => None,
        "gzip" => Some("gz".into()),
        "bzip2" => Some("bz2".into()),
        "zstd" => Some("zst".into()),
        _ => Some(compression.to_string()),
    }
}

/// What every file of one writer shares: schemas, stats modes, key positions.
struct FilePlan {
    /// The file's columns in their canonical Arrow types (what stats are computed on).
    logical: SchemaRef,
    encoding: Encoding,
    /// Canonical Arrow types of the table columns.
    value_types: Vec<ArrowType>,
    /// Index of the first table column in the physical batch.
    value_offset: usize,
    /// Positions of the trimmed primary-key columns among the table columns.
    key_positions: Vec<usize>,
    key_types: Vec<DataType>,
    key_modes: Vec<StatsMode>,
    value_modes: Vec<StatsMode>,
    format: FileFormat,
}

impl FilePlan {
    fn new(schema: &TableSchema, layout: FileLayout, config: &WriterConfig) -> Result<FilePlan> {
        let fields = &schema.fields;
        let has_key = !schema.primary_keys.is_empty();
        match (layout, has_key) {
            (FileLayout::KeyValue, false) => {
                return Err(Error::invalid(format!(
                    "key-value files need a primary key; schema {} has none",
                    schema.id
                )))
            }
            (FileLayout::Append, true) => {
                return Err(Error::invalid(format!(
                    "append files are for tables without a primary key; schema {} has one",
                    schema.id
                )))
            }
            _ => {}
        }
        let mut key_positions = Vec::new();
        for key in schema.trimmed_primary_keys() {
            let pos = fields
                .iter()
                .position(|f| f.name == key)
                .ok_or_else(|| Error::invalid(format!("primary key '{key}' is not a column")))?;
            key_positions.push(pos);
        }
        // A single-column key is distinct per row of a key-value file (changelog files may
        // repeat a key, rarely); so are sequence numbers. Such columns get no dictionary.
        let unique_key = |pos: usize| layout == FileLayout::KeyValue && key_positions == [pos];
        let mut columns = Vec::new();
        for &pos in &key_positions {
            let field = &fields[pos];
            let (name, field_id) = key_field_name_and_id(field);
            columns.push(PhysicalColumn {
                name,
                field_id,
                data_type: field.data_type.clone(),
                unique: unique_key(pos),
            });
        }
        if layout == FileLayout::KeyValue {
            columns.push(PhysicalColumn {
                name: SEQUENCE_NUMBER.into(),
                field_id: SEQUENCE_NUMBER_FIELD_ID,
                data_type: DataType::not_null(TypeKind::BigInt),
                unique: true,
            });
            columns.push(PhysicalColumn {
                name: VALUE_KIND.into(),
                field_id: VALUE_KIND_FIELD_ID,
                data_type: DataType::not_null(TypeKind::TinyInt),
                unique: false,
            });
        }
        let value_offset = columns.len();
        columns.extend(fields.iter().enumerate().map(|(pos, f)| PhysicalColumn {
            name: f.name.clone(),
            field_id: f.id,
            data_type: f.data_type.clone(),
            unique: unique_key(pos),
        }));
        let value_types = fields
            .iter()
            .map(|f| to_arrow_type(&f.data_type).map_err(|e| Error::from_spec("table schema", e)))
            .collect::<Result<Vec<_>>>()?;
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        let (key_modes, value_modes) = if config.format == FileFormat::Avro {
            // Java collects Avro stats per record over every file column, system ones alike
            // (`StatsCollectorFactories.createStatsFactoriesForAvro`).
            let all: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
            let modes = config.stats.avro_modes(&all);
            (
                modes[..key_positions.len()].to_vec(),
                modes[value_offset..].to_vec(),
            )
        } else {
            (
                columns[..key_positions.len()]
                    .iter()
                    .map(|c| config.stats.system_mode(&c.name))
                    .collect(),
                config.stats.value_modes(&names),
            )
        };
        let logical = columns
            .iter()
            .map(|c| {
                let ty = to_arrow_type(&c.data_type)
                    .map_err(|e| Error::from_spec("data file schema", e))?;
                Ok(Field::new(&c.name, ty, c.data_type.nullable))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(FilePlan {
            logical: Arc::new(Schema::new(logical)),
            encoding: Encoding::new(&columns, config)?,
            format: config.format,
            value_types,
            value_offset,
            key_types: key_positions
                .iter()
                .map(|&p| fields[p].data_type.clone())
                .collect(),
            key_modes,
            key_positions,
            value_modes,
        })
    }

    /// Stats accumulators of a new file, one per table column.
    fn new_column_stats(&self, fields: &[DataField]) -> Vec<ColumnStats> {
        fields
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mut modes = vec![self.value_modes[i]];
                if let Some(k) = self.key_positions.iter().position(|&p| p == i) {
                    modes.push(self.key_modes[k]);
                }
                ColumnStats::new(f.data_type.clone(), &modes, self.format)
            })
            .collect()
    }
}

/// The file currently being written.
struct OpenFile {
    name: String,
    /// Where it is written (relative to the table root, or external).
    path: String,
    /// Its `_EXTERNAL_PATH`.
    external: Option<String>,
    file: EncodedFile,
    rows: u64,
    columns: Vec<ColumnStats>,
    first_key: Option<Vec<Datum>>,
    last_key: Vec<Datum>,
    min_sequence: i64,
    max_sequence: i64,
    deletes: i64,
    indexes: Option<FileIndexes>,
}

/// Writes a stream of batches of one bucket into data files of bounded size.
pub struct RollingWriter {
    io: FileIO,
    dir: DataPath,
    schema: Arc<TableSchema>,
    layout: FileLayout,
    level: i32,
    file_source: FileSource,
    prefix: String,
    config: WriterConfig,
    plan: FilePlan,
    index_plan: IndexPlan,
    extension: String,
    uuid: String,
    next_file: u64,
    /// Append files: sequence number of the next row.
    next_sequence: i64,
    /// Key-value rows arrive sorted by key, each key once per file (all but postpone files).
    sorted: bool,
    current: Option<OpenFile>,
    /// Metadata of the closed files.
    finished: Vec<DataFileMeta>,
    /// Every path this writer created (closed files and the open one), root-relative.
    created: Vec<String>,
    failed: bool,
}

impl RollingWriter {
    /// A writer into `bucket_dir` (relative to the table root; or under the external roots of
    /// `config`, see [`DataPath`]) of files written with `schema`. `prefix` is
    /// `data-file.prefix` or `changelog-file.prefix`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        io: FileIO,
        bucket_dir: String,
        schema: Arc<TableSchema>,
        layout: FileLayout,
        level: i32,
        file_source: FileSource,
        prefix: String,
        mut config: WriterConfig,
    ) -> Result<RollingWriter> {
        if layout == FileLayout::Append && level != 0 {
            return Err(Error::invalid(format!(
                "append files are always level 0, not {level}"
            )));
        }
        if file_source == FileSource::Compact {
            // Java applies target-file-row-num to new data only.
            config.target_file_row_num = u64::MAX;
        }
        let plan = FilePlan::new(&schema, layout, &config)?;
        let index_plan = IndexPlan::new(
            &schema,
            &config.file_indexes,
            config.index_in_manifest_threshold,
        )?;
        let format = config.format.identifier();
        let extension = match compression_extension(&config.compression) {
            Some(ext) if config.suffix_include_compression => format!("{ext}.{format}"),
            _ => format.to_string(),
        };
        Ok(RollingWriter {
            uuid: io.env().uuid_string(),
            dir: DataPath::new(&io, &bucket_dir, config.external_roots.clone())?,
            io,
            schema,
            layout,
            level,
            file_source,
            prefix,
            config,
            plan,
            index_plan,
            extension,
            next_file: 0,
            next_sequence: 0,
            sorted: true,
            current: None,
            finished: Vec::new(),
            created: Vec::new(),
            failed: false,
        })
    }

    /// Append files: the sequence number of the first row written (Java: the bucket's max
    /// sequence number + 1); rows are numbered consecutively from it. Default 0.
    pub fn with_first_sequence_number(mut self, first: i64) -> RollingWriter {
        self.next_sequence = first;
        self
    }

    /// Key-value rows arrive in any order, a key possibly repeated (postpone-bucket files:
    /// min/max key are then just the first and last row's, as in Java).
    pub fn unsorted(mut self) -> RollingWriter {
        self.sorted = false;
        self
    }

    /// Write one batch (see the module docs for its schema). Empty batches are ignored.
    pub async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if self.failed {
            return Err(Error::invalid(
                "data-file writer failed earlier and deleted its files",
            ));
        }
        match self.write_batch(batch).await {
            Ok(()) => Ok(()),
            Err(e) => {
                self.fail().await;
                Err(e)
            }
        }
    }

    /// Close the open file and return the metadata of every file written, in order.
    pub async fn close(mut self) -> Result<Vec<DataFileMeta>> {
        if self.failed {
            return Err(Error::invalid(
                "data-file writer failed earlier and deleted its files",
            ));
        }
        if let Err(e) = self.close_current().await {
            self.fail().await;
            return Err(e);
        }
        Ok(self.finished)
    }

    /// Delete every file this writer created, including a partially written one.
    pub async fn abort(mut self) -> Result<()> {
        let mut first_error = None;
        if let Some(open) = self.current.take() {
            first_error = open.file.abort().await.err();
        }
        for path in std::mem::take(&mut self.created) {
            if let Err(e) = self.io.delete(&path).await {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Best-effort cleanup after an error; the writer stays unusable.
    async fn fail(&mut self) {
        self.failed = true;
        if let Some(open) = self.current.take() {
            // Already failing: cleanup errors cannot be reported better than the first one.
            let _ = open.file.abort().await;
        }
        for path in std::mem::take(&mut self.created) {
            let _ = self.io.delete(&path).await;
        }
    }

    async fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let rows = batch.num_rows();
        if rows == 0 {
            return Ok(());
        }
        let physical = self.file_batch(batch)?;
        let mut offset = 0;
        while offset < rows {
            if self.current.is_none() {
                self.open_file(&physical.slice(offset, (rows - offset).min(ROLL_CHECK_ROWS)))?;
            }
            let open = self
                .current
                .as_mut()
                .ok_or_else(|| Error::invalid("no open file"))?;
            let room = self.config.target_file_row_num.saturating_sub(open.rows);
            let len = (rows - offset)
                .min(ROLL_CHECK_ROWS)
                .min(usize::try_from(room).unwrap_or(usize::MAX))
                .max(1);
            let chunk = physical.slice(offset, len);
            self.write_chunk(&chunk).await?;
            offset += len;
            let open = self
                .current
                .as_ref()
                .ok_or_else(|| Error::invalid("no open file"))?;
            if open.rows >= self.config.target_file_row_num
                || open.file.estimated_size() >= self.config.target_file_size
            {
                self.close_current().await?;
            }
        }
        Ok(())
    }

    /// Validate `batch` and lay it out as the file's columns (canonical Arrow types).
    fn file_batch(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let fields = &self.schema.fields;
        let system = match self.layout {
            FileLayout::KeyValue => 2,
            FileLayout::Append => 0,
        };
        if batch.num_columns() != system + fields.len() {
            let mut expected: Vec<&str> = Vec::new();
            if system > 0 {
                expected.extend([SEQUENCE_NUMBER, VALUE_KIND]);
            }
            expected.extend(fields.iter().map(|f| f.name.as_str()));
            return Err(Error::SchemaMismatch(format!(
                "data-file batch has {} columns, expected [{}]",
                batch.num_columns(),
                expected.join(", ")
            )));
        }
        let mut values = Vec::with_capacity(fields.len());
        for ((field, expected), column) in fields
            .iter()
            .zip(&self.plan.value_types)
            .zip(&batch.columns()[system..])
        {
            let column = conform_type(column, expected, &field.name)?;
            check_nulls(column.as_ref(), &field.data_type, &field.name)?;
            values.push(column);
        }
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.plan.value_offset + values.len());
        columns.extend(self.plan.key_positions.iter().map(|&p| values[p].clone()));
        if system > 0 {
            let sequence = batch.column(0);
            let kinds = batch.column(1);
            if sequence.data_type() != &ArrowType::Int64 || sequence.null_count() > 0 {
                return Err(Error::SchemaMismatch(format!(
                    "{SEQUENCE_NUMBER} must be a non-null Int64 column, got {}",
                    sequence.data_type()
                )));
            }
            if kinds.data_type() != &ArrowType::Int8 || kinds.null_count() > 0 {
                return Err(Error::SchemaMismatch(format!(
                    "{VALUE_KIND} must be a non-null Int8 column, got {}",
                    kinds.data_type()
                )));
            }
            if let Some(bad) = kinds
                .as_primitive::<Int8Type>()
                .values()
                .iter()
                .find(|k| RowKind::from_code(**k).is_none())
            {
                return Err(Error::invalid(format!(
                    "{VALUE_KIND} {bad} is not a row kind (0..=3)"
                )));
            }
            columns.push(sequence.clone());
            columns.push(kinds.clone());
        }
        columns.extend(values);
        RecordBatch::try_new(self.plan.logical.clone(), columns)
            .map_err(|e| Error::arrow("assembling a data-file batch", e))
    }

    /// Start the next file, whose first rows are `first` (file layout).
    fn open_file(&mut self, first: &RecordBatch) -> Result<()> {
        let name = format!(
            "{}{}-{}.{}",
            self.prefix, self.uuid, self.next_file, self.extension
        );
        self.next_file += 1;
        let NewFilePath { path, external } = self.dir.next(&name);
        let first = self.plan.encoding.batch(first.columns().to_vec())?;
        let file = self.plan.encoding.create(&self.io, &path, &first)?;
        self.created.push(path.clone());
        self.current = Some(OpenFile {
            name,
            path,
            external,
            file,
            rows: 0,
            columns: self.plan.new_column_stats(&self.schema.fields),
            first_key: None,
            last_key: Vec::new(),
            min_sequence: i64::MAX,
            max_sequence: i64::MIN,
            deletes: 0,
            indexes: self.index_plan.start()?,
        });
        Ok(())
    }

    /// Write a non-empty slice of a physical batch into the open file.
    async fn write_chunk(&mut self, chunk: &RecordBatch) -> Result<()> {
        let plan = &self.plan;
        let open = self
            .current
            .as_mut()
            .ok_or_else(|| Error::invalid("no open file"))?;
        let rows = chunk.num_rows();
        for (stats, column) in open
            .columns
            .iter_mut()
            .zip(&chunk.columns()[plan.value_offset..])
        {
            stats.update(column.as_ref())?;
        }
        if let Some(indexes) = &mut open.indexes {
            indexes.update(&chunk.columns()[plan.value_offset..])?;
        }
        match self.layout {
            FileLayout::KeyValue => {
                let seq_index = plan.key_positions.len();
                let sequences = chunk.column(seq_index).as_primitive::<Int64Type>();
                for &s in sequences.values().iter() {
                    open.min_sequence = open.min_sequence.min(s);
                    open.max_sequence = open.max_sequence.max(s);
                }
                let kinds = chunk.column(seq_index + 1).as_primitive::<Int8Type>();
                let retracts = kinds
                    .values()
                    .iter()
                    .filter(|k| RowKind::from_code(**k).is_some_and(RowKind::is_retract))
                    .count();
                open.deletes += i64::try_from(retracts).unwrap_or(i64::MAX);
                let key_at = |row: usize| -> Result<Vec<Datum>> {
                    plan.key_positions
                        .iter()
                        .zip(&plan.key_types)
                        .map(|(&p, ty)| {
                            datum_at(chunk.column(plan.value_offset + p).as_ref(), row, ty)
                        })
                        .collect()
                };
                let first = key_at(0)?;
                // Changelog files repeat a key (one record per change): keys never decrease.
                debug_assert!(
                    !self.sorted
                        || open.first_key.is_none()
                        || compare_datums(
                            &Datum::Row(open.last_key.clone()),
                            &Datum::Row(first.clone())
                        ) != Some(std::cmp::Ordering::Greater),
                    "key-value rows must arrive sorted by key"
                );
                open.first_key.get_or_insert(first);
                open.last_key = key_at(rows - 1)?;
            }
            FileLayout::Append => {
                let count = i64::try_from(rows).unwrap_or(i64::MAX);
                open.min_sequence = open.min_sequence.min(self.next_sequence);
                self.next_sequence = self.next_sequence.saturating_add(count);
                open.max_sequence = self.next_sequence - 1;
            }
        }
        let encoded = plan.encoding.batch(chunk.columns().to_vec())?;
        open.file.write(&encoded).await?;
        open.rows += rows as u64;
        Ok(())
    }

    async fn close_current(&mut self) -> Result<()> {
        let Some(open) = self.current.take() else {
            return Ok(());
        };
        let file_size = open.file.finish().await?;
        let (embedded_index, extra_files) = match open.indexes {
            Some(indexes) => {
                indexes
                    .finish(&self.io, &open.path, &mut self.created)
                    .await?
            }
            None => (None, Vec::new()),
        };
        let mut meta = self.file_meta(
            open.name,
            open.rows,
            file_size,
            &open.columns,
            open.first_key,
            open.last_key,
            (open.min_sequence, open.max_sequence),
            open.deletes,
        )?;
        meta.embedded_index = embedded_index;
        meta.extra_files = extra_files;
        meta.external_path = open.external;
        self.finished.push(meta);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn file_meta(
        &self,
        file_name: String,
        rows: u64,
        file_size: u64,
        columns: &[ColumnStats],
        first_key: Option<Vec<Datum>>,
        last_key: Vec<Datum>,
        (min_sequence, max_sequence): (i64, i64),
        deletes: i64,
    ) -> Result<DataFileMeta> {
        let plan = &self.plan;
        let fields = &self.schema.fields;
        let value_stats = columns
            .iter()
            .zip(&plan.value_modes)
            .map(|(c, mode)| c.finish(*mode))
            .collect();
        let (value_stats_cols, value_stats) =
            stats::value_stats(value_stats, fields, self.config.stats.dense)?;
        let (min_key, max_key, key_stats, level, delete_row_count) = match self.layout {
            FileLayout::KeyValue => {
                let encode = |key: &[Datum]| {
                    encode_framed(key, &plan.key_types).map_err(|e| Error::from_spec("key", e))
                };
                let first_key = first_key.unwrap_or_default();
                let key_stats: Vec<_> = plan
                    .key_positions
                    .iter()
                    .zip(&plan.key_modes)
                    .map(|(&p, mode)| columns[p].finish(*mode))
                    .collect();
                (
                    encode(&first_key)?,
                    encode(&last_key)?,
                    stats::all_mode(&key_stats, &plan.key_types)?,
                    self.level,
                    deletes,
                )
            }
            FileLayout::Append => (
                EMPTY_ROW.to_vec(),
                EMPTY_ROW.to_vec(),
                SimpleStats::empty(),
                0,
                0,
            ),
        };
        Ok(DataFileMeta {
            file_name,
            file_size: i64::try_from(file_size).unwrap_or(i64::MAX),
            row_count: i64::try_from(rows).unwrap_or(i64::MAX),
            min_key,
            max_key,
            key_stats,
            value_stats,
            min_sequence_number: min_sequence,
            max_sequence_number: max_sequence,
            schema_id: self.schema.id,
            level,
            extra_files: Vec::new(),
            creation_time: Some(self.io.env().local_now_millis()),
            delete_row_count: Some(delete_row_count),
            embedded_index: None,
            file_source: Some(self.file_source),
            value_stats_cols,
            external_path: None,
            first_row_id: None,
            write_cols: None,
            write_cols_sequences: None,
        })
    }
}

/// `column` as Arrow type `expected`: equal types pass, types differing only in nested field
/// names are renamed, anything else is a schema mismatch.
fn conform_type(column: &ArrayRef, expected: &ArrowType, name: &str) -> Result<ArrayRef> {
    if column.data_type() == expected {
        return Ok(column.clone());
    }
    if !column.data_type().equals_datatype(expected) {
        return Err(Error::SchemaMismatch(format!(
            "column '{name}' has Arrow type {}, expected {expected}",
            column.data_type()
        )));
    }
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    cast_with_options(column, expected, &strict)
        .map_err(|e| Error::arrow(format!("column '{name}'"), e))
}

/// Reject nulls in NOT NULL positions: the column itself and, within present values, NOT NULL
/// ROW fields, array elements, map keys and values (Parquet would store garbage for them).
fn check_nulls(array: &dyn Array, ty: &DataType, column: &str) -> Result<()> {
    if !ty.nullable && array.null_count() > 0 {
        return Err(null_error(column));
    }
    if !has_required_descendant(ty) {
        return Ok(());
    }
    let present: Vec<bool> = (0..array.len()).map(|i| array.is_valid(i)).collect();
    check_nested_nulls(array, ty, &present, column)
}

fn null_error(column: &str) -> Error {
    Error::SchemaMismatch(format!("column '{column}' is NOT NULL but holds nulls"))
}

fn has_required_descendant(ty: &DataType) -> bool {
    let required = |t: &DataType| !t.nullable || has_required_descendant(t);
    match &ty.kind {
        TypeKind::Array(e) => required(e),
        TypeKind::Map(..) | TypeKind::Multiset(_) => true,
        TypeKind::Row(fields) => fields.iter().any(|f| required(&f.data_type)),
        _ => false,
    }
}

/// `present[i]`: position `i` of `array` holds a value whose ancestors are all present.
fn check_nested_nulls(
    array: &dyn Array,
    ty: &DataType,
    present: &[bool],
    column: &str,
) -> Result<()> {
    // Positions of `child` reachable from present parents, failing on a null where required.
    let child_presence =
        |child: &dyn Array, reachable: Vec<bool>, child_ty: &DataType, label: String| {
            let mut out = reachable;
            for (i, p) in out.iter_mut().enumerate() {
                if *p && child.is_null(i) {
                    if !child_ty.nullable {
                        return Err(null_error(&label));
                    }
                    *p = false;
                }
            }
            Ok(out)
        };
    // Positions of a list/map child array covered by present parents.
    let spanned = |offsets: &[i32], len: usize| {
        let mut out = vec![false; len];
        for (i, w) in offsets.windows(2).enumerate() {
            if present[i] {
                let (start, end) = (w[0].max(0) as usize, (w[1].max(0) as usize).min(len));
                out.iter_mut().take(end).skip(start).for_each(|p| *p = true);
            }
        }
        out
    };
    match &ty.kind {
        TypeKind::Row(fields) => {
            let row = array.as_struct();
            for (field, child) in fields.iter().zip(row.columns()) {
                let label = format!("{column}.{}", field.name);
                let reach = child_presence(
                    child.as_ref(),
                    present.to_vec(),
                    &field.data_type,
                    label.clone(),
                )?;
                if has_required_descendant(&field.data_type) {
                    check_nested_nulls(child.as_ref(), &field.data_type, &reach, &label)?;
                }
            }
        }
        TypeKind::Array(element) => {
            let list = array.as_list::<i32>();
            let values = list.values();
            let label = format!("{column}[]");
            let reach = spanned(list.value_offsets(), values.len());
            let reach = child_presence(values.as_ref(), reach, element, label.clone())?;
            if has_required_descendant(element) {
                check_nested_nulls(values.as_ref(), element, &reach, &label)?;
            }
        }
        TypeKind::Map(..) | TypeKind::Multiset(_) => {
            let count = DataType::not_null(TypeKind::Int);
            let (key, value) = match &ty.kind {
                TypeKind::Map(k, v) => (k.with_nullable(false), v.as_ref().clone()),
                TypeKind::Multiset(e) => (e.with_nullable(false), count),
                _ => return Ok(()),
            };
            let map = array.as_map();
            let spans = spanned(map.value_offsets(), map.keys().len());
            for (child, child_ty, label) in [
                (map.keys(), &key, format!("{column}.key")),
                (map.values(), &value, format!("{column}.value")),
            ] {
                let reach = child_presence(child.as_ref(), spans.clone(), child_ty, label.clone())?;
                if has_required_descendant(child_ty) {
                    check_nested_nulls(child.as_ref(), child_ty, &reach, &label)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod format_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int32Array, ListArray, StructArray};
    use arrow_buffer::{NullBuffer, OffsetBuffer};
    use arrow_schema::Field;

    #[test]
    fn per_level_values() {
        let mut options = Options::new();
        options.set("file.compression.per.level", "0:lz4, 2 : zstd");
        assert_eq!(
            per_level(&options, "file.compression.per.level", 2).unwrap(),
            Some("zstd".into())
        );
        assert_eq!(
            per_level(&options, "file.compression.per.level", 1).unwrap(),
            None
        );
        options.set("file.compression.per.level", "x");
        assert!(per_level(&options, "file.compression.per.level", 1).is_err());
    }

    #[test]
    fn config_chooses_the_format() {
        let mut options = Options::new();
        options.set("file.format", "csv");
        let err = WriterConfig::from_options(&options, FileLayout::Append, 0, false).unwrap_err();
        assert!(matches!(err, Error::Unsupported(_)), "{err}");
        options.set("file.format", "ORC");
        let config = WriterConfig::from_options(&options, FileLayout::Append, 0, false).unwrap();
        assert_eq!(config.format, FileFormat::Orc);
        assert_eq!(config.block_bytes, DEFAULT_STRIPE_SIZE);
        options.set("file.format", "parquet");
        options.set("file.format.per.level", "0:avro");
        let level0 = WriterConfig::from_options(&options, FileLayout::KeyValue, 0, false).unwrap();
        assert_eq!(level0.format, FileFormat::Avro);
        let level1 = WriterConfig::from_options(&options, FileLayout::KeyValue, 1, false).unwrap();
        assert_eq!(level1.format, FileFormat::Parquet);
        assert_eq!(level1.block_bytes, DEFAULT_BLOCK_SIZE);
    }

    #[test]
    fn page_limits_default_by_layout_and_follow_the_parquet_options() {
        let options = Options::new();
        let kv = WriterConfig::from_options(&options, FileLayout::KeyValue, 0, false).unwrap();
        let append = WriterConfig::from_options(&options, FileLayout::Append, 0, false).unwrap();
        assert_eq!((kv.page_rows, kv.page_bytes), (KEYED_PAGE_ROWS, 1 << 20));
        assert_eq!(
            (append.page_rows, append.page_bytes),
            (DEFAULT_PAGE_ROWS, 1 << 20)
        );

        let mut options = Options::new();
        options.set("parquet.page.row.count.limit", "500");
        options.set("parquet.page.size", "64 kb");
        let kv = WriterConfig::from_options(&options, FileLayout::KeyValue, 0, false).unwrap();
        assert_eq!((kv.page_rows, kv.page_bytes), (500, 64 << 10));
        let Encoding::Parquet(_, parquet) = Encoding::new(&[], &kv).unwrap() else {
            panic!("parquet expected");
        };
        assert_eq!((parquet.page_rows, parquet.page_bytes), (500, 64 << 10));

        options.set("parquet.page.row.count.limit", "0");
        let err = WriterConfig::from_options(&options, FileLayout::KeyValue, 0, false).unwrap_err();
        assert!(
            err.to_string().contains("parquet.page.row.count.limit"),
            "{err}"
        );
    }

    #[test]
    fn nested_not_null_checks_respect_parents() {
        let int_nn = DataType::not_null(TypeKind::Int);
        let row = DataType::new(TypeKind::Row(vec![DataField::new(1, "x", int_nn.clone())]));
        // A null child under a null parent is fine; under a present parent it is not.
        let child = Arc::new(Int32Array::from(vec![None, Some(1)])) as ArrayRef;
        let fields = vec![Field::new("x", ArrowType::Int32, false)];
        let ok = StructArray::try_new(
            fields.into(),
            vec![child],
            Some(NullBuffer::from(vec![false, true])),
        );
        // arrow-rs itself rejects such arrays when the child field is non-nullable.
        if let Ok(ok) = ok {
            check_nulls(&ok, &row, "r").unwrap();
        }
        let list_ty = DataType::new(TypeKind::Array(Box::new(int_nn)));
        let values = Arc::new(Int32Array::from(vec![Some(1), None])) as ArrayRef;
        let list = ListArray::new(
            Arc::new(Field::new_list_field(ArrowType::Int32, true)),
            OffsetBuffer::new(vec![0, 1, 2].into()),
            values,
            Some(NullBuffer::from(vec![true, false])),
        );
        check_nulls(&list, &list_ty, "l").unwrap();
        let values = Arc::new(Int32Array::from(vec![Some(1), None])) as ArrayRef;
        let list = ListArray::new(
            Arc::new(Field::new_list_field(ArrowType::Int32, true)),
            OffsetBuffer::new(vec![0, 1, 2].into()),
            values,
            None,
        );
        assert!(check_nulls(&list, &list_ty, "l").is_err());
    }
}
