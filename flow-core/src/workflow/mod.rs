//! Workflow agents: [`Sequential`], [`Parallel`] and [`Loop`] run the sub-agents of their tree
//! node in a fixed pattern, instead of letting a model choose who goes next.
//!
//! # Building one
//!
//! A workflow agent is the agent of a [`FlowAgent`] node; its sub-agents are that node's
//! sub-agents, read when it runs. Either form builds the same tree:
//!
//! ```
//! use agentweave_runtime::{FlowAgent, FnAgent, Sequential};
//! let draft = FlowAgent::new(FnAgent::new("draft", |cx, _| async move { cx.say("v1"); Ok(()) }));
//! let edit = FlowAgent::new(FnAgent::new("edit", |cx, _| async move { cx.say("v2"); Ok(()) }));
//! let pipeline = Sequential::new("pipeline").with_sub_agents([draft, edit]).unwrap();
//! // the same as FlowAgent::new(Sequential::new("pipeline")).with_sub_agents([draft, edit])
//! assert_eq!(pipeline.shape(), "pipeline(draft^,edit^)");
//! ```
//!
//! A workflow node can sit anywhere in a tree (the root, a transfer target, a sub-agent of
//! another workflow) and its sub-agents can be trees of their own.
//!
//! # What a sub-agent sees and where it runs
//!
//! Every sub-agent is run as its own [`FlowAgent`]: its input is built by the usual history
//! rules from the run's record, so the second agent of a sequence sees what the first said
//! (rewritten as context by its policy), its own events are recorded, and transfers to its own
//! sub-agents are followed. Run paths record the order of the hops:
//!
//! | workflow at path `W` | its sub-agents run at |
//! | --- | --- |
//! | `Sequential` with `s1, s2, s3` | `W/s1`, `W/s1/s2`, `W/s1/s2/s3` |
//! | `Parallel` with lanes `a, b` | `W/a` and `W/b`, concurrently |
//! | `Map` named `m` at `P/m`, with `a`, over `n` items | `P/m[0]/a` ... `P/m[n-1]/a`, a bounded number at once |
//! | `Loop` with `a, b` | `W/a`, `W/a/b`, `W/a/b/a`, `W/a/b/a/b`, ... |
//!
//! # How sub-agents steer a workflow
//!
//! - **Transfer back up.** A workflow runs its sub-agents itself, so they are barred from
//!   transferring to it ([`Agent::runs_its_sub_agents`]): a model is not offered the
//!   workflow as a target, and a transfer to it in code ends that sub-agent with the error
//!   event `transfer refused: ...` (which then ends the workflow, as any error does). A
//!   sub-agent may transfer to its own sub-agents; the workflow goes on when that chain ends.
//! - **Exit.** An [`Action::Exit`] in a sub-agent's run ends the workflow there: no further
//!   sub-agent or iteration runs, and an enclosing workflow ends too. In a [`Parallel`], the
//!   other lanes still run to their end.
//! - **BreakLoop.** An [`Action::BreakLoop`] (see [`Context::break_loop`](crate::Context::break_loop))
//!   stops the innermost enclosing [`Loop`] once the sub-agent run it came from ends; the
//!   event is passed on as it is, naming the agent that broke the loop. A [`Sequential`] or
//!   [`Parallel`] in between does not stop for it; a loop around the one that stopped ignores
//!   it.
//! - **Errors.** An error event in a sub-agent's run ends a [`Sequential`] or [`Loop`] once
//!   that run ends; a [`Parallel`] lets its other lanes finish.
//!
//! # Interrupts and resume
//!
//! An interrupt inside a sub-agent ends the workflow after that sub-agent's stream ends. The
//! workflow attaches its position to the interrupt
//! ([`AgentEvent::attach_interrupt_state`](crate::AgentEvent::attach_interrupt_state)) and
//! [`Agent::resume`] uses it to resume the interrupted sub-agent at the run path it had, then
//! carries on with the rest; sub-agents that finished before the interrupt are not run again.
//!
//! | workflow | state attached to each interrupt it forwards |
//! | --- | --- |
//! | `Sequential` | `{"child": k}`: index of the interrupted sub-agent (from 0) |
//! | `Loop` | `{"iteration": i, "child": k}`: both from 0 |
//! | `Parallel` | `{"interrupted": ["a", ...]}`: the lanes that interrupted, in order |
//!
//! A [`Parallel`] holds the interrupts of its lanes until every lane has ended, then emits
//! them one after the other, so the record is complete when the first reaches the caller.
//! On resume it resumes only the lanes that interrupted.
//!
//! Workflow errors (no sub-agents, a resume that does not fit) are [`WorkflowError`]s,
//! carried by an error event as [`AgentError::Custom`] (find them with
//! [`AgentError::downcast_ref`]).

mod deterministic;
mod loop_agent;
mod map;
mod parallel;
mod sequential;

use std::sync::Arc;

use futures::StreamExt;

use crate::agent::Context;
use crate::agent::FlowAgent;
use crate::agent::{Agent, AgentInput, RunContext};
#[cfg(doc)]
use crate::event::AgentEvent;
use crate::event::{Action, AgentError};
use crate::resume::ResumeInfo;
use crate::run_path::RunPath;

pub use deterministic::DeterministicTransfer;
pub use loop_agent::Loop;
pub use map::{Map, MapItemError, MapItems, MapOutput, MapPolicy, MapResultError};
pub use parallel::Parallel;
pub use sequential::Sequential;

/// A workflow agent could not run or resume.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WorkflowError {
    /// The workflow ran without sub-agents (outside a tree node, or in a node without any).
    #[error(
        "{kind} workflow '{workflow}' has no sub-agents to run; give it some with \
         set_sub_agents (or {kind}::with_sub_agents) and run the FlowAgent node it returns"
    )]
    NoSubAgents {
        /// `Sequential`, `Parallel` or `Loop`.
        kind: &'static str,
        /// The workflow's name.
        workflow: Arc<str>,
    },
    /// A loop was built with a limit of 0 iterations.
    #[error(
        "Loop workflow '{workflow}' has max_iterations 0, so it would never run its \
         sub-agents; use at least 1, or Loop::unbounded for a loop that only BreakLoop or \
         Exit ends"
    )]
    ZeroIterations {
        /// The loop's name.
        workflow: Arc<str>,
    },
    /// A [`Map`] was built with a concurrency of 0.
    #[error(
        "Map workflow '{workflow}' has concurrency 0, so no item would ever run; use at least 1"
    )]
    ZeroConcurrency {
        /// The map's name.
        workflow: Arc<str>,
    },
    /// A [`Map`]'s node has more than one sub-agent (it runs one agent per item).
    #[error(
        "Map workflow '{workflow}' has {found} sub-agents, but a map runs one agent per item; \
         give it exactly one (a Sequential or another workflow node if each item needs several)"
    )]
    MapSubAgents {
        /// The map's name.
        workflow: Arc<str>,
        /// How many sub-agents its node has.
        found: usize,
    },
    /// A [`Map`] found no list of items where its [`MapItems`] says.
    #[error("Map workflow '{workflow}' has no list of items to run over: {message}")]
    MapItems {
        /// The map's name.
        workflow: Arc<str>,
        /// What was found instead.
        message: Arc<str>,
    },
    /// Too many items of a [`Map`] failed for its [`MapPolicy`]; its output (recorded before
    /// this error) keeps the results of the items that succeeded.
    #[error(
        "Map workflow '{workflow}': {succeeded} of {items} items succeeded, {needed} needed \
         (first failure: {first}); the results so far are in its output message"
    )]
    MapFailed {
        /// The map's name.
        workflow: Arc<str>,
        /// How many items the list had.
        items: usize,
        /// How many succeeded.
        succeeded: usize,
        /// How many its policy needed.
        needed: usize,
        /// The first failure, as text.
        first: Arc<str>,
    },
    /// The resume info does not fit this workflow (it was not interrupted inside it, the
    /// saved position is missing, or the tree changed since).
    #[error("{kind} workflow '{workflow}' cannot resume: {message}")]
    Resume {
        /// `Sequential`, `Parallel` or `Loop`.
        kind: &'static str,
        /// The workflow's name.
        workflow: Arc<str>,
        /// What does not fit.
        message: Arc<str>,
    },
}

impl From<WorkflowError> for AgentError {
    fn from(e: WorkflowError) -> Self {
        AgentError::custom(e)
    }
}

/// What every workflow agent has: its kind (for its errors), name and description.
#[derive(Debug, Clone)]
struct Header {
    kind: &'static str,
    name: Arc<str>,
    description: Arc<str>,
}

impl Header {
    fn new(kind: &'static str, name: Arc<str>) -> Self {
        Header {
            kind,
            name,
            description: Arc::from(""),
        }
    }

    fn resume_error(&self, message: impl Into<Arc<str>>) -> WorkflowError {
        WorkflowError::Resume {
            kind: self.kind,
            workflow: Arc::clone(&self.name),
            message: message.into(),
        }
    }

    /// The sub-agents of the node this workflow runs as.
    fn sub_agents(&self, cx: &RunContext) -> Result<Vec<FlowAgent>, WorkflowError> {
        let subs = cx.node().map(FlowAgent::sub_agents).unwrap_or_default();
        if subs.is_empty() {
            return Err(WorkflowError::NoSubAgents {
                kind: self.kind,
                workflow: Arc::clone(&self.name),
            });
        }
        Ok(subs)
    }

    /// The saved position: `state[key]` as an index.
    fn index(&self, info: &ResumeInfo, key: &str) -> Result<usize, WorkflowError> {
        info.state()
            .and_then(|s| s.get(key))
            .and_then(serde_json::Value::as_u64)
            .map(|i| i as usize)
            .ok_or_else(|| {
                self.resume_error(format!(
                    "its interrupt state has no '{key}' (state: {}); the interrupt was not \
                     forwarded by this workflow",
                    info.state()
                        .map_or_else(|| "none".to_owned(), ToString::to_string)
                ))
            })
    }

    /// The one sub-agent resume info of a workflow that runs one sub-agent at a time, checked
    /// to lie under `expected` (the run path of the sub-agent at the saved position).
    fn only_child(
        &self,
        info: &ResumeInfo,
        sub: &FlowAgent,
        expected: &RunPath,
    ) -> Result<ResumeInfo, WorkflowError> {
        if info.was_interrupted() {
            return Err(self.resume_error(
                "the interrupt points name the workflow itself, which never interrupts",
            ));
        }
        let mut children = info.children();
        if children.len() != 1 {
            let names: Vec<&str> = children.iter().map(|(n, _)| &**n).collect();
            return Err(self.resume_error(format!(
                "expected one interrupted sub-agent below it, found {} ({})",
                children.len(),
                names.join(", ")
            )));
        }
        let (name, below) = children.remove(0);
        check_under(self, sub, &name, &below, expected)?;
        Ok(below)
    }
}

/// Checks that the node `below` resumes is `sub` or one of its descendants, running at or
/// under `expected` (the run path `sub` had).
fn check_under(
    who: &Header,
    sub: &FlowAgent,
    name: &str,
    below: &ResumeInfo,
    expected: &RunPath,
) -> Result<(), WorkflowError> {
    match below.node() {
        Some((_, at)) if at.starts_with(expected) && is_within(sub, name) => Ok(()),
        Some((_, at)) => Err(who.resume_error(format!(
            "the saved position says the sub-agent at '{expected}' was running, but the \
             interrupted agent '{name}' ran at '{at}'; was the tree changed since?"
        ))),
        None => Err(who.resume_error(format!(
            "the interrupt points below '{name}' disagree on which agent was running"
        ))),
    }
}

/// Whether the node named `name` is `sub` or below it in the tree.
fn is_within(sub: &FlowAgent, name: &str) -> bool {
    let mut node = sub.find(name);
    while let Some(n) = node {
        if n.name() == sub.name() {
            return true;
        }
        node = n.parent();
    }
    false
}

/// How a sub-agent run ended, as far as the workflow running it cares.
#[derive(Debug, Default, Clone, Copy)]
struct Outcome {
    exited: bool,
    interrupted: bool,
    failed: bool,
    broke_loop: bool,
}

impl Outcome {
    /// Whether the workflow must stop after this sub-agent (a loop also stops on
    /// `broke_loop`, which it checks itself).
    fn ends_workflow(&self) -> bool {
        self.exited || self.interrupted || self.failed
    }
}

/// Runs (or resumes) one sub-agent as its own flow at `path`, forwarding its events: attaches
/// `state` to its interrupts, notes Exit, errors and BreakLoop (marking a BreakLoop handled
/// when `handles_break`, i.e. when the caller is the loop that stops for it).
async fn run_child(
    out: &Context,
    child: &FlowAgent,
    path: RunPath,
    resume: Option<ResumeInfo>,
    state: &serde_json::Value,
    handles_break: bool,
) -> Outcome {
    let cx = out.at(Arc::from(child.name()), path);
    let input = AgentInput {
        messages: Default::default(),
        streaming: out.streaming(),
    };
    let agent = Arc::new(child.clone());
    let mut events = match resume {
        None => agent.run(cx, input),
        Some(info) => agent.resume(cx, input, info),
    };
    let mut outcome = Outcome::default();
    while let Some(mut event) = events.next().await {
        if event.is_interrupt() {
            event.attach_interrupt_state(state.clone());
            outcome.interrupted = true;
        }
        match &event.action {
            Some(Action::Exit) => outcome.exited = true,
            Some(Action::BreakLoop(_)) if !event.break_handled => {
                outcome.broke_loop = true;
                event.break_handled = handles_break;
            }
            _ => {}
        }
        outcome.failed |= event.error.is_some();
        out.yield_event(event).await;
    }
    outcome
}

/// The run path of the sub-agent at position `k` of a sequence of `subs` that started at
/// `base` after `rounds` full passes: `base`, every name `rounds` times, then the names up to
/// and including `subs[k]`.
fn sequence_path(base: &RunPath, subs: &[FlowAgent], rounds: usize, k: usize) -> RunPath {
    let mut path = base.clone();
    for _ in 0..rounds {
        for s in subs {
            path = path.child(s.name());
        }
    }
    for s in &subs[..=k] {
        path = path.child(s.name());
    }
    path
}

/// The agent-facing parts every workflow shares: its name, description and the hook that bars
/// its sub-agents from transferring back.
macro_rules! workflow_agent_common {
    () => {
        fn name(&self) -> &str {
            &self.head.name
        }

        fn description(&self) -> &str {
            &self.head.description
        }

        fn runs_its_sub_agents(&self) -> bool {
            true
        }
    };
}
use workflow_agent_common;

/// The builder methods every workflow type has; `$sub_agents` documents `with_sub_agents`.
macro_rules! workflow_builders {
    ($sub_agents:literal) => {
        /// Sets the description (what a model choosing a transfer target reads).
        pub fn with_description(mut self, description: impl Into<Arc<str>>) -> Self {
            self.head.description = description.into();
            self
        }

        #[doc = $sub_agents]
        ///
        /// Shorthand for `set_sub_agents(FlowAgent::new(self), sub_agents)`, with its errors.
        pub fn with_sub_agents(
            self,
            sub_agents: impl IntoIterator<Item = FlowAgent>,
        ) -> Result<FlowAgent, FlowError> {
            set_sub_agents(FlowAgent::new(self), sub_agents)
        }
    };
}
use workflow_builders;
