//! Scratch directories: one per test, under the system's temp dir, named after the test's area
//! (its module), the test and the process, so that the tests of one binary, and two test runs at
//! once, never share one.

use std::path::PathBuf;

/// The path of a directory for the test `name` of `area`, emptied of what an earlier run left
/// there and not created (a store creates its own; [`fresh_dir`] creates it).
pub fn temp_dir(area: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agentflow-{area}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// [`temp_dir`], created empty.
pub fn fresh_dir(area: &str, name: &str) -> PathBuf {
    let dir = temp_dir(area, name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
