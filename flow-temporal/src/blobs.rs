//! Payloads by reference: a tool result over a threshold is stored in a [`BlobStore`] by the
//! tool activity, and the workflow's history holds only a reference to it (a line of text,
//! [`Reference`]); the model activity puts the stored text back in the model's input before it
//! calls the model. So a result over Temporal's payload limit (2 MB) never enters a history, and
//! the model still reads all of it.
//!
//! What the thread's events show of such a result is its reference (`agentflow-blob:sha256-…,
//! N bytes`): a client that wants the text reads it from the store by its key.
//!
//! The store is the workers' ([`Flows::store_large_payloads`](crate::Flows::store_large_payloads)):
//! every worker of a task queue must reach the same store (a shared directory for
//! [`FileBlobStore`], or an implementation of the trait over an object store). Keys are the
//! SHA-256 of the content, so a retried activity stores the same blob under the same key.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

/// Where large payloads are kept, by key.
pub trait BlobStore: Send + Sync + fmt::Debug {
    /// Stores `bytes`; gives their key (the same bytes, the same key).
    fn put(&self, bytes: &[u8]) -> Result<String, BlobError>;

    /// The bytes stored under `key`.
    fn get(&self, key: &str) -> Result<Vec<u8>, BlobError>;
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

impl BlobStore for FileBlobStore {
    fn put(&self, bytes: &[u8]) -> Result<String, BlobError> {
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

    fn get(&self, key: &str) -> Result<Vec<u8>, BlobError> {
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
    pub fn store(&self, text: String) -> Result<String, BlobError> {
        if text.len() <= self.threshold {
            return Ok(text);
        }
        let key = self.store.put(text.as_bytes())?;
        Ok(Reference {
            key,
            bytes: text.len(),
        }
        .to_string())
    }

    /// `text` with a reference replaced by the text it stands for.
    pub fn load(&self, text: &str) -> Result<Option<String>, BlobError> {
        let Some(reference) = Reference::parse(text) else {
            return Ok(None);
        };
        let bytes = self.store.get(&reference.key)?;
        Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_text_is_stored_by_reference_and_read_back() {
        let dir = std::env::temp_dir().join(format!("flow-temporal-blobs-{}", std::process::id()));
        let payloads = LargePayloads {
            store: Arc::new(FileBlobStore::new(&dir).unwrap()),
            threshold: 10,
        };
        assert_eq!(payloads.store("short".into()).unwrap(), "short");
        let long = "x".repeat(100);
        let stored = payloads.store(long.clone()).unwrap();
        let reference = Reference::parse(&stored).expect("a reference");
        assert_eq!(reference.bytes, 100);
        assert_eq!(reference.key, key_of(long.as_bytes()));
        assert_eq!(
            payloads.load(&stored).unwrap().as_deref(),
            Some(long.as_str())
        );
        assert_eq!(payloads.load("short").unwrap(), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_or_bad_key_says_so() {
        let dir =
            std::env::temp_dir().join(format!("flow-temporal-blobs-m-{}", std::process::id()));
        let store = FileBlobStore::new(&dir).unwrap();
        let missing = store.get(&key_of(b"never stored")).unwrap_err();
        assert!(matches!(missing, BlobError::Missing { .. }), "{missing}");
        let bad = store.get("../etc/passwd").unwrap_err();
        assert!(matches!(bad, BlobError::BadKey(_)), "{bad}");
        assert!(Reference::parse("agentflow-blob:../x, 3 bytes").is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
