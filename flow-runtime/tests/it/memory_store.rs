//! The memory store contract (`store::memory_items`) on every store: the shared suite
//! (`contract::run`: versions, scopes, prefixes and filters, search ranking by text and by
//! meaning, tenant isolation attacked, time to live) on the in-memory store, SQLite (a file of
//! its own, and beside a `SqliteStore`) and PostgreSQL (the server at `AGENTFLOW_PG_URL`;
//! skipped without it unless `AGENTFLOW_REQUIRE_COMPONENTS=1`); and what is each store's own.

use std::sync::Arc;

use agentweave_runtime::store::memory_items::{contract, TransientMemoryStore};
// What the SQL stores' own tests use (through `super::*`).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
use agentweave_runtime::store::memory_items::{
    ItemKey, ListQuery, Memory, MemoryError, MemoryStore, Namespace, Partition, PutItem, Scope,
    Tenant,
};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
use serde_json::json;

#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn temp_dir(name: &str) -> std::path::PathBuf {
    crate::support::dirs::temp_dir("memory", name)
}

#[tokio::test]
async fn transient_store_meets_the_contract() {
    contract::run(Arc::new(TransientMemoryStore::new()), "transient").await;
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use super::*;
    use agentweave_runtime::store::memory_items::SqliteMemoryStore;
    use agentweave_runtime::store::SqliteStore;

    #[tokio::test]
    async fn sqlite_store_meets_the_contract() {
        let dir = temp_dir("sqlite");
        let store = SqliteMemoryStore::open(dir.join("memory.db"))
            .await
            .unwrap();
        contract::run(Arc::new(store), "sqlite").await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn sqlite_store_beside_a_checkpoint_store_meets_the_contract() {
        let dir = temp_dir("sqlite-beside");
        let checkpoints = SqliteStore::open(dir.join("agentflow.db")).await.unwrap();
        let store = SqliteMemoryStore::beside(&checkpoints).await.unwrap();
        contract::run(Arc::new(store), "beside").await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn sqlite_items_survive_reopening_and_a_newer_schema_is_refused() {
        let dir = temp_dir("sqlite-reopen");
        let path = dir.join("memory.db");
        let at = Partition::new(Tenant::new("acme").unwrap(), Scope::user("alice").unwrap());
        let (n, k) = (
            Namespace::parse("devices").unwrap(),
            ItemKey::new("printer").unwrap(),
        );
        {
            let memory = Memory::new(SqliteMemoryStore::open(&path).await.unwrap());
            let put = PutItem::new(json!({"model": "X200"})).text("an X200 printer");
            memory.put(&at, &n, &k, put).await.unwrap();
        }
        let memory = Memory::new(SqliteMemoryStore::open(&path).await.unwrap());
        let item = memory.get(&at, &n, &k).await.unwrap().unwrap();
        assert_eq!(item.value, json!({"model": "X200"}));
        assert_eq!(memory.list(&at, &ListQuery::all()).await.unwrap().len(), 1);
        drop(memory);

        set_memory_schema(&path, 99).await;
        match SqliteMemoryStore::open(&path).await {
            Err(MemoryError::Schema {
                found: 99,
                supported: 1,
            }) => {}
            other => panic!("a newer schema was not refused: {other:?}"),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    async fn set_memory_schema(path: &std::path::Path, version: i64) {
        use sqlx::Connection;
        let options = sqlx::sqlite::SqliteConnectOptions::new().filename(path);
        let mut db = sqlx::SqliteConnection::connect_with(&options)
            .await
            .unwrap();
        sqlx::query("UPDATE agentflow_memory_schema SET version = $1 WHERE id = 1")
            .bind(version)
            .execute(&mut db)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_row_written_by_hand_with_a_hostile_namespace_is_reported_not_returned() {
        let dir = temp_dir("sqlite-corrupt");
        let path = dir.join("memory.db");
        let store = SqliteMemoryStore::open(&path).await.unwrap();
        {
            use sqlx::Connection;
            let options = sqlx::sqlite::SqliteConnectOptions::new().filename(&path);
            let mut db = sqlx::SqliteConnection::connect_with(&options)
                .await
                .unwrap();
            sqlx::query(
                "INSERT INTO agentflow_memory_items (tenant, scope, namespace, key, value, \
                 created_ms, updated_ms, version) VALUES ('acme', 'res:user:alice', \
                 'profile/../x', 'k', '1', 0, 0, 1)",
            )
            .execute(&mut db)
            .await
            .unwrap();
        }
        let at = Partition::new(Tenant::new("acme").unwrap(), Scope::user("alice").unwrap());
        let listed = store.scan(&at, None).await;
        assert!(
            matches!(listed, Err(MemoryError::Corrupt { .. })),
            "{listed:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use agentweave_runtime::store::memory_items::PostgresMemoryStore;
    use agentweave_runtime::store::PostgresStore;
    use agentweave_runtime::testing::fresh_postgres_database;

    #[tokio::test]
    async fn postgres_store_meets_the_contract() {
        let Some(url) = fresh_postgres_database("memory").await else {
            return;
        };
        let store = PostgresMemoryStore::connect(&url).await.unwrap();
        contract::run(Arc::new(store), "postgres").await;
        // A second store on the same database (another worker) sees the same items and
        // creates nothing twice.
        let again = PostgresMemoryStore::connect(&url).await.unwrap();
        let at = Partition::new(
            Tenant::new("postgres-i-acme").unwrap(),
            Scope::user("alice").unwrap(),
        );
        assert_eq!(again.scan(&at, None).await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn postgres_store_beside_a_checkpoint_store_meets_the_contract() {
        let Some(url) = fresh_postgres_database("memory_beside").await else {
            return;
        };
        let checkpoints = PostgresStore::connect(&url).await.unwrap();
        let store = PostgresMemoryStore::beside(&checkpoints).await.unwrap();
        contract::run(Arc::new(store), "pgbeside").await;
    }
}
