//! A skill folder's resources: the files under `scripts/`, `references/` and `assets/`
//! ([`list_resources`]), and the ones its instructions link to ([`linked_resources`]) but it
//! does not have ([`missing_links`]).

use std::path::Path;

use crate::SkillError;

/// The folders of a skill whose files are its resources, read on demand.
pub const RESOURCE_DIRS: [&str; 3] = ["scripts", "references", "assets"];

/// The files under a skill's resource folders, relative to the skill's folder with `/` between
/// parts (`references/forms.md`), sorted. Symbolic links are left out: a resource is a file of
/// the skill's own.
///
/// # Errors
///
/// [`SkillError::Io`] if a resource folder that exists cannot be read.
pub fn list_resources(folder: &Path) -> Result<Vec<String>, SkillError> {
    let io = |path: &Path, source| SkillError::Io {
        folder: folder.to_owned(),
        path: path.to_owned(),
        source,
    };
    let mut out = Vec::new();
    for dir in RESOURCE_DIRS {
        let mut stack = vec![folder.join(dir)];
        while let Some(d) = stack.pop() {
            let entries = match std::fs::read_dir(&d) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io(&d, e)),
            };
            for entry in entries {
                let entry = entry.map_err(|e| io(&d, e))?;
                let kind = entry.file_type().map_err(|e| io(&entry.path(), e))?;
                if kind.is_dir() {
                    stack.push(entry.path());
                } else if kind.is_file() {
                    if let Ok(rel) = entry.path().strip_prefix(folder) {
                        let parts: Vec<String> = rel
                            .components()
                            .map(|c| c.as_os_str().to_string_lossy().into_owned())
                            .collect();
                        out.push(parts.join("/"));
                    }
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The resources the instructions of a skill point to, in the order first written: the target
/// of each Markdown link (`[forms](references/forms.md)`) and each inline code span
/// (`` `scripts/fill.py` ``) whose path starts with `scripts/`, `references/` or `assets/`
/// (a leading `./`, a `#fragment` and arguments after the path are left out). Paths the
/// instructions only mention in prose are not links.
///
/// ```
/// let body = "Read [the guide](./references/guide.md#setup), then run `scripts/fill.py --all`.";
/// assert_eq!(
///     agentweave_skill::linked_resources(body),
///     ["references/guide.md", "scripts/fill.py"]
/// );
/// ```
pub fn linked_resources(instructions: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |candidate: &str| {
        let path = candidate.split_whitespace().next().unwrap_or("");
        let path = path.split('#').next().unwrap_or("");
        let path = path.strip_prefix("./").unwrap_or(path);
        let is_resource = RESOURCE_DIRS.iter().any(|dir| {
            path.strip_prefix(dir)
                .and_then(|rest| rest.strip_prefix('/'))
                .is_some_and(|rest| !rest.is_empty())
        });
        if is_resource && !out.iter().any(|p| p == path) {
            out.push(path.to_owned());
        }
    };
    // Markdown link targets: `](target)`.
    let mut rest = instructions;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            push(rest[..end].trim_matches(['<', '>']));
        }
    }
    // Inline code spans: text between two backticks on one line.
    for line in instructions.lines() {
        let mut parts = line.split('`');
        parts.next();
        while let (Some(code), Some(_)) = (parts.next(), parts.next()) {
            push(code);
        }
    }
    out
}

/// The [`linked_resources`] of `instructions` that are not among `resources` (a skill's files,
/// as [`list_resources`] lists them). A link to a folder (`assets/templates/`) is there when a
/// file under it is.
pub fn missing_links(instructions: &str, resources: &[String]) -> Vec<String> {
    linked_resources(instructions)
        .into_iter()
        .filter(|link| {
            let dir = format!("{}/", link.trim_end_matches('/'));
            !resources.iter().any(|r| r == link || r.starts_with(&dir))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_markdown_targets_and_code_spans_under_the_resource_folders() {
        let body = "# Forms\n1. Read `references/forms.md` and [the map](assets/map.png).\n\
                    2. Run `scripts/fill.py input.pdf`; see also `report.md` and [site](https://x.y).\n\
                    3. Again `references/forms.md`, and the folder `assets/templates/`.\n";
        assert_eq!(
            linked_resources(body),
            [
                "assets/map.png",
                "references/forms.md",
                "scripts/fill.py",
                "assets/templates/"
            ]
        );
    }

    #[test]
    fn a_missing_link_is_one_the_folder_has_no_file_for() {
        let resources = vec![
            "assets/templates/a.txt".to_owned(),
            "references/forms.md".to_owned(),
        ];
        let body = "Read `references/forms.md`, `references/gone.md` and `assets/templates/`.";
        assert_eq!(missing_links(body, &resources), ["references/gone.md"]);
    }
}
