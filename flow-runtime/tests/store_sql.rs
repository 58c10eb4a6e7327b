// Its own test binary, not a module of tests/it: it sets a process-wide environment variable
// (`std::env::set_var`), which other tests of a shared binary could read while it changes.
//! The store contract on the SQL stores: `SqliteStore` (feature `sqlite`) and `PostgresStore`
//! (feature `postgres`, against the server at `AGENTFLOW_PG_URL`), and their schemas.
#![cfg(any(feature = "sqlite", feature = "postgres"))]

mod support;

use std::sync::Arc;

use support::{contract, journal_contract, thread_contract};

#[cfg(feature = "sqlite")]
mod sqlite {
    use super::*;
    use agentweave_runtime::store::{CheckpointStore, SqliteStore, StoreError};

    fn path(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("agentflow-sql-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir.join("nested").join("store.db")
    }

    #[tokio::test]
    async fn sqlite_store_keeps_the_contract() {
        let path = path("contract");
        let store = SqliteStore::open(&path).await.unwrap();
        contract::refuses_escaping_ids(&store).await;
        contract::lifecycle(&store, "").await;
        contract::pending_and_purge(&store, "").await;
        let limited = SqliteStore::open(&path)
            .await
            .unwrap()
            .max_checkpoint_bytes(16);
        contract::size_limit(&store, &limited, "").await;
        std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn sqlite_store_gives_one_claim_among_tasks() {
        let path = path("race");
        let store = SqliteStore::open(&path).await.unwrap();
        contract::one_claim_among_tasks(Arc::new(store), "").await;
        std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[tokio::test]
    async fn sqlite_store_keeps_the_thread_contract() {
        let path = path("thread-contract");
        let store = SqliteStore::open(&path).await.unwrap();
        let other = SqliteStore::open(&path).await.unwrap();
        thread_contract::refuses_bad_ids(&store).await;
        thread_contract::appends_reads_list_delete(&store, &other, "").await;
        let limited = SqliteStore::open(&path)
            .await
            .unwrap()
            .max_checkpoint_bytes(64);
        thread_contract::size_limit(&store, &limited, "").await;
        thread_contract::leases(&store, "").await;
        std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn sqlite_store_keeps_the_journal_contract() {
        let path = path("journal-contract");
        let store = SqliteStore::open(&path).await.unwrap();
        let other = SqliteStore::open(&path).await.unwrap();
        journal_contract::refuses_bad_ids_and_kinds(&store).await;
        journal_contract::appends_reads_truncates_deletes(&store, &other, "").await;
        journal_contract::deferred_steps_are_encoded_when_read(&store).await;
        journal_contract::deferred_batches_read_back_and_cut(&store).await;
        journal_contract::unsynced_appends_keep_the_condition(&store).await;
        let handles: Vec<Arc<dyn agentweave_runtime::store::JournalStore>> =
            vec![Arc::new(store), Arc::new(other)];
        journal_contract::one_append_among_tasks(handles.clone(), "").await;
        journal_contract::many_runs_append_at_once(handles, "").await;
        std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }

    /// Appends that wait together are committed as one group: each keeps its own condition,
    /// checked in order as if it ran alone (two appends of one run in the same group, a
    /// conflicting one among others), and each is readable from another handle once it
    /// returned.
    #[tokio::test]
    async fn a_group_commit_checks_each_append_in_order() {
        use agentweave_runtime::store::{JournalError, JournalStore};
        let path = path("group");
        let store = SqliteStore::open(&path).await.unwrap();
        let other = SqliteStore::open(&path).await.unwrap();
        let step = |body: &str| journal_contract::step("event", body);
        store
            .append_steps("held", 0, vec![step("h")])
            .await
            .unwrap();
        // On this one-thread runtime the appends are all queued before the writer runs.
        let results = futures::future::join_all([
            store.append_steps("fresh-a", 0, vec![step("a0"), step("a1")]),
            store.append_steps("twice", 0, vec![step("t0")]),
            store.append_steps("held", 0, vec![step("stale")]),
            store.append_steps("twice", 1, vec![step("t1")]),
            store.append_steps("fresh-b", 0, vec![step("b0")]),
            store.append_steps("held", 1, vec![step("h1")]),
        ])
        .await;
        assert_eq!(results[0].as_ref().unwrap(), &2);
        assert_eq!(results[1].as_ref().unwrap(), &1);
        assert!(
            matches!(
                results[2],
                Err(JournalError::Conflict {
                    expected: 0,
                    found: 1,
                    ..
                })
            ),
            "{:?}",
            results[2]
        );
        assert_eq!(results[3].as_ref().unwrap(), &2);
        assert_eq!(results[4].as_ref().unwrap(), &1);
        assert_eq!(results[5].as_ref().unwrap(), &2);
        for (run, bodies) in [
            ("fresh-a", vec!["a0", "a1"]),
            ("twice", vec!["t0", "t1"]),
            ("held", vec!["h", "h1"]),
            ("fresh-b", vec!["b0"]),
        ] {
            let read = other.read_steps(run, 0).await.unwrap();
            let seen: Vec<(u64, &[u8])> = read.iter().map(|s| (s.seq, &s.bytes[..])).collect();
            let expected: Vec<(u64, &[u8])> = bodies
                .iter()
                .enumerate()
                .map(|(k, b)| (k as u64, b.as_bytes()))
                .collect();
            assert_eq!(seen, expected, "{run}");
        }
        std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }

    /// Eight `Sync` runs at once on one file: every event reaches its caller only once its
    /// step is committed, as another handle on the file reads it.
    #[tokio::test]
    async fn sync_runs_sharing_a_file_see_each_step_committed_before_its_event() {
        use agentweave_runtime::store::JournalStore;
        use agentweave_runtime::{
            Durability, FlowAgent, FnAgent, Message, RunRequest, Runner, Session,
        };
        use futures::StreamExt;
        let path = path("sync-runs");
        let store = SqliteStore::open(&path).await.unwrap();
        let other = SqliteStore::open(&path).await.unwrap();
        let bot = FnAgent::new("bot", |cx, _| async move {
            for k in 0..5 {
                cx.say(format!("step {k}"));
            }
            Ok(())
        });
        let runner = Runner::builder(FlowAgent::new(bot))
            .checkpoint_store(store.clone())
            .journal_store(store.clone())
            .durability(Durability::Sync)
            .build();
        let runs = (0..8).map(|k| {
            let (runner, other) = (&runner, &other);
            async move {
                let id = format!("run-{k}");
                let session = Session::new();
                let mut events = runner.run(
                    RunRequest::new([Message::user("go")])
                        .session(Arc::clone(&session))
                        .checkpoint(&id),
                );
                let mut seen = 0;
                while let Some(event) = events.next().await {
                    assert!(event.error.is_none(), "{:?}", event.error);
                    seen += 1;
                    assert_eq!(
                        other.journal_len(&id).await.unwrap(),
                        session.len() as u64,
                        "{id}, event {seen}"
                    );
                }
                assert_eq!(seen, 5);
                assert_eq!(other.read_steps(&id, 0).await.unwrap().len(), 5);
            }
        });
        futures::future::join_all(runs).await;
        std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn sqlite_store_gives_one_append_and_one_lease_among_tasks() {
        let path = path("thread-race");
        let mut handles: Vec<Arc<dyn agentweave_runtime::ThreadStore>> = Vec::new();
        for _ in 0..3 {
            handles.push(Arc::new(SqliteStore::open(&path).await.unwrap()));
        }
        thread_contract::one_winner_among_tasks(handles, "").await;
        std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[tokio::test]
    async fn sqlite_schema_is_made_once_and_a_newer_one_is_refused() {
        let path = path("schema");
        let store = SqliteStore::open(&path).await.unwrap();
        assert_eq!(store.schema_version().await.unwrap(), 3);
        // Opening again migrates nothing and keeps the data.
        store
            .save("kept", b"x".to_vec(), agentweave_runtime::SaveMode::Create)
            .await
            .unwrap();
        let again = SqliteStore::open(&path).await.unwrap();
        assert_eq!(again.get("kept").await.unwrap().unwrap(), b"x");
        // A database from a newer build is refused, not misread.
        agentweave_runtime::testing::set_sqlite_schema_version(&path, 99).await;
        match SqliteStore::open(&path).await {
            Err(StoreError::Schema {
                found: 99,
                supported: 3,
            }) => {}
            other => panic!("expected a schema error, got {other:?}"),
        }
        std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[tokio::test]
    async fn open_default_uses_agentflow_db() {
        let path = path("default");
        std::env::set_var("AGENTFLOW_DB", &path);
        let store = SqliteStore::open_default().await.unwrap();
        assert_eq!(store.path(), path);
        assert!(path.exists());
        std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use agentweave_runtime::store::PostgresStore;
    use agentweave_runtime::testing::fresh_postgres_database;

    #[tokio::test]
    async fn postgres_store_keeps_the_contract() {
        let Some(url) = fresh_postgres_database("contract").await else {
            return;
        };
        let store = PostgresStore::connect(&url).await.unwrap();
        assert_eq!(store.schema_version().await.unwrap(), 3);
        contract::refuses_escaping_ids(&store).await;
        contract::lifecycle(&store, "").await;
        contract::pending_and_purge(&store, "").await;
        let limited = PostgresStore::connect(&url)
            .await
            .unwrap()
            .max_checkpoint_bytes(16);
        contract::size_limit(&store, &limited, "").await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres_store_gives_one_claim_among_tasks() {
        let Some(url) = fresh_postgres_database("tasks").await else {
            return;
        };
        let store = PostgresStore::connect(&url).await.unwrap();
        contract::one_claim_among_tasks(Arc::new(store), "").await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres_store_keeps_the_journal_contract() {
        let Some(url) = fresh_postgres_database("journal").await else {
            return;
        };
        let store = PostgresStore::connect(&url).await.unwrap();
        let other = PostgresStore::connect(&url).await.unwrap();
        journal_contract::refuses_bad_ids_and_kinds(&store).await;
        journal_contract::appends_reads_truncates_deletes(&store, &other, "").await;
        journal_contract::deferred_steps_are_encoded_when_read(&store).await;
        journal_contract::deferred_batches_read_back_and_cut(&store).await;
        journal_contract::unsynced_appends_keep_the_condition(&store).await;
        let handles: Vec<Arc<dyn agentweave_runtime::store::JournalStore>> =
            vec![Arc::new(store), Arc::new(other)];
        journal_contract::one_append_among_tasks(handles.clone(), "").await;
        journal_contract::many_runs_append_at_once(handles, "").await;
    }

    #[tokio::test]
    async fn postgres_store_keeps_the_thread_contract() {
        let Some(url) = fresh_postgres_database("threads").await else {
            return;
        };
        let store = PostgresStore::connect(&url).await.unwrap();
        let other = PostgresStore::connect(&url).await.unwrap();
        thread_contract::refuses_bad_ids(&store).await;
        thread_contract::appends_reads_list_delete(&store, &other, "").await;
        let limited = PostgresStore::connect(&url)
            .await
            .unwrap()
            .max_checkpoint_bytes(64);
        thread_contract::size_limit(&store, &limited, "").await;
        thread_contract::leases(&store, "").await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres_store_gives_one_append_and_one_lease_among_tasks() {
        let Some(url) = fresh_postgres_database("thread_race").await else {
            return;
        };
        let mut handles: Vec<Arc<dyn agentweave_runtime::ThreadStore>> = Vec::new();
        for _ in 0..3 {
            handles.push(Arc::new(PostgresStore::connect(&url).await.unwrap()));
        }
        thread_contract::one_winner_among_tasks(handles, "").await;
    }

    #[tokio::test]
    async fn postgres_schema_is_migrated_once_by_many_workers_at_once() {
        let Some(url) = fresh_postgres_database("schema").await else {
            return;
        };
        let opens: Vec<_> = (0..6)
            .map(|_| {
                let url = url.clone();
                tokio::spawn(async move { PostgresStore::connect(&url).await })
            })
            .collect();
        for open in opens {
            assert_eq!(
                open.await.unwrap().unwrap().schema_version().await.unwrap(),
                3
            );
        }
    }
}

/// The public conformance suite (`store::conformance`) on the SQL stores, plain and sealed,
/// with their run queues and memory stores.
mod conformance_suite {
    use agentweave_runtime::store::conformance;
    #[cfg(feature = "sqlite")]
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[cfg(feature = "sqlite")]
    fn fresh_path(area: &'static str) -> impl FnMut() -> std::path::PathBuf {
        let n = AtomicUsize::new(0);
        move || {
            let name = format!("{area}-{}", n.fetch_add(1, Ordering::SeqCst));
            crate::support::dirs::fresh_dir("sql-conformance", &name).join("store.db")
        }
    }

    fn keys() -> agentweave_runtime::store::SealingKeys {
        agentweave_runtime::store::SealingKeys::new("k1", [7; 32]).unwrap()
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn sqlite_store_passes_the_suite() {
        use agentweave_runtime::store::SqliteStore;
        let mut path = fresh_path("store");
        let mut open = || {
            let path = path();
            async move { SqliteStore::open(path).await.unwrap() }
        };
        conformance::checkpoints(&mut open).await;
        conformance::threads(&mut open).await;
        conformance::journals(&mut open).await;
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn sealed_sqlite_store_passes_the_suite() {
        use agentweave_runtime::store::{SealedStore, SqliteStore};
        let mut path = fresh_path("sealed");
        let mut open = || {
            let path = path();
            async move { SealedStore::new(SqliteStore::open(path).await.unwrap(), keys()) }
        };
        conformance::checkpoints(&mut open).await;
        conformance::threads(&mut open).await;
        conformance::journals(&mut open).await;
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn sqlite_queue_and_memory_store_pass_the_suite() {
        use agentweave_runtime::store::memory_items::SqliteMemoryStore;
        use agentweave_runtime::store::SqliteRunQueue;
        let mut path = fresh_path("queue");
        conformance::run_queue(|| {
            let path = path();
            async move { SqliteRunQueue::open(path).await.unwrap() }
        })
        .await;
        for suite in 0..2 {
            let mut path = fresh_path(if suite == 0 { "schedules" } else { "spending" });
            let mut open = || {
                let path = path();
                async move { SqliteRunQueue::open(path).await.unwrap() }
            };
            if suite == 0 {
                conformance::schedules(&mut open).await;
            } else {
                conformance::spending(&mut open).await;
            }
        }
        let mut path = fresh_path("memory");
        conformance::memory(|| {
            let path = path();
            async move { SqliteMemoryStore::open(path).await.unwrap() }
        })
        .await;
    }

    #[cfg(feature = "postgres")]
    async fn database(prefix: &str) -> Option<String> {
        agentweave_runtime::testing::fresh_postgres_database(prefix).await
    }

    #[cfg(feature = "postgres")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres_store_passes_the_suite() {
        use agentweave_runtime::store::{PostgresStore, SealedStore};
        if database("conformance_probe").await.is_none() {
            return;
        }
        let open = || async {
            let url = database("conformance").await.unwrap();
            PostgresStore::connect(&url).await.unwrap()
        };
        conformance::checkpoints(open).await;
        conformance::threads(open).await;
        conformance::journals(open).await;
        let sealed = || async { SealedStore::new(open().await, keys()) };
        conformance::checkpoints(sealed).await;
        conformance::threads(sealed).await;
        conformance::journals(sealed).await;
    }

    #[cfg(feature = "postgres")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres_queue_and_memory_store_pass_the_suite() {
        use agentweave_runtime::store::memory_items::PostgresMemoryStore;
        use agentweave_runtime::store::PostgresRunQueue;
        if database("conformance_probe").await.is_none() {
            return;
        }
        conformance::run_queue(|| async {
            let url = database("conformance_queue").await.unwrap();
            PostgresRunQueue::connect(&url).await.unwrap()
        })
        .await;
        let open = || async {
            let url = database("conformance_sched").await.unwrap();
            PostgresRunQueue::connect(&url).await.unwrap()
        };
        conformance::schedules(open).await;
        conformance::spending(open).await;
        conformance::memory(|| async {
            let url = database("conformance_memory").await.unwrap();
            PostgresMemoryStore::connect(&url).await.unwrap()
        })
        .await;
    }
}
