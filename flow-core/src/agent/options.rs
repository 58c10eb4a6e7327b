//! Run options: settings given to one run (or one resume) and addressed to agents by name.
//!
//! A [`RunOptions`] holds one [`AgentRunOptions`] per agent name; give it to a runner with
//! `RunnerBuilder::run_options`. Each
//! [`ChatModelAgent`](crate::ChatModelAgent) of the run reads the options addressed to its own
//! name, and only those: model parameters (temperature, max tokens, ...), an instruction that
//! replaces its own, options its tools read ([`ToolContext::tool_option`](crate::ToolContext::tool_option)),
//! and, on resume, a [history modifier](AgentRunOptions::history_modifier). Options travel
//! with the run, into [`AgentTool`](crate::AgentTool) runs too; they are never stored in a
//! checkpoint (a function cannot be), so a resume is given its own.
//!
//! Beside the options by agent, a run may offer [front-end tools](RunOptions::frontend_tools):
//! tools the caller runs (a user interface's), which every `ChatModelAgent` of the run offers
//! its model.
//!
//! ```
//! # futures::executor::block_on(async {
//! use agentweave_runtime::model::{ScriptStep, ScriptedModel};
//! use agentweave_runtime::{AgentRunOptions, ChatModelAgent, FlowAgent, RunOptions, Runner};
//! use futures::StreamExt;
//!
//! let model = ScriptedModel::new([ScriptStep::text("Ahoy.")]);
//! let agent = ChatModelAgent::builder("greeter", model.clone())
//!     .instruction("Greet the user.")
//!     .build()
//!     .unwrap();
//! let options = RunOptions::new()
//!     .agent("greeter", AgentRunOptions::new().temperature(0.0).instruction("Greet like a pirate."))
//!     .agent("someone_else", AgentRunOptions::new().max_tokens(5));
//! let _: Vec<_> = Runner::builder(FlowAgent::new(agent))
//!     .run_options(options).build()
//!     .run("hi")
//!     .collect()
//!     .await;
//! let asked = &model.requests()[0];
//! assert_eq!(asked.messages[0].content, "Greet like a pirate.");
//! assert_eq!(asked.params.temperature, Some(0.0));
//! assert_eq!(asked.params.max_tokens, None, "addressed to another agent");
//! # });
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::message::MessageRef;
use crate::model::{ModelParams, ToolDefinition};

/// Edits a [`ChatModelAgent`](crate::ChatModelAgent)'s saved conversation when its run is
/// resumed (see [`AgentRunOptions::history_modifier`]).
pub type HistoryModifier = dyn Fn(Vec<MessageRef>) -> Vec<MessageRef> + Send + Sync;

/// Options of one run for one agent; see the [module docs](self).
#[derive(Clone, Default)]
pub struct AgentRunOptions {
    pub(crate) params: ModelParams,
    pub(crate) instruction: Option<Arc<str>>,
    pub(crate) tool_options: HashMap<String, serde_json::Value>,
    pub(crate) history_modifier: Option<Arc<HistoryModifier>>,
}

impl AgentRunOptions {
    /// No options.
    pub fn new() -> Self {
        Self::default()
    }

    /// The sampling temperature of this run's model calls.
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.params.temperature = Some(temperature);
        self
    }

    /// The most tokens each answer of this run may have.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.params.max_tokens = Some(max_tokens);
        self
    }

    /// Model parameters; each one set replaces the agent's own.
    pub fn model_params(mut self, params: ModelParams) -> Self {
        self.params = params;
        self
    }

    /// An instruction that replaces the agent's own for this run: a template over session
    /// values like the agent's (see [`instruction`](crate::ChatModelAgentBuilder::instruction)).
    /// The transfer instructions are still added.
    pub fn instruction(mut self, instruction: impl Into<Arc<str>>) -> Self {
        self.instruction = Some(instruction.into());
        self
    }

    /// An option the agent's tools read with
    /// [`ToolContext::tool_option_value`](crate::ToolContext::tool_option_value).
    pub fn tool_option(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
        self.tool_options.insert(key.into(), value);
        self
    }

    /// On resume: edits the saved conversation (system message, input, replies, tool
    /// results) before the model is asked again, once, after the interrupted turn's calls have
    /// answered; the edited conversation is what the model sees from then on (a human
    /// correcting a message, adding a note, dropping a bad result). It is given with the
    /// resume call, in the process that resumes: a checkpoint stores data, never functions.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agentweave_runtime::{AgentRunOptions, Message, Role, RunOptions};
    /// let options = RunOptions::new().agent(
    ///     "refund",
    ///     AgentRunOptions::new().history_modifier(|mut history| {
    ///         history.push(Arc::new(Message::user("Note: the customer is a VIP.")));
    ///         history
    ///     }),
    /// );
    /// # let _ = options;
    /// ```
    pub fn history_modifier(
        mut self,
        modify: impl Fn(Vec<MessageRef>) -> Vec<MessageRef> + Send + Sync + 'static,
    ) -> Self {
        self.history_modifier = Some(Arc::new(modify));
        self
    }

    /// The model parameters set.
    pub fn params(&self) -> &ModelParams {
        &self.params
    }

    /// The tool option `key`, if set (a tool reads it with
    /// [`ToolContext::tool_option_value`](crate::ToolContext::tool_option_value)).
    pub fn tool_option_value(&self, key: &str) -> Option<&serde_json::Value> {
        self.tool_options.get(key)
    }
}

impl fmt::Debug for AgentRunOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentRunOptions")
            .field("params", &self.params)
            .field("instruction", &self.instruction)
            .field("tool_options", &self.tool_options)
            .field("history_modifier", &self.history_modifier.is_some())
            .finish()
    }
}

/// Options of one run, addressed to agents by name; see the [module docs](self).
#[derive(Clone, Default, Debug)]
pub struct RunOptions {
    agents: HashMap<Arc<str>, AgentRunOptions>,
    frontend_tools: Vec<ToolDefinition>,
}

impl RunOptions {
    /// No options.
    pub fn new() -> Self {
        Self::default()
    }

    /// No options, shared: what a run starts with (no allocation per run).
    #[inline]
    pub(crate) fn shared_default() -> Arc<RunOptions> {
        static NONE: std::sync::OnceLock<Arc<RunOptions>> = std::sync::OnceLock::new();
        Arc::clone(NONE.get_or_init(Arc::default))
    }

    /// Addresses `options` to the agent named `name` (replacing any given before).
    pub fn agent(mut self, name: impl Into<Arc<str>>, options: AgentRunOptions) -> Self {
        self.agents.insert(name.into(), options);
        self
    }

    /// The options addressed to the agent named `name`.
    pub fn for_agent(&self, name: &str) -> Option<&AgentRunOptions> {
        self.agents.get(name)
    }

    /// Whether no agent is addressed.
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }

    /// Adds tools the caller runs (a front end's, offered for this run only). Every
    /// [`ChatModelAgent`](crate::ChatModelAgent) of the run offers them to its model after
    /// its own tools and built-ins (a tool named like one of those is left out for that
    /// agent). A call to one stops the run with an interrupt whose info is
    /// `{"frontendTool": NAME, "toolCallId": ID, "arguments": TEXT}`: the caller runs the tool
    /// and resumes the interrupt with the result as resume data (a string is given to the
    /// model as it is, other JSON as its text). Give the resume the same tools (at least the
    /// ones it answers), since options are not stored in the checkpoint.
    ///
    /// ```
    /// use agentweave_runtime::model::ToolDefinition;
    /// use agentweave_runtime::RunOptions;
    /// let options = RunOptions::new().frontend_tools([ToolDefinition {
    ///     name: "pick_date".into(),
    ///     description: "Lets the user pick a date in the calendar; returns it.".into(),
    ///     parameters: serde_json::json!({"type": "object", "properties": {}}),
    /// }]);
    /// assert_eq!(options.frontend_tool_definitions()[0].name, "pick_date");
    /// ```
    pub fn frontend_tools(mut self, tools: impl IntoIterator<Item = ToolDefinition>) -> Self {
        self.frontend_tools.extend(tools);
        self
    }

    /// The front-end tools of the run (see [`frontend_tools`](RunOptions::frontend_tools)).
    pub fn frontend_tool_definitions(&self) -> &[ToolDefinition] {
        &self.frontend_tools
    }
}
