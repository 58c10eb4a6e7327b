//! The agent kit (issue 43): skills, a plan and files an LLM agent can be given as tools.
//!
//! - `skill.rs`: one skill, a folder with a `SKILL.md` (YAML front matter validated, then
//!   instructions) and its resources, [`Skill`], loaded at run time or from the files
//!   `#[agent(skills = [...])]` and `flow!` embedded ([`EmbeddedSkill`]); the format's rules
//!   are `agentweave_skill`'s, shared with the macros.
//! - `skills.rs`: a set of skills and their progressive disclosure: the catalog for the
//!   instruction, `load_skill`, `read_skill_resource`, and the guard that enforces a loaded
//!   skill's `allowed-tools`, [`Skills`].
//! - `script.rs`: `run_skill_script`, a skill's script in a child process, only under a
//!   [`ScriptPolicy`]: approved by a human (by default), an empty environment, file access
//!   confined to its folder (Landlock), limits on time, output and memory.
//! - `plan.rs`: `write_plan`, the agent's plan kept in the thread's values, [`Plan`].
//! - `files.rs`: where files live, [`FileBackend`]: the thread's values ([`ThreadFiles`]) or a
//!   directory jailed to its root ([`JailedDir`]).
//! - `file_tools.rs`: `list_files`, `read_file`, `write_file`, `edit_file`, `search_files`,
//!   [`FileTools`].
//! - `deep.rs`: the deep agent preset, [`DeepAgent`]: an LLM agent with the plan, the files,
//!   skills and sub-agents, and an instruction that explains them.

mod deep;
mod file_tools;
mod files;
mod plan;
mod script;
mod skill;
mod skills;

/// A skill folder's files as the macros embed them ([`Skills::from_embedded`]).
pub use agentweave_skill::EmbeddedSkill;
pub use deep::{DeepAgent, DeepAgentError};
pub use file_tools::{FileTools, MAX_READ_LINES, MAX_SEARCH_HITS};
pub use files::{
    normalize, FileBackend, FileError, JailedDir, ThreadFiles, MAX_FILE_BYTES, THREAD_FILES_KEY,
};
pub use plan::{
    Plan, PlanStep, PlanTool, StepStatus, MAX_PLAN_STEPS, PLAN_KEY, WRITE_PLAN_TOOL_NAME,
};
pub use script::{ScriptPolicy, DEFAULT_READ_PATHS, RUN_SKILL_SCRIPT_TOOL_NAME};
pub use skill::{
    Skill, SkillError, MAX_COMPATIBILITY_LEN, MAX_DESCRIPTION_LEN, MAX_NAME_LEN, RESOURCE_DIRS,
};
pub use skills::{
    Skills, ACTIVE_SKILLS_KEY, LOAD_SKILL_TOOL_NAME, MAX_RESOURCE_BYTES,
    READ_SKILL_RESOURCE_TOOL_NAME,
};
