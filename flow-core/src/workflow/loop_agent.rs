//! [`Loop`]: the sub-agents in turn, again and again.

use std::sync::Arc;

use serde_json::json;

use super::{
    run_child, sequence_path, workflow_agent_common, workflow_builders, Header, WorkflowError,
};
use crate::agent::{generate, Context};
use crate::agent::{set_sub_agents, FlowAgent};
use crate::agent::{Agent, AgentInput, EventStream, RunContext};
use crate::error::FlowError;
use crate::event::AgentError;
use crate::resume::ResumeInfo;

/// A workflow agent that runs its sub-agents in order, as a [`Sequential`](crate::Sequential)
/// does, and then again, up to a number of iterations.
///
/// A sub-agent stops the loop early with [`Action::BreakLoop`](crate::Action::BreakLoop)
/// ([`Context::break_loop`]): the loop ends once that sub-agent's run ends, and the event,
/// passed on as it is, names the agent that broke it. Run paths keep growing across
/// iterations (`L/a/b/a/b`). An Exit, an interrupt or an error ends the loop as well; see
/// the [module docs](crate::workflow) for the rules and the resume state
/// (`{"iteration": i, "child": k}`).
///
/// ```
/// use agentweave_runtime::{FlowAgent, FnAgent, Loop, Runner};
/// use futures::StreamExt;
/// # futures::executor::block_on(async {
/// let writer = FnAgent::new("writer", |cx, input| async move {
///     cx.say(format!("draft {}", input.messages.len()));
///     Ok(())
/// });
/// let critic = FnAgent::new("critic", |cx, input| async move {
///     // Approve the second draft.
///     if input.messages.iter().any(|m| m.content.contains("draft 3")) {
///         cx.say("approved");
///         cx.break_loop();
///     } else {
///         cx.say("again");
///     }
///     Ok(())
/// });
/// let refine = Loop::new("refine", 5)
///     .with_sub_agents([FlowAgent::new(writer), FlowAgent::new(critic)])
///     .unwrap();
/// let paths: Vec<String> = Runner::new(refine)
///     .run("Write a haiku.")
///     .map(|e| e.run_path().to_string())
///     .collect()
///     .await;
/// assert_eq!(
///     paths,
///     [
///         "refine/writer",
///         "refine/writer/critic",
///         "refine/writer/critic/writer",
///         "refine/writer/critic/writer/critic",
///         "refine/writer/critic/writer/critic",
///     ]
/// );
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct Loop {
    head: Header,
    max_iterations: Option<usize>,
}

impl Loop {
    /// A loop named `name` that runs its sub-agents at most `max_iterations` times. A limit
    /// of 0 is reported as an error event when the loop runs ([`WorkflowError::ZeroIterations`]).
    pub fn new(name: impl Into<Arc<str>>, max_iterations: usize) -> Self {
        Loop {
            head: Header::new("Loop", name.into()),
            max_iterations: Some(max_iterations),
        }
    }

    /// A loop with no limit: only a BreakLoop, an Exit, an interrupt, an error or dropping
    /// the event stream ends it.
    pub fn unbounded(name: impl Into<Arc<str>>) -> Self {
        Loop {
            max_iterations: None,
            ..Loop::new(name, 0)
        }
    }

    /// The limit of iterations (`None`: unbounded).
    pub fn max_iterations(&self) -> Option<usize> {
        self.max_iterations
    }

    workflow_builders!(
        "The tree node of this loop with these sub-agents, in the order each iteration runs them."
    );

    fn check_limit(&self) -> Result<(), WorkflowError> {
        if self.max_iterations == Some(0) {
            return Err(WorkflowError::ZeroIterations {
                workflow: Arc::clone(&self.head.name),
            });
        }
        Ok(())
    }

    /// Runs from iteration `iteration`, sub-agent `start`; that one is resumed with `resume`
    /// if given.
    async fn run_from(
        &self,
        out: Context,
        subs: Vec<FlowAgent>,
        mut iteration: usize,
        mut start: usize,
        mut resume: Option<ResumeInfo>,
    ) -> Result<(), AgentError> {
        let base = out.run_path().clone();
        while self.max_iterations.map_or(true, |max| iteration < max) {
            for k in start..subs.len() {
                let path = sequence_path(&base, &subs, iteration, k);
                let state = json!({ "iteration": iteration, "child": k });
                let outcome = run_child(&out, &subs[k], path, resume.take(), &state, true).await;
                if outcome.ends_workflow() || outcome.broke_loop {
                    return Ok(());
                }
            }
            start = 0;
            iteration += 1;
        }
        Ok(())
    }
}

impl Agent for Loop {
    workflow_agent_common!();

    /// Runs the node's sub-agents in order, iteration after iteration. `input` is not
    /// consulted: each sub-agent's input is built from the run's record.
    fn run(self: Arc<Self>, cx: RunContext, _input: AgentInput) -> EventStream {
        generate(cx, move |out| async move {
            self.check_limit()?;
            let subs = self.head.sub_agents(&out)?;
            self.run_from(out, subs, 0, 0, None).await
        })
    }

    /// Resumes the sub-agent that was interrupted, in the iteration it was in and at the run
    /// path it had, then carries on with the rest of that iteration and the ones after.
    fn resume(
        self: Arc<Self>,
        cx: RunContext,
        _input: AgentInput,
        info: ResumeInfo,
    ) -> EventStream {
        generate(cx, move |out| async move {
            self.check_limit()?;
            let who = &self.head;
            let subs = who.sub_agents(&out)?;
            let iteration = who.index(&info, "iteration")?;
            let k = who.index(&info, "child")?;
            if k >= subs.len() || self.max_iterations.is_some_and(|max| iteration >= max) {
                return Err(who
                    .resume_error(format!(
                        "the saved position (iteration {iteration}, sub-agent {k}) is outside \
                         this loop of {} sub-agents and {} iterations",
                        subs.len(),
                        self.max_iterations
                            .map_or_else(|| "unbounded".to_owned(), |m| m.to_string())
                    ))
                    .into());
            }
            let expected = sequence_path(out.run_path(), &subs, iteration, k);
            let below = who.only_child(&info, &subs[k], &expected)?;
            self.run_from(out, subs, iteration, k, Some(below)).await
        })
    }
}
