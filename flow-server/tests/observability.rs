//! Logs and spans joined to a conversation: one access-log line per request (no body, no
//! token), and a `turn` root span (flow, thread, turn, request id, principal) above every
//! span the run opens.

mod common;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use common::{desk_state, done, spawn, turn, TOKEN};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
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

    fn on_event(&self, event: &Event<'_>, _cx: Context<'_, S>) {
        if event.metadata().target() == "flow_server::access" {
            let mut fields = Fields::default();
            event.record(&mut fields);
            self.access.lock().unwrap().push(fields.0);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_run_span_sits_under_the_turn_span_and_each_request_logs_one_line() {
    let seen = Seen::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(seen.clone()))
        .unwrap();
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
    for expected in ["flow=desk", "turn=0", "principal=token-1", "request_id="] {
        assert!(fields.contains(expected), "{expected} in {fields}");
    }
    let under_turn = |mut id: u64| loop {
        match spans.get(&id) {
            Some((_, _, Some(parent))) if *parent == turn_span => return true,
            Some((_, _, Some(parent))) => id = *parent,
            _ => return false,
        }
    };
    let agents: Vec<u64> = spans
        .iter()
        .filter(|(_, (name, _, _))| name == "agent")
        .map(|(id, _)| *id)
        .collect();
    assert!(!agents.is_empty(), "the run opened agent spans");
    assert!(agents.iter().all(|id| under_turn(*id)), "{spans:#?}");

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
