//! A thread's turn lease in the [`FileStore`](super::FileStore): `thread-leases/ID/lease.json`,
//! changed under the directory's `flock`.

use std::fs;
use std::io;
use std::path::Path;
use std::time::Duration;

use super::disk::thread_io;
use super::disk::{now_ms, read_limited, write_atomically};
use super::locks::lock_run;
use super::FileStore;
use crate::store::thread::validate_thread_id;
use crate::store::ThreadError;

/// A thread's turn lease, as `thread-leases/ID/lease.json` holds it.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct LeaseFile {
    pub(super) owner: String,
    pub(super) until_ms: u64,
}

pub(super) const LEASE: &str = "lease.json";

impl FileStore {
    /// Runs `f` on a blocking thread with thread `id`'s lease directory locked exclusively
    /// (`thread-leases/ID/lock`, the same `flock` the checkpoint histories use) and its lease.
    pub(super) async fn with_lease<T: Send + 'static>(
        &self,
        operation: &'static str,
        id: &str,
        f: impl FnOnce(&Path, Option<LeaseFile>) -> Result<T, ThreadError> + Send + 'static,
    ) -> Result<T, ThreadError> {
        validate_thread_id(id)?;
        let root = self.dir.join("thread-leases");
        let id = id.to_owned();
        Self::thread_blocking(operation, &id.clone(), move || {
            let io_err = |e| thread_io(operation, &id, e);
            fs::create_dir_all(&root).map_err(io_err)?;
            let locked = lock_run(&root.join(&id), true, true)
                .map_err(io_err)?
                .ok_or_else(|| io_err(io::Error::other("the lease directory vanished")))?;
            let current = match read_limited(&locked.dir.join(LEASE), 64 * 1024) {
                Ok(Ok(bytes)) => serde_json::from_slice(&bytes).ok(),
                Ok(Err(_)) => None,
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(e) => return Err(io_err(e)),
            };
            f(&locked.dir, current)
        })
        .await
    }
}

/// Writes `owner`'s lease of `lease` from now into the locked lease directory `dir`.
pub(super) fn write_lease(
    id: &str,
    dir: &Path,
    owner: &str,
    lease: Duration,
) -> Result<(), ThreadError> {
    let file = LeaseFile {
        owner: owner.to_owned(),
        until_ms: crate::store::memory::lease_end(now_ms(), lease),
    };
    let bytes =
        serde_json::to_vec(&file).map_err(|e| thread_io("lease", id, io::Error::other(e)))?;
    write_atomically(dir, LEASE, &bytes).map_err(|e| thread_io("lease", id, e))
}
