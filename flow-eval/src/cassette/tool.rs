//! [`RecordingTool`] records a tool's calls into a [`Cassette`]; [`ReplayTool`] answers from
//! one, so a replayed test never runs the tool (never pays a refund).

use agentweave_runtime::{Tool, ToolContext, ToolError};
use async_trait::async_trait;

use super::file::{arguments_value, Interaction, ToolInteraction, ToolResult};
use super::handle::Cassette;

/// A [`Tool`] that runs `T` and records each call's arguments and result in a [`Cassette`].
///
/// Results and the failures a model reads ([`ToolError::Failed`],
/// [`ToolError::InvalidArguments`], a timeout or a panic, recorded as failed) are recorded; an
/// interrupt or a middleware refusal is passed on unrecorded (it is not an answer).
///
/// Wrap leaf tools, not an [`AgentTool`](agentweave_runtime::AgentTool): wrapping an agent tool
/// would replay its answer without running the agents inside it, so their steps would be
/// missing from the trajectory. Record the models and tools inside it instead.
pub struct RecordingTool<T: Tool> {
    inner: T,
    cassette: Cassette,
}

impl<T: Tool> RecordingTool<T> {
    /// Records the calls of `inner` into `cassette`.
    pub fn new(inner: T, cassette: Cassette) -> Self {
        RecordingTool { inner, cassette }
    }
}

#[async_trait]
impl<T: Tool> Tool for RecordingTool<T> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn parameters(&self) -> serde_json::Value {
        self.inner.parameters()
    }

    async fn call(&self, cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
        let answer = self.inner.call(cx, arguments).await;
        let result = match &answer {
            Ok(text) => Some(ToolResult::Ok(text.clone())),
            Err(ToolError::Failed { message, .. }) => Some(ToolResult::Failed(message.to_string())),
            Err(ToolError::InvalidArguments { message, .. }) => {
                Some(ToolResult::InvalidArguments(message.to_string()))
            }
            Err(e @ (ToolError::TimedOut { .. } | ToolError::Panicked { .. })) => {
                Some(ToolResult::Failed(e.to_string()))
            }
            Err(_) => None,
        };
        if let Some(result) = result {
            self.cassette.push(Interaction::Tool(ToolInteraction {
                name: self.inner.name().to_owned(),
                agent: cx.run_context().run_path().to_string(),
                arguments: arguments_value(arguments),
                result,
            }));
        }
        answer
    }
}

/// A [`Tool`] with the name, description and parameters of `T` that answers from a
/// [`Cassette`] and never runs `T`.
///
/// A call is matched by the tool's name and its arguments (as JSON, key order aside) among the
/// recorded calls not answered yet. A call the cassette did not record fails
/// ([`ToolError::Failed`], carrying the [`ReplayError`](super::ReplayError)'s text, which the
/// typed error in [`Cassette::errors`] also holds).
pub struct ReplayTool<T: Tool> {
    inner: T,
    cassette: Cassette,
}

impl<T: Tool> ReplayTool<T> {
    /// Answers the calls of `inner` from `cassette`.
    pub fn new(inner: T, cassette: Cassette) -> Self {
        ReplayTool { inner, cassette }
    }
}

#[async_trait]
impl<T: Tool> Tool for ReplayTool<T> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn parameters(&self) -> serde_json::Value {
        self.inner.parameters()
    }

    async fn call(&self, _cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
        let name = self.inner.name();
        match self.cassette.take_tool(name, &arguments_value(arguments)) {
            Ok(ToolResult::Ok(text)) => Ok(text),
            Ok(ToolResult::Failed(message)) => Err(ToolError::failed(name, message)),
            Ok(ToolResult::InvalidArguments(message)) => {
                Err(ToolError::invalid_arguments(name, message))
            }
            Err(e) => Err(ToolError::failed(name, e)),
        }
    }
}

/// A tool known only by its recorded definition (a replayed toolset's, see
/// [`Cassette::replay_toolset`]): [`ReplayTool`] answers its calls, so it never runs.
pub(crate) struct RecordedTool(pub(crate) agentweave_runtime::model::ToolDefinition);

#[async_trait]
impl Tool for RecordedTool {
    fn name(&self) -> &str {
        &self.0.name
    }

    fn description(&self) -> &str {
        &self.0.description
    }

    fn parameters(&self) -> serde_json::Value {
        self.0.parameters.clone()
    }

    async fn call(&self, _cx: &ToolContext, _arguments: &str) -> Result<String, ToolError> {
        Err(ToolError::failed(
            self.0.name.as_str(),
            "a recorded tool has no body: it is replayed from its cassette",
        ))
    }
}
