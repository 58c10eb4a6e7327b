//! One access-log line per request, at INFO (target `agentweave_server::access`): a request id
//! (also sent back as `x-request-id`), the method, the path (no query string), the status,
//! the time taken and the principal's id. Never a body, a header or a token.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

/// The id of the request being served, in its extensions (handlers put it on the spans they
/// open, e.g. a turn's).
#[derive(Debug, Clone)]
pub struct RequestId(pub Arc<str>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for RequestId {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<RequestId>()
            .cloned()
            .unwrap_or_else(|| RequestId("-".into())))
    }
}

/// Where the auth layer leaves the principal's id for the access log.
#[derive(Debug, Clone, Default)]
pub(crate) struct PrincipalSlot(pub(crate) Arc<Mutex<Option<Arc<str>>>>);

/// The access-log middleware (outermost layer of the router).
pub(crate) async fn access_log(mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let id: Arc<str> = crate::outward::correlation_id().into();
    let slot = PrincipalSlot::default();
    request.extensions_mut().insert(RequestId(Arc::clone(&id)));
    request.extensions_mut().insert(slot.clone());
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let mut response = next.run(request).await;
    let principal = slot.0.lock().expect("principal slot").clone();
    tracing::info!(
        target: "agentweave_server::access",
        request_id = %id,
        method = %method,
        path = %path,
        status = response.status().as_u16(),
        ms = started.elapsed().as_millis() as u64,
        principal = principal.as_deref().unwrap_or("-"),
        "request"
    );
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}
