//! Where the bytes of a data file go: a streaming upload to the object store.
//!
//! [`ObjectSink`] turns small files into one PUT and larger ones into a multipart upload whose
//! parts leave memory as they fill. The Parquet encoder is asynchronous and writes into it
//! directly; the ORC and Avro encoders are synchronous `std::io::Write` consumers, so they
//! write into a [`SharedBuffer`] that [`BufferedUpload::drain`] empties into the sink after
//! every encoder call.
//!
//! Invariant: once completion was attempted the upload can no longer be aborted (the object
//! may exist); the caller then deletes the path instead.

use std::future::poll_fn;
use std::io::Write;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use object_store::buffered::BufWriter;

use crate::error::{Error, Result};
use crate::io::FileIO;

/// A streaming upload of one object.
pub(super) struct ObjectSink {
    inner: BufWriter,
    /// Whether completion was attempted (after which the upload cannot be aborted).
    completing: bool,
}

impl ObjectSink {
    pub(super) fn new(io: &FileIO, rel_path: &str) -> Result<ObjectSink> {
        Ok(ObjectSink {
            inner: BufWriter::new(io.store().clone(), io.path(rel_path)?),
            completing: false,
        })
    }

    pub(super) async fn put(&mut self, bytes: Bytes) -> object_store::Result<()> {
        self.inner.put(bytes).await
    }

    /// Upload what is left and make the object visible.
    pub(super) async fn complete(&mut self) -> std::io::Result<()> {
        self.completing = true;
        poll_fn(|cx| tokio::io::AsyncWrite::poll_shutdown(Pin::new(&mut self.inner), cx)).await
    }

    /// Abort a started multipart upload (nothing to do once completion was attempted).
    pub(super) async fn abort(mut self, display: String) -> Result<()> {
        if self.completing {
            return Ok(());
        }
        self.inner.abort().await.map_err(|source| Error::Io {
            path: display,
            source,
        })
    }
}

/// An in-memory `Write` target shared with the encoder that owns a clone of it.
#[derive(Clone, Default)]
pub(super) struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

impl SharedBuffer {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A synchronous encoder's output on its way to the store.
pub(super) struct BufferedUpload {
    buffer: SharedBuffer,
    sink: ObjectSink,
    /// Bytes handed to the sink so far.
    written: u64,
    pub(super) display: String,
}

impl BufferedUpload {
    /// An upload to `rel_path` and the buffer its encoder writes into.
    pub(super) fn new(io: &FileIO, rel_path: &str) -> Result<(BufferedUpload, SharedBuffer)> {
        let buffer = SharedBuffer::default();
        let upload = BufferedUpload {
            buffer: buffer.clone(),
            sink: ObjectSink::new(io, rel_path)?,
            written: 0,
            display: io.display(rel_path),
        };
        Ok((upload, buffer))
    }

    /// Bytes the encoder produced so far (handed to the sink or still buffered).
    pub(super) fn bytes_written(&self) -> u64 {
        let buffered = self
            .buffer
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        self.written + buffered as u64
    }

    /// Hand the encoder's output so far to the sink.
    pub(super) async fn drain(&mut self) -> Result<()> {
        let bytes = self.buffer.take();
        if bytes.is_empty() {
            return Ok(());
        }
        self.written += bytes.len() as u64;
        self.sink
            .put(Bytes::from(bytes))
            .await
            .map_err(|source| Error::Io {
                path: self.display.clone(),
                source,
            })
    }

    /// Drain, then complete the upload; returns the file size.
    pub(super) async fn finish(mut self) -> Result<u64> {
        self.drain().await?;
        self.sink
            .complete()
            .await
            .map_err(|e| io_error(&self.display, e))?;
        Ok(self.written)
    }

    pub(super) async fn abort(self) -> Result<()> {
        self.sink.abort(self.display).await
    }
}

/// A storage error surfaced through `std::io` (`AsyncWrite`), as the storage error it wraps.
pub(super) fn io_error(display: &str, e: std::io::Error) -> Error {
    let kind = e.kind();
    let source = match e
        .into_inner()
        .map(|inner| inner.downcast::<object_store::Error>())
    {
        Some(Ok(store)) => *store,
        Some(Err(inner)) => object_store::Error::Generic {
            store: "io",
            source: inner,
        },
        None => object_store::Error::Generic {
            store: "io",
            source: Box::new(std::io::Error::from(kind)),
        },
    };
    Error::Io {
        path: display.to_string(),
        source,
    }
}
