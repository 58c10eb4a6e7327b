//! What an event asks the framework to do next: [`Action`], and the interrupt it may carry
//! ([`InterruptInfo`] with its address of [`InterruptFrame`]s and [`ToolFrame`]s).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::run_path::RunPath;

/// Why a run stopped for outside input; carried by [`Action::Interrupted`].
///
/// The interrupting agent sets [`info`](InterruptInfo::info) and, if it wants it back on
/// resume, [`state`](InterruptInfo::state). The framework fills in the rest as the event travels
/// up: the [`address`](InterruptInfo::address) (one frame per level of the tree the interrupt
/// crossed, outermost first) and the [`id`](InterruptInfo::id) that resume data is addressed to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct InterruptInfo {
    /// What the interrupting agent wants the caller to know (shown to a human, for instance).
    pub info: serde_json::Value,
    /// State the agent wants back when it is resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<serde_json::Value>,
    /// The interrupt's id: the run path of the interrupting agent (e.g. `desk/refund`), so it is
    /// unique within a run and readable. Set by the framework.
    #[serde(default)]
    pub id: String,
    /// Where the interrupt happened, structurally: the nodes it crossed, outermost first. Set
    /// by the framework.
    #[serde(default)]
    pub address: Vec<InterruptFrame>,
    /// What a wrapper agent attached while forwarding, moved into its frame by its flow
    /// (boxed: rare, and every event carrying an action moves this struct).
    #[serde(skip)]
    pub(crate) wrapper: Option<Box<WrapperAttachments>>,
}

/// What a wrapper agent attaches to an interrupt it forwards.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct WrapperAttachments {
    /// State the wrapper gets back on resume.
    pub(crate) state: Option<serde_json::Value>,
    /// The tool call it forwarded the interrupt from.
    pub(crate) tool: Option<ToolFrame>,
}

impl InterruptInfo {
    /// An interrupt carrying `info`.
    pub fn new(info: serde_json::Value) -> Self {
        InterruptInfo {
            info,
            ..InterruptInfo::default()
        }
    }

    /// The same interrupt with state to get back on resume.
    pub fn with_state(mut self, state: serde_json::Value) -> Self {
        self.state = Some(state);
        self
    }

    /// The address in text form: `agent:A;agent:B`, with `tool:NAME:CALL_ID` for a frame that
    /// crossed a tool boundary.
    pub fn address_string(&self) -> String {
        let mut out = String::new();
        for (i, frame) in self.address.iter().enumerate() {
            if i > 0 {
                out.push(';');
            }
            out.push_str("agent:");
            out.push_str(&frame.agent);
            if let Some(tool) = &frame.tool {
                out.push_str(";tool:");
                out.push_str(&tool.name);
                out.push(':');
                out.push_str(&tool.call_id);
            }
        }
        out
    }
}

/// One level of an interrupt's address: the tree node that was running at that level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterruptFrame {
    /// The node's agent.
    pub agent: Arc<str>,
    /// The run path it was running at.
    pub run_path: RunPath,
    /// State its agent attached while forwarding the interrupt (wrapper agents: which child
    /// was running, the loop iteration, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<serde_json::Value>,
    /// Set when the interrupt crossed from inside a tool of this agent (an agent used as a tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolFrame>,
}

/// The tool call an interrupt crossed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolFrame {
    /// The tool's name.
    pub name: String,
    /// The call's id.
    pub call_id: String,
}

/// What the emitting agent asks the framework to do next.
///
/// Only the last action among an agent's own recorded events steers the run, once the agent's
/// event stream has ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// End the run here.
    Exit,
    /// Hand control to the named agent (a sub-agent, or the parent unless barred).
    TransferToAgent(Arc<str>),
    /// Stop the run for outside input; it can be resumed from a checkpoint. Boxed: an
    /// interrupt is rare, and every event moves its action.
    Interrupted(Box<InterruptInfo>),
    /// Stop the enclosing loop workflow; names the agent that broke it.
    BreakLoop(Arc<str>),
    /// Application-defined action, passed through untouched.
    Custom(Arc<serde_json::Value>),
    /// A delegated agent (a node in [`Delegation::Task`](crate::Delegation::Task) or
    /// [`Delegation::SingleTurn`](crate::Delegation::SingleTurn) mode) is done: control returns
    /// to its parent, which runs again in the same turn with this result (JSON). The event's
    /// message, if any, is what the parent sees of the task.
    Finish(Arc<serde_json::Value>),
}

impl Action {
    /// A transfer to the named agent.
    pub fn transfer_to(agent_name: impl Into<Arc<str>>) -> Self {
        Action::TransferToAgent(agent_name.into())
    }

    /// An interrupt: the run stops for outside input (see [`InterruptInfo`]).
    ///
    /// ```
    /// use agentweave_runtime::{Action, InterruptInfo};
    /// let action = Action::interrupted(InterruptInfo::new(serde_json::json!("approve?")));
    /// assert!(matches!(action, Action::Interrupted(info) if info.info == "approve?"));
    /// ```
    pub fn interrupted(info: InterruptInfo) -> Self {
        Action::Interrupted(Box::new(info))
    }

    /// A delegated agent's result: see [`Action::Finish`].
    pub fn finish(result: serde_json::Value) -> Self {
        Action::Finish(Arc::new(result))
    }

    /// The transfer target, if this is a transfer.
    pub fn transfer_target(&self) -> Option<&str> {
        match self {
            Action::TransferToAgent(name) => Some(name),
            _ => None,
        }
    }
}
