//! [`AgentTool`]: a whole agent tree used as a tool of a [`ChatModelAgent`](crate::ChatModelAgent).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::agent::FlowAgent;
use crate::agent::{Agent, AgentInput, RunContext};
use crate::context_form::rewrite_for_context;
use crate::event::{Action, InterruptInfo};
use crate::llm::tool::{parse_arguments, schema_for, Tool, ToolContext, ToolError, ToolInterrupt};
use crate::message::{Message, MessageRef, Role};
use crate::run_path::RunPath;
use crate::session::{Session, SessionEvent};

// The arguments of an agent tool (no doc comment: it would become the schema's description).
#[derive(Deserialize, JsonSchema)]
struct RequestArgs {
    /// What to ask the agent, in plain words.
    request: String,
}

/// An agent (a [`FlowAgent`] tree) that another agent's model can call as a tool.
///
/// - **Name and description.** The tool is named after the tree's agent; its description is
///   the agent's, or the one given with [`with_description`](AgentTool::with_description)
///   (a model reads it to decide when to call the tool).
/// - **Input.** The tool takes `{"request": string}`; the agent's run starts from that
///   request as a user message. With [`with_input_schema`](AgentTool::with_input_schema) it
///   takes a typed input instead, whose JSON text is that user message. With [`with_caller_history`](AgentTool::with_caller_history)
///   the caller's conversation comes first: its user messages as they are, its own replies
///   and tool results rewritten as context (`For context: [caller] said: ...`), without the
///   system prompt and without the reply that made this call.
/// - **Scope.** The agent runs as the root of its own run, in a
///   [scoped session](crate::Session::scoped): its events are recorded there, never in the
///   caller's record, so the caller's history is what it was plus the tool's result. Session
///   values are shared with the caller's run. Transfers inside the tree are followed inside
///   it; its Exit, Transfer and BreakLoop actions never reach the caller.
/// - **Result.** The content of the last message the agent's run recorded (a streamed one is
///   concatenated) is the tool result. An error event of the agent's run fails the call
///   ([`ToolError::Failed`], which the caller's model reads), and so does a run that ends
///   without any message.
/// - **Run paths and events.** The agent runs at the caller's path extended by its name
///   (`caller/researcher`, then `caller/researcher/x` after a transfer inside it). With
///   [`surface_events`](AgentTool::surface_events) its events are shown in the caller's
///   event stream as they happen, with those paths and without their actions (see
///   [`ToolContext::surface`]); errors and interrupts are not surfaced.
/// - **Interrupts** cross the boundary: an interrupt inside the agent ends the call with
///   [`ToolError::Interrupted`], carrying the interrupts and the agent's run so far (its
///   input and record) as state. A [`ChatModelAgent`](crate::ChatModelAgent) caller passes
///   them on, its frame marked with the call (`agent:caller;tool:NAME:CALL_ID;agent:...`);
///   when the run is resumed, the call is resumed: the record is restored and the agent's
///   tree resumes at the interrupted node, then the call returns its result as usual.
///
/// ```
/// # futures::executor::block_on(async {
/// use agentweave_runtime::model::{ScriptStep, ScriptedModel};
/// use agentweave_runtime::{AgentTool, ChatModelAgent, FlowAgent, FnAgent, Runner};
/// use futures::StreamExt;
///
/// let researcher = FnAgent::new("researcher", |cx, input| async move {
///     cx.say(format!("Found 3 papers on {}.", input.messages[0].content));
///     Ok(())
/// })
/// .with_description("Finds papers on a topic.");
/// let model = ScriptedModel::new([
///     ScriptStep::tool_call("researcher", serde_json::json!({"request": "otters"})),
///     ScriptStep::text("There are 3 papers."),
/// ]);
/// let caller = ChatModelAgent::builder("assistant", model)
///     .tool(AgentTool::new(FlowAgent::new(researcher)))
///     .build()
///     .unwrap();
/// let seen: Vec<String> = Runner::new(FlowAgent::new(caller))
///     .run("How much is written about otters?")
///     .map(|e| format!("{}: {}", e.run_path(), e.message_output().unwrap().content))
///     .collect()
///     .await;
/// assert_eq!(
///     seen,
///     [
///         "assistant: ",
///         "assistant: Found 3 papers on otters.",
///         "assistant: There are 3 papers.",
///     ]
/// );
/// # });
/// ```
#[derive(Clone)]
pub struct AgentTool {
    agent: FlowAgent,
    description: Arc<str>,
    caller_history: bool,
    surface_events: bool,
    input: Option<CustomInput>,
}

/// Checks a call's arguments (tool name, argument text) by decoding them into the typed input.
type CheckInput = dyn Fn(&str, &str) -> Result<(), ToolError> + Send + Sync;

/// A typed input schema (see [`AgentTool::with_input_schema`]).
#[derive(Clone)]
struct CustomInput {
    schema: serde_json::Value,
    check: Arc<CheckInput>,
}

impl AgentTool {
    /// The tree `agent` heads, as a tool named after it.
    pub fn new(agent: FlowAgent) -> Self {
        let description = match agent.description() {
            "" => format!(
                "Asks the agent '{}' to handle a request and returns its answer.",
                agent.name()
            )
            .into(),
            d => Arc::from(d),
        };
        AgentTool {
            agent,
            description,
            caller_history: false,
            surface_events: false,
            input: None,
        }
    }

    /// Takes arguments of the type `T` instead of `{"request": string}`: the model is given
    /// `T`'s schema (generated by schemars, see [`schema_for`]); the arguments are checked by
    /// decoding them into `T` (a mismatch is answered to the model as
    /// [`ToolError::InvalidArguments`]), and the agent's run starts from them, as the model
    /// wrote them (JSON text), as its user message.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// use agentweave_runtime::model::{ScriptStep, ScriptedModel};
    /// use agentweave_runtime::{AgentTool, ChatModelAgent, FlowAgent, FnAgent, Runner};
    /// use futures::StreamExt;
    ///
    /// /// A search in the paper index.
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Search {
    ///     /// The topic.
    ///     topic: String,
    ///     /// The earliest year.
    ///     since: u16,
    /// }
    ///
    /// let researcher = FnAgent::new("researcher", |cx, input| async move {
    ///     let search: serde_json::Value = serde_json::from_str(&input.messages[0].content).unwrap();
    ///     cx.say(format!("3 papers on {} since {}.", search["topic"], search["since"]));
    ///     Ok(())
    /// });
    /// let tool = AgentTool::new(FlowAgent::new(researcher)).with_input_schema::<Search>();
    /// assert_eq!(agentweave_runtime::Tool::parameters(&tool)["required"], serde_json::json!(["topic", "since"]));
    /// let model = ScriptedModel::new([
    ///     ScriptStep::tool_call("researcher", serde_json::json!({"topic": "otters", "since": 2020})),
    ///     ScriptStep::text("Three."),
    /// ]);
    /// let caller = ChatModelAgent::builder("assistant", model).tool(tool).build().unwrap();
    /// let seen: Vec<String> = Runner::new(FlowAgent::new(caller))
    ///     .run("Otter papers since 2020?")
    ///     .map(|e| e.message_output().unwrap().content.clone())
    ///     .collect()
    ///     .await;
    /// assert_eq!(seen[1], "3 papers on \"otters\" since 2020.");
    /// # });
    /// ```
    pub fn with_input_schema<T: DeserializeOwned + JsonSchema + 'static>(mut self) -> Self {
        self.input = Some(CustomInput {
            schema: schema_for::<T>(),
            check: Arc::new(|tool, arguments| parse_arguments::<T>(tool, arguments).map(drop)),
        });
        self
    }

    /// Sets the description the caller's model reads.
    pub fn with_description(mut self, description: impl Into<Arc<str>>) -> Self {
        self.description = description.into();
        self
    }

    /// Starts the agent's run from the caller's conversation, then the request (off by
    /// default: the request alone).
    pub fn with_caller_history(mut self, enabled: bool) -> Self {
        self.caller_history = enabled;
        self
    }

    /// Shows the agent's events in the caller's event stream as they happen (off by default).
    pub fn surface_events(mut self, enabled: bool) -> Self {
        self.surface_events = enabled;
        self
    }

    /// The tree the tool runs.
    pub fn agent(&self) -> &FlowAgent {
        &self.agent
    }

    /// The input messages of a call: the caller's conversation (if enabled) and the request.
    fn input(&self, cx: &ToolContext, request: String) -> Vec<MessageRef> {
        let mut input = Vec::new();
        if self.caller_history {
            let caller = cx.agent_name();
            let history = cx.history();
            // The reply that made this call is the caller's last message; leave it out.
            let made_this_call = |m: &MessageRef| {
                m.role == Role::Assistant && m.tool_calls.iter().any(|c| c.id == cx.call_id())
            };
            let end = match history.last() {
                Some(last) if made_this_call(last) => history.len() - 1,
                _ => history.len(),
            };
            for m in &history[..end] {
                match m.role {
                    Role::System => {}
                    Role::User => input.push(Arc::clone(m)),
                    Role::Assistant | Role::Tool => {
                        input.push(Arc::new(rewrite_for_context(caller, m)));
                    }
                }
            }
        }
        input.push(Arc::new(Message::user(request)));
        input
    }
}

#[async_trait]
impl Tool for AgentTool {
    fn name(&self) -> &str {
        self.agent.name()
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> serde_json::Value {
        match &self.input {
            Some(input) => input.schema.clone(),
            None => schema_for::<RequestArgs>(),
        }
    }

    async fn call(&self, cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
        let name = self.agent.name();
        let caller = cx.run_context();
        let session = caller.session().scoped();
        let (input, resume) = match cx.resume_info() {
            None => {
                let request = match &self.input {
                    Some(input) => {
                        (input.check)(name, arguments)?;
                        arguments.to_owned()
                    }
                    None => parse_arguments::<RequestArgs>(name, arguments)?.request,
                };
                (self.input(cx, request), None)
            }
            Some(info) => {
                let saved = cx
                    .saved_state()
                    .cloned()
                    .map(serde_json::from_value::<SavedRun>)
                    .transpose()
                    .ok()
                    .flatten()
                    .ok_or_else(|| {
                        ToolError::failed(
                            name,
                            format!(
                                "agent tool '{name}' was asked to resume but its saved run is \
                                 missing or does not decode"
                            ),
                        )
                    })?;
                for e in saved.events {
                    session.push(SessionEvent::new(e.agent, e.run_path, e.message, e.action));
                }
                (saved.input, Some(info.clone()))
            }
        };
        let path = caller.run_path().child(name);
        let run = RunContext::new_run(
            Arc::clone(&session),
            input.iter().cloned(),
            caller.streaming(),
            name,
        )
        .with_run_middleware(caller.run_middleware().clone())
        .with_options(Arc::clone(caller.run_options()))
        .with_limits(*caller.limits())
        .with_budgets_of(caller)
        .with_idempotency_scope(caller.idempotency_scope())
        .with_cancel(caller.cancel_signal().clone(), true);
        let run = match caller.shared_host() {
            Some(host) => run.with_host(host),
            None => run,
        };
        let run = match caller.conversation_id() {
            Some(id) => run.with_conversation_id(id),
            None => run,
        }
        .at(name, path);
        let agent_input = AgentInput {
            messages: input.clone().into(),
            streaming: caller.streaming(),
        };
        let agent = Arc::new(self.agent.clone());
        let mut events = match resume {
            None => agent.run(run, agent_input),
            Some(info) => agent.resume(run, agent_input, info),
        };
        let mut failure: Option<String> = None;
        let mut interrupts: Vec<InterruptInfo> = Vec::new();
        while let Some(event) = events.next().await {
            if let Some(info) = event.interrupt() {
                interrupts.push(info.clone());
                continue;
            }
            if let Some(error) = &event.error {
                failure.get_or_insert_with(|| error.to_string());
                continue;
            }
            if self.surface_events {
                cx.surface(event).await;
            }
        }
        drop(events);
        if let Some(message) = failure {
            return Err(ToolError::failed(name, message));
        }
        if !interrupts.is_empty() {
            let state = save_run(&session, input)
                .await
                .map_err(|e| ToolError::failed(name, e))?;
            return Err(ToolError::Interrupted {
                tool: name.into(),
                interrupt: Box::new(ToolInterrupt {
                    interrupts,
                    state: Some(state),
                }),
            });
        }
        for event in session.events().iter().rev() {
            match event.message().await {
                Ok(Some(message)) => return Ok(message.content.clone()),
                Ok(None) => {}
                Err(e) => return Err(ToolError::failed(name, e)),
            }
        }
        Err(ToolError::failed(
            name,
            format!("agent '{name}' ended without a message, so there is no result to return"),
        ))
    }
}

/// The run of an interrupted agent tool, as its interrupt state keeps it: the input it
/// started from and its record (streams concatenated).
#[derive(Serialize, Deserialize)]
struct SavedRun {
    input: Vec<MessageRef>,
    events: Vec<SavedEvent>,
}

#[derive(Serialize, Deserialize)]
struct SavedEvent {
    agent: Arc<str>,
    run_path: RunPath,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<MessageRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    action: Option<Action>,
}

async fn save_run(session: &Session, input: Vec<MessageRef>) -> Result<serde_json::Value, String> {
    let mut events = Vec::new();
    for e in session.events() {
        let message = e.message().await.map_err(|e| e.to_string())?;
        events.push(SavedEvent {
            agent: Arc::from(e.agent_name()),
            run_path: e.run_path().clone(),
            message,
            action: e.action().cloned(),
        });
    }
    serde_json::to_value(SavedRun { input, events })
        .map_err(|e| format!("its run could not be saved ({e})"))
}

impl fmt::Debug for AgentTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentTool")
            .field("agent", &self.agent.name())
            .field("description", &self.description)
            .field("caller_history", &self.caller_history)
            .field("surface_events", &self.surface_events)
            .field("input_schema", &self.input.as_ref().map(|i| &i.schema))
            .finish()
    }
}
