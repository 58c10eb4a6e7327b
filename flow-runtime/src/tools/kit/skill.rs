//! One skill: a folder holding a `SKILL.md` (YAML front matter, then Markdown instructions)
//! beside optional `scripts/`, `references/` and `assets/`, as the Agent Skills format lays it
//! out. [`Skill::load`] reads and validates one from its folder, [`Skill::embedded`] from the
//! files `#[agent(skills = ...)]` and `flow!` compiled in; [`SkillError`] says what is wrong and
//! where. The format's rules live in `agentweave_skill`, which the macros check folders with too.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use agentweave_skill::{EmbeddedSkill, SkillDoc};
pub use agentweave_skill::{
    SkillError, MAX_COMPATIBILITY_LEN, MAX_DESCRIPTION_LEN, MAX_NAME_LEN, RESOURCE_DIRS,
};

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

impl Skill {
    /// Reads the skill in `folder`: parses the front matter of its `SKILL.md` (a YAML reader,
    /// unknown fields refused), checks each field against the format's rules (the name is the
    /// folder's name) and lists the files under `scripts/`, `references/` and `assets/`.
    ///
    /// The rules: the name has 1 to 64 lowercase letters, digits and single hyphens and is the
    /// folder's name; the description is not empty and has at most 1,024 characters;
    /// `compatibility` has at most 500; `metadata` maps strings to strings; `allowed-tools` is
    /// one space-separated string; unknown fields are refused; each resource the instructions
    /// link to (`references/forms.md` in a Markdown link or a code span) is in the folder.
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
        skill.resources = agentweave_skill::list_resources(folder)?;
        skill.check_links(&path)?;
        Ok(skill)
    }

    /// Parses the text of a `SKILL.md` found in a folder named `folder_name` (`path` names it
    /// in errors). The skill has no resources and an empty root: [`Skill::load`] fills them.
    ///
    /// # Errors
    ///
    /// As [`Skill::load`], for the file's content.
    pub fn parse(text: &str, folder_name: &str, path: &Path) -> Result<Skill, SkillError> {
        let doc = SkillDoc::parse(text, folder_name, path)?;
        Ok(Skill {
            name: doc.name,
            description: doc.description,
            allowed_tools: doc.allowed_tools,
            license: doc.license,
            compatibility: doc.compatibility,
            metadata: doc.metadata,
            instructions: doc.instructions,
            resources: Vec::new(),
            root: PathBuf::new(),
        })
    }

    /// The skill `#[agent(skills = [...])]` or `flow!` embedded: parsed and checked by the same
    /// rules as [`Skill::load`] (the macros checked them when the crate compiled), its root the
    /// folder as written in the attribute, its resources the embedded files.
    ///
    /// # Errors
    ///
    /// As [`Skill::load`].
    #[doc(hidden)]
    pub fn embedded(skill: &EmbeddedSkill) -> Result<Skill, SkillError> {
        let root = PathBuf::from(skill.folder);
        let mut out = Skill::parse(skill.text, skill.folder_name(), &root.join("SKILL.md"))?;
        out.resources = skill
            .resources
            .iter()
            .map(|(p, _)| (*p).to_owned())
            .collect();
        out.resources.sort();
        out.check_links(&root.join("SKILL.md"))?;
        out.root = root;
        Ok(out)
    }

    /// Refuses instructions that link to a resource the skill does not have.
    fn check_links(&self, path: &Path) -> Result<(), SkillError> {
        match agentweave_skill::missing_links(&self.instructions, &self.resources)
            .into_iter()
            .next()
        {
            Some(resource) => Err(SkillError::MissingResource {
                path: path.to_owned(),
                resource,
            }),
            None => Ok(()),
        }
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
