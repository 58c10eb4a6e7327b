//! [`FileStore`]: one file per checkpoint in a directory.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;

use super::{validate_id, CheckpointStore, StoreError};

/// The durable default: one file per checkpoint in a directory.
///
/// A write goes to a temporary file in the same directory, is flushed to disk (`fsync`), then
/// renamed over the old file, and the directory is synced: a checkpoint is either wholly
/// written or not at all, even if the process dies half-way.
///
/// ```no_run
/// use flow_runtime::FileStore;
/// let store = FileStore::new("checkpoints").unwrap();
/// # let _ = store;
/// ```
#[derive(Debug, Clone)]
pub struct FileStore {
    dir: Arc<PathBuf>,
}

/// The directory [`FileStore::open_default`] uses when `AGENTFLOW_CHECKPOINT_DIR` is not set.
pub const DEFAULT_CHECKPOINT_DIR: &str = ".agentflow/checkpoints";

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl FileStore {
    /// A store in `dir`, created if it does not exist.
    pub fn new(dir: impl AsRef<Path>) -> io::Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        fs::create_dir_all(&dir)?;
        Ok(FileStore { dir: Arc::new(dir) })
    }

    /// The store in `$AGENTFLOW_CHECKPOINT_DIR`, or in [`DEFAULT_CHECKPOINT_DIR`] under the
    /// current directory.
    pub fn open_default() -> io::Result<Self> {
        match std::env::var_os("AGENTFLOW_CHECKPOINT_DIR") {
            Some(dir) => Self::new(dir),
            None => Self::new(DEFAULT_CHECKPOINT_DIR),
        }
    }

    /// The directory the checkpoints are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_of(&self, id: &str) -> Result<PathBuf, StoreError> {
        validate_id(id)?;
        Ok(self.dir.join(format!("{id}.ckpt")))
    }

    async fn blocking<T: Send + 'static>(
        operation: &'static str,
        id: &str,
        f: impl FnOnce() -> io::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let io_error = |source: io::Error| StoreError::Io {
            operation,
            id: id.to_owned(),
            source: Arc::new(source),
        };
        match tokio::task::spawn_blocking(f).await {
            Ok(result) => result.map_err(io_error),
            Err(join) => Err(io_error(io::Error::other(join.to_string()))),
        }
    }
}

fn write_atomically(dir: &Path, target: &Path, bytes: &[u8]) -> io::Result<()> {
    let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".tmp-{}-{n}", std::process::id()));
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, target)?;
        // Make the rename itself durable.
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[async_trait]
impl CheckpointStore for FileStore {
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.path_of(id)?;
        Self::blocking("read", id, move || match fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        })
        .await
    }

    async fn set(&self, id: &str, bytes: Vec<u8>) -> Result<(), StoreError> {
        let path = self.path_of(id)?;
        let dir = Arc::clone(&self.dir);
        Self::blocking("write", id, move || write_atomically(&dir, &path, &bytes)).await
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        let path = self.path_of(id)?;
        Self::blocking("delete", id, move || match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        })
        .await
    }
}
