//! A thread's turn lease in the [`FileStore`](super::FileStore): `thread-leases/ID/lease.json`,
//! changed under the directory's `flock` by the front's lease rules
//! ([`Lease`](crate::store::backend::Lease)).

use std::fs;
use std::io;

use super::disk::{read_limited, remove_if_present, sync_dir, thread_io, write_atomically};
use super::locks::lock_run;
use super::FileStore;
use crate::store::backend::{Lease, Value};
use crate::store::thread::validate_thread_id;
use crate::store::ThreadError;

const LEASE: &str = "lease.json";

impl FileStore {
    /// Applies `rule` to thread `id`'s lease on a blocking thread, with its lease directory
    /// locked exclusively (`thread-leases/ID/lock`, the same `flock` the checkpoint histories
    /// use), and writes (or removes) the lease if the rule changed it.
    pub(super) async fn change_lease(
        &self,
        operation: &'static str,
        id: &str,
        rule: impl FnOnce(&mut Option<Lease>) -> Result<((), bool), ThreadError> + Send + 'static,
    ) -> Result<(), ThreadError> {
        validate_thread_id(id)?;
        let root = self.dir.join("thread-leases");
        let id = id.to_owned();
        Self::thread_blocking(operation, &id.clone(), move || {
            let io_err = |e| thread_io(operation, &id, e);
            fs::create_dir_all(&root).map_err(io_err)?;
            let locked = lock_run(&root.join(&id), true, true)
                .map_err(io_err)?
                .ok_or_else(|| io_err(io::Error::other("the lease directory vanished")))?;
            let path = locked.dir.join(LEASE);
            let mut held = match read_limited(&path, 64 * 1024) {
                Ok(Ok(bytes)) => Lease::decode(&id, &bytes).ok(),
                Ok(Err(_)) => None,
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(e) => return Err(io_err(e)),
            };
            let ((), changed) = rule(&mut held)?;
            if changed {
                match held {
                    Some(lease) => write_atomically(&locked.dir, LEASE, &lease.encode()),
                    None => remove_if_present(&path).and_then(|()| sync_dir(&locked.dir)),
                }
                .map_err(io_err)?;
            }
            Ok(())
        })
        .await
    }
}
