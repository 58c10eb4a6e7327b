//! One turn of a thread, run by the engine with every effect asked of the workflow: the run's
//! context ([`start_turn`]: the Temporal host, the effects middleware, the thread's earlier
//! turns), the same for the continuation of a turn a cancel stopped at a safe point
//! ([`resume_turn`], from its [`StoppedTurn`]), and the loop that drives it ([`drive`]: the
//! engine's events and the effects polled in one task, in a fixed order).

use std::collections::HashMap;
use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;

use agentweave_core::cancel::is_cancel_interrupt;
use agentweave_core::event::{InterruptInfo, RecordedEvent};
use agentweave_core::history::{EarlierTurn, EarlierTurns, ThreadHistory};
use agentweave_core::middleware::Middlewares;
use agentweave_core::{
    async_trait, Agent, AgentEvent, AgentInput, CancelSignal, FlowAgent, Message, ResumeInfo,
    RunContext, Session, SessionEvent,
};
use futures::{FutureExt, StreamExt};
use serde::{Deserialize, Serialize};

use crate::effects::{Effect, Effects, EffectsMiddleware, Outcome, TemporalHost};

/// A thread's turns so far, as the workflow keeps them (its state is rebuilt by replaying its
/// history, so nothing here is stored apart from Temporal).
#[derive(Debug, Default)]
pub struct ThreadLog {
    id: String,
    turns: Mutex<Vec<EarlierTurn>>,
}

impl ThreadLog {
    /// The log of thread `id`, empty.
    pub fn new(id: impl Into<String>) -> Arc<Self> {
        Arc::new(ThreadLog {
            id: id.into(),
            turns: Mutex::new(Vec::new()),
        })
    }

    /// The log of thread `id` holding `turns` (a thread's turns carried into a new run of its
    /// workflow by continue-as-new).
    pub fn with_turns(id: impl Into<String>, turns: Vec<CarriedTurn>) -> Arc<Self> {
        Arc::new(ThreadLog {
            id: id.into(),
            turns: Mutex::new(turns.into_iter().map(CarriedTurn::into_earlier).collect()),
        })
    }

    /// Its turns, to carry into a new run of the thread's workflow.
    pub fn carried(&self) -> Vec<CarriedTurn> {
        self.turns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(CarriedTurn::of)
            .collect()
    }

    /// How many turns it holds.
    pub fn len(&self) -> u64 {
        self.turns.lock().unwrap_or_else(|e| e.into_inner()).len() as u64
    }

    /// Whether it holds no turn.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records a finished turn: its input and its events; gives its number in the log.
    pub fn record(&self, input: Message, events: &[AgentEvent]) -> u64 {
        let mut turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
        let turn = turns.len() as u64;
        turns.push(EarlierTurn {
            turn,
            input: vec![input],
            events: recorded(events),
        });
        turn
    }

    /// Records the continuation of turn `turn` (a turn stopped at a safe point, then resumed):
    /// its events follow the turn's own, as the in-process runner records a resumed turn.
    pub fn extend(&self, turn: u64, events: &[AgentEvent]) {
        let mut turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(earlier) = turns.iter_mut().find(|t| t.turn == turn) {
            earlier.events.extend(recorded(events));
        }
    }
}

/// A turn's events as a thread keeps them: its messages and actions.
fn recorded(events: &[AgentEvent]) -> Vec<RecordedEvent> {
    events
        .iter()
        .filter_map(|e| e.to_json().ok())
        .filter(|e| e.message.is_some() || e.action.is_some())
        .map(|e| RecordedEvent {
            agent_name: e.agent_name,
            run_path: e.run_path,
            message: e.message,
            action: e.action,
        })
        .collect()
}

/// A turn a cancel stopped at a safe point (`after_model`, `after_tools`), as the thread keeps
/// it to go on from there: what its run had recorded, the cancel interrupts it stopped at, and
/// its idempotency scope (the in-process runner's checkpoint of a turn cancelled at a safe
/// point). A resume ([`resume_turn`]) continues it; a new message drops it, what it finished
/// staying in the thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoppedTurn {
    /// Its number in the thread's log (its place among the thread's turns, from 0).
    pub turn: u64,
    /// The user's message it began with.
    pub input: Message,
    /// What its run recorded up to the stop (its session's events), in order.
    pub events: Vec<RecordedEvent>,
    /// Its run's session values.
    #[serde(default)]
    pub values: HashMap<String, serde_json::Value>,
    /// The cancel interrupts it stopped at (the root's, as the engine gave them).
    pub interrupts: Vec<InterruptInfo>,
    /// Its run's idempotency scope: a tool call of the continuation gets the key it would have
    /// had in the turn.
    pub scope: String,
}

impl StoppedTurn {
    /// The turn `turn` of the log, begun with `input`, whose run `cx` gave `events`: `Some`
    /// when it stopped at a safe point for a cancel (its last interrupts are all cancel
    /// stops), else `None` (it ended, failed, or was dropped where it was).
    pub async fn of(
        turn: u64,
        input: &Message,
        cx: &RunContext,
        events: &[AgentEvent],
    ) -> Option<StoppedTurn> {
        let interrupts: Vec<InterruptInfo> = events
            .iter()
            .filter_map(|e| e.interrupt().cloned())
            .collect();
        if interrupts.is_empty() || !interrupts.iter().all(is_cancel_interrupt) {
            return None;
        }
        let mut recorded = Vec::new();
        for e in cx.session().events() {
            // A workflow's model replies come whole: a message here is never a live stream.
            let message = e.message().await.ok().flatten();
            recorded.push(RecordedEvent {
                agent_name: e.agent_name().into(),
                run_path: e.run_path().clone(),
                message: message.map(|m| Message::clone(&m)),
                action: e.action().cloned(),
            });
        }
        Some(StoppedTurn {
            turn,
            input: input.clone(),
            events: recorded,
            values: cx.session().values(),
            interrupts,
            scope: cx.idempotency_scope().to_owned(),
        })
    }
}

/// A finished turn as continue-as-new carries it into the thread's next run (the conversation
/// the thread's agents see): its input and its recorded messages and actions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CarriedTurn {
    /// The turn's number in the thread, from 0.
    pub turn: u64,
    /// The user's messages.
    pub input: Vec<Message>,
    /// The turn's messages and actions, in order.
    pub events: Vec<RecordedEvent>,
}

impl CarriedTurn {
    fn of(turn: &EarlierTurn) -> Self {
        CarriedTurn {
            turn: turn.turn,
            input: turn.input.clone(),
            events: turn.events.clone(),
        }
    }

    fn into_earlier(self) -> EarlierTurn {
        EarlierTurn {
            turn: self.turn,
            input: self.input,
            events: self.events,
        }
    }
}

#[async_trait]
impl EarlierTurns for ThreadLog {
    async fn read(&self, turns: Range<u64>) -> Result<Vec<EarlierTurn>, String> {
        let all = self.turns.lock().unwrap_or_else(|e| e.into_inner());
        Ok(all
            .iter()
            .filter(|t| turns.contains(&t.turn))
            .cloned()
            .collect())
    }

    fn thread_id(&self) -> &str {
        &self.id
    }
}

/// Starts the turn `input` of flow `flow` (named `flow_name` in the worker's flows) on the
/// thread `log` holds: its host is the workflow's ([`TemporalHost`]), its model and tool calls
/// are asked of `effects`; `cancel` is the turn's cancel signal (its safe points stop it).
/// Gives the turn's events and its run's context (what [`StoppedTurn::of`] reads).
pub fn start_turn(
    flow: &FlowAgent,
    flow_name: &str,
    effects: &Arc<Effects>,
    log: &Arc<ThreadLog>,
    input: Message,
    cancel: CancelSignal,
) -> (agentweave_core::EventStream, RunContext) {
    let message = Arc::new(input);
    let cx = turn_context(
        (flow, flow_name),
        effects,
        (log, log.len()),
        Session::new(),
        Arc::clone(&message),
        cancel,
    );
    let events = Arc::new(flow.clone()).run(cx.clone(), AgentInput::new([message]));
    (events, cx)
}

/// Continues `stopped`, a turn of the thread `log` holds that a cancel stopped at a safe
/// point, from where it stopped (as the in-process runner resumes a turn cancelled at a safe
/// point from its checkpoint): its run's record and values restored, its cancel interrupts
/// resumed with no answer, its idempotency scope kept; the thread's turns before it reach its
/// agents as before. Otherwise as [`start_turn`].
pub fn resume_turn(
    (flow, flow_name): (&FlowAgent, &str),
    effects: &Arc<Effects>,
    log: &Arc<ThreadLog>,
    stopped: &StoppedTurn,
    cancel: CancelSignal,
) -> (agentweave_core::EventStream, RunContext) {
    let session = Session::new();
    for e in &stopped.events {
        session.push(SessionEvent::new(
            Arc::clone(&e.agent_name),
            e.run_path.clone(),
            e.message.clone().map(Arc::new),
            e.action.clone(),
        ));
    }
    session.add_values(stopped.values.clone());
    let message = Arc::new(stopped.input.clone());
    let cx = turn_context(
        (flow, flow_name),
        effects,
        (log, stopped.turn),
        session,
        Arc::clone(&message),
        cancel,
    )
    .with_idempotency_scope(stopped.scope.as_str());
    let info = ResumeInfo::new(stopped.interrupts.iter().cloned(), &HashMap::new());
    let events = Arc::new(flow.clone()).resume(cx.clone(), AgentInput::new([message]), info);
    (events, cx)
}

/// The context of a turn's run: the workflow's host and effects, the thread's first `earlier`
/// turns of `log` as its history.
fn turn_context(
    (flow, flow_name): (&FlowAgent, &str),
    effects: &Arc<Effects>,
    (log, earlier): (&Arc<ThreadLog>, u64),
    session: Arc<Session>,
    message: agentweave_core::MessageRef,
    cancel: CancelSignal,
) -> RunContext {
    let history = ThreadHistory::new(Arc::clone(log) as Arc<dyn EarlierTurns>, earlier);
    RunContext::new_run(session, [message], false, flow.name())
        .with_host(Arc::new(TemporalHost(Arc::clone(effects))))
        .with_run_middleware(Middlewares::default().with(Arc::new(EffectsMiddleware::new(
            Arc::clone(effects),
            flow_name,
        ))))
        .with_thread(Arc::new(history))
        .with_cancel(cancel, false)
}

/// A started effect: the future of its outcome (not `Send`: a workflow's command).
pub type Started<'a> = Pin<Box<dyn Future<Output = Outcome> + 'a>>;

/// Drives a turn to its end: polls the engine's `events`, starts each effect it asks
/// (`start`), and answers each effect when its future ends, all in one task and in a fixed
/// order (events, then new effects in the order asked, then the running ones in the order
/// started), so a replay asks the same effects in the same order. `tick` runs before each
/// round (the workflow sets the host's clock there). Effects still running when the engine's
/// events end are dropped. When `stop` ends first (a cancel that stops the turn where it is),
/// the turn is dropped there: the events so far are given, with `true`.
pub async fn drive<'a>(
    mut events: agentweave_core::EventStream,
    effects: &Arc<Effects>,
    mut start: impl FnMut(u64, Effect) -> Started<'a>,
    mut tick: impl FnMut(),
    stop: Pin<Box<dyn Future<Output = ()> + 'a>>,
) -> (Vec<AgentEvent>, bool) {
    let mut running: Vec<(u64, Started<'a>)> = Vec::new();
    let mut out = Vec::new();
    let mut stop = stop;
    let stopped = futures::future::poll_fn(|cx| loop {
        tick();
        if stop.poll_unpin(cx).is_ready() {
            return Poll::Ready(true);
        }
        let mut moved = false;
        // Every event made so far before the effects asked: an effect is asked after the
        // events made before it (a reader of the live events places a call's streamed reply
        // by the number of events before it).
        loop {
            match events.poll_next_unpin(cx) {
                Poll::Ready(Some(event)) => {
                    out.push(event);
                    moved = true;
                }
                Poll::Ready(None) => return Poll::Ready(false),
                Poll::Pending => break,
            }
        }
        for (id, effect) in effects.take_asked() {
            running.push((id, start(id, effect)));
            moved = true;
        }
        let mut i = 0;
        while i < running.len() {
            if let Poll::Ready(outcome) = running[i].1.poll_unpin(cx) {
                let (id, _) = running.remove(i);
                effects.answer(id, outcome);
                moved = true;
            } else {
                i += 1;
            }
        }
        if !moved {
            return Poll::Pending;
        }
    })
    .await;
    (out, stopped)
}
