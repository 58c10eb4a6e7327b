//! Which name the `agentweave` facade has in the crate being compiled, read from its
//! `Cargo.toml`, so that `#[agent]` written without `crate = ...` in a crate that renamed the
//! dependency (`af = { package = "agentweave", ... }`) says what to write instead of failing
//! with "cannot find `agentweave`".
//!
//! Only the dependency tables matter, so this reads them with a small line scanner rather than
//! a TOML parser: the `toml` crates need a newer compiler than this workspace's
//! `rust-version` and would be compiled into every user's build of the macros. A manifest it
//! cannot read only means no hint (the generated code then names `::agentweave`, as before).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The facade's package name.
const FACADE: &str = "agentweave";

/// One entry of a dependency table.
#[derive(Debug, Default, PartialEq)]
struct Dep {
    /// `package = "..."`, if the entry renames its package.
    package: Option<String>,
    /// `workspace = true`: the entry is inherited from the workspace's dependency table.
    workspace: bool,
}

/// The name (as a Rust identifier) under which the crate being compiled depends on `agentweave`,
/// if it renamed the dependency and has no dependency called `agentweave`; `None` otherwise, or
/// when the manifest cannot be read.
pub(crate) fn renamed_facade() -> Option<String> {
    if std::env::var("CARGO_PKG_NAME").ok().as_deref() == Some(FACADE) {
        return None; // the facade itself, which names itself `agentweave`
    }
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    static CACHE: Mutex<BTreeMap<PathBuf, Option<String>>> = Mutex::new(BTreeMap::new());
    let mut cache = CACHE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    cache
        .entry(dir.clone())
        .or_insert_with(|| find(&dir))
        .clone()
}

/// Reads the manifest in `dir` (and, for inherited entries, the workspace's above it).
fn find(dir: &Path) -> Option<String> {
    let deps = dependencies(&std::fs::read_to_string(dir.join("Cargo.toml")).ok()?);
    if deps.contains_key(FACADE) {
        return None;
    }
    let workspace = || {
        dir.ancestors().skip(1).find_map(|d| {
            let text = std::fs::read_to_string(d.join("Cargo.toml")).ok()?;
            text.lines()
                .any(|l| l.trim() == "[workspace]")
                .then(|| dependencies(&text))
        })
    };
    let mut inherited = None;
    for (key, dep) in &deps {
        let package = if dep.workspace {
            let ws = inherited.get_or_insert_with(|| workspace().unwrap_or_default());
            ws.get(key).and_then(|d| d.package.clone())
        } else {
            dep.package.clone()
        };
        if package.as_deref() == Some(FACADE) {
            return Some(key.replace('-', "_"));
        }
    }
    None
}

/// Every entry of every dependency table of a manifest (`[dependencies]`, `[dev-dependencies]`,
/// `[build-dependencies]`, their `[target.'...'.*]` forms and `[workspace.dependencies]`), by
/// key, in the inline form (`af = { package = "agentweave" }`), the dotted form
/// (`af.package = "agentweave"`) and the table form (`[dependencies.af]`).
fn dependencies(manifest: &str) -> BTreeMap<String, Dep> {
    let mut deps: BTreeMap<String, Dep> = BTreeMap::new();
    // The current table: `Some(None)` a dependency table, `Some(Some(key))` one entry's table.
    let mut table: Option<Option<String>> = None;
    for line in manifest.lines() {
        let line = strip_comment(line).trim();
        if line.starts_with('[') {
            table = None;
            if line.starts_with("[[") {
                continue;
            }
            let header = line.trim_start_matches('[').trim_end_matches(']');
            let segments = split_key(header);
            let n = segments.len();
            if n >= 1 && is_dependency_table(&segments[n - 1]) {
                table = Some(None);
            } else if n >= 2 && is_dependency_table(&segments[n - 2]) {
                let key = segments[n - 1].clone();
                deps.entry(key.clone()).or_default();
                table = Some(Some(key));
            }
            continue;
        }
        let Some(current) = &table else { continue };
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = split_key(key);
        let value = value.trim();
        match current {
            None => {
                let Some(name) = key.first() else { continue };
                let dep = deps.entry(name.clone()).or_default();
                match key.get(1).map(String::as_str) {
                    None if value.starts_with('{') => {
                        let inner = value.trim_start_matches('{').trim_end_matches('}');
                        for field in inner.split(',') {
                            if let Some((k, v)) = field.split_once('=') {
                                set(dep, k.trim(), v.trim());
                            }
                        }
                    }
                    Some(field) => set(dep, field, value),
                    None => {}
                }
            }
            Some(name) => {
                if let Some(field) = key.first() {
                    set(deps.entry(name.clone()).or_default(), field, value);
                }
            }
        }
    }
    deps
}

/// Records the field `field = value` of a dependency entry.
fn set(dep: &mut Dep, field: &str, value: &str) {
    match field.trim_matches(|c| c == '"' || c == '\'') {
        "package" => dep.package = Some(value.trim_matches(|c| c == '"' || c == '\'').to_owned()),
        "workspace" => dep.workspace = value == "true",
        _ => {}
    }
}

fn is_dependency_table(segment: &str) -> bool {
    matches!(
        segment,
        "dependencies"
            | "dev-dependencies"
            | "build-dependencies"
            | "dev_dependencies"
            | "build_dependencies"
    )
}

/// `target.'cfg(unix)'.dependencies` -> `["target", "cfg(unix)", "dependencies"]`.
fn split_key(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote = None;
    for c in key.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => quote = Some(c),
            (None, '.') => out.push(std::mem::take(&mut current)),
            (None, c) if c.is_whitespace() => {}
            (None, c) => current.push(c),
        }
    }
    out.push(current);
    out
}

/// The line up to a `#` that is not inside a string.
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, '#') => return &line[..i],
            _ => {}
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn renamed(manifest: &str) -> Option<String> {
        let deps = dependencies(manifest);
        if deps.contains_key(FACADE) {
            return None;
        }
        deps.into_iter()
            .find(|(_, d)| d.package.as_deref() == Some(FACADE))
            .map(|(k, _)| k.replace('-', "_"))
    }

    #[test]
    fn finds_a_renamed_facade_in_every_form() {
        let inline = "[package]\nname = \"x\"\n\n[dependencies]\nserde = \"1\"\naf = { package = \"agentweave\", path = \"../agentweave\" } # renamed\n";
        assert_eq!(renamed(inline).as_deref(), Some("af"));
        let dotted =
            "[dev-dependencies]\nmy-flow.package = \"agentweave\"\nmy-flow.version = \"0.1\"\n";
        assert_eq!(renamed(dotted).as_deref(), Some("my_flow"));
        let table =
            "[target.'cfg(unix)'.dependencies.af]\nversion = \"0.1\"\npackage = 'agentweave'\n";
        assert_eq!(renamed(table).as_deref(), Some("af"));
        let workspace =
            "[workspace]\n[workspace.dependencies]\naf = { package = \"agentweave\" }\n";
        assert_eq!(
            dependencies(workspace)["af"].package.as_deref(),
            Some("agentweave")
        );
        let inherited = "[dependencies]\naf = { workspace = true }\nother.workspace = true\n";
        assert!(dependencies(inherited)["af"].workspace);
        assert!(dependencies(inherited)["other"].workspace);
    }

    #[test]
    fn no_hint_when_the_facade_keeps_its_name() {
        assert_eq!(renamed("[dependencies]\nagentweave = \"0.1\"\n"), None);
        assert_eq!(
            renamed("[dependencies]\nagentweave = { path = \"..\" }\naf = { package = \"agentweave\", path = \"..\" }\n"),
            None
        );
        assert_eq!(renamed("[dependencies]\nserde = \"1\"\n"), None);
        // A `package` key outside the dependency tables is not a rename.
        assert_eq!(
            renamed("[package]\nname = \"af\"\n[features]\npackage = \"agentweave\"\n"),
            None
        );
        assert_eq!(
            renamed("# af = { package = \"agentweave\" }\n[dependencies]\n"),
            None
        );
    }
}
