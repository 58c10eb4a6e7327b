//! Webhooks: a run may name a URL to be told of its end. When the run ends, the server POSTs
//! its outcome as JSON to the URL, signed: `X-Agentflow-Timestamp` carries the Unix time in
//! seconds and `X-Agentflow-Signature` is `sha256=` and the hex HMAC-SHA256, under the server's
//! webhook secret ([`ServerBuilder::webhook_secret`](crate::ServerBuilder::webhook_secret)), of
//! `TIMESTAMP.BODY`. A receiver recomputes it and refuses old timestamps.
//!
//! Delivery is bounded: only `http` and `https` URLs (checked when the run is created), at most
//! [`ATTEMPTS`] attempts with a doubling backoff from half a second, each within ten seconds, a
//! body of at most [`MAX_BODY`] bytes, and redirects followed only to the same host (three at
//! most). Any 2xx answer ends it; the answer's body is not read.

use std::time::Duration;

use flow_runtime::RunHandle;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::error::ApiError;

/// Attempts per delivery.
pub const ATTEMPTS: u32 = 5;
/// The largest body sent; a bigger outcome is sent without its output.
pub const MAX_BODY: usize = 256 * 1024;

/// A webhook URL, checked: `http` or `https`, with a host.
pub(crate) fn check_url(url: &str) -> Result<reqwest::Url, ApiError> {
    let parsed = reqwest::Url::parse(url).map_err(|e| {
        ApiError::BadRequest(format!(
            "the webhook is not a URL ({e}): send an http(s) URL"
        ))
    })?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(ApiError::BadRequest(format!(
            "webhook URLs are http or https with a host; '{}' is not",
            parsed.scheme()
        )));
    }
    Ok(parsed)
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

fn client(url: &reqwest::Url) -> reqwest::Result<reqwest::Client> {
    let host = url.host_str().map(str::to_owned);
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= 3 {
            attempt.stop()
        } else if attempt.url().host_str().map(str::to_owned) == host
            && matches!(attempt.url().scheme(), "http" | "https")
        {
            attempt.follow()
        } else {
            attempt.stop()
        }
    });
    reqwest::Client::builder()
        .redirect(policy)
        .timeout(Duration::from_secs(10))
        .build()
}

/// When `run` ends, delivers `outcome_of(run)` to `url` (see the module documentation).
pub(crate) fn after(
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
        deliver(url, &secret, body, Vec::new(), run.id()).await;
    });
}

/// Delivers `outcome` (a run's outcome as JSON, with its `run_id` and `status`) to `url`
/// from a task of its own: what a queued run's end sends, from the process that ended it.
pub(crate) fn send(url: reqwest::Url, secret: Vec<u8>, outcome: Value) {
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
        deliver(url, &secret, body, Vec::new(), &run_id).await;
    });
}

/// Posts `body` (JSON) to `url`, signed under `secret` (see the module documentation), with
/// the extra `headers`, within the module's bounds; `what` names the delivery in the log.
/// Gives up quietly (logged) after [`ATTEMPTS`] attempts.
pub(crate) async fn deliver(
    url: reqwest::Url,
    secret: &[u8],
    body: Vec<u8>,
    headers: Vec<(&'static str, String)>,
    what: &str,
) {
    let Ok(client) = client(&url) else {
        tracing::error!("could not build the webhook client");
        return;
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
            Err(e) => tracing::warn!(run = what, attempt, error = %e, "webhook failed"),
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
