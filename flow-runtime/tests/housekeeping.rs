//! Housekeeping of threads: with a retention, a thread's journal stays bounded however long
//! the conversation runs (counted in stored steps); an expired thread (TTL) is gone for reads
//! and removed by purge; `delete_thread` removes every step. On InMemory, File and SQLite.

use std::time::Duration;

use flow_runtime::store::JournalStore;
use flow_runtime::{
    turn_journal_id, turn_mark_id, CheckpointStore, Durability, FileStore, FlowAgent, FnAgent,
    InMemoryStore, Message, Retention, Runner, ThreadStore, TimeTravelError, TurnOutcome,
};

/// Two messages a turn.
fn bot() -> FlowAgent {
    FlowAgent::new(FnAgent::new("bot", |cx, input| async move {
        cx.say(format!("heard {}", input.messages.len()));
        cx.say("anything else?");
        Ok(())
    }))
}

fn runner<S>(store: &S) -> Runner
where
    S: ThreadStore + CheckpointStore + JournalStore + Clone,
{
    Runner::new(bot())
        .stores(store.clone())
        .journal_store(store.clone())
        .durability(Durability::Sync)
}

async fn say(runner: &Runner, thread: &str, text: &str) {
    let turn = runner.turn(thread, Message::user(text)).await.unwrap();
    assert!(matches!(turn.finish().await, TurnOutcome::Completed { .. }));
}

/// The journal steps stored for `thread`'s turns.
async fn stored_steps<S: JournalStore>(store: &S, thread: &str, turns: u64) -> u64 {
    let mut total = 0;
    for t in 0..turns {
        total += store
            .journal_len(&turn_journal_id(thread, t))
            .await
            .unwrap();
    }
    total
}

/// Every journal step stored for `thread`'s first `turns` turns: their journals, their
/// recovery marks, their nested steps (each turn of these threads is one record: its part
/// started at the version of its number).
async fn all_steps<S: JournalStore>(store: &S, thread: &str, turns: u64) -> u64 {
    let mut total = stored_steps(store, thread, turns).await;
    for t in 0..turns {
        let journal = turn_journal_id(thread, t);
        for id in [
            turn_mark_id(thread, t),
            format!("{journal}.resume"),
            format!("{journal}.nested-{t}"),
        ] {
            total += store.journal_len(&id).await.unwrap();
        }
    }
    total
}

async fn journal_stays_bounded_with_retention<S>(store: S)
where
    S: ThreadStore + CheckpointStore + JournalStore + Clone,
{
    let runner = runner(&store);
    const TURNS: u64 = 60;
    for t in 0..TURNS {
        say(&runner, "pruned", &format!("message {t}")).await;
        runner.purge(Retention::keep_turns(3)).await.unwrap();
        // Two steps a turn, at most the last three turns' journals; a recorded turn's
        // recovery mark is gone.
        assert!(stored_steps(&store, "pruned", t + 1).await <= 3 * 2);
        assert_eq!(
            all_steps(&store, "pruned", t + 1).await,
            stored_steps(&store, "pruned", t + 1).await
        );
    }
    assert_eq!(stored_steps(&store, "pruned", TURNS).await, 3 * 2);
    // Without a purge the journal is linear in turns.
    let raw = InMemoryStore::new();
    let plain = self::runner(&raw);
    for t in 0..10 {
        say(&plain, "long", &format!("message {t}")).await;
    }
    assert_eq!(stored_steps(&raw, "long", 10).await, 10 * 2);
    // The thread's history is whole: retention prunes journals, not records.
    assert_eq!(
        runner.thread_records("pruned").await.unwrap().len() as u64,
        TURNS
    );
    // Age: everything ended at least 0 s ago.
    let report = runner
        .purge(Retention::max_age(Duration::ZERO))
        .await
        .unwrap();
    assert_eq!((report.journals_removed, report.steps_removed), (3, 6));
    assert_eq!(stored_steps(&store, "pruned", TURNS).await, 0);
}

async fn expired_threads_are_gone<S>(store: S)
where
    S: ThreadStore + CheckpointStore + JournalStore + Clone,
{
    let live = runner(&store).thread_ttl(Duration::from_secs(3600));
    say(&live, "ttl", "hello").await;
    say(&live, "ttl", "again").await;
    assert_eq!(live.thread_records("ttl").await.unwrap().len(), 2);
    assert_eq!(
        live.purge(Retention::default())
            .await
            .unwrap()
            .threads_deleted,
        0
    );

    // Under a TTL of zero, every thread is expired.
    let expired = runner(&store).thread_ttl(Duration::ZERO);
    assert!(expired.thread_records("ttl").await.unwrap().is_empty());
    assert!(matches!(
        expired.thread_history("ttl").await,
        Err(TimeTravelError::UnknownThread { .. })
    ));
    assert!(stored_steps(&store, "ttl", 2).await > 0);
    let report = expired.purge(Retention::default()).await.unwrap();
    assert_eq!(report.threads_deleted, 1);
    assert!(!live
        .list_threads()
        .await
        .unwrap()
        .contains(&"ttl".to_owned()));
    assert_eq!(stored_steps(&store, "ttl", 2).await, 0);

    // A new message on an expired thread starts it afresh.
    say(&live, "ttl2", "old").await;
    say(&expired, "ttl2", "new").await;
    let records = live.thread_records("ttl2").await.unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].turn, 0);
}

async fn delete_thread_removes_every_step<S>(store: S)
where
    S: ThreadStore + CheckpointStore + JournalStore + Clone,
{
    let runner = runner(&store);
    for t in 0..4 {
        say(&runner, "gone", &format!("message {t}")).await;
    }
    assert_eq!(stored_steps(&store, "gone", 4).await, 8);
    // A worker dies in the fifth turn: its start mark stays open (for a recovery).
    let dying = self::runner(&store).lease(Duration::from_millis(50));
    let mut turn = dying.turn("gone", Message::user("last")).await.unwrap();
    futures::StreamExt::next(&mut turn).await.unwrap();
    std::mem::forget(turn);
    assert_eq!(
        store.journal_len(&turn_mark_id("gone", 4)).await.unwrap(),
        1
    );
    // Another worker deletes the thread once the dead one's lease ran out.
    let other = self::runner(&store);
    let deleted = loop {
        match other.delete_thread("gone").await {
            Err(flow_runtime::ThreadError::Busy { .. }) => {
                tokio::time::sleep(Duration::from_millis(10)).await
            }
            other => break other.unwrap(),
        }
    };
    assert!(deleted);
    assert_eq!(all_steps(&store, "gone", 5).await, 0);
    assert!(runner.thread_records("gone").await.unwrap().is_empty());
    assert!(!runner
        .list_threads()
        .await
        .unwrap()
        .contains(&"gone".to_owned()));
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("agentflow-hk-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn in_memory_housekeeping() {
    journal_stays_bounded_with_retention(InMemoryStore::new()).await;
    expired_threads_are_gone(InMemoryStore::new()).await;
    delete_thread_removes_every_step(InMemoryStore::new()).await;
}

#[tokio::test]
async fn file_housekeeping() {
    let dir = temp_dir("file");
    journal_stays_bounded_with_retention(FileStore::new(dir.join("a")).unwrap()).await;
    expired_threads_are_gone(FileStore::new(dir.join("b")).unwrap()).await;
    delete_thread_removes_every_step(FileStore::new(dir.join("c")).unwrap()).await;
    std::fs::remove_dir_all(dir).unwrap();
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn sqlite_housekeeping() {
    use flow_runtime::store::SqliteStore;
    let dir = temp_dir("sqlite");
    journal_stays_bounded_with_retention(SqliteStore::open(dir.join("a.db")).await.unwrap()).await;
    expired_threads_are_gone(SqliteStore::open(dir.join("b.db")).await.unwrap()).await;
    delete_thread_removes_every_step(SqliteStore::open(dir.join("c.db")).await.unwrap()).await;
    std::fs::remove_dir_all(dir).unwrap();
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_housekeeping() {
    use flow_runtime::store::PostgresStore;
    use flow_runtime::testing::fresh_postgres_database;
    for (name, part) in [("hk_bounded", 0), ("hk_ttl", 1), ("hk_delete", 2)] {
        let Some(url) = fresh_postgres_database(name).await else {
            return;
        };
        let store = PostgresStore::connect(&url).await.unwrap();
        match part {
            0 => journal_stays_bounded_with_retention(store).await,
            1 => expired_threads_are_gone(store).await,
            _ => delete_thread_removes_every_step(store).await,
        }
    }
}
