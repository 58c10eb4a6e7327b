//! `#[agent]` in a crate that renamed the `agentflow` dependency
//! (`af = { package = "agentflow", ... }`) and did not say `crate = af`: one error, on the
//! attribute, saying what to write; nothing about a missing `agentflow`. trybuild's test crate
//! cannot rename its dependency, so this builds a small crate of its own
//! (`tests/fixtures/renamed_dependency.rs`) with `cargo check --offline`, against this
//! workspace and its lock file, in `target/tmp`.

use std::path::Path;
use std::process::Command;

#[test]
fn agent_without_crate_in_a_crate_that_renamed_agentflow_says_what_to_write() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("renamed_dependency");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"renamed-dependency-fixture\"\nversion = \"0.0.0\"\n\
         edition = \"2021\"\npublish = false\n\n[workspace]\n\n[dependencies]\n\
         af = {{ package = \"agentflow\", path = {:?}, default-features = false }}\n",
        root.display().to_string()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::copy(
        root.join("tests/fixtures/renamed_dependency.rs"),
        dir.join("src/main.rs"),
    )
    .unwrap();
    // The workspace's lock, so the offline build picks the versions already fetched.
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(["check", "--offline", "--quiet", "--message-format", "short"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the fixture compiled:\n{stderr}");

    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("error") && !l.starts_with("error: could not compile"))
        .collect();
    assert_eq!(errors.len(), 1, "expected one error, got:\n{stderr}");
    let error = errors[0];
    assert!(
        error.starts_with("src/main.rs:7:1: error: "),
        "the error points at `#[agent(transfers = [refund])]` on `triage`: {error}"
    );
    assert!(
        error.contains("renames the `agentflow` dependency to `af`")
            && error.contains("`#[agent(crate = af)]`"),
        "the error says what to write: {error}"
    );
    assert!(!stderr.contains("cannot find"), "{stderr}");
    assert!(!stderr.contains("unresolved"), "{stderr}");
}
