//! [`TemporalAgent`]: the root a served flow's runner runs when its turns run on Temporal.
//!
//! A turn: the thread's workflow is started if it is not running (its id is the thread's store
//! id) and the turn is sent as an update, both in one request (update-with-start; the update's
//! id is the turn's idempotency scope, so a resend is the same turn), and the workflow's events
//! are read as they are made (the query `progress`, every [`TemporalExecutor::poll_every`],
//! and at once when a model call not yet placed posts its first piece, from the count read so
//! far: each event once, a worker's death included) while the model calls' streamed pieces
//! are pushed to this process (the sink of `live`); a call's first piece, which says its
//! place among the turn's events, opens its streamed message without a reading once the
//! reading has passed that place. When the workflow waits on a question (an approval), the agent ends
//! its run with an interrupt of its own, carrying the workflow's question as its info: the
//! runner records the turn as interrupted, and the flow's approvals decide who may answer. Its
//! resume sends the answer as the workflow's `answer` update and reads the rest of the turn.
//!
//! A turn the server cancels is cancelled on the workflow too (its signal `cancel_turn`, which
//! stops that turn and lets the thread go on): a cancel at safe points (`after_model`,
//! `after_tools`) as it is asked of the run, and a run dropped before its turn ended (the
//! client of a streamed turn went away, `on_disconnect: cancel`, an `immediate` cancel) as
//! `immediate`, which keeps nothing of the turn in the workflow's thread, as the server records
//! nothing of it (the workflow stops waiting for the calls under way and cancels their
//! activities). A turn stopped at a safe point is continued (`POST .../runs/{run}/resume`) as
//! the workflow's resume of its stopped turn ([`TurnRequest::resume`]): it goes on from where
//! it stopped, as in process.

use std::sync::Arc;

use agentweave_runtime::cancel::is_cancel_interrupt;
use agentweave_runtime::{
    Action, Agent, AgentError, AgentEvent, AgentInput, EventStream, InterruptInfo, ResumeInfo,
    RunContext,
};
use agentweave_runtime::{CancelMode, CancelSignal};
use agentweave_temporal::{
    AnswerRequest, CancelTurn, Progress, ThreadStart, ThreadWorkflow, TurnRequest, APPROVE_GRANT,
    LAST_TURN,
};
use futures::Stream;
use serde_json::json;
use temporalio_client::{
    WorkflowExecuteUpdateOptions, WorkflowIdConflictPolicy, WorkflowQueryOptions,
    WorkflowSignalOptions, WorkflowUpdateWithStartOptions,
};

use super::live::{self, Sink};
use super::TemporalExecutor;

/// Who the server says asks a turn and answers a question, to the workflow. The server checks
/// who may answer itself (the flow's approvals, the runner's answer rule) before an answer
/// reaches the workflow; the workflow's validator then checks the server's grant.
const SERVER_REQUESTER: &str = "agentflow-server";
const SERVER_ANSWERER: &str = "agentflow-server:answers";

/// How long sending a turn is tried again (no worker to accept it: one died, none started yet).
const SEND_PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// How many times a cancel is sent while the workflow is not there yet (its turn is being sent).
const CANCEL_ATTEMPTS: u32 = 20;

/// How long a reading of the turn's events waits for a worker to answer (then reads again).
const QUERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The root of a flow served on Temporal: it sends each turn to the thread's workflow and passes
/// the workflow's events on as they are made (see [`crate::temporal`]).
pub struct TemporalAgent {
    executor: TemporalExecutor,
    flow: String,
    name: String,
}

impl std::fmt::Debug for TemporalAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemporalAgent")
            .field("flow", &self.flow)
            .field("name", &self.name)
            .finish()
    }
}

/// What a reading shares with the stream that passes its events on: the turn's place as far as
/// it is known, and whether the reading has finished (the turn ended, or waits on a question).
#[derive(Debug, Default)]
struct Watch {
    place: std::sync::Mutex<(Option<String>, Option<u64>)>,
    finished: std::sync::atomic::AtomicBool,
}

impl Watch {
    /// The reading has finished: marked before its last event goes out, so that a stream
    /// dropped once it has that event does not cancel the turn.
    fn finish(&self) {
        self.finished
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn stop(&self, mode: CancelMode) -> CancelTurn {
        let (key, turn) = self.place.lock().unwrap_or_else(|e| e.into_inner()).clone();
        CancelTurn { key, turn, mode }
    }
}

/// Where a turn stands in its workflow: what a resume reads on from.
#[derive(Debug, Clone)]
struct At {
    workflow: String,
    /// The turn's key (its update's id), read by before its number is known.
    key: Option<String>,
    /// The turn's number, once known.
    turn: Option<u64>,
    since: u64,
    /// The question this reading answered (the workflow may show it a moment longer).
    answered: Option<String>,
}

impl TemporalAgent {
    /// The root of flow `flow` (the workers' name for it), named `name` (its tree's root's).
    pub fn new(executor: TemporalExecutor, flow: &str, name: &str) -> Self {
        TemporalAgent {
            executor,
            flow: flow.to_owned(),
            name: name.to_owned(),
        }
    }

    fn failed(&self, what: &str, e: impl std::fmt::Display) -> AgentEvent {
        tracing::warn!(agent = %self.name, task_queue = %self.executor.task_queue, error = %e, "{what} on Temporal failed");
        AgentEvent::error(AgentError::Failed {
            agent: Arc::from(self.name.as_str()),
            message: Arc::from(format!(
                "{what} on Temporal (task queue '{}') failed: {e}",
                self.executor.task_queue
            )),
        })
    }

    /// Starts the thread's workflow if need be and sends it the turn under `key` (the update's
    /// id: sending again is the same turn).
    async fn send_turn(
        &self,
        workflow: &str,
        request: &TurnRequest,
        key: &str,
        sink: &str,
    ) -> Result<(), String> {
        let exec = &self.executor;
        // One RPC (update-with-start): the workflow is started if it is not running and the
        // turn rides in its first workflow task, rather than a start and then an update that
        // waits for a second task.
        exec.client
            .start_update_with_start_workflow(
                ThreadWorkflow::run,
                ThreadStart {
                    tool_timeout_ms: exec.tool_timeout_ms,
                    model_timeout_ms: exec.model_timeout_ms,
                    ..ThreadStart::new(self.flow.clone(), workflow)
                },
                ThreadWorkflow::turn,
                TurnRequest {
                    live: Some(sink.to_owned()),
                    key: Some(key.to_owned()),
                    ..request.clone()
                },
                WorkflowUpdateWithStartOptions::new(
                    exec.task_queue.as_ref(),
                    workflow,
                    WorkflowIdConflictPolicy::UseExisting,
                )
                .maybe_task_timeout(exec.task_timeout)
                .update_id(key.to_owned())
                .build(),
            )
            .await
            .map_err(|e| format!("sending the turn: {e}"))?;
        Ok(())
    }

    /// [`send_turn`](Self::send_turn), sent again while it fails (no worker to accept it: one
    /// died, none started yet), for [`SEND_PATIENCE`].
    async fn send_turn_patiently(
        self: Arc<Self>,
        workflow: String,
        request: TurnRequest,
        key: String,
        sink: String,
    ) -> Result<(), String> {
        let mut wait = std::time::Duration::from_millis(100);
        let started = std::time::Instant::now();
        loop {
            match self.send_turn(&workflow, &request, &key, &sink).await {
                Ok(()) => return Ok(()),
                Err(e) if started.elapsed() >= SEND_PATIENCE => return Err(e),
                Err(_) => {
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(std::time::Duration::from_secs(2));
                }
            }
        }
    }

    fn sink_url(&self, sink: &Sink) -> String {
        format!(
            "{}/v1/temporal/live/{}",
            self.executor.public_url, sink.token
        )
    }

    /// Asks the workflow to stop the turn as `stop` says (sent again for a while when the
    /// workflow is not there yet: its turn was still being sent).
    async fn cancel_turn(&self, workflow: &str, stop: CancelTurn) {
        let handle = self
            .executor
            .client
            .get_workflow_handle::<ThreadWorkflow>(workflow);
        let mut wait = std::time::Duration::from_millis(100);
        for attempt in 1..=CANCEL_ATTEMPTS {
            let sent = handle
                .signal(
                    ThreadWorkflow::cancel_turn,
                    stop.clone(),
                    WorkflowSignalOptions::default(),
                )
                .await;
            match sent {
                Ok(()) => return,
                Err(e) if attempt == CANCEL_ATTEMPTS => {
                    tracing::warn!(agent = %self.name, workflow, error = %e, "cancelling the turn on Temporal failed");
                }
                Err(_) => {
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(std::time::Duration::from_secs(2));
                }
            }
        }
    }

    async fn progress(&self, at: &At) -> Result<Progress, String> {
        let handle = self
            .executor
            .client
            .get_workflow_handle::<ThreadWorkflow>(at.workflow.as_str());
        let query = async {
            match (at.turn, &at.key) {
                (None, Some(key)) => {
                    handle
                        .query(
                            ThreadWorkflow::progress_of,
                            (key.clone(), at.since),
                            WorkflowQueryOptions::default(),
                        )
                        .await
                }
                (turn, _) => {
                    handle
                        .query(
                            ThreadWorkflow::progress,
                            (turn.unwrap_or(LAST_TURN), at.since),
                            WorkflowQueryOptions::default(),
                        )
                        .await
                }
            }
        };
        // A query waits for a worker to answer it: one that died answers nothing.
        match tokio::time::timeout(QUERY_TIMEOUT, query).await {
            Ok(answer) => answer.map_err(|e| format!("reading the turn's events: {e}")),
            Err(_) => Err(format!(
                "reading the turn's events: no worker answered in {} s",
                QUERY_TIMEOUT.as_secs()
            )),
        }
    }

    /// The turn's events from `at` on, as they are made, until it ends or waits on a question:
    /// read by a task of its own (a reader of a streamed message waits for its end before it
    /// reads on, while the task goes on reading the workflow).
    ///
    /// Every event is passed on recorded (in the run's session, as the tree records its agents'
    /// events): the agents of the workflow have no node in the tree around this agent to record
    /// them, and a transfer made on the workflow happened there (the tree, which holds no agent
    /// to transfer to, must not act on it).
    fn follow(
        self: Arc<Self>,
        cx: &RunContext,
        at: At,
        sink: Sink,
        sending: Option<tokio::task::JoinHandle<Result<(), String>>>,
    ) -> impl Stream<Item = AgentEvent> + Send {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let watch = Arc::new(Watch::default());
        *watch.place.lock().unwrap_or_else(|e| e.into_inner()) = (at.key.clone(), at.turn);
        let cancel = CancelOnDrop {
            agent: Arc::clone(&self),
            workflow: at.workflow.clone(),
            watch: Arc::clone(&watch),
        };
        let reading = {
            let watch = Arc::clone(&watch);
            let signal = cx.cancel_signal().clone();
            async move { self.read(at, sink, sending, tx, &watch, signal).await }
        };
        let reader = tokio::spawn(reading);
        let session = Arc::clone(cx.session());
        async_stream::stream! {
            let _cancel = cancel;
            let _reader = AbortOnDrop(reader);
            while let Some(mut event) = rx.recv().await {
                // This agent's own interrupt is the tree's to address and record.
                if !event.is_interrupt() {
                    session.record(&event);
                    event.recorded = true;
                }
                yield event;
            }
        }
    }

    async fn read(
        self: Arc<Self>,
        mut at: At,
        sink: Sink,
        mut sending: Option<tokio::task::JoinHandle<Result<(), String>>>,
        out: tokio::sync::mpsc::UnboundedSender<AgentEvent>,
        watch: &Watch,
        cancel: CancelSignal,
    ) {
        // The cancel of the run passed on to the workflow (a safe-point mode: an immediate one
        // drops this reading, and `CancelOnDrop` sends it).
        let mut cancel_sent: Option<CancelMode> = None;
        let mut opened = std::collections::HashSet::new();
        // The model calls placed before the first event this reading reads are an earlier
        // reading's (before the question it answers).
        let start = at.since;
        let mut misses = 0u32;
        let patience = 30_000 / self.executor.poll.as_millis().max(1) as u32 + 50;
        // Whether the next reading comes at once (a model call this reading could not place
        // started streaming).
        let mut read_now = true;
        loop {
            // The next reading comes at the poll, or when a model call this reading has not
            // opened posts its first piece: one that says its place, passed already, opens at
            // once with no reading (see `Sink::placed`); another is placed by a reading at once.
            while !read_now {
                tokio::select! {
                    () = tokio::time::sleep(self.executor.poll) => read_now = true,
                    () = sink.posted() => read_now = open_placed(&sink, start, at.since, &mut opened, &out),
                }
            }
            read_now = false;
            // The turn is read while it is being sent: a send that failed for good ends it.
            if sending.as_ref().is_some_and(|s| s.is_finished()) {
                let sent = sending.take().expect("checked").await;
                match sent.map_err(|e| e.to_string()).and_then(|sent| sent) {
                    Ok(()) => {}
                    Err(e) => {
                        watch.finish();
                        let _ = out.send(self.failed("the turn", e));
                        return;
                    }
                }
            }
            if let Some(mode) = cancel.requested().filter(|m| Some(*m) != cancel_sent) {
                cancel_sent = Some(mode);
                self.cancel_turn(&at.workflow, watch.stop(mode)).await;
            }
            // While the workflow is read (a query waits for the workflow task under way to end),
            // a model call that starts streaming in its place opens at once.
            let answer = {
                let query = self.progress(&at);
                tokio::pin!(query);
                loop {
                    tokio::select! {
                        answer = &mut query => break answer,
                        () = sink.posted() => {
                            read_now |= open_placed(&sink, start, at.since, &mut opened, &out);
                        }
                    }
                }
            };
            let progress = match answer {
                Ok(p) => {
                    misses = 0;
                    if p.turn.is_some() {
                        at.turn = p.turn;
                        watch.place.lock().unwrap_or_else(|e| e.into_inner()).1 = p.turn;
                    }
                    p
                }
                Err(e) => {
                    // A query fails while no worker holds the workflow (one died, another has
                    // not taken it yet): read again, for a while.
                    misses += 1;
                    tracing::debug!(workflow = %at.workflow, turn = ?at.turn, error = %e, "reading again");
                    if misses > patience {
                        watch.finish();
                        let _ = out.send(self.failed("following the turn", e));
                        return;
                    }
                    continue;
                }
            };
            let mut marks: Vec<_> = progress
                .models
                .iter()
                .filter(|m| m.at >= start && !opened.contains(&m.effect))
                .collect();
            marks.sort_by_key(|m| (m.at, m.effect));
            let mut marks = marks.into_iter().peekable();
            let count = progress.events.len() as u64;
            for (i, json) in progress.events.into_iter().enumerate() {
                let index = at.since + i as u64;
                while let Some(m) = marks.next_if(|m| m.at <= index) {
                    // A call opens with its first piece. One that ended having streamed
                    // nothing (its reply did not stream, or no call was made: a budget
                    // refused it on the worker) is never opened: its event says what
                    // happened. One under way with nothing yet waits for a later reading.
                    if sink.started(m.effect) {
                        opened.insert(m.effect);
                        let _ = out.send(sink.open(m.effect, &m.agent, &m.run_path));
                    } else if m.done {
                        opened.insert(m.effect);
                    }
                }
                if let Some(event) = sink.event_of(json) {
                    let _ = out.send(event);
                }
            }
            at.since += count;
            for m in marks.filter(|m| m.at <= at.since && sink.started(m.effect)) {
                opened.insert(m.effect);
                let _ = out.send(sink.open(m.effect, &m.agent, &m.run_path));
            }
            for m in progress
                .models
                .iter()
                .filter(|m| m.done && opened.contains(&m.effect))
            {
                sink.cut(m.effect);
            }
            if progress.ended {
                watch.finish();
                return;
            }
            if let Some(question) = progress
                .question
                .filter(|q| at.answered.as_deref() != Some(q.id.as_str()))
            {
                watch.finish();
                let _ = out.send(interrupt_of(&question, &at));
                return;
            }
        }
    }
}

/// Opens the streamed messages of the model calls `sink` places by itself among the `since`
/// events this reading has passed on (from `start`, its first): see [`Sink::placed`]. Gives
/// whether a call that started is left for a reading of the workflow to place.
fn open_placed(
    sink: &Sink,
    start: u64,
    since: u64,
    opened: &mut std::collections::HashSet<u64>,
    out: &tokio::sync::mpsc::UnboundedSender<AgentEvent>,
) -> bool {
    let (placed, unplaced) = sink.placed(start, since);
    for call in placed {
        opened.insert(call.effect);
        let _ = out.send(sink.open(call.effect, &call.agent, &call.run_path));
    }
    unplaced
}

/// This agent's interrupt for the workflow's `question`, read up to `at`: it carries the
/// question's id and comes from the agent that asked it (its address's last frame), so the
/// tree around this agent keeps that id (it names only an interrupt of its own root by its run
/// path, which is then the same): an approval has the id it has in process, and is answered
/// by it through every door. Its state is where the workflow stands, for the resume.
fn interrupt_of(question: &InterruptInfo, at: &At) -> AgentEvent {
    let mut info = InterruptInfo::new(question.info.clone());
    info.id = question.id.clone();
    info.state = Some(json!({
        "workflow": at.workflow,
        "turn": at.turn.unwrap_or_default(),
        "since": at.since,
        "question": question.id,
    }));
    let event = AgentEvent::action(Action::interrupted(info));
    match question.address.last() {
        Some(asker) => event.stamped(&asker.agent, &asker.run_path),
        None => event,
    }
}

/// Cancels the turn on the workflow, `immediate`, when the turn's stream is dropped before its
/// reading finished (the client of a streamed turn went away, an `immediate` cancel, a turn
/// over its time): the server records nothing of such a turn, and the workflow's thread keeps
/// nothing of it either.
struct CancelOnDrop {
    agent: Arc<TemporalAgent>,
    workflow: String,
    watch: Arc<Watch>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self
            .watch
            .finished
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        tracing::debug!(agent = %self.agent.name, workflow = %self.workflow, "the turn's reader went away: cancelling it on Temporal");
        let stop = self.watch.stop(CancelMode::IMMEDIATE);
        let agent = Arc::clone(&self.agent);
        let workflow = std::mem::take(&mut self.workflow);
        runtime.spawn(async move { agent.cancel_turn(&workflow, stop).await });
    }
}

/// Stops the reading task when the turn's stream is dropped (the client went away).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Agent for TemporalAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "runs the flow's turns as its thread's workflow on Temporal"
    }

    fn run(self: Arc<Self>, cx: RunContext, _input: AgentInput) -> EventStream {
        let text = cx
            .root_input()
            .iter()
            .rev()
            .find(|m| m.role == agentweave_runtime::Role::User)
            .map(|m| m.content.clone())
            .unwrap_or_default();
        // The server's own double texting runs before a turn is sent.
        self.start(&cx, TurnRequest::new(SERVER_REQUESTER, text))
    }

    fn resume(self: Arc<Self>, cx: RunContext, input: AgentInput, info: ResumeInfo) -> EventStream {
        if info.interrupts().any(is_cancel_interrupt) {
            // A turn the workflow stopped at a safe point: it goes on there, as in process.
            return self.start(&cx, TurnRequest::resume(SERVER_REQUESTER));
        }
        self.answer(cx, input, info)
    }

    fn runs_agents_of_its_own(&self) -> bool {
        true
    }
}

impl TemporalAgent {
    /// Sends `request` to the thread's workflow (started if need be) as a turn of its own and
    /// reads it.
    fn start(self: Arc<Self>, cx: &RunContext, request: TurnRequest) -> EventStream {
        let workflow = cx
            .conversation_id()
            .unwrap_or(cx.idempotency_scope())
            .to_owned();
        let update_id = format!("turn:{}", cx.idempotency_scope());
        let sink = live::open();
        let sending = tokio::spawn(Arc::clone(&self).send_turn_patiently(
            workflow.clone(),
            request,
            update_id.clone(),
            self.sink_url(&sink),
        ));
        let at = At {
            workflow,
            key: Some(update_id),
            turn: None,
            since: 0,
            answered: None,
        };
        EventStream::new(self.follow(cx, at, sink, Some(sending)))
    }

    /// Answers the question the workflow waits on with the resume's data, and reads the rest
    /// of the turn.
    fn answer(
        self: Arc<Self>,
        cx: RunContext,
        _input: AgentInput,
        info: ResumeInfo,
    ) -> EventStream {
        let state = info.state().cloned().unwrap_or_default();
        let answer = info.data().cloned().unwrap_or(serde_json::Value::Null);
        EventStream::new(async_stream::stream! {
            let (Some(workflow), Some(turn), Some(since), Some(question)) = (
                state["workflow"].as_str(),
                state["turn"].as_u64(),
                state["since"].as_u64(),
                state["question"].as_str(),
            ) else {
                yield self.failed("resuming the turn", "the interrupt carries no place in a workflow");
                return;
            };
            let at = At {
                workflow: workflow.to_owned(),
                key: None,
                turn: Some(turn),
                since,
                answered: Some(question.to_owned()),
            };
            let sink = live::open();
            let answered = self
                .executor
                .client
                .get_workflow_handle::<ThreadWorkflow>(workflow)
                .execute_update(
                    ThreadWorkflow::answer,
                    AnswerRequest {
                        by: SERVER_ANSWERER.to_owned(),
                        grants: vec![APPROVE_GRANT.to_owned()],
                        interrupt_id: question.to_owned(),
                        answer,
                        live: Some(self.sink_url(&sink)),
                    },
                    WorkflowExecuteUpdateOptions::default(),
                )
                .await;
            if let Err(e) = answered {
                yield self.failed("answering the turn's question", e);
                return;
            }
            for await event in Arc::clone(&self).follow(&cx, at, sink, None) {
                yield event;
            }
        })
    }
}

/// An event of the workflow, in its JSON form, as an engine event again (`None` for an event
/// left empty, its message already streamed).
pub(super) fn event_of_json(e: agentweave_runtime::EventJson) -> Option<AgentEvent> {
    let mut event = match (&e.message, &e.custom, &e.error) {
        // A budget's refusal (a model activity's reservation refused): the same typed error,
        // so every door gives it the public code it has in process.
        (
            _,
            _,
            Some(agentweave_runtime::ErrorJson {
                budget: Some(exceeded),
                ..
            }),
        ) => AgentEvent::error(AgentError::BudgetExceeded(exceeded.clone())),
        (_, _, Some(error)) => AgentEvent::error(AgentError::Failed {
            agent: error
                .agent
                .clone()
                .unwrap_or_else(|| Arc::clone(&e.agent_name)),
            message: Arc::from(error.message.as_str()),
        }),
        (Some(message), _, _) => AgentEvent::message(message.clone()),
        (None, Some(custom), _) => AgentEvent::custom(custom.clone()),
        (None, None, None) => AgentEvent::action(e.action.clone()?),
    };
    if e.error.is_some() || e.message.is_some() || e.custom.is_some() {
        if let Some(action) = &e.action {
            event = event.with_action(action.clone());
        }
    }
    Some(event.stamped(&e.agent_name, &e.run_path))
}
