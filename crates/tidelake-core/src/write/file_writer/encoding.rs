//! The data-file formats behind one face: a file's schema and encoder settings
//! ([`Encoding`]) and the file being written ([`EncodedFile`]), Parquet, ORC or Avro.
//!
//! Every format takes batches of the file's columns in their canonical
//! `tidelake_spec::arrow` types ([`Encoding::batch`] converts them to what its encoder
//! wants) and streams the file to the object store.

use arrow_array::{ArrayRef, RecordBatch};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::{ArrowError, DataType as ArrowType};

use super::avro::{AvroFile, AvroOptions, AvroSchema};
use super::orc::{OrcFile, OrcOptions, OrcSchema};
use super::parquet::{ParquetFile, ParquetOptions, PhysicalColumn, PhysicalSchema};
use super::WriterConfig;
use crate::error::Result;
use crate::io::FileIO;
use crate::read::data_file::FileFormat;

/// `column` as Arrow type `to`, failing on any value that does not convert exactly.
pub(super) fn strict_cast(
    column: &ArrayRef,
    to: &ArrowType,
) -> std::result::Result<ArrayRef, ArrowError> {
    if column.data_type() == to {
        return Ok(column.clone());
    }
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    cast_with_options(column, to, &strict)
}

/// Schema and settings of the files of one writer.
pub(super) enum Encoding {
    Parquet(PhysicalSchema, ParquetOptions),
    Orc(OrcSchema, OrcOptions),
    Avro(AvroSchema, AvroOptions),
}

impl Encoding {
    /// The encoding of files of `columns` under `config`; a column the format cannot hold is
    /// [`crate::error::Error::Unsupported`].
    pub(super) fn new(columns: &[PhysicalColumn], config: &WriterConfig) -> Result<Encoding> {
        Ok(match config.format {
            FileFormat::Parquet => Encoding::Parquet(
                PhysicalSchema::new(columns)?,
                ParquetOptions::new(
                    &config.compression,
                    config.zstd_level,
                    config.block_bytes,
                    config.dictionary,
                    (config.page_bytes, config.page_rows),
                )?,
            ),
            FileFormat::Orc => Encoding::Orc(
                OrcSchema::new(columns)?,
                // A file's size is known once its stripes are written: stripes never exceed the
                // target file size, so files roll near it.
                OrcOptions::new(
                    &config.compression,
                    config.block_bytes.min(config.target_file_size),
                )?,
            ),
            FileFormat::Avro => Encoding::Avro(
                AvroSchema::new(columns)?,
                AvroOptions::new(&config.compression, config.avro_codec.as_deref())?,
            ),
        })
    }

    /// The encoder's batch of `columns` (file order, canonical types).
    pub(super) fn batch(&self, columns: Vec<ArrayRef>) -> Result<RecordBatch> {
        match self {
            Encoding::Parquet(schema, _) => schema.batch(columns),
            Encoding::Orc(schema, _) => schema.batch(columns),
            Encoding::Avro(schema, _) => schema.batch(columns),
        }
    }

    /// Start a file at `rel_path`; `first` is its first rows as [`Encoding::batch`] made them.
    pub(super) fn create(
        &self,
        io: &FileIO,
        rel_path: &str,
        first: &RecordBatch,
    ) -> Result<EncodedFile> {
        Ok(match self {
            Encoding::Parquet(schema, options) => {
                let file = ParquetFile::create(io, rel_path, schema, options, first)?;
                EncodedFile::Parquet(Box::new(file))
            }
            Encoding::Orc(schema, options) => {
                EncodedFile::Orc(OrcFile::create(io, rel_path, schema, options)?)
            }
            Encoding::Avro(schema, options) => {
                EncodedFile::Avro(AvroFile::create(io, rel_path, schema, options)?)
            }
        })
    }
}

/// One data file being written.
pub(super) enum EncodedFile {
    Parquet(Box<ParquetFile>),
    Orc(OrcFile),
    Avro(AvroFile),
}

impl EncodedFile {
    pub(super) async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        match self {
            EncodedFile::Parquet(f) => f.write(batch).await,
            EncodedFile::Orc(f) => f.write(batch).await,
            EncodedFile::Avro(f) => f.write(batch).await,
        }
    }

    /// Bytes written so far plus what the open row group / stripe is expected to add.
    pub(super) fn estimated_size(&self) -> u64 {
        match self {
            EncodedFile::Parquet(f) => f.estimated_size(),
            EncodedFile::Orc(f) => f.estimated_size(),
            EncodedFile::Avro(f) => f.estimated_size(),
        }
    }

    /// Finish the file and complete its upload; returns its size in bytes.
    pub(super) async fn finish(self) -> Result<u64> {
        match self {
            EncodedFile::Parquet(f) => (*f).finish().await,
            EncodedFile::Orc(f) => f.finish().await,
            EncodedFile::Avro(f) => f.finish().await,
        }
    }

    /// Abandon the file (abort its upload); the caller deletes the path.
    pub(super) async fn abort(self) -> Result<()> {
        match self {
            EncodedFile::Parquet(f) => (*f).abort().await,
            EncodedFile::Orc(f) => f.abort().await,
            EncodedFile::Avro(f) => f.abort().await,
        }
    }
}
