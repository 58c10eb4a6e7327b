//! Every statement of the SQL stores, prepared by each database: a typo, a column that does not
//! exist, a parameter whose type cannot be told, or a construct one database lacks fails here,
//! before any store runs it. The stores' own tests then run each statement.

use sqlx::{Database, Executor, Pool};

use super::{schema, Dialect, Statements};
use crate::store::memory_items::sql as memory;
use crate::store::queue::sql::QueueStatements;
use crate::store::schedule::sql as schedules;
use crate::store::spending::sql as spending;

/// The statements of a struct of them, by field name (a field that is `None` is left out).
fn named(statements: &impl serde::Serialize) -> Vec<(String, String)> {
    let serde_json::Value::Object(fields) = serde_json::to_value(statements).unwrap() else {
        panic!("statements serialise as a map");
    };
    let text = |(name, sql): (String, serde_json::Value)| Some((name, sql.as_str()?.to_owned()));
    fields.into_iter().filter_map(text).collect()
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
