//! Extraction after a turn ([`MemoryExtraction`]): consolidation against the kept facts (a
//! changed fact replaces the old one, a fact no longer true is removed), hostile keys refused,
//! and a turn whose worker died at any point recovered with its extraction applied once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::memory::{
    Hit, ItemKey, ListQuery, Memory, MemoryError, MemoryExtraction, MemoryItem, MemoryStore,
    Namespace, Partition, PutItem, Scope, Tenant, TransientMemoryStore,
};
use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::{
    AgentEvent, ChatModelAgent, Durability, FlowAgent, InMemoryStore, Message, RecoverError,
    Runner, Turn, TurnRequest,
};
use async_trait::async_trait;
use futures::StreamExt;
use serde_json::json;

/// A store that counts the writes and deletes that reach it.
#[derive(Default)]
struct Counting {
    inner: TransientMemoryStore,
    writes: AtomicUsize,
}

#[async_trait]
impl MemoryStore for Counting {
    async fn get(
        &self,
        at: &Partition,
        namespace: &Namespace,
        key: &ItemKey,
    ) -> Result<Option<MemoryItem>, MemoryError> {
        self.inner.get(at, namespace, key).await
    }
    async fn put(
        &self,
        at: &Partition,
        namespace: &Namespace,
        key: &ItemKey,
        item: PutItem,
    ) -> Result<u64, MemoryError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.put(at, namespace, key, item).await
    }
    async fn delete(
        &self,
        at: &Partition,
        namespace: &Namespace,
        key: &ItemKey,
        expect: Option<u64>,
    ) -> Result<bool, MemoryError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.delete(at, namespace, key, expect).await
    }
    async fn scan(
        &self,
        at: &Partition,
        prefix: Option<&Namespace>,
    ) -> Result<Vec<MemoryItem>, MemoryError> {
        self.inner.scan(at, prefix).await
    }
    async fn search_text(
        &self,
        at: &Partition,
        prefix: Option<&Namespace>,
        terms: &[String],
        limit: Option<usize>,
    ) -> Result<Vec<Hit>, MemoryError> {
        self.inner.search_text(at, prefix, terms, limit).await
    }
    async fn scan_vectors(
        &self,
        at: &Partition,
        prefix: Option<&Namespace>,
    ) -> Result<Vec<(Namespace, ItemKey, Vec<f32>)>, MemoryError> {
        self.inner.scan_vectors(at, prefix).await
    }
    async fn purge_expired(&self) -> Result<usize, MemoryError> {
        self.inner.purge_expired().await
    }
}

fn alice() -> Partition {
    Partition::new(Tenant::new("acme").unwrap(), Scope::user("alice").unwrap())
}

fn facts_ns() -> Namespace {
    Namespace::parse("facts").unwrap()
}

/// Key, text and version of every fact kept for Alice.
async fn kept(memory: &Memory) -> Vec<(String, String, u64)> {
    memory
        .list(&alice(), &ListQuery::all())
        .await
        .unwrap()
        .into_iter()
        .map(|i| (i.key.to_string(), i.text.unwrap_or_default(), i.version))
        .collect()
}

fn update(changes: serde_json::Value) -> ScriptStep {
    ScriptStep::tool_call("update_memory", json!({ "changes": changes }))
}

fn tree(desk: &ScriptedModel, extractor: &ScriptedModel, memory: &Memory) -> FlowAgent {
    let desk = ChatModelAgent::builder("desk", desk.clone())
        .instruction("You are a support desk.")
        .build()
        .unwrap();
    MemoryExtraction::new(extractor.clone(), memory.clone(), alice(), facts_ns())
        .after(FlowAgent::new(desk))
        .unwrap()
}

async fn turn(runner: &Runner, text: &str) -> Vec<AgentEvent> {
    runner
        .turn(TurnRequest::new("t", Message::user(text)))
        .await
        .unwrap()
        .collect()
        .await
}

#[tokio::test]
async fn a_changed_fact_replaces_the_old_one_and_a_false_one_is_removed() {
    let memory = Memory::new(TransientMemoryStore::new());
    let desk = ScriptedModel::new(["Noted.", "Noted the Y300.", "Sorry to hear."]);
    let extractor = ScriptedModel::new([
        update(json!([
            {"op": "add", "key": "printer", "fact": "Alice's printer is an X200"},
            {"op": "add", "key": "os", "fact": "Alice uses Linux"},
        ])),
        ScriptStep::text("done"),
        // The model sees the kept facts and updates the printer under its key.
        update(json!([{"op": "update", "key": "printer", "fact": "Alice's printer is a Y300"}])),
        ScriptStep::text("done"),
        update(json!([{"op": "remove", "key": "os"}])),
        ScriptStep::text("done"),
    ]);
    let runner = Runner::builder(tree(&desk, &extractor, &memory))
        .stores(InMemoryStore::new())
        .build();
    turn(&runner, "I have an X200 printer and I use Linux").await;
    assert_eq!(
        kept(&memory).await,
        [
            ("os".into(), "Alice uses Linux".into(), 1),
            ("printer".into(), "Alice's printer is an X200".into(), 1)
        ]
    );
    let second = turn(&runner, "I replaced the X200 with a Y300").await;
    assert_eq!(
        kept(&memory).await,
        [
            ("os".into(), "Alice uses Linux".into(), 1),
            ("printer".into(), "Alice's printer is a Y300".into(), 2)
        ],
        "one fact per thing: the printer was replaced, not added"
    );
    // What the extractor was shown: the kept facts with their keys, and this turn only.
    let asked = &extractor.requests()[2];
    let system = &asked.messages[0].content;
    assert!(
        system.contains("- printer: Alice's printer is an X200"),
        "{system}"
    );
    assert!(system.contains("- os: Alice uses Linux"), "{system}");
    let seen: String = asked.messages.iter().map(|m| m.content.as_str()).collect();
    assert!(
        seen.contains("Y300") && !seen.contains("I have an X200 printer"),
        "{seen}"
    );
    // The turn's events show what was stored.
    let result = second
        .iter()
        .filter_map(|e| e.message_output())
        .find(|m| m.tool_name.as_deref() == Some("update_memory"))
        .unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&result.content).unwrap(),
        json!({"added": [], "updated": ["printer"], "removed": [], "unchanged": []})
    );
    turn(&runner, "I moved to Windows, by the way").await;
    assert_eq!(
        kept(&memory).await,
        [("printer".into(), "Alice's printer is a Y300".into(), 2)]
    );
    // The desk never sees the extractor's messages in later turns.
    for request in desk.requests() {
        for m in &request.messages {
            assert!(!m.content.contains("update_memory"), "{m:?}");
            assert!(m.tool_calls.is_empty(), "{m:?}");
        }
    }
}

#[tokio::test]
async fn hostile_keys_and_missing_facts_are_refused_and_nothing_is_written() {
    let store = Arc::new(Counting::default());
    let memory = Memory::from_arc(store.clone());
    let extraction = MemoryExtraction::new(
        ScriptedModel::new(["done"]),
        memory.clone(),
        alice(),
        facts_ns(),
    );
    let tool = extraction.update_tool();
    let cx = agentweave_runtime::tool::ToolContext::new(
        agentweave_runtime::RunContext::new_run(
            agentweave_runtime::Session::new(),
            [],
            false,
            "test",
        ),
        "call-1",
    );
    for changes in [
        json!([{"op": "add", "key": "ok", "fact": "fine"}, {"op": "add", "key": "../billing", "fact": "x"}]),
        json!([{"op": "add", "key": "ok", "fact": "fine"}, {"op": "add", "key": "pаssword", "fact": "x"}]),
        json!([{"op": "add", "key": "ok", "fact": "fine"}, {"op": "update", "key": "other"}]),
        json!([{"op": "add", "key": "ok", "fact": "fine", "tenant": "globex"}]),
        json!([{"op": "rename", "key": "ok"}]),
    ] {
        let args = json!({ "changes": changes }).to_string();
        let refused = tool.call(&cx, &args).await;
        assert!(refused.is_err(), "{changes}: {refused:?}");
    }
    let too_many: Vec<_> = (0..51)
        .map(|k| json!({"op": "add", "key": format!("k{k}"), "fact": "f"}))
        .collect();
    let args = json!({ "changes": too_many }).to_string();
    assert!(tool.call(&cx, &args).await.is_err());
    assert_eq!(store.writes.load(Ordering::SeqCst), 0);
    assert!(kept(&memory).await.is_empty());
    // Applied twice, the same changes write once.
    let args = json!({"changes": [
        {"op": "add", "key": "printer", "fact": "Alice's printer is an X200"},
        {"op": "remove", "key": "never-kept"},
    ]})
    .to_string();
    tool.call(&cx, &args).await.unwrap();
    let again = tool.call(&cx, &args).await.unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&again).unwrap(),
        json!({"added": [], "updated": [], "removed": [], "unchanged": ["printer", "never-kept"]})
    );
    assert_eq!(store.writes.load(Ordering::SeqCst), 1);
}

const LEASE: Duration = Duration::from_millis(60);

fn durable(tree: FlowAgent, store: &InMemoryStore) -> Runner {
    Runner::builder(tree)
        .stores(store.clone())
        .journal_store(store.clone())
        .durability(Durability::Sync)
        .lease(LEASE)
        .build()
}

/// The desk and an extractor that answer by what they are asked (a call in flight when the
/// worker died is asked again), and how many times the extractor was asked for its decision.
fn scripts() -> (ScriptedModel, ScriptedModel, Arc<AtomicUsize>) {
    let desk = ScriptedModel::rules().otherwise("Noted, the X200.");
    let decisions = Arc::new(AtomicUsize::new(0));
    let counted = decisions.clone();
    let extractor = ScriptedModel::rules()
        .after_tool("update_memory", "done")
        .otherwise_with(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
            update(json!([{"op": "add", "key": "printer", "fact": "Alice's printer is an X200"}]))
        });
    (desk, extractor, decisions)
}

#[tokio::test]
async fn a_turn_that_died_at_any_point_is_recovered_with_its_extraction_applied_once() {
    // The uninterrupted turn: its events.
    let reference = {
        let memory = Memory::new(TransientMemoryStore::new());
        let (desk, extractor, _) = scripts();
        let store = InMemoryStore::new();
        let events = turn(
            &durable(tree(&desk, &extractor, &memory), &store),
            "I have an X200",
        )
        .await;
        assert_eq!(kept(&memory).await.len(), 1);
        events.len()
    };
    assert!(reference >= 4, "{reference}");
    for seen in 1..=reference {
        let counting = Arc::new(Counting::default());
        let memory = Memory::from_arc(counting.clone());
        let store = InMemoryStore::new();
        let (desk, extractor, decisions) = scripts();
        let dying = durable(tree(&desk, &extractor, &memory), &store);
        let mut dead: Turn = dying
            .turn(TurnRequest::new("t", Message::user("I have an X200")))
            .await
            .unwrap();
        for _ in 0..seen {
            if dead.next().await.is_none() {
                break;
            }
        }
        std::mem::forget(dead);
        // Another worker on the same stores.
        let other = durable(tree(&desk, &extractor, &memory), &store);
        let mut recovered = None;
        for _ in 0..500 {
            match other.recover("t").await {
                Err(RecoverError::Leased { .. }) => {
                    tokio::time::sleep(Duration::from_millis(10)).await
                }
                result => {
                    recovered = result.unwrap();
                    break;
                }
            }
        }
        if let Some(turn) = recovered {
            let events: Vec<_> = turn.collect().await;
            assert!(
                events.iter().all(|e| e.error.is_none()),
                "died after {seen}: {events:?}"
            );
        }
        assert_eq!(
            kept(&memory).await,
            [("printer".into(), "Alice's printer is an X200".into(), 1)],
            "died after {seen} events"
        );
        assert_eq!(
            counting.writes.load(Ordering::SeqCst),
            1,
            "died after {seen}: one write"
        );
        // The events are the desk's reply, the extractor's decision, its result, its end: a
        // decision the dead worker delivered was journaled (Sync) and is not asked again.
        let asked = decisions.load(Ordering::SeqCst);
        if seen >= 2 {
            assert_eq!(
                asked, 1,
                "died after {seen}: the journaled decision was asked again"
            );
        } else {
            assert!(
                (1..=2).contains(&asked),
                "died after {seen}: asked {asked} times"
            );
        }
        assert_eq!(other.thread("t").records().await.unwrap().len(), 1);
    }
}
