//! The JSON-RPC endpoint of a flow served as an A2A agent (`POST /a2a/{flow}`), and its card.
//!
//! | method | what it does |
//! | --- | --- |
//! | `SendMessage` | starts a task (a turn of the thread `contextId`), or answers the task that waits for input (resumes it); answers the task once it ends or waits for input (at once with `returnImmediately`) |
//! | `SendStreamingMessage` | the same, streamed: the task, then its status and artifact updates as Server-Sent Events |
//! | `GetTask` | the task as it is |
//! | `CancelTask` | stops a running task (nothing of it is recorded); gives up a task waiting for input (its interrupts dropped, its checkpoint released, the task `canceled`; the context's next message starts a new task) |
//! | `SubscribeToTask` | joins a running task's stream; streams a task waiting for input as it is, then its states once answered; refuses an ended task (`-32004`) |
//! | `CreateTaskPushNotificationConfig`, `GetTaskPushNotificationConfig`, `ListTaskPushNotificationConfigs`, `DeleteTaskPushNotificationConfig` | a task's webhooks (also set by `SendMessage`'s `configuration.taskPushNotificationConfig`): told when the task ends or waits for input, signed like the server's other webhooks; only with a webhook secret |
//! | `ListTasks` | the caller's tasks of the flow (of one context, or of its most recent threads), most recently updated first, by pages (1 to 100, 50 by default); filtered by state and `statusTimestampAfter` (parameters checked by `validate`) |

use crate::principal::{Principal, Scope};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use agentweave_a2a::rpc::{
    method, ErrorObject, Request as RpcRequest, Response as RpcResponse, RpcError,
};
use agentweave_a2a::wire::{
    AgentCard, ListPushConfigsResponse, ListTasksRequest, ListTasksResponse, PushConfigParams,
    Role, SendMessageRequest, SendMessageResponse, StreamResponse, Task, TaskIdParams,
    TaskPushNotificationConfig, TaskState, TaskStatusUpdateEvent,
};
use agentweave_runtime::store::{RecordEnd, ThreadHead};
use agentweave_runtime::Message;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::{broadcast, oneshot};

use super::tasks::{parse_task_id, task_id, RunningTask, Started, Tasks};
use super::{card, map, validate};
use crate::auth::Tenant;
use crate::error::ApiError;
use crate::extract::{read_body, refuse_announced_past, ApiPath};
use crate::sse::SseBody;
use crate::state::AppState;
use crate::thread::ThreadKey;
use agentweave_runtime::TurnRequest;

/// What the A2A routes share: the server's state and this process's tasks.
#[derive(Clone)]
pub(crate) struct A2aState {
    pub(crate) app: AppState,
    pub(crate) tasks: Arc<Tasks>,
}

/// `GET /a2a/{flow}/.well-known/agent-card.json`: the flow's card.
pub(crate) async fn flow_card(
    State(a2a): State<A2aState>,
    ApiPath(flow): ApiPath<String>,
    headers: HeaderMap,
) -> Result<Json<AgentCard>, ApiError> {
    let served = a2a.app.flow(&flow)?;
    let endpoint = format!("{}/a2a/{}", card::base_url(&headers), served.name());
    let mut card = card::card(served, a2a.app.auth(), endpoint);
    card.capabilities.push_notifications = Some(a2a.tasks.push.enabled());
    Ok(Json(card))
}

/// `GET /.well-known/agent-card.json`: the card of the server's only flow (404 naming the
/// per-flow cards when it serves several).
pub(crate) async fn root_card(
    State(a2a): State<A2aState>,
    headers: HeaderMap,
) -> Result<Json<AgentCard>, ApiError> {
    let mut flows = a2a.app.flows();
    match (flows.next(), flows.next()) {
        (Some(only), None) => {
            let endpoint = format!("{}/a2a/{}", card::base_url(&headers), only.name());
            let mut card = card::card(only, a2a.app.auth(), endpoint);
            card.capabilities.push_notifications = Some(a2a.tasks.push.enabled());
            Ok(Json(card))
        }
        _ => Err(ApiError::BadRequest(
            "this server serves several flows: each has its card at \
             /a2a/{flow}/.well-known/agent-card.json (GET /v1/flows lists them)"
                .into(),
        )),
    }
}

/// `POST /a2a/{flow}`: one JSON-RPC call.
pub(crate) async fn endpoint(
    State(a2a): State<A2aState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath(flow): ApiPath<String>,
    request: Request,
) -> Response {
    // Talking to the flow needs `chat`; answering an input-required also needs what the
    // flow's approvals ask (checked where a message answers one).
    if let Err(e) = principal.require(Scope::Chat) {
        return e.into_response();
    }
    let version = request
        .headers()
        .get(agentweave_a2a::VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let limits = a2a.app.limits();
    if let Err(e) = refuse_announced_past(request.headers(), limits.max_body_bytes) {
        return e.into_response();
    }
    let body = read_body(request.into_body(), limits.max_body_bytes);
    let body = match tokio::time::timeout(limits.body_read_timeout, body).await {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => return e.into_response(),
        Err(_) => {
            return ApiError::RequestTimeout {
                limit: limits.body_read_timeout,
            }
            .into_response()
        }
    };
    let call: RpcRequest = match serde_json::from_slice::<Value>(&body) {
        Err(e) => return reply_err(Value::Null, &RpcError::Parse(e.to_string())),
        Ok(v) => {
            let id = v.get("id").cloned().unwrap_or(Value::Null);
            match serde_json::from_value::<RpcRequest>(v) {
                Ok(c) if c.jsonrpc == "2.0" && valid_id(&c.id) => c,
                _ => {
                    let id = if valid_id(&id) { id } else { Value::Null };
                    return reply_err(
                        id,
                        &RpcError::InvalidRequest(
                            "not a JSON-RPC 2.0 request: send one object with \"jsonrpc\": \
                             \"2.0\", \"method\", \"params\" and a string or number \"id\""
                                .into(),
                        ),
                    );
                }
            }
        }
    };
    if let Some(v) = version.as_deref() {
        if v.split('.').next() != Some("1") {
            return reply_err(
                call.id,
                &RpcError::VersionNotSupported(v.chars().take(16).collect()),
            );
        }
    }
    let call_ctx = Call {
        a2a,
        flow,
        tenant: tenant.0,
        principal,
    };
    let id = call.id.clone();
    let result = match call.method.as_str() {
        method::SEND_MESSAGE => {
            match validate::message(&call.params).and_then(|()| params(call.params)) {
                Ok(p) => call_ctx.send(p).await.map(|task| {
                    Json(RpcResponse::ok(
                        id.clone(),
                        SendMessageResponse {
                            task: Some(task),
                            message: None,
                        },
                    ))
                    .into_response()
                }),
                Err(e) => Err(e),
            }
        }
        method::SEND_STREAMING_MESSAGE => {
            match validate::message(&call.params).and_then(|()| params(call.params)) {
                Ok(p) => call_ctx
                    .send_streaming(p)
                    .await
                    .map(|running| call_ctx.stream(id.clone(), running)),
                Err(e) => Err(e),
            }
        }
        method::GET_TASK => match validate::history_length(&call.params)
            .and_then(|()| params::<TaskIdParams>(call.params))
        {
            Ok(p) => call_ctx.get(&p.id).await.map(|t| {
                Json(RpcResponse::ok(id.clone(), trim(t, p.history_length))).into_response()
            }),
            Err(e) => Err(e),
        },
        method::CANCEL_TASK => match params::<TaskIdParams>(call.params) {
            Ok(p) => call_ctx
                .cancel(&p.id)
                .await
                .map(|t| Json(RpcResponse::ok(id.clone(), t)).into_response()),
            Err(e) => Err(e),
        },
        method::SUBSCRIBE_TO_TASK => match params::<TaskIdParams>(call.params) {
            Ok(p) => call_ctx.subscribe(&p.id).await.map(|joined| match joined {
                Joined::Running(running) => call_ctx.stream(id.clone(), running),
                Joined::Waiting { task, start } => {
                    call_ctx.stream_waiting(id.clone(), *task, start)
                }
            }),
            Err(e) => Err(e),
        },
        method::LIST_TASKS => match validate::list_tasks(&call.params)
            .and_then(|after| params::<ListTasksRequest>(call.params).map(|p| (p, after)))
        {
            Ok((p, after)) => call_ctx
                .list(p, after)
                .await
                .map(|page| Json(RpcResponse::ok(id.clone(), page)).into_response()),
            Err(e) => Err(e),
        },
        method::CREATE_PUSH_CONFIG => match params::<TaskPushNotificationConfig>(call.params) {
            Ok(p) => call_ctx
                .set_push(p)
                .await
                .map(|c| Json(RpcResponse::ok(id.clone(), c)).into_response()),
            Err(e) => Err(e),
        },
        method::GET_PUSH_CONFIG => match params::<PushConfigParams>(call.params) {
            Ok(p) => call_ctx
                .get_push(&p)
                .await
                .map(|c| Json(RpcResponse::ok(id.clone(), c)).into_response()),
            Err(e) => Err(e),
        },
        method::LIST_PUSH_CONFIGS => match params::<PushConfigParams>(call.params) {
            Ok(p) => call_ctx.push_key(&p.task_id).await.map(|key| {
                let configs = ListPushConfigsResponse {
                    configs: call_ctx.a2a.tasks.push.list(&key),
                    next_page_token: String::new(),
                };
                Json(RpcResponse::ok(id.clone(), configs)).into_response()
            }),
            Err(e) => Err(e),
        },
        method::DELETE_PUSH_CONFIG => match params::<PushConfigParams>(call.params) {
            Ok(p) => call_ctx
                .delete_push(&p)
                .await
                .map(|()| Json(RpcResponse::ok(id.clone(), serde_json::json!({}))).into_response()),
            Err(e) => Err(e),
        },
        m if m.contains("PushNotification") => {
            Err(RpcError::MethodNotFound(m.chars().take(64).collect()))
        }
        other => Err(RpcError::MethodNotFound(other.chars().take(64).collect())),
    };
    result.unwrap_or_else(|e| reply_err(id, &e))
}

/// Whether a JSON-RPC id is usable: a string, a number or null.
fn valid_id(id: &Value) -> bool {
    matches!(id, Value::String(_) | Value::Number(_) | Value::Null)
}

/// A JSON-RPC error response (HTTP 200, as the binding says).
fn reply_err(id: Value, e: &RpcError) -> Response {
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::OK);
    (status, Json(RpcResponse::err(id, e))).into_response()
}

/// The call's parameters as `T`.
fn params<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    if !params.is_object() {
        return Err(RpcError::InvalidParams(
            "\"params\" must be an object".into(),
        ));
    }
    serde_json::from_value(params)
        .map_err(|e| RpcError::InvalidParams(format!("the parameters do not read: {e}")))
}

/// `task` with only its last `history_length` messages, if asked.
fn trim(mut task: Task, history_length: Option<i64>) -> Task {
    if let Some(n) = history_length {
        let keep = usize::try_from(n.max(0)).unwrap_or(usize::MAX);
        let len = task.history.len();
        if keep < len {
            task.history.drain(..len - keep);
        }
    }
    task
}

/// The most threads one `ListTasks` without a `contextId` looks at.
const LIST_THREADS: usize = 200;
/// The default page of `ListTasks` (the largest is [`validate::MAX_PAGE`]).
const LIST_PAGE: usize = 50;

/// One call, with who made it.
struct Call {
    a2a: A2aState,
    flow: String,
    tenant: String,
    /// Who calls: the turns it starts and the answers it gives are recorded as theirs.
    principal: Principal,
}

impl Call {
    fn key(&self, context: &str) -> Result<ThreadKey, RpcError> {
        let served = self.a2a.app.flow(&self.flow).map_err(map::rpc_error)?;
        ThreadKey::new(served.name(), &self.tenant, context).map_err(|_| {
            RpcError::InvalidParams(
                "a contextId here is 1 to 40 characters of A-Z, a-z, 0-9, '_' or '-' \
                 (it names the agentflow thread)"
                    .into(),
            )
        })
    }

    /// The registry key of turn `turn` of `key`'s thread.
    fn task_key(key: &ThreadKey, turn: u64) -> String {
        format!("{}#{turn}", key.store_id())
    }

    /// `SendMessage`: starts or resumes the task, then waits for it to end or to wait for input.
    async fn send(&self, request: SendMessageRequest) -> Result<Task, RpcError> {
        let immediately = request
            .configuration
            .as_ref()
            .is_some_and(|c| c.return_immediately);
        let history = request
            .configuration
            .as_ref()
            .and_then(|c| c.history_length);
        // A message sent again after its task was recorded gets that task; nothing runs.
        if let Some(task) = self.recorded_task(&request.message).await? {
            return Ok(trim(task, history));
        }
        let running = self.send_streaming(request).await?;
        if immediately {
            return Ok(trim(running.snapshot(), history));
        }
        let (task, mut updates) = running.subscribe();
        if !task.status.state.ends_stream() {
            loop {
                match updates.recv().await {
                    Ok(u) => {
                        if u.status_update
                            .as_ref()
                            .is_some_and(|s| s.status.state.ends_stream())
                        {
                            break;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => break,
                }
            }
        }
        Ok(trim(running.snapshot(), history))
    }

    /// Starts the task `request` asks for (a new turn, or the resume of the task waiting for
    /// input) and returns it running.
    async fn send_streaming(
        &self,
        request: SendMessageRequest,
    ) -> Result<Arc<RunningTask>, RpcError> {
        let push = request
            .configuration
            .as_ref()
            .and_then(|c| c.task_push_notification_config.clone());
        if let Some(config) = &push {
            self.a2a.tasks.push.check(config)?;
        }
        let mut message = request.message;
        let named_task = (!message.task_id.is_empty()).then(|| message.task_id.clone());
        let context = if !message.context_id.is_empty() {
            message.context_id.clone()
        } else if let Some((context, _)) = named_task.as_deref().and_then(parse_task_id) {
            context.to_owned()
        } else {
            uuid::Uuid::new_v4().to_string()
        };
        let key = self.key(&context)?;
        let named_turn = match named_task.as_deref() {
            None => None,
            Some(id) => match parse_task_id(id) {
                Some((c, turn)) if c == context => Some(turn),
                _ => {
                    return Err(RpcError::TaskNotFound(format!(
                        "no task '{}' in context '{context}'",
                        id.chars().take(64).collect::<String>()
                    )))
                }
            },
        };
        let size = message.text().len() + message.data().map_or(0, |d| d.to_string().len());
        let limit = self.a2a.app.limits().max_message_bytes;
        if size > limit {
            return Err(RpcError::InvalidParams(format!(
                "the message has {size} bytes; this server takes at most {limit} \
                 (Limits::max_message_bytes)"
            )));
        }
        let app = &self.a2a.app;
        let served = app.flow(&self.flow).map_err(map::rpc_error)?;
        let store_id = key.store_id();
        let head: Option<ThreadHead> = app
            .threads()
            .head(&store_id)
            .await
            .map_err(|e| map::rpc_error(e.into()))?;
        message.context_id = context.clone();
        // A messageId sent again maps to the run its first send started (see `idempotency`).
        let run_id = match message.message_id.is_empty() {
            true => None,
            false => Some(self.keyed_message(&key, &message).await?),
        };
        if message.message_id.is_empty() {
            message.message_id = map::new_id();
        }
        message.role = Role::User;
        let waiting = head.as_ref().and_then(|h| match &h.last.end {
            RecordEnd::Interrupted { interrupts, .. } => Some((h.last.turn, interrupts.clone())),
            RecordEnd::Completed { .. } => None,
        });
        let max = app.limits().max_turn_duration;
        match waiting {
            Some((turn, interrupts)) => {
                if named_turn.is_some_and(|t| t != turn) {
                    return Err(RpcError::UnsupportedOperation(format!(
                        "task '{}' has ended; context '{context}' waits for input in task '{}': \
                         answer that one",
                        named_task.unwrap_or_default(),
                        task_id(&context, turn)
                    )));
                }
                let targets: HashMap<String, Value> = map::resume_targets(&message, &interrupts)?;
                let id = task_id(&context, turn);
                let task_key = Self::task_key(&key, turn);
                let mut task = match self.a2a.tasks.ended(&task_key) {
                    Some(t) => t,
                    None => self.stored(&key, turn, &id).await?.unwrap_or_else(|| Task {
                        id: id.clone(),
                        context_id: context.clone(),
                        ..Task::default()
                    }),
                };
                // Who may answer is the engine's to check (the flow's approvals).
                let permit = app
                    .admit_run(&key.tenant, &store_id)
                    .map_err(map::rpc_error)?;
                let mut request = TurnRequest::resume(&store_id, targets).by(&self.principal);
                if let Some(run_id) = run_id {
                    request = request.run_id(run_id);
                }
                let turn = served
                    .runner()
                    .turn(request)
                    .await
                    .map_err(|e| map::rpc_error(e.into()))?;
                message.task_id = id.clone();
                task.history.push(message);
                self.push_from_send(push, &task_key, &id);
                Ok(self.a2a.tasks.start(task_key, task, turn, max, permit))
            }
            None => {
                if let Some(t) = named_turn {
                    return Err(RpcError::UnsupportedOperation(format!(
                        "task '{}' has ended and takes no more messages: send the message \
                         without a taskId to start a new task in context '{context}'",
                        task_id(&context, t)
                    )));
                }
                let text = map::user_text(&message)?;
                let permit = app
                    .admit_run(&key.tenant, &store_id)
                    .map_err(map::rpc_error)?;
                let mut request =
                    TurnRequest::new(&store_id, Message::user(text)).by(&self.principal);
                if let Some(run_id) = run_id {
                    request = request.run_id(run_id);
                }
                let turn = served
                    .runner()
                    .turn(request)
                    .await
                    .map_err(|e| map::rpc_error(e.into()))?;
                let id = task_id(&context, turn.number());
                message.task_id = id.clone();
                let task = Task {
                    id,
                    context_id: context,
                    history: vec![message],
                    ..Task::default()
                };
                let task_key = Self::task_key(&key, turn.number());
                self.push_from_send(push, &task_key, &task.id);
                Ok(self.a2a.tasks.start(task_key, task, turn, max, permit))
            }
        }
    }

    /// The run id of a message whose sender gave it a `messageId`: the key's first use is
    /// kept; sent again after its task was recorded, the message runs nothing and the error
    /// names the task (`GetTask` reads it); sent with another content, it is refused.
    async fn keyed_message(
        &self,
        key: &ThreadKey,
        message: &agentweave_a2a::wire::Message,
    ) -> Result<String, RpcError> {
        let app = &self.a2a.app;
        let request = serde_json::json!({
            "route": "a2a_send",
            "text": message.text(),
            "data": message.data(),
            "task": message.task_id,
        });
        let keyed = crate::idempotency::keyed(
            app,
            "messageId",
            self.principal.id(),
            key,
            crate::idempotency::check(&message.message_id, "messageId").map_err(map::rpc_error)?,
            &request,
        )
        .await
        .map_err(map::rpc_error)?;
        if keyed.again {
            let records = crate::idempotency::recorded(app, key, &keyed.run_id)
                .await
                .map_err(map::rpc_error)?;
            if let Some(record) = records.first() {
                return Err(RpcError::InvalidRequest(format!(
                    "message '{}' was sent before and is task '{}': read it with GetTask; \
                     nothing ran again",
                    message.message_id.chars().take(64).collect::<String>(),
                    task_id(&message.context_id, record.turn)
                )));
            }
        }
        Ok(keyed.run_id)
    }

    /// The recorded task of a message sent again with its `messageId` (in its `contextId`),
    /// if its first send's turn is recorded. Another message under the id is refused.
    async fn recorded_task(
        &self,
        message: &agentweave_a2a::wire::Message,
    ) -> Result<Option<Task>, RpcError> {
        if message.message_id.is_empty() || message.context_id.is_empty() {
            return Ok(None);
        }
        let key = self.key(&message.context_id)?;
        let run_id = match self.keyed_message(&key, message).await {
            Ok(run_id) => run_id,
            // Recorded: found below by its run id.
            Err(RpcError::InvalidRequest(_)) => {
                crate::idempotency::run_id(self.principal.id(), &key, &message.message_id)
            }
            Err(e) => return Err(e),
        };
        let app = &self.a2a.app;
        let records = crate::idempotency::recorded(app, &key, &run_id)
            .await
            .map_err(map::rpc_error)?;
        let Some(turn) = records.first().map(|r| r.turn) else {
            return Ok(None);
        };
        let id = task_id(&message.context_id, turn);
        self.stored(&key, turn, &id).await
    }

    /// Sets the push-notification config a `SendMessage` carried (checked before the task
    /// started) for its task `id`.
    fn push_from_send(&self, push: Option<TaskPushNotificationConfig>, key: &str, id: &str) {
        if let Some(mut config) = push {
            config.task_id = id.to_owned();
            if let Err(e) = self.a2a.tasks.push.set(key, config) {
                tracing::warn!(task = %id, error = %e, "a push-notification config was not set");
            }
        }
    }

    /// The task `id` names, in the caller's threads: its key, context and turn.
    fn locate(&self, id: &str) -> Result<(ThreadKey, String, u64), RpcError> {
        let not_found = || {
            RpcError::TaskNotFound(format!(
                "no task '{}' here",
                id.chars().take(64).collect::<String>()
            ))
        };
        let (context, turn) = parse_task_id(id).ok_or_else(not_found)?;
        let key = self.key(context).map_err(|_| not_found())?;
        Ok((key, context.to_owned(), turn))
    }

    /// A task rebuilt from the store, if its turn is recorded.
    async fn stored(&self, key: &ThreadKey, turn: u64, id: &str) -> Result<Option<Task>, RpcError> {
        let served = self.a2a.app.flow(&self.flow).map_err(map::rpc_error)?;
        let records = served
            .runner()
            .thread(&key.store_id())
            .records()
            .await
            .map_err(|e| map::rpc_error(e.into()))?;
        Ok(map::task_from_records(&records, turn, &key.id, id))
    }

    /// `GetTask`: a thread's history, so it needs the `read` scope (as the native thread
    /// reads do).
    async fn get(&self, id: &str) -> Result<Task, RpcError> {
        self.principal
            .require(Scope::Read)
            .map_err(map::rpc_error)?;
        let (key, _, turn) = self.locate(id)?;
        let task_key = Self::task_key(&key, turn);
        if let Some(running) = self.a2a.tasks.running(&task_key) {
            return Ok(running.snapshot());
        }
        if let Some(task) = self.a2a.tasks.ended(&task_key) {
            return Ok(task);
        }
        self.stored(&key, turn, id).await?.ok_or_else(|| {
            RpcError::TaskNotFound(format!(
                "no task '{}' here",
                id.chars().take(64).collect::<String>()
            ))
        })
    }

    /// `CancelTask`.
    async fn cancel(&self, id: &str) -> Result<Task, RpcError> {
        let (key, _, turn) = self.locate(id)?;
        if let Some(running) = self.a2a.tasks.running(&Self::task_key(&key, turn)) {
            let (task, mut updates) = running.subscribe();
            if !task.status.state.is_terminal() {
                running.cancel();
                loop {
                    match updates.recv().await {
                        Ok(u)
                            if u.status_update
                                .as_ref()
                                .is_some_and(|s| s.status.state.ends_stream()) =>
                        {
                            break
                        }
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(broadcast::error::RecvError::Closed) => break,
                    }
                }
            }
            let task = running.snapshot();
            if task.status.state == TaskState::Canceled {
                return Ok(task);
            }
            return Err(not_cancelable(id, task.status.state));
        }
        let task = self.get(id).await?;
        if task.status.state == TaskState::InputRequired {
            return self.withdraw(&key, turn, id).await;
        }
        Err(not_cancelable(id, task.status.state))
    }

    /// `CancelTask` of a task waiting for input: the thread gives the turn up
    /// ([`ThreadHandle::withdraw`](agentweave_runtime::ThreadHandle::withdraw)). Giving up refuses
    /// what the task waits on, so the caller needs what answering it needs (the flow's
    /// approvals).
    async fn withdraw(&self, key: &ThreadKey, turn: u64, id: &str) -> Result<Task, RpcError> {
        let app = &self.a2a.app;
        let served = app.flow(&self.flow).map_err(map::rpc_error)?;
        let store_id = key.store_id();
        let head = app
            .threads()
            .head(&store_id)
            .await
            .map_err(|e| map::rpc_error(e.into()))?;
        let pending = match head.map(|h| (h.last.turn, h.last.end)) {
            Some((t, RecordEnd::Interrupted { interrupts, .. })) if t == turn => interrupts,
            _ => return Err(not_cancelable(id, TaskState::Completed)),
        };
        let refusals: HashMap<String, Value> = pending
            .iter()
            .map(|i| (i.id.clone(), Value::Null))
            .collect();
        crate::routes::authorize_answers(
            app,
            served,
            key,
            &self.principal,
            turn,
            &pending,
            &refusals,
        )
        .await
        .map_err(map::rpc_error)?;
        served
            .runner()
            .thread(&store_id)
            .withdraw(Some(self.principal.id()))
            .await
            .map_err(|e| map::rpc_error(e.into()))?;
        let task = self.stored(key, turn, id).await?.ok_or_else(|| {
            RpcError::Internal(format!("task '{id}' was cancelled but its record is gone"))
        })?;
        self.a2a
            .tasks
            .ended_as(&Self::task_key(key, turn), task.clone());
        Ok(task)
    }

    /// `ListTasks`: the tasks of context `contextId`, or of the caller's threads of this flow
    /// (at most [`LIST_THREADS`] of them, by id), most recently updated first; `pageSize`
    /// (default [`LIST_PAGE`]) per page, `pageToken` the offset an earlier page gave; only
    /// those in state `status` and whose status changed after `after`, when given.
    async fn list(
        &self,
        p: ListTasksRequest,
        after: Option<chrono::DateTime<chrono::FixedOffset>>,
    ) -> Result<ListTasksResponse, RpcError> {
        // The tenant's threads: the `read` scope, as the native thread lists.
        self.principal
            .require(Scope::Read)
            .map_err(map::rpc_error)?;
        let app = &self.a2a.app;
        let served = app.flow(&self.flow).map_err(map::rpc_error)?;
        // The tasks this process holds (running ones have no record yet, and a task cancelled
        // while it ran records nothing), then those rebuilt from the threads' records.
        let (mut tasks, contexts): (Vec<Task>, Vec<String>) = if p.context_id.is_empty() {
            let prefix = ThreadKey::prefix(served.name(), &self.tenant);
            let held = self.a2a.tasks.held(&prefix);
            let ids = app
                .threads()
                .list()
                .await
                .map_err(|e| map::rpc_error(e.into()))?;
            let contexts = ids
                .iter()
                .filter_map(|id| id.strip_prefix(&prefix))
                .take(LIST_THREADS)
                .map(str::to_owned)
                .collect();
            (held, contexts)
        } else {
            let key = self.key(&p.context_id)?;
            let held = self.a2a.tasks.held(&format!("{}#", key.store_id()));
            (held, vec![p.context_id.clone()])
        };
        for context in &contexts {
            let key = self.key(context)?;
            let records = served
                .runner()
                .thread(&key.store_id())
                .records()
                .await
                .map_err(|e| map::rpc_error(e.into()))?;
            let mut turns: Vec<u64> = records.iter().map(|r| r.turn).collect();
            turns.dedup();
            for turn in turns {
                let id = task_id(context, turn);
                if tasks.iter().any(|t| t.id == id) {
                    continue;
                }
                tasks.extend(map::task_from_records(&records, turn, &key.id, &id));
            }
        }
        if p.status != TaskState::Unspecified {
            tasks.retain(|t| t.status.state == p.status);
        }
        if let Some(after) = after {
            // A task without a status time cannot be shown to have changed after it.
            tasks.retain(|t| {
                t.status
                    .timestamp
                    .as_deref()
                    .and_then(validate::timestamp)
                    .is_some_and(|at| at > after)
            });
        }
        tasks.sort_by(|a, b| b.status.timestamp.cmp(&a.status.timestamp));
        let total = tasks.len();
        // In 1 to MAX_PAGE: checked by `validate::list_tasks`.
        let size = p.page_size.map_or(LIST_PAGE, |n| n.max(1) as usize);
        let from: usize = if p.page_token.is_empty() {
            0
        } else {
            p.page_token.parse().map_err(|_| {
                RpcError::InvalidParams(
                    "the pageToken is not one this server gave: send the nextPageToken of the \
                     previous page, or none for the first"
                        .into(),
                )
            })?
        };
        let page: Vec<Task> = tasks
            .into_iter()
            .skip(from)
            .take(size)
            .map(|mut t| {
                if !p.include_artifacts {
                    t.artifacts.clear();
                }
                trim(t, p.history_length)
            })
            .collect();
        let next = from + page.len();
        Ok(ListTasksResponse {
            tasks: page,
            next_page_token: if next < total {
                next.to_string()
            } else {
                String::new()
            },
            page_size: size as i32,
            total_size: i32::try_from(total).unwrap_or(i32::MAX),
        })
    }

    /// The task key of task `id`, once it is known to exist for the caller.
    async fn push_key(&self, id: &str) -> Result<String, RpcError> {
        let (key, _, turn) = self.locate(id)?;
        self.get(id).await?;
        Ok(Self::task_key(&key, turn))
    }

    /// `CreateTaskPushNotificationConfig`.
    async fn set_push(
        &self,
        config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, RpcError> {
        self.a2a.tasks.push.check(&config)?;
        let key = self.push_key(&config.task_id).await?;
        self.a2a.tasks.push.set(&key, config)
    }

    /// `GetTaskPushNotificationConfig`.
    async fn get_push(&self, p: &PushConfigParams) -> Result<TaskPushNotificationConfig, RpcError> {
        let key = self.push_key(&p.task_id).await?;
        self.a2a
            .tasks
            .push
            .list(&key)
            .into_iter()
            .find(|c| c.id == p.id)
            .ok_or_else(|| {
                RpcError::InvalidParams(format!(
                    "task '{}' has no push-notification config '{}'",
                    p.task_id,
                    p.id.chars().take(64).collect::<String>()
                ))
            })
    }

    /// `DeleteTaskPushNotificationConfig`.
    async fn delete_push(&self, p: &PushConfigParams) -> Result<(), RpcError> {
        let key = self.push_key(&p.task_id).await?;
        if self.a2a.tasks.push.delete(&key, &p.id) {
            Ok(())
        } else {
            Err(RpcError::InvalidParams(format!(
                "task '{}' has no push-notification config '{}'",
                p.task_id,
                p.id.chars().take(64).collect::<String>()
            )))
        }
    }

    /// `SubscribeToTask`: a running task is joined; a task waiting for input (not a final
    /// state) is streamed as it is, then as it goes on once answered; an ended task is
    /// refused (`-32004`).
    async fn subscribe(&self, id: &str) -> Result<Joined, RpcError> {
        let (key, _, turn) = self.locate(id)?;
        let task_key = Self::task_key(&key, turn);
        // Wait for the task's resume before looking, so a resume in between is not missed.
        let start = self.a2a.tasks.next_start(&task_key);
        if let Some(running) = self.a2a.tasks.running(&task_key) {
            if running.snapshot().status.state != TaskState::InputRequired {
                return Ok(Joined::Running(running));
            }
        }
        let task = self.get(id).await?;
        match task.status.state {
            TaskState::InputRequired => Ok(Joined::Waiting {
                task: Box::new(task),
                start,
            }),
            state if !state.is_terminal() => match self.a2a.tasks.running(&task_key) {
                Some(running) => Ok(Joined::Running(running)),
                None => Err(ended(id, state)),
            },
            state => Err(ended(id, state)),
        }
    }

    /// A task waiting for input as Server-Sent Events: the task as it is, then, once an
    /// answer resumes it, its state and each update to the first that ends a stream (a final
    /// state, or input required again). Open until then, or
    /// [`Limits::max_turn_duration`](crate::Limits).
    fn stream_waiting(&self, id: Value, task: Task, start: oneshot::Receiver<Started>) -> Response {
        let limits = self.a2a.app.limits();
        let limit = limits.max_event_bytes;
        let frames = async_stream::stream! {
            let (task_id, context_id) = (task.id.clone(), task.context_id.clone());
            yield frame(&id, &StreamResponse::task(task), limit);
            // The server going away ends the stream.
            let running = start.await.ok();
            if let Some((now, mut updates)) = running {
                let ended = now.status.state.ends_stream();
                yield frame(&id, &status_of(&now), limit);
                if !ended {
                    loop {
                        match updates.recv().await {
                            Ok(update) => {
                                yield frame(&id, &update, limit);
                                if update.status_update.as_ref().is_some_and(|s| s.status.state.ends_stream()) {
                                    break;
                                }
                            }
                            Err(broadcast::error::RecvError::Lagged(n)) => {
                                let e = RpcError::Internal(format!(
                                    "this stream fell {n} updates behind task '{task_id}' of \
                                     context '{context_id}' and was cut off: GetTask shows the \
                                     task, SubscribeToTask joins it again"
                                ));
                                yield error_frame(&id, &e);
                                break;
                            }
                            Err(broadcast::error::RecvError::Closed) => break,
                        }
                    }
                }
            }
        };
        SseBody::new(
            frames,
            limits.sse_keep_alive,
            limits.max_turn_duration,
            overtime,
        )
        .into_response()
    }

    /// The task's updates as Server-Sent Events: the task as it is, then each update, to the
    /// first that ends the stream (a final state, or input required).
    fn stream(&self, id: Value, running: Arc<RunningTask>) -> Response {
        let limits = self.a2a.app.limits();
        let limit = limits.max_event_bytes;
        let (task, mut updates) = running.subscribe();
        drop(running);
        let frames = async_stream::stream! {
            let ended = task.status.state.ends_stream();
            yield frame(&id, &StreamResponse::task(task), limit);
            if !ended {
                loop {
                    match updates.recv().await {
                        Ok(update) => {
                            yield frame(&id, &update, limit);
                            if update.status_update.as_ref().is_some_and(|s| s.status.state.ends_stream()) {
                                break;
                            }
                        }
                        Err(broadcast::error::RecvError::Lagged(n)) => {
                            let e = RpcError::Internal(format!(
                                "this stream fell {n} updates behind the task and was cut off: \
                                 GetTask shows the task, SubscribeToTask joins it again"
                            ));
                            yield error_frame(&id, &e);
                            break;
                        }
                        Err(broadcast::error::RecvError::Closed) => break,
                    }
                }
            }
        };
        SseBody::new(
            frames,
            limits.sse_keep_alive,
            limits.max_turn_duration,
            overtime,
        )
        .into_response()
    }
}

/// What `SubscribeToTask` joins: a running task, or one waiting for input (its state now, and
/// its subscription once it resumes, asked for before it was read).
enum Joined {
    Running(Arc<RunningTask>),
    Waiting {
        task: Box<Task>,
        start: oneshot::Receiver<Started>,
    },
}

/// The status update stating `task`'s status as it is.
fn status_of(task: &Task) -> StreamResponse {
    StreamResponse::status(TaskStatusUpdateEvent {
        task_id: task.id.clone(),
        context_id: task.context_id.clone(),
        status: task.status.clone(),
        metadata: None,
    })
}

/// `SubscribeToTask` of a task in a final state.
fn ended(id: &str, state: TaskState) -> RpcError {
    RpcError::UnsupportedOperation(format!(
        "task '{id}' has ended ({state:?}) and streams no more: GetTask shows it"
    ))
}

fn not_cancelable(id: &str, state: TaskState) -> RpcError {
    RpcError::TaskNotCancelable(format!(
        "task '{id}' cannot be cancelled: it has ended ({state:?})"
    ))
}

/// One SSE frame: `data: <JSON-RPC response>` (no event name: A2A clients read `message`
/// events); an update over `limit` bytes is replaced by an error response naming the limit.
fn frame(id: &Value, update: &StreamResponse, limit: usize) -> Vec<u8> {
    let response = RpcResponse::ok(id.clone(), update);
    let json = serde_json::to_vec(&response).unwrap_or_default();
    if json.len() > limit {
        return error_frame(
            id,
            &RpcError::Internal(format!(
                "an update of {} bytes exceeds the server's event size limit of {limit} bytes \
                 and was not sent (Limits::max_event_bytes): GetTask shows the task",
                json.len()
            )),
        );
    }
    data_frame(&json)
}

fn error_frame(id: &Value, e: &RpcError) -> Vec<u8> {
    data_frame(&serde_json::to_vec(&RpcResponse::err(id.clone(), e)).unwrap_or_default())
}

fn data_frame(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len() + 8);
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(json);
    out.extend_from_slice(b"\n\n");
    out
}

/// What a stream open past [`Limits::max_turn_duration`](crate::Limits) ends with (the task
/// itself is stopped by its own limit).
fn overtime(limit: Duration) -> Vec<u8> {
    let e = ErrorObject {
        code: RpcError::Internal(String::new()).code(),
        message: format!(
            "this stream was open longer than {} s (Limits::max_turn_duration): GetTask shows \
             the task",
            limit.as_secs_f64()
        ),
        data: None,
    };
    let response = RpcResponse {
        jsonrpc: "2.0".into(),
        id: Value::Null,
        result: None,
        error: Some(e),
    };
    data_frame(&serde_json::to_vec(&response).unwrap_or_default())
}
