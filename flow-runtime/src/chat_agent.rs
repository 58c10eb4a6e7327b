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
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use futures::future::{self, BoxFuture};
use futures::stream::FuturesOrdered;
use futures::{FutureExt, Stream, StreamExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agent::{Agent, AgentInfo, AgentInput, EventStream, RunContext};
use crate::event::{Action, AgentError, AgentEvent, ToolFrame};
use crate::flow::FlowAgent;
use crate::generate::{generate, Context, TRANSFER_TOOL_NAME};
use crate::message::{Message, MessageRef, ToolCall};
use crate::model::{ChatModel, ChatRequest, ModelError, ModelStream, RetryPolicy, ToolDefinition};
use crate::resume::ResumeInfo;
use crate::session::SessionEvent;
use crate::stream::{MessageStream, StreamError};
use crate::tool::{parse_arguments, schema_for, Tool, ToolContext, ToolError, ToolInterrupt};

/// Name of the built-in tool that ends the run with a final result.
pub const EXIT_TOOL_NAME: &str = "exit";

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
/// [`AgentError::Custom`]), or refuses to be built with.
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
    /// The builder was given a configuration that cannot work.
    #[error("agent '{agent}' cannot be built: {message}")]
    Config {
        /// The agent.
        agent: Arc<str>,
        /// What is wrong and how to fix it.
        message: Arc<str>,
    },
}

impl From<ChatAgentError> for AgentError {
    fn from(e: ChatAgentError) -> Self {
        AgentError::custom(e)
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
///   `successfully transferred to agent [X]`, carries [`Action::TransferToAgent`], and ends the
///   agent's turn. An illegal target is answered as a tool error (see [`IllegalTransfer`]).
/// - With [`exit_tool`](ChatModelAgentBuilder::exit_tool), it gets an `exit` tool taking
///   `{"final_result": string}` whose result carries [`Action::Exit`].
/// - Tool arguments that are not valid JSON or do not fit the schema, calls to tools it does not
///   have, tools that fail, panic or exceed the
///   [`tool_timeout`](ChatModelAgentBuilder::tool_timeout): each is answered to the model as a
///   tool error (`error: …`), and the loop goes on.
/// - It streams when its input asks for it ([`AgentInput::streaming`]).
/// - A tool call that stops for outside input ([`ToolError::Interrupted`]: a tool that called
///   [`ToolContext::interrupt`], or an [`AgentTool`](crate::AgentTool) whose agent interrupted)
///   ends the run with those interrupts, each carrying the turn (conversation, finished
///   results, pending calls) as state and the call in its address; a tool's own interrupt has
///   this agent's run path as its id. [`Agent::resume`] finishes that turn without running the
///   finished calls again (an interrupted call runs again, resuming), and the loop goes on.
/// - Model failures are retried per its [`RetryPolicy`] (see the module docs for what the
///   session keeps); a final failure, or reaching the limit of model calls, ends the run with
///   an error event ([`ChatAgentError`]).
///
/// ```
/// # futures::executor::block_on(async {
/// use flow_runtime::model::{ScriptStep, ScriptedModel};
/// use flow_runtime::{tool_fn, ChatModelAgent, FlowAgent, Runner};
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
///     .query("Weather in Oslo?")
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
    name: Arc<str>,
    description: Arc<str>,
    instruction: Arc<str>,
    model: Arc<dyn ChatModel>,
    tools: Vec<Arc<dyn Tool>>,
    max_iterations: usize,
    exit_tool: bool,
    illegal_transfer: IllegalTransfer,
    retry: RetryPolicy,
    /// The instruction as a system message, built once.
    system: Option<MessageRef>,
    /// The tool set of the last node this agent ran as (one per agent in practice): building
    /// tool schemas on every run would cost more than the rest of the run.
    toolset: Mutex<Option<Arc<Toolset>>>,
    tool_timeout: Option<Duration>,
}

/// Builds a [`ChatModelAgent`]; start with [`ChatModelAgent::builder`].
pub struct ChatModelAgentBuilder {
    agent: ChatModelAgent,
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
                model,
                tools: Vec::new(),
                max_iterations: DEFAULT_MAX_ITERATIONS,
                exit_tool: false,
                illegal_transfer: IllegalTransfer::default(),
                retry: RetryPolicy::default(),
                system: None,
                toolset: Mutex::new(None),
                tool_timeout: None,
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

    /// The tool definitions the model is given when the agent runs as `node` (or alone, for
    /// `None`): its own tools, then `transfer_to_agent` if the node has transfer targets, then
    /// `exit` if enabled.
    pub fn tool_definitions(&self, node: Option<&FlowAgent>) -> Vec<ToolDefinition> {
        let targets = node.map(FlowAgent::transfer_targets).unwrap_or_default();
        self.toolset(targets).definitions.to_vec()
    }

    /// The tool set for these transfer targets: the cached one if it has the same targets.
    fn toolset_for(&self, targets: Vec<AgentInfo>) -> Arc<Toolset> {
        let mut cached = self.toolset.lock().expect("toolset cache lock");
        if let Some(toolset) = cached.as_ref().filter(|t| t.targets == targets) {
            return Arc::clone(toolset);
        }
        let toolset = Arc::new(self.toolset(targets));
        *cached = Some(Arc::clone(&toolset));
        toolset
    }

    fn toolset(&self, targets: Vec<AgentInfo>) -> Toolset {
        let mut definitions: Vec<ToolDefinition> =
            self.tools.iter().map(|t| t.definition()).collect();
        if !targets.is_empty() {
            definitions.push(transfer_tool_definition(&targets));
        }
        if self.exit_tool {
            definitions.push(exit_tool_definition());
        }
        Toolset {
            targets,
            definitions: definitions.into(),
        }
    }
}

impl ChatModelAgentBuilder {
    /// What the agent is for; other agents' models read it when choosing a transfer target.
    pub fn description(mut self, description: impl Into<Arc<str>>) -> Self {
        self.agent.description = description.into();
        self
    }

    /// The system prompt (none if empty).
    pub fn instruction(mut self, instruction: impl Into<Arc<str>>) -> Self {
        self.agent.instruction = instruction.into();
        self
    }

    /// Adds a tool.
    pub fn tool(self, tool: impl Tool) -> Self {
        self.tool_arc(Arc::new(tool))
    }

    /// Adds a shared tool.
    pub fn tool_arc(mut self, tool: Arc<dyn Tool>) -> Self {
        self.agent.tools.push(tool);
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
    /// [`ToolError::TimedOut`], naming the tool and the limit; the loop goes on.
    ///
    /// The limit uses tokio's timer: the run must be polled inside a tokio runtime with time
    /// enabled.
    pub fn tool_timeout(mut self, limit: Duration) -> Self {
        self.agent.tool_timeout = Some(limit);
        self
    }

    /// Builds the agent. Fails if two tools share a name, a tool takes the name of a built-in
    /// one, or the limit of model calls is 0.
    pub fn build(self) -> Result<ChatModelAgent, ChatAgentError> {
        let mut agent = self.agent;
        agent.system =
            (!agent.instruction.is_empty()).then(|| Arc::new(Message::system(&*agent.instruction)));
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
        generate(cx, move |cx| async move { self.react(cx, input).await })
    }

    /// Resumes a run that stopped inside tool calls (an [`AgentTool`](crate::AgentTool) whose
    /// agent interrupted): the conversation comes from the saved state, not from `input`;
    /// the calls that had finished are not run again; each interrupted call is resumed (its
    /// tool gets [`ToolContext::resume_info`]); then the ReAct loop goes on.
    fn resume(self: Arc<Self>, cx: RunContext, input: AgentInput, info: ResumeInfo) -> EventStream {
        generate(cx, move |cx| async move {
            self.resume_react(cx, input, info).await
        })
    }
}

#[derive(Deserialize, JsonSchema)]
struct TransferArgs {
    /// The name of the agent to hand the conversation to.
    agent_name: String,
}

#[derive(Deserialize, JsonSchema)]
struct ExitArgs {
    /// The final answer of the conversation.
    final_result: String,
}

/// The `transfer_to_agent` tool for an agent with these transfer targets: its description
/// lists each target with its description, its schema (derived from `{"agent_name": string}`)
/// restricts `agent_name` to exactly their names (`enum`).
///
/// ```
/// use std::sync::Arc;
/// use flow_runtime::{transfer_tool_definition, AgentInfo};
/// let targets = [AgentInfo { name: Arc::from("refund"), description: Arc::from("Refunds orders.") }];
/// let tool = transfer_tool_definition(&targets);
/// assert_eq!(tool.name, "transfer_to_agent");
/// assert_eq!(tool.parameters["properties"]["agent_name"]["enum"], serde_json::json!(["refund"]));
/// assert!(tool.description.ends_with("- refund: Refunds orders."));
/// ```
pub fn transfer_tool_definition(targets: &[AgentInfo]) -> ToolDefinition {
    let mut parameters = schema_for::<TransferArgs>();
    let names: Vec<&str> = targets.iter().map(|t| &*t.name).collect();
    parameters["properties"]["agent_name"]["enum"] = serde_json::json!(names);
    let mut description = String::from(
        "Hands the conversation to another agent, which answers the user from then on. Call it \
         when one of these agents is better placed to handle the request:",
    );
    for t in targets {
        description.push_str("\n- ");
        description.push_str(&t.name);
        if !t.description.is_empty() {
            description.push_str(": ");
            description.push_str(&t.description);
        }
    }
    ToolDefinition {
        name: TRANSFER_TOOL_NAME.to_owned(),
        description,
        parameters,
    }
}

/// The `exit` tool: takes `{"final_result": string}`, ends the run.
pub fn exit_tool_definition() -> ToolDefinition {
    ToolDefinition {
        name: EXIT_TOOL_NAME.to_owned(),
        description: "Ends the conversation with a final result. Call it when the task is done."
            .to_owned(),
        parameters: schema_for::<ExitArgs>(),
    }
}

/// The tools of one run: the agent's own plus the built-ins this node gets.
struct Toolset {
    targets: Vec<AgentInfo>,
    definitions: Arc<[ToolDefinition]>,
}

/// What one tool call produced: the result text (or error) and the action it carries.
type CallOutcome = Result<(String, Option<Action>), ToolError>;

/// How a turn of tool calls ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Turn {
    /// Ask the model again.
    Continue,
    /// A transfer or an exit ended the agent's run.
    Ended,
    /// A call stopped for outside input; the turn was saved in the interrupts.
    Interrupted,
}

/// A turn of tool calls saved in the interrupt state: everything needed to finish it.
#[derive(Debug, Serialize, Deserialize)]
struct SavedTurn {
    /// The conversation as the model saw it, with the reply and the results emitted so far.
    messages: Vec<MessageRef>,
    /// Model calls made.
    used: usize,
    /// The first call whose result was not emitted.
    next_call: usize,
    /// The transfer or exit a call of the reply asked for.
    ending: Option<Action>,
    /// Results of later calls that finished: call id, text, action.
    results: Vec<(String, String, Option<Action>)>,
    /// The interrupted calls: call id and the tool's saved state.
    pending: Vec<(String, Option<serde_json::Value>)>,
}

/// A turn being resumed.
#[derive(Default)]
struct Resumed {
    next_call: usize,
    ending: Option<Action>,
    results: Vec<(String, String, Option<Action>)>,
    /// Interrupted calls: call id, the resume info below the call, the tool's state.
    calls: Vec<(String, ResumeInfo, Option<serde_json::Value>)>,
}

impl ChatModelAgent {
    async fn react(&self, cx: Context, input: AgentInput) -> Result<(), AgentError> {
        let toolset = self.node_toolset(&cx);
        let mut messages = Vec::with_capacity(input.messages.len() + 1);
        messages.extend(self.system.iter().cloned());
        messages.extend(input.messages.iter().cloned());
        let request = ChatRequest {
            messages,
            tools: toolset.definitions.clone(),
        };
        self.react_loop(&cx, &toolset, request, 0, input.streaming)
            .await
    }

    /// The tool set of the node `cx` runs at (cached per set of transfer targets).
    fn node_toolset(&self, cx: &Context) -> Arc<Toolset> {
        let targets = cx
            .node()
            .map(FlowAgent::transfer_targets)
            .unwrap_or_default();
        self.toolset_for(targets)
    }

    /// The ReAct loop from a conversation, with `used` model calls already made.
    async fn react_loop(
        &self,
        cx: &Context,
        toolset: &Toolset,
        mut request: ChatRequest,
        mut used: usize,
        streaming: bool,
    ) -> Result<(), AgentError> {
        while used < self.max_iterations {
            let reply = self.ask_model(cx, &request, streaming).await?;
            used += 1;
            request.messages.push(Arc::clone(&reply));
            if reply.tool_calls.is_empty() {
                return Ok(());
            }
            let turn = self
                .run_tools(cx, toolset, &mut request.messages, used, None)
                .await?;
            if turn != Turn::Continue {
                return Ok(());
            }
        }
        Err(ChatAgentError::MaxIterations {
            agent: Arc::clone(&self.name),
            limit: self.max_iterations,
        }
        .into())
    }

    /// Resumes a turn whose tool calls were interrupted: the saved conversation, the results
    /// of the calls that had finished, and a resumed run of each interrupted call; then the
    /// ReAct loop goes on.
    async fn resume_react(
        &self,
        cx: Context,
        input: AgentInput,
        info: ResumeInfo,
    ) -> Result<(), AgentError> {
        let fail = |message: String| -> AgentError {
            ChatAgentError::Resume {
                agent: Arc::clone(&self.name),
                message: message.into(),
            }
            .into()
        };
        if info.was_interrupted() {
            return Err(fail(
                "the interrupt names the agent itself, but it only stops for interrupts raised \
                 inside its tool calls"
                    .into(),
            ));
        }
        let saved: SavedTurn = info
            .state()
            .cloned()
            .ok_or_else(|| fail("its interrupt carries no saved conversation".into()))
            .and_then(|state| {
                serde_json::from_value(state)
                    .map_err(|e| fail(format!("its saved conversation does not decode ({e})")))
            })?;
        let mut below: Vec<(ToolFrame, ResumeInfo)> = info.tool_calls();
        for (call, _) in &below {
            if !saved.pending.iter().any(|(id, _)| *id == call.call_id) {
                return Err(fail(format!(
                    "the resume info has interrupt points in tool call '{}' ({}), which was not \
                     pending",
                    call.call_id, call.name
                )));
            }
        }
        let mut resumes = Vec::with_capacity(saved.pending.len());
        for (id, state) in &saved.pending {
            let Some(k) = below.iter().position(|(call, _)| call.call_id == *id) else {
                return Err(fail(format!(
                    "tool call '{id}' was interrupted but the resume info has no interrupt \
                     point in it; resume with every interrupt of the run"
                )));
            };
            let (_, info) = below.remove(k);
            resumes.push((id.clone(), info, state.clone()));
        }
        let toolset = self.node_toolset(&cx);
        let mut request = ChatRequest {
            messages: saved.messages.clone(),
            tools: toolset.definitions.clone(),
        };
        let resumed = Resumed {
            next_call: saved.next_call,
            ending: saved.ending.clone(),
            results: saved.results.clone(),
            calls: resumes,
        };
        let turn = self
            .run_tools(
                &cx,
                &toolset,
                &mut request.messages,
                saved.used,
                Some(resumed),
            )
            .await?;
        if turn != Turn::Continue {
            return Ok(());
        }
        self.react_loop(&cx, &toolset, request, saved.used, input.streaming)
            .await
    }

    /// One answer of the model, retried per the policy, emitted as an event.
    async fn ask_model(
        &self,
        cx: &Context,
        request: &ChatRequest,
        streaming: bool,
    ) -> Result<MessageRef, AgentError> {
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let result = if streaming {
                self.stream_attempt(cx, request, attempt).await
            } else {
                self.model.generate(request).await.map(|reply| {
                    let reply = Arc::new(reply);
                    cx.emit(AgentEvent::message(Arc::clone(&reply)));
                    reply
                })
            };
            match result {
                Ok(reply) => return Ok(reply),
                Err(error) if self.retry.should_retry(attempt, &error) => {
                    let wait = self.retry.delay(attempt, &error);
                    tracing::warn!(
                        agent = %self.name,
                        attempt,
                        wait_ms = wait.as_millis() as u64,
                        %error,
                        "model call failed; retrying"
                    );
                    tokio::time::sleep(wait).await;
                }
                Err(source) => {
                    return Err(ChatAgentError::Model {
                        agent: Arc::clone(&self.name),
                        attempts: attempt,
                        source,
                    }
                    .into())
                }
            }
        }
    }

    /// One streamed attempt: the chunks go to the caller live; the session gets the whole
    /// message only if the stream completes (see the module docs).
    async fn stream_attempt(
        &self,
        cx: &Context,
        request: &ChatRequest,
        attempt: u32,
    ) -> Result<MessageRef, ModelError> {
        let chunks = self.model.stream(request).await?;
        let failure: Arc<Mutex<Option<ModelError>>> = Arc::default();
        let live = MessageStream::from_stream(AttemptChunks {
            chunks,
            failure: Arc::clone(&failure),
            retry: self.retry.clone(),
            agent: Arc::clone(&self.name),
            attempt,
        });
        // The agent's own copy of the message is concatenated as the chunks pass: it holds
        // no reader, so the stream keeps no chunk for it.
        let record = live.record();
        let in_tree = cx.node().is_some();
        let mut event = AgentEvent::stream(live);
        // Inside a tree the flow would record the event's stream as it passes; this agent
        // records the message itself once the stream is complete.
        event.recorded = in_tree;
        // Let the consumer take the event (and every one before it) first, so that its reader
        // pulls the chunks live; the record then reads whatever the consumer has not.
        cx.yield_event(event).await;
        match record.message().await {
            Ok(whole) => {
                if in_tree {
                    cx.session().push(SessionEvent::new(
                        cx.agent_name(),
                        cx.run_path().clone(),
                        Some(Arc::clone(&whole)),
                        None,
                    ));
                }
                Ok(whole)
            }
            Err(e) => Err(failure
                .lock()
                .expect("model failure slot")
                .take()
                .unwrap_or_else(|| ModelError::StreamInterrupted {
                    model: self.model.model_name().into(),
                    message: e.message,
                })),
        }
    }

    /// Runs the calls of the reply that ends `history`; emits their results in call order.
    /// With `resumed`, starts at the saved position: finished calls give their saved results
    /// and interrupted ones are resumed. If a call stops for outside input, the results from
    /// it on are held, the turn is saved, and its interrupts are emitted.
    async fn run_tools(
        &self,
        cx: &Context,
        toolset: &Toolset,
        history: &mut Vec<MessageRef>,
        used: usize,
        resumed: Option<Resumed>,
    ) -> Result<Turn, AgentError> {
        let reply = Arc::clone(history.last().expect("the reply that made the calls"));
        let calls = &reply.tool_calls;
        let Resumed {
            next_call: start,
            mut ending,
            results: saved_results,
            calls: mut resumes,
        } = resumed.unwrap_or_default();
        let mut jobs = FuturesOrdered::new();
        let shared_history: Arc<[MessageRef]> = history.iter().cloned().collect();
        for call in calls.iter().skip(start) {
            if let Some((_, text, action)) = saved_results.iter().find(|(id, _, _)| *id == call.id)
            {
                let done: CallOutcome = Ok((text.clone(), action.clone()));
                jobs.push_back(future::ready(done).boxed());
                continue;
            }
            let resume = resumes
                .iter()
                .position(|(id, _, _)| *id == call.id)
                .map(|k| resumes.swap_remove(k));
            let job: BoxFuture<'static, CallOutcome> = match call.name.as_str() {
                TRANSFER_TOOL_NAME if !toolset.targets.is_empty() => {
                    future::ready(self.transfer(toolset, call, &mut ending)).boxed()
                }
                EXIT_TOOL_NAME if self.exit_tool => future::ready(exit(call, &mut ending)).boxed(),
                name => match self.tools.iter().find(|t| t.name() == name) {
                    Some(tool) => {
                        let tool = Arc::clone(tool);
                        let mut tcx = ToolContext::new(cx.run_context().clone(), call.id.as_str())
                            .with_tool_name(call.name.as_str())
                            .with_history(shared_history.iter().cloned())
                            .with_events(cx.clone());
                        if let Some((_, info, state)) = resume {
                            tcx = tcx.with_resume(info, state);
                        }
                        let arguments = call.arguments.clone();
                        let limit = self.tool_timeout;
                        async move {
                            let run = AssertUnwindSafe(async { tool.call(&tcx, &arguments).await })
                                .catch_unwind();
                            let finished = match limit {
                                None => run.await,
                                Some(limit) => match tokio::time::timeout(limit, run).await {
                                    Ok(finished) => finished,
                                    Err(_) => {
                                        return Err(ToolError::TimedOut {
                                            tool: tool.name().into(),
                                            limit,
                                        })
                                    }
                                },
                            };
                            match finished {
                                Ok(result) => result.map(|text| (text, None)),
                                Err(payload) => Err(ToolError::Panicked {
                                    tool: tool.name().into(),
                                    message: panic_message(&*payload).into(),
                                }),
                            }
                        }
                        .boxed()
                    }
                    None => future::ready(Err(ToolError::UnknownTool {
                        tool: name.into(),
                        available: toolset
                            .definitions
                            .iter()
                            .map(|d| Arc::from(d.name.as_str()))
                            .collect(),
                    }))
                    .boxed(),
                },
            };
            jobs.push_back(job);
        }
        let mut last_carried_action = false;
        let mut stopped_at: Option<usize> = None;
        let mut held: Vec<(String, String, Option<Action>)> = Vec::new();
        let mut pending: Vec<(ToolCall, ToolInterrupt)> = Vec::new();
        let mut k = start;
        while let Some(outcome) = jobs.next().await {
            let call = &calls[k];
            k += 1;
            let (text, action) = match outcome {
                Err(ToolError::Interrupted { interrupt, .. }) => {
                    stopped_at.get_or_insert(k - 1);
                    pending.push((call.clone(), *interrupt));
                    continue;
                }
                Ok(done) => done,
                Err(error) => (error.to_model_text(), None),
            };
            if stopped_at.is_some() {
                held.push((call.id.clone(), text, action));
                continue;
            }
            let message = Arc::new(Message::tool(text, call.id.as_str(), call.name.as_str()));
            history.push(Arc::clone(&message));
            let mut event = AgentEvent::message(message);
            last_carried_action = action.is_some();
            if let Some(action) = action {
                event = event.with_action(action);
            }
            cx.emit(event);
        }
        if let Some(next_call) = stopped_at {
            let saved = SavedTurn {
                messages: history.clone(),
                used,
                next_call,
                ending,
                results: held,
                pending: pending
                    .iter()
                    .map(|(call, i)| (call.id.clone(), i.state.clone()))
                    .collect(),
            };
            let state = serde_json::to_value(&saved).map_err(|e| ChatAgentError::Resume {
                agent: Arc::clone(&self.name),
                message: format!("its conversation could not be saved ({e})").into(),
            })?;
            self.emit_interrupts(cx, pending, &state)?;
            return Ok(Turn::Interrupted);
        }
        match ending {
            Some(action) => {
                // The last event of the agent decides; repeat the action if later results of
                // the same reply came after it.
                if !last_carried_action {
                    cx.emit(AgentEvent::action(action));
                }
                Ok(Turn::Ended)
            }
            None => Ok(Turn::Continue),
        }
    }

    /// Emits the interrupts of the stopped calls, each carrying the saved turn and its call
    /// (the flow names them: a tool's own interrupt gets this agent's run path as its id).
    fn emit_interrupts(
        &self,
        cx: &Context,
        pending: Vec<(ToolCall, ToolInterrupt)>,
        state: &serde_json::Value,
    ) -> Result<(), AgentError> {
        for (call, interrupt) in pending {
            if interrupt.interrupts.is_empty() {
                return Err(ChatAgentError::Resume {
                    agent: Arc::clone(&self.name),
                    message: format!(
                        "tool '{}' stopped for outside input without saying why: its \
                         ToolInterrupt holds no interrupt (build it with ToolInterrupt::new or \
                         ToolContext::interrupt)",
                        call.name
                    )
                    .into(),
                }
                .into());
            }
            for mut info in interrupt.interrupts {
                if info.address.is_empty() && info.state.is_none() {
                    // The tool's own: it is resumed with the call, and gets its state back.
                    info.state.clone_from(&interrupt.state);
                }
                let mut event = AgentEvent::action(Action::Interrupted(info));
                event.attach_interrupt_state(state.clone());
                event.attach_interrupt_tool(ToolFrame {
                    name: call.name.clone(),
                    call_id: call.id.clone(),
                });
                cx.emit(event);
            }
        }
        Ok(())
    }

    fn transfer(
        &self,
        toolset: &Toolset,
        call: &ToolCall,
        ending: &mut Option<Action>,
    ) -> CallOutcome {
        let args: TransferArgs = parse_arguments(TRANSFER_TOOL_NAME, &call.arguments)?;
        if let Some(earlier) = ending {
            return Err(not_run(TRANSFER_TOOL_NAME, earlier));
        }
        let legal = toolset.targets.iter().any(|t| *t.name == args.agent_name);
        if !legal && self.illegal_transfer == IllegalTransfer::ReturnToModel {
            return Err(ToolError::IllegalTransfer {
                target: args.agent_name.into(),
                available: toolset
                    .targets
                    .iter()
                    .map(|t| Arc::clone(&t.name))
                    .collect(),
            });
        }
        let action = Action::transfer_to(args.agent_name.as_str());
        *ending = Some(action.clone());
        Ok((
            format!("successfully transferred to agent [{}]", args.agent_name),
            Some(action),
        ))
    }
}

fn exit(call: &ToolCall, ending: &mut Option<Action>) -> CallOutcome {
    let args: ExitArgs = parse_arguments(EXIT_TOOL_NAME, &call.arguments)?;
    if let Some(earlier) = ending {
        return Err(not_run(EXIT_TOOL_NAME, earlier));
    }
    *ending = Some(Action::Exit);
    Ok((args.final_result, Some(Action::Exit)))
}

fn not_run(tool: &str, earlier: &Action) -> ToolError {
    let what = match earlier {
        Action::TransferToAgent(target) => format!("transfers to agent '{target}'"),
        _ => "exits".to_owned(),
    };
    ToolError::NotRun {
        tool: tool.into(),
        reason: format!("an earlier call of the same reply already {what}").into(),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

/// A streamed attempt's chunks as the source of its [`MessageStream`]: a model error becomes a
/// [`StreamError`] that says whether the agent will retry, and is kept for the agent.
struct AttemptChunks {
    chunks: ModelStream,
    failure: Arc<Mutex<Option<ModelError>>>,
    retry: RetryPolicy,
    agent: Arc<str>,
    attempt: u32,
}

impl AttemptChunks {
    #[cold]
    fn fail(&self, error: ModelError) -> StreamError {
        let next = if self.retry.should_retry(self.attempt, &error) {
            format!(
                "agent '{}' will retry (attempt {} of {})",
                self.agent,
                self.attempt + 1,
                self.retry.max_retries + 1
            )
        } else {
            format!("agent '{}' is giving up", self.agent)
        };
        let text = format!("{error}; {next}");
        *self.failure.lock().expect("model failure slot") = Some(error);
        StreamError::new(text)
    }
}

impl Stream for AttemptChunks {
    type Item = Result<Message, StreamError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        match self.chunks.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => Poll::Ready(Some(Ok(chunk))),
            Poll::Ready(Some(Err(error))) => Poll::Ready(Some(Err(self.fail(error)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.chunks.size_hint()
    }
}
