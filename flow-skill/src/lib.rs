//! The Agent Skills format as agentflow reads it, in one place for both of its readers: the
//! runtime's loader (`agentweave::kit::Skill::load`, at run time) and the `#[agent(skills = ...)]`
//! and `flow!` macros (at compile time). A rule written here holds on both routes, so a folder
//! the compiler accepts is one the runtime loads, and the other way round.
//!
//! - `error`: [`SkillError`], what is wrong with a skill folder and what to change.
//! - `doc`: [`SkillDoc`], the text of a `SKILL.md` parsed and validated ([`SkillDoc::parse`]).
//! - `folder`: a skill folder's resources ([`list_resources`]) and the ones its instructions
//!   link to that it does not have ([`missing_links`]).
//! - `tools`: which `allowed-tools` entries name no tool of the agent ([`unknown_tools`]).
//! - `embedded`: [`EmbeddedSkill`], a skill folder's files as the macros embed them in a binary.
//!
//! ```
//! use agentweave_skill::SkillDoc;
//! use std::path::Path;
//!
//! let text = "---\nname: pdf-forms\ndescription: Fills PDF forms.\n---\nRead `references/forms.md`.\n";
//! let doc = SkillDoc::parse(text, "pdf-forms", Path::new("pdf-forms/SKILL.md")).unwrap();
//! assert_eq!(doc.name, "pdf-forms");
//! assert_eq!(agentweave_skill::linked_resources(&doc.instructions), ["references/forms.md"]);
//! ```

mod doc;
mod embedded;
mod error;
mod folder;
mod tools;

pub use doc::{SkillDoc, MAX_COMPATIBILITY_LEN, MAX_DESCRIPTION_LEN, MAX_NAME_LEN};
pub use embedded::EmbeddedSkill;
pub use error::SkillError;
pub use folder::{linked_resources, list_resources, missing_links, RESOURCE_DIRS};
pub use tools::{unknown_tools, SKILL_TOOLS};
