//! Truncated and bit-flipped files: always `Err(Corrupt)` (or a clean prefix when a cut
//! falls on a block boundary), never a panic or a hang. Each sweep runs under a time bound.

use std::sync::mpsc;
use std::time::Duration;

use super::super::*;
use super::{fixture_files, FixtureFile, Kind};
use crate::Error;

/// Runs `f` on another thread and fails if it panics or takes longer than `limit`.
fn bounded(limit: Duration, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(limit) {
        Ok(()) => handle.join().expect("sweep thread"),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(panic) = handle.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("corruption sweep exceeded {limit:?}"),
    }
}

/// Decodes `bytes` as `kind`; Ok gives the number of records.
fn decode(kind: Kind, bytes: &[u8]) -> crate::Result<usize> {
    match kind {
        Kind::List => read_manifest_list(bytes).map(|v| v.len()),
        Kind::Manifest => read_manifest(bytes).map(|v| v.len()),
        Kind::Index => read_index_manifest(bytes).map(|v| v.len()),
    }
}

/// Re-encodes a fixture with `codec`, so that corruption hits our own decoder rather than
/// only the decompressor.
fn reencode(f: &FixtureFile, codec: Codec) -> Vec<u8> {
    match f.kind {
        Kind::List => write_manifest_list(&read_manifest_list(&f.bytes).expect("decode"), codec),
        Kind::Manifest => write_manifest(&read_manifest(&f.bytes).expect("decode"), codec),
        Kind::Index => write_index_manifest(&read_index_manifest(&f.bytes).expect("decode"), codec),
    }
    .expect("encode")
}

fn check_truncations(kind: Kind, bytes: &[u8], full: usize, stride: usize, at: &str) {
    let tail = bytes.len().saturating_sub(24);
    for cut in (0..bytes.len()).step_by(stride).chain(tail..bytes.len()) {
        match decode(kind, &bytes[..cut]) {
            Err(Error::Corrupt { .. }) => {}
            // Cutting exactly between blocks leaves a valid, shorter file.
            Ok(n) => assert!(n < full, "{at}: cut at {cut} decoded all {n} records"),
            Err(e) => panic!("{at}: cut at {cut}: unexpected error {e}"),
        }
    }
    assert!(
        decode(kind, &bytes[..bytes.len() - 1]).is_err(),
        "{at}: cut in the last sync marker"
    );
}

fn check_flips(kind: Kind, bytes: &[u8], stride: usize, at: &str) {
    let mut copy = bytes.to_vec();
    for pos in (0..bytes.len()).step_by(stride) {
        for mask in [0x01u8, 0x80, 0xff] {
            copy[pos] ^= mask;
            match decode(kind, &copy) {
                Ok(_) | Err(Error::Corrupt { .. }) | Err(Error::Unsupported(_)) => {}
                Err(e) => panic!("{at}: flip {mask:#x} at {pos}: unexpected error {e}"),
            }
            copy[pos] ^= mask;
        }
    }
}

#[test]
fn truncated_files_are_corrupt() {
    bounded(Duration::from_secs(300), || {
        for f in fixture_files() {
            let at = format!("{}/{}", f.table, f.name);
            let full = decode(f.kind, &f.bytes).expect("fixture decodes");
            check_truncations(f.kind, &f.bytes, full, (f.bytes.len() / 48).max(1), &at);
            let plain = reencode(&f, Codec::Null);
            check_truncations(
                f.kind,
                &plain,
                full,
                (plain.len() / 48).max(1),
                &format!("{at} (null codec)"),
            );
        }
    });
}

#[test]
fn flipped_bytes_never_panic() {
    bounded(Duration::from_secs(300), || {
        let files = fixture_files();
        for (i, f) in files.iter().enumerate() {
            let at = format!("{}/{}", f.table, f.name);
            check_flips(f.kind, &f.bytes, (f.bytes.len() / 32).max(1), &at);
            // Every byte of a few uncompressed files of each kind, a stride of the others.
            let plain = reencode(f, Codec::Null);
            let stride = if i % 16 == 0 {
                1
            } else {
                (plain.len() / 32).max(1)
            };
            check_flips(f.kind, &plain, stride, &format!("{at} (null codec)"));
            for codec in [Codec::Snappy, Codec::Deflate] {
                let bytes = reencode(f, codec);
                check_flips(
                    f.kind,
                    &bytes,
                    (bytes.len() / 16).max(1),
                    &format!("{at} ({codec:?})"),
                );
            }
        }
    });
}

#[test]
fn forged_lengths_fail_without_allocating() {
    use super::super::avro::put_long;
    let good = write_manifest(&[], Codec::Null).unwrap();
    // A block header claiming i64::MAX records and bytes, and one claiming a huge size.
    for (count, size) in [(i64::MAX, i64::MAX), (1, 1 << 40), (-1, 4), (1 << 40, 0)] {
        let mut bytes = good.clone();
        put_long(&mut bytes, count);
        put_long(&mut bytes, size);
        assert!(
            matches!(read_manifest(&bytes), Err(Error::Corrupt { .. })),
            "{count} {size}"
        );
    }
    // Empty input, bare magic, and a snappy block shorter than its CRC.
    assert!(matches!(read_manifest(b""), Err(Error::Corrupt { .. })));
    assert!(matches!(
        read_manifest(b"Obj\x01"),
        Err(Error::Corrupt { .. })
    ));
    let header = write_manifest(&[], Codec::Snappy).unwrap();
    let sync = header[header.len() - 16..].to_vec();
    let mut bytes = header.clone();
    put_long(&mut bytes, 1);
    put_long(&mut bytes, 2);
    bytes.extend_from_slice(&[0, 0]);
    bytes.extend_from_slice(&sync);
    assert!(matches!(read_manifest(&bytes), Err(Error::Corrupt { .. })));
}
