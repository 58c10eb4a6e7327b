//! Long-term memory: what an agent keeps about a user, a thread or the whole application,
//! beyond one conversation: the [`MemoryStore`] contract, its stores, and [`Memory`], the
//! front every caller (the memory tools, an application) goes through.
//!
//! # Addresses: the tenant is part of the key
//!
//! An item is kept under (tenant, scope, namespace, key). The tenant and the scope together
//! are a [`Partition`], and every call of the contract takes one: there is no call that reads,
//! lists, searches or writes without its tenant, so a tenant is never a filter someone can
//! forget. Each part is a type validated when made ([`Tenant`], [`Scope`], [`Namespace`],
//! [`ItemKey`]): `..`, separators, NULs and non-ASCII look-alikes are refused with
//! [`MemoryError::Invalid`], never rewritten.
//!
//! # Items
//!
//! A [`MemoryItem`] holds a JSON value, an optional text to search it by, when it was created
//! and updated, when it expires (a time to live, [`PutItem::ttl`]: an expired item is gone
//! for every read and may be written again as new) and a version: a write can expect a version
//! ([`Expect`]), and fails with [`MemoryError::VersionConflict`] when another write came first.
//!
//! # Search
//!
//! By full text with no extra service (the in-memory store ranks with BM25; SQLite with FTS5;
//! PostgreSQL with a `tsvector` column and its GIN index), or by meaning when the [`Memory`]
//! has an [`Embedder`]: the item's text is embedded when it is written, the vector kept in the
//! same row, and a search compares the query's vector with every vector of the partition under
//! the prefix (exact, no approximate index). A query is cut into words (letters and digits
//! only, so no query syntax slips through); PostgreSQL uses the `simple` configuration
//! (lowercased words, no stemming). `SearchQuery::mode` picks `Text` or `Meaning` per search.
//! By meaning, 10,000 items of a tenant take about 0.2 s on SQLite or PostgreSQL against about
//! 12-22 ms by full text (W13 in BENCHMARKS.md).
//!
//! # Stores
//!
//! | store | feature | full text | kept |
//! | --- | --- | --- | --- |
//! | [`TransientMemoryStore`] | none | BM25 in process | in the process |
//! | `SqliteMemoryStore` | `sqlite` | FTS5 | a database file, its own or a `SqliteStore`'s (`beside`) |
//! | `PostgresMemoryStore` | `postgres` | `tsvector` + GIN | a database, its own pool or a `PostgresStore`'s (`beside`) |
//!
//! The SQL stores create their tables when they open, with a schema version of their own: a
//! database written by a newer build is refused with [`MemoryError::Schema`]. A store of your
//! own implements [`MemoryStore`] (get, put, delete, scan, text search, vectors, purge) and can
//! be checked with the suite the shipped stores pass, [`contract::run`].
//!
//! # Files
//!
//! - `address.rs`: tenants, scopes, partitions, namespaces, keys and their rules;
//! - `item.rs`: items, writes, queries, filters and hits;
//! - `text.rs`: query terms, BM25, vectors;
//! - `embed.rs`: the [`Embedder`] contract, the deterministic [`HashEmbedder`] and the
//!   OpenAI-compatible `OpenAiEmbedder` (feature `http`);
//! - `front.rs`: [`Memory`] (the rules once: embedding, filters, paging, vector search) and
//!   [`TypedNamespace`] (a serde type per namespace, checked when read);
//! - `transient.rs`: [`TransientMemoryStore`], in process memory;
//! - `sqlite.rs`: `SqliteMemoryStore` (feature `sqlite`);
//! - `postgres.rs`: `PostgresMemoryStore` (feature `postgres`);
//! - `contract.rs`: the conformance suite every store passes.
//!
//! In a run, memory reaches an agent through the tools (`MemoryTools`), recall before a
//! model call (`MemoryRecall`) and extraction after a turn (`MemoryExtraction`), all in
//! `agentweave_runtime::memory`; `agentweave-server` serves it (`ServerBuilder::memory`).

mod address;
pub mod contract;
mod embed;
mod front;
mod item;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;
mod text;
mod transient;

use std::error::Error as StdError;
use std::sync::Arc;

use async_trait::async_trait;

pub use address::{
    AddressPart, ItemKey, Namespace, Partition, Scope, Tenant, MAX_KEY_LEN, MAX_NAMESPACE_DEPTH,
    MAX_RESOURCE_KIND_LEN, MAX_SCOPE_ID_LEN, MAX_SEGMENT_LEN, MAX_TENANT_LEN,
};
#[cfg(feature = "http")]
pub use embed::OpenAiEmbedder;
pub use embed::{EmbedError, Embedder, HashEmbedder};
pub use front::{Memory, TypedNamespace};
pub use item::{
    Expect, Filter, Hit, ListQuery, MemoryItem, PutItem, SearchMode, SearchQuery, MAX_TEXT_BYTES,
    MAX_VALUE_BYTES,
};
#[cfg(feature = "postgres")]
pub use postgres::PostgresMemoryStore;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use sql::SqlMemoryStore;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteMemoryStore;
pub use text::MAX_QUERY_TERMS;
pub use transient::TransientMemoryStore;

/// A failure of a memory store or of [`Memory`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// A part of an address is not valid; nothing was read or written.
    #[error("memory {part} '{given}' is refused: {reason}; use 1 to a few dozen characters of A-Z, a-z, 0-9, '.', '_' or '-', not starting with '.'")]
    Invalid {
        /// Which part.
        part: AddressPart,
        /// What was given (escaped, cut to 100 characters).
        given: String,
        /// Why it is refused.
        reason: String,
    },
    /// A write expected a version (or no item) and found another.
    #[error("memory item '{namespace}/{key}' is at {}, not at the {} the write expected; read it again and retry", found_text(*.found), expected_text(*.expected))]
    VersionConflict {
        /// The item's namespace.
        namespace: String,
        /// The item's key.
        key: String,
        /// What the write expected.
        expected: Expect,
        /// The live item's version (none: there is no live item).
        found: Option<u64>,
    },
    /// A value or text is larger than a store keeps.
    #[error("the memory item's {what} is {size} bytes, over the limit of {limit} bytes; keep less in one item")]
    TooLarge {
        /// `value` or `text`.
        what: &'static str,
        /// Its size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// A typed namespace read a value that is not of its type.
    #[error("memory item '{namespace}/{key}' does not hold a {type_name}: {message}; it was written by another version of the application or by hand")]
    WrongType {
        /// The namespace.
        namespace: String,
        /// The key.
        key: String,
        /// The Rust type expected.
        type_name: &'static str,
        /// What serde said.
        message: String,
    },
    /// A search by meaning was asked of a [`Memory`] without an embedder, or the embedder
    /// failed.
    #[error(transparent)]
    Embedding(#[from] EmbedError),
    /// A stored row could not be read back (written by hand or by a newer build).
    #[error("memory store holds a row it cannot read ({message}); it was written by hand or by a newer build")]
    Corrupt {
        /// What is wrong.
        message: String,
    },
    /// The memory schema was written by a newer build.
    #[error("the memory store's schema is version {found}; this build knows versions up to {supported}: upgrade agentflow or use another database")]
    Schema {
        /// The version found.
        found: i64,
        /// The latest version this build knows.
        supported: i64,
    },
    /// The database failed.
    #[error("memory database could not {operation}: {source}")]
    Database {
        /// What the store was doing.
        operation: &'static str,
        /// The driver's error.
        #[source]
        source: Arc<dyn StdError + Send + Sync>,
    },
    /// Any other failure.
    #[error("memory store failed: {message}")]
    Other {
        /// What went wrong.
        message: String,
    },
}

fn found_text(found: Option<u64>) -> String {
    match found {
        Some(v) => format!("version {v}"),
        None => "no live item".into(),
    }
}

fn expected_text(expected: Expect) -> String {
    match expected {
        Expect::Any => "anything".into(),
        Expect::Absent => "absence".into(),
        Expect::Version(v) => format!("version {v}"),
    }
}

/// Where memory items are kept: the contract each store implements, thin on purpose (the
/// rules every store shares, embedding, filters, paging and search by meaning, are in
/// [`Memory`]). Every method works inside one [`Partition`]; an expired item is absent for
/// every method. [`contract::run`] checks a store against it.
#[async_trait]
pub trait MemoryStore: Send + Sync + 'static {
    /// The live item at `key` in `namespace`, if any.
    async fn get(
        &self,
        at: &Partition,
        namespace: &Namespace,
        key: &ItemKey,
    ) -> Result<Option<MemoryItem>, MemoryError>;

    /// Writes the item as `item.expect` allows (else [`MemoryError::VersionConflict`], and
    /// nothing is written); returns its new version. Atomic: a concurrent write of the same
    /// item either sees this one or is seen by it.
    async fn put(
        &self,
        at: &Partition,
        namespace: &Namespace,
        key: &ItemKey,
        item: PutItem,
    ) -> Result<u64, MemoryError>;

    /// Deletes the live item at `key` (only at version `expect`, if given: else
    /// [`MemoryError::VersionConflict`]); whether there was one.
    async fn delete(
        &self,
        at: &Partition,
        namespace: &Namespace,
        key: &ItemKey,
        expect: Option<u64>,
    ) -> Result<bool, MemoryError>;

    /// The live items in `prefix` or below it (all of the partition's when `None`), in
    /// (namespace, key) order.
    async fn scan(
        &self,
        at: &Partition,
        prefix: Option<&Namespace>,
    ) -> Result<Vec<MemoryItem>, MemoryError>;

    /// The live items under `prefix` whose text holds any of `terms` (lowercase words), best
    /// first, at most `limit` (all when `None`).
    async fn search_text(
        &self,
        at: &Partition,
        prefix: Option<&Namespace>,
        terms: &[String],
        limit: Option<usize>,
    ) -> Result<Vec<Hit>, MemoryError>;

    /// The vectors of the live items under `prefix` that have one, with their namespace and
    /// key, in (namespace, key) order: what a search by meaning scores before it reads the
    /// best items whole.
    async fn scan_vectors(
        &self,
        at: &Partition,
        prefix: Option<&Namespace>,
    ) -> Result<Vec<(Namespace, ItemKey, Vec<f32>)>, MemoryError>;

    /// Deletes every expired item of every tenant; how many.
    async fn purge_expired(&self) -> Result<usize, MemoryError>;
}

/// The expiry of a write made at `now_ms` with `ttl` (milliseconds since the epoch).
pub(crate) fn expiry_ms(now_ms: u64, put: &PutItem) -> Option<u64> {
    put.ttl
        .map(|ttl| now_ms.saturating_add(ttl.as_millis().min(u64::MAX as u128) as u64))
}

/// The database error of `operation`.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn database(operation: &'static str) -> impl Fn(sqlx::Error) -> MemoryError {
    move |e| MemoryError::Database {
        operation,
        source: Arc::new(e),
    }
}
