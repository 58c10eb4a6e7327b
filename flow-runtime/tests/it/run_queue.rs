//! The run queue contract ([`RunQueue`]) on every queue: in memory, file, SQLite (feature
//! `sqlite`) and PostgreSQL (feature `postgres`, against the server at `AGENTFLOW_PG_URL`),
//! with the checks of the public conformance suite.

use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::store::conformance::{
    capped_race, counts, events_cancel_flows, fair, one_claim_each, queue_lifecycle as lifecycle,
    queue_takeover as takeover,
};
use agentweave_runtime::store::{FileRunQueue, InMemoryRunQueue, QueueError, RunQueue};

const LEASE: Duration = Duration::from_secs(60);

#[tokio::test]
async fn in_memory_queue_keeps_the_contract() {
    let q = InMemoryRunQueue::new();
    lifecycle(&q, "").await;
    takeover(&q, "").await;
    events_cancel_flows(&q, &q.clone(), "").await;
    counts(&q, "").await;
    fair(&InMemoryRunQueue::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn in_memory_queue_gives_one_claim_each() {
    let q = InMemoryRunQueue::new();
    one_claim_each(vec![Arc::new(q.clone()), Arc::new(q)], "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn in_memory_queue_keeps_a_cap_exactly() {
    let q = InMemoryRunQueue::new();
    capped_race(vec![Arc::new(q.clone()), Arc::new(q)], "").await;
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    crate::support::dirs::temp_dir("queue", name)
}

#[tokio::test]
async fn file_queue_keeps_the_contract() {
    let dir = temp_dir("file");
    let q = FileRunQueue::new(&dir).unwrap();
    lifecycle(&q, "").await;
    takeover(&q, "").await;
    events_cancel_flows(&q, &FileRunQueue::new(&dir).unwrap(), "").await;
    counts(&q, "").await;
    let fair_dir = temp_dir("file-fair");
    fair(&FileRunQueue::new(&fair_dir).unwrap()).await;
    std::fs::remove_dir_all(&fair_dir).unwrap();
    // Another handle (another process would do the same) sees the same rows.
    let other = FileRunQueue::new(&dir).unwrap();
    assert_eq!(other.thread_runs("thread-a").await.unwrap().len(), 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn file_queue_gives_one_claim_each() {
    let dir = temp_dir("file-race");
    let queues: Vec<Arc<dyn RunQueue>> = (0..3)
        .map(|_| Arc::new(FileRunQueue::new(&dir).unwrap()) as Arc<dyn RunQueue>)
        .collect();
    one_claim_each(queues, "").await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn file_queue_keeps_a_cap_exactly() {
    let dir = temp_dir("file-cap");
    let queues: Vec<Arc<dyn RunQueue>> = (0..4)
        .map(|_| Arc::new(FileRunQueue::new(&dir).unwrap()) as Arc<dyn RunQueue>)
        .collect();
    capped_race(queues, "").await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn file_queue_reports_a_corrupt_file() {
    let dir = temp_dir("file-corrupt");
    let q = FileRunQueue::new(&dir).unwrap();
    std::fs::write(dir.join("queue.json"), b"{ not json").unwrap();
    assert!(matches!(
        q.claim("w", LEASE).await,
        Err(QueueError::Corrupt { .. })
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use super::*;
    use agentweave_runtime::store::{SqliteRunQueue, SqliteStore};

    #[tokio::test]
    async fn sqlite_queue_keeps_the_contract() {
        let dir = temp_dir("sqlite");
        // Beside a store, in its file.
        let store = SqliteStore::open(dir.join("store.db")).await.unwrap();
        let q = SqliteRunQueue::open(store.path()).await.unwrap();
        lifecycle(&q, "").await;
        takeover(&q, "").await;
        let reader = SqliteRunQueue::open(store.path()).await.unwrap();
        events_cancel_flows(&q, &reader, "").await;
        counts(&q, "").await;
        std::fs::remove_dir_all(&dir).unwrap();
        let dir = temp_dir("sqlite-fair");
        let fair_store = SqliteStore::open(dir.join("store.db")).await.unwrap();
        fair(&SqliteRunQueue::open(fair_store.path()).await.unwrap()).await;
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn sqlite_queue_gives_one_claim_each() {
        let dir = temp_dir("sqlite-race");
        let path = dir.join("store.db");
        let mut queues: Vec<Arc<dyn RunQueue>> = Vec::new();
        for _ in 0..3 {
            queues.push(Arc::new(SqliteRunQueue::open(&path).await.unwrap()));
        }
        one_claim_each(queues, "").await;
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn sqlite_queue_keeps_a_cap_exactly() {
        let dir = temp_dir("sqlite-cap");
        let path = dir.join("store.db");
        let mut queues: Vec<Arc<dyn RunQueue>> = Vec::new();
        for _ in 0..4 {
            queues.push(Arc::new(SqliteRunQueue::open(&path).await.unwrap()));
        }
        capped_race(queues, "").await;
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use agentweave_runtime::store::PostgresRunQueue;
    use agentweave_runtime::testing::fresh_postgres_database;

    #[tokio::test]
    async fn postgres_queue_keeps_the_contract() {
        let Some(url) = fresh_postgres_database("queue_contract").await else {
            return;
        };
        let q = PostgresRunQueue::connect(&url).await.unwrap();
        lifecycle(&q, "").await;
        takeover(&q, "").await;
        let reader = PostgresRunQueue::connect(&url).await.unwrap();
        events_cancel_flows(&q, &reader, "").await;
        counts(&q, "").await;
        let Some(fair_url) = fresh_postgres_database("queue_fair").await else {
            return;
        };
        fair(&PostgresRunQueue::connect(&fair_url).await.unwrap()).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres_queue_gives_one_claim_each() {
        let Some(url) = fresh_postgres_database("queue_race").await else {
            return;
        };
        let mut queues: Vec<Arc<dyn RunQueue>> = Vec::new();
        for _ in 0..3 {
            queues.push(Arc::new(PostgresRunQueue::connect(&url).await.unwrap()));
        }
        one_claim_each(queues, "").await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres_queue_keeps_a_cap_exactly() {
        let Some(url) = fresh_postgres_database("queue_cap").await else {
            return;
        };
        let mut queues: Vec<Arc<dyn RunQueue>> = Vec::new();
        for _ in 0..4 {
            queues.push(Arc::new(PostgresRunQueue::connect(&url).await.unwrap()));
        }
        capped_race(queues, "").await;
    }
}
