//! Webhooks: a run may name a URL to be told of its end. When the run ends, the server POSTs
//! its outcome as JSON to the URL, signed: `X-Agentflow-Timestamp` carries the Unix time in
//! seconds and `X-Agentflow-Signature` is `sha256=` and the hex HMAC-SHA256, under the server's
//! webhook secret ([`ServerBuilder::webhook_secret`](crate::ServerBuilder::webhook_secret)), of
//! `TIMESTAMP.BODY`. A receiver recomputes it and refuses old timestamps.
//!
//! Delivery follows the server's outbound policy
//! ([`ServerBuilder::outbound`](crate::ServerBuilder::outbound), strict by default; see
//! `agentweave_runtime::outbound`): only
//! `http(s)` URLs without userinfo, never to a loopback, private, link-local, multicast or
//! unspecified address (checked when the run is created for address literals, and after DNS on
//! every connection), redirects only to the same origin, headers from an allow-list, a connect
//! and total timeout, and a bound on one tenant's deliveries in flight and waiting. Then at
//! most [`ATTEMPTS`] attempts with a doubling backoff from half a second, a body of at most
//! [`MAX_BODY`] bytes. Any 2xx answer ends it; the answer's body is not read.

use std::time::Duration;

use agentweave_runtime::outbound::OutboundPolicy;
use agentweave_runtime::RunHandle;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::error::ApiError;

/// Attempts per delivery.
pub const ATTEMPTS: u32 = 5;
/// The largest body sent; a bigger outcome is sent without its output.
pub const MAX_BODY: usize = 256 * 1024;

/// A webhook URL, checked against `policy` (`http(s)`, a host, no userinfo, no refused
/// address literal).
pub(crate) fn check_url(policy: &OutboundPolicy, url: &str) -> Result<reqwest::Url, ApiError> {
    policy
        .check_url(url)
        .map_err(|e| ApiError::BadRequest(format!("the webhook is refused: {e}")))
}

/// The tenant of a thread's store id (`flow.tenant.thread`).
pub(crate) fn tenant_of(store_id: &str) -> &str {
    store_id.split('.').nth(1).unwrap_or_default()
}

/// The signature header's value for `body` sent at `timestamp` under `secret`.
pub fn signature(secret: &[u8], timestamp: u64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let bytes = mac.finalize().into_bytes();
    let mut out = String::from("sha256=");
    for b in bytes {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// When `run` ends, delivers `outcome_of(run)` to `url` (see the module documentation).
pub(crate) fn after(
    policy: OutboundPolicy,
    tenant: String,
    run: RunHandle,
    url: reqwest::Url,
    secret: Vec<u8>,
    outcome_of: impl FnOnce(&RunHandle) -> Value + Send + 'static,
) {
    tokio::spawn(async move {
        run.wait().await;
        let mut body = serde_json::to_vec(&outcome_of(&run)).unwrap_or_default();
        if body.len() > MAX_BODY {
            body = serde_json::to_vec(&json!({
                "run_id": run.id(),
                "status": run.status().as_str(),
                "truncated": true,
            }))
            .unwrap_or_default();
        }
        deliver(&policy, &tenant, url, &secret, body, Vec::new(), run.id()).await;
    });
}

/// Delivers `outcome` (a run's outcome as JSON, with its `run_id` and `status`) to `url`
/// from a task of its own: what a queued run's end sends, from the process that ended it.
pub(crate) fn send(
    policy: OutboundPolicy,
    tenant: String,
    url: reqwest::Url,
    secret: Vec<u8>,
    outcome: Value,
) {
    tokio::spawn(async move {
        let run_id = outcome["run_id"].as_str().unwrap_or_default().to_owned();
        let mut body = serde_json::to_vec(&outcome).unwrap_or_default();
        if body.len() > MAX_BODY {
            body = serde_json::to_vec(&json!({
                "run_id": run_id,
                "status": outcome["status"],
                "truncated": true,
            }))
            .unwrap_or_default();
        }
        deliver(&policy, &tenant, url, &secret, body, Vec::new(), &run_id).await;
    });
}

/// Posts `body` (JSON) to `url`, signed under `secret` (see the module documentation), with
/// the extra `headers`, within `policy` and one of `tenant`'s delivery places; `what` names
/// the delivery in the log. `credentials` says the headers carry the caller's own
/// credentials: then none of the operator's exceptions to the policy apply. Gives up quietly
/// (logged) after [`ATTEMPTS`] attempts, or at once when the policy refuses.
pub(crate) async fn deliver(
    policy: &OutboundPolicy,
    tenant: &str,
    url: reqwest::Url,
    secret: &[u8],
    body: Vec<u8>,
    headers: Vec<(&'static str, String)>,
    what: &str,
) {
    let credentials = headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
    let strict;
    let policy = if credentials {
        if let Err(e) = policy.check_credentials_to(&url) {
            tracing::error!(run = what, error = %e, "webhook refused by the outbound policy");
            return;
        }
        strict = policy.without_exceptions();
        &strict
    } else {
        policy
    };
    if let Some(Err(e)) = headers
        .iter()
        .map(|(name, _)| policy.check_header(name))
        .find(Result::is_err)
    {
        tracing::error!(run = what, error = %e, "webhook refused by the outbound policy");
        return;
    }
    let client = match policy.client() {
        Ok(client) => client,
        Err(e) => {
            tracing::error!(error = %e, "could not build the webhook client");
            return;
        }
    };
    // One of the tenant's places, held through every attempt.
    let _place = match policy.delivery(tenant).await {
        Ok(place) => place,
        Err(e) => {
            tracing::error!(run = what, error = %e, "webhook dropped");
            return;
        }
    };
    let mut wait = Duration::from_millis(500);
    for attempt in 1..=ATTEMPTS {
        let timestamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut request = client
            .post(url.clone())
            .header("content-type", "application/json")
            .header("x-agentflow-timestamp", timestamp.to_string())
            .header("x-agentflow-signature", signature(secret, timestamp, &body));
        for (name, value) in &headers {
            request = request.header(*name, value);
        }
        match request.body(body.clone()).send().await {
            Ok(r) if r.status().is_success() => return,
            Ok(r) => {
                tracing::warn!(
                    run = what,
                    attempt,
                    status = r.status().as_u16(),
                    "webhook refused"
                )
            }
            Err(e) => {
                let refused = std::error::Error::source(&e).and_then(|mut cause| loop {
                    if let Some(refused) =
                        cause.downcast_ref::<agentweave_runtime::outbound::OutboundError>()
                    {
                        break Some(refused.to_string());
                    }
                    cause = cause.source()?;
                });
                if let Some(refused) = refused {
                    // A refused address is refused again on every attempt.
                    tracing::error!(run = what, error = %refused, "webhook refused by the outbound policy");
                    return;
                }
                tracing::warn!(run = what, attempt, error = %e, "webhook failed")
            }
        }
        if attempt < ATTEMPTS {
            tokio::time::sleep(wait).await;
            wait *= 2;
        }
    }
    tracing::error!(
        run = what,
        "webhook not delivered after {ATTEMPTS} attempts"
    );
}
