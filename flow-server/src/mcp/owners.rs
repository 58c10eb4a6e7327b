//! Each MCP session belongs to the principal (and tenant) that opened it: a layer in front of
//! rmcp's transport remembers who opened each session (from the `Mcp-Session-Id` of the
//! `initialize` answer) and refuses (403) any request of the session by anyone else, whatever
//! its method: a `POST` (a call, or an answer to an elicitation), the `GET` stream, a `DELETE`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::auth::Tenant;
use crate::error::ApiError;
use crate::principal::Principal;

/// The header naming a request's session.
const SESSION_HEADER: &str = "mcp-session-id";

/// Who opened each live session, and when it was last used.
#[derive(Clone, Default)]
pub(crate) struct Owners(Arc<Mutex<HashMap<String, Owner>>>);

struct Owner {
    principal: Arc<str>,
    tenant: String,
    seen: Instant,
}

impl Owners {
    /// Forgets sessions idle longer than rmcp keeps them (their transport closed them).
    fn prune(map: &mut HashMap<String, Owner>) {
        let idle = super::SESSION_IDLE + std::time::Duration::from_secs(60);
        map.retain(|_, owner| owner.seen.elapsed() < idle);
    }
}

/// The layer: refuses a session's request by another principal or tenant; records the owner
/// of a session an `initialize` opened; forgets a session its owner deleted.
pub(crate) async fn guard(State(owners): State<Owners>, request: Request, next: Next) -> Response {
    let caller = request
        .extensions()
        .get::<Principal>()
        .map(|p| Arc::<str>::from(p.id()))
        .zip(request.extensions().get::<Tenant>().map(|t| t.0.clone()));
    let Some((principal, tenant)) = caller else {
        tracing::error!("the MCP endpoint is mounted outside the auth layer");
        return ApiError::Unauthorized.into_response();
    };
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(id) = &session {
        let mut map = owners.0.lock().expect("MCP session owners");
        if let Some(owner) = map.get_mut(id) {
            if owner.principal != principal || owner.tenant != tenant {
                return ApiError::Forbidden(
                    "this MCP session was opened by another principal: open a session of your \
                     own (initialize without an Mcp-Session-Id)"
                        .into(),
                )
                .into_response();
            }
            owner.seen = Instant::now();
        }
    }
    let deleting = request.method() == axum::http::Method::DELETE;
    let response = next.run(request).await;
    let mut map = owners.0.lock().expect("MCP session owners");
    match session {
        Some(id) if deleting && response.status().is_success() => {
            map.remove(&id);
        }
        Some(_) => {}
        None => {
            if let Some(opened) = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
            {
                Owners::prune(&mut map);
                map.insert(
                    opened.to_owned(),
                    Owner {
                        principal,
                        tenant,
                        seen: Instant::now(),
                    },
                );
            }
        }
    }
    response
}
