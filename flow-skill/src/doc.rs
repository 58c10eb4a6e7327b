//! [`SkillDoc`]: the text of a `SKILL.md` (YAML front matter, then Markdown instructions),
//! parsed and checked against the format's rules.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::SkillError;

/// The longest skill name the format allows.
pub const MAX_NAME_LEN: usize = 64;
/// The longest description the format allows.
pub const MAX_DESCRIPTION_LEN: usize = 1024;
/// The longest `compatibility` note the format allows.
pub const MAX_COMPATIBILITY_LEN: usize = 500;

/// A `SKILL.md`, parsed and valid: the front matter's fields and the instructions after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDoc {
    /// The skill's name (the folder's name): lowercase letters, digits and single hyphens.
    pub name: String,
    /// What the skill does and when to use it, trimmed.
    pub description: String,
    /// `allowed-tools`, split on white space, if the skill restricts the tools.
    pub allowed_tools: Option<Vec<String>>,
    /// `license`, if given.
    pub license: Option<String>,
    /// `compatibility`, if given.
    pub compatibility: Option<String>,
    /// `metadata`: free string keys and values.
    pub metadata: BTreeMap<String, String>,
    /// The instructions: the text after the front matter, without its leading blank lines.
    pub instructions: String,
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

impl SkillDoc {
    /// Parses the text of a `SKILL.md` found in a folder named `folder_name` (`path` names the
    /// file in errors).
    ///
    /// The rules: the text opens with a `---` line, the YAML front matter and a closing `---`
    /// line; unknown fields are refused; the name has 1 to 64 lowercase letters, digits and
    /// single hyphens and is the folder's name; the description is not empty and has at most
    /// 1,024 characters; `compatibility` has at most 500; `metadata` maps strings to strings;
    /// `allowed-tools` is one space-separated string.
    ///
    /// # Errors
    ///
    /// [`SkillError::NoFrontMatter`], [`SkillError::FrontMatter`] or [`SkillError::Invalid`],
    /// naming `path`, the field and what to write.
    pub fn parse(text: &str, folder_name: &str, path: &Path) -> Result<SkillDoc, SkillError> {
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
                    format!("is longer than {MAX_COMPATIBILITY_LEN} characters: shorten it"),
                ));
            }
        }
        let allowed_tools = front
            .allowed_tools
            .map(|s| s.split_whitespace().map(str::to_owned).collect());
        Ok(SkillDoc {
            name,
            description: description.trim().to_owned(),
            allowed_tools,
            license: front.license,
            compatibility: front.compatibility,
            metadata: front.metadata,
            instructions: body.trim_start_matches(['\r', '\n']).to_owned(),
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<SkillDoc, SkillError> {
        SkillDoc::parse(text, "pdf-forms", Path::new("pdf-forms/SKILL.md"))
    }

    #[test]
    fn reads_every_field_of_the_front_matter() {
        let doc = parse(
            "---\nname: pdf-forms\ndescription: Fills PDF forms.\nlicense: Apache-2.0\n\
             compatibility: needs python3\nallowed-tools: read_file run_skill_script\n\
             metadata:\n  author: agentflow\n  version: \"1.0\"\n---\n\n# Forms\nStep one.\n",
        )
        .unwrap();
        assert_eq!(doc.name, "pdf-forms");
        assert_eq!(doc.description, "Fills PDF forms.");
        assert_eq!(doc.license.as_deref(), Some("Apache-2.0"));
        assert_eq!(doc.compatibility.as_deref(), Some("needs python3"));
        assert_eq!(
            doc.allowed_tools,
            Some(vec!["read_file".to_owned(), "run_skill_script".to_owned()])
        );
        assert_eq!(doc.metadata["version"], "1.0");
        assert_eq!(doc.instructions, "# Forms\nStep one.\n");
    }

    #[test]
    fn refuses_what_the_format_forbids_naming_the_file_and_the_field() {
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
                "folder is `pdf-forms`",
            ),
            ("---\nname: pdf-forms\n---\n", "`description` is missing"),
            (
                "---\nname: pdf-forms\ndescription: x\nauthor: me\n---\n",
                "unknown field",
            ),
            ("---\nname: pdf-forms\ndescription: [a\n---\n", "not valid"),
        ];
        for (text, expected) in cases {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(expected), "{text:?}: {err}");
            assert!(err.contains("pdf-forms/SKILL.md"), "{err}");
        }
    }
}
