//! Compile-time behaviour of `#[agent]` and `flow!`: every misuse fails with its message
//! (`fail/*.stderr`), every supported form compiles (`pass`).
//!
//! Regenerate the expected messages with `TRYBUILD=overwrite cargo test -p agentweave-ui-tests`,
//! then read the diff.
//!
//! The cases build against the facade without its features (this package depends on it with
//! `default-features = false`): rustc's "the following other types implement trait `Agent`"
//! lists every implementor it can see, so the expected messages are those of that build whatever
//! features the rest of the workspace is built with.
//!
//! Skill folders (`skills = ["skills/..."]`) are read relative to the crate being compiled,
//! which for trybuild is the project it generates under the target directory: the fixtures in
//! `skills/` are copied there first, so the cases name them as a user's crate would.

use std::path::Path;

#[test]
fn ui() {
    copy_skill_fixtures();
    let t = trybuild::TestCases::new();
    t.compile_fail("fail/*.rs");
    t.pass("pass/*.rs");
}

/// Copies `skills/` into trybuild's project (`<target>/tests/trybuild/agentweave-ui-tests`),
/// replacing an earlier copy.
fn copy_skill_fixtures() {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory holds `tmp`");
    let project = target.join("tests/trybuild").join(env!("CARGO_PKG_NAME"));
    let to = project.join("skills");
    if to.exists() {
        std::fs::remove_dir_all(&to).expect("remove the old copy of the skill fixtures");
    }
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("skills"), &to);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create a fixture folder");
    for entry in std::fs::read_dir(from).expect("read a fixture folder") {
        let entry = entry.expect("read a fixture entry");
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &to.join(entry.file_name()));
        } else {
            std::fs::copy(&path, to.join(entry.file_name())).expect("copy a fixture file");
        }
    }
}
