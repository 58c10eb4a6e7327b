//! [`Parallel`]: every sub-agent at once, each in its own lane.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::json;

use super::{check_under, workflow_agent_common, workflow_builders, Header};
use crate::agent::{generate, Context};
use crate::agent::{set_sub_agents, FlowAgent};
use crate::agent::{Agent, AgentInput, EventStream, RunContext};
use crate::error::FlowError;
use crate::event::{AgentError, AgentEvent};
use crate::resume::ResumeInfo;
use crate::run_path::RunPath;

/// A workflow agent that runs all its sub-agents concurrently, each in a *lane* of its own.
///
/// - Lanes run in the caller's task (no task is spawned): their events reach the caller
///   interleaved, as they come. Dropping the event stream cancels every lane.
/// - Lane `x` runs at the workflow's path extended by `x` (`P/x`), and transfers inside it
///   extend that path.
/// - While the lanes run, none sees another's events: each lane's history leaves out its
///   sibling lanes' paths ([`RunContext::hiding`]). Every event is still recorded in the
///   run's one record, in the order it happened, so whatever runs after the parallel (the
///   join point) sees all lanes.
/// - An Exit or an error in one lane does not stop the others; it ends an enclosing workflow
///   once all lanes are done.
/// - Interrupts are held until every lane has ended, then emitted one after the other with
///   the state `{"interrupted": [lanes...]}` attached. On resume only the interrupted lanes
///   are resumed (each at its run path, still hidden from its siblings); the lanes that
///   finished are not run again.
///
/// ```
/// use agentweave_runtime::{FlowAgent, FnAgent, Parallel, Runner};
/// use futures::StreamExt;
/// # futures::executor::block_on(async {
/// let lane = |name: &'static str| {
///     FlowAgent::new(FnAgent::new(name, move |cx, input| async move {
///         // Only the user's request: no lane sees the other.
///         assert_eq!(input.messages.len(), 1);
///         cx.say(format!("{name} done"));
///         Ok(())
///     }))
/// };
/// let reviews = Parallel::new("reviews").with_sub_agents([lane("style"), lane("facts")]).unwrap();
/// let mut seen: Vec<String> = Runner::new(reviews)
///     .run("Review my essay.")
///     .map(|e| format!("{}: {}", e.run_path(), e.message_output().unwrap().content))
///     .collect()
///     .await;
/// seen.sort();
/// assert_eq!(seen, ["reviews/facts: facts done", "reviews/style: style done"]);
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct Parallel {
    head: Header,
}

impl Parallel {
    /// A parallel workflow named `name`; give it sub-agents (its lanes) with
    /// [`with_sub_agents`](Parallel::with_sub_agents) or [`set_sub_agents`].
    pub fn new(name: impl Into<Arc<str>>) -> Self {
        Parallel {
            head: Header::new("Parallel", name.into()),
        }
    }

    workflow_builders!("The tree node of this workflow with these sub-agents as its lanes.");
}

/// Runs the lanes given as `(index, resume)` (run if `resume` is `None`), out of all `subs`.
async fn run_lanes(
    out: Context,
    subs: Vec<FlowAgent>,
    lanes: Vec<(usize, Option<ResumeInfo>)>,
) -> Result<(), AgentError> {
    let base = out.run_path().clone();
    let paths: Vec<RunPath> = subs.iter().map(|s| base.child(s.name())).collect();
    let mut streams = Vec::with_capacity(lanes.len());
    for (i, resume) in lanes {
        let siblings = paths
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, p)| p.clone());
        let cx = out
            .at(Arc::from(subs[i].name()), paths[i].clone())
            .hiding(siblings);
        let input = AgentInput {
            messages: Default::default(),
            streaming: out.streaming(),
        };
        let agent = Arc::new(subs[i].clone());
        let events = match resume {
            None => agent.run(cx, input),
            Some(info) => agent.resume(cx, input, info),
        };
        streams.push(events.map(move |e| (i, e)));
    }
    let mut merged = futures::stream::select_all(streams);
    let mut held: Vec<AgentEvent> = Vec::new();
    let mut interrupted: Vec<&str> = Vec::new();
    while let Some((i, event)) = merged.next().await {
        if event.is_interrupt() {
            let lane = subs[i].name();
            if !interrupted.contains(&lane) {
                interrupted.push(lane);
            }
            held.push(event);
        } else {
            out.yield_event(event).await;
        }
    }
    drop(merged);
    let state = json!({ "interrupted": interrupted });
    for mut event in held {
        event.attach_interrupt_state(state.clone());
        out.yield_event(event).await;
    }
    Ok(())
}

impl Agent for Parallel {
    workflow_agent_common!();

    /// Runs every sub-agent of the node concurrently. `input` is not consulted: each lane's
    /// input is built from the run's record.
    fn run(self: Arc<Self>, cx: RunContext, _input: AgentInput) -> EventStream {
        generate(cx, move |out| async move {
            let subs = self.head.sub_agents(&out)?;
            let lanes = (0..subs.len()).map(|i| (i, None)).collect();
            run_lanes(out, subs, lanes).await
        })
    }

    /// Resumes the lanes that were interrupted, concurrently, each at its run path; the lanes
    /// that had finished are not run again.
    fn resume(
        self: Arc<Self>,
        cx: RunContext,
        _input: AgentInput,
        info: ResumeInfo,
    ) -> EventStream {
        generate(cx, move |out| async move {
            let who = &self.head;
            let subs = who.sub_agents(&out)?;
            let lanes = resumed_lanes(who, &out, &subs, &info)?;
            run_lanes(out, subs, lanes).await
        })
    }
}

/// Maps each pending interrupt point below the workflow to its lane, and checks that every
/// lane the saved state lists as interrupted has one.
fn resumed_lanes(
    who: &Header,
    cx: &RunContext,
    subs: &[FlowAgent],
    info: &ResumeInfo,
) -> Result<Vec<(usize, Option<ResumeInfo>)>, AgentError> {
    if info.was_interrupted() {
        return Err(who
            .resume_error("the interrupt points name the workflow itself, which never interrupts")
            .into());
    }
    let saved: Vec<String> = info
        .state()
        .and_then(|s| s.get("interrupted"))
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .ok_or_else(|| {
            who.resume_error(
                "its interrupt state has no 'interrupted' list of lanes; the interrupt was not \
                 forwarded by this workflow",
            )
        })?;
    let base = cx.run_path();
    let mut lanes: Vec<(usize, Option<ResumeInfo>)> = Vec::new();
    for (name, below) in info.children() {
        let at = below.node().map(|(_, at)| at.clone());
        let lane = at.as_ref().and_then(|at| {
            subs.iter()
                .position(|s| at.starts_with(&base.child(s.name())))
        });
        let Some(lane) = lane else {
            let lane_names: Vec<&str> = subs.iter().map(FlowAgent::name).collect();
            return Err(who
                .resume_error(format!(
                    "the interrupted agent '{name}' did not run in any of its lanes ({})",
                    lane_names.join(", ")
                ))
                .into());
        };
        check_under(
            who,
            &subs[lane],
            &name,
            &below,
            &base.child(subs[lane].name()),
        )?;
        if lanes.iter().any(|(l, _)| *l == lane) {
            return Err(who
                .resume_error(format!(
                    "lane '{}' has interrupt points at two different agents",
                    subs[lane].name()
                ))
                .into());
        }
        lanes.push((lane, Some(below)));
    }
    for lane in &saved {
        let known = lanes.iter().any(|(l, _)| subs[*l].name() == lane);
        if !known {
            return Err(who
                .resume_error(format!(
                    "lane '{lane}' was interrupted but the resume info has no interrupt point \
                     in it; resume with every interrupt of the run"
                ))
                .into());
        }
    }
    Ok(lanes)
}
