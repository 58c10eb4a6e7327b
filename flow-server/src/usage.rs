//! The usage report, `GET /v1/usage?from=&to=&flow=&agent=&tenant=&limit=&offset=` (scope
//! `read`): what model calls spent per tenant, UTC day, flow, agent and model, as the runners
//! charged them to the server's spending store ([`ServerBuilder::spending`](crate::ServerBuilder::spending)).
//! A principal sees its own tenant's rows; an `admin` principal sees every tenant's, or one
//! with `tenant=`. `from` and `to` are UTC days (`YYYY-MM-DD`, both included). Rows come by
//! day, tenant, flow, agent and model, a page at a time (`next_offset` while more follow), with
//! `total`, how many rows the filter selects.

use agentweave_runtime::store::{UsageFilter, UsageRow};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::routing::get;
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::auth::Tenant;
use crate::error::ApiError;
use crate::paging::MAX_PAGE;
use crate::principal::{Principal, Scope};
use crate::state::AppState;

/// The usage route.
pub(crate) fn routes() -> Router<AppState> {
    Router::new().route("/usage", get(usage))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UsageQuery {
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    to: Option<String>,
    #[serde(default)]
    flow: Option<String>,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    tenant: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
}

/// `day` if it is a UTC day written `YYYY-MM-DD` that exists, else a 400 naming `which`.
fn check_day(which: &str, day: Option<String>) -> Result<Option<String>, ApiError> {
    let Some(day) = day else {
        return Ok(None);
    };
    let bad = || {
        ApiError::BadRequest(format!(
            "`{which}` is '{}', not a day: write it YYYY-MM-DD (a UTC day, e.g. 2026-12-07)",
            day.chars().take(40).collect::<String>()
        ))
    };
    let b = day.as_bytes();
    if b.len() != 10
        || b[4] != b'-'
        || b[7] != b'-'
        || !b
            .iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
    {
        return Err(bad());
    }
    let year: u32 = day[..4].parse().map_err(|_| bad())?;
    let month: u32 = day[5..7].parse().map_err(|_| bad())?;
    let d: u32 = day[8..].parse().map_err(|_| bad())?;
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days_in = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return Err(bad()),
    };
    if d == 0 || d > days_in {
        return Err(bad());
    }
    Ok(Some(day))
}

fn row_json(row: &UsageRow) -> Value {
    json!({
        "tenant": row.tenant,
        "day": row.day,
        "flow": row.flow,
        "agent": row.agent,
        "model": row.model,
        "input_tokens": row.spent.input_tokens,
        "output_tokens": row.spent.output_tokens,
        "total_tokens": row.spent.total_tokens(),
        "cost_usd": row.spent.cost_micro_usd as f64 / 1e6,
        "model_calls": row.spent.model_calls,
    })
}

async fn usage(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    query: Result<Query<UsageQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    principal.require(Scope::Read)?;
    let Query(query) = query.map_err(|e| {
        ApiError::BadRequest(format!(
            "the usage report takes ?from=YYYY-MM-DD&to=YYYY-MM-DD&flow=&agent=&tenant=&limit=&offset= \
             ({e})"
        ))
    })?;
    let from = check_day("from", query.from)?;
    let to = check_day("to", query.to)?;
    if let (Some(from), Some(to)) = (&from, &to) {
        if from > to {
            return Err(ApiError::BadRequest(format!(
                "`from` ({from}) is after `to` ({to}): the report runs from the first day to the \
                 last, both included"
            )));
        }
    }
    if let Some(flow) = &query.flow {
        state.flow(flow)?;
    }
    if query.agent.as_deref() == Some("") {
        return Err(ApiError::BadRequest(
            "`agent` is empty: name an agent, or leave it out for every agent".into(),
        ));
    }
    let tenant = match query.tenant {
        // An administrator reads every tenant, or the one named.
        None if principal.allows(Scope::Admin) => None,
        Some(named) if principal.allows(Scope::Admin) => Some(named),
        Some(named) if named != tenant.0 => {
            return Err(ApiError::Forbidden(
                "the usage report shows your own tenant's usage; another tenant's needs the \
                 `admin` scope"
                    .into(),
            ))
        }
        _ => Some(tenant.0),
    };
    let Some(spending) = state.spending() else {
        return Err(ApiError::UnknownItem(
            "this server records no usage: it was built without ServerBuilder::spending".into(),
        ));
    };
    let filter = UsageFilter {
        tenant,
        from,
        to,
        flow: query.flow,
        agent: query.agent,
    };
    let limit = query.limit.unwrap_or(MAX_PAGE).clamp(1, MAX_PAGE);
    let offset = query.offset.unwrap_or(0);
    let store = spending.store();
    let unavailable = |e: agentweave_runtime::store::QueueError| {
        tracing::error!(error = %e, "the usage report could not be read");
        ApiError::StoreUnavailable
    };
    let total = store.count_usage(&filter).await.map_err(unavailable)?;
    let rows = store
        .usage(&filter, limit, offset)
        .await
        .map_err(unavailable)?;
    let next = offset.saturating_add(rows.len());
    let mut body = json!({
        "usage": rows.iter().map(row_json).collect::<Vec<_>>(),
        "total": total,
    });
    if (next as u64) < total {
        body["next_offset"] = json!(next);
    }
    Ok(Json(body))
}
