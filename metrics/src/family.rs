//! Meters keyed by label values, created on first use and kept until the process ends
//! (as RocketMQ's OpenTelemetry counters are). A lookup by `&str` allocates nothing; only
//! the first sight of a new key takes the write lock.

use std::borrow::Borrow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::LocalKey;

use foldhash::fast::RandomState;
use parking_lot::RwLock;

/// Meters of type `M`, one per key `K`.
#[derive(Debug)]
pub struct Family<K, M> {
    id: u64,
    map: RwLock<HashMap<K, Arc<M>, RandomState>>,
    make: fn() -> M,
}

/// Tells families apart in a thread's [`LastHit`] (ids are never reused).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A thread's last lookup in a family: (family id, key, meter). A hot path that keeps
/// hitting the same key (one topic, one request code) then skips the lock and the hash.
pub type LastHit<K, M> = RefCell<Option<(u64, K, Arc<M>)>>;

impl<K: Hash + Eq, M> Family<K, M> {
    /// An empty family whose meters `make` creates.
    #[must_use]
    pub fn new(make: fn() -> M) -> Self {
        Family {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            map: RwLock::new(HashMap::default()),
            make,
        }
    }

    /// [`Self::with`] through the thread's `last` hit: no lock and no hash when the key is
    /// the one this thread asked for last. (A key [`removed`](Self::remove) may still be
    /// counted into its old meter by a thread whose last hit it was.)
    #[inline]
    pub fn with_last<Q, R>(
        &self,
        last: &'static LocalKey<LastHit<K, M>>,
        key: &Q,
        f: impl FnOnce(&M) -> R,
    ) -> R
    where
        K: Borrow<Q> + for<'q> From<&'q Q>,
        Q: Hash + Eq + ?Sized,
    {
        last.with(|cell| {
            let mut cell = cell.borrow_mut();
            if let Some((id, k, m)) = &*cell
                && *id == self.id
                && k.borrow() == key
            {
                return f(m);
            }
            let m = self.get(key);
            let r = f(&m);
            *cell = Some((self.id, K::from(key), m));
            r
        })
    }

    /// Runs `f` on the meter of `key`, creating it first if needed.
    #[inline]
    pub fn with<Q, R>(&self, key: &Q, f: impl FnOnce(&M) -> R) -> R
    where
        K: Borrow<Q> + for<'q> From<&'q Q>,
        Q: Hash + Eq + ?Sized,
    {
        if let Some(m) = self.map.read().get(key) {
            return f(m);
        }
        f(&self.get(key))
    }

    /// The meter of `key`, creating it first if needed (for a caller that keeps it).
    pub fn get<Q>(&self, key: &Q) -> Arc<M>
    where
        K: Borrow<Q> + for<'q> From<&'q Q>,
        Q: Hash + Eq + ?Sized,
    {
        if let Some(m) = self.map.read().get(key) {
            return Arc::clone(m);
        }
        Arc::clone(
            self.map
                .write()
                .entry(K::from(key))
                .or_insert_with(|| Arc::new((self.make)())),
        )
    }

    /// Every key and its meter, for a scrape (the lock is not held while the caller
    /// writes).
    #[must_use]
    pub fn entries(&self) -> Vec<(K, Arc<M>)>
    where
        K: Clone,
    {
        self.map
            .read()
            .iter()
            .map(|(k, m)| (k.clone(), Arc::clone(m)))
            .collect()
    }

    /// Forgets `key` (a deleted topic).
    pub fn remove<Q>(&self, key: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.map.write().remove(key);
    }
}

/// Meters keyed by two names (a group and a topic), looked up without allocating.
#[derive(Debug)]
pub struct PairFamily<M> {
    map: RwLock<HashMap<Box<str>, Arc<Inner<M>>, RandomState>>,
    make: fn() -> M,
}

type Inner<M> = RwLock<HashMap<Box<str>, Arc<M>, RandomState>>;

impl<M> PairFamily<M> {
    /// An empty family whose meters `make` creates.
    #[must_use]
    pub fn new(make: fn() -> M) -> Self {
        PairFamily {
            map: RwLock::new(HashMap::default()),
            make,
        }
    }

    /// Runs `f` on the meter of (`a`, `b`), creating it first if needed.
    #[inline]
    pub fn with<R>(&self, a: &str, b: &str, f: impl FnOnce(&M) -> R) -> R {
        let inner = self.inner(a);
        if let Some(m) = inner.read().get(b) {
            return f(m);
        }
        let m = Arc::clone(
            inner
                .write()
                .entry(b.into())
                .or_insert_with(|| Arc::new((self.make)())),
        );
        f(&m)
    }

    fn inner(&self, a: &str) -> Arc<Inner<M>> {
        if let Some(inner) = self.map.read().get(a) {
            return Arc::clone(inner);
        }
        Arc::clone(self.map.write().entry(a.into()).or_default())
    }

    /// Every (a, b) and its meter, for a scrape.
    #[must_use]
    pub fn entries(&self) -> Vec<(Box<str>, Box<str>, Arc<M>)> {
        let outer: Vec<(Box<str>, Arc<Inner<M>>)> = self
            .map
            .read()
            .iter()
            .map(|(a, inner)| (a.clone(), Arc::clone(inner)))
            .collect();
        let mut all = Vec::new();
        for (a, inner) in outer {
            for (b, m) in inner.read().iter() {
                all.push((a.clone(), b.clone(), Arc::clone(m)));
            }
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::Counter;

    #[test]
    fn meters_are_created_once_per_key() {
        let f: Family<Box<str>, Counter> = Family::new(Counter::default);
        f.with("a", |c| c.inc());
        f.with("a", |c| c.add(2));
        f.with("b", |c| c.inc());
        let mut got: Vec<(String, u64)> = f
            .entries()
            .into_iter()
            .map(|(k, c)| (k.to_string(), c.get()))
            .collect();
        got.sort();
        assert_eq!(got, vec![("a".into(), 3), ("b".into(), 1)]);
        f.remove("a");
        assert_eq!(f.entries().len(), 1);
    }

    thread_local! {
        static LAST: LastHit<Box<str>, Counter> = const { RefCell::new(None) };
    }

    #[test]
    fn last_hits_stay_with_their_family_and_key() {
        let a: Family<Box<str>, Counter> = Family::new(Counter::default);
        let b: Family<Box<str>, Counter> = Family::new(Counter::default);
        a.with_last(&LAST, "x", |c| c.inc());
        a.with_last(&LAST, "x", |c| c.inc());
        b.with_last(&LAST, "x", |c| c.inc());
        a.with_last(&LAST, "y", |c| c.inc());
        a.with("x", |c| c.inc());
        let count = |f: &Family<Box<str>, Counter>, k: &str| f.with(k, |c| c.get());
        assert_eq!((count(&a, "x"), count(&a, "y"), count(&b, "x")), (3, 1, 1));
    }

    #[test]
    fn pairs() {
        let f: PairFamily<Counter> = PairFamily::new(Counter::default);
        f.with("g", "t1", |c| c.inc());
        f.with("g", "t2", |c| c.inc());
        f.with("g", "t1", |c| c.inc());
        let mut got: Vec<(String, String, u64)> = f
            .entries()
            .into_iter()
            .map(|(a, b, c)| (a.to_string(), b.to_string(), c.get()))
            .collect();
        got.sort();
        assert_eq!(
            got,
            vec![("g".into(), "t1".into(), 2), ("g".into(), "t2".into(), 1)]
        );
    }
}
