//! Avro Object Container File framing and the Avro binary primitives used by the manifest
//! codecs (Avro 1.11 specification, "Object Container Files" and "Binary Encoding").
//!
//! Invariants:
//! * Every length read from input (strings, bytes, metadata, blocks) is checked against the
//!   bytes that remain before anything is allocated or sliced, so truncated or forged lengths
//!   end in [`Error::Corrupt`], never in a panic or an oversized allocation.
//! * Block decompression goes through `apache_avro::Codec`, whose output is capped by
//!   `apache_avro::util::max_allocation_bytes` (process wide, 512 MiB unless the embedding
//!   program sets it first); we do not set that global from library code.
//! * Written files carry `avro.schema` and `avro.codec` (always, `null` included, as Java's
//!   `DataFileWriter` does) and blocks of about [`SYNC_INTERVAL`] uncompressed bytes.
//! * Writing is deterministic: the sync marker, which the specification asks to be random so
//!   that it does not occur in the data, is a 128-bit hash of the rest of the file, as
//!   unlikely to occur in it as random bytes are, and the same bytes encode the same records.

use std::borrow::Cow;

use crate::error::{Error, Result};

/// Avro container magic: `Obj` followed by format version 1.
const MAGIC: &[u8; 4] = b"Obj\x01";
/// Uncompressed bytes after which a block is flushed (Java Avro's default sync interval).
pub(crate) const SYNC_INTERVAL: usize = 64_000;
/// zstd level Java uses for manifests (`file.compression.zstd-level` default).
const ZSTD_LEVEL: u8 = 1;

/// Block compression of a manifest file, from the table option `manifest.compression`.
///
/// Mirrors Java's `AvroFileFormat.createCodecFactory`: `zstd` maps to Avro's `zstandard`
/// codec at level 1; `bzip2` and `xz` are valid Paimon values this build does not support.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Codec {
    /// No compression (`null` / `none`).
    Null,
    /// Raw deflate (RFC 1951).
    Deflate,
    /// Snappy with a trailing big-endian CRC32 of the uncompressed block.
    Snappy,
    /// Zstandard (`zstd`, Paimon's default), Avro name `zstandard`.
    #[default]
    Zstd,
}

impl Codec {
    /// Parses a `manifest.compression` value (case-insensitive).
    pub fn from_option(value: &str) -> Result<Codec> {
        match value.trim().to_ascii_lowercase().as_str() {
            "null" | "none" => Ok(Codec::Null),
            "deflate" => Ok(Codec::Deflate),
            "snappy" => Ok(Codec::Snappy),
            "zstd" | "zstandard" => Ok(Codec::Zstd),
            "bzip2" | "xz" => Err(Error::Unsupported(format!(
                "manifest compression '{value}'"
            ))),
            _ => Err(Error::Invalid(format!(
                "unknown manifest compression '{value}'"
            ))),
        }
    }

    /// The codec name stored in the container header (`avro.codec`).
    pub fn avro_name(self) -> &'static str {
        match self {
            Codec::Null => "null",
            Codec::Deflate => "deflate",
            Codec::Snappy => "snappy",
            Codec::Zstd => "zstandard",
        }
    }

    fn from_avro_name(name: &[u8], what: &str) -> Result<Codec> {
        match name {
            b"null" => Ok(Codec::Null),
            b"deflate" => Ok(Codec::Deflate),
            b"snappy" => Ok(Codec::Snappy),
            b"zstandard" => Ok(Codec::Zstd),
            other => Err(Error::Unsupported(format!(
                "{what}: Avro codec '{}'",
                String::from_utf8_lossy(other)
            ))),
        }
    }

    /// The apache-avro codec writing this compression (also for Iceberg manifests).
    pub fn to_avro(self) -> apache_avro::Codec {
        match self {
            Codec::Null => apache_avro::Codec::Null,
            Codec::Deflate => apache_avro::Codec::Deflate(apache_avro::DeflateSettings::default()),
            Codec::Snappy => apache_avro::Codec::Snappy,
            Codec::Zstd => {
                apache_avro::Codec::Zstandard(apache_avro::ZstandardSettings::new(ZSTD_LEVEL))
            }
        }
    }
}

impl std::str::FromStr for Codec {
    type Err = Error;
    fn from_str(s: &str) -> Result<Codec> {
        Codec::from_option(s)
    }
}

/// A bounds-checked reader over Avro binary data.
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8], what: &'static str) -> Self {
        Cursor { buf, pos: 0, what }
    }

    pub(crate) fn corrupt(&self, reason: impl std::fmt::Display) -> Error {
        Error::corrupt(self.what, format_args!("{reason} (at byte {})", self.pos))
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.corrupt(format_args!("needs {n} bytes, {} left", self.remaining())));
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// A zig-zag varint `long`.
    pub(crate) fn long(&mut self) -> Result<i64> {
        let mut acc: u64 = 0;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(self.corrupt("truncated varint"));
            };
            self.pos += 1;
            if shift == 63 && b > 1 {
                return Err(self.corrupt("varint overflows 64 bits"));
            }
            acc |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(((acc >> 1) as i64) ^ -((acc & 1) as i64));
            }
        }
        Err(self.corrupt("varint longer than 10 bytes"))
    }

    /// A zig-zag varint `int` (a `long` that must fit 32 bits).
    pub(crate) fn int(&mut self) -> Result<i32> {
        let v = self.long()?;
        i32::try_from(v).map_err(|_| self.corrupt(format_args!("int out of range: {v}")))
    }

    /// A length or count: non-negative and at most the bytes left (every counted thing
    /// occupies at least one byte, so a larger value can only be corruption).
    pub(crate) fn length(&mut self) -> Result<usize> {
        let v = self.long()?;
        match usize::try_from(v) {
            Ok(n) if n <= self.remaining() => Ok(n),
            _ => Err(self.corrupt(format_args!(
                "length {v} with {} bytes left",
                self.remaining()
            ))),
        }
    }

    pub(crate) fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.length()?;
        self.take(n)
    }

    pub(crate) fn string(&mut self) -> Result<String> {
        let raw = self.bytes()?;
        match std::str::from_utf8(raw) {
            Ok(s) => Ok(s.to_owned()),
            Err(e) => Err(self.corrupt(format_args!("invalid UTF-8 string: {e}"))),
        }
    }

    /// The item count of the next array/map block (0 ends the array). A negative count is
    /// followed by the block's byte size, which we read and ignore.
    pub(crate) fn block_count(&mut self) -> Result<usize> {
        let raw = self.long()?;
        if raw < 0 {
            self.long()?;
        }
        let n = raw.unsigned_abs();
        match usize::try_from(n) {
            Ok(n) if n <= self.remaining() => Ok(n),
            _ => Err(self.corrupt(format_args!(
                "block of {n} items with {} bytes left",
                self.remaining()
            ))),
        }
    }
}

/// Appends a zig-zag varint `long`.
pub(crate) fn put_long(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// Appends Avro `bytes` / `string`: length then content.
pub(crate) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_long(out, b.len() as i64);
    out.extend_from_slice(b);
}

/// An opened container: header parsed, positioned at the first block.
pub(crate) struct Container<'a> {
    /// The writer schema, `avro.schema` from the header.
    pub(crate) schema: &'a [u8],
    codec: Codec,
    sync: &'a [u8],
    body: Cursor<'a>,
}

impl<'a> Container<'a> {
    pub(crate) fn open(bytes: &'a [u8], what: &'static str) -> Result<Self> {
        let mut cur = Cursor::new(bytes, what);
        if cur.take(4).ok() != Some(&MAGIC[..]) {
            return Err(Error::corrupt(
                what,
                "not an Avro container file (bad magic)",
            ));
        }
        let mut schema = None;
        let mut codec = Codec::Null;
        loop {
            let n = cur.block_count()?;
            if n == 0 {
                break;
            }
            for _ in 0..n {
                let key = cur.bytes()?;
                let value = cur.bytes()?;
                match key {
                    b"avro.schema" => schema = Some(value),
                    b"avro.codec" => codec = Codec::from_avro_name(value, what)?,
                    _ => {}
                }
            }
        }
        let sync = cur.take(16)?;
        let schema = schema.ok_or_else(|| Error::corrupt(what, "header has no avro.schema"))?;
        Ok(Container {
            schema,
            codec,
            sync,
            body: cur,
        })
    }

    /// The next block as (record count, uncompressed data), or `None` at the end of input.
    pub(crate) fn next_block(&mut self) -> Result<Option<(usize, Cow<'a, [u8]>)>> {
        if self.body.remaining() == 0 {
            return Ok(None);
        }
        let count = self.body.long()?;
        let count = usize::try_from(count).map_err(|_| {
            self.body
                .corrupt(format_args!("negative block count {count}"))
        })?;
        let size = self.body.length()?;
        let data = self.body.take(size)?;
        if self.body.take(16)? != self.sync {
            return Err(self.body.corrupt("block sync marker mismatch"));
        }
        let data = match self.codec {
            Codec::Null => Cow::Borrowed(data),
            codec => {
                let mut buf = data.to_vec();
                codec.to_avro().decompress(&mut buf).map_err(|e| {
                    self.body
                        .corrupt(format_args!("{} block: {e}", codec.avro_name()))
                })?;
                Cow::Owned(buf)
            }
        };
        if count > data.len() {
            return Err(self.body.corrupt(format_args!(
                "block claims {count} records in {} bytes",
                data.len()
            )));
        }
        Ok(Some((count, data)))
    }
}

/// Writes a container: header, then the pre-encoded records grouped into blocks. Public for
/// containers whose schema JSON carries attributes a parsed schema would drop (Iceberg's
/// `field-id`s and `logicalType: map` arrays).
pub struct ContainerWriter {
    out: Vec<u8>,
    block: Vec<u8>,
    block_count: usize,
    codec: Codec,
    /// Where the sync marker goes (after the header and after each block), filled by
    /// [`Self::finish`] once the rest of the file is known.
    sync_at: Vec<usize>,
}

impl ContainerWriter {
    /// A container whose header carries `schema_json` verbatim.
    pub fn new(schema_json: &str, codec: Codec) -> Self {
        let mut out = Vec::with_capacity(schema_json.len() + 128);
        out.extend_from_slice(MAGIC);
        put_long(&mut out, 2);
        put_bytes(&mut out, b"avro.schema");
        put_bytes(&mut out, schema_json.as_bytes());
        put_bytes(&mut out, b"avro.codec");
        put_bytes(&mut out, codec.avro_name().as_bytes());
        put_long(&mut out, 0);
        let mut w = ContainerWriter {
            out,
            block: Vec::new(),
            block_count: 0,
            codec,
            sync_at: Vec::new(),
        };
        w.reserve_sync();
        w
    }

    /// The buffer the next record is encoded into; call [`Self::record_done`] after.
    pub fn record_buf(&mut self) -> &mut Vec<u8> {
        &mut self.block
    }

    /// Counts the record just encoded into [`Self::record_buf`].
    pub fn record_done(&mut self) -> Result<()> {
        self.block_count += 1;
        if self.block.len() >= SYNC_INTERVAL {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.block_count == 0 {
            return Ok(());
        }
        let mut data = std::mem::take(&mut self.block);
        self.codec.to_avro().compress(&mut data).map_err(|e| {
            Error::Invalid(format!(
                "{} compression failed: {e}",
                self.codec.avro_name()
            ))
        })?;
        put_long(&mut self.out, self.block_count as i64);
        put_bytes(&mut self.out, &data);
        self.reserve_sync();
        self.block_count = 0;
        Ok(())
    }

    fn reserve_sync(&mut self) {
        self.sync_at.push(self.out.len());
        self.out.extend_from_slice(&[0; 16]);
    }

    /// The whole container.
    pub fn finish(mut self) -> Result<Vec<u8>> {
        self.flush()?;
        let sync = sync_marker(&self.out);
        for &at in &self.sync_at {
            self.out[at..at + 16].copy_from_slice(&sync);
        }
        Ok(self.out)
    }
}

/// The sync marker of a file whose markers are still zero: two xxHash64s of it.
fn sync_marker(file: &[u8]) -> [u8; 16] {
    let mut marker = [0u8; 16];
    for (seed, chunk) in marker.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&twox_hash::XxHash64::oneshot(seed as u64, file).to_le_bytes());
    }
    marker
}
