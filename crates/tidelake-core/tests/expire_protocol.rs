//! The snapshot-expiration protocol committers rely on (module docs of
//! `maintenance::expire` and `snapshots`), observed through the storage requests it makes:
//! snapshot files deleted one at a time in ascending order from the true earliest, `EARLIEST`
//! written after them, retention counted from the published (`LATEST`) snapshot, and a run
//! that expires nothing costs a handful of requests and no listing, however long the history.

use std::sync::Arc;

use object_store::local::LocalFileSystem;
use object_store::path::Path;
use tidelake_core::api::maintenance::{expire_snapshots, ExpireConfig};
use tidelake_core::api::{FileIO, StorageOptions, Table};
use tidelake_core::io::instrumented::{InstrumentedStore, OpKind};
use tidelake_core::test_support::{one_row_commits, snapshot_ids};

/// The table at `dir` seen through a recording store.
async fn recorded(dir: &std::path::Path) -> (Table, InstrumentedStore) {
    let store = InstrumentedStore::recording(Arc::new(LocalFileSystem::new()));
    let root = Path::from_absolute_path(dir).unwrap();
    let io = FileIO::from_store(Arc::new(store.clone()), root, "recorded");
    (Table::open_io(io).await.unwrap(), store)
}

fn keep(retain: i64) -> ExpireConfig {
    ExpireConfig {
        retain_min: retain,
        retain_max: retain,
        older_than_ms: i64::MAX,
        max_deletes: i64::MAX,
        changelog: None,
    }
}

fn hint(dir: &std::path::Path, name: &str) -> Option<String> {
    std::fs::read_to_string(dir.join("snapshot").join(name)).ok()
}

/// Position of each request matching `pred`, with the snapshot id its path names.
fn snapshot_deletes(requests: &[(OpKind, String)]) -> Vec<(usize, i64)> {
    requests
        .iter()
        .enumerate()
        .filter(|(_, (kind, _))| *kind == OpKind::Delete)
        .filter_map(|(i, (_, path))| {
            Some((i, path.rsplit_once("/snapshot/snapshot-")?.1.parse().ok()?))
        })
        .collect()
}

#[tokio::test]
async fn snapshot_files_go_in_ascending_order_before_the_earliest_hint() {
    let dir = tempfile::tempdir().unwrap();
    one_row_commits(dir.path(), &[], 7, 12).await;
    let (table, store) = recorded(dir.path()).await;
    let result = expire_snapshots(&table, &keep(3)).await.unwrap();
    assert_eq!(result.snapshots, 9);
    assert_eq!(snapshot_ids(dir.path()), vec![10, 11, 12]);
    assert_eq!(hint(dir.path(), "EARLIEST").as_deref(), Some("10"));

    let requests = store.requests();
    let deletes = snapshot_deletes(&requests);
    assert_eq!(
        deletes.iter().map(|(_, id)| *id).collect::<Vec<_>>(),
        (1..=9).collect::<Vec<_>>()
    );
    // Nothing else happens between two snapshot deletes (no other delete can overtake one).
    let (first, last) = (deletes[0].0, deletes[8].0);
    assert_eq!(last - first, 8, "{:?}", &requests[first..=last]);
    let hint_put = requests
        .iter()
        .position(|(kind, path)| *kind == OpKind::Put && path.ends_with("/snapshot/EARLIEST"))
        .expect("EARLIEST written");
    assert!(
        hint_put > last,
        "EARLIEST written after the snapshot files below it are deleted"
    );
    let first_other_delete = requests
        .iter()
        .position(|(kind, path)| *kind == OpKind::Delete && !path.contains("/snapshot/"));
    assert!(
        first_other_delete.is_some_and(|i| i > hint_put),
        "files go after the snapshots and the hint"
    );
}

#[tokio::test]
async fn a_failed_snapshot_delete_stops_the_run_with_everything_above_it_intact() {
    let dir = tempfile::tempdir().unwrap();
    one_row_commits(dir.path(), &[], 7, 8).await;
    let options: StorageOptions = [
        ("tidelake.fault.nth", "1"),
        ("tidelake.fault.op", "delete"),
        ("tidelake.fault.path", "snapshot/snapshot-3"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let io = FileIO::open_with(dir.path().to_str().unwrap(), &options).unwrap();
    let table = Table::open_io(io).await.unwrap();
    let err = expire_snapshots(&table, &keep(2)).await.unwrap_err();
    assert!(err.to_string().contains("injected fault"), "{err}");
    // Snapshots 1 and 2 went, 3 could not, so nothing above it was touched (D).
    assert_eq!(snapshot_ids(dir.path()), (3..=8).collect::<Vec<_>>());
    assert_eq!(
        hint(dir.path(), "EARLIEST"),
        None,
        "the hint never runs ahead of the deletions"
    );

    // The next run starts from the true earliest, 3, although no hint says so.
    let table = Table::open_io(FileIO::open(dir.path().to_str().unwrap()).unwrap())
        .await
        .unwrap();
    assert_eq!(
        expire_snapshots(&table, &keep(2)).await.unwrap().snapshots,
        4
    );
    assert_eq!(snapshot_ids(dir.path()), vec![7, 8]);
    assert_eq!(hint(dir.path(), "EARLIEST").as_deref(), Some("7"));
}

#[tokio::test]
async fn leftovers_below_the_earliest_hint_are_expired_first() {
    let dir = tempfile::tempdir().unwrap();
    one_row_commits(dir.path(), &[], 7, 6).await;
    // A hint above snapshots that still exist (an older tidelake wrote EARLIEST first).
    std::fs::write(dir.path().join("snapshot/EARLIEST"), "4").unwrap();
    let (table, store) = recorded(dir.path()).await;
    assert_eq!(
        expire_snapshots(&table, &keep(2)).await.unwrap().snapshots,
        4
    );
    let ids: Vec<i64> = snapshot_deletes(&store.requests())
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    assert_eq!(ids, vec![1, 2, 3, 4]);
    assert_eq!(snapshot_ids(dir.path()), vec![5, 6]);
}

#[tokio::test]
async fn retention_counts_from_the_published_latest_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    one_row_commits(dir.path(), &[], 7, 5).await;
    // Snapshot 5 exists but its committer has not published it yet: LATEST still says 4.
    std::fs::write(dir.path().join("snapshot/LATEST"), "4").unwrap();
    let table = Table::open_io(FileIO::open(dir.path().to_str().unwrap()).unwrap())
        .await
        .unwrap();
    assert_eq!(
        expire_snapshots(&table, &keep(1)).await.unwrap().snapshots,
        3
    );
    assert_eq!(
        snapshot_ids(dir.path()),
        vec![4, 5],
        "the parent of the unverified snapshot stays"
    );
    assert_eq!(table.snapshot_manager().latest_id().await.unwrap(), Some(5));
}

#[tokio::test]
async fn expiring_nothing_costs_a_handful_of_requests_without_listing() {
    let dir = tempfile::tempdir().unwrap();
    one_row_commits(dir.path(), &[], 7, 300).await;
    let (table, store) = recorded(dir.path()).await;
    // Paimon's defaults: 10 retained at least, 1 h; every snapshot here is younger.
    let config = ExpireConfig::of_table(&table).unwrap();
    // The first run finds no EARLIEST hint (commits do not write it): it lists once and
    // writes the hint. Every later run uses it.
    expire_snapshots(&table, &config).await.unwrap();
    assert_eq!(hint(dir.path(), "EARLIEST").as_deref(), Some("1"));
    let before = store.requests().len();
    let result = expire_snapshots(&table, &config).await.unwrap();
    assert_eq!((result.snapshots, result.earliest), (0, Some(1)));
    let requests = &store.requests()[before..];
    assert!(
        requests.iter().all(|(kind, _)| *kind != OpKind::List),
        "{requests:?}"
    );
    assert!(
        requests.len() <= 8,
        "{} requests: {requests:?}",
        requests.len()
    );

    // Expiring one snapshot of the 300 reads what it expires and the retained deltas, but
    // lists nothing but the (empty) tag, consumer, branch and changelog directories (other
    // branches' files and long-lived changelogs an earlier decoupled configuration left are
    // protected).
    let before = store.requests().len();
    assert_eq!(
        expire_snapshots(&table, &keep(299))
            .await
            .unwrap()
            .snapshots,
        1
    );
    let lists: Vec<_> = store.requests()[before..]
        .iter()
        .filter(|(k, _)| *k == OpKind::List)
        .cloned()
        .collect();
    let allowed = ["/tag", "/consumer", "/branch", "/changelog"];
    assert!(
        lists
            .iter()
            .all(|(_, p)| allowed.iter().any(|a| p.ends_with(a))),
        "{lists:?}"
    );
    assert!(lists.len() <= 5, "{lists:?}");
}
