//! The model and tool activities: each finds the calling agent in the worker's flows and calls
//! its real model or tool (see [`crate::flows`]).

use std::sync::Arc;

use agentweave_core::Message;
use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use temporalio_sdk::ApplicationFailure;

use agentweave_core::budget::BudgetError;

use super::held;
use crate::effects::{ModelCall, ToolCallInput, ToolOutcome};
use crate::flows::{
    call_model, call_tool, load_part, store_part, stream_model, Flows, LookupError,
};
use crate::live::{LivePost, LiveSink};
use crate::parts::{LoadPart, StorePart};
use crate::policy::ModelFailure;
use crate::spending::{self, Charge};
use agentweave_core::RunPath;

/// The activities of a worker, over its flows.
#[derive(Debug, Clone)]
pub struct AgentflowActivities {
    flows: Flows,
    /// The client that posts streamed pieces to a turn's sink (see [`crate::live`]).
    http: reqwest::Client,
}

impl AgentflowActivities {
    /// The activities of `flows`.
    pub fn new(flows: Flows) -> Self {
        let http = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(5))
            .build()
            .unwrap_or_default();
        AgentflowActivities { flows, http }
    }
}

fn lookup_failure(e: LookupError) -> ActivityError {
    ApplicationFailure::builder(e)
        .type_name("AgentflowLookup".to_owned())
        .non_retryable(true)
        .build()
        .into()
}

/// A reservation refused ([`crate::spending`]): a budget refusal ends the turn, not retried
/// (the workflow reads it back as `AgentError::BudgetExceeded`); a model without a price under
/// a money budget is not retried either (read back as the `AgentError::Failed` of the same
/// check in process); a spending store out of reach is retried.
fn budget_failure(e: BudgetError) -> ActivityError {
    match spending::failure_of(&e) {
        Some((type_name, text)) => ApplicationFailure::builder(Text(text))
            .type_name(type_name.to_owned())
            .non_retryable(true)
            .build()
            .into(),
        None => ApplicationFailure::builder(Text(e.to_string()))
            .type_name("AgentflowBudget".to_owned())
            .non_retryable(false)
            .build()
            .into(),
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Text(String);

/// A local model call whose workflow no longer holds its input in this worker (see
/// [`held`]): retried; the workflow, replayed, schedules the call again where it runs.
fn not_held(activity: &str) -> ActivityError {
    ApplicationFailure::builder(Text(format!(
        "local model call '{activity}': its workflow no longer holds the call in this worker \
         (it was evicted from the worker's cache or moved to another worker, which schedules \
         the call again)"
    )))
    .type_name("AgentflowHeld".to_owned())
    .build()
    .into()
}

/// A turn's sink as one model call posts to it: each piece in order, then the end; after a
/// post that fails (the server went away) nothing more is posted (see [`crate::live`]).
struct Sink<'a> {
    http: &'a reqwest::Client,
    sink: &'a LiveSink,
    agent: &'a str,
    run_path: RunPath,
    pieces: std::sync::atomic::AtomicU64,
    broken: std::sync::atomic::AtomicBool,
}

impl<'a> Sink<'a> {
    fn new(http: &'a reqwest::Client, sink: &'a LiveSink, call: &'a ModelCall) -> Self {
        Sink {
            http,
            sink,
            agent: &call.agent,
            run_path: call.run_path.clone().unwrap_or_default(),
            pieces: Default::default(),
            broken: Default::default(),
        }
    }

    async fn post(&self, seq: u64, chunk: Option<Message>, error: Option<String>) {
        use std::sync::atomic::Ordering;
        if self.broken.load(Ordering::Relaxed) {
            return;
        }
        self.pieces.store(seq + 1, Ordering::Relaxed);
        let post = LivePost {
            turn: self.sink.turn,
            effect: self.sink.effect,
            seq,
            at: self.sink.at,
            agent: self.agent.to_owned(),
            run_path: self.run_path.clone(),
            chunk,
            error,
        };
        let sent = self.http.post(&self.sink.url).json(&post).send().await;
        if !matches!(&sent, Ok(r) if r.status().is_success()) {
            self.broken.store(true, Ordering::Relaxed);
        }
    }

    async fn end(&self, error: Option<String>) {
        let seq = self.pieces.load(std::sync::atomic::Ordering::Relaxed);
        self.post(seq, None, error).await;
    }
}

#[activities]
impl AgentflowActivities {
    /// A model call: the calling agent's model answers the request. A failure that another
    /// attempt may fix (429, 5xx, a lost connection) is retried with backoff; another is not.
    #[activity(name = crate::policy::MODEL_ACTIVITY)]
    pub async fn model(
        self: Arc<Self>,
        ctx: ActivityContext,
        call: ModelCall,
    ) -> Result<Message, ActivityError> {
        // With spending budgets (`Flows::spending`), the call is reserved first, under a key
        // every attempt of this activity shares (see `crate::spending`).
        let info = ctx.info();
        let run = info.workflow_run_id.as_deref().unwrap_or_default();
        let Some(call) = held::resolve(run, &info.activity_id, call) else {
            return Err(not_held(&info.activity_id));
        };
        let thread = info.workflow_id.clone().unwrap_or_default();
        let at = info
            .scheduled_time
            .unwrap_or_else(std::time::SystemTime::now);
        let charge = Charge::new(
            &thread,
            info.workflow_run_id.as_deref().unwrap_or_default(),
            &info.activity_id,
            at.duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
        );
        let reserved = spending::reserve(&self.flows, &call, &thread, &charge)
            .await
            .map_err(budget_failure)?;
        let reply = self.answer(&call).await;
        spending::settle(reserved, &reply).await;
        match reply.map_err(lookup_failure)? {
            Ok(reply) => Ok(reply),
            Err(e) => {
                let failure = ModelFailure::of(&e);
                Err(ApplicationFailure::builder(Text(failure.message))
                    .type_name("ModelError".to_owned())
                    .non_retryable(!failure.retryable)
                    .build()
                    .into())
            }
        }
    }

    /// A part of a long conversation written to the workers' blob store (a local activity:
    /// see [`crate::parts`]); gives its key.
    #[activity(name = crate::policy::STORE_ACTIVITY)]
    pub async fn store_part(
        self: Arc<Self>,
        _ctx: ActivityContext,
        part: StorePart,
    ) -> Result<String, ActivityError> {
        store_part(&self.flows, &part).await.map_err(lookup_failure)
    }

    /// A stored part read back, as its JSON (a thread's earlier turns, carried by
    /// continue-as-new: a local activity; see [`crate::parts`]).
    #[activity(name = crate::policy::LOAD_ACTIVITY)]
    pub async fn load_part(
        self: Arc<Self>,
        _ctx: ActivityContext,
        part: LoadPart,
    ) -> Result<String, ActivityError> {
        load_part(&self.flows, &part).await.map_err(lookup_failure)
    }

    /// A tool call: the calling agent's tool runs, under the call's idempotency key.
    #[activity(name = crate::policy::TOOL_ACTIVITY)]
    pub async fn tool(
        self: Arc<Self>,
        _ctx: ActivityContext,
        call: ToolCallInput,
    ) -> Result<ToolOutcome, ActivityError> {
        call_tool(&self.flows, &call).await.map_err(lookup_failure)
    }
}

impl AgentflowActivities {
    /// The model's answer to `call`: streamed to the turn's sink when it has one.
    async fn answer(
        &self,
        call: &ModelCall,
    ) -> Result<Result<Message, agentweave_core::model::ModelError>, LookupError> {
        match &call.live {
            Some(sink) => {
                let sink = Sink::new(&self.http, sink, call);
                let reply = stream_model(&self.flows, call, |seq, chunk| {
                    sink.post(seq, Some(chunk), None)
                })
                .await?;
                sink.end(reply.as_ref().err().map(|e| e.to_string())).await;
                Ok(reply)
            }
            None => call_model(&self.flows, call).await,
        }
    }
}
