//! [`SkillError`]: why a skill folder cannot be loaded, naming the folder or file and the fix.

use std::path::PathBuf;

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
    /// The instructions link to a resource (`references/forms.md`) the folder does not have.
    #[error("`{}`: the instructions link to `{resource}`, which is not in the skill's folder: \
             add the file there or remove the link", path.display())]
    MissingResource {
        /// The `SKILL.md` file.
        path: PathBuf,
        /// The resource as the instructions write it, relative to the skill's folder.
        resource: String,
    },
}
