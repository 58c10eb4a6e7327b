//! [`ChatModelAgent`]: the ReAct agent over a [`ChatModel`] and its [`Tool`]s, with the
//! built-in `transfer_to_agent` and `exit` tools.
//!
//! # Retries and the session record
//!
//! A model call that fails with a [retryable](ModelError::retryable) error is tried again
//! under the agent's [`RetryPolicy`]. What the failed attempt produced never reaches the
//! session, so no later model call or agent sees it:
//!
//! - not streaming, or a stream that fails before its first chunk: nothing was emitted;
//! - a stream that fails part-way: the caller has already seen its chunks live, so it sees the
//!   failure too: its reader ends with a [`StreamError`] whose text says what failed, then
//!   `agent 'A' will retry (attempt N of M)` or `agent 'A' is giving up`. The session, however, does not record that stream: inside a tree, the agent
//!   marks its stream events as recorded by itself, keeps a [record](MessageStream::record)
//!   of the stream (the message concatenated as the chunks pass), and only when the stream
//!   completed records the whole message in the session, at its own run path and in its
//!   place in the event order. A failed attempt is simply never recorded.
//!
//! Deciding first and streaming afterwards would have been simpler, but the caller would then
//! see nothing until the model finished; marking events lets streams stay live.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::builtin::EXIT_TOOL_NAME;
use super::builtin::{exit_tool_definition, transfer_tool_definition};
use super::context_fit::READ_TOOL_RESULT_TOOL_NAME;
use super::instruction::{
    system_text, Instruction, InstructionError, InstructionFn, TransferInstructions,
};
use super::tool_calls::{ToolCallLimits, Toolset};
use crate::agent::generate;
use crate::agent::middleware::{Middleware, Middlewares};
use crate::agent::FlowAgent;
use crate::agent::{Agent, AgentInfo, AgentInput, EventStream, RunContext};
use crate::event::AgentError;
use crate::history::{ContextBudget, UsageCalibration};
use crate::llm::structured::{OutputSchema, StructuredOutput, DEFAULT_OUTPUT_RETRIES};
use crate::llm::tool::Tool;
use crate::message::{Message, MessageRef};
use crate::model::{ChatModel, ModelError, ModelParams, RetryPolicy, ToolDefinition};
use crate::resume::ResumeInfo;
use crate::transfer::TRANSFER_TOOL_NAME;

/// Default limit of model calls per run of a [`ChatModelAgent`].
pub const DEFAULT_MAX_ITERATIONS: usize = 20;

/// What a [`ChatModelAgent`] does when its model calls `transfer_to_agent` with an agent that
/// is not one of its transfer targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IllegalTransfer {
    /// Answer the call with a tool error listing the legal targets; the model gets another
    /// turn to correct itself (the default).
    #[default]
    ReturnToModel,
    /// Transfer anyway, as Eino does: the flow then ends the run with its error event
    /// `transfer failed: agent 'X' not found when transferring from 'Y'`.
    FailRun,
}

/// An error a [`ChatModelAgent`] ends its run with (carried by the last event as
/// [`AgentError::ChatAgent`]: read it with [`AgentError::chat_agent_error`]), or refuses to be
/// built with.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ChatAgentError {
    /// The model failed and will not be asked again (not retryable, or out of retries).
    #[error("agent '{agent}' got no answer from its model after {attempts} attempt(s): {source}")]
    Model {
        /// The agent.
        agent: Arc<str>,
        /// How many times the model was called for this answer.
        attempts: u32,
        /// The last failure.
        #[source]
        source: ModelError,
    },
    /// The model kept calling tools until the agent's limit of model calls was reached.
    #[error(
        "agent '{agent}' reached its limit of {limit} model calls without a final answer; raise \
         it with max_iterations(..) or check that its tools let the model finish"
    )]
    MaxIterations {
        /// The agent.
        agent: Arc<str>,
        /// The limit.
        limit: usize,
    },
    /// A resume did not fit the interrupt this agent saved (or its turn could not be saved).
    #[error("agent '{agent}' cannot resume: {message}")]
    Resume {
        /// The agent.
        agent: Arc<str>,
        /// What does not fit.
        message: Arc<str>,
    },
    /// The final answer did not decode into the agent's output type, even after the model was
    /// told what was wrong as many times as the agent allows (see
    /// [`output_type`](ChatModelAgentBuilder::output_type)).
    #[error(
        "agent '{agent}' got no answer matching its output type `{schema}` after {attempts} attempt(s): {error}; its last answer was: {answer}"
    )]
    Output {
        /// The agent.
        agent: Arc<str>,
        /// The output type's schema name.
        schema: Arc<str>,
        /// How many answers were tried.
        attempts: u32,
        /// Why the last answer did not decode.
        error: Arc<str>,
        /// The last answer (cut to its first 500 characters).
        answer: Arc<str>,
    },
    /// Its request could not be brought within its [`ContextBudget`]: nothing older to
    /// summarise, the summarizer failed (the conversation is then left as it was), or the
    /// summary and the newest messages alone are over the budget.
    #[error("agent '{agent}' cannot fit its context budget: {message}")]
    Context {
        /// The agent.
        agent: Arc<str>,
        /// What happened and what to change.
        message: Arc<str>,
    },
    /// The builder was given a configuration that cannot work.
    #[error("agent '{agent}' cannot be built: {message}")]
    Config {
        /// The agent.
        agent: Arc<str>,
        /// What is wrong and how to fix it.
        message: Arc<str>,
    },
    /// The instruction could not be made: a template that cannot be read (when building), a
    /// session value it names that is not set, or a failing instruction function (when
    /// running).
    #[error(transparent)]
    Instruction(#[from] InstructionError),
}

impl ChatAgentError {
    /// The agent that failed.
    pub fn agent(&self) -> &Arc<str> {
        match self {
            ChatAgentError::Model { agent, .. }
            | ChatAgentError::MaxIterations { agent, .. }
            | ChatAgentError::Resume { agent, .. }
            | ChatAgentError::Output { agent, .. }
            | ChatAgentError::Context { agent, .. }
            | ChatAgentError::Config { agent, .. } => agent,
            ChatAgentError::Instruction(e) => e.agent(),
        }
    }
}

impl From<ChatAgentError> for AgentError {
    /// [`AgentError::ChatAgent`], naming the agent.
    fn from(e: ChatAgentError) -> Self {
        AgentError::ChatAgent {
            agent: Arc::clone(e.agent()),
            error: Arc::new(e),
        }
    }
}

impl AgentError {
    /// The [`ChatAgentError`] a [`ChatModelAgent`] failed with, if this is one
    /// ([`AgentError::ChatAgent`]).
    ///
    /// ```
    /// use agentweave_runtime::{AgentError, ChatAgentError};
    /// let error: AgentError = ChatAgentError::MaxIterations { agent: "clerk".into(), limit: 3 }.into();
    /// assert!(matches!(error.chat_agent_error(), Some(ChatAgentError::MaxIterations { limit: 3, .. })));
    /// assert_eq!(error.kind(), "chat_agent");
    /// ```
    pub fn chat_agent_error(&self) -> Option<&ChatAgentError> {
        match self {
            AgentError::ChatAgent { error, .. } => error.downcast_ref(),
            _ => None,
        }
    }
}

/// An agent that runs the ReAct loop over a chat model: ask the model; emit its answer; run the
/// tools it called (concurrently, results emitted in call order as tool messages); repeat until
/// the model answers without tool calls.
///
/// - Its input (the conversation as its context policy shaped it) follows the instruction,
///   given as a system message.
/// - In a tree, it gets a `transfer_to_agent` tool whose schema lists exactly its legal targets
///   (`enum`) and whose description names and describes them. A transfer answers
///   `successfully transferred to agent [X]`, carries [`Action::TransferToAgent`](crate::Action::TransferToAgent), and ends the
///   agent's turn. An illegal target is answered as a tool error (see [`IllegalTransfer`]).
/// - With [`exit_tool`](ChatModelAgentBuilder::exit_tool), it gets an `exit` tool taking
///   `{"final_result": string}` whose result carries [`Action::Exit`](crate::Action::Exit).
/// - Tool arguments that are not valid JSON or do not fit the schema, calls to tools it does not
///   have, tools that fail, panic or exceed the
///   [`tool_timeout`](ChatModelAgentBuilder::tool_timeout): each is answered to the model as a
///   tool error (`error: …`), and the loop goes on.
/// - It streams when its input asks for it ([`AgentInput::streaming`]).
/// - A tool call that stops for outside input ([`ToolError::Interrupted`](crate::ToolError::Interrupted): a tool that called
///   [`ToolContext::interrupt`](crate::ToolContext::interrupt), or an [`AgentTool`](crate::AgentTool) whose agent interrupted)
///   ends the run with those interrupts, each carrying the turn (conversation, finished
///   results, pending calls) as state and the call in its address; a tool's own interrupt has
///   this agent's run path as its id. [`Agent::resume`] finishes that turn without running the
///   finished calls again (an interrupted call runs again, resuming), and the loop goes on.
/// - Its system message is its instruction (a template over session values, or a function
///   of the run: see [`instruction`](crate::instruction)), then, at a node with transfer
///   targets, the transfer instructions.
/// - With an [`output_key`](ChatModelAgentBuilder::output_key), its final answer is stored as
///   a session value; a [`return_directly`](ChatModelAgentBuilder::return_directly) tool ends
///   the turn with its result; a tool may attach an action to its own result
///   ([`ToolContext::attach_action`](crate::ToolContext::attach_action)).
/// - It reads the [run options](crate::options) addressed to its name: model parameters, an
///   instruction override, tool options, and on resume a history modifier.
/// - Model failures are retried per its [`RetryPolicy`] (see the module docs for what the
///   session keeps); a final failure, or reaching the limit of model calls, ends the run with
///   an error event ([`ChatAgentError`]).
///
/// ```
/// # futures::executor::block_on(async {
/// use agentweave_runtime::model::{ScriptStep, ScriptedModel};
/// use agentweave_runtime::{tool_fn, ChatModelAgent, FlowAgent, Runner};
/// use futures::StreamExt;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Weather {
///     /// The city.
///     city: String,
/// }
///
/// let model = ScriptedModel::new([
///     ScriptStep::tool_call("weather", serde_json::json!({"city": "Oslo"})),
///     ScriptStep::text("It is sunny in Oslo."),
/// ]);
/// let agent = ChatModelAgent::builder("forecaster", model)
///     .instruction("You answer questions about the weather.")
///     .tool(tool_fn("weather", "Today's weather in a city.", |w: Weather| async move {
///         Ok::<_, String>(format!("{}: sunny", w.city))
///     }))
///     .build()
///     .unwrap();
/// let lines: Vec<String> = Runner::new(FlowAgent::new(agent))
///     .run("Weather in Oslo?")
///     .map(|e| {
///         let m = e.message_output().unwrap();
///         format!("{} {}: {}", e.run_path(), m.role, m.content)
///     })
///     .collect()
///     .await;
/// assert_eq!(
///     lines,
///     [
///         "forecaster assistant: ",
///         "forecaster tool: Oslo: sunny",
///         "forecaster assistant: It is sunny in Oslo.",
///     ]
/// );
/// # });
/// ```
pub struct ChatModelAgent {
    pub(super) name: Arc<str>,
    pub(super) description: Arc<str>,
    pub(super) instruction: Arc<str>,
    /// The instruction, parsed (or the instruction function).
    pub(super) template: Instruction,
    pub(super) transfer_instructions: TransferInstructions,
    pub(super) output_key: Option<Arc<str>>,
    pub(super) return_directly: Vec<Arc<str>>,
    pub(super) model_params: ModelParams,
    pub(super) model: Arc<dyn ChatModel>,
    pub(super) tools: Vec<Arc<dyn Tool>>,
    pub(super) max_iterations: usize,
    pub(super) exit_tool: bool,
    pub(super) illegal_transfer: IllegalTransfer,
    pub(super) retry: RetryPolicy,
    /// The tool set of the last node this agent ran as (one per agent in practice): building
    /// tool schemas on every run would cost more than the rest of the run.
    pub(super) toolset: Mutex<Option<Arc<Toolset>>>,
    pub(super) tool_timeout: Option<Duration>,
    pub(super) tool_limits: ToolCallLimits,
    /// The agent's own middleware (innermost in the chain).
    pub(super) middleware: Middlewares,
    /// The declared output type, if any.
    pub(super) output: Option<StructuredOutput>,
    /// Whether spans record prompts, replies, tool arguments and results.
    pub(super) record_content: bool,
    /// The token budget of its requests, if it has one.
    pub(super) budget: Option<ContextBudget>,
    /// The tokens of the last tool definitions counted for the budget (by their address).
    pub(super) definition_tokens: Mutex<Option<(usize, usize)>>,
    /// The model's reported prompt tokens against the budget's count of the same request.
    pub(super) calibration: UsageCalibration,
    /// The slot of a run's budget tally this agent was charged in last (a hint: looked at
    /// first, as a runner's runs give an agent the same slot).
    pub(super) tally_slot: std::sync::atomic::AtomicUsize,
}

/// The name of the tool [`ChatModelAgentBuilder::returns`] adds.
pub const FINISH_TASK_TOOL_NAME: &str = "finish_task";

/// Builds a [`ChatModelAgent`]; start with [`ChatModelAgent::builder`].
pub struct ChatModelAgentBuilder {
    pub(super) agent: ChatModelAgent,
}

impl ChatModelAgent {
    /// Starts building an agent named `name` over `model`.
    pub fn builder(name: impl Into<Arc<str>>, model: impl ChatModel) -> ChatModelAgentBuilder {
        Self::builder_with_arc(name, Arc::new(model))
    }

    /// Starts building an agent over a shared model.
    pub fn builder_with_arc(
        name: impl Into<Arc<str>>,
        model: Arc<dyn ChatModel>,
    ) -> ChatModelAgentBuilder {
        ChatModelAgentBuilder {
            agent: ChatModelAgent {
                name: name.into(),
                description: Arc::from(""),
                instruction: Arc::from(""),
                template: Instruction::default(),
                transfer_instructions: TransferInstructions::default(),
                output_key: None,
                return_directly: Vec::new(),
                model_params: ModelParams::default(),
                model,
                tools: Vec::new(),
                max_iterations: DEFAULT_MAX_ITERATIONS,
                exit_tool: false,
                illegal_transfer: IllegalTransfer::default(),
                retry: RetryPolicy::default(),
                toolset: Mutex::new(None),
                tool_timeout: None,
                tool_limits: ToolCallLimits::default(),
                middleware: Middlewares::default(),
                output: None,
                record_content: false,
                budget: None,
                definition_tokens: Mutex::new(None),
                calibration: UsageCalibration::new(),
                tally_slot: std::sync::atomic::AtomicUsize::new(0),
            },
        }
    }

    /// The system prompt.
    pub fn instruction(&self) -> &str {
        &self.instruction
    }

    /// The limit of model calls per run.
    pub fn max_iterations(&self) -> usize {
        self.max_iterations
    }

    /// The chat model this agent calls.
    pub fn model(&self) -> &Arc<dyn ChatModel> {
        &self.model
    }

    /// The tool named `name` among the tools this agent was given (not the built-in
    /// `transfer_to_agent` and `exit`), for a host that runs tool calls elsewhere.
    pub fn tool_named(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// The tool definitions the model is given when the agent runs as `node` (or alone, for
    /// `None`): its own tools, then `transfer_to_agent` if the node has transfer targets, then
    /// `exit` if enabled.
    pub fn tool_definitions(&self, node: Option<&FlowAgent>) -> Vec<ToolDefinition> {
        let targets = node.map(FlowAgent::transfer_targets).unwrap_or_default();
        let read_back = self.read_back_page(node);
        self.toolset(targets, Vec::new(), read_back)
            .definitions
            .to_vec()
    }

    /// The cached tool set, if its transfer targets pass `same` and its read-back tool was
    /// made for `read_back`.
    pub(super) fn cached_toolset(
        &self,
        same: impl Fn(&[AgentInfo]) -> bool,
        read_back: Option<usize>,
    ) -> Option<Arc<Toolset>> {
        let cached = self.toolset.lock().expect("toolset cache lock");
        cached
            .as_ref()
            .filter(|t| same(&t.targets) && t.read_back_page == read_back)
            .map(Arc::clone)
    }

    /// The budget this agent keeps to where `node` runs it: the node's, else its own.
    pub(super) fn budget_at<'a>(
        &'a self,
        node: Option<&'a FlowAgent>,
    ) -> Option<&'a ContextBudget> {
        node.and_then(|n| n.options().budget.as_ref())
            .or(self.budget.as_ref())
    }

    /// The limit over which tool results are set aside where `node` runs this agent, if
    /// they are (then the agent has the tool `read_tool_result`).
    pub(super) fn read_back_page(&self, node: Option<&FlowAgent>) -> Option<usize> {
        self.budget_at(node).and_then(ContextBudget::set_aside_over)
    }

    /// The tool set for these transfer targets: the cached one if it has the same targets.
    pub(super) fn toolset_for(
        &self,
        targets: Vec<AgentInfo>,
        payloads: Vec<(Arc<str>, crate::agent::Payload)>,
        read_back: Option<usize>,
    ) -> Arc<Toolset> {
        let mut cached = self.toolset.lock().expect("toolset cache lock");
        if let Some(toolset) = cached
            .as_ref()
            .filter(|t| t.targets == targets && t.read_back_page == read_back)
        {
            return Arc::clone(toolset);
        }
        let toolset = Arc::new(self.toolset(targets, payloads, read_back));
        *cached = Some(Arc::clone(&toolset));
        toolset
    }

    fn toolset(
        &self,
        targets: Vec<AgentInfo>,
        payloads: Vec<(Arc<str>, crate::agent::Payload)>,
        read_back: Option<usize>,
    ) -> Toolset {
        let read_back_tool = read_back
            .map(|limit| Arc::new(super::context_fit::ReadToolResult::new(limit)) as Arc<dyn Tool>);
        let mut definitions: Vec<ToolDefinition> = self
            .tools
            .iter()
            .chain(&read_back_tool)
            .map(|t| t.definition())
            .collect();
        if !targets.is_empty() {
            let mut transfer = transfer_tool_definition(&targets);
            if !payloads.is_empty() {
                // The payload each target takes: one schema per target, named in the text.
                let mut text =
                    String::from("Data the target agent needs, required for a transfer to: ");
                for (i, (name, payload)) in payloads.iter().enumerate() {
                    if i > 0 {
                        text.push_str(", ");
                    }
                    text.push_str(&format!("{name} (a {})", payload.type_name));
                }
                let schemas: Vec<serde_json::Value> =
                    payloads.iter().map(|(_, p)| p.schema.clone()).collect();
                transfer.parameters["properties"]["payload"] = serde_json::json!({
                    "description": text,
                    "anyOf": schemas,
                });
            }
            definitions.push(transfer);
        }
        if self.exit_tool {
            definitions.push(exit_tool_definition());
        }
        let transfer_text = self.transfer_instructions.text(&targets);
        let fixed_system = self.template.fixed().map(|instruction| {
            system_text(&instruction, transfer_text.as_deref())
                .map(|t| Arc::new(Message::system(t)))
        });
        let fixed_system_tokens = match &fixed_system {
            Some(Some(message)) => crate::history::estimate_tokens(message) as u64,
            _ => 0,
        };
        let transfer_args = targets
            .iter()
            .map(|t| crate::transfer::transfer_arguments(&t.name).into())
            .collect();
        Toolset {
            targets,
            transfer_args,
            payloads,
            definitions: definitions.into(),
            transfer_text,
            fixed_system,
            fixed_system_tokens,
            read_back: read_back_tool,
            read_back_page: read_back,
            frontend: Vec::new(),
        }
    }

    /// The system message of a run at this tool set's node: the instruction (the run options'
    /// override, else the agent's own, rendered from the session values), then the transfer
    /// instructions.
    pub(super) fn system_message(
        &self,
        cx: &RunContext,
        toolset: &Toolset,
    ) -> Result<Option<MessageRef>, ChatAgentError> {
        let overridden = cx.agent_options().and_then(|o| o.instruction.as_deref());
        let instruction = match overridden {
            None => match &toolset.fixed_system {
                Some(fixed) => return Ok(fixed.clone()),
                None => self.template.render(&self.name, cx)?,
            },
            Some(text) => Instruction::template(text)
                .map_err(|message| InstructionError::Template {
                    agent: Arc::clone(&self.name),
                    message: format!("the instruction of its run options: {message}").into(),
                })?
                .render(&self.name, cx)?,
        };
        Ok(system_text(&instruction, toolset.transfer_text.as_deref())
            .map(|t| Arc::new(Message::system(t))))
    }

    /// The model parameters of a run: the agent's, overridden by its run options'.
    pub(super) fn run_params(&self, cx: &RunContext) -> ModelParams {
        match cx.agent_options() {
            Some(o) => self.model_params.overridden_by(&o.params),
            None => self.model_params.clone(),
        }
    }

    /// Whether calls of the tool `name` end the turn with their result.
    pub(super) fn returns_directly(&self, name: &str) -> bool {
        self.return_directly.iter().any(|t| **t == *name)
    }

    /// Stores the agent's final answer under its output key, if it has one.
    pub(super) fn store_output(&self, cx: &RunContext, answer: &str) {
        if let Some(key) = &self.output_key {
            // A string always serializes.
            let _ = cx.session().set_value(&**key, answer);
        }
    }
}

impl ChatModelAgentBuilder {
    /// What the agent is for; other agents' models read it when choosing a transfer target.
    pub fn description(mut self, description: impl Into<Arc<str>>) -> Self {
        self.agent.description = description.into();
        self
    }

    /// The system prompt (none if empty): a template over the run's session values, `{key}`
    /// replaced by the value `key`, `{{` and `}}` for literal braces (see
    /// [`instruction`](crate::instruction) for the rules and the errors). A template that
    /// cannot be read makes [`build`](ChatModelAgentBuilder::build) fail with
    /// [`ChatAgentError::Instruction`].
    pub fn instruction(mut self, instruction: impl Into<Arc<str>>) -> Self {
        self.agent.instruction = instruction.into();
        self.agent.template = Instruction::default();
        self
    }

    /// The system prompt as a function of the run (session values, run path, root input),
    /// called once per run and resume. An `Err` ends the run with an error event
    /// ([`InstructionError::Function`]) naming the agent.
    ///
    /// ```
    /// use agentweave_runtime::model::ScriptedModel;
    /// use agentweave_runtime::ChatModelAgent;
    /// let agent = ChatModelAgent::builder("greeter", ScriptedModel::new(["Hi."]))
    ///     .instruction_fn(|cx| {
    ///         let vip: bool = cx.session().value("vip").ok().flatten().unwrap_or(false);
    ///         Ok(if vip { "Be extra polite.".into() } else { "Be polite.".into() })
    ///     })
    ///     .build()
    ///     .unwrap();
    /// # let _ = agent;
    /// ```
    pub fn instruction_fn(
        mut self,
        f: impl Fn(&RunContext) -> Result<String, String> + Send + Sync + 'static,
    ) -> Self {
        let f: Arc<InstructionFn> = Arc::new(f);
        self.agent.template = Instruction::Function(f);
        self.agent.instruction = Arc::from("");
        self
    }

    /// Whether the system message lists the agents this one may transfer to, with their
    /// descriptions, and the rule to answer or call `transfer_to_agent` (on by default; see
    /// [`default_transfer_instructions`](crate::default_transfer_instructions)). It is added
    /// only at a node with transfer targets, after the instruction and a blank line.
    pub fn transfer_instructions(mut self, enabled: bool) -> Self {
        self.agent.transfer_instructions = if enabled {
            TransferInstructions::Default
        } else {
            TransferInstructions::Off
        };
        self
    }

    /// Replaces the transfer instructions with `f(targets)` (an empty text adds nothing).
    ///
    /// ```
    /// use agentweave_runtime::model::ScriptedModel;
    /// use agentweave_runtime::ChatModelAgent;
    /// let agent = ChatModelAgent::builder("triage", ScriptedModel::new(["Hi."]))
    ///     .transfer_instructions_with(|targets| {
    ///         let names: Vec<&str> = targets.iter().map(|t| &*t.name).collect();
    ///         format!("Hand off to one of: {}.", names.join(", "))
    ///     })
    ///     .build()
    ///     .unwrap();
    /// # let _ = agent;
    /// ```
    pub fn transfer_instructions_with(
        mut self,
        f: impl Fn(&[AgentInfo]) -> String + Send + Sync + 'static,
    ) -> Self {
        self.agent.transfer_instructions = TransferInstructions::Custom(Arc::new(f));
        self
    }

    /// Stores the agent's final answer, as a string, under the session value `key` when its
    /// run ends with one: the content of the model's answer without tool calls (streamed or
    /// not), the result of a [return-directly](ChatModelAgentBuilder::return_directly) tool,
    /// or the `final_result` of the `exit` tool. A later agent, a tool or the caller reads it
    /// with [`Session::value`](crate::Session::value) without parsing events.
    pub fn output_key(mut self, key: impl Into<Arc<str>>) -> Self {
        self.agent.output_key = Some(key.into());
        self
    }

    /// Makes the tool `name` return directly: once a call of it succeeds, the agent's turn
    /// ends after the reply's results, and that result is its final output (stored under the
    /// [output key](ChatModelAgentBuilder::output_key)); the model is not asked again. Its
    /// event is held back and emitted after the reply's other results (as in Eino), so the
    /// run, a `Turn`'s final output and an [`AgentTool`](crate::AgentTool)'s
    /// result all end with it. If
    /// several such calls succeed in one reply, the first in call order is the output. A call
    /// that fails is answered to the model as usual. (Eino's `ReturnDirectly`, the OpenAI
    /// Agents SDK's `StopAtTools`.) Naming a tool the agent does not have fails the build.
    pub fn return_directly(mut self, name: impl Into<Arc<str>>) -> Self {
        self.agent.return_directly.push(name.into());
        self
    }

    /// Model parameters sent with every call of this agent (overridden, field by field, by the
    /// [run options](crate::AgentRunOptions) addressed to it).
    pub fn model_params(mut self, params: ModelParams) -> Self {
        self.agent.model_params = params;
        self
    }

    /// Adds a tool.
    pub fn tool(self, tool: impl Tool) -> Self {
        self.tool_arc(Arc::new(tool))
    }

    /// Makes this agent return a typed result to its parent when it is a task or single-turn
    /// node ([`Delegation`](crate::Delegation)): adds the tool `finish_task`, whose input
    /// schema is `T`'s JSON Schema. A call whose arguments decode as `T` ends the agent's turn
    /// with [`Action::Finish`](crate::Action::Finish) carrying them (the parent reads them
    /// with [`RunContext::task_result`](crate::RunContext::task_result)); arguments that do
    /// not decode are answered as a tool error the model can correct, within the agent's
    /// iteration limit.
    pub fn returns<T>(self) -> Self
    where
        T: serde::de::DeserializeOwned + serde::Serialize + schemars::JsonSchema + Send + 'static,
    {
        self.tool(super::tool::tool_fn_with_context(
            FINISH_TASK_TOOL_NAME,
            "Finishes your task and returns its result to the agent that gave it to you. \
             Call it once the task is done, with the result.",
            |cx: super::tool::ToolContext, result: T| async move {
                let value = serde_json::to_value(&result).map_err(|e| e.to_string())?;
                let text = value.to_string();
                cx.attach_action(crate::event::Action::finish(value));
                Ok::<_, String>(text)
            },
        ))
    }

    /// Adds a shared tool.
    pub fn tool_arc(mut self, tool: Arc<dyn Tool>) -> Self {
        self.agent.tools.push(tool);
        self
    }

    /// Keeps every request of this agent within `budget` (see [`ContextBudget`]): the oldest
    /// messages are summarised when a request would exceed it, the summary recorded once as an
    /// event; with [`set_aside_tool_results_over`](ContextBudget::set_aside_tool_results_over)
    /// the agent also gets the built-in tool `read_tool_result`.
    pub fn context_budget(mut self, budget: ContextBudget) -> Self {
        self.agent.budget = Some(budget);
        self
    }

    /// Adds shared tools.
    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.agent.tools.extend(tools);
        self
    }

    /// The limit of model calls per run (default [`DEFAULT_MAX_ITERATIONS`]).
    pub fn max_iterations(mut self, limit: usize) -> Self {
        self.agent.max_iterations = limit;
        self
    }

    /// Gives the model the `exit` tool (off by default).
    pub fn exit_tool(mut self, enabled: bool) -> Self {
        self.agent.exit_tool = enabled;
        self
    }

    /// What to do with a transfer to an agent that is not a legal target.
    pub fn on_illegal_transfer(mut self, policy: IllegalTransfer) -> Self {
        self.agent.illegal_transfer = policy;
        self
    }

    /// How failed model calls are retried (default [`RetryPolicy::default`]).
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.agent.retry = policy;
        self
    }

    /// How long one tool call may take (default: no limit). A call that takes longer is
    /// dropped at its next await point and answered to the model as
    /// [`ToolError::TimedOut`](crate::ToolError::TimedOut), naming the tool and the limit; the loop goes on.
    ///
    /// The limit uses tokio's timer: the run must be polled inside a tokio runtime with time
    /// enabled.
    pub fn tool_timeout(mut self, limit: Duration) -> Self {
        self.agent.tool_timeout = Some(limit);
        self
    }

    /// How many tool calls of one model reply are run (default
    /// [`ToolCallLimits::DEFAULT_MAX_PER_REPLY`]). Calls past it are not run: each is answered
    /// to the model as a tool error ([`ToolError::NotRun`](crate::ToolError::NotRun)) saying
    /// so, and the loop goes on.
    pub fn max_tool_calls_per_reply(mut self, limit: usize) -> Self {
        self.agent.tool_limits.max_per_reply = limit;
        self
    }

    /// How many tool calls of one reply run at once (default
    /// [`ToolCallLimits::DEFAULT_MAX_CONCURRENT`]; at least 1). Results still come in call
    /// order.
    pub fn max_concurrent_tool_calls(mut self, limit: usize) -> Self {
        self.agent.tool_limits.max_concurrent = limit.max(1);
        self
    }

    /// Adds middleware around this agent's runs, model calls and tool calls, wherever it runs;
    /// it comes after the runner's and the node's (see [`middleware`](crate::middleware)).
    pub fn middleware(mut self, middleware: impl Middleware) -> Self {
        self.agent.middleware = self.agent.middleware.with(Arc::new(middleware));
        self
    }

    /// Adds shared middleware (see [`middleware`](ChatModelAgentBuilder::middleware)).
    pub fn middleware_arc(mut self, middleware: Arc<dyn Middleware>) -> Self {
        self.agent.middleware = self.agent.middleware.with(middleware);
        self
    }

    /// Declares the type of the agent's final answer: requests ask for JSON matching its
    /// schema, the answer is decoded into it and stored as the session value named after the
    /// agent (see [`structured`](crate::structured)); an answer that does not decode is
    /// sent back to the model with the error up to [`DEFAULT_OUTPUT_RETRIES`] times (see
    /// [`output_retries`](ChatModelAgentBuilder::output_retries)), then the run ends with
    /// [`ChatAgentError::Output`].
    pub fn output_type<T: JsonSchema + DeserializeOwned + Serialize>(self) -> Self {
        self.output_schema(OutputSchema::of::<T>())
    }

    /// Declares the final answer's schema directly (see
    /// [`output_type`](ChatModelAgentBuilder::output_type)).
    pub fn output_schema(mut self, schema: OutputSchema) -> Self {
        let (key, retries) = match self.agent.output.take() {
            Some(old) => (old.key, old.retries),
            None => (None, DEFAULT_OUTPUT_RETRIES),
        };
        self.agent.output = Some(StructuredOutput {
            schema: Arc::new(schema),
            key,
            retries,
        });
        self
    }

    /// The session key the decoded answer is stored under (default: the agent's name). Has
    /// no effect without an output type.
    pub fn output_type_key(mut self, key: impl Into<Arc<str>>) -> Self {
        if let Some(output) = &mut self.agent.output {
            output.key = Some(key.into());
        }
        self
    }

    /// How many times an answer that does not decode into the output type is sent back to
    /// the model (default [`DEFAULT_OUTPUT_RETRIES`]; 0: the first bad answer ends the run).
    /// Has no effect without an output type.
    pub fn output_retries(mut self, retries: u32) -> Self {
        if let Some(output) = &mut self.agent.output {
            output.retries = retries;
        }
        self
    }

    /// Records prompts, replies, tool arguments and results on the model and tool spans (off
    /// by default: they may hold personal data; see [`telemetry`](crate::telemetry)).
    pub fn record_content(mut self, record: bool) -> Self {
        self.agent.record_content = record;
        self
    }

    /// Builds the agent. Fails if two tools share a name, a tool takes the name of a built-in
    /// one, or the limit of model calls is 0.
    pub fn build(self) -> Result<ChatModelAgent, ChatAgentError> {
        let mut agent = self.agent;
        if !matches!(agent.template, Instruction::Function(_)) {
            agent.template = Instruction::template(&agent.instruction).map_err(|message| {
                InstructionError::Template {
                    agent: Arc::clone(&agent.name),
                    message: message.into(),
                }
            })?;
        }
        let config = |message: String| ChatAgentError::Config {
            agent: Arc::clone(&agent.name),
            message: message.into(),
        };
        if agent.max_iterations == 0 {
            return Err(config(
                "max_iterations is 0, so the model could never be called; use at least 1".into(),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for tool in &agent.tools {
            let name = tool.name();
            if name == READ_TOOL_RESULT_TOOL_NAME {
                return Err(config(format!(
                    "a tool is named '{name}', the name of the built-in tool a context budget \
                     adds; rename it"
                )));
            }
            if name == TRANSFER_TOOL_NAME || name == EXIT_TOOL_NAME {
                return Err(config(format!(
                    "a tool is named '{name}', the name of a built-in tool; rename it"
                )));
            }
            if !seen.insert(name.to_owned()) {
                return Err(config(format!(
                    "two tools are named '{name}'; tool names must be unique per agent"
                )));
            }
        }
        for name in &agent.return_directly {
            if !seen.contains(&**name) {
                return Err(config(format!(
                    "return_directly names the tool '{name}', which the agent does not have; \
                     add the tool first, or fix the name"
                )));
            }
        }
        Ok(agent)
    }
}

impl fmt::Debug for ChatModelAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatModelAgent")
            .field("name", &self.name)
            .field("model", &self.model.model_name())
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .field("max_iterations", &self.max_iterations)
            .field("exit_tool", &self.exit_tool)
            .field("illegal_transfer", &self.illegal_transfer)
            .field("retry", &self.retry)
            .field("tool_timeout", &self.tool_timeout)
            .field("tool_limits", &self.tool_limits)
            .field("instruction", &self.template)
            .field("transfer_instructions", &self.transfer_instructions)
            .field("output_key", &self.output_key)
            .field("return_directly", &self.return_directly)
            .field("model_params", &self.model_params)
            .field("middleware", &self.middleware)
            .field("output", &self.output.as_ref().map(|o| &o.schema.name))
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for ChatModelAgentBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ChatModelAgentBuilder")
            .field(&self.agent)
            .finish()
    }
}

impl Agent for ChatModelAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn run(self: Arc<Self>, cx: RunContext, input: AgentInput) -> EventStream {
        generate(cx, move |cx| self.react(cx, input))
    }

    fn as_chat_model_agent(&self) -> Option<&ChatModelAgent> {
        Some(self)
    }

    /// Resumes a run that stopped inside tool calls (an [`AgentTool`](crate::AgentTool) whose
    /// agent interrupted): the conversation comes from the saved state, not from `input`;
    /// the calls that had finished are not run again; each interrupted call is resumed (its
    /// tool gets [`ToolContext::resume_info`](crate::ToolContext::resume_info)); then the ReAct loop goes on.
    fn resume(self: Arc<Self>, cx: RunContext, input: AgentInput, info: ResumeInfo) -> EventStream {
        generate(cx, move |cx| async move {
            self.resume_react(cx, input, info).await
        })
    }
}
