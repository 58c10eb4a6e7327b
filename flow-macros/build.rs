//! Detects whether the compiler has `proc_macro::Span::local_file` (Rust 1.88), which the
//! rustdoc picture of a flow uses to read the agents declared beside it; on an older compiler
//! (the crate supports 1.80) the picture shows agents by their identifiers.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-check-cfg=cfg(agentflow_local_file)");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let Ok(out) = Command::new(rustc).arg("--version").output() else {
        return;
    };
    let version = String::from_utf8_lossy(&out.stdout);
    // "rustc 1.95.0 (...)": the minor version.
    let minor = version
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.split('.').nth(1))
        .and_then(|m| m.parse::<u32>().ok());
    if minor.is_some_and(|m| m >= 88) {
        println!("cargo:rustc-cfg=agentflow_local_file");
    }
}
