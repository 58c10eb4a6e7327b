//! What the schedule doors (the native routes and the Agent Protocol's crons) do, once: create,
//! read, list, count, change and delete a schedule, each under the caller's principal and
//! tenant. A principal sees and changes only its tenant's schedules (another tenant's id is
//! unknown: 404); reading needs the `read` or `chat` scope, creating, changing and deleting
//! the `chat` scope (as starting a run does). A schedule's runs run as the principal that
//! created it, with the scopes it had then.

use agentweave_runtime::store::{MissedPolicy, Schedule, ScheduleFilter, ScheduleStore};
use serde_json::{json, Value};

use super::cron::When;
use crate::error::ApiError;
use crate::principal::{Principal, Scope};
use crate::queue::QueueSettings;
use crate::state::AppState;
use crate::thread::ThreadKey;

/// The most schedules one tenant keeps (checked when one is created).
pub(crate) const MAX_SCHEDULES_PER_TENANT: u64 = 1_000;

/// The most bytes of metadata a schedule keeps (its JSON).
const MAX_METADATA_BYTES: usize = 16 * 1024;

/// A schedule to create, as a door read it.
#[derive(Debug, Clone, Default)]
pub(crate) struct NewScheduleSpec {
    /// The flow whose runs it starts.
    pub flow: String,
    /// The caller's thread its runs are turns of; `None`: a new thread each firing.
    pub thread: Option<String>,
    /// The cron expression.
    pub cron: String,
    /// Its time zone (UTC only).
    pub timezone: Option<String>,
    /// The message each run gets.
    pub message: String,
    /// The missed-firing policy's name (`catch_up`, the default, or `skip`).
    pub missed: Option<String>,
    /// Whether it starts paused.
    pub paused: bool,
    /// The caller's metadata (a JSON object).
    pub metadata: Option<Value>,
}

/// A change to a schedule: each field given replaces the schedule's.
#[derive(Debug, Clone, Default)]
pub(crate) struct Change {
    pub cron: Option<String>,
    pub timezone: Option<String>,
    pub message: Option<String>,
    pub missed: Option<String>,
    pub paused: Option<bool>,
    pub metadata: Option<Value>,
}

/// The server's queue and the schedules kept in its store, or a 400 saying how to get them.
fn store(state: &AppState) -> Result<(&QueueSettings, &dyn ScheduleStore), ApiError> {
    let settings = state.queue_settings().ok_or_else(|| {
        ApiError::BadRequest(
            "this server keeps no schedules: schedules live in the run queue's store; give \
             the server a run queue (ServerBuilder::run_queue)"
                .into(),
        )
    })?;
    let schedules = settings.queue.schedules().ok_or_else(|| {
        ApiError::BadRequest(
            "this server's run queue keeps no schedules (the file queue does not); use the \
             SQLite or PostgreSQL queue"
                .into(),
        )
    })?;
    Ok((settings, schedules))
}

fn store_error(e: agentweave_runtime::store::QueueError) -> ApiError {
    tracing::error!(error = %e, "the schedule store failed");
    ApiError::StoreUnavailable
}

fn unknown(id: &str) -> ApiError {
    ApiError::UnknownItem(format!(
        "no schedule '{}' is known to your tenant; list your schedules to find it",
        id.chars().take(64).collect::<String>()
    ))
}

fn check_message(state: &AppState, message: &str) -> Result<(), ApiError> {
    let limit = state.limits().max_message_bytes;
    if message.len() > limit {
        return Err(ApiError::BadRequest(format!(
            "the schedule's message has {} bytes; this server takes at most {limit} \
             (Limits::max_message_bytes)",
            message.len()
        )));
    }
    if message.trim().is_empty() {
        return Err(ApiError::BadRequest(
            "the schedule's message is empty: give the text each run gets".into(),
        ));
    }
    Ok(())
}

fn missed_policy(name: Option<&str>) -> Result<Option<MissedPolicy>, ApiError> {
    name.map(|n| {
        MissedPolicy::parse(n).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "missed-firing policy '{}' is not known: use `catch_up` (run the latest missed \
                 firing once, the default) or `skip`",
                n.chars().take(40).collect::<String>()
            ))
        })
    })
    .transpose()
}

fn check_metadata(metadata: &Value) -> Result<(), ApiError> {
    if !metadata.is_object() {
        return Err(ApiError::BadRequest(
            "a schedule's `metadata` is a JSON object".into(),
        ));
    }
    if metadata.to_string().len() > MAX_METADATA_BYTES {
        return Err(ApiError::BadRequest(format!(
            "a schedule's `metadata` takes at most {MAX_METADATA_BYTES} bytes of JSON"
        )));
    }
    Ok(())
}

/// Creates a schedule of `spec.flow` for `principal` in `tenant`: its first firing is the
/// first due time after now.
pub(crate) async fn create(
    state: &AppState,
    principal: &Principal,
    tenant: &str,
    spec: NewScheduleSpec,
) -> Result<Schedule, ApiError> {
    principal.require(Scope::Chat)?;
    let flow = state.flow(&spec.flow)?.name().to_owned();
    if let Some(thread) = &spec.thread {
        ThreadKey::new(&flow, tenant, thread)?;
    }
    check_message(state, &spec.message)?;
    let when = When::parse(&spec.cron, spec.timezone.as_deref())?;
    let missed = missed_policy(spec.missed.as_deref())?.unwrap_or_default();
    let metadata = spec.metadata.unwrap_or_else(|| json!({}));
    check_metadata(&metadata)?;
    let (settings, schedules) = store(state)?;
    let filter = ScheduleFilter {
        tenant: tenant.to_owned(),
        ..ScheduleFilter::default()
    };
    if schedules
        .count_schedules(&filter)
        .await
        .map_err(store_error)?
        >= MAX_SCHEDULES_PER_TENANT
    {
        return Err(ApiError::Conflict(format!(
            "your tenant keeps {MAX_SCHEDULES_PER_TENANT} schedules, the most it may; delete \
             one first"
        )));
    }
    let now = settings.options.schedule_clock.now_ms();
    let grants = Scope::ALL
        .into_iter()
        .filter(|s| principal.allows(*s))
        .map(|s| s.as_str().to_owned())
        .collect();
    let schedule = Schedule {
        id: uuid::Uuid::new_v4().to_string(),
        flow,
        tenant: tenant.to_owned(),
        thread: spec.thread,
        cron: spec.cron.trim().to_owned(),
        input: json!({ "message": spec.message }),
        by: principal.id().to_owned(),
        grants,
        missed,
        paused: spec.paused,
        next_due_ms: when.next_after(now).unwrap_or(u64::MAX),
        last_due_ms: None,
        created_ms: now,
        updated_ms: now,
        metadata,
    };
    schedules
        .create_schedule(&schedule)
        .await
        .map_err(store_error)?;
    Ok(schedule)
}

/// Schedule `id` of `tenant` (another tenant's is unknown: 404).
pub(crate) async fn get(
    state: &AppState,
    principal: &Principal,
    tenant: &str,
    id: &str,
) -> Result<Schedule, ApiError> {
    principal.require_any(&[Scope::Read, Scope::Chat])?;
    let (_, schedules) = store(state)?;
    if agentweave_runtime::store::validate_id(id).is_err() {
        return Err(unknown(id));
    }
    match schedules.schedule(id).await.map_err(store_error)? {
        Some(s) if s.tenant == tenant => Ok(s),
        _ => Err(unknown(id)),
    }
}

/// The schedules of `tenant` that `filter` selects (its tenant is set here), oldest first.
pub(crate) async fn list(
    state: &AppState,
    principal: &Principal,
    tenant: &str,
    mut filter: ScheduleFilter,
    limit: usize,
    offset: usize,
) -> Result<Vec<Schedule>, ApiError> {
    principal.require_any(&[Scope::Read, Scope::Chat])?;
    let (_, schedules) = store(state)?;
    tenant.clone_into(&mut filter.tenant);
    schedules
        .list_schedules(&filter, limit.min(1_000), offset)
        .await
        .map_err(store_error)
}

/// How many schedules of `tenant` `filter` selects.
pub(crate) async fn count(
    state: &AppState,
    principal: &Principal,
    tenant: &str,
    mut filter: ScheduleFilter,
) -> Result<u64, ApiError> {
    principal.require_any(&[Scope::Read, Scope::Chat])?;
    let (_, schedules) = store(state)?;
    tenant.clone_into(&mut filter.tenant);
    schedules
        .count_schedules(&filter)
        .await
        .map_err(store_error)
}

/// Changes schedule `id` of `tenant`: pausing stops its firings; resuming, or a new cron
/// expression, makes its next firing the first due time after now (firings due while it was
/// paused are not run).
pub(crate) async fn update(
    state: &AppState,
    principal: &Principal,
    tenant: &str,
    id: &str,
    change: Change,
) -> Result<Schedule, ApiError> {
    principal.require(Scope::Chat)?;
    let mut schedule = get(state, principal, tenant, id).await?;
    let (settings, schedules) = store(state)?;
    let now = settings.options.schedule_clock.now_ms();
    let mut replan = false;
    if let Some(cron) = &change.cron {
        When::parse(cron, change.timezone.as_deref())?;
        schedule.cron = cron.trim().to_owned();
        replan = true;
    } else {
        super::cron::check_timezone(change.timezone.as_deref())?;
    }
    if let Some(message) = change.message {
        check_message(state, &message)?;
        schedule.input = json!({ "message": message });
    }
    if let Some(missed) = missed_policy(change.missed.as_deref())? {
        schedule.missed = missed;
    }
    if let Some(metadata) = change.metadata {
        check_metadata(&metadata)?;
        schedule.metadata = metadata;
    }
    if let Some(paused) = change.paused {
        replan |= schedule.paused && !paused;
        schedule.paused = paused;
    }
    if replan {
        let when = When::parse(&schedule.cron, None)?;
        schedule.next_due_ms = when.next_after(now).unwrap_or(u64::MAX);
    }
    schedule.updated_ms = now;
    if !schedules
        .update_schedule(&schedule)
        .await
        .map_err(store_error)?
    {
        return Err(unknown(id));
    }
    Ok(schedule)
}

/// Deletes schedule `id` of `tenant`: it fires no more (its runs already queued go on).
pub(crate) async fn delete(
    state: &AppState,
    principal: &Principal,
    tenant: &str,
    id: &str,
) -> Result<(), ApiError> {
    principal.require(Scope::Chat)?;
    get(state, principal, tenant, id).await?;
    let (_, schedules) = store(state)?;
    if schedules.delete_schedule(id).await.map_err(store_error)? {
        Ok(())
    } else {
        Err(unknown(id))
    }
}

/// A schedule as the native routes answer it.
pub(crate) fn schedule_json(s: &Schedule) -> Value {
    let at = |ms: u64| (ms < i64::MAX as u64).then_some(ms);
    json!({
        "id": s.id,
        "flow": s.flow,
        "thread": s.thread,
        "cron": s.cron,
        "timezone": "UTC",
        "message": s.input["message"],
        "missed": s.missed.as_str(),
        "paused": s.paused,
        "next_due_at_ms": if s.paused { None } else { at(s.next_due_ms) },
        "last_due_at_ms": s.last_due_ms,
        "created_at_ms": s.created_ms,
        "updated_at_ms": s.updated_ms,
        "by": s.by,
        "metadata": s.metadata,
    })
}
