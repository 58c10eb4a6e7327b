// Its own test binary, not a module of tests/it: it installs a process-wide tracing subscriber
// (`set_global_default`, once per process).
//! Logs and spans joined to a conversation: one access-log line per request (no body, no
//! token), and a `turn` root span (flow, thread, turn, run id, request id, principal) above
//! every span the run opens, on the SSE turns and on the background runs alike.

mod common;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use common::{desk_state, done, post, spawn, turn, TOKEN};
use serde_json::{json, Value};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

#[derive(Default)]
struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, "{}={:?} ", field.name(), value);
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, "{}={} ", field.name(), value);
    }
}

/// A span as seen: its name, its fields, its parent's id.
type SpanSeen = (String, String, Option<u64>);

#[derive(Default, Clone)]
struct Seen {
    /// Span id -> the span.
    spans: Arc<Mutex<HashMap<u64, SpanSeen>>>,
    /// The access log's lines.
    access: Arc<Mutex<Vec<String>>>,
    /// Every event's fields, at every level.
    events: Arc<Mutex<Vec<String>>>,
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Seen {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, cx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let parent = cx
            .span(id)
            .and_then(|s| s.parent())
            .map(|p| p.id().into_u64());
        self.spans.lock().unwrap().insert(
            id.into_u64(),
            (attrs.metadata().name().to_owned(), fields.0, parent),
        );
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _cx: Context<'_, S>) {
        let mut fields = Fields::default();
        values.record(&mut fields);
        if let Some(span) = self.spans.lock().unwrap().get_mut(&id.into_u64()) {
            span.1.push_str(&fields.0);
        }
    }

    fn on_event(&self, event: &Event<'_>, _cx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        if event.metadata().target() == "agentweave_server::access" {
            self.access.lock().unwrap().push(fields.0.clone());
        }
        self.events.lock().unwrap().push(fields.0);
    }
}

/// The spans and access lines of every test of this file (one global subscriber; each test
/// looks at its own threads).
fn seen() -> Seen {
    static SEEN: std::sync::OnceLock<Seen> = std::sync::OnceLock::new();
    SEEN.get_or_init(|| {
        let seen = Seen::default();
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(seen.clone()))
            .unwrap();
        seen
    })
    .clone()
}

/// The `turn` spans of thread `thread`, as (id, fields), oldest first.
fn turn_spans(seen: &Seen, thread: &str) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = seen
        .spans
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, (name, fields, _))| {
            name == "turn" && fields.contains(&format!("thread={thread} "))
        })
        .map(|(id, (_, fields, _))| (*id, fields.clone()))
        .collect();
    out.sort();
    out
}

/// The value of field `name` in `fields` (as the layer writes them: `name=value `).
fn field<'a>(fields: &'a str, name: &str) -> Option<&'a str> {
    let start = fields.find(&format!("{name}="))? + name.len() + 1;
    fields[start..].split(' ').next()
}

/// The ids of the `invoke_agent` spans under span `root`.
fn agents_under(seen: &Seen, root: u64) -> Vec<u64> {
    let spans = seen.spans.lock().unwrap().clone();
    let under = |mut id: u64| loop {
        match spans.get(&id) {
            Some((_, _, Some(parent))) if *parent == root => return true,
            Some((_, _, Some(parent))) => id = *parent,
            _ => return false,
        }
    };
    spans
        .iter()
        .filter(|(id, (name, _, _))| name == "invoke_agent" && under(**id))
        .map(|(id, _)| *id)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_carries_the_run_id_of_the_turn_it_continues() {
    let seen = seen();
    let server = spawn(desk_state()).await;
    let events = turn(
        &server.base,
        "desk",
        "obs-run",
        "I want a refund for order 42",
    )
    .await;
    assert_eq!(done(&events)["interrupted"], true);
    let interrupt = done(&events)["interrupts"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let resumed = common::read_sse(
        post(
            &server.base,
            "/v1/flows/desk/threads/obs-run/resume",
            json!({"interrupt_id": interrupt, "data": {"approve": true}}),
        )
        .await,
    )
    .await;
    assert_eq!(done(&resumed)["interrupted"], false);

    let turns = turn_spans(&seen, "obs-run");
    assert_eq!(turns.len(), 2, "{turns:?}");
    let first = field(&turns[0].1, "run_id").expect("a run id on the turn span");
    let second = field(&turns[1].1, "run_id").expect("a run id on the resume's span");
    assert!(!first.is_empty());
    assert_eq!(first, second, "the resume continues the same run");
    assert_eq!(field(&turns[1].1, "resumed"), Some("true"));
    for (id, _) in &turns {
        assert!(
            !agents_under(&seen, *id).is_empty(),
            "agent spans under {id}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_run_runs_under_a_turn_span_naming_its_run_id() {
    let seen = seen();
    let server = spawn(desk_state()).await;
    let response = post(
        &server.base,
        "/v1/flows/desk/threads/obs-bg/runs",
        json!({"message": "my kettle arrived broken"}),
    )
    .await;
    assert_eq!(response.status(), 202);
    let request_id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let body: Value = response.json().await.unwrap();
    let run = body["run_id"].as_str().unwrap().to_owned();
    let outcome: Value = common::get(
        &server.base,
        &format!("/v1/flows/desk/threads/obs-bg/runs/{run}/wait"),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(outcome["status"], "success", "{outcome}");

    let turns = turn_spans(&seen, "obs-bg");
    assert_eq!(turns.len(), 1, "{turns:?}");
    let (span, fields) = &turns[0];
    assert_eq!(field(fields, "run_id"), Some(run.as_str()), "{fields}");
    assert_eq!(field(fields, "request_id"), Some(request_id.as_str()));
    assert_eq!(field(fields, "principal"), Some("token-1"));
    assert!(
        !agents_under(&seen, *span).is_empty(),
        "the run's task keeps the span of the request that started it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_run_span_sits_under_the_turn_span_and_each_request_logs_one_line() {
    let seen = seen();
    let server = spawn(desk_state()).await;
    let events = turn(&server.base, "desk", "obs-1", "my kettle arrived broken").await;
    assert_eq!(done(&events)["interrupted"], false);

    let spans = seen.spans.lock().unwrap().clone();
    let turn_span = spans
        .iter()
        .find(|(_, (name, fields, _))| name == "turn" && fields.contains("thread=obs-1"))
        .map(|(id, _)| *id)
        .expect("a turn span");
    let fields = &spans[&turn_span].1;
    for expected in [
        "flow=desk",
        "turn=0",
        "principal=token-1",
        "request_id=",
        "run_id=",
    ] {
        assert!(fields.contains(expected), "{expected} in {fields}");
    }
    assert!(
        !agents_under(&seen, turn_span).is_empty(),
        "the run opened agent spans under its turn span"
    );
    // No agent span of any test of this file (SSE turns, resumes, background runs) is
    // outside a `turn` span.
    let under_a_turn = |mut id: u64| loop {
        match spans.get(&id) {
            Some((_, _, Some(parent))) if spans[parent].0 == "turn" => return true,
            Some((_, _, Some(parent))) => id = *parent,
            _ => return false,
        }
    };
    let orphans: Vec<&SpanSeen> = spans
        .iter()
        .filter(|(id, (name, _, _))| name == "invoke_agent" && !under_a_turn(**id))
        .map(|(_, span)| span)
        .collect();
    assert!(
        orphans.is_empty(),
        "agent spans outside a turn: {orphans:#?}"
    );

    let access = seen.access.lock().unwrap().clone();
    let line = access
        .iter()
        .find(|l| l.contains("path=/v1/flows/desk/threads/obs-1/turns"))
        .expect("an access line for the turn");
    assert!(line.contains("status=200"), "{line}");
    assert!(line.contains("principal=token-1"), "{line}");
    assert!(line.contains("method=POST"), "{line}");
    assert_eq!(
        access
            .iter()
            .filter(|l| l.contains("threads/obs-1/turns"))
            .count(),
        1
    );
    for l in &access {
        assert!(!l.contains(TOKEN), "{l}");
        assert!(!l.contains("kettle"), "{l}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_in_the_query_string_is_in_no_span_or_log_at_any_level() {
    let seen = seen();
    let server = spawn(desk_state()).await;
    const SECRET: &str = "query-secret-0123456789";
    for path in [
        format!("/v1/flows?access_token={SECRET}"),
        format!("/v1/flows/desk/threads/q1?token={SECRET}&x=1"),
        format!("/v1/nowhere?api_key={SECRET}"),
    ] {
        let _ = common::get(&server.base, &path).await;
    }
    // The requests were seen (so the search below looked at their spans) ...
    let spans = seen.spans.lock().unwrap().clone();
    assert!(
        spans
            .values()
            .any(|(_, fields, _)| fields.contains("/v1/nowhere")),
        "the request spans were recorded"
    );
    // ... and the token is in none of them, nor in any event.
    for (name, fields, _) in spans.values() {
        assert!(!fields.contains(SECRET), "span {name}: {fields}");
    }
    for line in seen.events.lock().unwrap().iter() {
        assert!(!line.contains(SECRET), "{line}");
    }
}
