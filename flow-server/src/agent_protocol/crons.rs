//! The Agent Protocol's crons (`client.crons` of `langgraph-sdk`), over the server's schedules
//! ([`crate::schedules`]): `POST /runs/crons` (a new thread each firing), `POST
//! /threads/{thread}/runs/crons` (turns of one thread), `POST /runs/crons/search`, `POST
//! /runs/crons/count`, `PATCH /runs/crons/{cron}` (`enabled: false` pauses, `true` resumes)
//! and `DELETE /runs/crons/{cron}`. A cron's id is its schedule's; the input's last message is
//! what each run gets; `timezone` is UTC only; `missed` (an agentflow field, `catch_up` or
//! `skip`) is the missed-firing policy. Fields the SDK sends that change nothing here
//! (`config`, `context`, stream options, `end_time`, ...) are accepted and ignored.

use agentweave_runtime::store::{Schedule, ScheduleFilter};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::handlers::{message_of, Caller};
use crate::error::ApiError;
use crate::extract::{ApiPath, JsonBody};
use crate::schedules::{self, Change, NewScheduleSpec};
use agentweave_a2a::wire::rfc3339;

/// The body of a cron's creation (other fields are accepted and ignored).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct CronCreate {
    #[serde(default)]
    assistant_id: Option<String>,
    #[serde(default)]
    schedule: Option<String>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    metadata: Option<Value>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    missed: Option<String>,
}

/// The body of `PATCH /runs/crons/{cron}` (other fields are accepted and ignored).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct CronUpdate {
    #[serde(default)]
    schedule: Option<String>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    metadata: Option<Value>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    missed: Option<String>,
}

/// The body of `POST /runs/crons/search` and `/count` (other fields are accepted and ignored).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct CronSearch {
    #[serde(default)]
    assistant_id: Option<String>,
    #[serde(default)]
    thread_id: Option<String>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
}

/// A schedule as the protocol's `Cron`.
fn cron_json(s: &Schedule) -> Value {
    json!({
        "cron_id": s.id,
        "assistant_id": s.flow,
        "thread_id": s.thread,
        "schedule": s.cron,
        "timezone": "UTC",
        "created_at": rfc3339(s.created_ms),
        "updated_at": rfc3339(s.updated_ms),
        "payload": {
            "assistant_id": s.flow,
            "input": {"messages": [{"role": "user", "content": s.input["message"]}]},
            "missed": s.missed.as_str(),
        },
        "user_id": s.by,
        "next_run_date": (!s.paused && s.next_due_ms < i64::MAX as u64)
            .then(|| rfc3339(s.next_due_ms)),
        "end_time": null,
        "on_run_completed": null,
        "metadata": s.metadata,
        "enabled": !s.paused,
    })
}

async fn create(
    caller: &Caller,
    thread: Option<String>,
    body: CronCreate,
) -> Result<Json<Value>, ApiError> {
    let flow = match (&thread, &body.assistant_id) {
        (Some(thread), assistant) => {
            let (_, known) = caller.known(thread).await?;
            match (known, assistant) {
                (Some(f), Some(a)) if f.name() != a => {
                    return Err(ApiError::BadRequest(format!(
                        "thread '{thread}' belongs to assistant '{}', not '{}'",
                        f.name(),
                        a.chars().take(40).collect::<String>()
                    )))
                }
                (Some(f), _) => f.name().to_owned(),
                (None, Some(a)) => a.clone(),
                (None, None) => return Err(no_assistant()),
            }
        }
        (None, Some(a)) => a.clone(),
        (None, None) => return Err(no_assistant()),
    };
    let schedule = body.schedule.ok_or_else(|| {
        ApiError::BadRequest("send `schedule`: a cron expression, e.g. `0 9 * * *`".into())
    })?;
    let input = body.input.ok_or_else(|| {
        ApiError::BadRequest(
            "send `input`: {\"messages\": [{\"role\": \"user\", \"content\": TEXT}]}, what \
             each run gets"
                .into(),
        )
    })?;
    let spec = NewScheduleSpec {
        flow,
        thread,
        cron: schedule,
        timezone: body.timezone,
        message: message_of(&input)?,
        missed: body.missed,
        paused: body.enabled == Some(false),
        metadata: body.metadata,
    };
    let created =
        schedules::create(&caller.state, &caller.principal, &caller.tenant.0, spec).await?;
    Ok(Json(cron_json(&created)))
}

fn no_assistant() -> ApiError {
    ApiError::BadRequest(
        "send `assistant_id`: the name of a served flow (POST /v1/assistants/search)".into(),
    )
}

/// `POST /v1/runs/crons`: a cron that runs on a new thread each firing.
pub(crate) async fn create_cron(
    caller: Caller,
    JsonBody(body): JsonBody<CronCreate>,
) -> Result<Json<Value>, ApiError> {
    create(&caller, None, body).await
}

/// `POST /v1/threads/{thread}/runs/crons`: a cron whose runs are turns of `thread`.
pub(crate) async fn create_thread_cron(
    caller: Caller,
    ApiPath(thread): ApiPath<String>,
    JsonBody(body): JsonBody<CronCreate>,
) -> Result<Json<Value>, ApiError> {
    create(&caller, Some(thread), body).await
}

fn filter(search: &CronSearch) -> ScheduleFilter {
    ScheduleFilter {
        tenant: String::new(),
        flow: search.assistant_id.clone(),
        thread: search.thread_id.clone(),
    }
}

/// `POST /v1/runs/crons/search`: the tenant's crons, oldest first.
pub(crate) async fn search_crons(
    caller: Caller,
    JsonBody(search): JsonBody<CronSearch>,
) -> Result<Json<Value>, ApiError> {
    let found = schedules::list(
        &caller.state,
        &caller.principal,
        &caller.tenant.0,
        filter(&search),
        search.limit.unwrap_or(10),
        search.offset.unwrap_or(0),
    )
    .await?;
    let crons: Vec<Value> = found
        .iter()
        .filter(|s| search.enabled != Some(s.paused))
        .map(cron_json)
        .collect();
    Ok(Json(Value::Array(crons)))
}

/// `POST /v1/runs/crons/count`: how many crons the search would find.
pub(crate) async fn count_crons(
    caller: Caller,
    JsonBody(search): JsonBody<CronSearch>,
) -> Result<Json<Value>, ApiError> {
    let n = schedules::count(
        &caller.state,
        &caller.principal,
        &caller.tenant.0,
        filter(&search),
    )
    .await?;
    Ok(Json(json!(n)))
}

/// `PATCH /v1/runs/crons/{cron}`: changes a cron (`enabled` pauses or resumes it).
pub(crate) async fn update_cron(
    caller: Caller,
    ApiPath(cron): ApiPath<String>,
    JsonBody(body): JsonBody<CronUpdate>,
) -> Result<Json<Value>, ApiError> {
    let change = Change {
        cron: body.schedule,
        timezone: body.timezone,
        message: body.input.as_ref().map(message_of).transpose()?,
        missed: body.missed,
        paused: body.enabled.map(|e| !e),
        metadata: body.metadata,
    };
    let changed = schedules::update(
        &caller.state,
        &caller.principal,
        &caller.tenant.0,
        &cron,
        change,
    )
    .await?;
    Ok(Json(cron_json(&changed)))
}

/// `DELETE /v1/runs/crons/{cron}`: deletes a cron (204).
pub(crate) async fn delete_cron(
    caller: Caller,
    ApiPath(cron): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    schedules::delete(&caller.state, &caller.principal, &caller.tenant.0, &cron).await?;
    Ok(StatusCode::NO_CONTENT)
}
