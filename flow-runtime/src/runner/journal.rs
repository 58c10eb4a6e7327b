//! The step journal: as a run proceeds, the runner appends each step that became
//! irreversible (a model reply, a tool result with its idempotency key, a transfer, an agent's
//! end) to a [`JournalStore`], as a small delta: one step per recorded event of the run (step
//! `k` is event `k` of the run's record), never the session again. The journal of a run is
//! therefore linear in its steps. An interrupt is the run's checkpoint, saved (as today) before
//! the interrupt event reaches the caller; the journal's steps up to it are the checkpoint's
//! events.
//!
//! The modes and what each guarantees are in [`Durability`]'s table.
//!
//! A run's journal is keyed by its checkpoint id ([`RunRequest::checkpoint`](crate::RunRequest::checkpoint),
//! [`Runner::resume`]) or, for a thread's turn, by `THREAD.turn-N` ([`turn_journal_id`]). A
//! resume continues the journal of its run: the restored session is the journal's first steps.
//! A run taken over from a dead worker (its claim's lease ran out) drops the steps the dead
//! worker wrote after the state it restarts from, so the journal always equals the run's
//! record so far.
//!
//! Appends happen inside the claim or lease the run already holds, and each is a
//! compare-and-swap on the journal's length: a worker whose lease was taken over cannot append.
//!
//! Read a journal with [`Runner::journal`]: each [`Step`] is decoded and checked (written by
//! this flow's shape, not truncated or forged), or refused with a typed [`JournalError`].

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::checkpoint::record_events;
use super::durability::Durability;
use super::runs::Runner;
use crate::event::{Action, RecordedEvent};
use crate::message::{Message, Role};
use crate::session::{Session, SessionEvent};
use crate::store::{
    DeferredStep, DeferredSteps, JournalError, JournalStore, PendingStep, StoredStep,
};

/// What a journal step records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StepKind {
    /// A model's reply (an assistant message), with its tool calls if any.
    ModelReply,
    /// A tool's result, with the call's idempotency key.
    ToolResult,
    /// A transfer to another agent.
    Transfer,
    /// An agent's end (an exit, a loop broken).
    AgentEnd,
    /// An interrupt: the run stops for outside input.
    Interrupt,
    /// Any other recorded event (a user-visible message of a code agent, a custom action).
    Event,
}

impl StepKind {
    /// The kind of the step that records `event`.
    pub fn of(event: &RecordedEvent) -> StepKind {
        Self::of_parts(
            event.action.as_ref(),
            event.message.as_ref().map(|m| m.role),
        )
    }

    /// The kind of the step of an event with `action` and a message of `role`.
    fn of_parts(action: Option<&Action>, role: Option<Role>) -> StepKind {
        match action {
            Some(Action::Interrupted(_)) => return StepKind::Interrupt,
            Some(Action::TransferToAgent(_)) => return StepKind::Transfer,
            Some(Action::Exit | Action::BreakLoop(_)) => return StepKind::AgentEnd,
            _ => {}
        }
        match role {
            Some(Role::Tool) => StepKind::ToolResult,
            Some(Role::Assistant) => StepKind::ModelReply,
            _ => StepKind::Event,
        }
    }

    /// Its label in the store (`model_reply`, `tool_result`, ...).
    pub fn label(self) -> &'static str {
        match self {
            StepKind::ModelReply => "model_reply",
            StepKind::ToolResult => "tool_result",
            StepKind::Transfer => "transfer",
            StepKind::AgentEnd => "agent_end",
            StepKind::Interrupt => "interrupt",
            StepKind::Event => "event",
        }
    }
}

/// One decoded step of a run's journal (see [`Runner::journal`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Its position in the journal, from 0 (the index of its event in the run's record).
    pub seq: u64,
    /// When it was written, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// What it records.
    pub kind: StepKind,
    /// The recorded event (agent, run path, message, action).
    pub event: RecordedEvent,
    /// For a tool result: the idempotency key the call ran with
    /// ([`ToolContext::idempotency_key`](crate::ToolContext::idempotency_key)).
    pub idempotency_key: Option<String>,
}

/// A step's bytes: the flow's fingerprint (a journal of another flow is refused), the event,
/// the key.
#[derive(Serialize, Deserialize)]
struct StepBody {
    flow: String,
    kind: StepKind,
    event: RecordedEvent,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    idempotency_key: Option<String>,
}

/// The journal id of turn `turn` of thread `thread`.
pub fn turn_journal_id(thread: &str, turn: u64) -> String {
    format!("{thread}.turn-{turn}")
}

/// Encodes `event` as a stored step of a run of the flow with fingerprint `flow`, whose tool
/// calls are keyed under `scope`.
pub(crate) fn encode_step(flow: &str, scope: &str, event: RecordedEvent, at_ms: u64) -> StoredStep {
    let kind = StepKind::of(&event);
    let idempotency_key = match (kind, event.message.as_ref()) {
        (StepKind::ToolResult, Some(m)) => m
            .tool_call_id
            .as_ref()
            .map(|call| format!("{scope}:{}:{call}", event.run_path)),
        _ => None,
    };
    let body = StepBody {
        flow: flow.to_owned(),
        kind,
        event,
        idempotency_key,
    };
    StoredStep {
        seq: 0,
        at_ms,
        kind: kind.label().to_owned(),
        bytes: serde_json::to_vec(&body).expect("a step always serialises"),
    }
}

/// A step kept as its session event until a store needs its bytes (a store that
/// [keeps deferred steps](JournalStore::keeps_deferred), in memory): no copy of the message,
/// no encoding, until the journal is read. `Sync` hands each step over so, as it happens.
struct SessionStep {
    event: Arc<SessionEvent>,
    /// Its message, whole (a streamed one was read to its end before the step was kept).
    message: Option<crate::message::MessageRef>,
    kind: StepKind,
    flow: Arc<str>,
    scope: Arc<str>,
}

impl DeferredStep for SessionStep {
    fn kind(&self) -> &str {
        self.kind.label()
    }

    fn encode(&self) -> Vec<u8> {
        let event = RecordedEvent {
            agent_name: self.event.agent_name().into(),
            run_path: self.event.run_path().clone(),
            message: self.message.as_ref().map(|m| Message::clone(m)),
            action: self.event.action().cloned(),
        };
        encode_step(&self.flow, &self.scope, event, 0).bytes
    }
}

/// Steps kept as their session events until a store needs their bytes (a store that
/// [keeps deferred steps](JournalStore::keeps_deferred), in memory): no copy of a message, no
/// encoding, one allocation per batch, until the journal is read. Each event's message is
/// whole (a streamed one was read to its end before its batch was handed over; in a run
/// dropped midway, one cut off is read as far as it came).
struct SessionSteps {
    events: Vec<Arc<SessionEvent>>,
    flow: Arc<str>,
    scope: Arc<str>,
}

impl SessionSteps {
    fn message(&self, index: usize) -> Option<crate::message::MessageRef> {
        self.events[index].message_now()
    }
}

impl DeferredSteps for SessionSteps {
    fn len(&self) -> usize {
        self.events.len()
    }

    fn kind(&self, index: usize) -> &str {
        let message = self.message(index);
        StepKind::of_parts(self.events[index].action(), message.map(|m| m.role)).label()
    }

    fn encode(&self, index: usize) -> Vec<u8> {
        let event = &self.events[index];
        let recorded = RecordedEvent {
            agent_name: event.agent_name().into(),
            run_path: event.run_path().clone(),
            message: self.message(index).as_ref().map(|m| Message::clone(m)),
            action: event.action().cloned(),
        };
        encode_step(&self.flow, &self.scope, recorded, 0).bytes
    }
}

/// An `Async` writer on a store that keeps deferred steps hands its steps over once this many
/// are kept (and at an interrupt, at its end, and when it is dropped).
const BATCH_STEPS: usize = 64;

/// The steps an `Async` writer on a store that keeps deferred steps has room for at its start.
const KEPT_ROOM: usize = 32;

/// Decodes a stored step of run `run`, checking it was written by the flow with fingerprint
/// `flow`.
pub(crate) fn decode(run: &str, flow: &str, stored: StoredStep) -> Result<Step, JournalError> {
    let corrupt = |reason: String| JournalError::Corrupt {
        run: run.to_owned(),
        seq: stored.seq,
        reason,
    };
    let body: StepBody = serde_json::from_slice(&stored.bytes)
        .map_err(|e| corrupt(format!("it does not decode (truncated or forged?): {e}")))?;
    if body.flow != flow {
        return Err(corrupt(format!(
            "it was written by another flow (fingerprint {}, this flow's is {flow}); read it \
             with the runner of that flow",
            body.flow
        )));
    }
    if body.kind.label() != stored.kind || StepKind::of(&body.event) != body.kind {
        return Err(corrupt(format!(
            "its kind '{}' does not match what it records",
            stored.kind
        )));
    }
    Ok(Step {
        seq: stored.seq,
        at_ms: stored.at_ms,
        kind: body.kind,
        event: body.event,
        idempotency_key: body.idempotency_key,
    })
}

/// The Async mode's background appender: where new events are sent, and its task.
type Appender = (
    mpsc::UnboundedSender<Vec<Arc<SessionEvent>>>,
    tokio::task::JoinHandle<Result<(), JournalError>>,
);

/// Appends a run's steps as it proceeds, in its [`Durability`] mode.
pub(crate) struct JournalWriter {
    store: Arc<dyn JournalStore>,
    run: String,
    mode: Durability,
    flow: Arc<str>,
    scope: Arc<str>,
    /// The store keeps deferred steps: steps are handed over in line (no encoding, no
    /// background task), whatever the mode (`Async`: in batches of the kept steps).
    inline: bool,
    /// The session events already handed to the journal.
    written: usize,
    /// The journal's length (Sync).
    next: u64,
    /// The background appender (Async).
    background: Option<Appender>,
    /// A recovered run's journaled steps: the run regenerates them from the journal
    /// (`runner::recover`), so they are compared with what is stored, not appended again.
    replayed: Vec<RecordedEvent>,
    /// A `Sync` turn's journal gate: told each model reply once it is stored.
    gate: Option<Arc<super::journal_gate::StoredCalls>>,
    /// `Async` on a store that keeps deferred steps: the steps kept since the last batch was
    /// handed over (each message whole), in order.
    kept: Vec<Arc<SessionEvent>>,
    /// Where the kept steps that [`step_in_line`](JournalWriter::step_in_line) left to
    /// [`step`](JournalWriter::step) start (an interrupt or a batch due).
    due_from: Option<usize>,
}

impl JournalWriter {
    /// Opens the journal `run` for a run whose session holds `session`'s events so far (a
    /// resume's restored events), of the flow with fingerprint `flow`, its tool calls keyed
    /// under `scope`. Steps past the session (written by a dead worker after the state this
    /// run restarts from) are dropped; steps missing before it are appended at the first step.
    pub(crate) async fn open(
        store: Arc<dyn JournalStore>,
        run: String,
        mode: Durability,
        flow: Arc<str>,
        scope: Arc<str>,
        session: &Session,
    ) -> Result<JournalWriter, JournalError> {
        let restored = session.len() as u64;
        let len = store.journal_len(&run).await?;
        if len > restored {
            store.truncate_steps(&run, restored).await?;
        }
        let next = len.min(restored);
        let inline = store.keeps_deferred();
        let mut writer = JournalWriter {
            store,
            run,
            mode,
            flow,
            scope,
            inline,
            written: next as usize,
            next,
            background: None,
            replayed: Vec::new(),
            gate: None,
            // Room for a short run's steps (the chain of ten makes 19) without regrowing.
            kept: match (mode, inline) {
                (Durability::Async, true) => Vec::with_capacity(KEPT_ROOM),
                _ => Vec::new(),
            },
            due_from: None,
        };
        writer.start_background(next);
        Ok(writer)
    }

    /// Starts the background appender of an `Async` writer whose journal holds `next` steps
    /// (none if its store keeps deferred steps: those are handed over in line).
    fn start_background(&mut self, next: u64) {
        if self.mode != Durability::Async || self.inline {
            return;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(appender(
            Arc::clone(&self.store),
            self.run.clone(),
            Arc::clone(&self.flow),
            Arc::clone(&self.scope),
            next,
            rx,
        ));
        self.background = Some((tx, task));
    }

    /// Hands `events` to a store that keeps deferred steps: each kept as its session event,
    /// encoded only if the journal is read. `Sync`: now, each step as it is; `Async`: kept by
    /// this writer, handed over in batches ([`BATCH_STEPS`], an interrupt, the end, a drop).
    async fn append_inline(&mut self, events: Vec<Arc<SessionEvent>>) -> Result<(), JournalError> {
        if self.mode == Durability::Async {
            self.kept.extend(events);
            return self.keep_batch(0).await;
        }
        let now = crate::store::now_ms();
        let mut steps = Vec::with_capacity(events.len());
        let mut replies = Vec::new();
        for event in events {
            let message = match event.message_without_stream() {
                Some(message) => message,
                None => event
                    .message()
                    .await
                    .map_err(|e| stream_error(&self.run, e))?,
            };
            if let (Some(_), Some(message)) = (&self.gate, &message) {
                replies.push((event.run_path().clone(), Arc::clone(message)));
            }
            let kind = StepKind::of_parts(event.action(), message.as_ref().map(|m| m.role));
            steps.push(PendingStep {
                at_ms: now,
                step: Arc::new(SessionStep {
                    event,
                    message,
                    kind,
                    flow: Arc::clone(&self.flow),
                    scope: Arc::clone(&self.scope),
                }),
            });
        }
        self.next = self
            .store
            .append_deferred(&self.run, self.next, steps)
            .await?;
        if let Some(gate) = &self.gate {
            for (run_path, message) in &replies {
                gate.add_reply(run_path, message);
            }
        }
        Ok(())
    }

    /// `Async`, a store that keeps deferred steps: keeps the session's new events; returns
    /// where they start among the kept steps if one is an interrupt or a batch is due (what
    /// [`keep_batch`](JournalWriter::keep_batch) does). A streamed message does not wait here:
    /// its event goes on to the caller at once, and its chunks as they come; it is read whole
    /// when its batch is handed over ([`store_kept`](JournalWriter::store_kept)).
    fn keep_new(&mut self, session: &Session) -> Option<usize> {
        let from = self.kept.len();
        self.written += session.events_since_into(self.written, &mut self.kept);
        let due = self.kept.len() >= BATCH_STEPS
            || self.kept[from..]
                .iter()
                .any(|e| matches!(e.action(), Some(Action::Interrupted(_))));
        due.then_some(from)
    }

    /// `Async`, a store that keeps deferred steps: hands the kept steps over if there are
    /// [`BATCH_STEPS`] or an interrupt among those from position `from` on.
    async fn keep_batch(&mut self, from: usize) -> Result<(), JournalError> {
        let interrupt = self.kept[from..]
            .iter()
            .any(|e| matches!(e.action(), Some(Action::Interrupted(_))));
        if interrupt || self.kept.len() >= BATCH_STEPS {
            self.store_kept().await?;
        }
        Ok(())
    }

    /// Hands the steps an `Async` writer kept to the store, as one batch (nothing for the
    /// other writers, which keep none): at an interrupt, before its checkpoint is saved, so a
    /// resume continues a journal that holds every step up to it. Each streamed message among
    /// them is read to its end first (a store reads each step's message whole).
    pub(crate) async fn store_kept(&mut self) -> Result<(), JournalError> {
        for event in &self.kept {
            if event.is_streamed() {
                event
                    .message()
                    .await
                    .map_err(|e| stream_error(&self.run, e))?;
            }
        }
        self.hand_kept().await
    }

    /// Hands the kept steps over as they are (a streamed message not ended yet is read when
    /// the journal is: see [`store_kept`](JournalWriter::store_kept)).
    async fn hand_kept(&mut self) -> Result<(), JournalError> {
        if self.kept.is_empty() {
            return Ok(());
        }
        let steps = Arc::new(SessionSteps {
            events: std::mem::take(&mut self.kept),
            flow: Arc::clone(&self.flow),
            scope: Arc::clone(&self.scope),
        });
        self.next = self
            .store
            .append_deferred_batch(&self.run, self.next, crate::store::now_ms(), steps)
            .await?;
        Ok(())
    }

    /// Does what [`step`](JournalWriter::step) would, without a future, where nothing has to
    /// wait: returns `true` if the session's new events are handled (`Exit`: nothing to do;
    /// `Async` on a store that keeps deferred steps: kept, with no
    /// interrupt and no batch due), `false` if `step` must run (and finish what this began).
    pub(crate) fn step_in_line(&mut self, session: &Session) -> bool {
        if self.mode == Durability::Exit {
            return true;
        }
        if self.due_from.is_none()
            && self.inline
            && self.mode == Durability::Async
            && self.written >= self.replayed.len()
        {
            match self.keep_new(session) {
                None => return true,
                Some(from) => self.due_from = Some(from),
            }
        }
        false
    }

    /// Hands the session's new events to the journal: stored now (Sync), queued (Async) or
    /// nothing (Exit).
    pub(crate) async fn step(&mut self, session: &Session) -> Result<(), JournalError> {
        if self.mode == Durability::Exit {
            return Ok(());
        }
        if let Some(from) = self.due_from.take() {
            // Kept by `step_in_line`: what is due is done here.
            return self.keep_batch(from).await;
        }
        if self.inline && self.mode == Durability::Async && self.written >= self.replayed.len() {
            // The common case: the new events join the kept ones, with no vector of their own,
            // and nothing waits unless a message is streamed or a batch is due.
            return match self.keep_new(session) {
                None => Ok(()),
                Some(from) => self.keep_batch(from).await,
            };
        }
        let mut events = session.events_since(self.written);
        if events.is_empty() {
            return Ok(());
        }
        let from = self.written;
        self.written += events.len();
        let replaying = self.replayed.len().saturating_sub(from).min(events.len());
        if replaying > 0 {
            let rest = events.split_off(replaying);
            self.check_replayed(from, &events).await?;
            events = rest;
            if events.is_empty() {
                return Ok(());
            }
        }
        if self.inline {
            return self.append_inline(events).await;
        }
        match &self.background {
            Some((tx, _)) => {
                // The appender stopped only after an error, which `finish` reports.
                let _ = tx.send(events);
                Ok(())
            }
            None => {
                let recorded = record_events(&self.run, &events)
                    .await
                    .map_err(|e| stream_error(&self.run, e))?;
                let now = crate::store::now_ms();
                let recorded_copy = if self.gate.is_some() {
                    recorded.clone()
                } else {
                    Vec::new()
                };
                let steps = recorded
                    .into_iter()
                    .map(|e| encode_step(&self.flow, &self.scope, e, now))
                    .collect();
                self.next = self.store.append_steps(&self.run, self.next, steps).await?;
                if let Some(gate) = &self.gate {
                    gate.add(&recorded_copy);
                }
                Ok(())
            }
        }
    }

    /// The gate this writer tells of stored replies (`Sync` only).
    pub(crate) fn gate(&self) -> Option<Arc<super::journal_gate::StoredCalls>> {
        self.gate.clone()
    }

    /// Tells `gate` about each model reply this writer stores from now on (`Sync` only: an
    /// `Async` writer stores in the background, and tools do not wait for it).
    pub(crate) fn open_gate(&mut self, gate: Option<Arc<super::journal_gate::StoredCalls>>) {
        if self.mode == Durability::Sync {
            self.gate = gate;
        }
    }

    /// Checks that the events of a recovered run from position `from` on are the journaled
    /// steps they regenerate (see `runner::recover`); else the run has diverged from its
    /// journal, and it stops with nothing written.
    async fn check_replayed(
        &self,
        from: usize,
        events: &[Arc<SessionEvent>],
    ) -> Result<(), JournalError> {
        let recorded = record_events(&self.run, events)
            .await
            .map_err(|e| stream_error(&self.run, e))?;
        for (k, event) in recorded.into_iter().enumerate() {
            let stored = &self.replayed[from + k];
            if &event != stored {
                return Err(JournalError::Corrupt {
                    run: self.run.clone(),
                    seq: (from + k) as u64,
                    reason: format!(
                        "the recovered run diverged from its journal: it recorded {} at {} \
                         where the journal holds {} at {} (is the flow or a code agent not \
                         deterministic, or the journal from another version of the flow?); \
                         nothing was written",
                        StepKind::of(&event).label(),
                        event.run_path,
                        StepKind::of(stored).label(),
                        stored.run_path
                    ),
                });
            }
        }
        Ok(())
    }

    /// Hands the last events over and waits for the background appender to store them.
    pub(crate) async fn finish(mut self, session: &Session) -> Result<(), JournalError> {
        self.step(session).await?;
        if self.written < self.replayed.len() {
            return Err(JournalError::Corrupt {
                run: self.run.clone(),
                seq: self.written as u64,
                reason: format!(
                    "the recovered run ended after {} steps, before the {} its journal holds; \
                     nothing was written",
                    self.written,
                    self.replayed.len()
                ),
            });
        }
        self.store_kept().await?;
        if let Some((tx, task)) = self.background.take() {
            drop(tx);
            return match task.await {
                Ok(result) => result,
                Err(join) => Err(stream_error(&self.run, join.to_string())),
            };
        }
        Ok(())
    }
}

impl Drop for JournalWriter {
    /// An `Async` run stopped early (dropped by its caller, or its task panicked): the steps
    /// it kept are handed over, so its journal holds every step it made. Only a store that
    /// keeps deferred steps has kept steps, and its append completes without waiting.
    fn drop(&mut self) {
        if self.kept.is_empty() {
            return;
        }
        use futures::FutureExt;
        if let Some(Err(e)) = self.hand_kept().now_or_never() {
            tracing::warn!(run = %self.run, error = %e, "the journal's last kept steps could not be stored");
        }
    }
}

fn stream_error(run: &str, e: impl std::fmt::Display) -> JournalError {
    JournalError::Store(crate::store::StoreError::Other {
        id: run.to_owned(),
        message: format!("a step could not be read whole: {e}"),
    })
}

/// The Async appender: stores batches of events in order, coalescing what queued meanwhile.
async fn appender(
    store: Arc<dyn JournalStore>,
    run: String,
    flow: Arc<str>,
    scope: Arc<str>,
    mut next: u64,
    mut rx: mpsc::UnboundedReceiver<Vec<Arc<SessionEvent>>>,
) -> Result<(), JournalError> {
    while let Some(mut events) = rx.recv().await {
        while let Ok(more) = rx.try_recv() {
            events.extend(more);
        }
        let recorded = record_events(&run, &events)
            .await
            .map_err(|e| stream_error(&run, e))?;
        let now = crate::store::now_ms();
        let steps = recorded
            .into_iter()
            .map(|e| encode_step(&flow, &scope, e, now))
            .collect();
        next = store.append_steps_unsynced(&run, next, steps).await?;
    }
    Ok(())
}

impl Runner {
    /// The steps of run `run`'s journal (a checkpoint id, or [`turn_journal_id`] for a
    /// thread's turn), in order, each decoded and checked: a step written by another flow,
    /// truncated or forged is refused ([`JournalError::Corrupt`]), and nothing is changed.
    pub async fn journal(&self, run: &str) -> Result<Vec<Step>, JournalError> {
        let store = self.journal.as_ref().ok_or_else(|| {
            JournalError::Store(crate::store::StoreError::Other {
                id: run.to_owned(),
                message: "this runner has no journal store; give it one with \
                          RunnerBuilder::journal_store"
                    .into(),
            })
        })?;
        let flow = self.flow_print();
        store
            .read_steps(run, 0)
            .await?
            .into_iter()
            .map(|s| decode(run, &flow, s))
            .collect()
    }

    /// Opens the journal `run` for a recovered run (see `runner::recover`): the run
    /// regenerates `replayed`, the journal's steps, which are checked and not written again;
    /// what follows is appended in this runner's mode ([`Durability::Sync`] if it is
    /// [`Durability::Exit`]: a recovered run keeps journaling).
    pub(crate) async fn open_replaying_journal(
        &self,
        run: String,
        scope: String,
        replayed: Vec<RecordedEvent>,
    ) -> Result<JournalWriter, JournalError> {
        let store = self.journal_store_or_err(&run)?;
        let mode = match self.durability {
            Durability::Exit => Durability::Sync,
            other => other,
        };
        let len = store.journal_len(&run).await?;
        if len != replayed.len() as u64 {
            return Err(JournalError::Conflict {
                run,
                expected: replayed.len() as u64,
                found: len,
            });
        }
        let mut writer = JournalWriter {
            store: Arc::clone(store),
            run,
            mode,
            flow: self.flow_print(),
            scope: scope.into(),
            inline: store.keeps_deferred(),
            written: 0,
            next: len,
            background: None,
            replayed,
            gate: None,
            kept: Vec::new(),
            due_from: None,
        };
        writer.start_background(len);
        Ok(writer)
    }

    /// This runner's journal store, or the error that says it has none.
    pub(crate) fn journal_store_or_err(
        &self,
        run: &str,
    ) -> Result<&Arc<dyn JournalStore>, JournalError> {
        self.journal.as_ref().ok_or_else(|| {
            JournalError::Store(crate::store::StoreError::Other {
                id: run.to_owned(),
                message: "this runner has no journal store; give it one with \
                          RunnerBuilder::journal_store"
                    .into(),
            })
        })
    }

    /// The fingerprint of this runner's flow, as steps carry it.
    pub(crate) fn flow_fingerprint(&self) -> String {
        self.flow_print.to_string()
    }

    /// [`flow_fingerprint`](Runner::flow_fingerprint), shared (made once per runner).
    pub(crate) fn flow_print(&self) -> Arc<str> {
        Arc::clone(&self.flow_print)
    }

    /// Opens the journal `run` for a run of this runner on `session`, if its mode writes one;
    /// an error if it needs a journal store it does not have.
    pub(crate) async fn open_journal(
        &self,
        run: String,
        scope: String,
        session: &Session,
    ) -> Result<Option<JournalWriter>, JournalError> {
        if self.durability == Durability::Exit {
            return Ok(None);
        }
        let Some(store) = &self.journal else {
            return Err(JournalError::Store(crate::store::StoreError::Other {
                id: run,
                message: format!(
                    "durability {:?} needs a journal store; give the runner one with \
                     RunnerBuilder::journal_store",
                    self.durability
                ),
            }));
        };
        JournalWriter::open(
            Arc::clone(store),
            run,
            self.durability,
            self.flow_print(),
            scope.into(),
            session,
        )
        .await
        .map(Some)
    }
}
