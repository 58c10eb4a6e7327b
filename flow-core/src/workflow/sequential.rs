//! [`Sequential`]: each sub-agent in turn.

use std::sync::Arc;

use serde_json::json;

use super::{run_child, sequence_path, workflow_agent_common, workflow_builders, Header};
use crate::agent::{generate, Context};
use crate::agent::{set_sub_agents, FlowAgent};
use crate::agent::{Agent, AgentInput, EventStream, RunContext};
use crate::error::FlowError;
use crate::event::AgentError;
use crate::resume::ResumeInfo;

/// A workflow agent that runs its sub-agents one after the other, in order.
///
/// Each sub-agent sees what the ones before it said, through its history rules; the `k`-th
/// runs at the workflow's path extended by the names of the first `k` (`W/s1/s2` for the
/// second). An Exit, an interrupt or an error ends the sequence; see the
/// [module docs](crate::workflow) for the rules and the resume state (`{"child": k}`).
///
/// ```
/// use agentweave_runtime::{FlowAgent, FnAgent, Runner, Sequential};
/// use futures::StreamExt;
/// # futures::executor::block_on(async {
/// let draft = FnAgent::new("draft", |cx, _| async move { cx.say("a first draft"); Ok(()) });
/// let edit = FnAgent::new("edit", |cx, input| async move {
///     // The draft reaches the editor as context.
///     assert_eq!(input.messages[1].content, "For context: [draft] said: a first draft.");
///     cx.say("an edited draft");
///     Ok(())
/// });
/// let pipeline = Sequential::new("pipeline")
///     .with_sub_agents([FlowAgent::new(draft), FlowAgent::new(edit)])
///     .unwrap();
/// let seen: Vec<String> = Runner::new(pipeline)
///     .run("Write about otters.")
///     .map(|e| format!("{}: {}", e.run_path(), e.message_output().unwrap().content))
///     .collect()
///     .await;
/// assert_eq!(seen, ["pipeline/draft: a first draft", "pipeline/draft/edit: an edited draft"]);
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct Sequential {
    head: Header,
}

impl Sequential {
    /// A sequential workflow named `name`; give it sub-agents with
    /// [`with_sub_agents`](Sequential::with_sub_agents) or [`set_sub_agents`].
    pub fn new(name: impl Into<Arc<str>>) -> Self {
        Sequential {
            head: Header::new("Sequential", name.into()),
        }
    }

    workflow_builders!(
        "The tree node of this workflow with these sub-agents, in the order they run."
    );
}

/// Runs `subs[start..]`; the one at `start` is resumed with `resume` if given.
async fn run_from(
    out: Context,
    subs: Vec<FlowAgent>,
    start: usize,
    mut resume: Option<ResumeInfo>,
) -> Result<(), AgentError> {
    let base = out.run_path().clone();
    for k in start..subs.len() {
        let path = sequence_path(&base, &subs, 0, k);
        let state = json!({ "child": k });
        let outcome = run_child(&out, &subs[k], path, resume.take(), &state, false).await;
        if outcome.ends_workflow() {
            break;
        }
    }
    Ok(())
}

impl Agent for Sequential {
    workflow_agent_common!();

    /// Runs the node's sub-agents in order. `input` is not consulted: each sub-agent's input
    /// is built from the run's record.
    fn run(self: Arc<Self>, cx: RunContext, _input: AgentInput) -> EventStream {
        generate(cx, move |out| async move {
            let subs = self.head.sub_agents(&out)?;
            run_from(out, subs, 0, None).await
        })
    }

    /// Resumes the sub-agent that was interrupted, at its run path, then runs the ones after
    /// it; the ones before it are not run again.
    fn resume(
        self: Arc<Self>,
        cx: RunContext,
        _input: AgentInput,
        info: ResumeInfo,
    ) -> EventStream {
        generate(cx, move |out| async move {
            let who = &self.head;
            let subs = who.sub_agents(&out)?;
            let k = who.index(&info, "child")?;
            if k >= subs.len() {
                return Err(who
                    .resume_error(format!(
                        "the saved position is sub-agent {k}, but it has only {} sub-agents",
                        subs.len()
                    ))
                    .into());
            }
            let expected = sequence_path(out.run_path(), &subs, 0, k);
            let below = who.only_child(&info, &subs[k], &expected)?;
            run_from(out, subs, k, Some(below)).await
        })
    }
}
