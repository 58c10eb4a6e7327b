//! Generated code is clean under the strictest common lints of the user's crate:
//! `tests/fixtures/strict_lints.rs`, a library using every feature of the DSL (agent fns of
//! each signature, struct agents, payloads, results, task and single-turn nodes, `no_parent`,
//! context policies, `runtime`, `dyn` and `remote` nodes, workflows, `trajectory!`), is built
//! with clippy under `#![deny(warnings, let_underscore_drop, unused_qualifications,
//! missing_docs, unreachable_pub, clippy::pedantic)]`, as its own crate (lints such as
//! `missing_docs` only apply to a library's public items), offline, against this workspace and
//! its lock file, in `target/tmp` (its target directory shared with the fixture of
//! `tests/it/dsl_svg_browser.rs`, which depends on agentflow the same way: the dependencies are
//! checked once for both).

use std::path::Path;
use std::process::Command;

#[test]
fn generated_code_passes_strict_lints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("strict_lints");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"strict-lints-fixture\"\nversion = \"0.0.0\"\n\
         edition = \"2021\"\npublish = false\n\n[workspace]\n\n[dependencies]\n\
         agentweave = {{ path = {:?}, default-features = false }}\n\
         serde = {{ version = \"1\", features = [\"derive\"] }}\n\
         schemars = \"1\"\n",
        root.display().to_string()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::copy(
        root.join("tests/fixtures/strict_lints.rs"),
        dir.join("src/lib.rs"),
    )
    .unwrap();
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args([
            "clippy",
            "--offline",
            "--quiet",
            "--message-format",
            "short",
        ])
        .current_dir(&dir)
        .env(
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("fixtures_target"),
        )
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("warning"),
        "the fixture does not pass its lints:\n{stderr}"
    );
}
