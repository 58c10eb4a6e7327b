//! Capacity: a 429 retried inside its step (no finished step runs again), model failover after
//! a time limit, the circuit breaker opening and closing, the concurrency cap and the rate
//! limit, all on a clock the test moves.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentweave_runtime::host::{Host, ManualHost};
use agentweave_runtime::model::{
    BreakerPolicy, BreakerState, CapacityModel, ChatModel, ChatRequest, FailoverModel, ModelError,
    Quota, RetryPolicy, ScriptStep, ScriptedModel,
};
use agentweave_runtime::store::JournalStore;
use agentweave_runtime::{
    tool_fn, turn_journal_id, AgentEvent, ChatModelAgent, Durability, FlowAgent, InMemoryStore,
    Message, RunRequest, Runner, Session, TurnRequest,
};
use async_trait::async_trait;
use futures::{FutureExt, StreamExt};
use serde_json::json;

fn request() -> ChatRequest {
    ChatRequest::new([Arc::new(Message::user("hi"))])
}

#[tokio::test]
async fn a_429_then_200_retries_the_call_and_runs_no_finished_step_again() {
    let runs: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = Arc::clone(&runs);
    let lookup = tool_fn("lookup", "Looks up.", move |args: serde_json::Value| {
        let log = Arc::clone(&log);
        async move {
            log.lock().unwrap().push(args["q"].to_string());
            Ok::<_, String>("found".to_owned())
        }
    });
    let model = ScriptedModel::new([
        ScriptStep::tool_calls([("lookup", json!({"q": 1})), ("lookup", json!({"q": 2}))]),
        ScriptStep::fail(ModelError::http("m", 429, "slow down")),
        ScriptStep::fail(ModelError::http("m", 503, "busy")),
        ScriptStep::text("done"),
    ]);
    let host = ManualHost::new();
    let agent = ChatModelAgent::builder("agent", model.clone())
        .tool(lookup)
        .retry(RetryPolicy::new(3).initial_backoff(Duration::from_secs(1)))
        .build()
        .unwrap();
    let runner = Runner::builder(FlowAgent::new(agent))
        .host(Arc::new(host.clone()))
        .build();
    let mut events = runner.run(RunRequest::new([Message::user("go")]));
    let mut seen: Vec<AgentEvent> = Vec::new();
    // The run waits on the host's clock between attempts: move it each time it waits.
    loop {
        match events.next().now_or_never() {
            Some(Some(event)) => seen.push(event),
            Some(None) => break,
            None => {
                tokio::task::yield_now().await;
                host.advance_to_next();
            }
        }
    }
    assert!(seen.iter().all(|e| e.error.is_none()), "{seen:#?}");
    assert_eq!(
        seen.last().unwrap().message_output().unwrap().content,
        "done"
    );
    // The two parallel calls ran once each, before the failures; the model was asked four
    // times (one reply, two failures, one reply).
    assert_eq!(*runs.lock().unwrap(), ["1", "2"]);
    assert_eq!(model.calls(), 4);
    let results = seen
        .iter()
        .filter_map(AgentEvent::message_output)
        .filter(|m| m.tool_call_id.is_some())
        .count();
    assert_eq!(results, 2);
    // Backoff of 1 s then 2 s, each shortened by at most the default jitter (20%).
    let waited = host.elapsed();
    assert!(
        waited <= Duration::from_secs(3) && waited >= Duration::from_millis(2_400),
        "{waited:?}"
    );
}

#[test]
fn jitter_shortens_waits_by_at_most_its_share_and_is_repeatable() {
    let policy = RetryPolicy::default().jitter(0.5);
    let wait = Duration::from_secs(4);
    let waits: Vec<Duration> = (0..64u64)
        .map(|k| policy.jittered(wait, k.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
        .collect();
    assert!(waits.iter().all(|w| *w <= wait && *w >= wait / 2));
    assert!(waits.iter().any(|w| *w < Duration::from_millis(3_500)));
    assert!(waits.iter().any(|w| *w > Duration::from_millis(3_500)));
    assert_eq!(policy.jittered(wait, 77), policy.jittered(wait, 77));
}

/// A model that never answers.
struct Hanging;

#[async_trait]
impl ChatModel for Hanging {
    fn model_name(&self) -> &str {
        "hanging"
    }

    async fn generate(&self, _: &ChatRequest) -> Result<Message, ModelError> {
        futures::future::pending().await
    }
}

#[test]
fn failover_goes_to_the_next_model_when_the_first_runs_out_of_time() {
    let host = ManualHost::new();
    let backup = ScriptedModel::new([ScriptStep::text("from the backup")]).named("backup");
    let model = FailoverModel::new(
        "chat",
        [
            Arc::new(Hanging) as Arc<dyn ChatModel>,
            Arc::new(backup.clone()),
        ],
    )
    .timeout(Duration::from_secs(5))
    .host(Arc::new(host.clone()));
    let request = request();
    let mut call = Box::pin(model.generate(&request));
    assert!(
        (&mut call).now_or_never().is_none(),
        "waits for the first model"
    );
    host.advance(Duration::from_millis(4_999));
    assert!((&mut call).now_or_never().is_none(), "not yet out of time");
    assert_eq!(backup.calls(), 0);
    host.advance(Duration::from_millis(1));
    let reply = call.now_or_never().expect("answered").unwrap();
    assert_eq!(reply.content, "from the backup");
    assert_eq!(reply.model.as_deref(), Some("backup"));
    assert_eq!(
        model.breaker_state("hanging"),
        Some(BreakerState::Closed { failures: 1 })
    );
}

/// A model that fails with a 503 while `down`, and counts its calls.
struct Flaky {
    down: AtomicBool,
    calls: AtomicUsize,
}

#[async_trait]
impl ChatModel for Flaky {
    fn model_name(&self) -> &str {
        "primary"
    }

    async fn generate(&self, _: &ChatRequest) -> Result<Message, ModelError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.down.load(Ordering::SeqCst) {
            Err(ModelError::http("primary", 503, "down"))
        } else {
            Ok(Message::assistant("from the primary"))
        }
    }
}

#[test]
fn the_breaker_opens_after_failures_in_a_row_and_closes_after_a_good_probe() {
    let host = ManualHost::new();
    let primary = Arc::new(Flaky {
        down: AtomicBool::new(true),
        calls: AtomicUsize::new(0),
    });
    let backup = ScriptedModel::rules()
        .otherwise(ScriptStep::text("from the backup"))
        .named("backup");
    let model = FailoverModel::new(
        "chat",
        [primary.clone() as Arc<dyn ChatModel>, Arc::new(backup)],
    )
    .breaker(BreakerPolicy {
        failures_to_open: 2,
        open_for: Duration::from_secs(60),
    })
    .host(Arc::new(host.clone()));
    let ask = || {
        model
            .generate(&request())
            .now_or_never()
            .expect("no wait")
            .unwrap()
    };
    // Two failures in a row open the breaker; the backup answers both calls.
    assert_eq!(ask().model.as_deref(), Some("backup"));
    assert_eq!(
        model.breaker_state("primary"),
        Some(BreakerState::Closed { failures: 1 })
    );
    assert_eq!(ask().model.as_deref(), Some("backup"));
    let opened_until = host.now() + Duration::from_secs(60);
    assert_eq!(
        model.breaker_state("primary"),
        Some(BreakerState::Open {
            until: opened_until
        })
    );
    // Open: the primary is not called at all.
    assert_eq!(ask().model.as_deref(), Some("backup"));
    assert_eq!(primary.calls.load(Ordering::SeqCst), 2);
    // After 60 s one probe goes through; it fails, so the breaker opens again.
    host.advance(Duration::from_secs(60));
    assert_eq!(ask().model.as_deref(), Some("backup"));
    assert_eq!(primary.calls.load(Ordering::SeqCst), 3);
    assert!(matches!(
        model.breaker_state("primary"),
        Some(BreakerState::Open { .. })
    ));
    // The primary recovers; the next probe succeeds and closes the breaker.
    primary.down.store(false, Ordering::SeqCst);
    host.advance(Duration::from_secs(30));
    assert_eq!(ask().model.as_deref(), Some("backup"), "still open");
    host.advance(Duration::from_secs(30));
    assert_eq!(ask().model.as_deref(), Some("primary"));
    assert_eq!(
        model.breaker_state("primary"),
        Some(BreakerState::Closed { failures: 0 })
    );
    assert_eq!(ask().model.as_deref(), Some("primary"));
}

#[test]
fn a_request_the_model_refuses_is_not_failed_over() {
    let bad = ScriptedModel::new([ScriptStep::fail(ModelError::http("first", 400, "bad"))])
        .named("first");
    let backup = ScriptedModel::new([ScriptStep::text("unused")]).named("backup");
    let model = FailoverModel::new(
        "chat",
        [
            Arc::new(bad) as Arc<dyn ChatModel>,
            Arc::new(backup.clone()),
        ],
    )
    .host(Arc::new(ManualHost::new()));
    let error = model
        .generate(&request())
        .now_or_never()
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(error, ModelError::Http { status: 400, .. }),
        "{error}"
    );
    assert_eq!(backup.calls(), 0);
}

#[tokio::test]
async fn the_model_that_answered_is_in_the_event_the_usage_and_the_journal() {
    let primary = ScriptedModel::new([ScriptStep::fail(ModelError::http("primary", 503, ""))])
        .named("primary");
    let backup = ScriptedModel::rules()
        .otherwise(
            ScriptStep::text("from the backup")
                .with_usage(agentweave_runtime::model::Usage::new(7, 3)),
        )
        .named("backup");
    let model = FailoverModel::new(
        "chat",
        [Arc::new(primary) as Arc<dyn ChatModel>, Arc::new(backup)],
    );
    let agent = ChatModelAgent::builder("agent", model)
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let store = InMemoryStore::new();
    let runner = Runner::builder(FlowAgent::new(agent))
        .stores(store.clone())
        .journal_store(store.clone())
        .durability(Durability::Sync)
        .build();
    let events: Vec<AgentEvent> = runner
        .turn(TurnRequest::new("t", Message::user("hi")))
        .await
        .unwrap()
        .collect()
        .await;
    let reply = events
        .iter()
        .find_map(AgentEvent::message_output)
        .expect("a reply");
    assert_eq!(reply.model.as_deref(), Some("backup"));
    let steps = store.read_steps(&turn_journal_id("t", 0), 0).await.unwrap();
    assert!(
        steps
            .iter()
            .any(|s| String::from_utf8_lossy(&s.bytes).contains("\"model\":\"backup\"")),
        "{steps:?}"
    );

    // The usage report counts the reply under the model that answered.
    let session = Session::new();
    let primary = ScriptedModel::new([ScriptStep::fail(ModelError::http("primary", 503, ""))])
        .named("primary");
    let backup = ScriptedModel::new([
        ScriptStep::text("ok").with_usage(agentweave_runtime::model::Usage::new(7, 3))
    ])
    .named("backup");
    let model = FailoverModel::new(
        "chat",
        [Arc::new(primary) as Arc<dyn ChatModel>, Arc::new(backup)],
    );
    let agent = ChatModelAgent::builder("agent", model).build().unwrap();
    let _: Vec<AgentEvent> = Runner::new(FlowAgent::new(agent))
        .run(RunRequest::new([Message::user("hi")]).session(Arc::clone(&session)))
        .collect()
        .await;
    let report = session.usage();
    assert_eq!(report.by_model["backup"].calls, 1);
    assert!(!report.by_model.contains_key("chat"));
}

/// A model that counts the calls in flight and the most ever at once, and answers when let.
struct Gate {
    in_flight: AtomicUsize,
    most: AtomicUsize,
    open: tokio::sync::Notify,
}

#[async_trait]
impl ChatModel for Gate {
    fn model_name(&self) -> &str {
        "gate"
    }

    async fn generate(&self, _: &ChatRequest) -> Result<Message, ModelError> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        self.open.notified().await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        Ok(Message::assistant("ok"))
    }
}

#[tokio::test]
async fn the_concurrency_cap_holds_calls_beyond_it_until_one_ends() {
    let gate = Arc::new(Gate {
        in_flight: AtomicUsize::new(0),
        most: AtomicUsize::new(0),
        open: tokio::sync::Notify::new(),
    });
    let model = Arc::new(CapacityModel::new(Arc::clone(&gate)).max_concurrent(3));
    let calls: Vec<_> = (0..10)
        .map(|_| {
            let model = Arc::clone(&model);
            tokio::spawn(async move { model.generate(&request()).await })
        })
        .collect();
    let mut done = 0;
    while done < 10 {
        tokio::task::yield_now().await;
        if gate.in_flight.load(Ordering::SeqCst) > 0 {
            gate.open.notify_one();
        }
        done = calls.iter().filter(|c| c.is_finished()).count();
    }
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap().content, "ok");
    }
    assert_eq!(gate.most.load(Ordering::SeqCst), 3);
    assert_eq!(model.available(), Some(3));
}

#[test]
fn the_rate_limit_lets_a_burst_through_then_one_call_per_period() {
    let host = ManualHost::new();
    let model = CapacityModel::new(
        ScriptedModel::rules()
            .otherwise(ScriptStep::text("ok"))
            .named("m"),
    )
    .host(Arc::new(host.clone()))
    .rate(Quota::per_second(NonZeroU32::new(1).unwrap()).allow_burst(NonZeroU32::new(2).unwrap()));
    let request = request();
    // The burst of two goes at once.
    for _ in 0..2 {
        assert!(model.generate(&request).now_or_never().is_some());
    }
    // The third waits for the rate: one more per second.
    let mut third = Box::pin(model.generate(&request));
    assert!((&mut third).now_or_never().is_none());
    assert_eq!(host.waiting(), 1);
    host.advance(Duration::from_millis(999));
    assert!((&mut third).now_or_never().is_none());
    host.advance(Duration::from_millis(1));
    assert!(third.now_or_never().is_some());
}
