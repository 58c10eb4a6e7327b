//! A set of skills an agent is given ([`Skills`]) and their progressive disclosure as tools:
//! level 1, one catalog line per skill in the agent's instruction ([`Skills::catalog`]);
//! level 2, the skill's instructions when the model calls `load_skill`, which also makes the
//! skill active for the rest of the run; level 3, a resource file on demand
//! (`read_skill_resource`). While an active skill declares `allowed-tools`, the agent's other
//! tools, wrapped by [`Skills::guard`], refuse calls outside that list with a tool error the
//! model sees.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::script::{script_tool, ScriptPolicy};
use super::skill::{Skill, SkillError};
use crate::llm::tool::{parse_arguments, schema_for, Tool, ToolContext, ToolError};
use crate::model::ToolDefinition;
use agentweave_skill::EmbeddedSkill;

/// The name of the tool that loads a skill's instructions.
pub const LOAD_SKILL_TOOL_NAME: &str = "load_skill";
/// The name of the tool that reads one of a skill's resources.
pub const READ_SKILL_RESOURCE_TOOL_NAME: &str = "read_skill_resource";
/// The session value that lists the skills loaded in this run (framework-owned: one run's).
pub const ACTIVE_SKILLS_KEY: &str = "agentflow.kit.active_skills";
/// The largest resource `read_skill_resource` returns, in bytes (the rest is cut, and the
/// result says so).
pub const MAX_RESOURCE_BYTES: usize = 64 * 1024;

/// The skills of an agent.
///
/// The agent sees a skill in three steps, each only when it asks for it: the catalog
/// ([`Skills::catalog`], one line per skill, for the instruction); the instructions, when the
/// model calls `load_skill` (the body of its `SKILL.md` and the list of its files; the skill is
/// then active for the rest of the run); a resource, when it calls `read_skill_resource` with a
/// listed path of a loaded skill (up to 64 KiB; `..`, absolute paths and links out of the
/// folder reach nothing). What each level costs, for the two skills of
/// `flow-runtime/tests/fixtures/skills` in OpenAI's o200k tokenizer (each text counted as one
/// message; `cargo test -p agentweave-runtime --features tiktoken --test kit each_level` holds these
/// numbers):
///
/// | level | what the model gets | tokens |
/// | --- | --- | --- |
/// | 1, always | one catalog line: `release-notes` / `report-writer` | 29 / 20 |
/// | 1, always | the catalog: the preamble and one line per skill (2 skills) | 98 |
/// | 2, on `load_skill` | `release-notes`' instructions and its list of files | 85 |
/// | 3, on `read_skill_resource` | `references/style.md` | 26 |
/// | (not disclosed) | both folders whole (every `SKILL.md` and file) up front | 266 |
///
/// While a loaded skill declares `allowed-tools`, the agent may call only those tools (and the
/// skill tools): tools wrapped with [`Skills::guard`] refuse any other call, and the model reads
/// why. With several restricting skills loaded, a tool any of them allows may be called.
///
/// ```
/// use agentweave_runtime::kit::Skills;
/// let dir = std::env::temp_dir().join(format!("skills-doc-{}", std::process::id()));
/// std::fs::create_dir_all(dir.join("release-notes")).unwrap();
/// std::fs::write(
///     dir.join("release-notes/SKILL.md"),
///     "---\nname: release-notes\ndescription: Writes release notes from a changelog.\n---\nRead the changelog first.\n",
/// )
/// .unwrap();
/// let skills = Skills::load_dir(&dir).unwrap();
/// assert!(skills.catalog().contains("- release-notes: Writes release notes from a changelog."));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Debug, Clone, Default)]
pub struct Skills {
    skills: Arc<[Skill]>,
    scripts: Option<ScriptPolicy>,
    /// The files of the skills compiled into the binary, by skill name: their resources are
    /// read from here, not from the disk.
    embedded: Arc<BTreeMap<String, EmbeddedSkill>>,
}

impl Skills {
    /// The given skills (their names must be distinct).
    ///
    /// # Errors
    ///
    /// [`SkillError::Invalid`] if two skills share a name.
    pub fn new(skills: impl IntoIterator<Item = Skill>) -> Result<Skills, SkillError> {
        let mut skills: Vec<Skill> = skills.into_iter().collect();
        skills.sort_by(|a, b| a.name.cmp(&b.name));
        if let Some(w) = skills.windows(2).find(|w| w[0].name == w[1].name) {
            return Err(SkillError::Invalid {
                path: w[1].root.join("SKILL.md"),
                field: "name",
                problem: format!(
                    "`{}` is also the name of the skill in `{}`: give each skill its own name",
                    w[1].name,
                    w[0].root.display()
                ),
            });
        }
        Ok(Skills {
            skills: skills.into(),
            scripts: None,
            embedded: Arc::default(),
        })
    }

    /// The skills `#[agent(skills = [...])]` or a `flow!` node embedded (what
    /// `AgentSpec::SKILLS` and `FlowNode::skills` give): each made by [`Skill::embedded`], so the
    /// catalog, the instructions and the resources are those [`Skills::load_dir`] gives for the
    /// same folders; resources are read from the binary.
    ///
    /// # Errors
    ///
    /// As [`Skills::new`] and [`Skill::embedded`] (the macros checked the folders when the
    /// crate compiled, so only two skills of one name in a list fail here).
    pub fn from_embedded(skills: &[EmbeddedSkill]) -> Result<Skills, SkillError> {
        let mut out = Skills::new(
            skills
                .iter()
                .map(Skill::embedded)
                .collect::<Result<Vec<_>, _>>()?,
        )?;
        out.embedded = Arc::new(
            skills
                .iter()
                .map(|e| (e.folder_name().to_owned(), *e))
                .collect(),
        );
        Ok(out)
    }

    /// The skills the agent type `A` declares with `#[agent(skills = [...])]`, checked and
    /// embedded when the crate compiled ([`Skills::from_embedded`] of `A::SKILLS`).
    ///
    /// # Errors
    ///
    /// As [`Skills::from_embedded`].
    pub fn of<A: crate::AgentSpec>() -> Result<Skills, SkillError> {
        Skills::from_embedded(A::SKILLS)
    }

    /// Every skill under `root`: each sub-folder holding a `SKILL.md` (others are skipped).
    ///
    /// # Errors
    ///
    /// The first [`SkillError`] of a skill that does not load, or of `root` itself.
    pub fn load_dir(root: impl AsRef<Path>) -> Result<Skills, SkillError> {
        let root = root.as_ref();
        let io = |path: &Path, source| SkillError::Io {
            folder: root.to_owned(),
            path: path.to_owned(),
            source,
        };
        let mut folders = Vec::new();
        for entry in std::fs::read_dir(root).map_err(|e| io(root, e))? {
            let entry = entry.map_err(|e| io(root, e))?;
            let path = entry.path();
            if entry.file_type().map_err(|e| io(&path, e))?.is_dir()
                && path.join("SKILL.md").is_file()
            {
                folders.push(path);
            }
        }
        folders.sort();
        Skills::new(
            folders
                .iter()
                .map(Skill::load)
                .collect::<Result<Vec<_>, _>>()?,
        )
    }

    /// The same skills, with `run_skill_script` among their tools, running scripts as
    /// `policy` allows: by default each run waits for a human's approval, and the script may
    /// write only in its skill's folder (see [`ScriptPolicy`]). Without this, skills' scripts
    /// are resources the model may read, not run.
    pub fn with_scripts(mut self, policy: ScriptPolicy) -> Skills {
        self.scripts = Some(policy);
        self
    }

    /// The skills, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter()
    }

    /// The skill named `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// Level 1 of the disclosure: the text to add to the agent's instruction, one line per
    /// skill (its name and description), and how to load one. Empty without skills.
    pub fn catalog(&self) -> String {
        if self.skills.is_empty() {
            return String::new();
        }
        let mut out = format!(
            "You have skills: folders of instructions for particular tasks. When a task \
             matches a skill, call `{LOAD_SKILL_TOOL_NAME}` with its name first and follow \
             what it says; read the files it mentions with `{READ_SKILL_RESOURCE_TOOL_NAME}`.\n\
             Skills:\n"
        );
        for skill in self.skills.iter() {
            out.push_str("- ");
            out.push_str(&skill.to_string());
            out.push('\n');
        }
        out
    }

    /// The disclosure tools: `load_skill`, `read_skill_resource`, and `run_skill_script` if
    /// [`with_scripts`](Skills::with_scripts) allowed it.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(SkillTool {
                skills: self.clone(),
                kind: Kind::Load,
            }),
            Arc::new(SkillTool {
                skills: self.clone(),
                kind: Kind::Read,
            }),
        ];
        if let Some(policy) = &self.scripts {
            tools.push(script_tool(self.clone(), policy.clone()));
        }
        tools
    }

    /// Whether `name` is one of the disclosure tools (always callable, whatever skill is
    /// active).
    pub fn is_skill_tool(name: &str) -> bool {
        name == LOAD_SKILL_TOOL_NAME
            || name == READ_SKILL_RESOURCE_TOOL_NAME
            || name == super::script::RUN_SKILL_SCRIPT_TOOL_NAME
    }

    /// Checks each skill's `allowed-tools` against the tools an agent has (`available`, the
    /// disclosure tools count as available): an entry naming no tool is refused, since it
    /// would allow nothing.
    ///
    /// # Errors
    ///
    /// [`SkillError::Invalid`] naming the skill, the unknown tools and the agent's tools.
    pub fn check_tools(&self, available: &[&str]) -> Result<(), SkillError> {
        for skill in self.skills.iter() {
            let unknown = agentweave_skill::unknown_tools(
                skill.allowed_tools.as_deref().unwrap_or(&[]),
                available,
            );
            if !unknown.is_empty() {
                return Err(SkillError::Invalid {
                    path: skill.root.join("SKILL.md"),
                    field: "allowed-tools",
                    problem: format!(
                        "names {} that the agent does not have; its tools are: {}. Remove \
                         them or give the agent those tools",
                        unknown
                            .iter()
                            .map(|t| format!("`{t}`"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        available.join(", ")
                    ),
                });
            }
        }
        Ok(())
    }

    /// `tool`, refusing calls while an active skill's `allowed-tools` leaves it out. Give the
    /// agent its tools through this (the disclosure tools need no guard).
    pub fn guard(&self, tool: Arc<dyn Tool>) -> Arc<dyn Tool> {
        Arc::new(Guarded {
            skills: self.clone(),
            inner: tool,
        })
    }

    /// The skills loaded so far in the run of `cx`, in the order loaded.
    pub fn active(cx: &ToolContext) -> Vec<String> {
        cx.run_context()
            .session()
            .value::<Vec<String>>(ACTIVE_SKILLS_KEY)
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    /// Why `tool` may not be called now, if an active skill restricts the tools.
    fn refusal(&self, cx: &ToolContext, tool: &str) -> Option<String> {
        let active = Skills::active(cx);
        let restricting: Vec<&Skill> = active
            .iter()
            .filter_map(|n| self.get(n))
            .filter(|s| s.allowed_tools.is_some())
            .collect();
        if restricting.is_empty() || Skills::is_skill_tool(tool) {
            return None;
        }
        let allowed: BTreeSet<&str> = restricting
            .iter()
            .flat_map(|s| s.allowed_tools.iter().flatten().map(String::as_str))
            .collect();
        if allowed.contains(tool) {
            return None;
        }
        let names: Vec<String> = restricting
            .iter()
            .map(|s| format!("`{}`", s.name))
            .collect();
        Some(format!(
            "`{tool}` is not allowed while skill {} is active; the tools it allows are: {}",
            names.join(", "),
            if allowed.is_empty() {
                "none".to_owned()
            } else {
                allowed.into_iter().collect::<Vec<_>>().join(", ")
            }
        ))
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Load,
    Read,
}

struct SkillTool {
    skills: Skills,
    kind: Kind,
}

/// `load_skill`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LoadArgs {
    /// The skill's name, as in the catalog.
    name: String,
}

/// `read_skill_resource`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    /// The skill's name.
    skill: String,
    /// The file's path inside the skill, as `load_skill` listed it (`references/forms.md`).
    path: String,
}

impl SkillTool {
    fn skill<'a>(&'a self, tool: &str, name: &str) -> Result<&'a Skill, ToolError> {
        self.skills.get(name).ok_or_else(|| {
            let names: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
            ToolError::failed(
                tool,
                format!(
                    "no skill is named `{name}`; the skills are: {}",
                    names.join(", ")
                ),
            )
        })
    }
}

#[async_trait]
impl Tool for SkillTool {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Load => LOAD_SKILL_TOOL_NAME,
            Kind::Read => READ_SKILL_RESOURCE_TOOL_NAME,
        }
    }

    fn description(&self) -> &str {
        match self.kind {
            Kind::Load => {
                "Loads a skill's instructions by its name (from the catalog in your \
                 instructions) and lists its files. Call it before doing the skill's task."
            }
            Kind::Read => "Reads one file of a loaded skill, by the path `load_skill` listed.",
        }
    }

    /// `load_skill` notes the skill as active in the thread's values (and reads its folder,
    /// which does not change): a recovered run loads it again.
    fn session_only(&self) -> bool {
        matches!(self.kind, Kind::Load)
    }

    fn parameters(&self) -> Value {
        match self.kind {
            Kind::Load => schema_for::<LoadArgs>(),
            Kind::Read => schema_for::<ReadArgs>(),
        }
    }

    async fn call(&self, cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
        let tool = self.name();
        match self.kind {
            Kind::Load => {
                let args: LoadArgs = parse_arguments(tool, arguments)?;
                let skill = self.skill(tool, &args.name)?;
                let session = cx.run_context().session();
                let mut active = Skills::active(cx);
                if !active.contains(&skill.name) {
                    active.push(skill.name.clone());
                }
                session
                    .set_value(ACTIVE_SKILLS_KEY, &active)
                    .map_err(|e| ToolError::failed(tool, e))?;
                let mut out = format!("Skill `{}` loaded.\n\n{}", skill.name, skill.instructions);
                if !skill.resources.is_empty() {
                    out.push_str("\n\nFiles of this skill (read with `");
                    out.push_str(READ_SKILL_RESOURCE_TOOL_NAME);
                    out.push_str("`):\n");
                    for r in &skill.resources {
                        out.push_str("- ");
                        out.push_str(r);
                        out.push('\n');
                    }
                }
                if let Some(tools) = &skill.allowed_tools {
                    out.push_str(&format!(
                        "\nWhile this skill is active you may call only: {}.\n",
                        if tools.is_empty() {
                            "the skill tools".to_owned()
                        } else {
                            tools.join(", ")
                        }
                    ));
                }
                Ok(out)
            }
            Kind::Read => {
                let args: ReadArgs = parse_arguments(tool, arguments)?;
                let skill = self.skill(tool, &args.skill)?;
                if !Skills::active(cx).contains(&skill.name) {
                    return Err(ToolError::failed(
                        tool,
                        format!(
                            "skill `{}` is not loaded: call `{LOAD_SKILL_TOOL_NAME}` with its \
                             name first",
                            skill.name
                        ),
                    ));
                }
                // Only the files listed when the skill was loaded: no other path reaches the
                // file system (`..`, absolute paths and links out are not in the list).
                if !skill.resources.contains(&args.path) {
                    return Err(ToolError::failed(
                        tool,
                        format!(
                            "skill `{}` has no file `{}`; its files are: {}",
                            skill.name,
                            args.path,
                            if skill.resources.is_empty() {
                                "none".to_owned()
                            } else {
                                skill.resources.join(", ")
                            }
                        ),
                    ));
                }
                let bytes = match self.skills.embedded.get(&skill.name) {
                    Some(embedded) => embedded.resource(&args.path).unwrap_or_default().to_vec(),
                    None => std::fs::read(skill.root.join(&args.path)).map_err(|e| {
                        ToolError::failed(tool, format!("cannot read `{}`: {e}", args.path))
                    })?,
                };
                let cut = bytes.len() > MAX_RESOURCE_BYTES;
                let mut text =
                    String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_RESOURCE_BYTES)])
                        .into_owned();
                if cut {
                    text.push_str(&format!(
                        "\n[cut at {MAX_RESOURCE_BYTES} bytes of {}]",
                        bytes.len()
                    ));
                }
                Ok(text)
            }
        }
    }
}

/// A tool that checks the active skills' `allowed-tools` before each call.
struct Guarded {
    skills: Skills,
    inner: Arc<dyn Tool>,
}

#[async_trait]
impl Tool for Guarded {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn parameters(&self) -> Value {
        self.inner.parameters()
    }

    fn definition(&self) -> ToolDefinition {
        self.inner.definition()
    }

    async fn call(&self, cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
        if let Some(refusal) = self.skills.refusal(cx, self.inner.name()) {
            return Err(ToolError::failed(self.inner.name(), refusal));
        }
        self.inner.call(cx, arguments).await
    }

    fn idempotent(&self) -> bool {
        self.inner.idempotent()
    }

    fn session_only(&self) -> bool {
        self.inner.session_only()
    }
}
