//! Housekeeping of threads: with a retention, a thread's journal stays bounded however long
//! the conversation runs (counted in stored steps); an expired thread (TTL) is gone for reads
//! and removed by purge; `delete_thread` removes every step; the journals of runs outside
//! threads are pruned by age once they ended. On InMemory, File, SQLite and PostgreSQL.

use crate::support;

use std::time::Duration;

use agentweave_runtime::store::JournalStore;
use agentweave_runtime::RunnerBuilder;
use agentweave_runtime::{
    turn_journal_id, turn_mark_id, CheckpointStore, Durability, FileStore, FlowAgent, FnAgent,
    InMemoryStore, Message, Retention, Runner, ThreadError, ThreadStore, TimeTravelError,
    TurnOutcome,
};
use agentweave_runtime::{ResumeRequest, RunRequest, TurnRequest};
use futures::StreamExt;

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
    Runner::builder(bot())
        .stores(store.clone())
        .journal_store(store.clone())
        .durability(Durability::Sync)
        .build()
}

async fn say(runner: &Runner, thread: &str, text: &str) {
    let turn = runner
        .turn(TurnRequest::new(thread, Message::user(text)))
        .await
        .unwrap();
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
        runner.thread("pruned").records().await.unwrap().len() as u64,
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
    let live = RunnerBuilder::from(runner(&store))
        .thread_ttl(Duration::from_secs(3600))
        .build();
    say(&live, "ttl", "hello").await;
    say(&live, "ttl", "again").await;
    assert_eq!(live.thread("ttl").records().await.unwrap().len(), 2);
    assert_eq!(
        live.purge(Retention::default())
            .await
            .unwrap()
            .threads_deleted,
        0
    );

    // Under a TTL of zero, every thread is expired.
    let expired = RunnerBuilder::from(runner(&store))
        .thread_ttl(Duration::ZERO)
        .build();
    assert!(expired.thread("ttl").records().await.unwrap().is_empty());
    assert!(matches!(
        expired.thread("ttl").history().await,
        Err(TimeTravelError::UnknownThread { .. })
    ));
    assert!(stored_steps(&store, "ttl", 2).await > 0);
    let report = expired.purge(Retention::default()).await.unwrap();
    assert_eq!(report.threads_deleted, 1);
    assert!(!live.threads().await.unwrap().contains(&"ttl".to_owned()));
    assert_eq!(stored_steps(&store, "ttl", 2).await, 0);

    // A new message on an expired thread starts it afresh.
    say(&live, "ttl2", "old").await;
    say(&expired, "ttl2", "new").await;
    let records = live.thread("ttl2").records().await.unwrap();
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
    let dying = RunnerBuilder::from(self::runner(&store))
        .lease(Duration::from_millis(50))
        .build();
    let mut turn = dying
        .turn(TurnRequest::new("gone", Message::user("last")))
        .await
        .unwrap();
    futures::StreamExt::next(&mut turn).await.unwrap();
    std::mem::forget(turn);
    assert_eq!(
        store.journal_len(&turn_mark_id("gone", 4)).await.unwrap(),
        1
    );
    // Another worker deletes the thread once the dead one's lease ran out.
    let other = self::runner(&store);
    let deleted = loop {
        match other.thread("gone").delete().await {
            Err(agentweave_runtime::ThreadError::Busy { .. }) => {
                tokio::time::sleep(Duration::from_millis(10)).await
            }
            other => break other.unwrap(),
        }
    };
    assert!(deleted);
    assert_eq!(all_steps(&store, "gone", 5).await, 0);
    assert!(runner.thread("gone").records().await.unwrap().is_empty());
    assert!(!runner.threads().await.unwrap().contains(&"gone".to_owned()));
}

/// Runs `id` with `runner` to its end or its interrupt; returns whether it interrupted.
async fn run_plain(runner: &Runner, id: &str) -> bool {
    let events: Vec<_> = runner
        .run(RunRequest::new([Message::user("go")]).checkpoint(id))
        .collect()
        .await;
    assert!(events.iter().all(|e| e.error.is_none()), "{events:?}");
    events.iter().any(|e| e.is_interrupt())
}

async fn run_journals_are_pruned_by_age<S>(store: S, ledger: std::path::PathBuf)
where
    S: ThreadStore + CheckpointStore + JournalStore + Clone,
{
    // Plain runs outside threads: two that end, one that waits on an interrupt; and a thread.
    let chat = Runner::builder(bot())
        .stores(store.clone())
        .journal_store(store.clone())
        .durability(Durability::Sync)
        .build();
    assert!(!run_plain(&chat, "done-1").await);
    assert!(!run_plain(&chat, "done-2").await);
    say(&chat, "chat", "hello").await;
    let desk = Runner::builder(support::steps::step_desk(ledger))
        .stores(store.clone())
        .journal_store(store.clone())
        .durability(Durability::Sync)
        .build();
    assert!(run_plain(&desk, "waiting").await);
    for id in ["done-1", "done-2", "waiting", &turn_journal_id("chat", 0)] {
        assert!(store.journal_len(id).await.unwrap() > 0, "{id}");
    }
    // The store lists its journals by the time of their last step.
    let listed = store.idle_journals(u64::MAX).await.unwrap();
    let runs: Vec<&str> = listed.iter().map(|j| j.run.as_str()).collect();
    for id in ["done-1", "done-2", "waiting"] {
        assert!(runs.contains(&id), "{runs:?}");
    }
    let done = listed.iter().find(|j| j.run == "done-1").unwrap();
    assert_eq!(done.steps, store.journal_len("done-1").await.unwrap());
    assert!(store
        .idle_journals(done.last_at_ms - 1)
        .await
        .unwrap()
        .iter()
        .all(|j| j.run != "done-1"));
    assert!(store.idle_journals(0).await.unwrap().is_empty());

    // A count of turns prunes no run's journal; a recent run is younger than an hour.
    let kept = chat.purge(Retention::keep_turns(1)).await.unwrap();
    assert_eq!(kept.run_journals_removed, 0);
    let recent = chat
        .purge(Retention::max_age(Duration::from_secs(3600)))
        .await
        .unwrap();
    assert_eq!(recent.run_journals_removed, 0);
    assert!(store.journal_len("done-1").await.unwrap() > 0);

    // Everything ended at least 0 s ago: the ended runs' journals go, the waiting run's
    // journal stays (its checkpoint waits), the thread's turn is pruned by the thread's rule.
    let steps =
        store.journal_len("done-1").await.unwrap() + store.journal_len("done-2").await.unwrap();
    let turn_steps = store
        .journal_len(&turn_journal_id("chat", 0))
        .await
        .unwrap();
    let report = chat
        .purge(Retention::max_age(Duration::ZERO))
        .await
        .unwrap();
    assert_eq!(report.run_journals_removed, 2);
    assert_eq!(report.journals_removed, 1);
    assert_eq!(report.steps_removed, steps + turn_steps);
    assert_eq!(store.journal_len("done-1").await.unwrap(), 0);
    assert_eq!(store.journal_len("done-2").await.unwrap(), 0);
    let waiting = store.journal_len("waiting").await.unwrap();
    assert!(waiting > 0);
    // The thread's history is whole.
    assert_eq!(chat.thread("chat").records().await.unwrap().len(), 1);

    // While it waits again after a resume, its journal stays; once resumed to its end, it
    // goes too.
    let mut interrupted = true;
    for round in 0..support::steps::STEPS {
        assert!(interrupted, "the desk's run ended after {round} resumes");
        if round > 0 {
            let report = desk
                .purge(Retention::max_age(Duration::ZERO))
                .await
                .unwrap();
            assert_eq!(report.run_journals_removed, 0);
        }
        let resumed: Vec<_> = desk
            .resume(ResumeRequest::new(
                "waiting",
                [("desk".to_owned(), serde_json::json!("yes"))],
            ))
            .await
            .unwrap()
            .collect()
            .await;
        assert!(resumed.iter().all(|e| e.error.is_none()), "{resumed:?}");
        interrupted = resumed.iter().any(|e| e.is_interrupt());
    }
    assert!(!interrupted);
    assert!(store.journal_len("waiting").await.unwrap() > waiting);
    let report = desk
        .purge(Retention::max_age(Duration::ZERO))
        .await
        .unwrap();
    assert_eq!(report.run_journals_removed, 1);
    assert_eq!(store.journal_len("waiting").await.unwrap(), 0);
    assert!(store.idle_journals(u64::MAX).await.unwrap().is_empty());

    // A runner without a thread store purges runs; one without any store says so.
    let runs_only = Runner::builder(bot())
        .checkpoint_store(store.clone())
        .journal_store(store.clone())
        .durability(Durability::Async)
        .build();
    assert!(!run_plain(&runs_only, "done-3").await);
    assert!(store.journal_len("done-3").await.unwrap() > 0);
    let report = runs_only
        .purge(Retention::max_age(Duration::ZERO))
        .await
        .unwrap();
    assert_eq!(report.run_journals_removed, 1);
    assert!(matches!(
        Runner::new(bot())
            .purge(Retention::max_age(Duration::ZERO))
            .await,
        Err(ThreadError::NoStore)
    ));
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    crate::support::dirs::fresh_dir("hk", name)
}

#[tokio::test]
async fn in_memory_housekeeping() {
    journal_stays_bounded_with_retention(InMemoryStore::new()).await;
    expired_threads_are_gone(InMemoryStore::new()).await;
    delete_thread_removes_every_step(InMemoryStore::new()).await;
    let dir = temp_dir("memory");
    run_journals_are_pruned_by_age(InMemoryStore::new(), dir.join("ledger")).await;
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn file_housekeeping() {
    let dir = temp_dir("file");
    journal_stays_bounded_with_retention(FileStore::new(dir.join("a")).unwrap()).await;
    expired_threads_are_gone(FileStore::new(dir.join("b")).unwrap()).await;
    delete_thread_removes_every_step(FileStore::new(dir.join("c")).unwrap()).await;
    run_journals_are_pruned_by_age(FileStore::new(dir.join("d")).unwrap(), dir.join("ledger"))
        .await;
    std::fs::remove_dir_all(dir).unwrap();
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn sqlite_housekeeping() {
    use agentweave_runtime::store::SqliteStore;
    let dir = temp_dir("sqlite");
    journal_stays_bounded_with_retention(SqliteStore::open(dir.join("a.db")).await.unwrap()).await;
    expired_threads_are_gone(SqliteStore::open(dir.join("b.db")).await.unwrap()).await;
    delete_thread_removes_every_step(SqliteStore::open(dir.join("c.db")).await.unwrap()).await;
    let store = SqliteStore::open(dir.join("d.db")).await.unwrap();
    run_journals_are_pruned_by_age(store, dir.join("ledger")).await;
    std::fs::remove_dir_all(dir).unwrap();
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_housekeeping() {
    use agentweave_runtime::store::PostgresStore;
    use agentweave_runtime::testing::fresh_postgres_database;
    let dir = temp_dir("postgres");
    for (name, part) in [
        ("hk_bounded", 0),
        ("hk_ttl", 1),
        ("hk_delete", 2),
        ("hk_runs", 3),
    ] {
        let Some(url) = fresh_postgres_database(name).await else {
            return;
        };
        let store = PostgresStore::connect(&url).await.unwrap();
        match part {
            0 => journal_stays_bounded_with_retention(store).await,
            1 => expired_threads_are_gone(store).await,
            2 => delete_thread_removes_every_step(store).await,
            _ => run_journals_are_pruned_by_age(store, dir.join("ledger")).await,
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}
