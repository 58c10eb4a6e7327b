//! [`ThreadWorkflow`]: a thread as a workflow (one workflow id per thread), each turn a step
//! of it, the orchestration running inside it and every effect a Temporal command.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use flow_core::event::InterruptInfo;
use flow_core::{EventStream, Message};
use flow_runtime::{AnswerRule, Caller};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use temporalio_client::RetryPolicy;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityExecutionError, ActivityOptions, ApplicationFailure, SyncWorkflowContext,
    WorkflowContext, WorkflowContextView, WorkflowResult,
};

use super::activities::AgentflowActivities;
use super::worker::worker_flows;
use crate::effects::{Effect, Effects, Outcome};
use crate::live::{LiveSink, LiveTurn, ModelMark, Progress, LAST_TURN};
use crate::policy::{self, Retry};
use crate::turn::{drive, start_turn, Started, ThreadLog};

fn lock(live: &Mutex<LiveTurn>) -> std::sync::MutexGuard<'_, LiveTurn> {
    live.lock().unwrap_or_else(|e| e.into_inner())
}

/// The grant answering a question (an approval) needs.
pub const APPROVE_GRANT: &str = "approve";

/// How long one model call may take, per attempt.
const MODEL_TIMEOUT: Duration = Duration::from_secs(120);
/// How long one tool call may take, per attempt, unless the thread says otherwise
/// ([`ThreadStart::tool_timeout_ms`]).
const TOOL_TIMEOUT: Duration = Duration::from_secs(10);

/// What a thread workflow is started with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadStart {
    /// The flow, by its name in the workers' [`worker_flows`](super::worker_flows).
    pub flow: String,
    /// The thread's id (the workflow id is the caller's choice; one per thread).
    pub thread: String,
    /// How long one attempt of a tool call may take, in milliseconds (default 10 s): a worker
    /// that dies during a call is noticed after it, and an idempotent tool's call is retried.
    #[serde(default)]
    pub tool_timeout_ms: Option<u64>,
    /// How long one attempt of a model call may take, in milliseconds (default 120 s): a
    /// worker that dies during a call is noticed after it, and the call runs again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_timeout_ms: Option<u64>,
}

/// A turn asked of a thread: who asks and what they say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnRequest {
    /// The requester (recorded: they may not approve their own turn's questions).
    pub by: String,
    /// The user's message.
    pub text: String,
    /// The sink the turn's model calls stream their replies to (an HTTP URL; see
    /// [`crate::live`]); `None`: nothing is streamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<String>,
    /// The reader's name for the turn, for [`ThreadWorkflow::progress_of`]: a reader can read
    /// the turn's events by it before it knows the turn's number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// A finished turn: its number and its events in their documented JSON form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnResult {
    /// The turn's number in the thread, from 0.
    pub turn: u64,
    /// The turn's events (`AgentEvent::to_json`).
    pub events: Vec<serde_json::Value>,
}

/// An answer to the question a turn waits on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerRequest {
    /// Who answers.
    pub by: String,
    /// The grants the service gave them (answering needs [`APPROVE_GRANT`]).
    pub grants: Vec<String>,
    /// The question's interrupt id ([`ThreadWorkflow::question`] gives it).
    pub interrupt_id: String,
    /// The answer (an approval's: `true`, `false` or `{"approve": BOOL, "reason"?}`).
    pub answer: serde_json::Value,
    /// The sink the rest of the turn's model calls stream to from now on (the reader of the
    /// turn after the answer; see [`crate::live`]); `None`: the turn's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<String>,
}

/// A thread as a workflow: turns arrive as updates ([`turn`](Self::turn)) and run one after
/// the other; a question waits for the update [`answer`](Self::answer), refused by its
/// validator (before it enters history) when the answerer lacks [`APPROVE_GRANT`] or asked the
/// turn themselves; the signal [`close`](Self::close) ends the thread once its turns are done.
#[workflow]
#[derive(Default)]
pub struct ThreadWorkflow {
    queued: VecDeque<(u64, TurnRequest)>,
    next_turn: u64,
    results: HashMap<u64, TurnResult>,
    requester: Option<String>,
    question: Option<InterruptInfo>,
    answers: HashMap<String, serde_json::Value>,
    closing: bool,
    /// The running (or last) turn's events as they are made, for the query
    /// [`progress`](Self::progress) (see [`crate::live`]).
    live: Arc<Mutex<LiveTurn>>,
    /// Where the running turn's model calls stream their replies (its request's sink, or the
    /// one its last answer gave).
    sink: Option<String>,
    /// The turns asked with a key ([`TurnRequest::key`]), by key.
    keys: HashMap<String, u64>,
}

#[workflow_methods]
impl ThreadWorkflow {
    /// Runs the thread's turns as they arrive, until it is closed; gives the number of turns.
    #[run]
    pub async fn run(ctx: &mut WorkflowContext<Self>, start: ThreadStart) -> WorkflowResult<u64> {
        let flow = worker_flows().get(&start.flow).map_err(|e| {
            ApplicationFailure::builder(e)
                .type_name("AgentflowLookup".to_owned())
                .non_retryable(true)
                .build()
        })?;
        let log = ThreadLog::new(start.thread.as_str());
        let seed: u64 = ctx.random();
        let tool_timeout = start
            .tool_timeout_ms
            .map_or(TOOL_TIMEOUT, Duration::from_millis);
        let model_timeout = start
            .model_timeout_ms
            .map_or(MODEL_TIMEOUT, Duration::from_millis);
        loop {
            ctx.wait_condition(|s| !s.queued.is_empty() || s.closing)
                .await?;
            let Some((turn, request, live)) = ctx.state_mut(|s| {
                let next = s.queued.pop_front();
                s.requester = next.as_ref().map(|(_, r)| r.by.clone());
                s.sink = next.as_ref().and_then(|(_, r)| r.live.clone());
                next.map(|(turn, request)| (turn, request, Arc::clone(&s.live)))
            }) else {
                return Ok(log.len());
            };
            let effects = Effects::new(
                ctx.workflow_time().unwrap_or(SystemTime::UNIX_EPOCH),
                seed ^ turn,
            );
            let input = Message::user(request.text.as_str());
            *lock(&live) = LiveTurn {
                turn: Some(turn),
                ..LiveTurn::default()
            };
            let shown = Arc::clone(&live);
            let events = EventStream::new(
                start_turn(&flow, &start.flow, &effects, &log, input.clone()).inspect(move |e| {
                    if let Some(json) = e.to_json().ok().and_then(|j| serde_json::to_value(j).ok())
                    {
                        lock(&shown).events.push(json);
                    }
                }),
            );
            let c: WorkflowContext<Self> = ctx.clone();
            let events = drive(
                events,
                &effects,
                |id, effect| start_effect(&c, turn, id, effect, (model_timeout, tool_timeout)),
                || {
                    if let Some(now) = c.workflow_time() {
                        effects.set_now(now);
                    }
                },
            )
            .await;
            lock(&live).ended = true;
            log.record(input, &events);
            let json = events
                .iter()
                .filter_map(|e| e.to_json().ok())
                .filter_map(|e| serde_json::to_value(e).ok())
                .collect();
            ctx.state_mut(|s| {
                s.requester = None;
                s.results.insert(turn, TurnResult { turn, events: json });
            });
        }
    }

    /// Runs a turn (after the ones before it) and gives its events.
    #[update]
    pub async fn turn(ctx: &mut WorkflowContext<Self>, request: TurnRequest) -> TurnResult {
        let turn = ctx.state_mut(|s| {
            let turn = s.next_turn;
            s.next_turn += 1;
            if let Some(key) = &request.key {
                s.keys.insert(key.clone(), turn);
            }
            s.queued.push_back((turn, request));
            turn
        });
        let _ = ctx.wait_condition(|s| s.results.contains_key(&turn)).await;
        ctx.state_mut(|s| s.results.remove(&turn))
            .unwrap_or(TurnResult {
                turn,
                events: Vec::new(),
            })
    }

    /// Refuses an answer, before it enters history, when no question waits under its id, or
    /// when the engine's answer rule refuses its author (no [`APPROVE_GRANT`], or the turn's
    /// own requester).
    #[update_validator(answer)]
    fn validate_answer(
        &self,
        _ctx: &WorkflowContextView,
        request: &AnswerRequest,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let Some(question) = &self.question else {
            return Err(format!(
                "no question waits for an answer on this thread (answer to '{}')",
                request.interrupt_id
            )
            .into());
        };
        if question.id != request.interrupt_id {
            return Err(format!(
                "the question waiting is '{}', not '{}'",
                question.id, request.interrupt_id
            )
            .into());
        }
        let caller =
            Caller::new(request.by.as_str()).grants(request.grants.iter().map(String::as_str));
        let answers = HashMap::from([(request.interrupt_id.clone(), request.answer.clone())]);
        AnswerRule::new(APPROVE_GRANT)
            .approver_not_requester(true)
            .check(
                Some(&caller),
                std::slice::from_ref(question),
                &answers,
                self.requester.as_deref(),
            )
            .map_err(|refusal| refusal.to_string().into())
    }

    /// Answers the question waiting (checked by its validator first).
    #[update]
    pub fn answer(
        &mut self,
        _ctx: &mut SyncWorkflowContext<Self>,
        request: AnswerRequest,
    ) -> String {
        if let Some(sink) = request.live {
            self.sink = Some(sink);
        }
        self.answers
            .insert(request.interrupt_id.clone(), request.answer);
        format!("answered '{}'", request.interrupt_id)
    }

    /// The question the running turn waits on, if any.
    #[query]
    pub fn question(&self, _ctx: &WorkflowContextView) -> Option<InterruptInfo> {
        self.question.clone()
    }

    /// Turn `turn`'s events (of the last turn asked, for [`LAST_TURN`]) from number `since` on, whether it has ended, and the question it
    /// waits on (see [`crate::live`]): a reader polls it to stream a turn's events as they are
    /// made; answered from the workflow's state, it enters no history.
    #[query]
    pub fn progress(&self, _ctx: &WorkflowContextView, at: (u64, u64)) -> Progress {
        let (turn, since) = at;
        let turn = match turn {
            LAST_TURN => self.next_turn.saturating_sub(1),
            turn => turn,
        };
        lock(&self.live).progress(turn, since, self.question.clone())
    }

    /// As [`progress`](Self::progress), for the turn asked with key `key`
    /// ([`TurnRequest::key`]); before that turn is asked, an empty progress (no turn, not
    /// ended).
    #[query]
    pub fn progress_of(&self, _ctx: &WorkflowContextView, at: (String, u64)) -> Progress {
        let (key, since) = at;
        match self.keys.get(&key) {
            Some(&turn) => lock(&self.live).progress(turn, since, self.question.clone()),
            None => Progress {
                since,
                ..Progress::default()
            },
        }
    }

    /// Ends the thread once the turns asked before are done.
    #[signal]
    pub fn close(&mut self, _ctx: &mut SyncWorkflowContext<Self>) {
        self.closing = true;
    }
}

fn retry_policy(retry: Retry) -> RetryPolicy {
    RetryPolicy::builder()
        .initial_interval(retry.initial)
        .backoff_coefficient(retry.backoff)
        .maximum_interval(retry.max_interval)
        .maximum_attempts(retry.max_attempts)
        .build()
}

/// Starts `effect` (number `id` of turn `turn`) as a Temporal command.
fn start_effect<'a>(
    c: &WorkflowContext<ThreadWorkflow>,
    turn: u64,
    id: u64,
    effect: Effect,
    (model_timeout, tool_timeout): (Duration, Duration),
) -> Started<'a> {
    let c = c.clone();
    match effect {
        Effect::Model(mut call) => {
            call.live = c.state(|s| s.sink.clone()).map(|url| LiveSink {
                url,
                turn,
                effect: id,
            });
            let live = c.state(|s| Arc::clone(&s.live));
            {
                let mut shown = lock(&live);
                let at = shown.events.len() as u64;
                shown.models.push(ModelMark {
                    effect: id,
                    at,
                    agent: call.agent.clone(),
                    run_path: call.run_path.clone().unwrap_or_default(),
                    done: false,
                });
            }
            let options = ActivityOptions::with_start_to_close_timeout(model_timeout)
                .retry_policy(retry_policy(policy::model_retry()))
                .summary(policy::model_summary(&call.agent, &call.model))
                .activity_id(policy::activity_id(turn, id, &call.agent, "model"))
                .build();
            Box::pin(async move {
                let result = c
                    .execute_activity(AgentflowActivities::model, call, options)
                    .await;
                if let Some(mark) = lock(&live).models.iter_mut().find(|m| m.effect == id) {
                    mark.done = true;
                }
                Outcome::Model(result.map_err(|e| failure_text(&e)))
            })
        }
        Effect::Tool(call) => {
            let options = ActivityOptions::with_start_to_close_timeout(tool_timeout)
                .retry_policy(retry_policy(policy::tool_retry(call.idempotent)))
                .summary(policy::tool_summary(&call.agent, &call.call.name))
                .activity_id(policy::activity_id(turn, id, &call.agent, &call.call.name))
                .build();
            Box::pin(async move {
                let result = c
                    .execute_activity(AgentflowActivities::tool, call, options)
                    .await;
                Outcome::Tool(result.map_err(|e| {
                    format!(
                        "{e}; the call may or may not have happened: check before calling it again"
                    )
                }))
            })
        }
        Effect::Sleep(wait) => Box::pin(async move {
            c.timer(wait).await;
            Outcome::Slept
        }),
        Effect::Answer(question) => {
            let key = question.id.clone();
            c.state_mut(|s| s.question = Some(question));
            Box::pin(async move {
                let _ = c.wait_condition(|s| s.answers.contains_key(&key)).await;
                let answer = c.state_mut(|s| {
                    s.question = None;
                    s.answers.remove(&key)
                });
                Outcome::Answered(answer.unwrap_or(serde_json::Value::Null))
            })
        }
    }
}

/// An activity's failure in words: its message, then each cause's (the activity's own error,
/// a timeout), so the error the agent's run ends with says what failed.
fn failure_text(error: &ActivityExecutionError) -> String {
    let mut text = error.to_string();
    let mut cause = error.failure().and_then(|f| f.cause.as_deref());
    while let Some(failure) = cause {
        text.push_str(": ");
        text.push_str(&failure.message);
        cause = failure.cause.as_deref();
    }
    text
}
