//! [`DeterministicTransfer`]: hand off to fixed agents once an agent has finished.

use std::fmt;
use std::sync::Arc;

use futures::StreamExt;

use crate::agent::{generate, Context};
use crate::agent::{Agent, AgentInput, EventStream, OnSubAgents, RunContext};
use crate::event::{Action, AgentEvent};
use crate::resume::ResumeInfo;
use crate::transfer::transfer_messages;

/// Wraps an agent so that, once its event stream has ended, the run is transferred to fixed
/// targets, whatever the agent decided (Eino's `AgentWithDeterministicTransferTo`).
///
/// - After the wrapped agent's last event, the wrapper emits, for each target in order, the
///   two transfer messages of [`transfer_messages`] (an assistant call of `transfer_to_agent`
///   and its result `successfully transferred to agent [X]`, carrying
///   [`Action::TransferToAgent`]). A transfer is a hand-off, so the run follows the last
///   target; give one target unless you want the others recorded as well.
/// - No transfer is added when the wrapped agent's run carried an [`Action::Exit`], an
///   interrupt or an error: an agent that ended the run, stopped for input or failed does
///   not hand off.
/// - The wrapper has the wrapped agent's name and description, and passes on its tree hooks
///   ([`OnSubAgents`]) and [`runs_its_sub_agents`](Agent::runs_its_sub_agents), so it can wrap
///   a workflow agent too. The targets are looked up when the transfer happens, as any
///   transfer is: they must be sub-agents of the node or its parent (if not barred).
/// - [`resume`](Agent::resume) resumes the wrapped agent, then transfers the same way.
///
/// ```
/// use agentweave_runtime::{DeterministicTransfer, FlowAgent, FnAgent, Runner};
/// use futures::StreamExt;
/// # futures::executor::block_on(async {
/// let writer = FnAgent::new("writer", |cx, _| async move { cx.say("Draft ready."); Ok(()) });
/// let reviewer = FnAgent::new("reviewer", |cx, _| async move { cx.say("Looks good."); Ok(()) });
/// let tree = FlowAgent::new(DeterministicTransfer::new(writer, ["reviewer"]))
///     .with_sub_agents([FlowAgent::new(reviewer)])
///     .unwrap();
/// let seen: Vec<String> = Runner::new(tree)
///     .run("Write a note.")
///     .map(|e| format!("{}: {}", e.run_path(), e.message_output().unwrap().content))
///     .collect()
///     .await;
/// assert_eq!(
///     seen,
///     [
///         "writer: Draft ready.",
///         "writer: ",
///         "writer: successfully transferred to agent [reviewer]",
///         "writer/reviewer: Looks good.",
///     ]
/// );
/// # });
/// ```
#[derive(Clone)]
pub struct DeterministicTransfer {
    inner: Arc<dyn Agent>,
    targets: Arc<[Arc<str>]>,
}

impl DeterministicTransfer {
    /// Wraps `agent`, transferring to `targets` after it finishes.
    pub fn new<S: Into<Arc<str>>>(agent: impl Agent, targets: impl IntoIterator<Item = S>) -> Self {
        Self::from_arc(Arc::new(agent), targets)
    }

    /// Wraps a shared agent.
    pub fn from_arc<S: Into<Arc<str>>>(
        agent: Arc<dyn Agent>,
        targets: impl IntoIterator<Item = S>,
    ) -> Self {
        DeterministicTransfer {
            inner: agent,
            targets: targets.into_iter().map(Into::into).collect(),
        }
    }

    /// The wrapped agent.
    pub fn inner(&self) -> &Arc<dyn Agent> {
        &self.inner
    }

    /// The targets, in the order their transfers are emitted.
    pub fn targets(&self) -> &[Arc<str>] {
        &self.targets
    }

    /// Forwards `events`, then adds the transfers unless the run exited, stopped or failed.
    async fn forward(&self, out: Context, mut events: EventStream) {
        let mut hand_off = true;
        while let Some(event) = events.next().await {
            if event.is_interrupt()
                || event.error.is_some()
                || matches!(event.action, Some(Action::Exit))
            {
                hand_off = false;
            }
            out.yield_event(event).await;
        }
        drop(events);
        if !hand_off {
            return;
        }
        for target in self.targets.iter() {
            let (call, result) = transfer_messages(target);
            out.yield_event(AgentEvent::message(call)).await;
            out.yield_event(
                AgentEvent::message(result)
                    .with_action(Action::TransferToAgent(Arc::clone(target))),
            )
            .await;
        }
    }
}

impl Agent for DeterministicTransfer {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn run(self: Arc<Self>, cx: RunContext, input: AgentInput) -> EventStream {
        generate(cx, move |out| async move {
            let events = Arc::clone(&self.inner).run(out.run_context().clone(), input);
            self.forward(out, events).await;
            Ok(())
        })
    }

    /// Resumes the wrapped agent with `info` (for a wrapped [`FlowAgent`](crate::FlowAgent),
    /// with the level below this node, as a tree node would), then transfers as after a run.
    fn resume(self: Arc<Self>, cx: RunContext, input: AgentInput, info: ResumeInfo) -> EventStream {
        generate(cx, move |out| async move {
            let inner = Arc::clone(&self.inner);
            let info = match inner.as_flow() {
                Some(_) => info
                    .children()
                    .into_iter()
                    .next()
                    .map(|(_, below)| below)
                    .unwrap_or_default(),
                None => info,
            };
            let events = inner.resume(out.run_context().clone(), input, info);
            self.forward(out, events).await;
            Ok(())
        })
    }

    fn runs_its_sub_agents(&self) -> bool {
        self.inner.runs_its_sub_agents()
    }

    fn on_sub_agents(&self) -> Option<&dyn OnSubAgents> {
        self.inner.on_sub_agents()
    }
}

impl fmt::Debug for DeterministicTransfer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeterministicTransfer")
            .field("agent", &self.inner.name())
            .field("targets", &self.targets)
            .finish()
    }
}
