//! The ORC side of data-file writing (orc-rust's Arrow writer).
//!
//! Schema (Java `OrcTypeUtil.convertToOrcSchema` after `OrcFileFormat.refineDataType`): a
//! struct of the file's columns by name; BOOLEAN → boolean, TINYINT → byte, SMALLINT → short,
//! INT and TIME (milliseconds of the day) → int, BIGINT → long, FLOAT → float, DOUBLE →
//! double, DECIMAL(p, s) → decimal(p, s), DATE → date, TIMESTAMP(p) → timestamp,
//! TIMESTAMP(p) WITH LOCAL TIME ZONE → timestamp with local time zone (values in UTC),
//! STRING → string, BINARY/VARBINARY → binary, ROW → struct of its fields by name, ARRAY →
//! list, MAP → map, MULTISET → map of the element to its INT NOT NULL count, nested at any
//! depth with the same rules. VARCHAR(n) and CHAR(n) are written as string (orc-rust has
//! neither; Java's reader converts the column to its varchar(n) / char(n)). ORC CHAR values lose
//! their trailing spaces (Java pads them on write and its reader trims them), so top-level CHAR
//! values are written without them and every reader sees what Java sees; CHAR values nested in
//! ROW/ARRAY/MAP are written as they are.
//!
//! The encoders of DECIMAL and of the nested types are a patch of orc-rust 0.9
//! (`vendor/orc-rust/PATCHES.md`). orc-rust writes no ORC type attributes, so the files carry
//! none of Java's `paimon.id` attributes, and no column statistics: readers (Java's and
//! tidelake's) match ORC columns and struct fields by name, as Java does for files without
//! field ids. VARIANT and BLOB columns (also nested), which Java's ORC schema conversion refuses
//! too, are refused ([`Error::Unsupported`] naming the column) before anything is written.
//!
//! Codecs (Java `CompressionKind.valueOf(file.compression.toUpperCase())`, or `orc.compress`):
//! none, zlib, snappy, lz4, zstd; LZO and Brotli have no encoder in orc-rust. Stripes close at
//! `file.block-size` (else `orc.stripe.size`, else Java's 64 MiB; at most `target-file-size`)
//! of estimated memory; a file's estimated size is the bytes of its closed stripes. orc-rust's writer is not `Send`:
//! each file is encoded on a thread of its own (see [`OrcFile`]).

use std::sync::{mpsc, Arc};

use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType as ArrowType, Field, FieldRef, Schema, SchemaRef};
use orc_rust::arrow_writer::{ArrowWriter, ArrowWriterBuilder};
use orc_rust::compression::CompressionType;
use orc_rust::error::OrcError;
use tidelake_spec::arrow::to_arrow_type;
use tidelake_spec::types::{DataType, TypeKind};
use tokio::sync::oneshot;

use super::encoding::strict_cast;
use super::parquet::PhysicalColumn;
use super::sink::{BufferedUpload, SharedBuffer};
use crate::error::{Error, Result};
use crate::io::FileIO;

/// Encoder settings of one writer.
#[derive(Debug, Clone)]
pub(super) struct OrcOptions {
    compression: Option<CompressionType>,
    stripe_bytes: usize,
}

impl OrcOptions {
    pub(super) fn new(compression: &str, stripe_bytes: u64) -> Result<OrcOptions> {
        let compression = match compression.to_ascii_lowercase().as_str() {
            "none" => None,
            "zlib" => Some(CompressionType::Zlib),
            "snappy" => Some(CompressionType::Snappy),
            "lz4" => Some(CompressionType::Lz4),
            "zstd" => Some(CompressionType::Zstd),
            other => {
                return Err(Error::Unsupported(format!(
                    "file.compression '{other}' for ORC files (supported: none, zlib, snappy, \
                     lz4, zstd)"
                )))
            }
        };
        Ok(OrcOptions {
            compression,
            stripe_bytes: usize::try_from(stripe_bytes.max(1)).unwrap_or(usize::MAX),
        })
    }
}

/// The Arrow schema orc-rust encodes a file's columns from.
pub(super) struct OrcSchema {
    arrow: SchemaRef,
    /// Per column: whether it is CHAR(n) (values written without trailing spaces).
    chars: Vec<bool>,
}

impl OrcSchema {
    pub(super) fn new(columns: &[PhysicalColumn]) -> Result<OrcSchema> {
        let mut fields = Vec::with_capacity(columns.len());
        for column in columns {
            if let Some(unwritable) = unwritable(&column.data_type) {
                return Err(Error::Unsupported(format!(
                    "writing column '{}' of type {} to an ORC file: ORC files cannot hold {} \
                     values; use file.format=parquet",
                    column.name, column.data_type, unwritable
                )));
            }
            let logical = to_arrow_type(&column.data_type)
                .map_err(|e| Error::from_spec("data file schema", e))?;
            fields.push(Field::new(
                &column.name,
                encoded_type(logical),
                column.data_type.nullable,
            ));
        }
        Ok(OrcSchema {
            arrow: Arc::new(Schema::new(fields)),
            chars: columns
                .iter()
                .map(|c| matches!(c.data_type.kind, TypeKind::Char(_)))
                .collect(),
        })
    }

    /// Columns in file order (canonical `tidelake_spec::arrow` types) as the encoder wants them.
    pub(super) fn batch(&self, columns: Vec<ArrayRef>) -> Result<RecordBatch> {
        let columns = columns
            .iter()
            .zip(self.arrow.fields().iter().zip(&self.chars))
            .map(|(column, (field, is_char))| {
                if *is_char {
                    let trimmed: StringArray = column
                        .as_string::<i32>()
                        .iter()
                        .map(|v| v.map(|s| s.trim_end_matches(' ')))
                        .collect();
                    return Ok(Arc::new(trimmed) as ArrayRef);
                }
                strict_cast(column, field.data_type())
                    .map_err(|e| Error::arrow(format!("encoding ORC column '{}'", field.name()), e))
            })
            .collect::<Result<Vec<_>>>()?;
        RecordBatch::try_new(self.arrow.clone(), columns)
            .map_err(|e| Error::arrow("assembling an ORC batch", e))
    }
}

/// The first type in `data_type` (itself, or nested in it) Java's ORC schema conversion
/// refuses.
fn unwritable(data_type: &DataType) -> Option<&DataType> {
    match &data_type.kind {
        TypeKind::Variant | TypeKind::Blob => Some(data_type),
        TypeKind::Array(element) | TypeKind::Multiset(element) => unwritable(element),
        TypeKind::Map(key, value) => unwritable(key).or_else(|| unwritable(value)),
        TypeKind::Row(fields) => fields.iter().find_map(|f| unwritable(&f.data_type)),
        _ => None,
    }
}

/// The Arrow type orc-rust encodes a column of canonical type `logical` from: TIME as its
/// milliseconds of the day (int) and BINARY(n) as binary, at any depth.
fn encoded_type(logical: ArrowType) -> ArrowType {
    let field = |f: &FieldRef| {
        Arc::new(
            f.as_ref()
                .clone()
                .with_data_type(encoded_type(f.data_type().clone())),
        )
    };
    match logical {
        ArrowType::Time32(_) => ArrowType::Int32,
        ArrowType::FixedSizeBinary(_) => ArrowType::Binary,
        ArrowType::List(element) => ArrowType::List(field(&element)),
        ArrowType::Map(entries, sorted) => ArrowType::Map(field(&entries), sorted),
        ArrowType::Struct(fields) => ArrowType::Struct(fields.iter().map(field).collect()),
        other => other,
    }
}

/// What the encoder thread of an [`OrcFile`] is asked to do; each reply says how it went.
enum Command {
    Write(RecordBatch, oneshot::Sender<Result<()>>),
    Close(oneshot::Sender<Result<()>>),
}

/// One ORC file being written. orc-rust's writer is not `Send`, so it lives on a thread of its
/// own that encodes into the file's buffer; the upload drains that buffer after each command.
pub(super) struct OrcFile {
    commands: mpsc::Sender<Command>,
    upload: BufferedUpload,
}

impl OrcFile {
    pub(super) fn create(
        io: &FileIO,
        rel_path: &str,
        schema: &OrcSchema,
        options: &OrcOptions,
    ) -> Result<OrcFile> {
        let (upload, buffer) = BufferedUpload::new(io, rel_path)?;
        let (commands, inbox) = mpsc::channel();
        let arrow = schema.arrow.clone();
        let options = options.clone();
        let display = upload.display.clone();
        std::thread::Builder::new()
            .name("tidelake-orc-writer".into())
            .spawn(move || encode_file(buffer, arrow, options, display, inbox))
            .map_err(|e| Error::Internal(format!("starting an ORC encoder thread: {e}")))?;
        Ok(OrcFile { commands, upload })
    }

    pub(super) async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        ask(&self.commands, &self.upload.display, |reply| {
            Command::Write(batch.clone(), reply)
        })
        .await?;
        self.upload.drain().await
    }

    /// Bytes of the stripes written so far.
    pub(super) fn estimated_size(&self) -> u64 {
        self.upload.bytes_written()
    }

    /// Write the last stripe and the file tail, complete the upload; returns the file size.
    pub(super) async fn finish(self) -> Result<u64> {
        ask(&self.commands, &self.upload.display, Command::Close).await?;
        self.upload.finish().await
    }

    /// Abandon the file (the encoder thread ends once its commands are dropped).
    pub(super) async fn abort(self) -> Result<()> {
        drop(self.commands);
        self.upload.abort().await
    }
}

/// Send a command to an encoder thread and wait for its reply.
async fn ask(
    commands: &mpsc::Sender<Command>,
    display: &str,
    command: impl FnOnce(oneshot::Sender<Result<()>>) -> Command,
) -> Result<()> {
    let (reply, answer) = oneshot::channel();
    let gone = || Error::Internal(format!("the ORC encoder of {display} stopped"));
    commands.send(command(reply)).map_err(|_| gone())?;
    answer.await.map_err(|_| gone())?
}

/// The encoder thread of one file: builds the writer, then serves commands until the file is
/// closed or abandoned.
fn encode_file(
    buffer: SharedBuffer,
    schema: SchemaRef,
    options: OrcOptions,
    display: String,
    inbox: mpsc::Receiver<Command>,
) {
    let mut builder =
        ArrowWriterBuilder::new(buffer, schema).with_stripe_byte_size(options.stripe_bytes);
    if let Some(codec) = options.compression {
        builder = builder.with_compression(codec);
    }
    let failed = |what: &str, e: OrcError| match e {
        // ORC-763: a timestamp in the second before the epoch with more than millisecond
        // digits has no exact ORC encoding; orc-rust refuses it rather than shift it.
        OrcError::EncodeTimestamp { .. } => Error::Unsupported(format!(
            "{what} ORC file {display}: {e} (ORC cannot store timestamps between \
             1969-12-31T23:59:59 and the epoch exactly; use file.format=parquet)"
        )),
        e => Error::invalid(format!("{what} ORC file {display}: {e}")),
    };
    let mut writer: Result<ArrowWriter<SharedBuffer>> =
        builder.try_build().map_err(|e| failed("creating", e));
    while let Ok(command) = inbox.recv() {
        match command {
            Command::Write(batch, reply) => {
                let result = match &mut writer {
                    Ok(w) => w.write(&batch).map_err(|e| failed("writing", e)),
                    Err(e) => Err(Error::invalid(e.to_string())),
                };
                let _ = reply.send(result);
            }
            Command::Close(reply) => {
                let result = writer.and_then(|w| w.close().map_err(|e| failed("closing", e)));
                let _ = reply.send(result);
                return;
            }
        }
    }
}
