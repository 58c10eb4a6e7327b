//! [`A2aClient`]: a bounded client of one remote A2A agent's JSON-RPC endpoint.
//!
//! Every call goes through agentweave-runtime's bounded HTTP ([`HttpCall`]): a connect timeout, a
//! time to the first byte, an idle timeout between pieces, one total deadline, and size limits
//! for a whole reply and for each streamed event. A peer that never answers, streams forever,
//! sends a 100 MB part or answers something that is not A2A ends the call with an [`A2aError`]
//! saying which bound it met. A call that failed before the peer answered anything (no
//! connection, no first byte) is retried by its [`RetryPolicy`].

use std::time::Duration;

use agentweave_runtime::model::{HttpCall, HttpError, HttpLimits, RetryPolicy};
use agentweave_runtime::outbound::{OutboundError, OutboundPolicy};
use futures::stream::BoxStream;
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::rpc::{method, Request, Response, RpcError};
use crate::wire::{
    AgentCard, SendMessageRequest, SendMessageResponse, StreamResponse, Task, TaskIdParams,
};
use crate::{AGENT_CARD_PATH, PROTOCOL_VERSION, VERSION_HEADER};

/// Why a call to a remote A2A agent failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum A2aError {
    /// A timeout or size limit was met, or the connection failed.
    #[error("A2A peer {url}: {source}")]
    Http {
        /// The URL called.
        url: String,
        /// What happened.
        source: HttpError,
    },
    /// The peer answered with an HTTP error status.
    #[error("A2A peer {url} answered HTTP {status}: {body}")]
    Status {
        /// The URL called.
        url: String,
        /// The status.
        status: u16,
        /// The start of its body.
        body: String,
    },
    /// The peer answered a JSON-RPC error.
    #[error("A2A peer {url} refused the call ({code}): {source}", code = source.code())]
    Rpc {
        /// The URL called.
        url: String,
        /// The peer's error.
        source: RpcError,
    },
    /// The client's outbound policy refused the URL (an internal address, userinfo, ...).
    #[error("A2A peer refused by the outbound policy: {source}")]
    Refused {
        /// Why.
        source: OutboundError,
    },
    /// The peer answered something that is not A2A's JSON-RPC.
    #[error("A2A peer {url} answered something that is not A2A: {reason}")]
    Malformed {
        /// The URL called.
        url: String,
        /// What was wrong.
        reason: String,
    },
}

impl A2aError {
    /// Whether trying again may help: the peer was not reached or did not start answering.
    pub fn is_retryable(&self) -> bool {
        match self {
            A2aError::Http { source, .. } => matches!(
                source,
                HttpError::Connection { .. }
                    | HttpError::Timeout {
                        kind: agentweave_runtime::model::TimeoutKind::Connect
                            | agentweave_runtime::model::TimeoutKind::FirstByte,
                        ..
                    }
            ),
            A2aError::Status { status, .. } => matches!(status, 429 | 502 | 503 | 504),
            _ => false,
        }
    }
}

/// A client of one remote agent's JSON-RPC endpoint.
#[derive(Debug, Clone)]
pub struct A2aClient {
    endpoint: String,
    token: Option<String>,
    limits: HttpLimits,
    retry: RetryPolicy,
    outbound: Option<OutboundPolicy>,
    http: reqwest::Client,
}

impl A2aClient {
    /// A client of the JSON-RPC endpoint at `endpoint` with the default limits (see
    /// [`HttpLimits`]) and retry policy.
    pub fn new(endpoint: impl Into<String>) -> Result<Self, A2aError> {
        let endpoint = endpoint.into();
        let limits = HttpLimits::default();
        let http = limits.client().map_err(|source| A2aError::Http {
            url: endpoint.clone(),
            source,
        })?;
        Ok(A2aClient {
            endpoint,
            token: None,
            limits,
            retry: RetryPolicy::default(),
            outbound: None,
            http,
        })
    }

    /// Holds every call to `policy` (see `agentweave_runtime::outbound`): the endpoint and card URLs
    /// checked, names resolved through its guarded resolver on every connection, redirects
    /// only to the same origin. For an endpoint someone else chose (a card's, a caller's); an
    /// error if the endpoint is refused already.
    pub fn outbound(mut self, policy: OutboundPolicy) -> Result<Self, A2aError> {
        policy
            .check_url(&self.endpoint)
            .map_err(|source| A2aError::Refused { source })?;
        self.http = self
            .limits
            .client_within(&policy)
            .map_err(|source| A2aError::Http {
                url: self.endpoint.clone(),
                source,
            })?;
        self.outbound = Some(policy);
        Ok(self)
    }

    /// Sends `Authorization: Bearer <token>` with every call.
    pub fn bearer(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// The bounds of every call.
    pub fn limits(mut self, limits: HttpLimits) -> Result<Self, A2aError> {
        let client = match &self.outbound {
            Some(policy) => limits.client_within(policy),
            None => limits.client(),
        };
        self.http = client.map_err(|source| A2aError::Http {
            url: self.endpoint.clone(),
            source,
        })?;
        self.limits = limits;
        Ok(self)
    }

    /// How calls that failed before the peer answered are retried.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The endpoint's URL.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Fetches the agent card at `base` + `/.well-known/agent-card.json` (`base` is the
    /// agent's URL; a URL already ending in `.json` is taken as the card's own).
    pub async fn fetch_card(&self, base: &str) -> Result<AgentCard, A2aError> {
        let url = if base.ends_with(".json") {
            base.to_owned()
        } else {
            format!("{}{AGENT_CARD_PATH}", base.trim_end_matches('/'))
        };
        if let Some(policy) = &self.outbound {
            policy
                .check_url(&url)
                .map_err(|source| A2aError::Refused { source })?;
        }
        let call = HttpCall::start(&self.limits);
        let response = self
            .with_retries(&url, || self.authorized(self.http.get(&url)), &call)
            .await?;
        let body = call.body(response).await.map_err(|source| A2aError::Http {
            url: url.clone(),
            source,
        })?;
        serde_json::from_slice(&body).map_err(|e| A2aError::Malformed {
            url,
            reason: format!("the agent card does not read: {e}"),
        })
    }

    /// `SendMessage`: the task (or message) the peer answers with.
    pub async fn send_message(
        &self,
        request: &SendMessageRequest,
    ) -> Result<SendMessageResponse, A2aError> {
        self.call(method::SEND_MESSAGE, request).await
    }

    /// `GetTask`.
    pub async fn get_task(&self, id: &str) -> Result<Task, A2aError> {
        let params = TaskIdParams {
            id: id.into(),
            ..TaskIdParams::default()
        };
        self.call(method::GET_TASK, &params).await
    }

    /// `CancelTask`.
    pub async fn cancel_task(&self, id: &str) -> Result<Task, A2aError> {
        let params = TaskIdParams {
            id: id.into(),
            ..TaskIdParams::default()
        };
        self.call(method::CANCEL_TASK, &params).await
    }

    /// `SendStreamingMessage`: the peer's updates as they come, each under the limits; the
    /// first error ends the stream.
    pub async fn send_streaming(
        &self,
        request: &SendMessageRequest,
    ) -> Result<BoxStream<'static, Result<StreamResponse, A2aError>>, A2aError> {
        let body = Request::new(new_request_id(), method::SEND_STREAMING_MESSAGE, request);
        let call = HttpCall::start(&self.limits);
        let url = self.endpoint.clone();
        let response = self
            .with_retries(
                &url,
                || {
                    self.authorized(self.http.post(&url))
                        .header(reqwest::header::ACCEPT, "text/event-stream")
                        .json(&body)
                },
                &call,
            )
            .await?;
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse {
            // An error answered at once as one JSON-RPC response.
            let bytes = call.body(response).await.map_err(|source| A2aError::Http {
                url: url.clone(),
                source,
            })?;
            let result: Result<StreamResponse, A2aError> = decode(&url, &bytes);
            return Ok(futures::stream::iter([result]).boxed());
        }
        let events = call.events(response);
        let stream = events.map(move |event| match event {
            Ok(e) => decode::<StreamResponse>(&url, e.data.as_bytes()),
            Err(source) => Err(A2aError::Http {
                url: url.clone(),
                source,
            }),
        });
        // The first error ends the stream.
        let stream = stream.scan(false, |failed, item| {
            let out = if *failed {
                None
            } else {
                *failed = item.is_err();
                Some(item)
            };
            futures::future::ready(out)
        });
        Ok(stream.boxed())
    }

    /// One non-streaming call.
    async fn call<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<R, A2aError> {
        let body = Request::new(new_request_id(), method, params);
        let call = HttpCall::start(&self.limits);
        let url = self.endpoint.clone();
        let response = self
            .with_retries(
                &url,
                || self.authorized(self.http.post(&url)).json(&body),
                &call,
            )
            .await?;
        let bytes = call.body(response).await.map_err(|source| A2aError::Http {
            url: url.clone(),
            source,
        })?;
        decode(&url, &bytes)
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let request = request.header(VERSION_HEADER, PROTOCOL_VERSION);
        match &self.token {
            Some(t) => request.bearer_auth(t),
            None => request,
        }
    }

    /// Sends the request `make` builds, retrying what [`A2aError::is_retryable`] allows; an
    /// HTTP error status is an error (its body cut at the error body limit).
    async fn with_retries(
        &self,
        url: &str,
        make: impl Fn() -> reqwest::RequestBuilder,
        call: &HttpCall,
    ) -> Result<reqwest::Response, A2aError> {
        let mut attempt = 0;
        loop {
            let e = match call.send(make()).await {
                Ok(r) if r.status().is_success() => return Ok(r),
                Ok(r) => A2aError::Status {
                    url: url.to_owned(),
                    status: r.status().as_u16(),
                    body: call.error_body(r).await,
                },
                Err(source) => A2aError::Http {
                    url: url.to_owned(),
                    source,
                },
            };
            if attempt >= self.retry.max_retries || !e.is_retryable() {
                return Err(e);
            }
            tokio::time::sleep(backoff(&self.retry, attempt)).await;
            attempt += 1;
        }
    }
}

/// The wait before retry `retry` (from 0).
fn backoff(policy: &RetryPolicy, retry: u32) -> Duration {
    let factor = policy.multiplier.max(1.0).powi(retry as i32);
    policy
        .initial_backoff
        .mul_f64(factor)
        .min(policy.max_backoff)
}

fn new_request_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The `result` of a JSON-RPC response as `R`, or the error it carries.
fn decode<R: DeserializeOwned>(url: &str, bytes: &[u8]) -> Result<R, A2aError> {
    let malformed = |reason: String| A2aError::Malformed {
        url: url.to_owned(),
        reason,
    };
    let response: Response = serde_json::from_slice(bytes)
        .map_err(|e| malformed(format!("not a JSON-RPC response: {e}")))?;
    if response.jsonrpc != "2.0" {
        return Err(malformed("not a JSON-RPC 2.0 response".into()));
    }
    match (response.result, response.error) {
        (_, Some(error)) => Err(A2aError::Rpc {
            url: url.to_owned(),
            source: RpcError::from_object(&error),
        }),
        (Some(result), None) => serde_json::from_value(result)
            .map_err(|e| malformed(format!("the result does not read: {e}"))),
        (None, None) => Err(malformed("a response with neither result nor error".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_that_are_not_jsonrpc_are_malformed() {
        for body in [
            &b"<html>hello</html>"[..],
            br#"{"jsonrpc": "1.0", "result": {}}"#,
            br#"{"jsonrpc": "2.0", "id": 1}"#,
            br#"{"jsonrpc": "2.0", "id": 1, "result": {"status": 7}}"#,
        ] {
            let e = decode::<Task>("http://peer", body).unwrap_err();
            assert!(matches!(e, A2aError::Malformed { .. }), "{e}");
            assert!(!e.is_retryable());
        }
        let e = decode::<Task>(
            "http://peer",
            br#"{"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "gone"}}"#,
        )
        .unwrap_err();
        assert!(matches!(
            e,
            A2aError::Rpc {
                source: RpcError::TaskNotFound(_),
                ..
            }
        ));
    }

    #[test]
    fn backoff_grows_to_its_cap() {
        let p = RetryPolicy::new(5)
            .initial_backoff(Duration::from_millis(100))
            .max_backoff(Duration::from_millis(250));
        assert_eq!(backoff(&p, 0), Duration::from_millis(100));
        assert_eq!(backoff(&p, 1), Duration::from_millis(200));
        assert_eq!(backoff(&p, 2), Duration::from_millis(250));
    }
}
