//! Workflow agents: [`Sequential`], [`Parallel`] and [`Loop`] run a node's sub-agents in a
//! fixed pattern, [`DeterministicTransfer`] hands off to fixed agents, and an [`AgentTool`]
//! lets a model call a whole tree as a tool.

pub use agentweave_runtime::workflow::*;
pub use agentweave_runtime::AgentTool;
