//! [`ReadCache`]: a byte-bounded, least-recently-used cache of what readers derive from files
//! that never change once written (Parquet footers and page indexes, deletion vectors, decoded
//! manifests), for long-lived readers such as `crate::lookup::Lookuper`.
//!
//! Invariants:
//! * only immutable files are cached (data, index and manifest files: their names are unique
//!   and never rewritten), so an entry never goes stale; entries are keyed by path relative to
//!   the table root and by the type of what was derived;
//! * the sum of the entries' weights (their approximate heap size) stays within the budget: an
//!   insert evicts the least recently used entries first, and an entry heavier than the whole
//!   budget is not kept.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

type Key = (TypeId, String);

struct Entry {
    value: Arc<dyn Any + Send + Sync>,
    weight: usize,
    last_used: u64,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<Key, Entry>,
    used: usize,
    clock: u64,
}

/// A cache shared by the reads of a [`super::FileIO`] that carries it.
pub struct ReadCache {
    budget: usize,
    inner: Mutex<Inner>,
}

impl fmt::Debug for ReadCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadCache")
            .field("budget", &self.budget)
            .field("used", &self.used_bytes())
            .finish()
    }
}

impl ReadCache {
    /// An empty cache holding at most `budget` bytes.
    pub fn new(budget: usize) -> ReadCache {
        ReadCache {
            budget,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The `T` cached for `path`, marked as just used.
    pub fn get<T: Any + Send + Sync>(&self, path: &str) -> Option<Arc<T>> {
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        let entry = inner
            .entries
            .get_mut(&(TypeId::of::<T>(), path.to_string()))?;
        entry.last_used = now;
        entry.value.clone().downcast::<T>().ok()
    }

    /// Cache `value` (about `weight` bytes) as the `T` of `path`, evicting the least recently
    /// used entries to stay within the budget.
    pub fn insert<T: Any + Send + Sync>(&self, path: &str, value: Arc<T>, weight: usize) {
        if weight > self.budget {
            return;
        }
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        let key = (TypeId::of::<T>(), path.to_string());
        if let Some(old) = inner.entries.remove(&key) {
            inner.used -= old.weight;
        }
        while inner.used + weight > self.budget {
            let Some(oldest) = inner
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(e) = inner.entries.remove(&oldest) {
                inner.used -= e.weight;
            }
        }
        inner.used += weight;
        inner.entries.insert(
            key,
            Entry {
                value,
                weight,
                last_used: now,
            },
        );
    }

    /// Bytes the cached entries weigh.
    pub fn used_bytes(&self) -> usize {
        self.lock().used
    }

    /// The budget in bytes.
    pub fn budget(&self) -> usize {
        self.budget
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_stay_within_the_budget_evicting_the_least_recently_used() {
        let cache = ReadCache::new(100);
        cache.insert("a", Arc::new(1u32), 40);
        cache.insert("b", Arc::new(2u32), 40);
        assert_eq!(cache.get::<u32>("a").as_deref(), Some(&1)); // b is now the oldest
        cache.insert("c", Arc::new(3u32), 40);
        assert_eq!(cache.get::<u32>("b"), None);
        assert_eq!(cache.get::<u32>("a").as_deref(), Some(&1));
        assert_eq!(cache.get::<u32>("c").as_deref(), Some(&3));
        assert_eq!(cache.used_bytes(), 80);
        // another type under the same path is another entry; too heavy an entry is not kept
        assert_eq!(cache.get::<String>("a"), None);
        cache.insert("huge", Arc::new(0u32), 101);
        assert_eq!(cache.get::<u32>("huge"), None);
        assert_eq!(cache.used_bytes(), 80);
        // replacing an entry replaces its weight
        cache.insert("a", Arc::new(5u32), 10);
        assert_eq!(cache.used_bytes(), 50);
    }
}
