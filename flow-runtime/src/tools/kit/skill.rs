//! One skill: a folder holding a `SKILL.md` (YAML front matter, then Markdown instructions)
//! beside optional `scripts/`, `references/` and `assets/`, as the Agent Skills format lays it
//! out. [`Skill::load`] reads and validates one; [`SkillError`] says what is wrong and where.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The folders of a skill whose files are its resources, read on demand.
pub const RESOURCE_DIRS: [&str; 3] = ["scripts", "references", "assets"];

/// The longest skill name the format allows.
pub const MAX_NAME_LEN: usize = 64;
/// The longest description the format allows.
pub const MAX_DESCRIPTION_LEN: usize = 1024;
/// The longest `compatibility` note the format allows.
pub const MAX_COMPATIBILITY_LEN: usize = 500;

/// A skill loaded from its folder: the front matter's fields, the instructions (the body of
/// `SKILL.md`) and the paths of its resources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// The skill's name (the folder's name): lowercase letters, digits and single hyphens.
    pub name: String,
    /// What the skill does and when to use it: the line the agent sees in its catalog.
    pub description: String,
    /// The tools the agent may call while the skill is active (`allowed-tools`), if the skill
    /// restricts them.
    pub allowed_tools: Option<Vec<String>>,
    /// The skill's license, if given.
    pub license: Option<String>,
    /// What the skill needs of its environment, if given (`compatibility`).
    pub compatibility: Option<String>,
    /// Free key-value facts about the skill (`metadata`).
    pub metadata: BTreeMap<String, String>,
    /// The instructions: `SKILL.md` after its front matter.
    pub instructions: String,
    /// The skill's resources, as paths relative to its folder (`scripts/fill.py`,
    /// `references/forms.md`), sorted.
    pub resources: Vec<String>,
    /// The skill's folder.
    pub root: PathBuf,
}

/// Why a skill folder could not be loaded. Each names the skill's folder (or `SKILL.md`) and
/// what to change.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// The folder or one of its files could not be read.
    #[error("skill folder `{}`: cannot read `{}`: {source}", folder.display(), path.display())]
    Io {
        /// The skill's folder.
        folder: PathBuf,
        /// The path that failed.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// `SKILL.md` does not open with a front matter block between two `---` lines.
    #[error("`{}`: no front matter: the file must open with a `---` line, the YAML fields \
             (`name`, `description`, ...), and a closing `---` line", path.display())]
    NoFrontMatter {
        /// The `SKILL.md` file.
        path: PathBuf,
    },
    /// The front matter is not YAML of the expected shape.
    #[error("`{}`: the front matter is not valid: {message}", path.display())]
    FrontMatter {
        /// The `SKILL.md` file.
        path: PathBuf,
        /// What the YAML reader said (the field and line where it stopped).
        message: String,
    },
    /// A field's value breaks the format's rules.
    #[error("`{}`: `{field}` {problem}", path.display())]
    Invalid {
        /// The `SKILL.md` file.
        path: PathBuf,
        /// The front matter field.
        field: &'static str,
        /// What is wrong and what to write.
        problem: String,
    },
}

/// The front matter's fields as written (`allowed-tools` is one space-separated string).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
    license: Option<String>,
    compatibility: Option<String>,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
    #[serde(rename = "allowed-tools")]
    allowed_tools: Option<String>,
}

impl Skill {
    /// Reads the skill in `folder`: parses the front matter of its `SKILL.md` (a YAML reader,
    /// unknown fields refused), checks each field against the format's rules (the name is the
    /// folder's name) and lists the files under `scripts/`, `references/` and `assets/`.
    ///
    /// The rules: the name has 1 to 64 lowercase letters, digits and single hyphens and is the
    /// folder's name; the description is not empty and has at most 1,024 characters;
    /// `compatibility` has at most 500; `metadata` maps strings to strings; `allowed-tools` is
    /// one space-separated string; unknown fields are refused.
    ///
    /// # Errors
    ///
    /// A [`SkillError`] naming the file and the field, with what to write.
    pub fn load(folder: impl AsRef<Path>) -> Result<Skill, SkillError> {
        let folder = folder.as_ref();
        let path = folder.join("SKILL.md");
        let text = std::fs::read_to_string(&path).map_err(|source| SkillError::Io {
            folder: folder.to_owned(),
            path: path.clone(),
            source,
        })?;
        let folder_name = folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut skill = Skill::parse(&text, &folder_name, &path)?;
        skill.root = folder.to_owned();
        skill.resources = list_resources(folder)?;
        Ok(skill)
    }

    /// Parses the text of a `SKILL.md` found in a folder named `folder_name` (`path` names it
    /// in errors). The skill has no resources and an empty root: [`Skill::load`] fills them.
    ///
    /// # Errors
    ///
    /// As [`Skill::load`], for the file's content.
    pub fn parse(text: &str, folder_name: &str, path: &Path) -> Result<Skill, SkillError> {
        let (yaml, body) = split_front_matter(text).ok_or_else(|| SkillError::NoFrontMatter {
            path: path.to_owned(),
        })?;
        let front: FrontMatter =
            serde_norway::from_str(yaml).map_err(|e| SkillError::FrontMatter {
                path: path.to_owned(),
                message: e.to_string(),
            })?;
        let invalid = |field, problem: String| SkillError::Invalid {
            path: path.to_owned(),
            field,
            problem,
        };
        let name = front.name.ok_or_else(|| {
            invalid(
                "name",
                format!("is missing: add `name: {folder_name}` (the folder's name)"),
            )
        })?;
        if let Some(problem) = name_problem(&name) {
            return Err(invalid("name", problem));
        }
        if name != folder_name {
            return Err(invalid(
                "name",
                format!(
                    "is `{name}` but the skill's folder is `{folder_name}`: a skill is named by \
                     its folder; rename one of the two"
                ),
            ));
        }
        let description = front.description.unwrap_or_default();
        if description.trim().is_empty() {
            return Err(invalid(
                "description",
                "is missing or empty: say what the skill does and when to use it (the agent \
                 chooses skills by it)"
                    .to_owned(),
            ));
        }
        if description.chars().count() > MAX_DESCRIPTION_LEN {
            return Err(invalid(
                "description",
                format!(
                    "has {} characters, more than the {MAX_DESCRIPTION_LEN} allowed: shorten \
                     it and move details into the instructions",
                    description.chars().count()
                ),
            ));
        }
        if let Some(c) = &front.compatibility {
            if c.chars().count() > MAX_COMPATIBILITY_LEN {
                return Err(invalid(
                    "compatibility",
                    format!("is longer than {MAX_COMPATIBILITY_LEN} characters"),
                ));
            }
        }
        let allowed_tools = front.allowed_tools.map(|s| {
            s.split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<String>>()
        });
        Ok(Skill {
            name,
            description: description.trim().to_owned(),
            allowed_tools,
            license: front.license,
            compatibility: front.compatibility,
            metadata: front.metadata,
            instructions: body.trim_start_matches(['\r', '\n']).to_owned(),
            resources: Vec::new(),
            root: PathBuf::new(),
        })
    }

    /// The tools named in `allowed-tools` that are not among `available` (an agent's tool
    /// names): what [`Skills::check_tools`](super::Skills::check_tools) reports.
    pub fn unknown_tools<'a>(&'a self, available: &[&str]) -> Vec<&'a str> {
        self.allowed_tools
            .iter()
            .flatten()
            .map(String::as_str)
            .filter(|t| !available.contains(t))
            .collect()
    }
}

impl fmt::Display for Skill {
    /// The skill's catalog line: `name: description`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name, self.description)
    }
}

/// What is wrong with a skill name, if anything (the format's rules).
fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Some(format!("`{name}` must have 1 to {MAX_NAME_LEN} characters"));
    }
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !ok_chars || name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Some(format!(
            "`{name}` may hold only lowercase letters, digits and single hyphens, not at either \
             end (as in `pdf-forms`)"
        ));
    }
    None
}

/// The front matter's YAML and the body after it, if the text opens with a `---` line and has
/// a closing one.
fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// The files under a skill's resource folders, relative to the skill's folder, sorted.
/// Symbolic links are left out: a resource is a file of the skill's own.
fn list_resources(folder: &Path) -> Result<Vec<String>, SkillError> {
    let mut out = Vec::new();
    for dir in RESOURCE_DIRS {
        let mut stack = vec![folder.join(dir)];
        while let Some(d) = stack.pop() {
            let entries = match std::fs::read_dir(&d) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(source) => {
                    return Err(SkillError::Io {
                        folder: folder.to_owned(),
                        path: d,
                        source,
                    })
                }
            };
            for entry in entries {
                let entry = entry.map_err(|source| SkillError::Io {
                    folder: folder.to_owned(),
                    path: d.clone(),
                    source,
                })?;
                let kind = entry.file_type().map_err(|source| SkillError::Io {
                    folder: folder.to_owned(),
                    path: entry.path(),
                    source,
                })?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Skill, SkillError> {
        Skill::parse(text, "pdf-forms", Path::new("pdf-forms/SKILL.md"))
    }

    #[test]
    fn reads_every_field_of_the_front_matter() {
        let skill = parse(
            "---\nname: pdf-forms\ndescription: Fills PDF forms. Use when a form must be filled.\n\
             license: Apache-2.0\ncompatibility: needs python3\nallowed-tools: read_file run_skill_script\n\
             metadata:\n  author: agentflow\n  version: \"1.0\"\n---\n\n# Filling forms\nStep one.\n",
        )
        .unwrap();
        assert_eq!(skill.name, "pdf-forms");
        assert_eq!(
            skill.description,
            "Fills PDF forms. Use when a form must be filled."
        );
        assert_eq!(skill.license.as_deref(), Some("Apache-2.0"));
        assert_eq!(skill.compatibility.as_deref(), Some("needs python3"));
        assert_eq!(
            skill.allowed_tools,
            Some(vec!["read_file".to_owned(), "run_skill_script".to_owned()])
        );
        assert_eq!(skill.metadata["version"], "1.0");
        assert_eq!(skill.instructions, "# Filling forms\nStep one.\n");
        assert_eq!(
            skill.to_string(),
            "pdf-forms: Fills PDF forms. Use when a form must be filled."
        );
    }

    #[test]
    fn refuses_what_the_format_forbids_naming_the_field() {
        let cases = [
            ("# no front matter\n", "no front matter"),
            ("---\nname: pdf-forms\n", "no front matter"),
            ("---\ndescription: x\n---\n", "`name` is missing"),
            ("---\nname: PDF\ndescription: x\n---\n", "lowercase letters"),
            (
                "---\nname: pdf--forms\ndescription: x\n---\n",
                "single hyphens",
            ),
            (
                "---\nname: other\ndescription: x\n---\n",
                "the skill's folder is `pdf-forms`",
            ),
            ("---\nname: pdf-forms\n---\n", "`description` is missing"),
            (
                "---\nname: pdf-forms\ndescription: x\nauthor: me\n---\n",
                "unknown field `author`",
            ),
            (
                "---\nname: pdf-forms\ndescription: [a\n---\n",
                "front matter is not valid",
            ),
            (
                "---\nname: pdf-forms\ndescription: x\nmetadata: 3\n---\n",
                "front matter is not valid",
            ),
        ];
        for (text, expected) in cases {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(expected), "{text:?}: {err}");
            assert!(err.contains("pdf-forms/SKILL.md"), "{err}");
        }
        let long = format!(
            "---\nname: pdf-forms\ndescription: {}\n---\n",
            "x".repeat(1025)
        );
        assert!(parse(&long)
            .unwrap_err()
            .to_string()
            .contains("more than the 1024"));
    }
}
