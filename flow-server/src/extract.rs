//! The request extractors of the handlers: [`JsonBody`] and [`ApiPath`]. Unlike axum's own,
//! every way they fail is an [`ApiError`] (JSON, with a stable code), and a body gets a time
//! limit as well as a size limit.

use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::state::AppState;

/// A JSON request body: `Content-Type: application/json` (415 otherwise), at most
/// [`Limits::max_body_bytes`](crate::Limits::max_body_bytes) (413), arrived within
/// [`Limits::body_read_timeout`](crate::Limits::body_read_timeout) (408), a JSON object of the
/// handler's type (400 with serde's account of what is wrong and where).
pub(crate) struct JsonBody<T>(pub T);

impl<T: DeserializeOwned + Send> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let limits = state.limits();
        let json = request
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|mime| {
                let mime = mime.trim();
                mime.eq_ignore_ascii_case("application/json")
                    || (mime.len() > 5
                        && mime[..mime.len() - 5].contains('/')
                        && mime[mime.len() - 5..].eq_ignore_ascii_case("+json"))
            });
        if !json {
            return Err(ApiError::UnsupportedMediaType);
        }
        refuse_announced_past(request.headers(), limits.max_body_bytes)?;
        let bytes = read_body(request.into_body(), limits.max_body_bytes);
        let bytes = match tokio::time::timeout(limits.body_read_timeout, bytes).await {
            Ok(result) => result?,
            Err(_) => {
                return Err(ApiError::RequestTimeout {
                    limit: limits.body_read_timeout,
                })
            }
        };
        // serde would also take a struct from a JSON array of its fields in order: the API
        // takes objects only.
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(ApiError::BadRequest(
                "the body is not the JSON this endpoint takes: it must be a JSON object".into(),
            ));
        }
        serde_json::from_slice(&bytes).map(JsonBody).map_err(|e| {
            ApiError::BadRequest(format!("the body is not the JSON this endpoint takes: {e}"))
        })
    }
}

/// A body announced (`Content-Length`) past `limit` is refused at once (413), without waiting
/// for it: a client that announces 10 MB and stalls gets its answer now, not a 408 when the
/// body timeout runs out. Every reader of a request body calls it first.
pub(crate) fn refuse_announced_past(
    headers: &axum::http::HeaderMap,
    limit: usize,
) -> Result<(), ApiError> {
    let announced = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match announced {
        Some(n) if n > limit as u64 => Err(ApiError::PayloadTooLarge { limit }),
        _ => Ok(()),
    }
}

pub(crate) async fn read_body(body: Body, limit: usize) -> Result<axum::body::Bytes, ApiError> {
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            Err(ApiError::PayloadTooLarge { limit })
        }
        Err(e) => {
            tracing::debug!(error = %e, "a request body could not be read");
            Err(ApiError::BadRequest(
                "the request body could not be read to its end".into(),
            ))
        }
    }
}

/// The path's parameters; a path that does not decode (bad percent-encoding, not UTF-8) is a
/// 400 whose message does not repeat it.
pub(crate) struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(v)) => Ok(ApiPath(v)),
            Err(e) => {
                tracing::debug!(error = %e, "a request path did not decode");
                Err(ApiError::BadRequest(
                    "the path does not decode: flow names and thread ids are ASCII letters, \
                     digits, '_' and '-'"
                        .into(),
                ))
            }
        }
    }
}
