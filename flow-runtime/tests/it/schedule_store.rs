//! The schedules kept in a run queue's store ([`ScheduleStore`], through
//! [`RunQueue::schedules`]) on every backend that keeps them (in memory, SQLite, PostgreSQL):
//! create, read, list and count one tenant's, change, delete, the due ones, and the
//! compare-and-swap that moves a schedule on, raced from three queues on one store (exactly one
//! wins each due time). The file queue keeps none.

use std::sync::Arc;

use agentweave_runtime::store::conformance::{one_advance_each, schedule_contract};
use agentweave_runtime::store::{FileRunQueue, InMemoryRunQueue, RunQueue};

#[tokio::test]
async fn in_memory_queue_keeps_schedules() {
    schedule_contract(&InMemoryRunQueue::new()).await;
    let q = InMemoryRunQueue::new();
    one_advance_each(vec![Arc::new(q.clone()), Arc::new(q.clone()), Arc::new(q)]).await;
}

#[tokio::test]
async fn the_file_queue_keeps_none() {
    let dir = crate::support::dirs::temp_dir("schedules", "file");
    let q = FileRunQueue::new(&dir).unwrap();
    assert!(q.schedules().is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_queue_keeps_schedules() {
    use agentweave_runtime::store::SqliteRunQueue;
    let dir = crate::support::dirs::temp_dir("schedules", "sqlite");
    let path = dir.join("store.db");
    schedule_contract(&SqliteRunQueue::open(&path).await.unwrap()).await;
    let race = dir.join("race.db");
    let mut queues: Vec<Arc<dyn RunQueue>> = Vec::new();
    for _ in 0..3 {
        queues.push(Arc::new(SqliteRunQueue::open(&race).await.unwrap()));
    }
    one_advance_each(queues).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_queue_keeps_schedules() {
    use agentweave_runtime::store::PostgresRunQueue;
    let Some(url) = agentweave_runtime::testing::fresh_postgres_database("schedules").await else {
        return;
    };
    schedule_contract(&PostgresRunQueue::connect(&url).await.unwrap()).await;
    let Some(race) = agentweave_runtime::testing::fresh_postgres_database("schedules_race").await
    else {
        return;
    };
    let mut queues: Vec<Arc<dyn RunQueue>> = Vec::new();
    for _ in 0..3 {
        queues.push(Arc::new(PostgresRunQueue::connect(&race).await.unwrap()));
    }
    one_advance_each(queues).await;
}
