//! The native schedule routes, under `/v1/flows/{flow}`:
//!
//! | route | scope | does |
//! | --- | --- | --- |
//! | `POST /schedules` | `chat` | creates a schedule: `{"cron", "message", "thread"?, "missed"?, "paused"?, "timezone"?, "metadata"?}`; 201 with it |
//! | `GET /schedules?thread=&limit=&offset=` | `read` or `chat` | the tenant's schedules of the flow, oldest first: `{"schedules", "total"}` |
//! | `GET /schedules/{id}` | `read` or `chat` | one schedule |
//! | `PATCH /schedules/{id}` | `chat` | changes it (`paused: true` pauses, `false` resumes) |
//! | `DELETE /schedules/{id}` | `chat` | deletes it (204) |

use agentweave_runtime::store::ScheduleFilter;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::manage::{self, Change, NewScheduleSpec};
use crate::auth::Tenant;
use crate::error::ApiError;
use crate::extract::{ApiPath, JsonBody};
use crate::principal::Principal;
use crate::state::AppState;

/// The native schedule routes.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/flows/{flow}/schedules",
            get(list_schedules).post(create_schedule),
        )
        .route(
            "/flows/{flow}/schedules/{id}",
            get(get_schedule)
                .patch(update_schedule)
                .delete(delete_schedule),
        )
}

/// The body of `POST .../schedules`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    cron: String,
    message: String,
    #[serde(default)]
    thread: Option<String>,
    #[serde(default)]
    missed: Option<String>,
    #[serde(default)]
    paused: bool,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    metadata: Option<Value>,
}

/// The body of `PATCH .../schedules/{id}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChangeBody {
    #[serde(default)]
    cron: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    missed: Option<String>,
    #[serde(default)]
    paused: Option<bool>,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    metadata: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct ListQuery {
    #[serde(default)]
    thread: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
}

async fn create_schedule(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath(flow): ApiPath<String>,
    JsonBody(body): JsonBody<CreateBody>,
) -> Result<Response, ApiError> {
    let spec = NewScheduleSpec {
        flow,
        thread: body.thread,
        cron: body.cron,
        timezone: body.timezone,
        message: body.message,
        missed: body.missed,
        paused: body.paused,
        metadata: body.metadata,
    };
    let schedule = manage::create(&state, &principal, &tenant.0, spec).await?;
    Ok((StatusCode::CREATED, Json(manage::schedule_json(&schedule))).into_response())
}

async fn list_schedules(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath(flow): ApiPath<String>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(query) = query.map_err(|e| {
        ApiError::BadRequest(format!(
            "the query string is not what this endpoint takes: {e}"
        ))
    })?;
    let flow = state.flow(&flow)?.name().to_owned();
    let filter = ScheduleFilter {
        tenant: String::new(),
        flow: Some(flow),
        thread: query.thread,
    };
    let total = manage::count(&state, &principal, &tenant.0, filter.clone()).await?;
    let found = manage::list(
        &state,
        &principal,
        &tenant.0,
        filter,
        query.limit.unwrap_or(100),
        query.offset.unwrap_or(0),
    )
    .await?;
    let schedules: Vec<Value> = found.iter().map(manage::schedule_json).collect();
    Ok(Json(json!({ "schedules": schedules, "total": total })))
}

/// The schedule `id` of `flow` (one of another flow is unknown here).
async fn of_flow(
    state: &AppState,
    principal: &Principal,
    tenant: &Tenant,
    flow: &str,
    id: &str,
) -> Result<(), ApiError> {
    let schedule = manage::get(state, principal, &tenant.0, id).await?;
    if schedule.flow == flow {
        Ok(())
    } else {
        Err(ApiError::UnknownItem(format!(
            "no schedule '{}' is known to your tenant on flow '{flow}'",
            id.chars().take(64).collect::<String>()
        )))
    }
}

async fn get_schedule(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id)): ApiPath<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    state.flow(&flow)?;
    of_flow(&state, &principal, &tenant, &flow, &id).await?;
    let schedule = manage::get(&state, &principal, &tenant.0, &id).await?;
    Ok(Json(manage::schedule_json(&schedule)))
}

async fn update_schedule(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id)): ApiPath<(String, String)>,
    JsonBody(body): JsonBody<ChangeBody>,
) -> Result<Json<Value>, ApiError> {
    state.flow(&flow)?;
    of_flow(&state, &principal, &tenant, &flow, &id).await?;
    let change = Change {
        cron: body.cron,
        timezone: body.timezone,
        message: body.message,
        missed: body.missed,
        paused: body.paused,
        metadata: body.metadata,
    };
    let schedule = manage::update(&state, &principal, &tenant.0, &id, change).await?;
    Ok(Json(manage::schedule_json(&schedule)))
}

async fn delete_schedule(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id)): ApiPath<(String, String)>,
) -> Result<StatusCode, ApiError> {
    state.flow(&flow)?;
    of_flow(&state, &principal, &tenant, &flow, &id).await?;
    manage::delete(&state, &principal, &tenant.0, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
