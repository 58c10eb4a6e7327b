//! Where the file tools keep files: the [`FileBackend`] contract and its two backends,
//! [`ThreadFiles`] (the default: the thread's own values, so files carry across turns and a
//! fork or a recovered turn sees exactly what was written up to its point) and [`JailedDir`]
//! (a real directory; every path is checked to stay under its root: no absolute paths, no `..`,
//! no symbolic link anywhere on the way).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use crate::llm::tool::ToolContext;

/// The session value (a thread value) holding [`ThreadFiles`]' files.
pub const THREAD_FILES_KEY: &str = "kit.files";
/// The largest file a backend stores, in bytes.
pub const MAX_FILE_BYTES: usize = 1024 * 1024;

/// Why a file operation did not happen: the text is what the model is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    /// The path is not one the backend accepts (outside its root, a link, malformed).
    #[error("path `{path}` refused: {reason}")]
    Refused {
        /// The path as given.
        path: String,
        /// Why.
        reason: &'static str,
    },
    /// No file at that path.
    #[error("no file `{0}`")]
    NotFound(String),
    /// The file is too large, or the store failed.
    #[error("{0}")]
    Failed(String),
}

/// A place the file tools read and write, by relative paths with `/` separators.
pub trait FileBackend: Send + Sync + fmt::Debug + 'static {
    /// Every file under `dir` (`""` for all), as paths from the root, sorted.
    ///
    /// # Errors
    ///
    /// [`FileError`] if `dir` is refused or cannot be listed.
    fn list(&self, cx: &ToolContext, dir: &str) -> Result<Vec<String>, FileError>;
    /// The file's text.
    ///
    /// # Errors
    ///
    /// [`FileError::NotFound`], or the path refused.
    fn read(&self, cx: &ToolContext, path: &str) -> Result<String, FileError>;
    /// Writes the file, replacing what was there.
    ///
    /// # Errors
    ///
    /// [`FileError`] if the path is refused, the text too large or the write fails.
    fn write(&self, cx: &ToolContext, path: &str, text: &str) -> Result<(), FileError>;

    /// Whether the files live in the run's session values (the thread's), and nowhere else:
    /// then a recovered run writes them again by running its journaled writes again (see
    /// [`Tool::session_only`](crate::Tool::session_only)). Default `false`.
    fn in_session(&self) -> bool {
        false
    }
}

/// `path` as normal components (`a/b.txt`), or why it is refused: empty, absolute, or with
/// `..`.
pub fn normalize(path: &str) -> Result<String, FileError> {
    let refused = |reason| FileError::Refused {
        path: path.to_owned(),
        reason,
    };
    if path.starts_with('/') || path.starts_with('\\') || Path::new(path).is_absolute() {
        return Err(refused(
            "absolute paths are not allowed: give a path relative to the root",
        ));
    }
    let mut parts = Vec::new();
    for c in Path::new(path).components() {
        match c {
            Component::Normal(p) => parts.push(
                p.to_str()
                    .ok_or_else(|| refused("the path is not valid UTF-8"))?
                    .to_owned(),
            ),
            Component::CurDir => {}
            Component::ParentDir => return Err(refused("`..` is not allowed")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(refused(
                    "absolute paths are not allowed: give a path relative to the root",
                ))
            }
        }
    }
    Ok(parts.join("/"))
}

/// Files kept in the thread's values (the default backend).
#[derive(Debug, Clone, Copy, Default)]
pub struct ThreadFiles;

impl ThreadFiles {
    /// The files kept in `session`, by path.
    pub fn of(session: &crate::session::Session) -> BTreeMap<String, String> {
        session
            .value::<BTreeMap<String, String>>(THREAD_FILES_KEY)
            .ok()
            .flatten()
            .unwrap_or_default()
    }
}

impl FileBackend for ThreadFiles {
    fn in_session(&self) -> bool {
        true
    }

    fn list(&self, cx: &ToolContext, dir: &str) -> Result<Vec<String>, FileError> {
        let dir = if dir.is_empty() {
            String::new()
        } else {
            normalize(dir)?
        };
        Ok(ThreadFiles::of(cx.run_context().session())
            .into_keys()
            .filter(|p| dir.is_empty() || p.starts_with(&format!("{dir}/")))
            .collect())
    }

    fn read(&self, cx: &ToolContext, path: &str) -> Result<String, FileError> {
        let path = normalize(path)?;
        ThreadFiles::of(cx.run_context().session())
            .remove(&path)
            .ok_or(FileError::NotFound(path))
    }

    fn write(&self, cx: &ToolContext, path: &str, text: &str) -> Result<(), FileError> {
        let path = normalize(path)?;
        if path.is_empty() {
            return Err(FileError::Refused {
                path,
                reason: "give a file name",
            });
        }
        if text.len() > MAX_FILE_BYTES {
            return Err(FileError::Failed(format!(
                "`{path}` would have {} bytes, more than {MAX_FILE_BYTES}",
                text.len()
            )));
        }
        let session = cx.run_context().session();
        let mut files = ThreadFiles::of(session);
        files.insert(path, text.to_owned());
        session
            .set_value(THREAD_FILES_KEY, &files)
            .map_err(|e| FileError::Failed(e.to_string()))
    }
}

/// A real directory, every path checked to stay under its root.
#[derive(Debug, Clone)]
pub struct JailedDir {
    root: PathBuf,
}

impl JailedDir {
    /// The directory `root` (it must exist; it is resolved once, here).
    ///
    /// # Errors
    ///
    /// If `root` does not exist or is not a directory.
    pub fn new(root: impl AsRef<Path>) -> std::io::Result<JailedDir> {
        let root = root.as_ref().canonicalize()?;
        if !root.is_dir() {
            return Err(std::io::Error::other(format!(
                "`{}` is not a directory",
                root.display()
            )));
        }
        Ok(JailedDir { root })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The real path of `path` under the root: refused if absolute, with `..`, or if any
    /// existing part of it is a symbolic link (which could lead out of the root).
    ///
    /// # Errors
    ///
    /// [`FileError::Refused`] saying which rule the path breaks.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, FileError> {
        let normal = normalize(path)?;
        let mut at = self.root.clone();
        for part in normal.split('/').filter(|p| !p.is_empty()) {
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(FileError::Refused {
                        path: path.to_owned(),
                        reason: "symbolic links are not followed",
                    })
                }
                _ => {}
            }
        }
        Ok(at)
    }
}

impl FileBackend for JailedDir {
    fn list(&self, _cx: &ToolContext, dir: &str) -> Result<Vec<String>, FileError> {
        let start = self.resolve(dir)?;
        let mut out = Vec::new();
        let mut stack = vec![start];
        while let Some(d) = stack.pop() {
            let entries = match std::fs::read_dir(&d) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(FileError::Failed(e.to_string())),
            };
            for entry in entries.flatten() {
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    stack.push(entry.path());
                } else if kind.is_file() {
                    if let Ok(rel) = entry.path().strip_prefix(&self.root) {
                        out.push(rel.to_string_lossy().replace('\\', "/"));
                    }
                }
            }
        }
        out.sort();
        Ok(out)
    }

    fn read(&self, _cx: &ToolContext, path: &str) -> Result<String, FileError> {
        let real = self.resolve(path)?;
        match std::fs::read(&real) {
            Ok(bytes) if bytes.len() > MAX_FILE_BYTES => Err(FileError::Failed(format!(
                "`{path}` has {} bytes, more than {MAX_FILE_BYTES}",
                bytes.len()
            ))),
            Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(FileError::NotFound(path.to_owned()))
            }
            Err(e) => Err(FileError::Failed(format!("cannot read `{path}`: {e}"))),
        }
    }

    fn write(&self, _cx: &ToolContext, path: &str, text: &str) -> Result<(), FileError> {
        let real = self.resolve(path)?;
        if real == self.root {
            return Err(FileError::Refused {
                path: path.to_owned(),
                reason: "give a file name",
            });
        }
        if text.len() > MAX_FILE_BYTES {
            return Err(FileError::Failed(format!(
                "`{path}` would have {} bytes, more than {MAX_FILE_BYTES}",
                text.len()
            )));
        }
        if let Some(parent) = real.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| FileError::Failed(format!("cannot create `{path}`'s folder: {e}")))?;
        }
        std::fs::write(&real, text)
            .map_err(|e| FileError::Failed(format!("cannot write `{path}`: {e}")))
    }
}
