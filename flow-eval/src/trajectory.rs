//! What a turn did: its [`Trajectory`] (agents run, tool calls, transfers, with run paths) and
//! its [`Metrics`] (tokens, calls, time), gathered by a [`TrajectoryRecorder`] middleware.
//!
//! The recorder is runner middleware, so it sees every agent of the run, including those
//! running inside an [`AgentTool`](agentweave_runtime::AgentTool) (its inner run inherits the
//! runner's middleware) and inside workflows (sequential, parallel, loop): each step carries
//! the run path where it happened, e.g. `desk/refund` or `assistant/researcher`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentweave_runtime::middleware::{HookContext, HookError, Middleware};
use agentweave_runtime::model::Usage;
use agentweave_runtime::{Action, AgentInput, Message, ToolCall};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// One step of a trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Step {
    /// An agent started running.
    Agent {
        /// Its name.
        agent: String,
        /// Its run path, e.g. `desk/refund`.
        run_path: String,
    },
    /// An agent called a tool (the built-in transfer and exit tools are not listed: a transfer
    /// is its own step).
    Tool {
        /// The tool.
        tool: String,
        /// The arguments: their JSON, or the text as the model wrote it if it is not JSON.
        arguments: serde_json::Value,
        /// The calling agent.
        agent: String,
        /// The calling agent's run path.
        run_path: String,
    },
    /// An agent handed control to another.
    Transfer {
        /// The agent that transferred.
        from: String,
        /// The agent it transferred to.
        to: String,
        /// The run path of the agent that transferred.
        run_path: String,
    },
}

impl Step {
    /// The step in one short line: `agent desk/refund`, `tool issue_refund {"order_id":42}
    /// (desk/refund)`, `transfer triage -> refund`.
    pub fn describe(&self) -> String {
        match self {
            Step::Agent { run_path, .. } => format!("agent {run_path}"),
            Step::Tool {
                tool,
                arguments,
                run_path,
                ..
            } => format!("tool {tool} {arguments} ({run_path})"),
            Step::Transfer { from, to, .. } => format!("transfer {from} -> {to}"),
        }
    }
}

/// The steps of one turn, in the order they happened.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    /// The steps.
    pub steps: Vec<Step>,
}

impl Trajectory {
    /// The agents that ran, as run paths.
    pub fn agents(&self) -> Vec<&str> {
        self.steps
            .iter()
            .filter_map(|s| match s {
                Step::Agent { run_path, .. } => Some(run_path.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tools called, by name.
    pub fn tools(&self) -> Vec<&str> {
        self.steps
            .iter()
            .filter_map(|s| match s {
                Step::Tool { tool, .. } => Some(tool.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// What a turn cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Tokens the models reported.
    pub usage: Usage,
    /// Model calls.
    pub model_calls: u64,
    /// Tool calls (not counting the built-in transfer and exit tools).
    pub tool_calls: u64,
    /// Transfers between agents.
    pub transfers: u64,
    /// Wall time of the turn, in milliseconds.
    pub wall_ms: u64,
}

impl Metrics {
    /// The turn's wall time.
    pub fn wall_time(&self) -> Duration {
        Duration::from_millis(self.wall_ms)
    }
}

#[derive(Default)]
struct Record {
    trajectory: Trajectory,
    metrics: Metrics,
}

/// Runner middleware that records the [`Trajectory`] and [`Metrics`] of the runs it sees.
///
/// ```
/// # futures::executor::block_on(async {
/// use agentweave_eval::trajectory::{Step, TrajectoryRecorder};
/// use agentweave_runtime::{set_sub_agents, FlowAgent, FnAgent, Runner};
/// use futures::StreamExt;
///
/// let triage = FnAgent::new("triage", |cx, _| async move { cx.transfer("refund"); Ok(()) });
/// let refund = FnAgent::new("refund", |cx, _| async move { cx.say("Done."); Ok(()) });
/// let desk = set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refund)]).unwrap();
/// let recorder = TrajectoryRecorder::new();
/// let _: Vec<_> = Runner::builder(desk).middleware(recorder.clone()).build().run("refund!").collect().await;
/// let (trajectory, metrics) = recorder.take();
/// let lines: Vec<String> = trajectory.steps.iter().map(Step::describe).collect();
/// assert_eq!(lines, ["agent triage", "transfer triage -> refund", "agent triage/refund"]);
/// assert_eq!(metrics.transfers, 1);
/// # });
/// ```
#[derive(Clone, Default)]
pub struct TrajectoryRecorder {
    record: Arc<Mutex<Record>>,
}

impl TrajectoryRecorder {
    /// A recorder with nothing recorded.
    pub fn new() -> Self {
        TrajectoryRecorder::default()
    }

    /// What was recorded since the last `take`, leaving the recorder empty (wall time is left
    /// at 0 for the caller to set).
    pub fn take(&self) -> (Trajectory, Metrics) {
        let record = std::mem::take(&mut *self.lock());
        (record.trajectory, record.metrics)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The arguments of a tool call as JSON (the text itself if it is not JSON; `{}` if empty).
pub(crate) fn arguments_json(arguments: &str) -> serde_json::Value {
    if arguments.trim().is_empty() {
        return serde_json::json!({});
    }
    serde_json::from_str(arguments)
        .unwrap_or_else(|_| serde_json::Value::String(arguments.to_owned()))
}

#[async_trait]
impl Middleware for TrajectoryRecorder {
    async fn before_agent(
        &self,
        cx: &HookContext,
        _input: &mut AgentInput,
    ) -> Result<Option<Message>, HookError> {
        self.lock().trajectory.steps.push(Step::Agent {
            agent: cx.agent_name().to_owned(),
            run_path: cx.run_path().to_string(),
        });
        Ok(None)
    }

    async fn after_agent(&self, cx: &HookContext) -> Result<(), HookError> {
        // The last action among the agent's own recorded events is the one that steers.
        let path = cx.run_path();
        let last = cx
            .session()
            .events()
            .into_iter()
            .rev()
            .filter(|e| e.run_path() == path)
            .find_map(|e| e.action().cloned());
        if let Some(Action::TransferToAgent(to)) = last {
            let mut record = self.lock();
            record.metrics.transfers += 1;
            record.trajectory.steps.push(Step::Transfer {
                from: cx.agent_name().to_owned(),
                to: to.to_string(),
                run_path: path.to_string(),
            });
        }
        Ok(())
    }

    async fn after_model(&self, _cx: &HookContext, reply: &mut Message) -> Result<(), HookError> {
        let mut record = self.lock();
        record.metrics.model_calls += 1;
        if let Some(usage) = &reply.usage {
            record.metrics.usage += **usage;
        }
        Ok(())
    }

    async fn before_tool(
        &self,
        cx: &HookContext,
        call: &mut ToolCall,
    ) -> Result<Option<String>, HookError> {
        let mut record = self.lock();
        record.metrics.tool_calls += 1;
        record.trajectory.steps.push(Step::Tool {
            tool: call.name.clone(),
            arguments: arguments_json(&call.arguments),
            agent: cx.agent_name().to_owned(),
            run_path: cx.run_path().to_string(),
        });
        Ok(None)
    }
}
