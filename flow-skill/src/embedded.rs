//! [`EmbeddedSkill`]: a skill folder's files compiled into a binary.

/// A skill folder as `#[agent(skills = [...])]` and `flow!` embed it: the path written in the
/// attribute, the text of its `SKILL.md` and each resource's bytes. The macros check the folder
/// when the crate compiles and emit one of these with `include_str!` and `include_bytes!`, so
/// cargo rebuilds the crate when a file changes; the runtime makes a skill of it
/// (`agentweave::kit::Skill::embedded`) exactly as it would load the folder.
#[derive(Debug, Clone, Copy)]
pub struct EmbeddedSkill {
    /// The folder as written in the attribute, relative to the crate's `Cargo.toml`
    /// (`skills/release-notes`); its last part is the skill's name.
    pub folder: &'static str,
    /// The text of `SKILL.md`.
    pub text: &'static str,
    /// Each resource: its path relative to the folder (`references/style.md`) and its bytes,
    /// sorted by path.
    pub resources: &'static [(&'static str, &'static [u8])],
}

impl EmbeddedSkill {
    /// The skill's folder name: the last part of [`folder`](EmbeddedSkill::folder).
    pub fn folder_name(&self) -> &'static str {
        let folder = self.folder.trim_end_matches('/');
        folder.rsplit('/').next().unwrap_or(folder)
    }

    /// The bytes of the resource at `path` (relative to the folder), if it has one.
    pub fn resource(&self, path: &str) -> Option<&'static [u8]> {
        self.resources
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, bytes)| *bytes)
    }
}
