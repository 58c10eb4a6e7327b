//! Tools a [`ChatModelAgent`](crate::ChatModelAgent) can call: the [`Tool`] trait, typed
//! function tools ([`tool_fn`]) and [`ToolError`].

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::agent::Context;
use crate::agent::RunContext;
use crate::event::{Action, AgentEvent, InterruptInfo};
use crate::message::MessageRef;
use crate::model::ToolDefinition;
use crate::resume::ResumeInfo;

/// What a tool call knows about where it runs.
#[derive(Clone)]
pub struct ToolContext {
    run: RunContext,
    call_id: Arc<str>,
    tool_name: Arc<str>,
    history: Arc<[MessageRef]>,
    events: Option<Context>,
    resume: Option<Arc<ToolResume>>,
    /// The action this call attached to its result event (see [`ToolContext::attach_action`]).
    action: Arc<Mutex<Option<Action>>>,
}

/// A resumed call's saved state and the interrupt points below it.
#[derive(Debug)]
struct ToolResume {
    info: ResumeInfo,
    state: Option<serde_json::Value>,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("run", &self.run)
            .field("call_id", &self.call_id)
            .field("tool_name", &self.tool_name)
            .field("history", &self.history.len())
            .field("surfaces_events", &self.events.is_some())
            .field("resume", &self.resume)
            .finish()
    }
}

impl ToolContext {
    /// The context of the call `call_id` made by the agent running with `run`.
    pub fn new(run: RunContext, call_id: impl Into<Arc<str>>) -> Self {
        ToolContext {
            run,
            call_id: call_id.into(),
            tool_name: Arc::from(""),
            history: Arc::from([]),
            events: None,
            resume: None,
            action: Arc::default(),
        }
    }

    /// Attaches `action` to this call's result event (replacing one attached before): a tool's
    /// own way to steer the run, as the built-in `exit` and `transfer_to_agent` tools do. The
    /// slot belongs to this call (this context), so concurrent calls of one tool never mix
    /// their actions up. A [`ChatModelAgent`](crate::ChatModelAgent) carries it out once the
    /// call has returned `Ok` (an error result drops it):
    ///
    /// - [`Action::Exit`], [`Action::TransferToAgent`] and [`Action::BreakLoop`] end the
    ///   agent's turn after the reply's results, like the built-in tools (the first of the
    ///   reply, in call order, wins; a built-in `exit` or `transfer_to_agent` of the same reply
    ///   comes first; a later one is dropped);
    /// - [`Action::Custom`] rides on the event and the loop goes on;
    /// - [`Action::Interrupted`] cannot be attached: stop with
    ///   [`interrupt`](ToolContext::interrupt) instead (it is dropped).
    ///
    /// ```
    /// use agentweave_runtime::{tool_fn_with_context, Action, ToolContext};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Verdict {
    ///     approved: bool,
    /// }
    ///
    /// let review = tool_fn_with_context(
    ///     "review",
    ///     "Records the verdict; an approval ends the review loop.",
    ///     |cx: ToolContext, v: Verdict| async move {
    ///         if v.approved {
    ///             cx.attach_action(Action::BreakLoop(cx.agent_name().into()));
    ///         }
    ///         Ok::<_, String>(if v.approved { "approved" } else { "rejected" })
    ///     },
    /// );
    /// # let _ = review;
    /// ```
    pub fn attach_action(&self, action: Action) {
        *self.action.lock().expect("tool action slot") = Some(action);
    }

    /// The action attached to this call's result so far.
    pub fn attached_action(&self) -> Option<Action> {
        self.action.lock().expect("tool action slot").clone()
    }

    /// The run option `key` addressed to the calling agent
    /// ([`AgentRunOptions::tool_option`](crate::AgentRunOptions::tool_option) sets it), if
    /// given: the same name as [`AgentRunOptions::tool_option_value`](crate::AgentRunOptions::tool_option_value),
    /// which reads it from the options.
    pub fn tool_option_value(&self, key: &str) -> Option<&serde_json::Value> {
        self.run
            .agent_options()
            .and_then(|o| o.tool_option_value(key))
    }

    /// The former name of [`tool_option_value`](ToolContext::tool_option_value).
    #[deprecated(
        since = "0.1.0",
        note = "renamed `tool_option_value`, as on `AgentRunOptions`"
    )]
    pub fn tool_option(&self, key: &str) -> Option<&serde_json::Value> {
        self.tool_option_value(key)
    }

    /// The same context, for resuming a call that stopped with [`ToolError::Interrupted`]:
    /// `info` holds the interrupt points below the call (see
    /// [`ResumeInfo::tool_calls`]), `state` what the tool saved in its [`ToolInterrupt`].
    pub fn with_resume(mut self, info: ResumeInfo, state: Option<serde_json::Value>) -> Self {
        self.resume = Some(Arc::new(ToolResume { info, state }));
        self
    }

    /// Whether this call resumes one that stopped for outside input.
    pub fn is_resuming(&self) -> bool {
        self.resume.is_some()
    }

    /// When resuming: the interrupt points below this call, with the caller's resume data.
    pub fn resume_info(&self) -> Option<&ResumeInfo> {
        self.resume.as_ref().map(|r| &r.info)
    }

    /// When resuming: the state the tool saved in its [`ToolInterrupt`].
    pub fn saved_state(&self) -> Option<&serde_json::Value> {
        self.resume.as_ref().and_then(|r| r.state.as_ref())
    }

    /// When resuming: the data the caller addressed to this call's own interrupt (the
    /// `targets` of `Runner::resume`), if it sent any.
    pub fn resume_data(&self) -> Option<&serde_json::Value> {
        self.resume_info().and_then(ResumeInfo::data)
    }

    /// Stops this call for outside input: return the error this makes (`Err(cx.interrupt(..))`)
    /// and the calling [`ChatModelAgent`](crate::ChatModelAgent) ends its run with an
    /// interrupt carrying `info`, addressed to this call (`agent:A;tool:NAME:CALL_ID`). The
    /// runner checkpoints it; on resume the call runs again, with the same arguments, with
    /// [`is_resuming`](ToolContext::is_resuming) true and the caller's answer in
    /// [`resume_data`](ToolContext::resume_data). Results of the reply's other calls are kept,
    /// not recomputed.
    ///
    /// ```
    /// use agentweave_runtime::{tool_fn_with_context, ToolContext, ToolError};
    /// use serde_json::json;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Refund {
    ///     amount: u32,
    /// }
    ///
    /// let refund = tool_fn_with_context(
    ///     "issue_refund",
    ///     "Refunds the customer (needs a human's approval).",
    ///     |cx: ToolContext, args: Refund| async move {
    ///         match cx.resume_data() {
    ///             None => Err(cx.interrupt(json!({ "approve refund of": args.amount }))),
    ///             Some(answer) if answer == "yes" => Ok(format!("refunded {}", args.amount)),
    ///             Some(_) => Ok("the refund was not approved".to_string()),
    ///         }
    ///     },
    /// );
    /// # let _ = refund;
    /// ```
    pub fn interrupt(&self, info: serde_json::Value) -> ToolError {
        ToolError::interrupted(Arc::clone(&self.tool_name), ToolInterrupt::new(info))
    }

    /// Like [`interrupt`](ToolContext::interrupt), keeping `state` for the resumed call
    /// ([`saved_state`](ToolContext::saved_state)); it is stored in the checkpoint.
    pub fn interrupt_with_state(
        &self,
        info: serde_json::Value,
        state: serde_json::Value,
    ) -> ToolError {
        ToolError::interrupted(
            Arc::clone(&self.tool_name),
            ToolInterrupt::new(info).with_state(state),
        )
    }

    /// The same context, naming the tool being called.
    pub fn with_tool_name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.tool_name = name.into();
        self
    }

    /// The same context, with the caller's conversation (see [`history`](ToolContext::history)).
    pub fn with_history(mut self, messages: impl IntoIterator<Item = MessageRef>) -> Self {
        self.history = messages.into_iter().collect();
        self
    }

    /// The same context, able to [surface](ToolContext::surface) events in the caller's
    /// event stream: `out` is the calling agent's emitter.
    pub fn with_events(mut self, out: Context) -> Self {
        self.events = Some(out);
        self
    }

    /// The same context, with the caller's conversation shared, not copied: the calls of one
    /// reply all point at one history.
    pub fn with_shared_history(mut self, messages: Arc<[MessageRef]>) -> Self {
        self.history = messages;
        self
    }

    /// The name of the tool being called (empty if the caller did not say).
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// The calling agent's conversation as its model saw it, ending with the reply that made
    /// this call (a [`ChatModelAgent`](crate::ChatModelAgent) provides it; empty otherwise).
    pub fn history(&self) -> &[MessageRef] {
        &self.history
    }

    /// Shows `event` to whoever reads the caller's event stream, and waits until it has been
    /// taken. Returns `false` (and drops the event) if the caller gives its tools no way to
    /// surface events.
    ///
    /// Surfaced events are for display only: they are not recorded in the caller's session
    /// and never steer the run, so their action is dropped (an interrupt cannot be surfaced).
    /// An event that has no run path yet gets the tool's: the caller's path extended by the
    /// tool's name.
    pub async fn surface(&self, mut event: AgentEvent) -> bool {
        let Some(out) = &self.events else {
            return false;
        };
        if event.run_path().is_empty() {
            let path = self.run.run_path().child(Arc::clone(&self.tool_name));
            event.stamp(&self.tool_name, &path);
        }
        event.action = None;
        event.recorded = true;
        out.yield_event(event).await;
        true
    }

    /// Streams this call's progress (or a partial result) to whoever reads the caller's event
    /// stream while the tool runs: a custom event
    /// `{"tool_progress": {"tool": NAME, "call_id": ID, "progress": progress}}` at the tool's
    /// run path (the caller's extended by the tool's name), surfaced (see
    /// [`surface`](ToolContext::surface)): never recorded, never shown to the model, which
    /// receives the tool's whole result when it returns. Waits until the event has been taken;
    /// dropping the caller's stream meanwhile cancels the tool at this await. Returns `false`
    /// if the caller gives its tools no way to surface events (a
    /// [`ChatModelAgent`](crate::ChatModelAgent) always does).
    ///
    /// ```
    /// use agentweave_runtime::{tool_fn_with_context, ToolContext};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Crawl {
    ///     pages: u32,
    /// }
    ///
    /// let crawl = tool_fn_with_context(
    ///     "crawl",
    ///     "Reads the pages of a site.",
    ///     |cx: ToolContext, a: Crawl| async move {
    ///         for page in 1..=a.pages {
    ///             cx.progress(serde_json::json!({"page": page, "of": a.pages})).await;
    ///         }
    ///         Ok::<_, String>(format!("read {} pages", a.pages))
    ///     },
    /// );
    /// # let _ = crawl;
    /// ```
    pub async fn progress(&self, progress: serde_json::Value) -> bool {
        let data = serde_json::json!({
            "tool_progress": {
                "tool": &*self.tool_name,
                "call_id": &*self.call_id,
                "progress": progress,
            }
        });
        self.surface(AgentEvent::custom(data)).await
    }

    /// The calling agent's run context: session (values, record), run path, root input.
    pub fn run_context(&self) -> &RunContext {
        &self.run
    }

    /// The name of the agent that called the tool.
    pub fn agent_name(&self) -> &str {
        self.run.agent_name()
    }

    /// The id of the tool call being answered.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// A key naming this tool call, for a tool with side effects to deduplicate them (send it
    /// as a payment API's idempotency key, or keep it next to what the tool did).
    ///
    /// It is made of the run's idempotency scope, the calling agent's run path and the call id:
    /// `SCOPE:RUN/PATH:CALL_ID`. It is the same every time the same checkpoint is resumed, so a
    /// call that was in flight when a worker died, and runs again when another worker takes
    /// the checkpoint over, gets the same key; it differs between runs, between the
    /// checkpoints of one run (each resume of a run has its own scope) and between calls.
    /// (A call whose id comes from a model reply made *during* the lost attempt gets the id
    /// the model gives in the new attempt.)
    ///
    /// ```
    /// use agentweave_runtime::{RunContext, Session, ToolContext};
    /// let run = RunContext::new_run(Session::new(), [], false, "desk")
    ///     .with_idempotency_scope("run-7.1");
    /// let cx = ToolContext::new(run, "call_1");
    /// assert_eq!(cx.idempotency_key(), "run-7.1:desk:call_1");
    /// ```
    pub fn idempotency_key(&self) -> String {
        format!(
            "{}:{}:{}",
            self.run.idempotency_scope(),
            self.run.run_path(),
            self.call_id
        )
    }
}

/// A tool failed. The [`ChatModelAgent`](crate::ChatModelAgent) does not end the run: it
/// answers the model with `error: ` and this text, so the model can correct itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments are not JSON, or do not match the tool's schema.
    #[error(
        "invalid arguments for tool '{tool}': {message}; call it again with a JSON object that \
         matches its parameters schema"
    )]
    InvalidArguments {
        /// The tool called.
        tool: Arc<str>,
        /// What is wrong with the arguments.
        message: Arc<str>,
    },
    /// The model called a tool the agent does not have.
    #[error("unknown tool '{tool}'; {}", available_text(.available))]
    UnknownTool {
        /// The name the model used.
        tool: Arc<str>,
        /// The tools the agent has.
        available: Vec<Arc<str>>,
    },
    /// `transfer_to_agent` named an agent that is not a legal target.
    #[error(
        "cannot transfer to agent '{target}': it is not one of the agents you can transfer to \
         ({}); call transfer_to_agent again with one of them",
        .available.join(", ")
    )]
    IllegalTransfer {
        /// The agent asked for.
        target: Arc<str>,
        /// The legal targets.
        available: Vec<Arc<str>>,
    },
    /// The call was not run because an earlier call of the same reply ends the agent's turn.
    #[error("tool '{tool}' was not run: {reason}")]
    NotRun {
        /// The tool called.
        tool: Arc<str>,
        /// Why.
        reason: Arc<str>,
    },
    /// The tool ran and failed.
    #[error("tool '{tool}' failed: {message}")]
    Failed {
        /// The tool.
        tool: Arc<str>,
        /// What went wrong.
        message: Arc<str>,
    },
    /// The tool did not finish within the agent's
    /// [`tool_timeout`](crate::ChatModelAgentBuilder::tool_timeout); it was dropped.
    #[error(
        "tool '{tool}' timed out after {} ms (the agent's tool_timeout); it was stopped",
        .limit.as_millis()
    )]
    TimedOut {
        /// The tool.
        tool: Arc<str>,
        /// The limit it exceeded.
        limit: std::time::Duration,
    },
    /// The tool panicked; the run goes on.
    #[error("tool '{tool}' panicked: {message}")]
    Panicked {
        /// The tool.
        tool: Arc<str>,
        /// The panic message, when it was a string.
        message: Arc<str>,
    },
    /// The tool stopped for outside input: it interrupted itself
    /// ([`ToolContext::interrupt`]), or an agent run inside it did (an
    /// [`AgentTool`](crate::AgentTool)). A [`ChatModelAgent`](crate::ChatModelAgent) passes the
    /// interrupts on, so its run can be resumed and the call with it; see [`ToolInterrupt`].
    #[error(
        "tool '{tool}' stopped for outside input; it can only be called by an agent that can \
         pass its interrupts on and resume it (a ChatModelAgent)"
    )]
    Interrupted {
        /// The tool.
        tool: Arc<str>,
        /// The interrupts and the tool's state.
        interrupt: Box<ToolInterrupt>,
    },
    /// A [middleware](crate::middleware) hook around the call refused or failed: the agent's
    /// run ends with this error (it is not answered to the model).
    #[error(transparent)]
    Middleware(crate::agent::middleware::MiddlewareError),
}

/// What a tool that stopped for outside input hands its caller (in
/// [`ToolError::Interrupted`]): the interrupts raised inside it, and the state it needs to go
/// on when the call is resumed ([`ToolContext::saved_state`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolInterrupt {
    /// The interrupts, as they reached the tool. One with an empty
    /// [`address`](InterruptInfo::address) is the tool's own (see [`ToolInterrupt::new`]); its id
    /// becomes the calling agent's run path. The others come from agent runs inside the tool, each with the
    /// address frames of the levels it crossed there (an agent tool's run adds at least one)
    /// and its id.
    pub interrupts: Vec<InterruptInfo>,
    /// State the tool gets back when the call is resumed.
    pub state: Option<serde_json::Value>,
}

impl ToolInterrupt {
    /// The tool's own interrupt, carrying `info` for whoever answers it (a human approving a
    /// payment, say). Resumed, the call runs again with [`ToolContext::is_resuming`] true and
    /// the caller's answer in [`ToolContext::resume_data`].
    pub fn new(info: serde_json::Value) -> Self {
        ToolInterrupt {
            interrupts: vec![InterruptInfo::new(info)],
            state: None,
        }
    }

    /// The same interrupt, with state the tool gets back on resume
    /// ([`ToolContext::saved_state`]).
    pub fn with_state(mut self, state: serde_json::Value) -> Self {
        self.state = Some(state);
        self
    }
}

fn available_text(available: &[Arc<str>]) -> String {
    if available.is_empty() {
        "this agent has no tools: answer without calling any".to_owned()
    } else {
        format!(
            "the available tools are: {}; call one of them or answer without tools",
            available.join(", ")
        )
    }
}

impl ToolError {
    /// The tool ran and failed.
    pub fn failed(tool: impl Into<Arc<str>>, message: impl fmt::Display) -> Self {
        ToolError::Failed {
            tool: tool.into(),
            message: message.to_string().into(),
        }
    }

    /// The tool `tool` stopped for outside input with `interrupt`; usually written
    /// [`ToolContext::interrupt`], which knows the tool's name.
    pub fn interrupted(tool: impl Into<Arc<str>>, interrupt: ToolInterrupt) -> Self {
        ToolError::Interrupted {
            tool: tool.into(),
            interrupt: Box::new(interrupt),
        }
    }

    /// The arguments were not acceptable.
    pub fn invalid_arguments(tool: impl Into<Arc<str>>, message: impl fmt::Display) -> Self {
        ToolError::InvalidArguments {
            tool: tool.into(),
            message: message.to_string().into(),
        }
    }

    /// The tool-result text the model receives for this error: `error: ` and the message.
    pub fn to_model_text(&self) -> String {
        format!("error: {self}")
    }
}

/// Something a model can call: a name, a description, the JSON Schema of its arguments, and
/// an async function from the arguments' JSON text to a text result.
///
/// Object safe (agents hold `Arc<dyn Tool>`). Most tools are written with [`tool_fn`], which
/// derives the schema from a typed argument struct; implement the trait for tools that need
/// more (their own state, a schema decided at run time).
///
/// ```
/// use async_trait::async_trait;
/// use agentweave_runtime::{Tool, ToolContext, ToolError};
///
/// struct Clock;
///
/// #[async_trait]
/// impl Tool for Clock {
///     fn name(&self) -> &str { "clock" }
///     fn description(&self) -> &str { "The current time, as HH:MM." }
///     fn parameters(&self) -> serde_json::Value {
///         serde_json::json!({ "type": "object", "properties": {} })
///     }
///     async fn call(&self, _cx: &ToolContext, _arguments: &str) -> Result<String, ToolError> {
///         Ok("12:00".into())
///     }
/// }
/// ```
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The name the model calls the tool by (unique among an agent's tools).
    fn name(&self) -> &str;

    /// What the tool does and when to call it.
    fn description(&self) -> &str;

    /// The JSON Schema of the arguments object.
    fn parameters(&self) -> serde_json::Value;

    /// The definition the model is given.
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            parameters: self.parameters(),
        }
    }

    /// Runs the tool on the arguments' JSON text, exactly as the model wrote it.
    async fn call(&self, cx: &ToolContext, arguments: &str) -> Result<String, ToolError>;

    /// Whether a call of this tool may run again when a run is recovered after its worker
    /// died during the call (`Runner::recover`); default `true`.
    /// A tool that deduplicates on its [`idempotency_key`](ToolContext::idempotency_key)
    /// (or has no side effects) is idempotent. For a tool that returns `false`, a call that
    /// was in flight is not run again: the model gets an error result saying the call may or
    /// may not have happened, to check before retrying.
    fn idempotent(&self) -> bool {
        true
    }

    /// Whether the tool's only effect is on the run's session values (the thread's values):
    /// a plan or files kept in the thread, a note of what is loaded; default `false`.
    ///
    /// A recovered run (`Runner::recover`) starts from the thread's values as the dead run
    /// did, and answers the calls its journal holds with their journaled results, without
    /// running them: what such a tool wrote would be lost. A recovered run therefore runs
    /// a journaled call of a tool that returns `true` again, in its place in the run, so that
    /// it writes its values again. Such a tool must be deterministic: the same arguments and
    /// values give the same result (the recovered run is checked against its journal), and it
    /// must not act outside the session.
    fn session_only(&self) -> bool {
        false
    }
}

/// The JSON Schema of `T` as tools give it to models: generated by `schemars` (draft 2020-12)
/// with every sub-schema inlined (no `$ref`, which many local models do not follow) and no
/// `$schema` key. Doc comments on the struct and its fields become descriptions.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Lookup {
///     /// The order number.
///     order_id: u64,
/// }
///
/// let schema = agentweave_runtime::tool::schema_for::<Lookup>();
/// assert_eq!(schema["type"], "object");
/// assert_eq!(schema["required"], serde_json::json!(["order_id"]));
/// assert_eq!(schema["properties"]["order_id"]["description"], "The order number.");
/// ```
pub fn schema_for<T: JsonSchema>() -> serde_json::Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut value: serde_json::Value = generator.into_root_schema_for::<T>().into();
    if let Some(object) = value.as_object_mut() {
        // Tools carry their own name; a `title` of the Rust type's name only adds noise.
        object.remove("title");
    }
    value
}

/// Decodes tool arguments: empty text counts as `{}` (some models send nothing for tools
/// without parameters); text that is not JSON, JSON that is not an object, or an object that
/// does not fit `T`, is a [`ToolError::InvalidArguments`] saying which.
pub fn parse_arguments<T: DeserializeOwned>(tool: &str, arguments: &str) -> Result<T, ToolError> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    if !text.trim_start().starts_with('{') {
        // Arguments are an object (every tool schema says so); serde would also take a
        // struct from an array of its fields, which the schema does not allow.
        if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
            return Err(ToolError::invalid_arguments(
                tool,
                "the arguments do not match the schema (they must be a JSON object)",
            ));
        }
    }
    serde_json::from_str(text).map_err(|e| {
        let what = match e.classify() {
            serde_json::error::Category::Data => "the arguments do not match the schema",
            _ => "the arguments are not valid JSON",
        };
        ToolError::invalid_arguments(tool, format_args!("{what} ({e})"))
    })
}

type CallFn =
    dyn Fn(ToolContext, String) -> BoxFuture<'static, Result<String, ToolError>> + Send + Sync;

/// A tool made from a typed async function (see [`tool_fn`] and [`tool_fn_with_context`]).
#[derive(Clone)]
pub struct FnTool {
    name: Arc<str>,
    description: Arc<str>,
    parameters: serde_json::Value,
    call: Arc<CallFn>,
    idempotent: bool,
}

impl FnTool {
    /// This tool, declared idempotent or not (default: idempotent; see
    /// [`Tool::idempotent`]). Declare `false` for a tool whose effect cannot be deduplicated
    /// by its [`idempotency_key`](ToolContext::idempotency_key): a call of it that was in
    /// flight when its worker died is answered with an error instead of being run again.
    ///
    /// ```
    /// use agentweave_runtime::{tool_fn, Tool};
    /// let wire = tool_fn("wire_money", "Sends a wire.", |_: serde_json::Value| async {
    ///     Ok::<_, String>("sent".to_string())
    /// })
    /// .with_idempotent(false);
    /// assert!(!wire.idempotent());
    /// ```
    pub fn with_idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }
}

impl fmt::Debug for FnTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("parameters", &self.parameters)
            .finish_non_exhaustive()
    }
}

/// A tool from a typed async function of its arguments.
///
/// The argument type derives serde's `Deserialize` and schemars' `JsonSchema`; its schema
/// (see [`schema_for`]) is what the model is given, and the model's arguments are decoded into
/// it before `f` runs (a failure is answered to the model as [`ToolError::InvalidArguments`]).
/// `f` returns the result text, or an error of any type (a [`ToolError`] is passed on as it
/// is, anything else becomes [`ToolError::Failed`]).
///
/// ```
/// use agentweave_runtime::tool_fn;
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// /// Arguments of `lookup_order`.
/// #[derive(Deserialize, JsonSchema)]
/// struct LookupOrder {
///     /// The order number, as printed on the receipt.
///     order_id: u64,
/// }
///
/// let lookup = tool_fn("lookup_order", "Finds an order by number.", |args: LookupOrder| async move {
///     if args.order_id == 0 {
///         return Err("there is no order 0".to_string());
///     }
///     Ok(format!("order {}: one kettle, 39 EUR, delivered", args.order_id))
/// });
/// # let _ = lookup;
/// ```
pub fn tool_fn<A, F, Fut, R, E>(
    name: impl Into<Arc<str>>,
    description: impl Into<Arc<str>>,
    f: F,
) -> FnTool
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, E>> + Send + 'static,
    R: Into<String>,
    E: Into<Box<dyn StdError + Send + Sync>>,
{
    tool_fn_with_context(name, description, move |_cx, args: A| f(args))
}

/// Like [`tool_fn`], for a function that also takes the call's [`ToolContext`] (to read or
/// write session values, or to know which agent called).
pub fn tool_fn_with_context<A, F, Fut, R, E>(
    name: impl Into<Arc<str>>,
    description: impl Into<Arc<str>>,
    f: F,
) -> FnTool
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(ToolContext, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, E>> + Send + 'static,
    R: Into<String>,
    E: Into<Box<dyn StdError + Send + Sync>>,
{
    let name: Arc<str> = name.into();
    let tool = Arc::clone(&name);
    let call = move |cx: ToolContext, arguments: String| -> BoxFuture<'static, _> {
        let parsed = parse_arguments::<A>(&tool, &arguments);
        let tool = Arc::clone(&tool);
        let fut = parsed.map(|args| f(cx, args));
        Box::pin(async move {
            match fut?.await {
                Ok(out) => Ok(out.into()),
                Err(e) => {
                    let e: Box<dyn StdError + Send + Sync> = e.into();
                    Err(match e.downcast::<ToolError>() {
                        Ok(tool_error) => *tool_error,
                        Err(other) => ToolError::failed(tool, other),
                    })
                }
            }
        })
    };
    FnTool {
        name,
        description: description.into(),
        parameters: schema_for::<A>(),
        call: Arc::new(call),
        idempotent: true,
    }
}

#[async_trait]
impl Tool for FnTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> serde_json::Value {
        self.parameters.clone()
    }

    async fn call(&self, cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
        (self.call)(cx.clone(), arguments.to_owned()).await
    }

    fn idempotent(&self) -> bool {
        self.idempotent
    }
}

#[async_trait]
impl<T: Tool + ?Sized> Tool for Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn description(&self) -> &str {
        (**self).description()
    }

    fn parameters(&self) -> serde_json::Value {
        (**self).parameters()
    }

    fn definition(&self) -> ToolDefinition {
        (**self).definition()
    }

    async fn call(&self, cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
        (**self).call(cx, arguments).await
    }

    fn idempotent(&self) -> bool {
        (**self).idempotent()
    }

    fn session_only(&self) -> bool {
        (**self).session_only()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Session;

    #[derive(serde::Deserialize, JsonSchema)]
    struct Add {
        a: i64,
        b: i64,
    }

    fn cx() -> ToolContext {
        ToolContext::new(RunContext::new_run(Session::new(), [], false, "calc"), "c1")
    }

    fn adder() -> FnTool {
        tool_fn("add", "Adds two numbers.", |args: Add| async move {
            if args.a < 0 {
                return Err(ToolError::failed(
                    "add",
                    "negative numbers are not supported",
                ));
            }
            Ok::<_, ToolError>((args.a + args.b).to_string())
        })
    }

    #[test]
    fn typed_tool_calls_decode_and_report_errors() {
        futures::executor::block_on(async {
            let add = adder();
            assert_eq!(add.call(&cx(), r#"{"a":2,"b":3}"#).await.unwrap(), "5");
            assert_eq!(
                add.call(&cx(), "{a:2").await.unwrap_err().to_string(),
                "invalid arguments for tool 'add': the arguments are not valid JSON (key must be \
                 a string at line 1 column 2); call it again with a JSON object that matches its \
                 parameters schema"
            );
            assert_eq!(
                add.call(&cx(), r#"{"a":"2","b":3}"#)
                    .await
                    .unwrap_err()
                    .to_string(),
                "invalid arguments for tool 'add': the arguments do not match the schema (invalid \
                 type: string \"2\", expected i64 at line 1 column 8); call it again with a JSON \
                 object that matches its parameters schema"
            );
            // A ToolError returned by the function is passed on as it is.
            assert_eq!(
                add.call(&cx(), r#"{"a":-1,"b":3}"#).await.unwrap_err(),
                ToolError::failed("add", "negative numbers are not supported")
            );
        });
    }

    #[test]
    fn schema_is_derived_inlined_and_untitled() {
        assert_eq!(
            adder().parameters(),
            serde_json::json!({
                "type": "object",
                "properties": {
                    "a": { "type": "integer", "format": "int64" },
                    "b": { "type": "integer", "format": "int64" }
                },
                "required": ["a", "b"]
            })
        );
    }

    #[test]
    fn unknown_tool_text_names_the_available_tools() {
        let e = ToolError::UnknownTool {
            tool: "fly".into(),
            available: vec!["add".into(), "sub".into()],
        };
        assert_eq!(
            e.to_model_text(),
            "error: unknown tool 'fly'; the available tools are: add, sub; call one of them or \
             answer without tools"
        );
        let none = ToolError::UnknownTool {
            tool: "fly".into(),
            available: vec![],
        };
        assert_eq!(
            none.to_string(),
            "unknown tool 'fly'; this agent has no tools: answer without calling any"
        );
    }
}
