//! Every statement of the SQL stores, prepared by each database: a typo, a column that does not
//! exist, a parameter whose type cannot be told, or a construct one database lacks fails here,
//! before any store runs it. The stores' own tests then run each statement.

use sqlx::{Database, Executor, Pool};

use super::{schema, Dialect, Statements};
use crate::store::memory_items::sql as memory;
use crate::store::queue::sql::QueueStatements;
use crate::store::schedule::sql as schedules;
use crate::store::spending::sql as spending;

/// The statements of a struct of them, by field name (a field that is `None` is left out; a
/// list of them named by field and position).
fn named(statements: &impl serde::Serialize) -> Vec<(String, String)> {
    let serde_json::Value::Object(fields) = serde_json::to_value(statements).unwrap() else {
        panic!("statements serialise as a map");
    };
    let mut named = Vec::new();
    for (name, sql) in fields {
        match sql {
            serde_json::Value::String(sql) => named.push((name, sql)),
            serde_json::Value::Array(list) => {
                for (n, sql) in list.into_iter().enumerate() {
                    named.push((format!("{name}[{n}]"), sql.as_str().unwrap().to_owned()));
                }
            }
            _ => {}
        }
    }
    named
}

/// Every statement the SQL stores run on a database of `dialect`, named.
fn statements(dialect: &Dialect) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = Vec::new();
    let mut add = |area: &str, name: &str, sql: String| all.push((format!("{area}.{name}"), sql));
    for (name, sql) in named(&Statements::new(dialect)) {
        add("store", &name, sql);
    }
    add("store", "schema_version", schema::SCHEMA_VERSION.to_owned());
    add(
        "store",
        "set_schema_version",
        schema::SET_SCHEMA_VERSION.to_owned(),
    );
    for (name, sql) in [("lock", dialect.lock), ("lock_key", dialect.lock_key)] {
        if let Some(sql) = sql {
            add("dialect", name, sql.to_owned());
        }
    }
    add("dialect", "queue_columns", dialect.queue_columns.to_owned());
    for (name, sql) in named(&QueueStatements::new(dialect)) {
        add("queue", &name, sql);
    }
    let schedule = [
        ("insert", schedules::INSERT.to_owned()),
        ("get", schedules::get()),
        ("list", schedules::list()),
        ("count", schedules::COUNT.to_owned()),
        ("update", schedules::UPDATE.to_owned()),
        ("delete", schedules::DELETE.to_owned()),
        ("due", schedules::due()),
        ("advance", schedules::ADVANCE.to_owned()),
    ];
    for (name, sql) in schedule {
        add("schedules", name, sql);
    }
    let spent = [
        ("ensure", spending::ENSURE.to_owned()),
        ("read_locked", dialect.fill(spending::READ)),
        ("read", spending::READ.replace("{FOR_UPDATE}", "")),
        ("add", spending::ADD.to_owned()),
        ("delete_thread", spending::DELETE_THREAD.to_owned()),
        ("trim_usage", spending::TRIM_USAGE.to_owned()),
        ("usage_add", spending::USAGE_ADD.to_owned()),
        ("usage_list", spending::usage_list()),
        ("usage_count", spending::usage_count()),
        ("charge_new", spending::CHARGE_NEW.to_owned()),
        ("charge_settled", spending::CHARGE_SETTLED.to_owned()),
        ("charge_released", spending::CHARGE_RELEASED.to_owned()),
        ("trim_charges", spending::TRIM_CHARGES.to_owned()),
    ];
    for (name, sql) in spent {
        add("spending", name, sql);
    }
    let mut items = vec![
        ("get", memory::get()),
        ("upsert", memory::UPSERT.replace("{WHERE}", "")),
        (
            "create",
            memory::UPSERT.replace("{WHERE}", memory::ONLY_EXPIRED),
        ),
        ("update_version", memory::UPDATE_VERSION.to_owned()),
        ("delete", memory::delete(false)),
        ("delete_version", memory::delete(true)),
        ("purge", memory::PURGE.to_owned()),
        ("size", dialect.memory.size.to_owned()),
    ];
    for prefixed in [false, true] {
        items.push(("scan", memory::scan(prefixed, false)));
        items.push(("scan_vectors", memory::scan(prefixed, true)));
        items.push(("search", memory::search(dialect.memory, prefixed)));
    }
    for (name, sql) in items {
        add("memory", name, sql);
    }
    all
}

/// Prepares `statements` on `pool` (whose tables exist); the failures, named.
async fn prepare_all<DB: Database>(pool: &Pool<DB>, statements: &[(String, String)]) -> Vec<String>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    let mut failed = Vec::new();
    for (name, sql) in statements {
        if let Err(e) = pool.prepare(sql).await {
            failed.push(format!("{name}: {e}\n    {sql}"));
        }
    }
    failed
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn sql_statements_prepare_on_sqlite() {
    use crate::store::memory_items::SqliteMemoryStore;
    use crate::store::{SqliteRunQueue, SqliteStore};
    let dir =
        std::env::temp_dir().join(format!("agentflow-prepare-{}", crate::ids::unique_token()));
    let path = dir.join("all.db");
    let store = SqliteStore::open(&path).await.unwrap();
    SqliteRunQueue::open(&path).await.unwrap();
    SqliteMemoryStore::beside(&store).await.unwrap();
    let statements = statements(&<sqlx::Sqlite as super::SqlDatabase>::DIALECT);
    assert!(statements.len() >= 80, "{} statements", statements.len());
    let failed = prepare_all(store.pool(), &statements).await;
    std::fs::remove_dir_all(&dir).ok();
    assert!(failed.is_empty(), "SQLite refuses:\n{}", failed.join("\n"));
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn sql_statements_prepare_on_postgres() {
    use crate::store::memory_items::PostgresMemoryStore;
    use crate::store::{PostgresRunQueue, PostgresStore};
    let Some(url) = crate::testing::fresh_postgres_database("prepare").await else {
        return;
    };
    let store = PostgresStore::connect(&url).await.unwrap();
    PostgresRunQueue::connect(&url).await.unwrap();
    PostgresMemoryStore::beside(&store).await.unwrap();
    let statements = statements(&<sqlx::Postgres as super::SqlDatabase>::DIALECT);
    assert!(statements.len() >= 80, "{} statements", statements.len());
    let failed = prepare_all(store.pool(), &statements).await;
    assert!(
        failed.is_empty(),
        "PostgreSQL refuses:\n{}",
        failed.join("\n")
    );
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_statement_the_database_refuses_is_named() {
    let pool = sqlx::SqlitePool::connect("sqlite::memory:").await.unwrap();
    let table = "CREATE TABLE agentflow_journal (run TEXT, seq INTEGER)";
    sqlx::query(table).execute(&pool).await.unwrap();
    let statements = [
        (
            "journal.len",
            "SELECT COUNT(*) FROM agentflow_journal WHERE run = $1",
        ),
        (
            "journal.typo",
            "SELECT sek FROM agentflow_journal WHERE run = $1",
        ),
    ];
    let statements: Vec<_> = statements
        .iter()
        .map(|(n, s)| (n.to_string(), s.to_string()))
        .collect();
    let failed = prepare_all(&pool, &statements).await;
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(
        failed[0].starts_with("journal.typo: ") && failed[0].contains("sek"),
        "{failed:?}"
    );
}

/// Rows as the SQL stores wrote them before they were the front over [`SqlRows`]: each
/// statement as it was (a fixture: never change it), `{NOW}` the database's clock.
mod written_before {
    /// A new head record (`$4` its state; `ended_ms` set when finished).
    pub const INSERT: &str = "INSERT INTO agentflow_checkpoints
    (id, version, parent, state, created_ms, ended_ms, attempt, lease_until_ms, size, is_head, bytes)
    VALUES ($1, $2, $3, $4, {NOW}, CASE WHEN $4 = 'finished' THEN {NOW} END, 0, 0, $5, 1, $6)";
    /// A claim of the head for `$2` ms.
    pub const CLAIM: &str = "UPDATE agentflow_checkpoints
    SET state = 'claimed', attempt = attempt + 1, lease_until_ms = {NOW} + $2
    WHERE id = $1 AND is_head = 1 AND size <= $3
      AND (state = 'pending' OR (state = 'claimed' AND lease_until_ms <= {NOW}))";
    /// A completion's first half: the claimed head resumed.
    pub const END_CLAIM: &str =
        "UPDATE agentflow_checkpoints SET state = 'resumed', ended_ms = {NOW}, is_head = 0
    WHERE id = $1 AND version = $2 AND attempt = $3 AND state = 'claimed' AND is_head = 1";
    pub const THREAD_INSERT: &str =
        "INSERT INTO agentflow_thread_records (thread, seq, turn, size, bytes)
    VALUES ($1, $2, $3, $4, $5)";
    /// A turn lease for owner `$2` for `$3` ms.
    pub const LEASE_TAKE: &str =
        "INSERT INTO agentflow_thread_leases (thread, owner, lease_until_ms)
    VALUES ($1, $2, {NOW} + $3)
    ON CONFLICT (thread) DO UPDATE
    SET owner = excluded.owner, lease_until_ms = excluded.lease_until_ms
    WHERE agentflow_thread_leases.lease_until_ms <= {NOW}";
    pub const JOURNAL_INSERT: &str =
        "INSERT INTO agentflow_journal (run, seq, at_ms, kind, size, bytes)
    VALUES ($1, $2, $3, $4, $5, $6)";
}

/// Writes, with the statements of [`written_before`] on `pool` (whose schema exists): run
/// `waiting` (pending), run `held` (claimed for an hour), run `done` (claimed, resumed, then
/// finished: two records), thread `talk` (turns 0 and 1) with its turn lease held by `w1` for
/// an hour, and journal `steps` (three steps).
async fn write_rows_as_before<DB: super::SqlDatabase>(pool: &Pool<DB>)
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
    for<'q> i64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    for<'q> Option<i64>: sqlx::Encode<'q, DB>,
    for<'q> &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    for<'q> &'q [u8]: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    use written_before::*;
    let fill = |s: &str| DB::DIALECT.fill(s);
    let [insert_sql, claim_sql, end_sql, thread_sql, lease_sql, journal_sql] = [
        INSERT,
        CLAIM,
        END_CLAIM,
        THREAD_INSERT,
        LEASE_TAKE,
        JOURNAL_INSERT,
    ]
    .map(fill);
    let insert = |id: &'static str, version: i64, parent: Option<i64>, state: &'static str| {
        let bytes: &'static [u8] = match (id, version) {
            ("done", 2) => b"the final session",
            _ => b"a waiting session",
        };
        (id, version, parent, state, bytes)
    };
    for (id, version, parent, state, bytes) in [
        insert("waiting", 1, None, "pending"),
        insert("held", 1, None, "pending"),
        insert("done", 1, None, "pending"),
    ] {
        let query = sqlx::query(&insert_sql).bind(id).bind(version).bind(parent);
        let query = query.bind(state).bind(bytes.len() as i64).bind(bytes);
        query.execute(pool).await.unwrap();
    }
    for id in ["held", "done"] {
        let claim = sqlx::query(&claim_sql).bind(id).bind(3_600_000_i64);
        claim.bind(1_000_000_i64).execute(pool).await.unwrap();
    }
    let end = sqlx::query(&end_sql).bind("done").bind(1_i64);
    end.bind(1_i64).execute(pool).await.unwrap();
    let (id, version, parent, state, bytes) = insert("done", 2, Some(1), "finished");
    let query = sqlx::query(&insert_sql).bind(id).bind(version).bind(parent);
    let query = query.bind(state).bind(bytes.len() as i64).bind(bytes);
    query.execute(pool).await.unwrap();
    for (seq, text) in ["hello", "again"].into_iter().enumerate() {
        let mut record = crate::store::conformance::record(seq as u64, text);
        record.seq = seq as u64;
        let bytes = record.encode();
        let query = sqlx::query(&thread_sql).bind("talk").bind(seq as i64);
        let query = query.bind(seq as i64).bind(bytes.len() as i64);
        query.bind(&bytes[..]).execute(pool).await.unwrap();
    }
    let lease = sqlx::query(&lease_sql).bind("talk").bind("w1");
    lease.bind(3_600_000_i64).execute(pool).await.unwrap();
    for seq in 0..3_i64 {
        let body = format!("step {seq}");
        let query = sqlx::query(&journal_sql).bind("steps").bind(seq);
        let query = query.bind(1_000 + seq).bind("tool").bind(body.len() as i64);
        query.bind(body.as_bytes()).execute(pool).await.unwrap();
    }
}

/// What [`write_rows_as_before`] wrote, read back and carried on through `store`.
async fn rows_written_before_read_back(
    store: impl crate::store::CheckpointStore + crate::store::ThreadStore + crate::store::JournalStore,
) {
    use crate::store::{
        CheckpointState, CheckpointStore, Completion, StoreError, ThreadError, ThreadStore,
    };
    use std::time::Duration;
    let get = CheckpointStore::get(&store, "waiting").await.unwrap();
    assert_eq!(get.as_deref(), Some(&b"a waiting session"[..]));
    let done = CheckpointStore::history(&store, "done").await.unwrap();
    let states: Vec<_> = done
        .iter()
        .map(|m| (m.version, m.parent, m.state))
        .collect();
    assert_eq!(
        states,
        [
            (1, None, CheckpointState::Resumed),
            (2, Some(1), CheckpointState::Finished)
        ]
    );
    let held = CheckpointStore::history(&store, "held").await.unwrap();
    assert!(
        matches!(held[0].state, CheckpointState::Claimed { attempt: 1, .. }),
        "{held:?}"
    );
    let pending = store.pending(10).await.unwrap();
    let ids: Vec<_> = pending.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&"waiting") && ids.contains(&"held"), "{ids:?}");
    let refused = store.claim("held", Duration::from_secs(60)).await;
    assert!(
        matches!(refused, Err(StoreError::Claimed { attempt: 1, .. })),
        "{refused:?}"
    );
    let claims = store
        .claim_pending(5, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(claims.len(), 1, "only the waiting run is claimable");
    assert_eq!(
        (claims[0].id.as_str(), claims[0].version, claims[0].attempt),
        ("waiting", 1, 1)
    );
    assert_eq!(claims[0].bytes, b"a waiting session");
    let next = store
        .complete(&claims[0], Completion::Finished(b"finished".to_vec()))
        .await
        .unwrap();
    assert_eq!(next, 2);
    assert_eq!(store.purge_finished(Duration::ZERO).await.unwrap(), 2);
    assert!(CheckpointStore::history(&store, "done")
        .await
        .unwrap()
        .is_empty());

    let head = store.head("talk").await.unwrap().unwrap();
    assert_eq!((head.version, head.turns), (2, 2));
    let turns = store.read("talk", 0..2).await.unwrap();
    let seqs: Vec<_> = turns.iter().map(|r| (r.seq, r.turn)).collect();
    assert_eq!(seqs, [(0, 0), (1, 1)]);
    let busy = store
        .lease_thread("talk", "w2", Duration::from_secs(60))
        .await;
    assert!(matches!(busy, Err(ThreadError::Busy { .. })), "{busy:?}");
    store
        .renew_thread_lease("talk", "w1", Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(ThreadStore::list(&store).await.unwrap(), ["talk"]);

    assert_eq!(store.journal_len("steps").await.unwrap(), 3);
    let steps = store.read_steps("steps", 1).await.unwrap();
    let read: Vec<_> = steps
        .iter()
        .map(|s| (s.seq, s.at_ms, &s.bytes[..]))
        .collect();
    assert_eq!(
        read,
        [(1, 1_001, &b"step 1"[..]), (2, 1_002, &b"step 2"[..])]
    );
    let idle = store.idle_journals(1_002).await.unwrap();
    assert_eq!(idle.len(), 1);
    assert_eq!((idle[0].run.as_str(), idle[0].steps), ("steps", 3));
    let step = crate::store::conformance::step("tool", "step 3");
    assert_eq!(store.append_steps("steps", 3, vec![step]).await.unwrap(), 4);
    assert_eq!(
        store.read_steps("steps", 3).await.unwrap()[0].bytes,
        b"step 3"
    );
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn sqlite_rows_written_before_the_front_read_back() {
    use crate::store::SqliteStore;
    let dir = std::env::temp_dir().join(format!("agentflow-rows-{}", crate::ids::unique_token()));
    let path = dir.join("before.db");
    // The schema as today's migrations make it; then rows as the old statements wrote them.
    let store = SqliteStore::open(&path).await.unwrap();
    write_rows_as_before(store.pool()).await;
    drop(store);
    rows_written_before_read_back(SqliteStore::open(&path).await.unwrap()).await;
    std::fs::remove_dir_all(&dir).ok();
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_rows_written_before_the_front_read_back() {
    use crate::store::PostgresStore;
    let Some(url) = crate::testing::fresh_postgres_database("rows_before").await else {
        return;
    };
    let store = PostgresStore::connect(&url).await.unwrap();
    write_rows_as_before(store.pool()).await;
    drop(store);
    rows_written_before_read_back(PostgresStore::connect(&url).await.unwrap()).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_store_measures_leases_on_the_database_clock() {
    use crate::store::{CheckpointState, CheckpointStore, SaveMode, SqliteStore, StoreError};
    use std::time::{Duration, SystemTime};
    let dir = std::env::temp_dir().join(format!("agentflow-clock-{}", crate::ids::unique_token()));
    let store = SqliteStore::open(dir.join("clock.db")).await.unwrap();
    // A database whose clock is an hour ahead of this machine's.
    let ahead = store.clone().with_skew(3_600_000);
    ahead
        .save("r", b"x".to_vec(), SaveMode::Create)
        .await
        .unwrap();
    ahead.claim("r", Duration::from_secs(60)).await.unwrap();
    let history = store.history("r").await.unwrap();
    let CheckpointState::Claimed { lease_until, .. } = history[0].state else {
        panic!("{history:?}");
    };
    let left = lease_until.duration_since(SystemTime::now()).unwrap();
    assert!(left > Duration::from_secs(3_600), "{left:?}");
    // On the database's clock the lease has a minute left, whoever asks.
    let refused = ahead.claim("r", Duration::from_secs(60)).await;
    assert!(
        matches!(&refused, Err(StoreError::Claimed { remaining, .. }) if *remaining <= Duration::from_secs(60)),
        "{refused:?}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
