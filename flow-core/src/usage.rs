//! Token usage: what one model call cost ([`Usage`], carried by the reply's
//! [`Message::usage`](crate::Message::usage)) and what a run cost, per agent and per model
//! ([`UsageReport`], read with [`Session::usage`](crate::Session::usage)).
//!
//! A [`ChatModelAgent`](crate::ChatModelAgent) adds the usage of every reply it gets to its
//! run's session. The report is kept among the session values under [`USAGE_SESSION_KEY`], so it
//! is saved in checkpoints with them and a resumed run goes on counting from where it stopped;
//! an [`AgentTool`](crate::AgentTool)'s inner run shares the caller's values, so its calls count
//! in the caller's run too.

use std::collections::BTreeMap;
use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

/// The session value under which a run's [`UsageReport`] is kept.
pub const USAGE_SESSION_KEY: &str = "agentflow.usage";

/// Tokens one model call used, as the server reported them (or a sum of several calls).
///
/// `cached_input_tokens` and `reasoning_tokens` are `None` when the server did not say;
/// they are parts of `input_tokens` and `output_tokens`, not additions to them (as the OpenAI
/// protocol counts them).
///
/// ```
/// use agentweave_runtime::model::Usage;
/// let a = Usage::new(120, 30).with_cached_input(100);
/// let b = Usage::new(80, 20).with_reasoning(5);
/// let sum = a + b;
/// assert_eq!((sum.input_tokens, sum.output_tokens, sum.total_tokens()), (200, 50, 250));
/// assert_eq!((sum.cached_input_tokens, sum.reasoning_tokens), (Some(100), Some(5)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the prompt (the request's messages and tool definitions).
    pub input_tokens: u64,
    /// Tokens of the reply.
    pub output_tokens: u64,
    /// Of the input tokens, those the server read from its prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// Of the output tokens, those the model spent reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

impl Usage {
    /// Usage of `input_tokens` prompt tokens and `output_tokens` reply tokens.
    pub const fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Usage {
            input_tokens,
            output_tokens,
            cached_input_tokens: None,
            reasoning_tokens: None,
        }
    }

    /// This usage with the cached part of the input.
    pub const fn with_cached_input(mut self, tokens: u64) -> Self {
        self.cached_input_tokens = Some(tokens);
        self
    }

    /// This usage with the reasoning part of the output.
    pub const fn with_reasoning(mut self, tokens: u64) -> Self {
        self.reasoning_tokens = Some(tokens);
        self
    }

    /// Input plus output tokens.
    pub const fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

fn add_reported(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens =
            add_reported(self.cached_input_tokens, other.cached_input_tokens);
        self.reasoning_tokens = add_reported(self.reasoning_tokens, other.reasoning_tokens);
    }
}

impl Add for Usage {
    type Output = Usage;
    fn add(mut self, other: Usage) -> Usage {
        self += other;
        self
    }
}

/// The usage of a run: its total, and totals per agent and per model, with the number of model
/// calls that reported usage.
///
/// ```
/// # futures::executor::block_on(async {
/// use agentweave_runtime::model::{ScriptStep, ScriptedModel, Usage};
/// use agentweave_runtime::{ChatModelAgent, FlowAgent, RunRequest, Runner, Session};
/// use futures::StreamExt;
/// use std::sync::Arc;
///
/// let model = ScriptedModel::new([ScriptStep::text("Hello!").with_usage(Usage::new(12, 3))]);
/// let agent = ChatModelAgent::builder("greeter", model).build().unwrap();
/// let session = Session::new();
/// let events: Vec<_> = Runner::new(FlowAgent::new(agent))
///     .run(RunRequest::new([agentweave_runtime::Message::user("hi")]).session(Arc::clone(&session)))
///     .collect()
///     .await;
/// assert_eq!(events[0].usage(), Some(&Usage::new(12, 3)));
/// let report = session.usage();
/// assert_eq!(report.total, Usage::new(12, 3));
/// assert_eq!(report.by_agent["greeter"].calls, 1);
/// assert_eq!(report.by_model["scripted"].usage.output_tokens, 3);
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UsageReport {
    /// All calls of the run.
    pub total: Usage,
    /// How many model calls reported usage.
    pub calls: u64,
    /// Per agent name.
    #[serde(default)]
    pub by_agent: BTreeMap<String, UsageTotal>,
    /// Per model name ([`ChatModel::model_name`](crate::ChatModel::model_name)).
    #[serde(default)]
    pub by_model: BTreeMap<String, UsageTotal>,
}

/// The usage of some of a run's calls (one agent's, or one model's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UsageTotal {
    /// Their usage, summed.
    pub usage: Usage,
    /// How many calls.
    pub calls: u64,
}

impl UsageReport {
    /// Adds one call of `model` made by `agent`.
    pub fn add(&mut self, agent: &str, model: &str, usage: Usage) {
        self.total += usage;
        self.calls += 1;
        for (map, key) in [(&mut self.by_agent, agent), (&mut self.by_model, model)] {
            let entry = map.entry(key.to_owned()).or_default();
            entry.usage += usage;
            entry.calls += 1;
        }
    }
}
