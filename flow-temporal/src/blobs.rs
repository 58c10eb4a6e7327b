//! Payloads by reference: a tool result or a model reply over a threshold is stored in a
//! [`BlobStore`] by its activity, and the workflow's history holds only a reference to it (a
//! line of text, [`Reference`]); the model activity puts the stored text back in the model's
//! input before it calls the model. So a result over Temporal's payload limit (2 MB) never
//! enters a history, and the model still reads all of it.
//!
//! What the thread's events show of such a result is its reference (`agentflow-blob:sha256-…,
//! N bytes`): a client that wants the text reads it from the store by its key.
//!
//! The store is the workers' ([`Flows::store_large_payloads`](crate::Flows::store_large_payloads)):
//! every worker of a task queue must reach the same store: a shared directory for
//! [`FileBlobStore`], one database file for `SqliteBlobStore` (feature `sqlite`, part of
//! `sdk`: workers on one machine, or on a shared volume), or an implementation of the trait
//! over an object store. Keys are the SHA-256 of the content, so a retried activity stores the
//! same blob under the same key.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentweave_core::async_trait;
use sha2::{Digest, Sha256};

/// Where large payloads are kept, by key.
#[async_trait]
pub trait BlobStore: Send + Sync + fmt::Debug {
    /// Stores `bytes`; gives their key ([`key_of`]: the same bytes, the same key).
    async fn put(&self, bytes: &[u8]) -> Result<String, BlobError>;

    /// The bytes stored under `key`.
    async fn get(&self, key: &str) -> Result<Vec<u8>, BlobError>;
}

/// A blob store failed.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// No blob under that key.
    #[error(
        "no blob '{key}' in the blob store at {store}: every worker of a task queue must reach \
         the same store"
    )]
    Missing {
        /// The key.
        key: String,
        /// Where the store is.
        store: String,
    },
    /// A key that is not one of this store's (`sha256-` and 64 hex digits).
    #[error("'{0}' is not a blob key (sha256- and 64 hex digits)")]
    BadKey(String),
    /// Reading or writing failed.
    #[error("the blob store at {store} failed to {action} '{key}': {source}")]
    Io {
        /// Where the store is.
        store: String,
        /// read or write.
        action: &'static str,
        /// The key.
        key: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The database of a `SqliteBlobStore` failed.
    #[error("the blob store at {store} failed to {action} '{key}': {message}")]
    Database {
        /// Where the store is.
        store: String,
        /// open, read or write.
        action: &'static str,
        /// The key (empty when opening).
        key: String,
        /// What the database said.
        message: String,
    },
}

/// The key of `bytes`: `sha256-` and the hex of their SHA-256.
pub fn key_of(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut key = String::with_capacity(7 + 64);
    key.push_str("sha256-");
    for byte in digest {
        key.push_str(&format!("{byte:02x}"));
    }
    key
}

fn check_key(key: &str) -> Result<(), BlobError> {
    let hex = key.strip_prefix("sha256-").unwrap_or("");
    if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(BlobError::BadKey(key.chars().take(80).collect()))
    }
}

/// A blob store in a directory, one file a blob named by its key (written to a temporary file
/// then renamed, so a reader never sees half a blob).
#[derive(Debug, Clone)]
pub struct FileBlobStore {
    dir: PathBuf,
}

impl FileBlobStore {
    /// The store in `dir` (created if missing).
    pub fn new(dir: impl Into<PathBuf>) -> std::io::Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)?;
        Ok(FileBlobStore { dir })
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn io(&self, action: &'static str, key: &str, source: std::io::Error) -> BlobError {
        BlobError::Io {
            store: self.dir.display().to_string(),
            action,
            key: key.to_owned(),
            source,
        }
    }
}

#[async_trait]
impl BlobStore for FileBlobStore {
    async fn put(&self, bytes: &[u8]) -> Result<String, BlobError> {
        let key = key_of(bytes);
        let path = self.dir.join(&key);
        if path.exists() {
            return Ok(key);
        }
        let partial = self
            .dir
            .join(format!("{key}.{}.partial", std::process::id()));
        std::fs::write(&partial, bytes).map_err(|e| self.io("write", &key, e))?;
        std::fs::rename(&partial, &path).map_err(|e| self.io("write", &key, e))?;
        Ok(key)
    }

    async fn get(&self, key: &str) -> Result<Vec<u8>, BlobError> {
        check_key(key)?;
        std::fs::read(self.dir.join(key)).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => BlobError::Missing {
                key: key.to_owned(),
                store: self.dir.display().to_string(),
            },
            _ => self.io("read", key, e),
        })
    }
}

/// A blob store in one SQLite file (a table `agentflow_blobs`, key and bytes), opened through
/// sqlx with a bundled SQLite: the workers of one machine (or of a shared volume that SQLite's
/// locking works on) share it. Feature `sqlite` (part of `sdk`).
///
/// ```no_run
/// # async fn demo() -> Result<(), agentweave_temporal::BlobError> {
/// use agentweave_temporal::{BlobStore, SqliteBlobStore};
///
/// let store = SqliteBlobStore::open("blobs.db").await?;
/// let key = store.put(b"a long tool result").await?;
/// assert_eq!(store.get(&key).await?, b"a long tool result");
/// # Ok(()) }
/// ```
#[cfg(feature = "sqlite")]
#[derive(Debug, Clone)]
pub struct SqliteBlobStore {
    pool: sqlx::SqlitePool,
    path: Arc<str>,
}

#[cfg(feature = "sqlite")]
impl SqliteBlobStore {
    /// The store in the SQLite file at `path` (created, with its table, if missing).
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, BlobError> {
        use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
        let path = path.as_ref();
        let shown: Arc<str> = Arc::from(path.display().to_string());
        let failed = |e: sqlx::Error| BlobError::Database {
            store: shown.to_string(),
            action: "open",
            key: String::new(),
            message: e.to_string(),
        };
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(std::time::Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .map_err(failed)?;
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS agentflow_blobs (key TEXT PRIMARY KEY, bytes BLOB NOT NULL)",
        )
        .execute(&pool)
        .await
        .map_err(failed)?;
        Ok(SqliteBlobStore { pool, path: shown })
    }

    fn failed(&self, action: &'static str, key: &str, e: sqlx::Error) -> BlobError {
        BlobError::Database {
            store: self.path.to_string(),
            action,
            key: key.to_owned(),
            message: e.to_string(),
        }
    }
}

#[cfg(feature = "sqlite")]
#[async_trait]
impl BlobStore for SqliteBlobStore {
    async fn put(&self, bytes: &[u8]) -> Result<String, BlobError> {
        let key = key_of(bytes);
        sqlx::query("INSERT OR IGNORE INTO agentflow_blobs (key, bytes) VALUES (?, ?)")
            .bind(&key)
            .bind(bytes)
            .execute(&self.pool)
            .await
            .map_err(|e| self.failed("write", &key, e))?;
        Ok(key)
    }

    async fn get(&self, key: &str) -> Result<Vec<u8>, BlobError> {
        check_key(key)?;
        let row: Option<(Vec<u8>,)> =
            sqlx::query_as("SELECT bytes FROM agentflow_blobs WHERE key = ?")
                .bind(key)
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| self.failed("read", key, e))?;
        row.map(|(bytes,)| bytes).ok_or_else(|| BlobError::Missing {
            key: key.to_owned(),
            store: self.path.to_string(),
        })
    }
}

/// The text that stands for a stored payload in a workflow's history:
/// `agentflow-blob:KEY, N bytes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The blob's key.
    pub key: String,
    /// Its size in bytes.
    pub bytes: usize,
}

const PREFIX: &str = "agentflow-blob:";

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PREFIX}{}, {} bytes", self.key, self.bytes)
    }
}

impl Reference {
    /// The reference `text` is, if it is one.
    pub fn parse(text: &str) -> Option<Reference> {
        let rest = text.strip_prefix(PREFIX)?;
        let (key, size) = rest.split_once(", ")?;
        let bytes = size.strip_suffix(" bytes")?.parse().ok()?;
        check_key(key).ok()?;
        Some(Reference {
            key: key.to_owned(),
            bytes,
        })
    }
}

/// The workers' large-payload policy: payloads over `threshold` bytes go to `store`.
#[derive(Debug, Clone)]
pub struct LargePayloads {
    /// Where they go.
    pub store: Arc<dyn BlobStore>,
    /// The largest payload kept in history, in bytes.
    pub threshold: usize,
}

impl LargePayloads {
    /// `text` as it enters history: itself, or its [`Reference`] once stored when it is over
    /// the threshold.
    pub async fn store(&self, text: String) -> Result<String, BlobError> {
        if text.len() <= self.threshold {
            return Ok(text);
        }
        let key = self.store.put(text.as_bytes()).await?;
        Ok(Reference {
            key,
            bytes: text.len(),
        }
        .to_string())
    }

    /// `text` with a reference replaced by the text it stands for.
    pub async fn load(&self, text: &str) -> Result<Option<String>, BlobError> {
        let Some(reference) = Reference::parse(text) else {
            return Ok(None);
        };
        let bytes = self.store.get(&reference.key).await?;
        Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A text over the threshold goes to `store` as a reference and comes back whole; a short
    /// one stays itself.
    async fn round_trip(store: Arc<dyn BlobStore>) {
        let payloads = LargePayloads {
            store,
            threshold: 10,
        };
        assert_eq!(payloads.store("short".into()).await.unwrap(), "short");
        let long = "x".repeat(100);
        let stored = payloads.store(long.clone()).await.unwrap();
        let reference = Reference::parse(&stored).expect("a reference");
        assert_eq!(reference.bytes, 100);
        assert_eq!(reference.key, key_of(long.as_bytes()));
        assert_eq!(
            payloads.store(long.clone()).await.unwrap(),
            stored,
            "stored again (a retried activity): the same reference"
        );
        assert_eq!(
            payloads.load(&stored).await.unwrap().as_deref(),
            Some(long.as_str())
        );
        assert_eq!(payloads.load("short").await.unwrap(), None);
    }

    /// A key never stored is `Missing`, a key that is not one `BadKey`.
    async fn refusals(store: &dyn BlobStore) {
        let missing = store.get(&key_of(b"never stored")).await.unwrap_err();
        assert!(matches!(missing, BlobError::Missing { .. }), "{missing}");
        let bad = store.get("../etc/passwd").await.unwrap_err();
        assert!(matches!(bad, BlobError::BadKey(_)), "{bad}");
    }

    #[tokio::test]
    async fn a_large_text_is_stored_by_reference_and_read_back() {
        let dir =
            std::env::temp_dir().join(format!("agentweave-temporal-blobs-{}", std::process::id()));
        round_trip(Arc::new(FileBlobStore::new(&dir).unwrap())).await;
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn a_missing_or_bad_key_says_so() {
        let dir = std::env::temp_dir().join(format!(
            "agentweave-temporal-blobs-m-{}",
            std::process::id()
        ));
        refusals(&FileBlobStore::new(&dir).unwrap()).await;
        assert!(Reference::parse("agentflow-blob:../x, 3 bytes").is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn the_sqlite_store_keeps_blobs_by_key_across_openings() {
        let dir = std::env::temp_dir().join(format!(
            "agentweave-temporal-blobs-s-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("blobs.db");
        let store = SqliteBlobStore::open(&path).await.unwrap();
        round_trip(Arc::new(store.clone())).await;
        refusals(&store).await;
        let key = store.put(b"kept").await.unwrap();
        drop(store);
        let again = SqliteBlobStore::open(&path).await.unwrap();
        assert_eq!(again.get(&key).await.unwrap(), b"kept");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn a_sqlite_store_that_cannot_open_says_where() {
        let e = SqliteBlobStore::open("/proc/no-such-dir/blobs.db")
            .await
            .unwrap_err();
        let text = e.to_string();
        assert!(
            matches!(e, BlobError::Database { action: "open", .. }),
            "{text}"
        );
        assert!(text.contains("/proc/no-such-dir/blobs.db"), "{text}");
    }
}
