//! Idempotency keys: a request sent again gets the run it started, never a second one.
//!
//! A client that lost its connection (or the server's process) cannot tell whether its request
//! ran. It sends the request again with the same key: the IETF draft's `Idempotency-Key` header
//! on the native routes that start a turn or a run, A2A's `messageId` on `SendMessage` and
//! `SendStreamingMessage`, AG-UI's `runId`. The key becomes the run's id
//! ([`TurnRequest::run_id`](agentweave_runtime::TurnRequest::run_id)), scoped to the caller: a hash of
//! the principal, the thread (its flow and tenant included) and the key, so one caller's key
//! never reaches another caller's run. The engine then does the rest:
//!
//! - the turn's tool calls get idempotency keys made from the run id, the same on every
//!   attempt (a paying tool deduplicates on them);
//! - a resend meeting its own turn dead (its process was killed) gets that turn back,
//!   recovered from its journal, not a second one;
//! - a resend meeting its turn still running is refused (409 `busy`, as the draft says of a
//!   request still being processed): attach to the run, or send again later;
//! - a resend after the turn was recorded finds it in the thread by its run id
//!   ([`ThreadRecord::run_id`](agentweave_runtime::store::ThreadRecord::run_id)) and answers it
//!   again, without running anything.
//!
//! The server keeps each key's first request (a fingerprint of its route and body) in the
//! journal store, under the run id: a key sent again with another route or body is refused
//! with 422 `idempotency_key_reused` and nothing runs. The fingerprint is kept as long as the
//! store keeps run journals: forever by default, or until `Runner::purge` with a
//! `Retention::max_age` removes journals idle that long (a key is then new again; the turn it
//! started stays in its thread).

use agentweave_runtime::store::{JournalError, StoredStep, ThreadRecord};
use axum::http::HeaderMap;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::state::AppState;
use crate::thread::ThreadKey;

/// The header's name.
pub(crate) const HEADER: &str = "idempotency-key";

/// The longest key taken.
const MAX_KEY: usize = 255;

/// The step kind of a key's first request.
const KIND: &str = "idempotency_key";

/// A request's key, mapped to its run.
#[derive(Debug, Clone)]
pub(crate) struct Keyed {
    /// The run id the key maps to.
    pub(crate) run_id: String,
    /// Whether the key was seen before (this request is a resend).
    pub(crate) again: bool,
}

/// What the store keeps of a key's first request.
#[derive(Serialize, Deserialize)]
struct FirstUse {
    thread: String,
    fingerprint: String,
}

/// The `Idempotency-Key` header of a request (the draft's quoted string, or bare): `None`
/// without one, 400 for one that is empty, too long or not visible ASCII.
pub(crate) fn header_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(HEADER) else {
        return Ok(None);
    };
    let text = value
        .to_str()
        .map_err(|_| bad_key("Idempotency-Key"))?
        .trim();
    let text = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    check(text, "Idempotency-Key").map(|k| Some(k.to_owned()))
}

/// `key` if it is 1 to 255 visible ASCII characters, else 400 naming `what`.
pub(crate) fn check<'k>(key: &'k str, what: &str) -> Result<&'k str, ApiError> {
    if key.is_empty() || key.len() > MAX_KEY || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad_key(what));
    }
    Ok(key)
}

fn bad_key(what: &str) -> ApiError {
    ApiError::BadRequest(format!(
        "the {what} must be 1 to {MAX_KEY} visible ASCII characters (a UUID, for instance)"
    ))
}

/// The run id `key` maps to for `principal` on `thread`: `idem-` and 32 hex digits of a
/// SHA-256 over the three, so keys of other callers, threads or tenants never meet.
pub(crate) fn run_id(principal: &str, thread: &ThreadKey, key: &str) -> String {
    let mut hash = Sha256::new();
    for part in [principal, &thread.store_id(), key] {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    }
    let digest = hash.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("idem-{hex}")
}

/// Maps `key` (carried by `what`) of `principal`'s request `request` (its route and body, as
/// JSON) on `thread` to its run: the first use is kept; a use again with the same request is
/// [`Keyed::again`]; with another request, 422 `idempotency_key_reused`.
pub(crate) async fn keyed(
    state: &AppState,
    what: &'static str,
    principal: &str,
    thread: &ThreadKey,
    key: &str,
    request: &serde_json::Value,
) -> Result<Keyed, ApiError> {
    let run_id = run_id(principal, thread, key);
    let fingerprint = {
        let bytes = serde_json::to_vec(request).unwrap_or_default();
        let digest = Sha256::digest(&bytes);
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let first = FirstUse {
        thread: thread.store_id(),
        fingerprint,
    };
    let step = StoredStep {
        seq: 0,
        at_ms: now_ms(),
        kind: KIND.to_owned(),
        bytes: serde_json::to_vec(&first).expect("a key's first use serialises"),
    };
    let journal = state.journal();
    match journal.append_steps(&run_id, 0, vec![step]).await {
        Ok(_) => Ok(Keyed {
            run_id,
            again: false,
        }),
        Err(JournalError::Conflict { .. }) => {
            let steps = journal.read_steps(&run_id, 0).await.map_err(store_error)?;
            let seen: Option<FirstUse> = steps
                .first()
                .filter(|s| s.kind == KIND)
                .and_then(|s| serde_json::from_slice(&s.bytes).ok());
            match seen {
                Some(seen)
                    if seen.thread == first.thread && seen.fingerprint == first.fingerprint =>
                {
                    Ok(Keyed {
                        run_id,
                        again: true,
                    })
                }
                _ => Err(ApiError::IdempotencyKeyReused { what }),
            }
        }
        Err(e) => Err(store_error(e)),
    }
}

fn store_error(e: JournalError) -> ApiError {
    tracing::error!(error = %e, "the journal store failed on an idempotency key");
    ApiError::StoreUnavailable
}

/// The records of `thread` made by run `run_id`, in order (empty if it recorded none).
pub(crate) async fn recorded(
    state: &AppState,
    thread: &ThreadKey,
    run_id: &str,
) -> Result<Vec<ThreadRecord>, ApiError> {
    let store_id = thread.store_id();
    let Some(head) = state.threads().head(&store_id).await? else {
        return Ok(Vec::new());
    };
    let mut records = state.threads().read(&store_id, 0..head.version).await?;
    records.retain(|r| r.run_id.as_deref() == Some(run_id));
    Ok(records)
}

/// Whether `thread`'s next turn has an open start mark: a turn whose process died, which the
/// server's recovery (or the next request) finishes.
pub(crate) async fn dead_turn_pending(state: &AppState, thread: &ThreadKey) -> bool {
    let store_id = thread.store_id();
    let Ok(head) = state.threads().head(&store_id).await else {
        return false;
    };
    let next = head.as_ref().map_or(0, |h| h.turns);
    let turn = head.as_ref().map(|h| h.last.turn);
    let marks = [
        agentweave_runtime::turn_mark_id(&store_id, next),
        // A resumed part of the waiting turn.
        turn.map(|t| format!("{store_id}.turn-{t}.resume"))
            .unwrap_or_default(),
    ];
    for mark in marks.iter().filter(|m| !m.is_empty()) {
        if state.journal().journal_len(mark).await.unwrap_or(0) > 0 {
            return true;
        }
    }
    false
}

/// The Server-Sent Events of a turn (or resume) already recorded as `records` (the parts of
/// one run), as a turn's stream would have sent them (`turn`, its `event`s, `done`; a
/// streamed message as one event): what a request sent again after its turn was recorded
/// gets, without anything running.
pub(crate) fn recorded_turn_sse(
    records: &[ThreadRecord],
    thread: &ThreadKey,
    resumed: bool,
    limits: &crate::limits::Limits,
) -> axum::response::Response {
    use crate::sse::frame;
    use axum::response::IntoResponse;
    let limit = limits.max_event_bytes;
    let mut frames = Vec::new();
    if let (Some(first), Some(last)) = (records.first(), records.last()) {
        frames.push(frame(
            "turn",
            &serde_json::json!({
                "flow": thread.flow,
                "thread": thread.id,
                "turn": first.turn,
                "started_at": first.started_at,
                "resumed": resumed,
            }),
            limit,
        ));
        for record in records {
            for event in &record.events {
                frames.push(frame("event", &crate::thread_views::outward(event), limit));
            }
        }
        let done = match agentweave_runtime::RunOutcome::of_record(last) {
            Some(agentweave_runtime::RunOutcome::Success {
                answered_by,
                answer,
            }) => serde_json::json!({
                "output": answer.map(|m| m.content),
                "answered_by": answered_by,
                "interrupted": false,
                "interrupts": [],
            }),
            Some(agentweave_runtime::RunOutcome::Interrupted { interrupts }) => serde_json::json!({
                "output": null,
                "interrupted": true,
                "interrupts": interrupts
                    .iter()
                    .map(crate::outward::OutwardInterrupt::of)
                    .collect::<Vec<_>>(),
            }),
            _ => serde_json::json!({
                "output": null,
                "interrupted": false,
                "interrupts": [],
                "failed": true,
            }),
        };
        frames.push(frame("done", &done, limit));
    }
    crate::sse::SseBody::new(
        futures::stream::iter(frames),
        limits.sse_keep_alive,
        limits.max_turn_duration,
        crate::runs::overtime,
    )
    .into_response()
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_scoped_to_the_caller_and_the_thread() {
        let ada = ThreadKey::new("desk", "_", "ada").unwrap();
        let bob = ThreadKey::new("desk", "_", "bob").unwrap();
        let other_tenant = ThreadKey::new("desk", "acme", "ada").unwrap();
        let id = run_id("p1", &ada, "k-1");
        assert!(id.starts_with("idem-") && id.len() == 37, "{id}");
        assert_eq!(id, run_id("p1", &ada, "k-1"));
        assert_ne!(id, run_id("p2", &ada, "k-1"));
        assert_ne!(id, run_id("p1", &bob, "k-1"));
        assert_ne!(id, run_id("p1", &other_tenant, "k-1"));
        assert_ne!(id, run_id("p1", &ada, "k-2"));
    }

    #[test]
    fn the_header_takes_the_drafts_quoted_string_or_a_bare_key() {
        let mut headers = HeaderMap::new();
        assert_eq!(header_key(&headers).unwrap(), None);
        headers.insert(HEADER, "\"8e03978e-40d5\"".parse().unwrap());
        assert_eq!(
            header_key(&headers).unwrap().as_deref(),
            Some("8e03978e-40d5")
        );
        headers.insert(HEADER, "abc".parse().unwrap());
        assert_eq!(header_key(&headers).unwrap().as_deref(), Some("abc"));
        headers.insert(HEADER, "\"\"".parse().unwrap());
        assert!(header_key(&headers).is_err());
        headers.insert(HEADER, "a".repeat(256).parse().unwrap());
        assert!(header_key(&headers).is_err());
    }
}
