//! The `Map` workflow (fan-out): items in order, the concurrency bound, what each item sees,
//! the failure policies, and an interrupt in one item resumed without running the others.

use crate::support;
use support::lines;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agentweave_runtime::model::{ChatModel, ChatRequest, ModelError};
use agentweave_runtime::workflow::{Map, MapItems, MapOutput, MapPolicy};
use agentweave_runtime::{
    AgentError, AgentEvent, AgentInput, FlowAgent, FnAgent, InMemoryStore, Message, ResumeInfo,
    ResumeRequest, RunRequest, Runner, Sequential, WorkflowError,
};
use agentweave_runtime::{ChatModelAgent, Durability, RecoverError, Turn, TurnRequest};
use futures::StreamExt;
use serde_json::json;
use std::time::Duration;

/// The item a map gave its agent: the last message of its input.
fn item_of(input: &AgentInput) -> String {
    input.messages.last().expect("an item").content.clone()
}

/// The output the map recorded (the last message event of `events` at the map's path).
fn output(events: &[AgentEvent], map_path: &str) -> MapOutput {
    let last = events
        .iter()
        .rev()
        .find(|e| e.run_path().to_string() == map_path && e.message_output().is_some())
        .expect("the map's output");
    serde_json::from_str(&last.message_output().unwrap().content).unwrap()
}

fn errors(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| e.error.as_ref().map(|e| e.to_string()))
        .collect()
}

#[tokio::test]
async fn results_come_in_the_items_order_whatever_order_items_end_in() {
    // Item k yields 10 - k times before answering: later items end first.
    let echo = FlowAgent::new(FnAgent::new("echo", |cx, input| async move {
        let item: usize = item_of(&input).parse().unwrap();
        for _ in 0..(10 - item) {
            tokio::task::yield_now().await;
        }
        cx.say(format!("{{\"item\":{item}}}"));
        Ok(())
    }));
    let map = Map::new("map", MapItems::list(0..10))
        .concurrency(10)
        .with_sub_agents([echo])
        .unwrap();
    let events: Vec<AgentEvent> = Runner::new(map).run("go").collect().await;
    let answers: Vec<String> = events
        .iter()
        .filter(|e| e.agent_name() == "echo" && e.run_path().len() == 2)
        .map(|e| e.run_path().to_string())
        .collect();
    assert_eq!(answers.len(), 10);
    assert_eq!(answers[0], "map[9]/echo", "the last item ends first");
    let out = output(&events, "map");
    let expected: Vec<Option<serde_json::Value>> =
        (0..10).map(|k| Some(json!({ "item": k }))).collect();
    assert_eq!(out.results, expected);
    assert!(out.errors.is_empty());
}

#[tokio::test]
async fn an_item_sees_its_item_and_not_the_other_items() {
    let seen: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let keep = Arc::clone(&seen);
    let look = FlowAgent::new(FnAgent::new("look", move |cx, input: AgentInput| {
        keep.lock()
            .unwrap()
            .push(input.messages.iter().map(|m| m.content.clone()).collect());
        async move {
            tokio::task::yield_now().await;
            cx.say("seen");
            Ok(())
        }
    }));
    let map = Map::new("fan", MapItems::value("tickets"))
        .concurrency(2)
        .with_sub_agents([look])
        .unwrap();
    let desk = Sequential::new("desk").with_sub_agents([map]).unwrap();
    let session = agentweave_runtime::Session::new();
    session
        .set_value("tickets", json!(["refund #1", {"id": 2}, "refund #3"]))
        .unwrap();
    let events: Vec<AgentEvent> = Runner::new(desk)
        .run(RunRequest::new([Message::user("triage")]).session(session))
        .collect()
        .await;
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    assert_eq!(
        seen,
        [
            vec!["triage".to_owned(), "refund #1".to_owned()],
            vec!["triage".to_owned(), "refund #3".to_owned()],
            vec!["triage".to_owned(), r#"{"id":2}"#.to_owned()],
        ],
        "the run's input and its own item only"
    );
    let all = lines(&events);
    assert!(
        all.contains(&"look@desk/fan[1]: {\"id\":2}".to_owned()),
        "{all:?}"
    );
    assert!(
        all.contains(&"look@desk/fan[1]/look: seen".to_owned()),
        "{all:?}"
    );
    assert_eq!(
        output(&events, "desk/fan").results,
        vec![Some(json!("seen")); 3]
    );
}

#[tokio::test]
async fn a_hundred_items_with_concurrency_eight_never_run_more_than_eight() {
    let active = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let ran = Arc::new(AtomicUsize::new(0));
    let (a, m, r) = (Arc::clone(&active), Arc::clone(&most), Arc::clone(&ran));
    let work = FlowAgent::new(FnAgent::new("work", move |cx, input| {
        let (a, m, r) = (Arc::clone(&a), Arc::clone(&m), Arc::clone(&r));
        async move {
            let now = a.fetch_add(1, Ordering::SeqCst) + 1;
            m.fetch_max(now, Ordering::SeqCst);
            r.fetch_add(1, Ordering::SeqCst);
            // Stays running across several polls, so the items started overlap.
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
            a.fetch_sub(1, Ordering::SeqCst);
            cx.say(item_of(&input));
            Ok(())
        }
    }));
    let map = Map::new("map", MapItems::list(0..100))
        .concurrency(8)
        .with_sub_agents([work])
        .unwrap();
    let events: Vec<AgentEvent> = Runner::new(map).run("go").collect().await;
    assert_eq!(ran.load(Ordering::SeqCst), 100);
    assert_eq!(most.load(Ordering::SeqCst), 8, "eight at once, never more");
    let out = output(&events, "map");
    let expected: Vec<Option<serde_json::Value>> = (0..100).map(|k| Some(json!(k))).collect();
    assert_eq!(out.results, expected);
}

/// An agent that fails on the items listed in `bad` and counts its runs.
fn flaky(bad: &'static [&'static str]) -> (FlowAgent, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let n = Arc::clone(&runs);
    let agent = FnAgent::new("check", move |cx, input: AgentInput| {
        n.fetch_add(1, Ordering::SeqCst);
        async move {
            let item = item_of(&input);
            if bad.contains(&item.as_str()) {
                return Err(AgentError::failed("check", format!("{item} is broken")));
            }
            cx.say(format!("{item} ok"));
            Ok(())
        }
    });
    (FlowAgent::new(agent), runs)
}

fn map_failed(events: &[AgentEvent]) -> Option<&WorkflowError> {
    events
        .iter()
        .filter_map(|e| e.error.as_ref())
        .find_map(|e| e.downcast_ref::<WorkflowError>())
}

#[tokio::test]
async fn fail_fast_stops_at_the_first_failure_and_keeps_the_results_so_far() {
    let (check, runs) = flaky(&["c"]);
    let map = Map::new("map", MapItems::list(["a", "b", "c", "d", "e"]))
        .concurrency(1)
        .with_sub_agents([check])
        .unwrap();
    let events: Vec<AgentEvent> = Runner::new(map).run("go").collect().await;
    assert_eq!(runs.load(Ordering::SeqCst), 3, "d and e never start");
    let out = output(&events, "map");
    assert_eq!(
        out.results,
        [Some(json!("a ok")), Some(json!("b ok")), None, None, None]
    );
    assert_eq!(out.errors.len(), 1);
    assert_eq!(out.errors[0].item, 2);
    assert!(
        out.errors[0].error.contains("c is broken"),
        "{:?}",
        out.errors
    );
    match map_failed(&events) {
        Some(WorkflowError::MapFailed {
            items, succeeded, ..
        }) => assert_eq!((*items, *succeeded), (5, 2)),
        other => panic!("expected MapFailed, got {other:?}: {:?}", errors(&events)),
    }
    assert_eq!(
        errors(&events).last().unwrap(),
        "Map workflow 'map': 2 of 5 items succeeded, 5 needed (first failure: item 2: agent \
         'check' failed: c is broken); the results so far are in its output message"
    );
}

#[tokio::test]
async fn collect_errors_runs_every_item_and_lists_the_failures() {
    let (check, runs) = flaky(&["b", "d"]);
    let map = Map::new("map", MapItems::list(["a", "b", "c", "d"]))
        .concurrency(3)
        .on_failure(MapPolicy::CollectErrors)
        .with_sub_agents([check])
        .unwrap();
    let events: Vec<AgentEvent> = Runner::new(map).run("go").collect().await;
    assert_eq!(runs.load(Ordering::SeqCst), 4);
    let out = output(&events, "map");
    assert_eq!(
        out.results,
        [Some(json!("a ok")), None, Some(json!("c ok")), None]
    );
    let failed: Vec<usize> = out.errors.iter().map(|e| e.item).collect();
    assert_eq!(failed, [1, 3]);
    assert!(map_failed(&events).is_none(), "the map itself succeeds");
    assert_eq!(
        errors(&events).len(),
        2,
        "the two items' own errors reach the caller"
    );
}

#[tokio::test]
async fn at_least_n_succeeds_with_enough_and_fails_with_too_few() {
    let (check, _) = flaky(&["b"]);
    let enough = Map::new("map", MapItems::list(["a", "b", "c"]))
        .on_failure(MapPolicy::AtLeast(2))
        .with_sub_agents([check])
        .unwrap();
    let events: Vec<AgentEvent> = Runner::new(enough).run("go").collect().await;
    assert!(map_failed(&events).is_none(), "{:?}", errors(&events));
    assert_eq!(output(&events, "map").results.iter().flatten().count(), 2);

    let (check, runs) = flaky(&["b", "c"]);
    let too_few = Map::new("map", MapItems::list(["a", "b", "c"]))
        .on_failure(MapPolicy::AtLeast(2))
        .with_sub_agents([check])
        .unwrap();
    let events: Vec<AgentEvent> = Runner::new(too_few).run("go").collect().await;
    assert_eq!(runs.load(Ordering::SeqCst), 3, "every item runs");
    match map_failed(&events) {
        Some(WorkflowError::MapFailed {
            succeeded, needed, ..
        }) => assert_eq!((*succeeded, *needed), (1, 2)),
        other => panic!("expected MapFailed, got {other:?}"),
    }
    assert_eq!(
        output(&events, "map").results,
        [Some(json!("a ok")), None, None]
    );
}

#[tokio::test]
async fn bad_settings_and_items_are_typed_errors() {
    let (check, _) = flaky(&[]);
    let zero = Map::new("map", MapItems::list(["a"]))
        .concurrency(0)
        .with_sub_agents([check])
        .unwrap();
    let events: Vec<AgentEvent> = Runner::new(zero).run("go").collect().await;
    assert!(matches!(
        map_failed(&events),
        Some(WorkflowError::ZeroConcurrency { .. })
    ));

    let (check, runs) = flaky(&[]);
    let not_a_list = Map::new("map", MapItems::value("tickets"))
        .with_sub_agents([check])
        .unwrap();
    let session = agentweave_runtime::Session::new();
    session.set_value("tickets", json!({"a": 1})).unwrap();
    let events: Vec<AgentEvent> = Runner::new(not_a_list)
        .run(RunRequest::new([Message::user("go")]).session(session))
        .collect()
        .await;
    assert_eq!(
        errors(&events),
        [
            "Map workflow 'map' has no list of items to run over: expected a JSON array of items, \
          found an object"
        ]
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    let (a, _) = flaky(&[]);
    let b = FlowAgent::new(FnAgent::new("b", |_, _| async { Ok(()) }));
    let two = Map::new("map", MapItems::list(["x"]))
        .with_sub_agents([a, b])
        .unwrap();
    let events: Vec<AgentEvent> = Runner::new(two).run("go").collect().await;
    assert!(matches!(
        map_failed(&events),
        Some(WorkflowError::MapSubAgents { found: 2, .. })
    ));
}

#[tokio::test]
async fn the_previous_agents_output_is_the_list_and_the_next_agent_reads_the_results() {
    let list = FlowAgent::new(FnAgent::new("list", |cx, _| async move {
        cx.say(r#"["x","y"]"#);
        Ok(())
    }));
    let (check, _) = flaky(&[]);
    let map = Map::new("map", MapItems::LastOutput)
        .with_sub_agents([check])
        .unwrap();
    let heard: Arc<Mutex<String>> = Arc::default();
    let keep = Arc::clone(&heard);
    let sum = FlowAgent::new(FnAgent::new("sum", move |cx, input: AgentInput| {
        *keep.lock().unwrap() = item_of(&input);
        async move {
            cx.say("done");
            Ok(())
        }
    }));
    let flow = Sequential::new("flow")
        .with_sub_agents([list, map, sum])
        .unwrap();
    let events: Vec<AgentEvent> = Runner::new(flow).run("go").collect().await;
    assert!(errors(&events).is_empty(), "{:?}", errors(&events));
    assert_eq!(
        *heard.lock().unwrap(),
        r#"For context: [map] said: {"results":["x ok","y ok"],"errors":[]}."#
    );
    let all = lines(&events);
    assert!(
        all.contains(&"check@flow/list/map[1]/check: y ok".to_owned()),
        "{all:?}"
    );
}

#[tokio::test]
async fn an_interrupt_in_one_item_resumes_that_item_alone() {
    let runs = Arc::new(AtomicUsize::new(0));
    let n = Arc::clone(&runs);
    let ask = FnAgent::new("ask", move |cx, input: AgentInput| {
        n.fetch_add(1, Ordering::SeqCst);
        async move {
            let item = item_of(&input);
            if item == "b" {
                cx.interrupt(json!("approve b?"));
            } else {
                cx.say(format!("{item} done"));
            }
            Ok(())
        }
    })
    .on_resume(|cx, _, info: ResumeInfo| async move {
        assert!(info.was_interrupted());
        cx.say(format!("b approved: {}", info.data().unwrap()));
        Ok(())
    });
    let map = Map::new("map", MapItems::list(["a", "b", "c"]))
        .with_sub_agents([FlowAgent::new(ask)])
        .unwrap();
    let runner = Runner::builder(map)
        .checkpoint_store(InMemoryStore::new())
        .build();
    let first: Vec<AgentEvent> = runner
        .run(RunRequest::new([Message::user("go")]).checkpoint("m"))
        .collect()
        .await;
    let interrupt = first
        .iter()
        .find_map(|e| e.interrupt())
        .expect("item b interrupts");
    assert_eq!(interrupt.id, "map[1]/ask");
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert!(
        !first
            .iter()
            .any(|e| e.run_path().to_string() == "map" && e.message_output().is_some()),
        "no output before every item ended"
    );
    let resumed: Vec<AgentEvent> = runner
        .resume(ResumeRequest::new(
            "m",
            HashMap::from([("map[1]/ask".to_owned(), json!("yes"))]),
        ))
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(runs.load(Ordering::SeqCst), 3, "a and c are not run again");
    assert!(errors(&resumed).is_empty(), "{:?}", errors(&resumed));
    assert_eq!(
        output(&resumed, "map").results,
        [
            Some(json!("a done")),
            Some(json!("b approved: \"yes\"")),
            Some(json!("c done"))
        ]
    );
}

/// A model that answers each item's agent `ITEM handled`, item `a` only after the others
/// (it yields to them first), and counts its calls.
#[derive(Default)]
struct ItemModel {
    calls: AtomicUsize,
}

#[agentweave_runtime::async_trait]
impl ChatModel for ItemModel {
    fn model_name(&self) -> &str {
        "items"
    }

    async fn generate(&self, request: &ChatRequest) -> Result<Message, ModelError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let item = request
            .last_user_message()
            .map_or(String::new(), |m| m.content.clone());
        if item == "a" {
            for _ in 0..50 {
                tokio::task::yield_now().await;
            }
        }
        Ok(Message::assistant(format!("{item} handled")))
    }
}

fn item_runner(store: &InMemoryStore, model: Arc<ItemModel>) -> Runner {
    let worker = ChatModelAgent::builder("worker", model).build().unwrap();
    let map = Map::new("map", MapItems::list(["a", "b", "c", "d"]))
        .concurrency(3)
        .with_sub_agents([FlowAgent::new(worker)])
        .unwrap();
    Runner::builder(map)
        .stores(store.clone())
        .journal_store(store.clone())
        .durability(Durability::Sync)
        .lease(Duration::from_millis(60))
        .build()
}

/// Starts a turn of thread `t` and forgets it after `seen` events (its worker "dies").
async fn die_after(runner: &Runner, seen: usize) -> Vec<AgentEvent> {
    let mut turn: Turn = runner
        .turn(TurnRequest::new("t", Message::user("go")))
        .await
        .unwrap();
    let mut events = Vec::new();
    for _ in 0..seen {
        match turn.next().await {
            Some(event) => events.push(event),
            None => break,
        }
    }
    std::mem::forget(turn);
    events
}

#[tokio::test]
async fn a_map_whose_worker_died_is_recovered_without_asking_finished_items_again() {
    let reference_store = InMemoryStore::new();
    let model = Arc::new(ItemModel::default());
    let runner = item_runner(&reference_store, Arc::clone(&model));
    let events: Vec<AgentEvent> = runner
        .turn(TurnRequest::new("t", Message::user("go")))
        .await
        .unwrap()
        .collect()
        .await;
    let reference = lines(&events);
    // Item a's answer comes after the others': the record is not in the items' order.
    let answers: Vec<&String> = reference
        .iter()
        .filter(|l| l.contains("/worker: "))
        .collect();
    assert_eq!(answers.len(), 4, "{reference:#?}");
    assert!(
        answers[0].starts_with("worker@map[1]/worker"),
        "{answers:?}"
    );
    let mut record = runner.thread("t").records().await.unwrap().remove(0);
    record.at_ms = 0;
    for seen in 1..=reference.len() {
        let store = InMemoryStore::new();
        let first = Arc::new(ItemModel::default());
        let dead = die_after(&item_runner(&store, Arc::clone(&first)), seen).await;
        let answered = dead
            .iter()
            .filter(|e| {
                e.message_output()
                    .is_some_and(|m| m.content.ends_with("handled"))
            })
            .count();
        let again = Arc::new(ItemModel::default());
        let other = item_runner(&store, Arc::clone(&again));
        let turn = loop {
            match other.recover("t").await {
                Err(RecoverError::Leased { .. }) => {
                    tokio::time::sleep(Duration::from_millis(10)).await
                }
                other => break other.unwrap().expect("a dead turn"),
            }
        };
        let events: Vec<AgentEvent> = turn.collect().await;
        assert_eq!(lines(&events), reference, "point {seen}");
        let mut recovered = other.thread("t").records().await.unwrap().remove(0);
        recovered.at_ms = 0;
        assert_eq!(recovered, record, "point {seen}");
        assert!(
            again.calls.load(Ordering::SeqCst) <= 4 - answered,
            "point {seen}: the {answered} answers seen are not asked for again"
        );
    }
}
