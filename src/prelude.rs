//! The names most programs need: `use agentweave::prelude::*;` (25 names).

pub use crate::model::ChatModel;
pub use crate::tool::{tool_fn, Tool};
pub use crate::{agent, flow};
pub use crate::{
    set_sub_agents, Action, Agent, AgentContext, AgentError, AgentEvent, AgentInput, AgentResult,
    AgentSpec, ChatModelAgent, EventStream, Exit, FlowAgent, FnAgent, Message, ResumeRequest, Role,
    RunRequest, Runner, TurnRequest,
};
