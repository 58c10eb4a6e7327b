//! Support for tests that need an outside component: a PostgreSQL server, a browser and its
//! WebDriver, an MCP server, an OpenAI-compatible proxy.
//!
//! Such a test first looks for its component. When it is missing, the test calls
//! [`skip_missing_component`], which prints why the test is skipped and how to run it, and the
//! test returns early; `cargo test --workspace` thus passes on a bare machine. CI sets
//! [`REQUIRE_COMPONENTS_ENV`] (`AGENTFLOW_REQUIRE_COMPONENTS=1`), and there a missing component
//! fails the test instead: a skip in CI would prove nothing.
//!
//! ```
//! use agentweave_runtime::testing::skip_missing_component;
//!
//! fn postgres_url() -> Option<String> {
//!     std::env::var("AGENTFLOW_PG_URL").ok()
//! }
//!
//! # fn demo() {
//! let Some(url) = postgres_url() else {
//!     skip_missing_component("PostgreSQL", "set AGENTFLOW_PG_URL to a server's URL");
//!     return;
//! };
//! # let _ = url;
//! # }
//! ```

/// The environment variable that turns a skipped component test into a failure when set to `1`
/// (CI sets it).
pub const REQUIRE_COMPONENTS_ENV: &str = "AGENTFLOW_REQUIRE_COMPONENTS";

/// Whether missing components must fail tests ([`REQUIRE_COMPONENTS_ENV`] is `1`).
pub fn components_required() -> bool {
    std::env::var(REQUIRE_COMPONENTS_ENV).is_ok_and(|v| v == "1")
}

/// Reports that `component` is missing: prints a skip message naming it and saying how to
/// provide it (`how`), and returns so the caller can end the test early.
///
/// # Panics
///
/// When [`components_required`]: a test that needs a component must run in CI.
#[track_caller]
pub fn skip_missing_component(component: &str, how: &str) {
    if components_required() {
        panic!(
            "{component} is required ({REQUIRE_COMPONENTS_ENV}=1) but missing: {how}; \
             .ci/run installs and starts it"
        );
    }
    eprintln!(
        "SKIPPED at {}: {component} is not available here ({how}); CI runs this test with \
         {REQUIRE_COMPONENTS_ENV}=1",
        std::panic::Location::caller()
    );
}

/// The environment variable naming the PostgreSQL server the Postgres tests use
/// (`postgres://user@host/database`, `?host=/socket/dir` for a Unix socket).
pub const POSTGRES_URL_ENV: &str = "AGENTFLOW_PG_URL";

/// A new, empty database on the server at [`POSTGRES_URL_ENV`], for one test: its URL. `None`
/// (after [`skip_missing_component`]) when the variable is not set.
///
/// The database is named `PREFIX_` and a random suffix; it is not dropped (the server is a
/// throw-away one).
///
/// # Panics
///
/// If the server cannot be reached or the database cannot be made.
#[cfg(feature = "postgres")]
pub async fn fresh_postgres_database(prefix: &str) -> Option<String> {
    use sqlx::Connection;
    let Ok(url) = std::env::var(POSTGRES_URL_ENV) else {
        skip_missing_component(
            "PostgreSQL",
            "set AGENTFLOW_PG_URL to a server's URL; .ci/postgres.sh starts one",
        );
        return None;
    };
    let name = format!(
        "{}_{}",
        prefix.to_ascii_lowercase(),
        &crate::ids::unique_token()[..12]
    );
    assert!(
        name.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
        "database names are made of a-z, 0-9 and _: {name}"
    );
    let mut admin = sqlx::PgConnection::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {url}: {e}"));
    // The name is checked above: it needs no quoting.
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await
        .unwrap_or_else(|e| panic!("cannot create database {name}: {e}"));
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (&url[..], String::new()),
    };
    let server = base.rsplit_once('/').map_or(base, |(server, _)| server);
    Some(format!("{server}/{name}{query}"))
}

/// Writes `version` as the schema version of the SQLite store at `path`, as a newer build
/// would: to check that a store refuses a schema it does not know.
///
/// # Panics
///
/// If the database cannot be opened or written.
#[cfg(feature = "sqlite")]
pub async fn set_sqlite_schema_version(path: &std::path::Path, version: i64) {
    use sqlx::Connection;
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(path);
    let mut db = sqlx::SqliteConnection::connect_with(&options)
        .await
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    sqlx::query("UPDATE agentflow_schema SET version = $1 WHERE id = 1")
        .bind(version)
        .execute(&mut db)
        .await
        .unwrap_or_else(|e| panic!("cannot write the schema version: {e}"));
}
