//! The bridge between the engine and a workflow: the engine's orchestration runs inside the
//! workflow, and every effect it needs of the world (a model call, a tool call, a wait, a
//! human's answer) is asked here as an [`Effect`], which the workflow answers with a Temporal
//! command (an activity, a timer, an update it waits for).
//!
//! The engine's futures are `Send`, the workflow's are not (its context is single-threaded):
//! [`Effects`] is the `Send` meeting point. The engine side asks ([`Effects::ask`]) and waits;
//! the workflow side takes what was asked ([`Effects::take_asked`]), starts the command, and
//! answers ([`Effects::answer`]) when it completes. Both sides are polled by the workflow's one
//! task, in a fixed order, so a replay asks the same effects in the same order.
//!
//! [`TemporalHost`] is the engine's [`Host`] in the workflow: its clock is the workflow's
//! ([`Effects::set_now`], from the workflow context), its ids are a counter seeded from the
//! workflow's deterministic randomness, and its waits are Temporal timers.
//! [`EffectsMiddleware`] answers every model and tool call of the run with an [`Effect`].

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, SystemTime};

use agentweave_core::event::{InterruptFrame, InterruptInfo, ToolFrame};
use agentweave_core::host::Host;
use agentweave_core::middleware::{HookContext, HookError, Middleware};
use agentweave_core::model::{ChatRequest, ModelParams, ToolDefinition};
use agentweave_core::{async_trait, Message, MessageRef, RunPath, ToolCall};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// A model call, as a model activity's input: which agent of which flow asks, and what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelCall {
    /// The flow (its name in the worker's [`Flows`](crate::Flows)).
    pub flow: String,
    /// The calling agent.
    pub agent: String,
    /// The model's name, as the agent's model reports it (for the activity's summary).
    pub model: String,
    /// The conversation, oldest first (after the [`earlier`](Self::earlier) parts'), shared
    /// with the run that asked it (serialised as the messages themselves).
    pub messages: Vec<MessageRef>,
    /// The keys of the conversation's first parts in the workers' blob store, in order, when
    /// it was too long to send whole (see [`crate::parts`]); the activity reads them back
    /// before [`messages`](Self::messages).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<String>,
    /// The tools the model may call, shared with the calling agent (serialised as a list).
    pub tools: Arc<[ToolDefinition]>,
    /// Sampling parameters.
    pub params: ModelParams,
    /// The calling agent's run path (the pieces of a streamed reply carry it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_path: Option<RunPath>,
    /// Where the call streams its reply as it comes (see [`crate::live`]); `None`: the reply
    /// comes whole with the activity's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<crate::live::LiveSink>,
    /// Set on a local model activity's input: a stub, the call itself (its conversation and
    /// tools) handed to the activity in the worker's memory by the workflow that scheduled it,
    /// not serialised (a local activity runs in that worker).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
}

impl ModelCall {
    /// The request the activity gives the agent's model (its [`earlier`](Self::earlier)
    /// parts left out: the activity reads them from the store first).
    pub fn request(&self) -> ChatRequest {
        let mut request = ChatRequest::new(self.messages.iter().cloned());
        request.tools = Arc::clone(&self.tools);
        request.params = self.params.clone();
        request
    }
}

/// A tool call, as a tool activity's input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallInput {
    /// The flow (its name in the worker's [`Flows`](crate::Flows)).
    pub flow: String,
    /// The calling agent.
    pub agent: String,
    /// The calling agent's run path: with the scope and the call id it makes the call's
    /// idempotency key, the same in the activity as in the workflow.
    pub run_path: RunPath,
    /// The run's idempotency scope.
    pub scope: String,
    /// The call: id, tool name, arguments.
    pub call: ToolCall,
    /// Whether the tool declared itself idempotent (its retry policy depends on it).
    pub idempotent: bool,
    /// Set when the call resumes after its own interrupt: the interrupt and the answer.
    pub resume: Option<ToolResume>,
}

impl ToolCallInput {
    /// The call's idempotency key, `SCOPE:RUN/PATH:CALL_ID`, as
    /// [`ToolContext::idempotency_key`](agentweave_core::ToolContext::idempotency_key) gives it.
    pub fn idempotency_key(&self) -> String {
        format!("{}:{}:{}", self.scope, self.run_path, self.call.id)
    }

    /// The interrupt this call raised with `info` and `state`, addressed as the engine
    /// addresses a tool's own interrupt (its id is the calling agent's run path).
    pub fn interrupt(
        &self,
        info: serde_json::Value,
        state: Option<serde_json::Value>,
    ) -> InterruptInfo {
        let mut interrupt = InterruptInfo::new(info);
        interrupt.state = state;
        interrupt.id = self.run_path.to_string();
        interrupt.address = vec![InterruptFrame {
            agent: Arc::from(self.agent.as_str()),
            run_path: self.run_path.clone(),
            state: None,
            tool: Some(ToolFrame {
                name: self.call.name.clone(),
                call_id: self.call.id.clone(),
            }),
        }];
        interrupt
    }
}

/// A tool call resumed after its own interrupt: what it asked and the answer it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResume {
    /// The interrupt the call raised.
    pub interrupt: InterruptInfo,
    /// The answer (the resume data addressed to the interrupt).
    pub answer: serde_json::Value,
}

/// What a tool activity gives back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ToolOutcome {
    /// The text the model gets (a tool's error in its `error: …` form included).
    Done(String),
    /// The tool stopped for a human's answer (an approval): its interrupt's info and state.
    Interrupted {
        /// What the tool wants the human to know.
        info: serde_json::Value,
        /// State the tool gets back on resume.
        state: Option<serde_json::Value>,
    },
}

/// An effect the engine asks of the workflow.
#[derive(Debug, Clone)]
pub enum Effect {
    /// Call a model: a model activity.
    Model(ModelCall),
    /// Call a tool: a tool activity.
    Tool(ToolCallInput),
    /// Wait on the workflow's clock: a timer.
    Sleep(Duration),
    /// Wait for a human's answer to `interrupt`: an update the workflow accepts.
    Answer(InterruptInfo),
}

/// The workflow's answer to an [`Effect`].
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The model's reply, or why the call failed for good (its retries spent).
    Model(Result<Message, String>),
    /// The model call was not made: it would have crossed a budget per thread or per tenant,
    /// or its model has no price under a money budget (the model activity's reservation was
    /// refused; see [`crate::spending`]).
    Budget(agentweave_core::budget::BudgetError),
    /// The tool's outcome, or why the call failed for good.
    Tool(Result<ToolOutcome, String>),
    /// The wait is over.
    Slept,
    /// The human's answer.
    Answered(serde_json::Value),
}

/// The meeting point of the engine (which asks) and the workflow (which answers); see the
/// [module docs](self).
#[derive(Debug)]
pub struct Effects {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    next: u64,
    asked: VecDeque<(u64, Effect)>,
    answered: HashMap<u64, Outcome>,
    waiting: HashMap<u64, Waker>,
    now: SystemTime,
    seed: u64,
    ids: u64,
}

impl Effects {
    /// A meeting point whose clock stands at `now` and whose ids are drawn from `seed` (the
    /// workflow's deterministic randomness).
    pub fn new(now: SystemTime, seed: u64) -> Arc<Self> {
        Arc::new(Effects {
            state: Mutex::new(State {
                next: 0,
                asked: VecDeque::new(),
                answered: HashMap::new(),
                waiting: HashMap::new(),
                now,
                seed,
                ids: 0,
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Asks `effect`; the future ends with the workflow's answer.
    pub fn ask(self: &Arc<Self>, effect: Effect) -> Asked {
        let id = {
            let mut state = self.lock();
            let id = state.next;
            state.next += 1;
            state.asked.push_back((id, effect));
            id
        };
        Asked {
            effects: Arc::clone(self),
            id,
        }
    }

    /// The effects asked since the last call, in the order they were asked.
    pub fn take_asked(&self) -> Vec<(u64, Effect)> {
        self.lock().asked.drain(..).collect()
    }

    /// Answers the effect `id`, waking the engine's future waiting on it.
    pub fn answer(&self, id: u64, outcome: Outcome) {
        let waker = {
            let mut state = self.lock();
            state.answered.insert(id, outcome);
            state.waiting.remove(&id)
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Sets the clock (the workflow's time, read at each of its activations).
    pub fn set_now(&self, now: SystemTime) {
        self.lock().now = now;
    }
}

/// The future of an asked effect: ends with the workflow's answer.
#[derive(Debug)]
pub struct Asked {
    effects: Arc<Effects>,
    id: u64,
}

impl Future for Asked {
    type Output = Outcome;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        let mut state = self.effects.lock();
        match state.answered.remove(&self.id) {
            Some(outcome) => Poll::Ready(outcome),
            None => {
                state.waiting.insert(self.id, cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// The engine's [`Host`] inside a workflow (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct TemporalHost(pub Arc<Effects>);

impl Host for TemporalHost {
    fn sleep(&self, wait: Duration) -> BoxFuture<'static, ()> {
        let asked = self.0.ask(Effect::Sleep(wait));
        Box::pin(async move {
            asked.await;
        })
    }

    fn now(&self) -> SystemTime {
        self.0.lock().now
    }

    fn new_id(&self) -> String {
        let mut state = self.0.lock();
        state.ids += 1;
        format!("{:016x}{:016x}", state.seed, state.ids)
    }
}

/// Answers every model call and tool call of a run with an [`Effect`] (an activity), and a
/// tool's own interrupt (an approval) with a wait for the human's answer followed by the call
/// resumed with it. Attached to the run in the workflow as the runner's middleware, so it is
/// the outermost: nothing of the call runs in the workflow.
#[derive(Debug, Clone)]
pub struct EffectsMiddleware {
    effects: Arc<Effects>,
    flow: String,
}

impl EffectsMiddleware {
    /// The middleware of a run of flow `flow`, asking its effects of `effects`.
    pub fn new(effects: Arc<Effects>, flow: impl Into<String>) -> Self {
        EffectsMiddleware {
            effects,
            flow: flow.into(),
        }
    }
}

#[async_trait]
impl Middleware for EffectsMiddleware {
    async fn before_model(
        &self,
        cx: &HookContext,
        request: &mut ChatRequest,
    ) -> Result<Option<Message>, HookError> {
        let call = ModelCall {
            flow: self.flow.clone(),
            agent: cx.agent_name().to_owned(),
            model: cx.model_name().unwrap_or_default().to_owned(),
            messages: request.messages.clone(),
            earlier: Vec::new(),
            tools: Arc::clone(&request.tools),
            params: request.params.clone(),
            run_path: Some(cx.run_context().run_path().clone()),
            live: None,
            held: false,
        };
        match self.effects.ask(Effect::Model(call)).await {
            Outcome::Model(Ok(reply)) => Ok(Some(reply)),
            // The run ends as a run refused in process does (`AgentError::BudgetExceeded`, or
            // `AgentError::Failed` for a model without a price).
            Outcome::Budget(error) => Err(HookError::budget_error(error)),
            Outcome::Model(Err(why)) => Err(HookError::failed(format!(
                "the model call of agent '{}' failed on Temporal after its retries: {why}",
                cx.agent_name()
            ))),
            other => Err(unexpected(&other)),
        }
    }

    async fn before_tool(
        &self,
        cx: &HookContext,
        call: &mut ToolCall,
    ) -> Result<Option<String>, HookError> {
        let run = cx.run_context();
        let mut input = ToolCallInput {
            flow: self.flow.clone(),
            agent: cx.agent_name().to_owned(),
            run_path: run.run_path().clone(),
            scope: run.idempotency_scope().to_owned(),
            call: call.clone(),
            idempotent: cx.tool_idempotent(),
            resume: None,
        };
        loop {
            match self.effects.ask(Effect::Tool(input.clone())).await {
                Outcome::Tool(Ok(ToolOutcome::Done(text))) => return Ok(Some(text)),
                Outcome::Tool(Ok(ToolOutcome::Interrupted { info, state })) => {
                    let interrupt = input.interrupt(info, state);
                    let answer = match self.effects.ask(Effect::Answer(interrupt.clone())).await {
                        Outcome::Answered(answer) => answer,
                        other => return Err(unexpected(&other)),
                    };
                    input.resume = Some(ToolResume { interrupt, answer });
                }
                Outcome::Tool(Err(why)) => {
                    return Ok(Some(format!(
                        "error: tool '{}' failed on Temporal after its retries: {why}",
                        call.name
                    )))
                }
                other => return Err(unexpected(&other)),
            }
        }
    }
}

fn unexpected(outcome: &Outcome) -> HookError {
    HookError::failed(format!(
        "the workflow answered an effect with the wrong kind of outcome ({outcome:?}); this is \
         a bug of agentweave-temporal"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    #[test]
    fn an_asked_effect_waits_for_its_answer() {
        let effects = Effects::new(SystemTime::UNIX_EPOCH, 7);
        let mut asked = effects.ask(Effect::Sleep(Duration::from_secs(3)));
        assert!((&mut asked).now_or_never().is_none());
        let taken = effects.take_asked();
        assert_eq!(taken.len(), 1);
        assert!(matches!(taken[0].1, Effect::Sleep(d) if d == Duration::from_secs(3)));
        assert!(effects.take_asked().is_empty(), "taken once");
        effects.answer(taken[0].0, Outcome::Slept);
        assert!(matches!(asked.now_or_never(), Some(Outcome::Slept)));
    }

    #[test]
    fn the_host_reads_the_workflow_clock_and_counts_ids_from_its_seed() {
        let effects = Effects::new(SystemTime::UNIX_EPOCH, 0xabc);
        let host = TemporalHost(Arc::clone(&effects));
        assert_eq!(host.new_id(), "0000000000000abc0000000000000001");
        assert_eq!(host.new_id(), "0000000000000abc0000000000000002");
        let later = SystemTime::UNIX_EPOCH + Duration::from_secs(60);
        effects.set_now(later);
        assert_eq!(host.now(), later);
    }

    #[test]
    fn a_tool_interrupt_is_addressed_as_the_engine_addresses_it() {
        let input = ToolCallInput {
            flow: "desk".into(),
            agent: "billing".into(),
            run_path: RunPath::root("desk").child("billing"),
            scope: "s1".into(),
            call: ToolCall {
                index: None,
                id: "call_1".into(),
                name: "pay".into(),
                arguments: "{}".into(),
            },
            idempotent: false,
            resume: None,
        };
        assert_eq!(input.idempotency_key(), "s1:desk/billing:call_1");
        let interrupt = input.interrupt(serde_json::json!({"q": 1}), None);
        assert_eq!(interrupt.id, "desk/billing");
        assert_eq!(interrupt.address_string(), "agent:billing;tool:pay:call_1");
    }
}
