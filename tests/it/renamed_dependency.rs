//! `#[agent]` in a crate that renamed the `agentweave` dependency
//! (`af = { package = "agentweave", ... }`) and did not say `crate = af`: one error, on the
//! attribute, saying what to write; nothing about a missing `agentweave`. trybuild's test crate
//! cannot rename its dependency, so this compiles a small crate of its own
//! (`tests/fixtures/renamed_dependency.rs`) the way cargo compiles a renamed dependency:
//! `rustc --extern af=<the facade's rlib>`, with `CARGO_MANIFEST_DIR` pointing at a manifest
//! that renames it (the macros read the dependency's name there). The facade is the one this
//! test binary was built against, so nothing is compiled but the fixture.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The facade's rlib next to this test binary (`target/debug/deps`), the newest if the
/// directory holds builds with several feature sets (any of them has the same macros).
fn facade_rlib(deps: &Path) -> PathBuf {
    std::fs::read_dir(deps)
        .expect("the test binary's directory is readable")
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("libagentweave-") && name.ends_with(".rlib")
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .map(|e| e.path())
        .expect("libagentweave-*.rlib is next to the test binary (cargo built it for this test)")
}

#[test]
fn agent_without_crate_in_a_crate_that_renamed_the_facade_says_what_to_write() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("target/debug/deps");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("renamed_dependency");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"renamed-dependency-fixture\"\nversion = \"0.0.0\"\n\
         edition = \"2021\"\npublish = false\n\n[workspace]\n\n[dependencies]\n\
         af = {{ package = \"agentweave\", path = {:?}, default-features = false }}\n",
        root.display().to_string()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::copy(
        root.join("tests/fixtures/renamed_dependency.rs"),
        dir.join("src/main.rs"),
    )
    .unwrap();

    let mut extern_af = std::ffi::OsString::from("af=");
    extern_af.push(facade_rlib(deps));
    let mut search = std::ffi::OsString::from("dependency=");
    search.push(deps);
    let out = Command::new("rustc")
        .args(["--edition", "2021", "--crate-type", "bin"])
        .args(["--crate-name", "renamed_dependency_fixture"])
        .args(["--error-format", "short", "--emit", "metadata"])
        .arg("--extern")
        .arg(extern_af)
        .arg("-L")
        .arg(search)
        .arg("--out-dir")
        .arg(dir.join("out"))
        .arg("src/main.rs")
        .current_dir(&dir)
        .env("CARGO_MANIFEST_DIR", &dir)
        .env("CARGO_PKG_NAME", "renamed-dependency-fixture")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("rustc runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the fixture compiled:\n{stderr}");

    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("error") && !l.starts_with("error: aborting due to"))
        .collect();
    assert_eq!(errors.len(), 1, "expected one error, got:\n{stderr}");
    let error = errors[0];
    assert!(
        error.starts_with("src/main.rs:7:1: error: "),
        "the error points at `#[agent(transfers = [refund])]` on `triage`: {error}"
    );
    assert!(
        error.contains("renames the `agentweave` dependency to `af`")
            && error.contains("`#[agent(crate = af)]`"),
        "the error says what to write: {error}"
    );
    assert!(!stderr.contains("cannot find"), "{stderr}");
    assert!(!stderr.contains("unresolved"), "{stderr}");
}
