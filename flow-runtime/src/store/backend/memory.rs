//! [`InMemory`]: the front's values kept as they are, in maps under a lock, changed in place:
//! what [`InMemoryStore`](crate::store::InMemoryStore) keeps its data in.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use super::checkpoints::Run;
use super::journals::Journal;
use super::keep::{Changed, Keep, Value};
use super::threads::{Lease, Thread};
use crate::store::StoreError;

/// Where [`InMemoryStore`](crate::store::InMemoryStore) keeps its runs, threads, turn leases
/// and journals: each in a map under its lock, as values (a checkpoint's and a record's bytes
/// as written; a journal step handed over unencoded stays so until read). Every rule is the
/// front's ([`KeyValueStore`](super::KeyValueStore)); this only keeps.
#[derive(Debug, Default)]
pub struct InMemory {
    pub(super) runs: Mutex<HashMap<String, Run>>,
    pub(super) threads: Mutex<HashMap<String, Thread>>,
    pub(super) leases: Mutex<HashMap<String, Lease>>,
    pub(super) journals: Mutex<HashMap<String, Journal>>,
}

/// Locks `map`. A panic while it was held left no half-made change: every change of the
/// front checks before it changes anything.
fn lock<V>(map: &Mutex<HashMap<String, V>>) -> MutexGuard<'_, HashMap<String, V>> {
    map.lock().unwrap_or_else(|p| p.into_inner())
}

impl Keep for InMemory {
    const KEEPS_DEFERRED: bool = true;

    async fn view<V: Value, T: Send>(
        &self,
        key: &str,
        f: impl FnOnce(Option<&V>) -> Result<T, StoreError> + Send,
    ) -> Result<T, StoreError> {
        f(lock(V::map(self)).get(key))
    }

    async fn update<V: Value, T: Send, E: From<StoreError> + Send>(
        &self,
        _operation: &'static str,
        key: &str,
        mut f: impl FnMut(&mut Option<V>) -> Result<Changed<T>, E> + Send,
    ) -> Result<T, E> {
        let mut map = lock(V::map(self));
        let answer = match map.get_mut(key) {
            Some(slot) => {
                // Changed in place: taken out, and put back as `f` left it.
                let mut value = Some(std::mem::take(slot));
                let answer = f(&mut value);
                match value {
                    Some(value) => *slot = value,
                    None => {
                        map.remove(key);
                    }
                }
                answer
            }
            None => {
                let mut value = None;
                let answer = f(&mut value);
                if let Some(value) = value {
                    map.insert(key.to_owned(), value);
                }
                answer
            }
        };
        answer.map(|(answer, _)| answer)
    }

    async fn each<V: Value, T: Send>(
        &self,
        mut f: impl FnMut(&str, &V) -> Result<Option<T>, StoreError> + Send,
    ) -> Result<Vec<T>, StoreError> {
        let map = lock(V::map(self));
        let mut picked = Vec::new();
        for (key, value) in map.iter() {
            if let Some(t) = f(key, value)? {
                picked.push(t);
            }
        }
        Ok(picked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::backend::threads::Lease;
    use std::time::Duration;

    /// The owner of the lease kept under `t`, if any.
    fn owner(memory: &InMemory) -> Option<String> {
        let map = lock(&memory.leases);
        let json: serde_json::Value = serde_json::from_slice(&map.get("t")?.encode()).unwrap();
        Some(json["owner"].as_str().unwrap().to_owned())
    }

    #[tokio::test]
    async fn a_change_that_fails_is_not_kept_and_none_removes_the_key() {
        let memory = InMemory::default();
        let take = |held: &mut Option<Lease>| {
            Lease::take(held, "t", "a", Duration::from_secs(60), memory.now_ms())
        };
        memory.update("lease", "t", take).await.unwrap();
        assert_eq!(owner(&memory).as_deref(), Some("a"));

        // Another owner is refused while "a" holds it: the value is as it was.
        let other = |held: &mut Option<Lease>| {
            Lease::take(held, "t", "b", Duration::from_secs(60), memory.now_ms())
        };
        let refused = memory.update("lease", "t", other).await;
        assert!(matches!(
            refused,
            Err(crate::store::ThreadError::Busy { .. })
        ));
        assert_eq!(owner(&memory).as_deref(), Some("a"));

        // Setting `None` removes the key, and the table is empty.
        let release =
            |held: &mut Option<Lease>| Ok::<_, StoreError>(((), Lease::release(held, "a")));
        memory.update("release", "t", release).await.unwrap();
        assert_eq!(owner(&memory), None);
        let left = memory.each(|key, _: &Lease| Ok(Some(key.to_owned()))).await;
        assert!(left.unwrap().is_empty());
    }
}
