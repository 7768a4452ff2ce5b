//! Locations and storage options, fault injection, no-replace puts, and hint probing without
//! listings (on an in-memory store behind the counting wrapper).

use std::sync::Arc;

use object_store::memory::InMemory;
use object_store::path::Path;

use super::instrumented::{FaultPlan, InstrumentedStore, OpKind};
use super::{FileIO, StorageOptions};
use crate::error::{Error, ErrorKind};
use crate::snapshots::{SnapshotManager, MAX_HINT_PROBES};

fn opts(pairs: &[(&str, &str)]) -> StorageOptions {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn counted() -> (FileIO, InstrumentedStore) {
    let store = InstrumentedStore::counting(Arc::new(InMemory::new()));
    let io = FileIO::from_store(Arc::new(store.clone()), Path::from("wh/t"), "memory://wh/t");
    (io, store)
}

#[test]
fn s3_locations_take_options_and_keep_them() {
    let o = opts(&[
        ("aws_endpoint", "http://127.0.0.1:1"),
        ("aws_region", "us-east-1"),
        ("allow_http", "true"),
    ]);
    for url in ["s3://bucket/wh/t", "s3a://bucket/wh/t/"] {
        let io = FileIO::open_with(url, &o).unwrap();
        assert_eq!(
            io.path("snapshot/LATEST").unwrap().as_ref(),
            "wh/t/snapshot/LATEST"
        );
        assert_eq!(io.options(), &o);
        assert_eq!(io.child("sub").options(), &o);
        assert_eq!(io.location(), url.trim_end_matches('/'));
        assert!(!io.root_is_file());
    }
}

#[test]
fn file_uris_in_every_form_name_the_same_local_directory() {
    for loc in [
        "/tmp/tidelake-uri/t",
        "file:/tmp/tidelake-uri/t",
        "file:///tmp/tidelake-uri/t",
        "file://localhost/tmp/tidelake-uri/t/",
    ] {
        let io = FileIO::open_with(loc, &opts(&[])).unwrap();
        assert_eq!(io.location(), "/tmp/tidelake-uri/t", "{loc}");
    }
    // never a relative path under the working directory
    for loc in ["file:t", "file://otherhost/tmp/t"] {
        let err = FileIO::open_with(loc, &opts(&[])).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Invalid, "{loc}");
    }
}

#[test]
fn bad_locations_and_options_are_typed_errors() {
    let kind = |loc: &str, o: &[(&str, &str)]| FileIO::open_with(loc, &opts(o)).unwrap_err().kind();
    assert_eq!(
        kind("s3://bucket/t", &[("aws_endpiont", "x")]),
        ErrorKind::Invalid
    );
    assert_eq!(
        kind("/tmp/t", &[("aws_region", "us-east-1")]),
        ErrorKind::Invalid
    );
    assert_eq!(kind("s3://bucket/a/../b", &[]), ErrorKind::Invalid);
    assert_eq!(kind("s3://bucket/a/./b", &[]), ErrorKind::Invalid);
    assert_eq!(
        kind("gs://bucket/t", &[("aws_region", "x")]),
        ErrorKind::Invalid
    );
    assert_eq!(kind("ftp://host/t", &[]), ErrorKind::Unsupported);
    assert_eq!(
        kind("s3://bucket/t", &[("tidelake.fault.nth", "0")]),
        ErrorKind::Invalid
    );
    assert_eq!(
        kind(
            "s3://bucket/t",
            &[("tidelake.fault.nth", "1"), ("tidelake.fault.op", "rename")]
        ),
        ErrorKind::Invalid
    );
    assert_eq!(
        kind("s3://bucket/t", &[("tidelake.fault.bogus", "1")]),
        ErrorKind::Invalid
    );
    let err = FileIO::open_with("s3://bucket/t", &opts(&[("aws_endpiont", "x")])).unwrap_err();
    assert!(err.to_string().contains("aws_endpiont"), "{err}");
}

#[tokio::test]
async fn fault_fails_exactly_the_nth_matching_operation() {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().to_str().unwrap();
    let io = FileIO::open_with(
        loc,
        &opts(&[("tidelake.fault.nth", "2"), ("tidelake.fault.op", "put")]),
    )
    .unwrap();
    io.write("a", "1").await.unwrap();
    io.read("a").await.unwrap(); // not a put: not counted towards nth
    let err = io.write("b", "2").await.unwrap_err();
    assert!(
        matches!(err, Error::Io { .. }) && err.to_string().contains("injected fault on put"),
        "{err}"
    );
    assert!(
        !io.exists("b").await.unwrap(),
        "a `before` fault never reaches the store"
    );
    io.write("c", "3").await.unwrap();

    // `after`: the put lands, the caller sees an error.
    let io = FileIO::open_with(
        loc,
        &opts(&[
            ("tidelake.fault.nth", "1"),
            ("tidelake.fault.path", "snap"),
            ("tidelake.fault.when", "after"),
        ]),
    )
    .unwrap();
    io.write("other", "x").await.unwrap();
    assert!(io.write("snap-1", "x").await.is_err());
    assert_eq!(&io.read("snap-1").await.unwrap()[..], b"x");
}

#[tokio::test]
async fn put_if_absent_never_replaces_and_recognises_its_own_bytes() {
    let (io, store) = counted();
    assert!(io
        .put_if_absent("snapshot/snapshot-1", "ours")
        .await
        .unwrap());
    assert!(!io
        .put_if_absent("snapshot/snapshot-1", "theirs")
        .await
        .unwrap());
    assert_eq!(&io.read("snapshot/snapshot-1").await.unwrap()[..], b"ours");
    // A retried PUT whose first response was lost meets its own object: created, not lost.
    assert!(io
        .put_if_absent("snapshot/snapshot-1", "ours")
        .await
        .unwrap());
    assert_eq!(store.counts().get(OpKind::Put), 3);
}

#[tokio::test]
async fn latest_snapshot_probes_past_stale_or_missing_hints_without_listing() {
    let (io, store) = counted();
    for id in 3..=9 {
        io.write(&format!("snapshot/snapshot-{id}"), "{}")
            .await
            .unwrap();
    }
    let snapshots = SnapshotManager::new(io.clone());
    io.write("snapshot/LATEST", "5").await.unwrap();
    assert_eq!(snapshots.latest_id().await.unwrap(), Some(9));
    io.delete("snapshot/LATEST").await.unwrap();
    io.write("snapshot/EARLIEST", "3").await.unwrap();
    assert_eq!(snapshots.latest_id().await.unwrap(), Some(9));
    assert_eq!(store.counts().get(OpKind::List), 0, "hints were enough");

    // No usable hint (none, or one pointing at an expired snapshot): the directory is listed.
    io.delete("snapshot/EARLIEST").await.unwrap();
    assert_eq!(snapshots.latest_id().await.unwrap(), Some(9));
    io.write("snapshot/LATEST", "1").await.unwrap();
    assert_eq!(snapshots.latest_id().await.unwrap(), Some(9));
    assert_eq!(store.counts().get(OpKind::List), 2);

    // A hint lagging more than MAX_HINT_PROBES falls back to one listing.
    for id in 10..=(10 + MAX_HINT_PROBES) {
        io.write(&format!("snapshot/snapshot-{id}"), "{}")
            .await
            .unwrap();
    }
    io.write("snapshot/LATEST", "3").await.unwrap();
    assert_eq!(
        snapshots.latest_id().await.unwrap(),
        Some(10 + MAX_HINT_PROBES)
    );
    assert_eq!(store.counts().get(OpKind::List), 3);
}

#[tokio::test]
async fn a_hint_that_cannot_be_read_is_ignored_without_reading_it_again() {
    // The storage client retried that read as far as it was configured to.
    let plan = FaultPlan::from_options(&opts(&[
        ("tidelake.fault.nth", "1"),
        ("tidelake.fault.op", "get"),
        ("tidelake.fault.path", "snapshot/LATEST"),
    ]))
    .unwrap();
    let store = InstrumentedStore::new(Arc::new(InMemory::new()), plan);
    let io = FileIO::from_store(Arc::new(store.clone()), Path::from("wh/t"), "memory://wh/t");
    for id in 1..=3 {
        io.write(&format!("snapshot/snapshot-{id}"), "{}")
            .await
            .unwrap();
    }
    io.write("snapshot/LATEST", "3").await.unwrap();
    assert_eq!(SnapshotManager::new(io).latest_id().await.unwrap(), Some(3));
    // LATEST once (failing), EARLIEST once (missing), then the listing
    assert_eq!(store.counts().get(OpKind::Get), 2);
    assert_eq!(store.counts().get(OpKind::List), 1);
}

#[tokio::test]
async fn hang_fault_never_completes_and_other_operations_still_do() {
    let dir = tempfile::tempdir().unwrap();
    let io = FileIO::open_with(
        dir.path().to_str().unwrap(),
        &opts(&[
            ("tidelake.fault.nth", "1"),
            ("tidelake.fault.op", "head"),
            ("tidelake.fault.action", "hang"),
        ]),
    )
    .unwrap();
    let hung = tokio::time::timeout(std::time::Duration::from_millis(200), io.exists("x")).await;
    assert!(hung.is_err(), "the first head hangs");
    assert!(
        !io.exists("x").await.unwrap(),
        "only the nth operation faults"
    );
}

#[test]
fn absolute_locations_on_the_same_storage_are_reachable() {
    let o = opts(&[
        ("aws_endpoint", "http://127.0.0.1:1"),
        ("aws_region", "us-east-1"),
    ]);
    let s3 = FileIO::open_with("s3://bucket/wh/t", &o).unwrap();
    for loc in ["s3://bucket/ext/bucket-0/f", "s3a://bucket/ext/bucket-0/f"] {
        assert_eq!(s3.path(loc).unwrap().as_ref(), "ext/bucket-0/f", "{loc}");
        assert_eq!(s3.display(loc), loc);
    }
    let ext = s3.at("s3://bucket/ext/").unwrap();
    assert_eq!(ext.path("bucket-0/f").unwrap().as_ref(), "ext/bucket-0/f");
    assert_eq!(ext.location(), "s3://bucket/ext");
    for other in ["s3://other/ext/f", "gs://bucket/ext/f", "file:/tmp/f"] {
        let err = s3.path(other).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{other}");
    }
    let local = FileIO::open("/tmp/tidelake-at/t").unwrap();
    for loc in ["file:/tmp/ext/x", "file:///tmp/ext/x"] {
        assert_eq!(local.path(loc).unwrap().as_ref(), "tmp/ext/x", "{loc}");
    }
    let ext = local.at("file:/tmp/ext").unwrap();
    assert_eq!(ext.local_root(), Some(std::path::Path::new("/tmp/ext")));
    for bad in ["s3://bucket/x", "file:/tmp/../etc/x"] {
        assert!(local.path(bad).is_err(), "{bad}");
    }
}

#[test]
fn relative_paths_never_leave_the_root() {
    let (io, _) = counted();
    for rel in [
        "../x",
        "a/../../x",
        "./x",
        "..",
        "a/%2E%2E/x",
        "a\\..\\x",
        "dt=../bucket-0",
    ] {
        let p = io.path(rel).unwrap();
        assert!(p.as_ref().starts_with("wh/t/"), "{rel} -> {p}");
        assert!(
            !p.parts().any(|s| s.as_ref() == ".." || s.as_ref() == "."),
            "{rel} -> {p}"
        );
    }
}

#[test]
fn storage_errors_passed_through_parquet_stay_storage_errors() {
    use parquet::errors::ParquetError;
    let store_err = || object_store::Error::Generic {
        store: "test",
        source: "connection reset".into(),
    };
    let direct = Error::parquet("reading f", ParquetError::External(Box::new(store_err())));
    assert_eq!(direct.kind(), ErrorKind::Io);
    let through_io = Error::parquet(
        "closing f",
        ParquetError::External(Box::new(std::io::Error::other(store_err()))),
    );
    assert_eq!(through_io.kind(), ErrorKind::Io);
    assert!(
        through_io.to_string().contains("connection reset"),
        "{through_io}"
    );
    assert_ne!(
        Error::parquet("f", ParquetError::General("bad page".into())).kind(),
        ErrorKind::Io
    );
}

#[cfg(unix)]
#[tokio::test]
async fn local_files_are_read_in_place_unless_faults_are_injected() {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().to_str().unwrap();
    let io = FileIO::open(loc).unwrap();
    io.write("bucket-0/data-1.parquet", "0123456789")
        .await
        .unwrap();
    let file = io
        .local_file("bucket-0/data-1.parquet")
        .expect("local store")
        .unwrap();
    assert_eq!(file.size(), 10);
    assert_eq!(&file.read_range(2..5).unwrap()[..], b"234");
    assert_eq!(file.read_range(4..4).unwrap().len(), 0);
    assert!(
        file.read_range(8..12).is_err(),
        "reading past the end is an error, not a short buffer"
    );
    // the same path object_store uses, and the same typed error for a missing file
    assert_eq!(
        io.child("bucket-0")
            .local_file("data-1.parquet")
            .unwrap()
            .unwrap()
            .size(),
        10
    );
    let missing = io.local_file("bucket-0/gone.parquet").unwrap().unwrap_err();
    assert!(matches!(missing, Error::NotFound { .. }), "{missing}");
    assert!(missing.to_string().contains("gone.parquet"), "{missing}");
    // fault injection wraps the store: reads must go through it
    let faulty = FileIO::open_with(
        loc,
        &opts(&[("tidelake.fault.nth", "1"), ("tidelake.fault.op", "put")]),
    )
    .unwrap();
    assert!(faulty.local_file("bucket-0/data-1.parquet").is_none());
    let remote = FileIO::open("s3://bucket/t").unwrap();
    assert!(remote.local_file("x").is_none());
}
