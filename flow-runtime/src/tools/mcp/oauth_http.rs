//! The OAuth requests of an HTTP MCP server held to its outbound policy
//! ([`McpServerConfig::outbound`](super::McpServerConfig::outbound)): discovery, registration
//! and token requests go where discovered metadata points (URLs the MCP server, or whoever
//! controls its metadata, chose), so they get the policy's checks as the MCP requests do: the
//! URL checked before sending, every name resolved through the policy's guarded resolver (a
//! name that resolves to a refused address is never connected to), no proxy, redirects only to
//! the same origin when the SDK asks for them followed, the policy's timeouts, and answers
//! bounded to 1 MiB as read.

use std::sync::Mutex;

use oauth2::HttpResponse;
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};

use crate::outbound::OutboundPolicy;

/// The most an OAuth answer may hold (metadata, a registration, tokens).
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// The SDK's OAuth HTTP client, held to an outbound policy.
pub(super) struct PolicyOAuthHttp {
    policy: OutboundPolicy,
    /// Why the last request that failed failed, with its causes (the SDK's errors say which
    /// step failed but not why: a refused address is told through this).
    last_failure: Mutex<Option<String>>,
    /// Follows same-origin redirects (the policy's rule).
    follow: reqwest013::Client,
    /// Follows none (the SDK reads the redirect itself).
    stop: reqwest013::Client,
}

impl PolicyOAuthHttp {
    pub(super) fn new(policy: &OutboundPolicy) -> Result<Self, reqwest013::Error> {
        let build = |redirects| {
            super::guarded::guarded_builder(policy)
                .redirect(redirects)
                .timeout(policy.total_limit())
                .build()
        };
        Ok(PolicyOAuthHttp {
            policy: policy.clone(),
            last_failure: Mutex::new(None),
            follow: build(super::guarded::same_origin_redirects())?,
            stop: build(reqwest013::redirect::Policy::none())?,
        })
    }
}

impl PolicyOAuthHttp {
    /// Why the last failed request failed (taken: each failure is told once).
    pub(super) fn take_failure(&self) -> Option<String> {
        self.last_failure.lock().ok()?.take()
    }

    async fn send(&self, request: OAuthHttpRequest) -> Result<HttpResponse, OAuthHttpClientError> {
        let OAuthHttpRequest {
            request,
            redirect_policy,
            ..
        } = request;
        // Refused before any connection: a URL the policy does not send to.
        self.policy
            .check_url(&request.uri().to_string())
            .map_err(|e| Box::new(e) as OAuthHttpClientError)?;
        let client = match redirect_policy {
            OAuthHttpRedirectPolicy::Stop => &self.stop,
            _ => &self.follow,
        };
        let request = reqwest013::Request::try_from(request)
            .map_err(|e| Box::new(e) as OAuthHttpClientError)?;
        let response = client
            .execute(request)
            .await
            .map_err(|e| Box::new(e) as OAuthHttpClientError)?;
        let mut answer = oauth2::http::Response::builder()
            .status(response.status())
            .version(response.version());
        for (name, value) in response.headers() {
            answer = answer.header(name, value);
        }
        let body = super::guarded::bounded_body(response, MAX_ANSWER_BYTES).await?;
        answer
            .body(body)
            .map_err(|e| Box::new(e) as OAuthHttpClientError)
    }
}

impl OAuthHttpClient for PolicyOAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let url = request.request.uri().to_string();
            let sent = self.send(request).await;
            if let Err(e) = &sent {
                let why = format!("{url} failed: {}", super::guarded::with_causes(e.as_ref()));
                if let Ok(mut last) = self.last_failure.lock() {
                    *last = Some(why);
                }
            }
            sent
        })
    }
}
