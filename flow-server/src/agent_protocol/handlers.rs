//! The Agent Protocol endpoints (see the module guide).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use agentweave_a2a::wire::{rfc3339, rfc3339_now};
use agentweave_runtime::store::RecordEnd;
use agentweave_runtime::{
    CancelError, CancelMode, DoubleText, RunHandle, RunInfo, RunItem, RunStatus,
};
use axum::extract::Query;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::convert::{interrupts, values};
use super::modes::{ModeStream, Modes};
use crate::auth::Tenant;
use crate::error::ApiError;
use crate::extract::{ApiPath, JsonBody};
use crate::principal::{Principal, Scope};
use crate::runs::{parse_strategy, run_of, start, CancelOnDrop};
use crate::sse::{frame, SseBody};
use crate::state::{AppState, ServedFlow};
use crate::thread::ThreadKey;

/// The protocol's threads' own facts (their flow once known, the metadata given at creation,
/// when they were created), kept in the server's journal store beside the threads, never in
/// this process's memory: one small journal per thread (`ap-thread.TENANT.THREAD`), its last
/// step the current facts, removed with the thread. Beside them, in memory, the
/// `multitask_strategy` of this process's most recent runs (what `GET .../runs/{run}`
/// reports; a run this process did not start reports `reject`, the default).
#[derive(Default)]
pub(crate) struct Threads {
    strategies: std::sync::Mutex<std::collections::VecDeque<(String, &'static str)>>,
    /// The runs a rollback deleted (unknown at once, not waited for as a dead turn's).
    deleted: std::sync::Mutex<std::collections::VecDeque<String>>,
}

/// How many runs' strategies a process remembers (the runner's own run retention is the
/// bound that matters: a run it forgot is not served from memory anyway).
const STRATEGIES_KEPT: usize = 4096;

impl Threads {
    fn set_strategy(&self, run_id: &str, strategy: &'static str) {
        let mut kept = self.strategies.lock().expect("strategies lock");
        if kept.len() >= STRATEGIES_KEPT {
            kept.pop_front();
        }
        kept.push_back((run_id.to_owned(), strategy));
    }

    fn set_deleted(&self, run_id: &str) {
        let mut deleted = self.deleted.lock().expect("deleted runs lock");
        if deleted.len() >= STRATEGIES_KEPT {
            deleted.pop_front();
        }
        deleted.push_back(run_id.to_owned());
    }

    fn is_deleted(&self, run_id: &str) -> bool {
        let deleted = self.deleted.lock().expect("deleted runs lock");
        deleted.iter().any(|id| id == run_id)
    }

    fn strategy(&self, run_id: &str) -> &'static str {
        let kept = self.strategies.lock().expect("strategies lock");
        kept.iter()
            .rev()
            .find(|(id, _)| id == run_id)
            .map_or("reject", |(_, s)| s)
    }
}

/// The largest `metadata` a thread keeps (its JSON): 16 KiB.
pub(crate) const MAX_METADATA_BYTES: usize = 16 * 1024;

/// The step kind of a thread's facts.
const META_KIND: &str = "ap_thread";

#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct ThreadMeta {
    pub(super) flow: Option<String>,
    pub(super) metadata: Value,
    pub(super) created_at: String,
}

impl Threads {
    fn key(tenant: &Tenant, thread: &str) -> String {
        format!("ap-thread.{}.{thread}", tenant.0)
    }

    pub(super) async fn get(
        &self,
        state: &AppState,
        tenant: &Tenant,
        thread: &str,
    ) -> Result<Option<ThreadMeta>, ApiError> {
        let key = Self::key(tenant, thread);
        let journal = state.journal();
        let len = journal.journal_len(&key).await.map_err(meta_error)?;
        if len == 0 {
            return Ok(None);
        }
        let steps = journal
            .read_steps(&key, len - 1)
            .await
            .map_err(meta_error)?;
        Ok(steps
            .last()
            .filter(|s| s.kind == META_KIND)
            .and_then(|s| serde_json::from_slice(&s.bytes).ok()))
    }

    pub(super) async fn put(
        &self,
        state: &AppState,
        tenant: &Tenant,
        thread: &str,
        meta: &ThreadMeta,
    ) -> Result<(), ApiError> {
        let key = Self::key(tenant, thread);
        let journal = state.journal();
        let bytes = serde_json::to_vec(meta).map_err(|_| ApiError::Internal)?;
        // Two writers at once: the later one appends after the earlier (the last step wins).
        for _ in 0..3 {
            let len = journal.journal_len(&key).await.map_err(meta_error)?;
            let step = agentweave_runtime::store::StoredStep {
                seq: len,
                at_ms: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64),
                kind: META_KIND.to_owned(),
                bytes: bytes.clone(),
            };
            match journal.append_steps(&key, len, vec![step]).await {
                Ok(_) => return Ok(()),
                Err(agentweave_runtime::store::JournalError::Conflict { .. }) => continue,
                Err(e) => return Err(meta_error(e)),
            }
        }
        Err(ApiError::Busy(format!(
            "thread '{thread}' is being changed by another request; send again"
        )))
    }

    async fn remove(
        &self,
        state: &AppState,
        tenant: &Tenant,
        thread: &str,
    ) -> Result<(), ApiError> {
        state
            .journal()
            .delete_journal(&Self::key(tenant, thread))
            .await
            .map_err(meta_error)?;
        Ok(())
    }
}

fn meta_error(e: agentweave_runtime::store::JournalError) -> ApiError {
    tracing::error!(error = %e, "the journal store failed on an Agent Protocol thread");
    ApiError::StoreUnavailable
}

/// Who calls a protocol route: the server, the request's id, the authenticated principal, its
/// tenant and this process's protocol threads. Every endpoint takes one (the extractors it
/// gathers are written once here).
pub(crate) struct Caller {
    pub(super) state: AppState,
    request_id: Arc<str>,
    pub(super) principal: Principal,
    pub(super) tenant: Tenant,
    pub(super) threads: Arc<Threads>,
    /// The request's `Idempotency-Key`, if it sent one.
    idempotency_key: Option<String>,
}

impl axum::extract::FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Self, ApiError> {
        let crate::access::RequestId(request_id) =
            crate::access::RequestId::from_request_parts(parts, state)
                .await
                .unwrap_or_else(|never| match never {});
        let principal = Principal::from_request_parts(parts, state).await?;
        let missing = || {
            tracing::error!(
                "an Agent Protocol route is mounted outside the tenant and threads layers"
            );
            ApiError::Unauthorized
        };
        let tenant = parts
            .extensions
            .get::<Tenant>()
            .cloned()
            .ok_or_else(missing)?;
        let threads = parts
            .extensions
            .get::<Arc<Threads>>()
            .cloned()
            .ok_or_else(missing)?;
        let idempotency_key = crate::idempotency::header_key(&parts.headers)?;
        Ok(Caller {
            state: state.clone(),
            request_id,
            principal,
            tenant,
            threads,
            idempotency_key,
        })
    }
}

/// The body of `POST /v1/threads` (other fields are accepted and ignored).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct CreateThread {
    #[serde(default)]
    thread_id: Option<String>,
    #[serde(default)]
    metadata: Option<Value>,
    #[serde(default)]
    if_exists: Option<String>,
}

impl Caller {
    /// The flow of a thread: known from a run, or found in the store; `None` for a thread no
    /// run has touched.
    pub(super) async fn flow_of(&self, thread: &str) -> Result<Option<ServedFlow>, ApiError> {
        let known = self.threads.get(&self.state, &self.tenant, thread).await?;
        if let Some(flow) = known.and_then(|m| m.flow) {
            return Ok(Some(self.state.flow(&flow)?.clone()));
        }
        for flow in self.state.flows() {
            let key = ThreadKey::new(flow.name(), &self.tenant.0, thread)?;
            if self.state.threads().head(&key.store_id()).await?.is_some() {
                return Ok(Some(flow.clone()));
            }
        }
        Ok(None)
    }

    /// A thread this caller may address: its metadata and its flow (`None` before its first
    /// run); unknown threads are an error.
    pub(super) async fn known(
        &self,
        thread: &str,
    ) -> Result<(ThreadMeta, Option<ServedFlow>), ApiError> {
        valid(thread)?;
        let flow = self.flow_of(thread).await?;
        let meta = match (
            self.threads.get(&self.state, &self.tenant, thread).await?,
            &flow,
        ) {
            (Some(meta), _) => meta,
            (None, Some(flow)) => ThreadMeta {
                flow: Some(flow.name().to_owned()),
                metadata: json!({}),
                created_at: rfc3339_now(),
            },
            (None, None) => {
                return Err(ApiError::UnknownThread {
                    flow: String::new(),
                    id: thread.to_owned(),
                })
            }
        };
        Ok((meta, flow))
    }

    /// The store key of `thread` of `flow` for this caller's tenant.
    pub(super) fn key(&self, flow: &ServedFlow, thread: &str) -> Result<ThreadKey, ApiError> {
        ThreadKey::new(flow.name(), &self.tenant.0, thread)
    }

    /// The protocol's thread object.
    pub(super) async fn thread_json(
        &self,
        thread: &str,
        meta: &ThreadMeta,
        flow: Option<&ServedFlow>,
    ) -> Result<Value, ApiError> {
        let mut status = "idle";
        let mut vals = json!({});
        let mut waiting = Vec::new();
        if let Some(flow) = flow {
            let key = self.key(flow, thread)?;
            let head = self.state.threads().head(&key.store_id()).await?;
            let messages = flow.runner().thread(&key.store_id()).messages().await?;
            vals = values(thread, &messages);
            with_thread_values(&mut vals, head.as_ref());
            waiting = interrupts(head.as_ref());
            let busy = flow
                .runner()
                .thread(&key.store_id())
                .runs()
                .iter()
                .any(|r| !r.status.is_final());
            status = if busy {
                "busy"
            } else if matches!(
                head.as_ref().map(|h| &h.last.end),
                Some(RecordEnd::Interrupted { .. })
            ) {
                "interrupted"
            } else {
                "idle"
            };
        }
        let mut by_id = serde_json::Map::new();
        if !waiting.is_empty() {
            by_id.insert("current".into(), Value::Array(waiting));
        }
        Ok(json!({
            "thread_id": thread,
            "created_at": meta.created_at,
            "updated_at": rfc3339_now(),
            "metadata": meta.metadata,
            "status": status,
            "values": vals,
            "interrupts": by_id,
        }))
    }

    /// The thread's state (values, next, tasks, checkpoint).
    async fn current_state(
        &self,
        thread: &str,
        flow: Option<&ServedFlow>,
    ) -> Result<Value, ApiError> {
        let Some(flow) = flow else {
            return Ok(super::convert::state(thread, &[], None));
        };
        let key = self.key(flow, thread)?;
        let head = self.state.threads().head(&key.store_id()).await?;
        let messages = flow.runner().thread(&key.store_id()).messages().await?;
        let mut state = super::convert::state(thread, &messages, head.as_ref());
        with_thread_values(&mut state["values"], head.as_ref());
        Ok(state)
    }

    /// The thread's values as a run's end reports them: with `__interrupt__` when it waits.
    async fn end_values(&self, thread: &str, flow: &ServedFlow) -> Result<Value, ApiError> {
        let s = self.current_state(thread, Some(flow)).await?;
        Ok(with_interrupts(&s))
    }

    /// How run `run_id` of `thread` of `flow` ended, from the thread's records: a run of an
    /// earlier process (or of another one on the store). `None` if no record has it.
    async fn recorded_info(
        &self,
        flow: &ServedFlow,
        thread: &str,
        run_id: &str,
    ) -> Result<Option<RunInfo>, ApiError> {
        let key = self.key(flow, thread)?;
        let records = crate::idempotency::recorded(&self.state, &key, run_id).await?;
        let (Some(first), Some(last)) = (records.first(), records.last()) else {
            return Ok(None);
        };
        let Some(outcome) = agentweave_runtime::RunOutcome::of_record(last) else {
            return Ok(None);
        };
        Ok(Some(RunInfo {
            run_id: run_id.to_owned(),
            thread_id: key.store_id(),
            status: outcome.status(),
            created_at_ms: first.at_ms,
            ended_at_ms: Some(last.at_ms),
            outcome: Some(outcome),
        }))
    }

    /// The recorded run `run_id` of `thread`, once recorded: a run whose process died is
    /// waited for while the server's recovery finishes it (up to the turn time limit).
    async fn recorded_run(
        &self,
        thread: &str,
        run_id: &str,
    ) -> Result<(RunInfo, ServedFlow), ApiError> {
        let unknown = || ApiError::UnknownRun {
            id: run_id.chars().take(64).collect(),
        };
        if self.threads.is_deleted(run_id) {
            return Err(unknown());
        }
        let (_, flow) = self.known(thread).await?;
        let flow = flow.ok_or_else(unknown)?;
        let key = self.key(&flow, thread)?;
        let deadline = tokio::time::Instant::now() + self.state.limits().max_turn_duration;
        loop {
            if let Some(info) = self.recorded_info(&flow, thread, run_id).await? {
                return Ok((info, flow));
            }
            if !crate::idempotency::dead_turn_pending(&self.state, &key).await
                || tokio::time::Instant::now() >= deadline
            {
                return Err(unknown());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Starts a run of `thread` from a protocol request; gives the run and its flow (or, for a
    /// request sent again with its `Idempotency-Key`, the recorded run the key started).
    async fn start_run(
        &self,
        thread: &str,
        request: &RunCreate,
    ) -> Result<(Started, ServedFlow), ApiError> {
        valid(thread)?;
        let strategy = parse_strategy(request.multitask_strategy.as_deref())?;
        // Checked before anything runs: a webhook is called or refused, never dropped.
        let webhook = match &request.webhook {
            None => None,
            Some(url) => {
                let url = crate::webhooks::check_url(self.state.outbound(), url)?;
                let secret = self.state.webhook_secret().ok_or_else(|| {
                    ApiError::BadRequest(
                        "this server sends no webhooks: it has no webhook secret \
                         (ServerBuilder::webhook_secret); leave `webhook` out, or poll the run"
                            .into(),
                    )
                })?;
                Some((url, secret.to_vec()))
            }
        };
        let known_flow = self.flow_of(thread).await?;
        let flow =
            match (&request.assistant_id, known_flow) {
                (Some(a), Some(f)) if a != f.name() => {
                    return Err(ApiError::BadRequest(format!(
                        "thread '{thread}' belongs to assistant '{}', not '{}'",
                        f.name(),
                        a.chars().take(40).collect::<String>()
                    )))
                }
                (_, Some(f)) => f,
                (Some(a), None) => self.state.flow(a)?.clone(),
                (None, None) => return Err(ApiError::BadRequest(
                    "send `assistant_id`: the name of a served flow (POST /v1/assistants/search)"
                        .into(),
                )),
            };
        let key = ThreadKey::new(flow.name(), &self.tenant.0, thread)?;
        let mut run_id = None;
        if let Some(idem) = &self.idempotency_key {
            let keyed = crate::idempotency::keyed(
                &self.state,
                "Idempotency-Key",
                self.principal.id(),
                &key,
                idem,
                &json!({"route": "agent_protocol_runs", "input": request.input, "command": request.command}),
            )
            .await?;
            if keyed.again {
                if let Some(run) = flow
                    .runner()
                    .run_handle(&keyed.run_id)
                    .filter(|r| r.thread_id() == key.store_id())
                {
                    return Ok((Started::Live(run), flow));
                }
                if let Some(info) = self.recorded_info(&flow, thread, &keyed.run_id).await? {
                    return Ok((Started::Recorded(Box::new(info)), flow));
                }
            }
            run_id = Some(keyed.run_id);
        }
        // The runs a rollback deletes once they end.
        let rolled_back: Vec<RunHandle> = if strategy == DoubleText::Rollback {
            flow.runner()
                .thread(&key.store_id())
                .runs()
                .iter()
                .filter(|r| !r.status.is_final())
                .filter_map(|r| flow.runner().run_handle(&r.run_id))
                .collect()
        } else {
            Vec::new()
        };
        let run = match (&request.input, &request.command) {
            (Some(input), None) if !input.is_null() => {
                let message = message_of(input)?;
                self.give_up_waiting_turn(&flow, &key).await?;
                start(
                    &self.state,
                    &self.request_id,
                    &self.principal,
                    &flow,
                    &key,
                    Some(message),
                    None,
                    strategy,
                    run_id.clone(),
                )
                .await?
            }
            (None, Some(command)) | (Some(Value::Null), Some(command)) => {
                let resume = command.get("resume").ok_or_else(|| {
                    ApiError::BadRequest(
                        "a `command` needs `resume` (the data for the interrupt)".into(),
                    )
                })?;
                // Scope before existence: a caller who may answer nothing learns nothing of
                // the thread's state (whether it waits, for what).
                flow.approvals().require_some_answer(&self.principal)?;
                let head = self.state.threads().head(&key.store_id()).await?;
                let ids: Vec<String> = match head.as_ref().map(|h| &h.last.end) {
                    Some(RecordEnd::Interrupted { interrupts, .. }) => {
                        interrupts.iter().map(|i| i.id.clone()).collect()
                    }
                    _ => {
                        return Err(ApiError::Conflict(
                            "this thread waits for no interrupt; send `input` instead".into(),
                        ))
                    }
                };
                let targets: HashMap<String, Value> = match resume.as_object() {
                    Some(map) if !map.is_empty() && map.keys().all(|k| ids.contains(k)) => {
                        map.clone().into_iter().collect()
                    }
                    _ => ids.into_iter().map(|id| (id, resume.clone())).collect(),
                };
                start(
                    &self.state,
                    &self.request_id,
                    &self.principal,
                    &flow,
                    &key,
                    None,
                    Some(targets),
                    strategy,
                    run_id.clone(),
                )
                .await?
            }
            _ => {
                return Err(ApiError::BadRequest(
                    "send `input` (a new message) or `command` with `resume`, not both".into(),
                ))
            }
        };
        let meta = self
            .threads
            .get(&self.state, &self.tenant, thread)
            .await?
            .unwrap_or(ThreadMeta {
                flow: None,
                metadata: json!({}),
                created_at: rfc3339_now(),
            });
        self.threads.set_strategy(run.id(), strategy_name(strategy));
        // Rolled back (cancelled at once, nothing recorded) and deleted, as LangGraph does,
        // before the new run is answered: the old one is then unknown to every route.
        for earlier in rolled_back {
            self.threads.set_deleted(earlier.id());
            let runner = flow.runner().clone();
            let forget = async move {
                earlier.wait().await;
                runner.forget_run(earlier.id());
            };
            // An immediate cancel ends it at its next await; a run that never yields is left
            // to the runner's retention after the turn time limit.
            let _ = tokio::time::timeout(self.state.limits().max_turn_duration, forget).await;
        }
        if let Some((url, secret)) = webhook {
            let (thread_id, assistant) = (thread.to_owned(), flow.name().to_owned());
            let strategy = strategy_name(strategy);
            crate::webhooks::after(
                self.state.outbound().clone(),
                key.tenant.clone(),
                run.clone(),
                url,
                secret,
                move |run| {
                    let mut body = run_json(&thread_id, &assistant, &run.info(), strategy);
                    if let Some(outcome) = run.outcome() {
                        body["outcome"] =
                            crate::runs::outcome_json(run.id(), &outcome, run.failure().as_ref());
                    }
                    body
                },
            );
        }
        if meta.flow.as_deref() != Some(flow.name()) {
            self.threads
                .put(
                    &self.state,
                    &self.tenant,
                    thread,
                    &ThreadMeta {
                        flow: Some(flow.name().to_owned()),
                        ..meta
                    },
                )
                .await?;
        }
        Ok((Started::Live(run), flow))
    }

    /// LangGraph's rule for new input on a thread waiting at an interrupt: a new run starts
    /// (the interrupt is dropped, as if the answer never came). The turn the thread waits on
    /// is given up first ([`ThreadHandle::withdraw`](agentweave_runtime::ThreadHandle::withdraw)),
    /// which refuses what it waits on: the caller needs what answering it needs (the flow's
    /// approvals). Nothing happens while a run of the thread is going (its strategy decides).
    async fn give_up_waiting_turn(
        &self,
        flow: &ServedFlow,
        key: &ThreadKey,
    ) -> Result<(), ApiError> {
        let store_id = key.store_id();
        let handle = flow.runner().thread(&store_id);
        if handle.runs().iter().any(|r| !r.status.is_final()) {
            return Ok(());
        }
        let head = self.state.threads().head(&store_id).await?;
        let (turn, pending) = match head.map(|h| (h.last.turn, h.last.end)) {
            Some((turn, RecordEnd::Interrupted { interrupts, .. })) => (turn, interrupts),
            _ => return Ok(()),
        };
        let refusals: HashMap<String, Value> = pending
            .iter()
            .map(|i| (i.id.clone(), Value::Null))
            .collect();
        crate::routes::authorize_answers(
            &self.state,
            flow,
            key,
            &self.principal,
            turn,
            &pending,
            &refusals,
        )
        .await?;
        match handle.withdraw(Some(self.principal.id())).await {
            // Answered or given up meanwhile: the new input starts a turn all the same.
            Ok(_) | Err(agentweave_runtime::ThreadError::NotInterrupted { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// A run of `thread`, and its flow.
    async fn the_run(&self, thread: &str, run: &str) -> Result<(RunHandle, ServedFlow), ApiError> {
        let (_, flow) = self.known(thread).await?;
        let flow = flow.ok_or_else(|| ApiError::UnknownRun {
            id: run.chars().take(64).collect(),
        })?;
        let key = self.key(&flow, thread)?;
        Ok((run_of(&flow, &key, run)?, flow))
    }

    /// What a run that ended leaves: the thread's values, or the public face of its error.
    async fn final_values(
        &self,
        thread: &str,
        flow: &ServedFlow,
        run: &RunHandle,
    ) -> Result<Value, ApiError> {
        let outcome = run.wait().await;
        if let agentweave_runtime::RunOutcome::Error { message } = &outcome {
            // The public face only; the error's text is logged under the correlation id.
            let failure = run.failure();
            let e = crate::outward::PublicError::of_run_failure(
                failure.as_ref(),
                message,
                (run.id(), 0),
            );
            return Ok(json!({ "__error__": {
                "error": e.code.as_str(),
                "message": e.message,
                "correlation_id": e.correlation_id,
            } }));
        }
        self.end_values(thread, flow).await
    }
}

/// The thread's values (set by its agents, or by `update_state`) beside its `messages`.
fn with_thread_values(values: &mut Value, head: Option<&agentweave_runtime::store::ThreadHead>) {
    if let Some(set) = head.and_then(|h| h.last.values.as_ref()) {
        for (k, v) in set {
            if k != "messages" {
                values[k] = v.clone();
            }
        }
    }
}

/// A state's values with `__interrupt__` when it waits.
fn with_interrupts(state: &Value) -> Value {
    let mut vals = state["values"].clone();
    if let Some(i) = state["interrupts"].as_array().filter(|i| !i.is_empty()) {
        vals["__interrupt__"] = Value::Array(i.clone());
    }
    vals
}

fn valid(thread: &str) -> Result<(), ApiError> {
    if crate::thread::valid_thread_id(thread) {
        Ok(())
    } else {
        Err(ApiError::BadRequest(
            "a thread id is 1 to 40 characters of A-Z, a-z, 0-9, '_' or '-'".into(),
        ))
    }
}

/// `POST /v1/threads`: creates a thread (a UUID unless `thread_id` is given).
pub(crate) async fn create_thread(
    caller: Caller,
    JsonBody(request): JsonBody<CreateThread>,
) -> Result<Json<Value>, ApiError> {
    caller.principal.require(Scope::Chat)?;
    let thread = request
        .thread_id
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    valid(&thread)?;
    if let Some(metadata) = &request.metadata {
        let size = metadata.to_string().len();
        if size > MAX_METADATA_BYTES {
            return Err(ApiError::BadRequest(format!(
                "the thread's metadata has {size} bytes of JSON; a thread keeps at most \
                 {MAX_METADATA_BYTES}"
            )));
        }
    }
    let existing = caller
        .threads
        .get(&caller.state, &caller.tenant, &thread)
        .await?;
    let flow = caller.flow_of(&thread).await?;
    if (existing.is_some() || flow.is_some()) && request.if_exists.as_deref() != Some("do_nothing")
    {
        return Err(ApiError::Conflict(format!(
            "thread '{thread}' exists; send if_exists=do_nothing to get it"
        )));
    }
    let meta = match existing {
        Some(meta) => meta,
        None => {
            let meta = ThreadMeta {
                flow: flow.as_ref().map(|f| f.name().to_owned()),
                metadata: request.metadata.unwrap_or_else(|| json!({})),
                created_at: rfc3339_now(),
            };
            caller
                .threads
                .put(&caller.state, &caller.tenant, &thread, &meta)
                .await?;
            meta
        }
    };
    Ok(Json(
        caller.thread_json(&thread, &meta, flow.as_ref()).await?,
    ))
}

/// `GET /v1/threads/{thread}`.
pub(crate) async fn get_thread(
    caller: Caller,
    ApiPath(thread): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    caller.principal.require(Scope::Read)?;
    let (meta, flow) = caller.known(&thread).await?;
    Ok(Json(
        caller.thread_json(&thread, &meta, flow.as_ref()).await?,
    ))
}

/// `DELETE /v1/threads/{thread}`.
pub(crate) async fn delete_thread(
    caller: Caller,
    ApiPath(thread): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    caller.principal.require(Scope::Chat)?;
    let (_, flow) = caller.known(&thread).await?;
    if let Some(flow) = flow {
        let key = caller.key(&flow, &thread)?;
        flow.runner().thread(&key.store_id()).delete().await?;
    }
    caller
        .threads
        .remove(&caller.state, &caller.tenant, &thread)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /v1/threads/{thread}/state`.
pub(crate) async fn thread_state(
    caller: Caller,
    ApiPath(thread): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    caller.principal.require(Scope::Read)?;
    let (_, flow) = caller.known(&thread).await?;
    Ok(Json(caller.current_state(&thread, flow.as_ref()).await?))
}

/// The body of a run request (other fields are accepted and ignored).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RunCreate {
    #[serde(default)]
    assistant_id: Option<String>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    command: Option<Value>,
    #[serde(default)]
    stream_mode: Option<Value>,
    /// Name the events of agents below the root `MODE|NAMESPACE` (`subgraphs=True`).
    #[serde(default, alias = "subgraphs")]
    stream_subgraphs: bool,
    #[serde(default)]
    multitask_strategy: Option<String>,
    #[serde(default)]
    on_disconnect: Option<String>,
    /// An http(s) URL told of the run's end (the run as `GET .../runs/{run}` shows it, and its
    /// thread's values), signed as the server's webhooks are (see [`crate::webhooks`]).
    #[serde(default)]
    webhook: Option<String>,
}

/// The user's message in a run's `input`: the last of `input.messages` (text, or text parts).
pub(super) fn message_of(input: &Value) -> Result<String, ApiError> {
    let last = input
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|m| m.last())
        .ok_or_else(|| {
            ApiError::BadRequest(
                "`input` needs `messages`: [{\"role\": \"user\", \"content\": TEXT}]".into(),
            )
        })?;
    let content = last.get("content").unwrap_or(last);
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) => Ok(parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("")),
        _ => Err(ApiError::BadRequest(
            "a message's `content` is text or a list of text parts".into(),
        )),
    }
}

/// A strategy's name, as LangGraph's clients send it.
fn strategy_name(strategy: DoubleText) -> &'static str {
    match strategy {
        DoubleText::Reject => "reject",
        DoubleText::Enqueue => "enqueue",
        DoubleText::Interrupt => "interrupt",
        DoubleText::Rollback => "rollback",
        DoubleText::Steer => "steer",
    }
}

fn run_json(thread: &str, assistant: &str, info: &RunInfo, strategy: &str) -> Value {
    let status = match info.status {
        RunStatus::Pending => "pending",
        RunStatus::Running => "running",
        RunStatus::Success => "success",
        RunStatus::Interrupted | RunStatus::Cancelled => "interrupted",
        RunStatus::Error => "error",
    };
    json!({
        "run_id": info.run_id,
        "thread_id": thread,
        "assistant_id": assistant,
        "created_at": rfc3339(info.created_at_ms),
        "updated_at": rfc3339(info.ended_at_ms.unwrap_or(info.created_at_ms)),
        "status": status,
        "metadata": {},
        "multitask_strategy": strategy,
        "kwargs": {},
    })
}

/// What a run request got: a run, or (sent again with its `Idempotency-Key`) the run the key
/// started, ended and recorded (nothing ran again).
enum Started {
    Live(RunHandle),
    Recorded(Box<RunInfo>),
}

/// `POST /v1/threads/{thread}/runs`: a background run.
pub(crate) async fn create_run(
    caller: Caller,
    ApiPath(thread): ApiPath<String>,
    JsonBody(request): JsonBody<RunCreate>,
) -> Result<Json<Value>, ApiError> {
    let (started, flow) = caller.start_run(&thread, &request).await?;
    let info = match started {
        Started::Live(run) => run.info(),
        Started::Recorded(info) => *info,
    };
    let strategy = caller.threads.strategy(&info.run_id);
    Ok(Json(run_json(&thread, flow.name(), &info, strategy)))
}

/// The SSE body of `run` of `thread` after `after`, in the protocol's events; `end` last.
fn protocol_sse(
    caller: Caller,
    thread: String,
    flow: ServedFlow,
    run: RunHandle,
    after: Option<u64>,
    modes: Modes,
    cancel_on_disconnect: bool,
) -> Result<Response, ApiError> {
    let events = run.attach(after).map_err(|e| match e {
        agentweave_runtime::AttachError::UnknownEvent { .. } => {
            ApiError::UnknownEvent(e.to_string())
        }
        _ => ApiError::EventExpired(e.to_string()),
    })?;
    let limits = caller.state.limits().clone();
    let limit = limits.max_event_bytes;
    let run_id = run.id().to_owned();
    let guard = CancelOnDrop(cancel_on_disconnect.then(|| run.clone()));
    let frames = async_stream::stream! {
        let _guard = guard;
        let mut events = events;
        let mut stream = ModeStream::new(modes, &run_id);
        while let Some(event) = futures::StreamExt::next(&mut events).await {
            let mut parts = stream.frames(&event);
            let ended = matches!(event.item, RunItem::Ended(_));
            if ended && stream.modes().state_at_end() {
                if let Ok(state) = caller.current_state(&thread, Some(&flow)).await {
                    let vals = with_interrupts(&state);
                    parts.extend(stream.end_frames(&state, &vals));
                }
            }
            if ended {
                parts.push(("end".into(), Value::Null));
            }
            let count = parts.len();
            for (k, (name, data)) in parts.into_iter().enumerate() {
                let mut out = Vec::new();
                if k + 1 == count {
                    // The id goes on the group's last frame: a client that reconnects with
                    // it gets nothing of this group again.
                    out.extend(format!("id: {}\n", event.id).into_bytes());
                }
                out.extend(frame(&name, &data, limit));
                yield out;
            }
        }
    };
    let mut response = SseBody::new(
        frames,
        limits.sse_keep_alive,
        limits.max_turn_duration,
        |_| b"event: end\ndata: null\n\n".to_vec(),
    )
    .into_response();
    // Where the run lives (LangGraph's clients read its ids from here): the run's URL.
    if let Ok(v) = HeaderValue::from_str(&format!(
        "/v1/threads/{}/runs/{}",
        run.thread_id().rsplit('.').next().unwrap_or_default(),
        run.id()
    )) {
        response.headers_mut().insert(header::CONTENT_LOCATION, v);
    }
    Ok(response)
}

/// `POST /v1/threads/{thread}/runs/stream`: a run, streamed.
pub(crate) async fn stream_new_run(
    caller: Caller,
    ApiPath(thread): ApiPath<String>,
    JsonBody(request): JsonBody<RunCreate>,
) -> Result<Response, ApiError> {
    let cancel = match request.on_disconnect.as_deref() {
        None | Some("continue") => false,
        Some("cancel") => true,
        Some(other) => {
            return Err(ApiError::BadRequest(format!(
                "on_disconnect '{}' is not known: use continue or cancel",
                other.chars().take(40).collect::<String>()
            )))
        }
    };
    // Checked before the run starts: an unknown mode runs nothing.
    let modes = Modes::of(request.stream_mode.as_ref(), request.stream_subgraphs)?;
    let (run, flow) = match caller.start_run(&thread, &request).await? {
        (Started::Live(run), flow) => (run, flow),
        (Started::Recorded(info), _) => {
            return Err(ApiError::Conflict(format!(
                "the run this Idempotency-Key started ({}) has ended and is recorded: read it with \
                 GET /v1/threads/{thread}/runs/{} or the thread's state; nothing ran again",
                info.run_id, info.run_id
            )))
        }
    };
    protocol_sse(caller, thread, flow, run, None, modes, cancel)
}

/// `POST /v1/threads/{thread}/runs/wait`: a run; answers the thread's values at its end.
pub(crate) async fn wait_new_run(
    caller: Caller,
    ApiPath(thread): ApiPath<String>,
    JsonBody(request): JsonBody<RunCreate>,
) -> Result<Json<Value>, ApiError> {
    match caller.start_run(&thread, &request).await? {
        (Started::Live(run), flow) => Ok(Json(caller.final_values(&thread, &flow, &run).await?)),
        // The run the key started ended: the thread's values, as its wait answered them.
        (Started::Recorded(_), flow) => Ok(Json(caller.end_values(&thread, &flow).await?)),
    }
}

/// `GET /v1/threads/{thread}/runs`: the thread's runs, newest first, a page at a time
/// (`?limit=N&offset=M`, at most [`MAX_PAGE`](crate::paging::MAX_PAGE)).
pub(crate) async fn list_runs(
    caller: Caller,
    ApiPath(thread): ApiPath<String>,
    page: Result<
        axum::extract::Query<crate::paging::PageQuery>,
        axum::extract::rejection::QueryRejection,
    >,
) -> Result<Json<Value>, ApiError> {
    caller.principal.require(Scope::Read)?;
    let page = crate::paging::PageQuery::of(page)?;
    let (_, flow) = caller.known(&thread).await?;
    let Some(flow) = flow else {
        return Ok(Json(json!([])));
    };
    let key = caller.key(&flow, &thread)?;
    let runs: Vec<Value> = flow
        .runner()
        .thread(&key.store_id())
        .runs()
        .iter()
        .rev()
        .map(|r| run_json(&thread, flow.name(), r, caller.threads.strategy(&r.run_id)))
        .collect();
    Ok(Json(Value::Array(
        page.cut(runs, crate::paging::MAX_PAGE).0,
    )))
}

/// `GET /v1/threads/{thread}/runs/{run}`.
pub(crate) async fn get_run(
    caller: Caller,
    ApiPath((thread, run)): ApiPath<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    caller.principal.require(Scope::Read)?;
    match caller.the_run(&thread, &run).await {
        Ok((run, flow)) => {
            let strategy = caller.threads.strategy(run.id());
            Ok(Json(run_json(&thread, flow.name(), &run.info(), strategy)))
        }
        // A run of an earlier process: its record.
        Err(ApiError::UnknownRun { .. }) => {
            let (info, flow) = caller.recorded_run(&thread, &run).await?;
            let strategy = caller.threads.strategy(&info.run_id);
            Ok(Json(run_json(&thread, flow.name(), &info, strategy)))
        }
        Err(e) => Err(e),
    }
}

/// `GET /v1/threads/{thread}/runs/{run}/join`: waits for the run; the thread's values.
pub(crate) async fn join_run(
    caller: Caller,
    ApiPath((thread, run)): ApiPath<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    caller.principal.require(Scope::Read)?;
    match caller.the_run(&thread, &run).await {
        Ok((run, flow)) => Ok(Json(caller.final_values(&thread, &flow, &run).await?)),
        // A run of an earlier process: the thread's values once it is recorded.
        Err(ApiError::UnknownRun { .. }) => {
            let (_, flow) = caller.recorded_run(&thread, &run).await?;
            Ok(Json(caller.end_values(&thread, &flow).await?))
        }
        Err(e) => Err(e),
    }
}

/// The query of `GET .../runs/{run}/stream`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct JoinQuery {
    #[serde(default)]
    stream_mode: Option<String>,
    #[serde(default)]
    stream_subgraphs: Option<bool>,
    #[serde(default)]
    cancel_on_disconnect: Option<bool>,
}

/// `GET /v1/threads/{thread}/runs/{run}/stream`: joins a run's stream (after `Last-Event-ID`).
pub(crate) async fn join_stream(
    caller: Caller,
    ApiPath((thread, run)): ApiPath<(String, String)>,
    Query(query): Query<JoinQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    caller.principal.require(Scope::Read)?;
    let (run, flow) = caller.the_run(&thread, &run).await?;
    let after = match headers.get("last-event-id") {
        None => None,
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| {
                    ApiError::UnknownEvent(
                        "Last-Event-ID is not an event id: send the id of the last event you \
                         received"
                            .into(),
                    )
                })?,
        ),
    };
    let modes = Modes::of(
        query.stream_mode.map(Value::String).as_ref(),
        query.stream_subgraphs.unwrap_or(false),
    )?;
    let cancel = query.cancel_on_disconnect.unwrap_or(false);
    protocol_sse(caller, thread, flow, run, after, modes, cancel)
}

/// The query of `POST .../runs/{run}/cancel`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct CancelQuery {
    #[serde(default)]
    wait: Option<String>,
    /// `interrupt` (default: stop at the next safe point, escalating after 10 s) or `rollback`
    /// (stop immediately, record nothing).
    #[serde(default)]
    action: Option<String>,
    /// An agentflow cancel mode, overriding `action` (`after_tools`, `immediate`...).
    #[serde(default)]
    mode: Option<String>,
}

/// `POST /v1/threads/{thread}/runs/{run}/cancel`.
pub(crate) async fn cancel_run(
    caller: Caller,
    ApiPath((thread, run)): ApiPath<(String, String)>,
    Query(query): Query<CancelQuery>,
) -> Result<Response, ApiError> {
    caller.principal.require(Scope::Chat)?;
    let (run, flow) = caller.the_run(&thread, &run).await?;
    let (mode, timeout) = match (query.mode.as_deref(), query.action.as_deref()) {
        (Some(m), _) => (
            m.parse::<CancelMode>()
                .map_err(|e| ApiError::BadRequest(e.to_string()))?,
            None,
        ),
        (None, None | Some("interrupt")) => (
            (CancelMode::AFTER_MODEL | CancelMode::AFTER_TOOLS).recursive(),
            Some(Duration::from_secs(10)),
        ),
        (None, Some("rollback")) => (CancelMode::IMMEDIATE, None),
        (None, Some(other)) => {
            return Err(ApiError::BadRequest(format!(
                "cancel action '{}' is not known: use interrupt or rollback",
                other.chars().take(40).collect::<String>()
            )))
        }
    };
    run.cancel(mode, timeout).map_err(|e| match e {
        CancelError::Ended { .. } => ApiError::RunEnded(e.to_string()),
        other => ApiError::BadRequest(other.to_string()),
    })?;
    if matches!(query.wait.as_deref(), Some("1" | "true")) {
        run.wait().await;
        let strategy = caller.threads.strategy(run.id());
        return Ok(Json(run_json(&thread, flow.name(), &run.info(), strategy)).into_response());
    }
    Ok(StatusCode::ACCEPTED.into_response())
}
