//! [`TransientMemoryStore`]: memory items in the process's memory, gone with it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use async_trait::async_trait;

use super::text::{bm25, words};
use super::{
    expiry_ms, Expect, Hit, ItemKey, MemoryError, MemoryItem, MemoryStore, Namespace, Partition,
    PutItem,
};
use crate::store::{from_millis, millis};

/// One stored item and its vector.
#[derive(Debug, Clone)]
struct Stored {
    item: MemoryItem,
    embedding: Option<Vec<f32>>,
}

impl Stored {
    fn live(&self, now: SystemTime) -> bool {
        self.item.expires_at.map_or(true, |at| at > now)
    }
}

type Items = BTreeMap<(Namespace, ItemKey), Stored>;

/// Memory items in the process's memory: for tests and for applications that need no memory
/// beyond the process. Each partition is its own map, so no lookup can reach another's items.
/// Full text search ranks with BM25 over the partition's items. Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct TransientMemoryStore {
    partitions: Arc<Mutex<HashMap<Partition, Items>>>,
}

impl TransientMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Partition, Items>> {
        // A panic while holding the lock leaves whole items: the map is still consistent.
        self.partitions.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn live_under(&self, at: &Partition, prefix: Option<&Namespace>) -> Vec<Stored> {
        let now = SystemTime::now();
        let partitions = self.lock();
        let Some(items) = partitions.get(at) else {
            return Vec::new();
        };
        items
            .values()
            .filter(|s| s.live(now) && prefix.map_or(true, |p| s.item.namespace.starts_with(p)))
            .cloned()
            .collect()
    }
}

#[async_trait]
impl MemoryStore for TransientMemoryStore {
    async fn get(
        &self,
        at: &Partition,
        namespace: &Namespace,
        key: &ItemKey,
    ) -> Result<Option<MemoryItem>, MemoryError> {
        let now = SystemTime::now();
        let partitions = self.lock();
        Ok(partitions
            .get(at)
            .and_then(|items| items.get(&(namespace.clone(), key.clone())))
            .filter(|s| s.live(now))
            .map(|s| s.item.clone()))
    }

    async fn put(
        &self,
        at: &Partition,
        namespace: &Namespace,
        key: &ItemKey,
        item: PutItem,
    ) -> Result<u64, MemoryError> {
        item.checked_json()?;
        let now_ms = millis(SystemTime::now());
        let now = from_millis(now_ms);
        let mut partitions = self.lock();
        let items = partitions.entry(at.clone()).or_default();
        let slot = (namespace.clone(), key.clone());
        let old = items.get(&slot);
        let live = old.filter(|s| s.live(now));
        let allowed = match item.expect {
            Expect::Any => true,
            Expect::Absent => live.is_none(),
            Expect::Version(v) => live.is_some_and(|s| s.item.version == v),
        };
        if !allowed {
            return Err(MemoryError::VersionConflict {
                namespace: namespace.to_string(),
                key: key.to_string(),
                expected: item.expect,
                found: live.map(|s| s.item.version),
            });
        }
        let version = old.map_or(1, |s| s.item.version + 1);
        let created_at = live.map_or(now, |s| s.item.created_at);
        let stored = Stored {
            item: MemoryItem {
                namespace: namespace.clone(),
                key: key.clone(),
                expires_at: expiry_ms(now_ms, &item).map(from_millis),
                value: item.value,
                text: item.text,
                created_at,
                updated_at: now,
                version,
            },
            embedding: item.embedding,
        };
        items.insert(slot, stored);
        Ok(version)
    }

    async fn delete(
        &self,
        at: &Partition,
        namespace: &Namespace,
        key: &ItemKey,
        expect: Option<u64>,
    ) -> Result<bool, MemoryError> {
        let now = SystemTime::now();
        let mut partitions = self.lock();
        let Some(items) = partitions.get_mut(at) else {
            return match expect {
                Some(v) => Err(conflict(namespace, key, v, None)),
                None => Ok(false),
            };
        };
        let slot = (namespace.clone(), key.clone());
        let found = items
            .get(&slot)
            .filter(|s| s.live(now))
            .map(|s| s.item.version);
        match (expect, found) {
            (Some(v), found) if found != Some(v) => Err(conflict(namespace, key, v, found)),
            (_, None) => Ok(false),
            (_, Some(_)) => Ok(items.remove(&slot).is_some()),
        }
    }

    async fn scan(
        &self,
        at: &Partition,
        prefix: Option<&Namespace>,
    ) -> Result<Vec<MemoryItem>, MemoryError> {
        Ok(self
            .live_under(at, prefix)
            .into_iter()
            .map(|s| s.item)
            .collect())
    }

    async fn search_text(
        &self,
        at: &Partition,
        prefix: Option<&Namespace>,
        terms: &[String],
        limit: Option<usize>,
    ) -> Result<Vec<Hit>, MemoryError> {
        let found: Vec<MemoryItem> = self
            .live_under(at, prefix)
            .into_iter()
            .filter(|s| s.item.text.is_some())
            .map(|s| s.item)
            .collect();
        let docs: Vec<Vec<String>> = found
            .iter()
            .map(|item| words(item.text.as_deref().unwrap_or("")).collect())
            .collect();
        let scores = bm25(&docs, terms);
        let mut hits: Vec<Hit> = found
            .into_iter()
            .zip(scores)
            .filter(|(_, score)| *score > 0.0)
            .map(|(item, score)| Hit { item, score })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        hits.truncate(limit.unwrap_or(usize::MAX));
        Ok(hits)
    }

    async fn scan_vectors(
        &self,
        at: &Partition,
        prefix: Option<&Namespace>,
    ) -> Result<Vec<(Namespace, ItemKey, Vec<f32>)>, MemoryError> {
        let now = SystemTime::now();
        let partitions = self.lock();
        let Some(items) = partitions.get(at) else {
            return Ok(Vec::new());
        };
        Ok(items
            .values()
            .filter(|s| s.live(now) && prefix.map_or(true, |p| s.item.namespace.starts_with(p)))
            .filter_map(|s| {
                let v = s.embedding.clone()?;
                Some((s.item.namespace.clone(), s.item.key.clone(), v))
            })
            .collect())
    }

    async fn purge_expired(&self) -> Result<usize, MemoryError> {
        let now = SystemTime::now();
        let mut partitions = self.lock();
        let mut purged = 0;
        for items in partitions.values_mut() {
            let before = items.len();
            items.retain(|_, s| s.live(now));
            purged += before - items.len();
        }
        partitions.retain(|_, items| !items.is_empty());
        Ok(purged)
    }
}

/// The conflict of a delete expecting version `expected`.
pub(crate) fn conflict(
    namespace: &Namespace,
    key: &ItemKey,
    expected: u64,
    found: Option<u64>,
) -> MemoryError {
    MemoryError::VersionConflict {
        namespace: namespace.to_string(),
        key: key.to_string(),
        expected: Expect::Version(expected),
        found,
    }
}
