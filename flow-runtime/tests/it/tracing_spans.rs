//! Each agent run is a `tracing` span (`invoke_agent`) with the agent and its run path.

use crate::support;

use std::sync::{Arc, Mutex};

use agentweave_runtime::{set_sub_agents, FlowAgent, FnAgent, Runner};
use futures::StreamExt;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<(String, String, String)>>>);

struct Fields(String, String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "gen_ai.agent.name" => self.0 = format!("{value:?}"),
            "agentflow.run_path" => self.1 = format!("{value:?}"),
            _ => {}
        }
    }
}

impl<S: Subscriber> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _cx: Context<'_, S>) {
        let mut f = Fields(String::new(), String::new());
        attrs.record(&mut f);
        self.0
            .lock()
            .unwrap()
            .push((attrs.metadata().name().to_owned(), f.0, f.1));
    }
}

#[test]
fn every_agent_run_is_a_span_with_agent_and_run_path() {
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    support::with_subscriber(subscriber, || {
        let root = FnAgent::new("triage", |cx, _| async move {
            cx.transfer("refund");
            Ok(())
        });
        let refund = FnAgent::new("refund", |cx, _| async move {
            cx.say("done");
            Ok(())
        });
        let tree = set_sub_agents(FlowAgent::new(root), [FlowAgent::new(refund)]).unwrap();
        let events: Vec<_> = futures::executor::block_on(Runner::new(tree).run("x").collect());
        assert_eq!(events.len(), 3);
    });
    let got = spans.0.lock().unwrap().clone();
    let own = |a: &str, p: &str| ("invoke_agent".to_owned(), a.to_owned(), p.to_owned());
    assert_eq!(
        got,
        vec![own("triage", "triage"), own("refund", "triage/refund")]
    );
}

fn first_hit_elsewhere() {
    tracing::info_span!("first_hit_elsewhere").in_scope(|| {});
}

#[test]
fn a_callsite_first_hit_on_a_thread_with_no_subscriber_still_reaches_this_tests_subscriber() {
    // The case that made span tests flaky: another test's thread, with no subscriber, is the
    // first to reach a callsite while this test's subscriber is set.
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    support::with_subscriber(subscriber, || {
        std::thread::spawn(first_hit_elsewhere).join().unwrap();
        first_hit_elsewhere();
    });
    let names: Vec<String> = spans
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|s| s.0.clone())
        .collect();
    assert_eq!(names, ["first_hit_elsewhere"]);
}
