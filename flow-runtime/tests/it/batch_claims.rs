//! Batch claims (`CheckpointStore::claim_pending`, `Checkpoints::claim` and
//! `ResumeRequest::claimed`) on the four stores: concurrent claimers never receive the same
//! checkpoint, a claimed checkpoint is not claimed again until it is released or its lease
//! runs out, a held claim taken over by another worker resumes nothing, and four workers
//! draining a store resume each checkpoint exactly once. PostgreSQL runs against the server at
//! `AGENTFLOW_PG_URL` (skipped without it unless `AGENTFLOW_REQUIRE_COMPONENTS=1`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentweave_runtime::store::{
    CheckpointMeta, CheckpointStore, Claim, Completion, PendingCheckpoint, SaveMode, StoreError,
};
use agentweave_runtime::RunnerBuilder;
use agentweave_runtime::{
    CheckpointError, FileStore, FlowAgent, FnAgent, InMemoryStore, Message, Runner,
};
use agentweave_runtime::{ResumeRequest, RunRequest};
use futures::StreamExt;

const MINUTE: Duration = Duration::from_secs(60);

fn temp_dir(name: &str) -> std::path::PathBuf {
    crate::support::dirs::temp_dir("batch", name)
}

/// The contract of `claim_pending` on one store (empty when called).
async fn batch_contract(store: &dyn CheckpointStore) {
    assert!(store.claim_pending(4, MINUTE).await.unwrap().is_empty());
    for k in 0..10 {
        let bytes = format!("waiting-{k}").into_bytes();
        store
            .save(&format!("b-{k}"), bytes, SaveMode::Create)
            .await
            .unwrap();
    }
    assert!(store.claim_pending(0, MINUTE).await.unwrap().is_empty());

    // Three batches take all ten, each checkpoint once, each with its own first claim.
    let mut held = Vec::new();
    for expected in [4, 4, 2] {
        let batch = store.claim_pending(4, MINUTE).await.unwrap();
        assert_eq!(batch.len(), expected);
        held.extend(batch);
    }
    let ids: HashSet<&str> = held.iter().map(|c| &c.id[..]).collect();
    assert_eq!(ids.len(), 10, "a checkpoint was claimed twice: {held:?}");
    for claim in &held {
        assert_eq!(claim.attempt, 1);
        assert_eq!(claim.version, 1);
        let k = claim.id.strip_prefix("b-").unwrap();
        assert_eq!(claim.bytes, format!("waiting-{k}").into_bytes());
    }
    // Held: nothing is claimed again, by a batch or by one claim.
    assert!(store.claim_pending(4, MINUTE).await.unwrap().is_empty());
    assert!(matches!(
        store.claim(&held[0].id, MINUTE).await,
        Err(StoreError::Claimed { .. })
    ));

    // A released claim is claimable again (the next attempt); the old claim is lost.
    let released = held.remove(0);
    store.release(&released).await.unwrap();
    let again = store.claim_pending(4, MINUTE).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].id, released.id);
    assert_eq!(again[0].attempt, 2);
    assert!(matches!(
        store
            .complete(&released, Completion::Finished(b"late".to_vec()))
            .await,
        Err(StoreError::ClaimLost { .. })
    ));
    held.extend(again);

    // Finished runs are never claimed; a run interrupted again is, at its new version.
    let (interrupted, finished) = held.split_at(1);
    store
        .complete(&interrupted[0], Completion::Interrupted(b"next".to_vec()))
        .await
        .unwrap();
    for claim in finished {
        store
            .complete(claim, Completion::Finished(b"done".to_vec()))
            .await
            .unwrap();
    }
    let next = store.claim_pending(4, MINUTE).await.unwrap();
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].id, interrupted[0].id);
    assert_eq!(next[0].version, 2);
    assert_eq!(next[0].bytes, b"next");

    // A claim whose lease ran out is taken over by the next batch; the old holder can neither
    // renew nor complete it.
    store.release(&next[0]).await.unwrap();
    let short = store.claim_pending(4, Duration::ZERO).await.unwrap();
    assert_eq!(short.len(), 1);
    let taken = store.claim_pending(4, MINUTE).await.unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].id, short[0].id);
    assert_eq!(taken[0].attempt, short[0].attempt + 1);
    assert!(matches!(
        store.renew(&short[0], MINUTE).await,
        Err(StoreError::ClaimLost { .. })
    ));
    assert!(matches!(
        store
            .complete(&short[0], Completion::Finished(b"stale".to_vec()))
            .await,
        Err(StoreError::ClaimLost { .. })
    ));
    store
        .complete(&taken[0], Completion::Finished(b"done".to_vec()))
        .await
        .unwrap();
    assert!(store.claim_pending(4, MINUTE).await.unwrap().is_empty());
    assert!(store.pending(100).await.unwrap().is_empty());
}

/// Four tasks claiming batches from one store at once: every checkpoint goes to exactly one.
async fn disjoint_batches(store: Arc<dyn CheckpointStore>, n: usize) {
    for k in 0..n {
        store
            .save(&format!("d-{k}"), b"x".to_vec(), SaveMode::Create)
            .await
            .unwrap();
    }
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let mut mine = Vec::new();
                loop {
                    let batch = store.claim_pending(7, MINUTE).await.unwrap();
                    if batch.is_empty() {
                        return mine;
                    }
                    mine.extend(batch.into_iter().map(|c| c.id));
                }
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let distinct: HashSet<&String> = all.iter().collect();
    assert_eq!(
        distinct.len(),
        all.len(),
        "a checkpoint went to two claimers"
    );
    assert_eq!(all.len(), n, "a checkpoint was left unclaimed");
}

/// A desk whose resume counts its effect per order (the order is the run's input).
fn desk(effects: Arc<Mutex<HashMap<String, usize>>>) -> FlowAgent {
    FlowAgent::new(
        FnAgent::new("refund", |cx, _| async move {
            cx.interrupt(serde_json::json!("approve?"));
            Ok(())
        })
        .on_resume(move |cx, input, _| {
            let effects = Arc::clone(&effects);
            async move {
                let order = input.messages[0].content.to_string();
                *effects.lock().unwrap().entry(order).or_default() += 1;
                cx.say("refunded");
                Ok(())
            }
        }),
    )
}

async fn interrupt_orders(runner: &Runner, n: usize) {
    for k in 0..n {
        let events: Vec<_> = runner
            .run(
                RunRequest::new([Message::user(format!("order-{k}"))])
                    .checkpoint(format!("order-{k}")),
            )
            .collect()
            .await;
        assert!(events.iter().any(|e| e.interrupt().is_some()));
    }
}

/// Four workers (tasks, each with its own runner on the store) drain `n` checkpoints in
/// batches: each order is refunded exactly once and nothing is left pending.
async fn four_workers_resume_each_once(store: Arc<dyn CheckpointStore>, n: usize) {
    let effects = Arc::new(Mutex::new(HashMap::new()));
    let runner = Runner::builder(desk(Arc::clone(&effects)))
        .shared_checkpoint_store(store)
        .build();
    interrupt_orders(&runner, n).await;
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let runner = runner.clone();
            tokio::spawn(async move {
                let mut resumed = 0;
                loop {
                    let batch = runner.checkpoints().claim(5).await.unwrap();
                    if batch.is_empty() {
                        return resumed;
                    }
                    for held in batch {
                        let events: Vec<_> = runner
                            .resume(ResumeRequest::claimed(held, []))
                            .await
                            .unwrap()
                            .collect()
                            .await;
                        assert!(events.iter().all(|e| e.error.is_none()), "{events:?}");
                        resumed += 1;
                    }
                }
            })
        })
        .collect();
    let mut resumed = 0;
    for w in workers {
        resumed += w.await.unwrap();
    }
    assert_eq!(resumed, n);
    let effects = effects.lock().unwrap().clone();
    assert_eq!(effects.len(), n, "an order was never refunded: {effects:?}");
    assert!(
        effects.values().all(|&count| count == 1),
        "an order was refunded twice: {effects:?}"
    );
    assert!(runner.checkpoints().pending(10).await.unwrap().is_empty());
}

/// A held claim whose lease ran out and was taken by another worker resumes nothing and says
/// so; a released or dropped held claim is claimable again.
async fn held_claims(store: Arc<dyn CheckpointStore>) {
    let effects = Arc::new(Mutex::new(HashMap::new()));
    let runner = Runner::builder(desk(Arc::clone(&effects)))
        .shared_checkpoint_store(store)
        .build();
    interrupt_orders(&runner, 1).await;

    // A worker whose lease is over at once, and one that takes its claim over.
    let slow = RunnerBuilder::from(runner.clone())
        .lease(Duration::ZERO)
        .build();
    let mut stale = slow.checkpoints().claim(4).await.unwrap();
    assert_eq!(stale.len(), 1);
    let stale = stale.remove(0);
    assert_eq!((stale.id(), stale.attempt()), ("order-0", 1));
    let mut fresh = runner.checkpoints().claim(4).await.unwrap();
    assert_eq!(fresh.len(), 1);
    assert_eq!(fresh[0].attempt(), 2);
    match slow.resume(ResumeRequest::claimed(stale, [])).await {
        Err(CheckpointError::Store(StoreError::ClaimLost { id, attempt, .. })) => {
            assert_eq!((&id[..], attempt), ("order-0", 1));
        }
        other => panic!("a stale claim resumed: {:?}", other.map(|_| ())),
    }
    assert!(effects.lock().unwrap().is_empty(), "the stale claim ran");

    // Given back unused, it is claimed again; dropped unused, too.
    fresh.remove(0).release().await;
    let mut again = runner.checkpoints().claim(4).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].attempt(), 3);
    drop(again.remove(0));
    let mut after_drop = Vec::new();
    for _ in 0..1000 {
        after_drop = runner.checkpoints().claim(4).await.unwrap();
        if !after_drop.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        after_drop.len(),
        1,
        "a dropped held claim was not given back"
    );
    assert_eq!(after_drop[0].attempt(), 4);

    // A held claim whose lease ran out but was not taken over is renewed and resumes.
    after_drop.remove(0).release().await;
    let mut late = slow.checkpoints().claim(4).await.unwrap();
    let events: Vec<_> = runner
        .resume(ResumeRequest::claimed(late.remove(0), []))
        .await
        .unwrap()
        .collect()
        .await;
    assert!(events.iter().all(|e| e.error.is_none()), "{events:?}");
    assert_eq!(effects.lock().unwrap()["order-0"], 1);
    assert!(runner.checkpoints().claim(4).await.unwrap().is_empty());
}

#[tokio::test]
async fn memory_store_claims_in_batches() {
    batch_contract(&InMemoryStore::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_store_gives_disjoint_batches_and_resumes_each_once() {
    disjoint_batches(Arc::new(InMemoryStore::new()), 200).await;
    four_workers_resume_each_once(Arc::new(InMemoryStore::new()), 60).await;
    held_claims(Arc::new(InMemoryStore::new())).await;
}

#[tokio::test]
async fn file_store_claims_in_batches() {
    let dir = temp_dir("file");
    batch_contract(&FileStore::new(&dir).unwrap()).await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn file_store_gives_disjoint_batches_and_resumes_each_once() {
    let dir = temp_dir("file-race");
    disjoint_batches(Arc::new(FileStore::new(dir.join("a")).unwrap()), 60).await;
    four_workers_resume_each_once(Arc::new(FileStore::new(dir.join("b")).unwrap()), 24).await;
    held_claims(Arc::new(FileStore::new(dir.join("c")).unwrap())).await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_sealed_store_claims_in_batches() {
    let keys = agentweave_runtime::store::SealingKeys::new("k1", [7u8; 32]).unwrap();
    let store = agentweave_runtime::store::SealedStore::new(InMemoryStore::new(), keys);
    batch_contract(&store).await;
}

/// A store of one's own that does not implement `claim_pending`: the trait's default (list
/// the pending heads, claim each) keeps the contract.
#[derive(Clone, Default)]
struct OwnStore(InMemoryStore);

#[agentweave_runtime::async_trait]
impl CheckpointStore for OwnStore {
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.get(id).await
    }
    async fn save(&self, id: &str, bytes: Vec<u8>, mode: SaveMode) -> Result<u64, StoreError> {
        self.0.save(id, bytes, mode).await
    }
    async fn claim(&self, id: &str, lease: Duration) -> Result<Claim, StoreError> {
        self.0.claim(id, lease).await
    }
    async fn renew(&self, claim: &Claim, lease: Duration) -> Result<(), StoreError> {
        self.0.renew(claim, lease).await
    }
    async fn release(&self, claim: &Claim) -> Result<(), StoreError> {
        self.0.release(claim).await
    }
    async fn complete(&self, claim: &Claim, completion: Completion) -> Result<u64, StoreError> {
        self.0.complete(claim, completion).await
    }
    async fn history(&self, id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        self.0.history(id).await
    }
    async fn pending(&self, limit: usize) -> Result<Vec<PendingCheckpoint>, StoreError> {
        self.0.pending(limit).await
    }
    async fn purge_finished(&self, age: Duration) -> Result<usize, StoreError> {
        self.0.purge_finished(age).await
    }
    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        self.0.delete(id).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_without_batch_claims_falls_back_to_one_claim_each() {
    batch_contract(&OwnStore::default()).await;
    disjoint_batches(Arc::new(OwnStore::default()), 60).await;
    four_workers_resume_each_once(Arc::new(OwnStore::default()), 24).await;
    held_claims(Arc::new(OwnStore::default())).await;
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use super::*;
    use agentweave_runtime::store::SqliteStore;

    async fn open(name: &str) -> (SqliteStore, std::path::PathBuf) {
        let dir = temp_dir(name);
        (SqliteStore::open(dir.join("store.db")).await.unwrap(), dir)
    }

    #[tokio::test]
    async fn sqlite_store_claims_in_batches() {
        let (store, dir) = open("sqlite").await;
        batch_contract(&store).await;
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn sqlite_store_gives_disjoint_batches_and_resumes_each_once() {
        let (a, dir_a) = open("sqlite-a").await;
        disjoint_batches(Arc::new(a), 200).await;
        let (b, dir_b) = open("sqlite-b").await;
        four_workers_resume_each_once(Arc::new(b), 60).await;
        let (c, dir_c) = open("sqlite-c").await;
        held_claims(Arc::new(c)).await;
        for dir in [dir_a, dir_b, dir_c] {
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use agentweave_runtime::store::PostgresStore;
    use agentweave_runtime::testing::fresh_postgres_database;

    async fn connect(prefix: &str) -> Option<PostgresStore> {
        let url = fresh_postgres_database(prefix).await?;
        Some(PostgresStore::connect(&url).await.unwrap())
    }

    #[tokio::test]
    async fn postgres_store_claims_in_batches() {
        let Some(store) = connect("batch").await else {
            return;
        };
        batch_contract(&store).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres_store_gives_disjoint_batches_and_resumes_each_once() {
        let Some(a) = connect("batch_race").await else {
            return;
        };
        disjoint_batches(Arc::new(a), 200).await;
        let b = connect("batch_drain").await.unwrap();
        four_workers_resume_each_once(Arc::new(b), 60).await;
        let c = connect("batch_held").await.unwrap();
        held_claims(Arc::new(c)).await;
    }
}
