//! [`ApiError`]: every way a request can fail, as one JSON response.

use agentweave_runtime::store::Refusal;
use agentweave_runtime::{CheckpointError, StoreError, ThreadError};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::outward::{PublicCode, PublicError};

/// A failed request. Each variant has one status code and a stable `code` string; the response
/// body is `{"error": {"code": "...", "message": "..."}}`.
///
/// Messages say what went wrong and what to do; they never carry a stack trace, a file path of
/// the server or the text of an I/O error (those go to the server's `tracing` log instead).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// No credentials, or wrong ones (401).
    #[error("missing or invalid credentials: send `Authorization: Bearer <token>`")]
    Unauthorized,
    /// The caller is known but may not do this (403).
    #[error("{0}")]
    Forbidden(String),
    /// No flow of that name is served (404).
    #[error("no flow named '{name}' is served here; GET /v1/flows lists the flows")]
    UnknownFlow {
        /// The name asked for.
        name: String,
    },
    /// The thread does not exist (for this caller) (404).
    #[error("thread '{id}' of flow '{flow}' does not exist")]
    UnknownThread {
        /// The flow.
        flow: String,
        /// The thread id.
        id: String,
    },
    /// The checkpoint of an interrupt does not exist, or is not this caller's (404). The
    /// message does not name the checkpoint: its id is a store key.
    #[error("no pending interrupt is saved for this thread")]
    UnknownCheckpoint {
        /// The checkpoint id (kept for the server's code, never sent).
        id: String,
    },
    /// No run of that id is known on this thread (for this caller), or it was forgotten
    /// after its retention (404).
    #[error("no run '{id}' is known on this thread; GET .../runs lists the thread's runs")]
    UnknownRun {
        /// The run id asked for.
        id: String,
    },
    /// A `Last-Event-ID` that the run never gave (400).
    #[error("{0}")]
    UnknownEvent(String),
    /// The run's events after the given id are no longer kept (410).
    #[error("{0}")]
    EventExpired(String),
    /// The run has ended: there is nothing to cancel (409).
    #[error("{0}")]
    RunEnded(String),
    /// The request is malformed: a bad id, a missing field, an unknown interrupt (400).
    #[error("{0}")]
    BadRequest(String),
    /// The request body is larger than [`Limits::max_body_bytes`](crate::Limits) (413).
    #[error("the request body is larger than this server accepts ({limit} bytes)")]
    PayloadTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// No long-term memory item at that address for this caller, or no memory served (404).
    #[error("{0}")]
    UnknownItem(String),
    /// No route matches the request (404).
    #[error("no such endpoint; GET /v1/flows lists the served flows, and the guide's chapter \"Runs and the server\" lists the endpoints")]
    NoRoute,
    /// The route exists but not with this method (405).
    #[error(
        "this endpoint does not take this method; the crate's documentation lists its methods"
    )]
    MethodNotAllowed,
    /// The body is not declared as JSON (415).
    #[error("send the body as JSON, with `Content-Type: application/json`")]
    UnsupportedMediaType,
    /// The body did not arrive within [`Limits::body_read_timeout`](crate::Limits) (408).
    #[error(
        "the request body did not arrive within {} ms (Limits::body_read_timeout)",
        limit.as_millis()
    )]
    RequestTimeout {
        /// The limit.
        limit: std::time::Duration,
    },
    /// The server is at one of its capacity limits (503, with `Retry-After: 1`): too many open
    /// connections or turns at once. Nothing ran; try again.
    #[error("the server is at its limit of {limit} {what} (Limits); try again shortly")]
    Overloaded {
        /// What is at its limit (`open connections`, `concurrent turns`).
        what: &'static str,
        /// The limit.
        limit: usize,
    },
    /// The caller's tenant is at one of its limits on runs (429 `too_many_runs`, with
    /// `Retry-After`): too many runs running, or waiting behind others on their threads. Nothing
    /// ran; send again when one of the tenant's runs has ended.
    #[error(
        "your tenant is at its limit of {limit} {what} (Limits::{field}); send again when one \
         of them has ended"
    )]
    TooManyRuns {
        /// What is at its limit (`running threads`, `waiting runs`).
        what: &'static str,
        /// The `Limits` field.
        field: &'static str,
        /// The limit.
        limit: usize,
    },
    /// The request conflicts with the state of the thread or checkpoint (409): a turn on a
    /// thread that waits for an approval, an interrupt that was already resumed.
    #[error("{0}")]
    Conflict(String),
    /// A turn or run of the thread is still running (409 `busy`, with `Retry-After: 1`): send
    /// again in a moment (or start a background run with a double-texting strategy).
    #[error("{0}")]
    Busy(String),
    /// An `Idempotency-Key` (or A2A `messageId`, AG-UI `runId`) was sent again with another
    /// request than the one it first came with (422 `idempotency_key_reused`, as the IETF
    /// draft on the `Idempotency-Key` header says): nothing ran. Use a new key for a new
    /// request.
    #[error(
        "this {what} was first sent with another request (another route or body); nothing \
         ran: send a new key for a new request, or the first request again unchanged to get \
         its run"
    )]
    IdempotencyKeyReused {
        /// What carried the key (`Idempotency-Key`, `messageId`, `runId`).
        what: &'static str,
    },
    /// The request reads, but asks for something this server does not serve in that form
    /// (422 `unprocessable`): a LangGraph stream mode it does not know, for one.
    #[error("{0}")]
    Unprocessable(String),
    /// The store failed; details are in the server's log (503).
    #[error("the store is unavailable; try again later")]
    StoreUnavailable,
    /// Something failed inside the server; details are in the server's log (500).
    #[error("internal error; the server's log has the details")]
    Internal,
    /// Something failed inside the server or its store, public face: the body carries the
    /// [`PublicError`]'s code, message and correlation id, and the internal error is in the
    /// server's log under the same id (503 for [`PublicCode::StoreUnavailable`], 500 otherwise).
    #[error("{0}")]
    Incident(PublicError),
}

impl ApiError {
    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::UnknownFlow { .. }
            | ApiError::UnknownThread { .. }
            | ApiError::UnknownCheckpoint { .. } => StatusCode::NOT_FOUND,
            ApiError::UnknownRun { .. } => StatusCode::NOT_FOUND,
            ApiError::UnknownEvent(_) => StatusCode::BAD_REQUEST,
            ApiError::EventExpired(_) => StatusCode::GONE,
            ApiError::RunEnded(_) => StatusCode::CONFLICT,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::NoRoute | ApiError::UnknownItem(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::RequestTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            ApiError::Overloaded { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::TooManyRuns { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Conflict(_) | ApiError::Busy(_) => StatusCode::CONFLICT,
            ApiError::IdempotencyKeyReused { .. } | ApiError::Unprocessable(_) => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            ApiError::StoreUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Incident(e) => match e.code {
                PublicCode::StoreUnavailable => StatusCode::SERVICE_UNAVAILABLE,
                PublicCode::Conflict => StatusCode::CONFLICT,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            },
        }
    }

    /// The stable machine-readable code of this error (`unauthorized`, `unknown_flow`, ...).
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Unauthorized => "unauthorized",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::UnknownFlow { .. } => "unknown_flow",
            ApiError::UnknownThread { .. } => "unknown_thread",
            ApiError::UnknownCheckpoint { .. } => "unknown_checkpoint",
            ApiError::UnknownRun { .. } => "unknown_run",
            ApiError::UnknownEvent(_) => "unknown_event",
            ApiError::EventExpired(_) => "event_expired",
            ApiError::RunEnded(_) => "run_ended",
            ApiError::BadRequest(_) => "bad_request",
            ApiError::PayloadTooLarge { .. } => "payload_too_large",
            ApiError::NoRoute => "no_route",
            ApiError::UnknownItem(_) => "unknown_item",
            ApiError::MethodNotAllowed => "method_not_allowed",
            ApiError::UnsupportedMediaType => "unsupported_media_type",
            ApiError::RequestTimeout { .. } => "request_timeout",
            ApiError::Overloaded { .. } => "overloaded",
            ApiError::TooManyRuns { .. } => "too_many_runs",
            ApiError::Conflict(_) => "conflict",
            ApiError::Busy(_) => "busy",
            ApiError::IdempotencyKeyReused { .. } => "idempotency_key_reused",
            ApiError::Unprocessable(_) => "unprocessable",
            ApiError::StoreUnavailable => "store_unavailable",
            ApiError::Internal => "internal",
            ApiError::Incident(e) => e.code.as_str(),
        }
    }

    /// The JSON body of this error.
    pub fn body(&self) -> serde_json::Value {
        match self {
            ApiError::Incident(e) => json!({ "error": {
                "code": e.code,
                "message": e.message,
                "correlation_id": e.correlation_id,
            } }),
            _ => json!({ "error": { "code": self.code(), "message": self.to_string() } }),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status(), Json(self.body())).into_response();
        let headers = response.headers_mut();
        match self {
            // RFC 6750: say which scheme the API takes.
            ApiError::Unauthorized => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"agentflow\""),
                );
            }
            ApiError::TooManyRuns { .. } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            }
            ApiError::Overloaded { .. } | ApiError::Busy(_) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            _ => {}
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::InvalidId { id } => {
                ApiError::BadRequest(format!("'{id}' is not a valid id"))
            }
            other => {
                ApiError::Incident(PublicError::new(PublicCode::StoreUnavailable, &other, None))
            }
        }
    }
}

impl From<CheckpointError> for ApiError {
    fn from(e: CheckpointError) -> Self {
        match e {
            CheckpointError::NotFound { id } => ApiError::UnknownCheckpoint { id },
            // Checkpoint ids are store keys (`FLOW.TENANT.THREAD...`): never in a message.
            CheckpointError::AlreadyResumed { .. } => ApiError::Conflict(
                "this interrupt was already resumed (or is being resumed); it runs only once"
                    .into(),
            ),
            CheckpointError::UnknownInterrupt {
                interrupt, known, ..
            } => ApiError::BadRequest(format!(
                "the thread waits for no interrupt '{interrupt}'; its interrupts: {known}"
            )),
            CheckpointError::ShapeChanged { .. } => ApiError::Conflict(
                "the interrupt was saved by a flow of another shape and cannot be resumed by \
                 this one"
                    .into(),
            ),
            CheckpointError::Store(e) => e.into(),
            other => {
                tracing::error!(error = %other, "checkpoint unusable");
                ApiError::Conflict("the saved checkpoint cannot be used".into())
            }
        }
    }
}

impl From<ThreadError> for ApiError {
    fn from(e: ThreadError) -> Self {
        match e {
            ThreadError::InvalidId { .. } => ApiError::BadRequest(
                "a thread id is 1 to 40 characters of A-Z, a-z, 0-9, '_' or '-'".into(),
            ),
            ThreadError::Busy { .. } => ApiError::Busy(
                "a turn of this thread is running; send again when it has ended (Retry-After)"
                    .into(),
            ),
            ThreadError::RunsGoing { runs, run_id, .. } => ApiError::Busy(format!(
                "this thread has {runs} run(s) waiting or running (the oldest: '{run_id}'); \
                 cancel them (POST .../runs/{{run}}/cancel) or wait for them to end (GET \
                 .../runs/{{run}}/wait), then send again; the thread's runs list shows them, \
                 a page of 100 at a time, oldest first"
            )),
            ThreadError::Conflict { .. } => ApiError::Conflict(
                "another turn of this thread was recorded while this one started; send the \
                 message again"
                    .into(),
            ),
            ThreadError::AwaitingResume { interrupts, .. } => ApiError::Conflict(format!(
                "this thread waits for interrupt(s) {interrupts}: resume it (POST .../resume) \
                 before the next turn"
            )),
            ThreadError::NotInterrupted { .. } => ApiError::Conflict(
                "this thread waits for no interrupt (it may have been resumed already)".into(),
            ),
            ThreadError::LeaseLost { .. } => ApiError::Conflict(
                "this turn went silent past its lease and another turn took the thread over; \
                 send the message again"
                    .into(),
            ),
            ThreadError::Checkpoint(e) => e.into(),
            ThreadError::Store(e) => e.into(),
            // The engine's authority: refused answers are 403 `forbidden`, in the words
            // `Principal::require` uses (scopes are the grants).
            ThreadError::Forbidden { refusal, .. } => ApiError::Forbidden(match refusal {
                Refusal::MissingGrant { grant, .. } => {
                    format!("this needs the `{grant}` scope, which your credentials do not have")
                }
                Refusal::OwnRequest { .. } => "this flow needs the approval of someone other \
                                               than the person who made the request"
                    .into(),
                _ => "answering an interrupt needs an authenticated principal".into(),
            }),
            other => ApiError::Incident(PublicError::internal(&other)),
        }
    }
}
