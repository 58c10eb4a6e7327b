//! The file primitives of the [`FileStore`](super::FileStore): atomic writes (temporary file,
//! fsync, rename, directory fsync), reads with a size limit, opening without following
//! symlinks.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

use crate::store::{unique_token, StoreError};

/// The prefix of temporary files (removed when a store opens, if a crash left them).
pub(super) const TMP_PREFIX: &str = ".tmp-";

pub(super) fn io_error<'a>(
    operation: &'static str,
    id: &'a str,
) -> impl Fn(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        operation,
        id: id.to_owned(),
        source: Arc::new(source),
    }
}

pub(super) fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Opens `path` for reading (or creates it, mode 0600, with `create`), refusing symlinks.
pub(super) fn open_nofollow(path: &Path, create: bool) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(create)
        .create(create)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}

/// Reads `path` (never through a symlink); `Err(size)` inside if it holds more than `limit`
/// bytes (then at most `limit + 1` bytes were read).
pub(super) fn read_limited(path: &Path, limit: u64) -> io::Result<Result<Vec<u8>, u64>> {
    let file = open_nofollow(path, false)?;
    let size = file.metadata()?.len();
    if size > limit {
        return Ok(Err(size));
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Ok(Err(bytes.len() as u64));
    }
    Ok(Ok(bytes))
}

/// Writes `bytes` to `dir/name`: a new temporary file (exclusive, 0600, no symlinks), fsync,
/// rename, directory fsync. On failure the old file stays and the temporary one is removed.
pub(super) fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let (tmp, mut file) = loop {
        let tmp = dir.join(format!("{TMP_PREFIX}{}", unique_token()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&tmp)
        {
            Ok(file) => break (tmp, file),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    };
    let result = (|| {
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, dir.join(name))?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Makes renames and removals in `dir` durable; its errors are reported.
pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The bytes of run `id`'s head, in the file `path` (written once, renamed into place), within
/// `limit` bytes; `None` if the file is gone (the run was deleted or purged).
pub(crate) fn read_head(id: &str, path: &Path, limit: u64) -> Result<Option<Vec<u8>>, StoreError> {
    match read_limited(path, limit) {
        Ok(Ok(bytes)) => Ok(Some(bytes)),
        Ok(Err(size)) => Err(StoreError::TooLarge {
            id: id.to_owned(),
            size,
            limit,
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("read", id)(e)),
    }
}
