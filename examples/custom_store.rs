//! A store of your own: a `BTreeMap` behind a mutex, with a simulated network latency, as the
//! backend of agentflow's checkpoints, threads and journals, checked by the conformance suite.
//!
//! ```text
//! cargo run --example custom_store
//! ```
//!
//! A backend implements three primitives ([`KeyValueBackend`]): read a key, write it if its
//! revision is the one the writer read (a compare-and-swap), and scan a table. The front,
//! [`KeyValueStore`], keeps every rule of the contracts over them: ids, sizes, claims and
//! their leases, the journal's compare-and-swap, retention. A real backend (a key-value
//! service, a table with a version column) replaces the map and the sleep with its calls.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use agentweave::store::backend::{BackendError, Entry, KeyValueBackend, KeyValueStore, Table};
use agentweave::store::{conformance, CheckpointStore, Completion, SaveMode};

/// A map of keys to entries behind a mutex, each call delayed by `latency` as a network
/// round trip would be.
pub struct MapBackend {
    latency: Duration,
    /// The entries, and the last revision given (never given twice, even after a removal).
    map: Mutex<(Entries, u64)>,
}

/// Entries by table and key.
type Entries = BTreeMap<(Table, String), Entry>;

impl MapBackend {
    /// An empty map whose every call takes `latency`.
    pub fn new(latency: Duration) -> Self {
        MapBackend {
            latency,
            map: Mutex::new((BTreeMap::new(), 0)),
        }
    }
}

#[agentweave::async_trait]
impl KeyValueBackend for MapBackend {
    async fn read(&self, table: Table, key: &str) -> Result<Option<Entry>, BackendError> {
        tokio::time::sleep(self.latency).await;
        let map = self.map.lock().unwrap();
        Ok(map.0.get(&(table, key.to_owned())).cloned())
    }

    async fn write(
        &self,
        table: Table,
        key: &str,
        expected: Option<u64>,
        value: Option<Vec<u8>>,
    ) -> Result<bool, BackendError> {
        tokio::time::sleep(self.latency).await;
        let (map, last) = &mut *self.map.lock().unwrap();
        let slot = (table, key.to_owned());
        // The compare-and-swap: the whole rule set rests on it.
        if map.get(&slot).map(|e| e.revision) != expected {
            return Ok(false);
        }
        match value {
            Some(value) => {
                *last += 1;
                let revision = *last;
                map.insert(slot, Entry { revision, value });
            }
            None => {
                map.remove(&slot);
            }
        }
        Ok(true)
    }

    async fn scan(&self, table: Table) -> Result<Vec<(String, Entry)>, BackendError> {
        tokio::time::sleep(self.latency).await;
        let map = self.map.lock().unwrap();
        Ok(map
            .0
            .iter()
            .filter(|((t, _), _)| *t == table)
            .map(|((_, key), entry)| (key.clone(), entry.clone()))
            .collect())
    }
}

/// Runs the conformance suite of checkpoints (and claims), threads and journals on fresh
/// stores over [`MapBackend`]s of `latency`. Panics, naming the rule, if one is broken.
pub async fn check(latency: Duration) {
    let fresh = || async move { KeyValueStore::new(MapBackend::new(latency)) };
    conformance::checkpoints(fresh).await;
    conformance::threads(fresh).await;
    conformance::journals(fresh).await;
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let latency = Duration::from_micros(200);
    let started = Instant::now();
    check(latency).await;
    println!(
        "MapBackend ({latency:?} a call) passes the checkpoint, thread and journal suites ({:.1?})",
        started.elapsed()
    );

    // The store in use: a run waits, one worker claims it, the other is refused.
    let store = KeyValueStore::new(MapBackend::new(latency));
    store
        .save("order-7", b"waiting".to_vec(), SaveMode::Create)
        .await?;
    let claim = store.claim("order-7", Duration::from_secs(60)).await?;
    let refused = store.claim("order-7", Duration::from_secs(60)).await;
    println!("second claim: {}", refused.unwrap_err());
    store
        .complete(&claim, Completion::Finished(b"done".to_vec()))
        .await?;
    println!("history: {} records", store.history("order-7").await?.len());
    Ok(())
}
