//! The wall clock, fresh ids and the passing of time: the only inputs of a write besides the
//! data and the storage.
//!
//! Every timestamp tidelake stores (snapshot `timeMillis`, schema `timeMillis`, a data file's
//! `creationTime`, a tag's `createTime`) and every time-based decision (expiration cut-offs,
//! partition TTLs) reads the [`Clock`] of an [`Env`]; every generated name part (data,
//! manifest and index file uuids, snapshot uuids, commit users of compactions, retry jitter)
//! comes from its [`IdGenerator`]. A [`FileIO`](super::FileIO) carries one [`Env`] and hands
//! it to every child and table opened from it, so a test injects a [`ManualClock`] and
//! [`SequentialIds`] once (`FileIO::with_env`, `Table::with_env`) and gets byte-identical
//! files.
//!
//! Monotonic time is its [`Timer`]: every timeout and duration (`commit.timeout`,
//! `lock-acquire-timeout`, how long a commit was in flight) is a [`Stopwatch`] of it and every
//! wait between attempts is its [`Timer::sleep`], so a test on a [`ManualTimer`] runs a
//! retry loop to its time limit without waiting.
//!
//! A test in another process (Python) moves the [`SystemClock`] instead, by
//! [`set_clock_offset`] (development builds only).
//!
//! Invariant: this module is the only place that reads the system clock, the monotonic clock
//! or draws random ids, and the only place that sleeps; the workspace `clippy.toml` forbids
//! `SystemTime::now`, `chrono::Utc::now`, `chrono::Local::now`, `Uuid::new_v4`,
//! `Instant::now`, `tokio::time::sleep` and `std::thread::sleep` everywhere else.

use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDateTime, TimeZone};
use futures::future::BoxFuture;
use uuid::Uuid;

/// Wall-clock time.
pub trait Clock: Debug + Send + Sync {
    /// Milliseconds since the epoch (UTC).
    fn now_millis(&self) -> i64;

    /// The local date-time (Java `LocalDateTime.now()`).
    fn local_now(&self) -> NaiveDateTime;

    /// Epoch milliseconds as a date-time of this clock's local zone (Java
    /// `Instant.ofEpochMilli(ms).atZone(ZoneId.systemDefault()).toLocalDateTime()`).
    fn to_local(&self, epoch_ms: i64) -> Option<NaiveDateTime>;
}

/// Fresh unique ids.
pub trait IdGenerator: Debug + Send + Sync {
    /// An id no earlier call returned.
    fn next_uuid(&self) -> Uuid;

    /// A generator for one of several concurrent tasks, forked in a fixed order: the ids the
    /// task draws do not depend on how the tasks interleave. By default the fork derives its
    /// ids from one id drawn from `self` now ([`DerivedIds`]).
    fn fork(&self) -> Arc<dyn IdGenerator> {
        Arc::new(DerivedIds::new(self.next_uuid()))
    }
}

/// Monotonic time and waiting.
pub trait Timer: Debug + Send + Sync {
    /// The time since this timer's fixed origin; it never decreases.
    fn now(&self) -> Duration;

    /// A future that completes once `duration` has passed on this timer.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
}

/// The system's monotonic clock and tokio's timer.
#[derive(Debug)]
pub struct SystemTimer {
    origin: Instant,
}

impl Default for SystemTimer {
    #[allow(clippy::disallowed_methods)] // the one place the monotonic clock is read
    fn default() -> SystemTimer {
        SystemTimer {
            origin: Instant::now(),
        }
    }
}

impl Timer for SystemTimer {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    #[allow(clippy::disallowed_methods)] // the one place that sleeps
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// A timer whose time passes only by sleeping on it: [`Timer::sleep`] moves it forward at
/// once (and yields to other tasks), so a retry loop reaches its time limit without waiting.
#[derive(Debug, Default)]
pub struct ManualTimer {
    nanos: AtomicU64,
}

impl ManualTimer {
    /// Moves the time forward by `duration`.
    pub fn advance(&self, duration: Duration) {
        let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_add(nanos, Ordering::SeqCst);
    }
}

impl Timer for ManualTimer {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::SeqCst))
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        self.advance(duration);
        Box::pin(tokio::task::yield_now())
    }
}

/// The time passed on a [`Timer`] since [`Env::stopwatch`] was called.
#[derive(Clone, Debug)]
pub struct Stopwatch {
    timer: Arc<dyn Timer>,
    started: Duration,
}

impl Stopwatch {
    pub fn elapsed(&self) -> Duration {
        self.timer.now().saturating_sub(self.started)
    }
}

/// The system clock and local time zone.
#[derive(Debug, Default)]
pub struct SystemClock;

/// How far development builds move the [`SystemClock`] ([`set_clock_offset`]).
#[cfg(feature = "fault-injection")]
static CLOCK_OFFSET_MS: AtomicI64 = AtomicI64::new(0);

/// The [`SystemClock`]'s offset from the system's clock, in milliseconds.
fn clock_offset_ms() -> i64 {
    #[cfg(feature = "fault-injection")]
    {
        CLOCK_OFFSET_MS.load(Ordering::SeqCst)
    }
    #[cfg(not(feature = "fault-injection"))]
    {
        0
    }
}

/// Move every [`SystemClock`] of this process `offset_ms` milliseconds away from the system's
/// clock (development builds only, feature `fault-injection`: how a test of another process,
/// such as Python, makes time pass); `false` in other builds, which ignore it.
pub fn set_clock_offset(offset_ms: i64) -> bool {
    #[cfg(feature = "fault-injection")]
    {
        CLOCK_OFFSET_MS.store(offset_ms, Ordering::SeqCst);
        true
    }
    #[cfg(not(feature = "fault-injection"))]
    {
        let _ = offset_ms;
        false
    }
}

impl Clock for SystemClock {
    #[allow(clippy::disallowed_methods)] // the one place the system clock is read
    fn now_millis(&self) -> i64 {
        chrono::Utc::now().timestamp_millis() + clock_offset_ms()
    }

    #[allow(clippy::disallowed_methods)] // the one place the system clock is read
    fn local_now(&self) -> NaiveDateTime {
        chrono::Local::now().naive_local() + chrono::Duration::milliseconds(clock_offset_ms())
    }

    fn to_local(&self, epoch_ms: i64) -> Option<NaiveDateTime> {
        chrono::Local
            .timestamp_millis_opt(epoch_ms)
            .earliest()
            .map(|t| t.naive_local())
    }
}

/// Epoch milliseconds as local wall-clock milliseconds (Java `LocalDateTime.ofInstant(...,
/// ZoneId.systemDefault())`).
pub(crate) fn local_wall_ms(epoch_ms: i64) -> Option<i64> {
    chrono::Local
        .timestamp_millis_opt(epoch_ms)
        .single()
        .map(|t| t.naive_local().and_utc().timestamp_millis())
}

/// Local wall-clock milliseconds (a data file's `_CREATION_TIME`) as epoch milliseconds (Java
/// `DataFileMeta.creationTimeEpochMillis`, `atZone(ZoneId.systemDefault())`: a time repeated
/// by a daylight-saving change is its earlier instant, a skipped one keeps the offset before
/// the gap).
pub(crate) fn epoch_ms_of_local_wall(local_ms: i64) -> i64 {
    let Some(wall) = DateTime::from_timestamp_millis(local_ms).map(|t| t.naive_utc()) else {
        return local_ms;
    };
    if let Some(t) = chrono::Local.from_local_datetime(&wall).earliest() {
        return t.timestamp_millis();
    }
    let before = chrono::Local
        .from_local_datetime(&(wall - chrono::Duration::hours(24)))
        .earliest();
    before.map_or(local_ms, |t| {
        local_ms - i64::from(t.offset().local_minus_utc()) * 1000
    })
}

/// Random (version 4) uuids.
#[derive(Debug, Default)]
pub struct RandomIds;

impl IdGenerator for RandomIds {
    #[allow(clippy::disallowed_methods)] // the one place random ids are drawn
    fn next_uuid(&self) -> Uuid {
        Uuid::new_v4()
    }

    /// Random ids are independent of order already.
    fn fork(&self) -> Arc<dyn IdGenerator> {
        Arc::new(RandomIds)
    }
}

/// Ids derived from a seed id and a counter by hashing: the `n`-th is a function of the seed
/// and `n` only, and ids of different seeds collide as rarely as random ones.
#[derive(Debug)]
pub struct DerivedIds {
    seed: Uuid,
    next: AtomicU64,
}

impl DerivedIds {
    pub fn new(seed: Uuid) -> DerivedIds {
        DerivedIds {
            seed,
            next: AtomicU64::new(0),
        }
    }
}

impl IdGenerator for DerivedIds {
    fn next_uuid(&self) -> Uuid {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let mut bytes = [0u8; 16];
        for (half, chunk) in bytes.chunks_mut(8).enumerate() {
            // SipHash with fixed keys: the same output for the same input within a build.
            let mut h = std::hash::DefaultHasher::new();
            (self.seed, n, half).hash(&mut h);
            chunk.copy_from_slice(&h.finish().to_le_bytes());
        }
        uuid::Builder::from_random_bytes(bytes).into_uuid()
    }
}

/// A clock that reads what it was set to; its local time zone is UTC.
#[derive(Debug)]
pub struct ManualClock {
    millis: AtomicI64,
}

impl ManualClock {
    pub fn new(millis: i64) -> ManualClock {
        ManualClock {
            millis: AtomicI64::new(millis),
        }
    }

    pub fn set(&self, millis: i64) {
        self.millis.store(millis, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_millis(&self) -> i64 {
        self.millis.load(Ordering::SeqCst)
    }

    fn local_now(&self) -> NaiveDateTime {
        self.to_local(self.now_millis()).unwrap_or_default()
    }

    fn to_local(&self, epoch_ms: i64) -> Option<NaiveDateTime> {
        DateTime::from_timestamp_millis(epoch_ms).map(|t| t.naive_utc())
    }
}

/// Uuids `00000000-0000-0000-0000-000000000001`, `...02`, ... in call order.
#[derive(Debug, Default)]
pub struct SequentialIds {
    last: AtomicU64,
}

impl IdGenerator for SequentialIds {
    fn next_uuid(&self) -> Uuid {
        Uuid::from_u128(u128::from(self.last.fetch_add(1, Ordering::SeqCst) + 1))
    }
}

/// A clock, an id generator and a timer. Cheap to clone; clones share all three.
#[derive(Clone, Debug)]
pub struct Env {
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    timer: Arc<dyn Timer>,
}

impl Default for Env {
    /// The system clock, random ids and the system timer.
    fn default() -> Env {
        Env::new(Arc::new(SystemClock), Arc::new(RandomIds))
    }
}

impl Env {
    /// `clock` and `ids` with the system timer ([`Env::with_timer`] replaces it).
    pub fn new(clock: Arc<dyn Clock>, ids: Arc<dyn IdGenerator>) -> Env {
        Env {
            clock,
            ids,
            timer: Arc::new(SystemTimer::default()),
        }
    }

    /// The same clock and ids with `timer`.
    pub fn with_timer(self, timer: Arc<dyn Timer>) -> Env {
        Env { timer, ..self }
    }

    /// A stopwatch started now on this env's timer.
    pub fn stopwatch(&self) -> Stopwatch {
        Stopwatch {
            timer: self.timer.clone(),
            started: self.timer.now(),
        }
    }

    /// Waits `duration` on this env's timer.
    pub fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        self.timer.sleep(duration)
    }

    /// Milliseconds since the epoch (UTC).
    pub fn now_millis(&self) -> i64 {
        self.clock.now_millis()
    }

    /// The local date-time (Java `LocalDateTime.now()`).
    pub fn local_now(&self) -> NaiveDateTime {
        self.clock.local_now()
    }

    /// Epoch milliseconds as a date-time of the clock's local zone ([`Clock::to_local`]).
    pub fn to_local(&self, epoch_ms: i64) -> Option<NaiveDateTime> {
        self.clock.to_local(epoch_ms)
    }

    /// The local date-time as epoch milliseconds, as if it were UTC (how Java stores a
    /// data file's `creationTime`).
    pub fn local_now_millis(&self) -> i64 {
        self.local_now().and_utc().timestamp_millis()
    }

    /// The same clock with [`IdGenerator::fork`]ed ids: call it in a fixed order, once per
    /// concurrent task, for ids that do not depend on how the tasks interleave.
    pub fn fork(&self) -> Env {
        Env {
            clock: self.clock.clone(),
            ids: self.ids.fork(),
            timer: self.timer.clone(),
        }
    }

    /// A fresh uuid.
    pub fn uuid(&self) -> Uuid {
        self.ids.next_uuid()
    }

    /// A fresh uuid in its hyphenated text form (file names, commit users).
    pub fn uuid_string(&self) -> String {
        self.uuid().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_and_sequential_ids_are_what_they_were_set_to() {
        let clock = Arc::new(ManualClock::new(1_700_000_000_123));
        let env = Env::new(clock.clone(), Arc::new(SequentialIds::default()));
        assert_eq!(env.now_millis(), 1_700_000_000_123);
        assert_eq!(env.local_now_millis(), 1_700_000_000_123);
        clock.set(5);
        assert_eq!(env.now_millis(), 5);
        assert_eq!(env.uuid_string(), "00000000-0000-0000-0000-000000000001");
        assert_eq!(env.clone().uuid().as_u128(), 2, "clones share the counter");
    }

    #[test]
    fn forks_draw_the_same_ids_whatever_order_they_are_used_in() {
        let ids = |reverse: bool| {
            let env = Env::new(
                Arc::new(ManualClock::new(0)),
                Arc::new(SequentialIds::default()),
            );
            let forks = [env.fork(), env.fork()];
            let mut drawn = vec![Vec::new(), Vec::new()];
            let order: Vec<usize> = if reverse {
                vec![1, 1, 0, 0]
            } else {
                vec![0, 1, 0, 1]
            };
            for f in order {
                drawn[f].push(forks[f].uuid());
            }
            (drawn, env.uuid())
        };
        let (forward, after) = ids(false);
        assert_eq!(ids(true), (forward.clone(), after));
        assert_eq!(after.as_u128(), 3, "each fork drew one id from its parent");
        let all: std::collections::HashSet<Uuid> = forward.concat().into_iter().collect();
        assert_eq!(all.len(), 4, "distinct ids");
        assert!(
            !all.iter().any(|u| u.as_u128() <= 3),
            "none of the parent's"
        );
    }

    #[tokio::test]
    async fn a_manual_timer_passes_time_only_by_sleeping() {
        let env = Env::default().with_timer(Arc::new(ManualTimer::default()));
        let watch = env.stopwatch();
        assert_eq!(watch.elapsed(), Duration::ZERO);
        env.sleep(Duration::from_secs(3600)).await;
        env.fork().sleep(Duration::from_millis(5)).await;
        assert_eq!(
            watch.elapsed(),
            Duration::from_millis(3_600_005),
            "forks share it"
        );
    }

    #[tokio::test]
    async fn the_system_timer_sleeps_in_real_time() {
        let env = Env::default();
        let watch = env.stopwatch();
        env.sleep(Duration::from_millis(20)).await;
        let elapsed = watch.elapsed();
        assert!(elapsed >= Duration::from_millis(20), "{elapsed:?}");
    }

    #[test]
    fn the_default_env_reads_the_system_clock_and_draws_distinct_ids() {
        let env = Env::default();
        #[allow(clippy::disallowed_methods)] // compared against the real clock
        let system = chrono::Utc::now().timestamp_millis();
        assert!((env.now_millis() - system).abs() < 60_000);
        assert_ne!(env.uuid(), env.uuid());
    }
}
