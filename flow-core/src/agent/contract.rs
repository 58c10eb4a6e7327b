//! The agent contract: [`Agent`] (what runs), [`AgentInfo`] (its name and description) and
//! [`OnSubAgents`] (hooks on its place in a tree).

use std::sync::Arc;

use super::{AgentInput, EventStream, FlowAgent, RunContext};
use crate::error::FlowError;
use crate::event::{AgentError, AgentEvent};
use crate::resume::ResumeInfo;

/// Name and description of an agent, as hooks and tools see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentInfo {
    /// The agent's unique name in its tree.
    pub name: Arc<str>,
    /// What the agent is for (shown to models choosing a transfer target).
    pub description: Arc<str>,
}

/// Something that runs on an input and streams events.
///
/// Implement it for agents with their own control flow; most agents are written with
/// `#[agent]` (from the `agentweave` facade) or [`FnAgent`](crate::FnAgent) instead.
/// The event stream must own what it needs (it is `'static`): take `self: Arc<Self>` into it.
///
/// ```
/// use std::sync::Arc;
/// use agentweave_runtime::{Agent, AgentEvent, AgentInput, EventStream, Message, RunContext};
///
/// struct Echo;
/// impl Agent for Echo {
///     fn name(&self) -> &str { "echo" }
///     fn run(self: Arc<Self>, _cx: RunContext, input: AgentInput) -> EventStream {
///         let last = input.messages.last().map(|m| m.content.clone()).unwrap_or_default();
///         EventStream::from_events([AgentEvent::message(Message::assistant(last))])
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an agent: it does not implement `Agent`",
    label = "not an agent",
    note = "implement `Agent`, or use `#[agent]`: on an async fn, or on a struct and on its impl \
            block holding `async fn run(&self, cx: &AgentContext, input: AgentInput)`"
)]
pub trait Agent: Send + Sync + 'static {
    /// The agent's name: unique within a tree, used for transfers and run paths.
    fn name(&self) -> &str;

    /// What the agent does (the doc comment, for `#[agent]`).
    fn description(&self) -> &str {
        ""
    }

    /// Runs the agent. `cx.run_path()` is this agent's own path in the run.
    fn run(self: Arc<Self>, cx: RunContext, input: AgentInput) -> EventStream;

    /// Resumes the agent after an interrupt. `info` says whether this agent raised the
    /// interrupt (with its saved state and the caller's resume data) or, for a wrapper, which
    /// sub-agents hold pending interrupts. `input` is built as for [`run`](Agent::run), from
    /// the restored session.
    ///
    /// The default reports [`AgentError::NotResumable`]: override it for agents that interrupt.
    fn resume(self: Arc<Self>, cx: RunContext, input: AgentInput, info: ResumeInfo) -> EventStream {
        let _ = (input, info);
        let error = AgentError::NotResumable {
            agent: cx.agent_name().into(),
        };
        EventStream::from_events([AgentEvent::error(error)])
    }

    /// Whether this agent runs its sub-agents itself, as the workflow agents
    /// ([`Sequential`](crate::Sequential), [`Parallel`](crate::Parallel),
    /// [`Loop`](crate::Loop)) do. [`set_sub_agents`](crate::set_sub_agents) then bars each of
    /// its sub-agents from transferring to it (as
    /// [`FlowAgent::disallow_transfer_to_parent`] does): a sub-agent handing control back up
    /// would run the workflow again from its start. Wrappers delegate it to the agent they wrap.
    fn runs_its_sub_agents(&self) -> bool {
        false
    }

    /// Whether this agent runs agents of its own that its tree cannot see: a custom agent
    /// wrapping a tree (`struct Wrapper(FlowAgent)` whose `run` and `resume` run the tree it
    /// holds). A checkpoint may then name, below this agent, agents only it knows (plain names;
    /// its `resume` is given them). A custom agent that is a leaf of a tree is taken to be one
    /// whatever it says; the root of a runner (Eino's usual layout: the runner's agent wraps
    /// the whole tree) must say so by returning `true`, since a lone root agent is otherwise
    /// checked by name like any agent (a checkpoint naming another agent is refused).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agentweave_runtime::{Agent, AgentInput, EventStream, FlowAgent, ResumeInfo, RunContext};
    ///
    /// /// Wraps a whole tree; the runner's root.
    /// struct Wrapper(FlowAgent);
    ///
    /// impl Agent for Wrapper {
    ///     fn name(&self) -> &str {
    ///         "wrapper"
    ///     }
    ///     fn run(self: Arc<Self>, cx: RunContext, input: AgentInput) -> EventStream {
    ///         Arc::new(self.0.clone()).run(cx, input)
    ///     }
    ///     fn resume(self: Arc<Self>, cx: RunContext, input: AgentInput, info: ResumeInfo) -> EventStream {
    ///         Arc::new(self.0.clone()).resume(cx, input, info)
    ///     }
    ///     fn runs_agents_of_its_own(&self) -> bool {
    ///         true
    ///     }
    /// }
    /// ```
    fn runs_agents_of_its_own(&self) -> bool {
        false
    }

    /// Whether this agent is a [`FlowAgent`] (a whole tree used as one node's agent).
    #[doc(hidden)]
    fn as_flow(&self) -> Option<&FlowAgent> {
        None
    }

    /// Whether this agent is a [`ChatModelAgent`](crate::ChatModelAgent): a host that runs
    /// model and tool calls elsewhere (a Temporal activity) finds the agent's model and tools
    /// through it. Wrappers delegate it to the agent they wrap.
    fn as_chat_model_agent(&self) -> Option<&crate::ChatModelAgent> {
        None
    }

    /// The agent's tree hooks, if it wants to hear about its place in a tree.
    fn on_sub_agents(&self) -> Option<&dyn OnSubAgents> {
        None
    }
}

/// Hooks an agent can implement to learn about its place in a tree as it is built
/// (see [`set_sub_agents`](crate::set_sub_agents)). Any error aborts the construction.
pub trait OnSubAgents: Send + Sync {
    /// This agent was given sub-agents.
    fn on_set_sub_agents(&self, sub_agents: &[AgentInfo]) -> Result<(), FlowError> {
        let _ = sub_agents;
        Ok(())
    }

    /// This agent was made a sub-agent of `parent`.
    fn on_set_as_sub_agent(&self, parent: &AgentInfo) -> Result<(), FlowError> {
        let _ = parent;
        Ok(())
    }

    /// This agent was barred from transferring to its parent.
    fn on_disallow_transfer_to_parent(&self) -> Result<(), FlowError> {
        Ok(())
    }
}
