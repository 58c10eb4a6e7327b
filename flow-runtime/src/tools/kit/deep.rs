//! The deep agent preset, [`DeepAgent`]: one builder that gives an LLM agent the plan tool, the
//! file tools, chosen skills and sub-agents it hands tasks to (each an [`AgentTool`]), with an
//! instruction that explains them.

use std::sync::Arc;

use super::file_tools::FileTools;
use super::plan::PlanTool;
use super::skill::SkillError;
use super::skills::Skills;
use crate::llm::tool::Tool;
use crate::{
    AgentTool, ChatAgentError, ChatModel, ChatModelAgent, ChatModelAgentBuilder, FlowAgent,
};

/// Why a deep agent could not be built.
#[derive(Debug, thiserror::Error)]
pub enum DeepAgentError {
    /// A skill's `allowed-tools` names a tool the agent does not have.
    #[error(transparent)]
    Skill(#[from] SkillError),
    /// The model agent itself could not be built.
    #[error(transparent)]
    Agent(#[from] ChatAgentError),
}

/// A builder of a "deep agent": an LLM agent that keeps a plan (`write_plan`), works in files
/// (`list_files`, `read_file`, `write_file`, `edit_file`, `search_files`), loads skills, and
/// hands tasks to sub-agents (one tool per sub-agent, named after it).
///
/// ```
/// use agentweave_runtime::kit::DeepAgent;
/// use agentweave_runtime::model::ScriptedModel;
/// use agentweave_runtime::{FlowAgent, FnAgent};
///
/// let searcher = FlowAgent::new(FnAgent::new("searcher", |cx, _| async move {
///     cx.say("3 sources found");
///     Ok(())
/// }));
/// let agent = DeepAgent::new("researcher", ScriptedModel::new(["Done."]))
///     .task("Researches a report.")
///     .sub_agent(searcher)
///     .build()
///     .unwrap();
/// let tools: Vec<String> = agent.tool_definitions(None).into_iter().map(|d| d.name).collect();
/// assert!(tools.contains(&"write_plan".to_owned()) && tools.contains(&"searcher".to_owned()));
/// ```
pub struct DeepAgent {
    builder: ChatModelAgentBuilder,
    task: String,
    files: FileTools,
    skills: Skills,
    sub_agents: Vec<FlowAgent>,
    tools: Vec<Arc<dyn Tool>>,
}

impl DeepAgent {
    /// A deep agent named `name` on `model`, with files in the thread ([`FileTools::in_thread`])
    /// and no skills or sub-agents yet.
    pub fn new(name: impl Into<Arc<str>>, model: impl ChatModel) -> DeepAgent {
        DeepAgent {
            builder: ChatModelAgent::builder(name, model),
            task: String::new(),
            files: FileTools::in_thread(),
            skills: Skills::default(),
            sub_agents: Vec::new(),
            tools: Vec::new(),
        }
    }

    /// What the agent is for: the first paragraph of its instruction.
    pub fn task(mut self, task: impl Into<String>) -> DeepAgent {
        self.task = task.into();
        self
    }

    /// Its file tools (default: the thread's files).
    pub fn files(mut self, files: FileTools) -> DeepAgent {
        self.files = files;
        self
    }

    /// Its skills (their catalog goes in the instruction; their `allowed-tools` are enforced on
    /// every other tool).
    pub fn skills(mut self, skills: Skills) -> DeepAgent {
        self.skills = skills;
        self
    }

    /// A sub-agent it may hand a task to: a tool named after the agent, which runs it on the
    /// request and returns its answer.
    pub fn sub_agent(mut self, agent: FlowAgent) -> DeepAgent {
        self.sub_agents.push(agent);
        self
    }

    /// One more tool of its own.
    pub fn tool(mut self, tool: impl Tool) -> DeepAgent {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Anything else about the model agent (retries, limits, middleware).
    pub fn configure(
        mut self,
        f: impl FnOnce(ChatModelAgentBuilder) -> ChatModelAgentBuilder,
    ) -> DeepAgent {
        self.builder = f(self.builder);
        self
    }

    /// The instruction the agent gets: its task, then how to use the plan, the files, the
    /// sub-agents and the skills.
    pub fn instruction(&self) -> String {
        let mut out = String::new();
        if !self.task.is_empty() {
            out.push_str(self.task.trim());
            out.push_str("\n\n");
        }
        out.push_str(
            "Work in steps. For a task of several steps, first write your plan with \
             `write_plan`, then keep it current: mark a step `in_progress` when you start it \
             and `done` when it is finished.\n\
             Keep notes, drafts and results in files (`write_file`, `read_file`, `edit_file`, \
             `list_files`, `search_files`) instead of repeating them in your messages.\n",
        );
        if !self.sub_agents.is_empty() {
            out.push_str("Hand self-contained tasks to your sub-agents, one tool each:\n");
            for a in &self.sub_agents {
                out.push_str(&format!("- {}", a.name()));
                if !a.description().is_empty() {
                    out.push_str(&format!(": {}", a.description()));
                }
                out.push('\n');
            }
        }
        let catalog = self.skills.catalog();
        if !catalog.is_empty() {
            out.push('\n');
            out.push_str(&catalog);
        }
        out
    }

    /// The agent.
    ///
    /// # Errors
    ///
    /// [`DeepAgentError::Skill`] if a skill's `allowed-tools` names a tool the agent lacks;
    /// [`DeepAgentError::Agent`] if the model agent does not build.
    pub fn build(self) -> Result<ChatModelAgent, DeepAgentError> {
        let instruction = self.instruction();
        let mut tools: Vec<Arc<dyn Tool>> = vec![Arc::new(PlanTool)];
        tools.extend(self.files.all());
        tools.extend(self.tools);
        for agent in self.sub_agents {
            tools.push(Arc::new(AgentTool::new(agent)));
        }
        let names: Vec<String> = tools.iter().map(|t| t.name().to_owned()).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        self.skills.check_tools(&names)?;
        let guarded: Vec<Arc<dyn Tool>> = tools.into_iter().map(|t| self.skills.guard(t)).collect();
        Ok(self
            .builder
            .instruction(instruction)
            .tools(self.skills.tools())
            .tools(guarded)
            .build()?)
    }
}
