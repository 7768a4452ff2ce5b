//! [`InstrumentedStore`]: an [`ObjectStore`] wrapper that counts operations by kind, can
//! record them in order ([`InstrumentedStore::recording`], for protocol-order tests) and can
//! inject one fault, for request-count bounds and crash/fault tests.
//!
//! The module is **test-only**: it exists in builds with the `fault-injection` feature (the
//! tests' and the development wheel's), never in a release. Faults are switched on by storage
//! options (so Python tests and subprocesses can use them through
//! `open_table(..., storage_options=...)`):
//!
//! | key | values | default |
//! |---|---|---|
//! | `tidelake.fault.nth` | the 1-based index of the matching operation that faults | required |
//! | `tidelake.fault.op` | `get`, `head`, `put`, `list`, `delete`, `copy`, `any` | `any` |
//! | `tidelake.fault.path` | only operations whose path contains this substring match | all |
//! | `tidelake.fault.action` | `error` (a storage error), `hang` (never completes), `abort` (the process dies), `delay:MS` (the operation succeeds MS milliseconds late: a slow writer) | `error` |
//! | `tidelake.fault.when` | `before` the operation reaches the inner store, or `after` it succeeded | `before` |
//!
//! Invariants:
//! * exactly one operation faults (the `nth` matching one); every other passes through unchanged;
//! * `after` faults run the operation first, so `put` + `after` + `error` is "the write landed
//!   but the caller saw a failure", and `abort` + `after` is "crashed right after it landed";
//! * listings have no side effect, so for `list` `after` behaves as `before`;
//! * counts are per store instance (one [`super::FileIO::open`]); a `get` with the `head`
//!   option counts as `head`, ranged reads (`get_ranges`) as one `get` each.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
};

use super::location::{StorageOptions, FAULT_PREFIX};
use crate::error::{Error, Result};

/// The kinds of storage operations counted (one kind is one request on S3-like stores, except
/// listings, which page every 1000 keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    Get,
    Head,
    Put,
    List,
    Delete,
    Copy,
}

impl OpKind {
    const ALL: [OpKind; 6] = [
        OpKind::Get,
        OpKind::Head,
        OpKind::Put,
        OpKind::List,
        OpKind::Delete,
        OpKind::Copy,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OpKind::Get => "get",
            OpKind::Head => "head",
            OpKind::Put => "put",
            OpKind::List => "list",
            OpKind::Delete => "delete",
            OpKind::Copy => "copy",
        }
    }
}

/// Operation counts of one [`InstrumentedStore`].
#[derive(Debug, Default)]
pub struct OpCounts([AtomicU64; 6]);

impl OpCounts {
    pub fn get(&self, kind: OpKind) -> u64 {
        self.0[kind as usize].load(Ordering::SeqCst)
    }

    /// All operations counted so far.
    pub fn total(&self) -> u64 {
        OpKind::ALL.iter().map(|k| self.get(*k)).sum()
    }

    /// `(kind, count)` for every kind, e.g. for reports.
    pub fn by_kind(&self) -> Vec<(&'static str, u64)> {
        OpKind::ALL
            .iter()
            .map(|k| (k.name(), self.get(*k)))
            .collect()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Error,
    Hang,
    Abort,
    Delay(u64),
}

/// One fault to inject (see the module docs for its storage options).
#[derive(Clone, Debug)]
pub struct FaultPlan {
    nth: u64,
    op: Option<OpKind>,
    path: Option<String>,
    action: Action,
    after: bool,
}

impl FaultPlan {
    /// The plan the `tidelake.fault.*` options describe; `None` when there are none.
    pub fn from_options(options: &StorageOptions) -> Result<Option<FaultPlan>> {
        if options.is_empty() {
            return Ok(None);
        }
        let bad = |key: &str, v: &str| {
            Error::invalid(format!(
                "bad test-only storage option {FAULT_PREFIX}{key}='{v}'"
            ))
        };
        let mut plan = FaultPlan {
            nth: 0,
            op: None,
            path: None,
            action: Action::Error,
            after: false,
        };
        for (key, v) in options {
            let key = key.strip_prefix(FAULT_PREFIX).unwrap_or(key);
            match key {
                "nth" => {
                    plan.nth = v
                        .parse()
                        .ok()
                        .filter(|n| *n >= 1)
                        .ok_or_else(|| bad(key, v))?
                }
                "op" => {
                    plan.op = match v.as_str() {
                        "any" => None,
                        name => Some(
                            *OpKind::ALL
                                .iter()
                                .find(|k| k.name() == name)
                                .ok_or_else(|| bad(key, v))?,
                        ),
                    }
                }
                "path" => plan.path = Some(v.clone()),
                "action" => {
                    plan.action = match v.as_str() {
                        "error" => Action::Error,
                        "hang" => Action::Hang,
                        "abort" => Action::Abort,
                        other => {
                            match other.strip_prefix("delay:").and_then(|ms| ms.parse().ok()) {
                                Some(ms) => Action::Delay(ms),
                                None => return Err(bad(key, v)),
                            }
                        }
                    }
                }
                "when" => {
                    plan.after = match v.as_str() {
                        "before" => false,
                        "after" => true,
                        _ => return Err(bad(key, v)),
                    }
                }
                _ => {
                    return Err(Error::invalid(format!(
                        "unknown test-only storage option '{FAULT_PREFIX}{key}'"
                    )))
                }
            }
        }
        if plan.nth == 0 {
            return Err(Error::invalid(format!(
                "fault injection needs {FAULT_PREFIX}nth"
            )));
        }
        Ok(Some(plan))
    }

    /// Wrap `store` so that it injects this fault.
    pub fn wrap(self, store: Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore> {
        Arc::new(InstrumentedStore::new(store, Some(self)))
    }
}

#[derive(Debug)]
struct State {
    counts: OpCounts,
    fault: Option<FaultPlan>,
    matched: AtomicU64,
    /// Every operation with its path, in the order they started, when recording.
    log: Option<Mutex<Vec<(OpKind, String)>>>,
}

/// The counting, fault-injecting wrapper (see the module docs).
#[derive(Debug, Clone)]
pub struct InstrumentedStore {
    inner: Arc<dyn ObjectStore>,
    state: Arc<State>,
}

/// Whether an operation faults, and when.
#[derive(Clone, Copy)]
enum Fault {
    None,
    Before(Action),
    After(Action),
}

impl InstrumentedStore {
    pub fn new(inner: Arc<dyn ObjectStore>, fault: Option<FaultPlan>) -> Self {
        Self::with_state(inner, fault, None)
    }

    fn with_state(
        inner: Arc<dyn ObjectStore>,
        fault: Option<FaultPlan>,
        log: Option<Mutex<Vec<(OpKind, String)>>>,
    ) -> Self {
        InstrumentedStore {
            inner,
            state: Arc::new(State {
                counts: OpCounts::default(),
                fault,
                matched: AtomicU64::new(0),
                log,
            }),
        }
    }

    /// A wrapper that only counts.
    pub fn counting(inner: Arc<dyn ObjectStore>) -> Self {
        Self::new(inner, None)
    }

    /// A wrapper that counts and records every operation (see [`InstrumentedStore::requests`]).
    pub fn recording(inner: Arc<dyn ObjectStore>) -> Self {
        Self::with_state(inner, None, Some(Mutex::default()))
    }

    pub fn counts(&self) -> &OpCounts {
        &self.state.counts
    }

    /// The operations recorded so far, in the order they started, with their full object
    /// paths (empty unless made by [`InstrumentedStore::recording`]).
    pub fn requests(&self) -> Vec<(OpKind, String)> {
        self.state.log.as_ref().map_or_else(Vec::new, |log| {
            log.lock().unwrap_or_else(|e| e.into_inner()).clone()
        })
    }
}

impl State {
    fn tick(&self, kind: OpKind, path: Option<&Path>) -> Fault {
        self.counts.0[kind as usize].fetch_add(1, Ordering::SeqCst);
        if let Some(log) = &self.log {
            let path = path.map_or_else(String::new, |p| p.as_ref().to_string());
            log.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((kind, path));
        }
        let Some(plan) = &self.fault else {
            return Fault::None;
        };
        let path_matches = match (&plan.path, path) {
            (None, _) => true,
            (Some(want), Some(p)) => p.as_ref().contains(want.as_str()),
            (Some(_), None) => false,
        };
        if plan.op.is_some_and(|k| k != kind) || !path_matches {
            return Fault::None;
        }
        if self.matched.fetch_add(1, Ordering::SeqCst) + 1 != plan.nth {
            return Fault::None;
        }
        if plan.after && kind != OpKind::List {
            Fault::After(plan.action)
        } else {
            Fault::Before(plan.action)
        }
    }
}

/// Carry out a fault: abort the process, hang, wait (no error), or return the injected error.
async fn fire(action: Action, kind: OpKind, path: Option<&Path>) -> Option<object_store::Error> {
    let error = match action {
        // Real time (the system timer), whatever timer the table's env has: a slow store.
        Action::Delay(ms) => {
            super::Env::default().sleep(Duration::from_millis(ms)).await;
            return None;
        }
        Action::Abort => std::process::abort(),
        Action::Hang => loop {
            super::Env::default().sleep(Duration::from_secs(3600)).await;
        },
        Action::Error => object_store::Error::Generic {
            store: "fault-injection",
            source: format!(
                "injected fault on {} of {}",
                kind.name(),
                path.map_or("(none)", |p| p.as_ref())
            )
            .into(),
        },
    };
    Some(error)
}

/// A listing under `action`: the injected error as its only item, or `inner` after the fault
/// (a delay) has been carried out.
fn faulted_listing(
    action: Action,
    prefix: Option<&Path>,
    inner: BoxStream<'static, object_store::Result<ObjectMeta>>,
) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
    let prefix = prefix.cloned();
    stream::once(async move {
        match fire(action, OpKind::List, prefix.as_ref()).await {
            Some(error) => stream::once(async move { Err(error) }).boxed(),
            None => inner,
        }
    })
    .flatten()
    .boxed()
}

/// Run `op` under `fault`.
async fn guarded<T>(
    fault: Fault,
    kind: OpKind,
    path: Option<&Path>,
    op: impl std::future::Future<Output = object_store::Result<T>>,
) -> object_store::Result<T> {
    if let Fault::Before(action) = fault {
        if let Some(error) = fire(action, kind, path).await {
            return Err(error);
        }
    }
    let out = op.await;
    match (fault, &out) {
        (Fault::After(action), Ok(_)) => match fire(action, kind, path).await {
            Some(error) => Err(error),
            None => out,
        },
        _ => out,
    }
}

impl fmt::Display for InstrumentedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Instrumented({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for InstrumentedStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let fault = self.state.tick(OpKind::Put, Some(location));
        guarded(
            fault,
            OpKind::Put,
            Some(location),
            self.inner.put_opts(location, payload, opts),
        )
        .await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        let fault = self.state.tick(OpKind::Put, Some(location));
        guarded(
            fault,
            OpKind::Put,
            Some(location),
            self.inner.put_multipart_opts(location, opts),
        )
        .await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let kind = if options.head {
            OpKind::Head
        } else {
            OpKind::Get
        };
        let fault = self.state.tick(kind, Some(location));
        guarded(
            fault,
            kind,
            Some(location),
            self.inner.get_opts(location, options),
        )
        .await
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        let fault = self.state.tick(OpKind::Get, Some(location));
        guarded(
            fault,
            OpKind::Get,
            Some(location),
            self.inner.get_ranges(location, ranges),
        )
        .await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        // One delete per location, so that every delete is counted and can fault on its own.
        let (inner, state) = (self.inner.clone(), self.state.clone());
        locations
            .then(move |location| {
                let (inner, state) = (inner.clone(), state.clone());
                async move {
                    let location = location?;
                    let fault = state.tick(OpKind::Delete, Some(&location));
                    guarded(
                        fault,
                        OpKind::Delete,
                        Some(&location),
                        inner.delete(&location),
                    )
                    .await?;
                    Ok(location)
                }
            })
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        match self.state.tick(OpKind::List, prefix) {
            Fault::None => self.inner.list(prefix),
            Fault::Before(action) | Fault::After(action) => {
                faulted_listing(action, prefix, self.inner.list(prefix))
            }
        }
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        match self.state.tick(OpKind::List, prefix) {
            Fault::None => self.inner.list_with_offset(prefix, offset),
            Fault::Before(action) | Fault::After(action) => {
                faulted_listing(action, prefix, self.inner.list_with_offset(prefix, offset))
            }
        }
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        let fault = self.state.tick(OpKind::List, prefix);
        guarded(
            fault,
            OpKind::List,
            prefix,
            self.inner.list_with_delimiter(prefix),
        )
        .await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        let fault = self.state.tick(OpKind::Copy, Some(to));
        guarded(
            fault,
            OpKind::Copy,
            Some(to),
            self.inner.copy_opts(from, to, options),
        )
        .await
    }

    async fn rename_opts(
        &self,
        from: &Path,
        to: &Path,
        options: RenameOptions,
    ) -> object_store::Result<()> {
        let fault = self.state.tick(OpKind::Copy, Some(to));
        guarded(
            fault,
            OpKind::Copy,
            Some(to),
            self.inner.rename_opts(from, to, options),
        )
        .await
    }
}
