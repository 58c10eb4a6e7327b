//! The memory tools (`remember`, `recall`, `forget`): they work in the partition the
//! application gave them and nowhere else; the model cannot name a tenant or a scope, and
//! hostile keys and namespaces are refused with an error the model reads, writing nothing.

use std::sync::Arc;

use agentweave_runtime::memory::{
    HashEmbedder, ItemKey, ListQuery, Memory, MemoryTools, Namespace, Partition, Scope, Tenant,
    TransientMemoryStore,
};
use agentweave_runtime::tool::{Tool, ToolContext, ToolError};
use serde_json::{json, Value};

fn cx() -> ToolContext {
    ToolContext::new(
        agentweave_runtime::RunContext::new_run(
            agentweave_runtime::Session::new(),
            [],
            false,
            "test",
        ),
        "call-1",
    )
}

fn user(tenant: &str, id: &str) -> Partition {
    Partition::new(Tenant::new(tenant).unwrap(), Scope::user(id).unwrap())
}

fn tools(memory: &Memory, at: Partition) -> Vec<Arc<dyn Tool>> {
    MemoryTools::new(memory.clone(), at, Namespace::parse("desk").unwrap()).all()
}

async fn call(tools: &[Arc<dyn Tool>], name: &str, args: Value) -> Result<String, ToolError> {
    let tool = tools.iter().find(|t| t.name() == name).unwrap();
    tool.call(&cx(), &args.to_string()).await
}

fn facts(recalled: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(recalled).unwrap();
    v["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{}:{}",
                f["key"].as_str().unwrap(),
                f["fact"].as_str().unwrap()
            )
        })
        .collect()
}

#[tokio::test]
async fn remember_recall_and_forget_work_in_the_given_partition() {
    let memory = Memory::new(TransientMemoryStore::new());
    let alice = user("acme", "alice");
    let t = tools(&memory, alice.clone());
    let said = call(
        &t,
        "remember",
        json!({"key": "printer", "fact": "Alice's printer is an X200", "namespace": "devices"}),
    )
    .await;
    assert_eq!(said.unwrap(), "remembered 'printer'");
    call(
        &t,
        "remember",
        json!({"key": "tone", "fact": "Alice prefers short answers"}),
    )
    .await
    .unwrap();
    let again = call(
        &t,
        "remember",
        json!({"key": "printer", "fact": "Alice's printer is now an X300", "namespace": "devices"}),
    )
    .await;
    assert!(again.unwrap().contains("replaces"));

    // Kept under the application's root, in Alice's partition.
    let stored = memory
        .get(
            &alice,
            &Namespace::parse("desk/devices").unwrap(),
            &ItemKey::new("printer").unwrap(),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.value,
        json!({"fact": "Alice's printer is now an X300"})
    );
    assert_eq!(stored.version, 2);

    let recalled = call(&t, "recall", json!({"query": "which printer"}))
        .await
        .unwrap();
    assert_eq!(facts(&recalled), ["printer:Alice's printer is now an X300"]);
    let v: Value = serde_json::from_str(&recalled).unwrap();
    assert_eq!(
        v["facts"][0]["namespace"], "devices",
        "namespaces are shown relative"
    );
    let scoped = call(
        &t,
        "recall",
        json!({"query": "printer answers", "namespace": "devices"}),
    )
    .await
    .unwrap();
    assert_eq!(facts(&scoped), ["printer:Alice's printer is now an X300"]);

    assert_eq!(
        call(
            &t,
            "forget",
            json!({"key": "printer", "namespace": "devices"})
        )
        .await
        .unwrap(),
        "forgot 'printer'"
    );
    assert_eq!(
        call(
            &t,
            "forget",
            json!({"key": "printer", "namespace": "devices"})
        )
        .await
        .unwrap(),
        "nothing was kept under 'printer'"
    );
    let left = memory.list(&alice, &ListQuery::all()).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].key.as_str(), "tone");
}

#[tokio::test]
async fn recall_ranks_by_meaning_with_an_embedder() {
    let memory = Memory::new(TransientMemoryStore::new()).with_embedder(HashEmbedder::new(256));
    let t = tools(&memory, user("acme", "alice"));
    for (key, fact) in [
        ("printer", "the printer jams on thick paper"),
        ("laptop", "the laptop battery is weak"),
        ("phone", "the phone screen is cracked"),
    ] {
        call(&t, "remember", json!({"key": key, "fact": fact}))
            .await
            .unwrap();
    }
    let recalled = call(&t, "recall", json!({"query": "paper jams", "limit": 1}))
        .await
        .unwrap();
    assert_eq!(
        facts(&recalled),
        ["printer:the printer jams on thick paper"]
    );
}

#[tokio::test]
async fn hostile_arguments_are_refused_with_an_error_the_model_reads_and_nothing_crosses() {
    let memory = Memory::new(TransientMemoryStore::new());
    let victim = user("acme", "alice");
    let victim_tools = tools(&memory, victim.clone());
    call(
        &victim_tools,
        "remember",
        json!({"key": "card", "fact": "victim secret card 4242", "namespace": "billing"}),
    )
    .await
    .unwrap();

    let attacker = user("globex", "alice");
    let t = tools(&memory, attacker.clone());
    let hostile = [
        (
            "remember",
            json!({"key": "x", "fact": "f", "namespace": "../../acme/desk"}),
        ),
        (
            "remember",
            json!({"key": "x", "fact": "f", "namespace": ".."}),
        ),
        (
            "remember",
            json!({"key": "x", "fact": "f", "namespace": "billing/../.."}),
        ),
        (
            "remember",
            json!({"key": "x", "fact": "f", "namespace": "/billing"}),
        ),
        ("remember", json!({"key": "../card", "fact": "f"})),
        ("remember", json!({"key": "card\u{0}", "fact": "f"})),
        (
            "remember",
            json!({"key": "cаrd", "fact": "f", "namespace": "billing"}),
        ), // Cyrillic а
        (
            "remember",
            json!({"key": "x", "fact": "f", "namespace": "ｂilling"}),
        ),
        // The model cannot choose a tenant or a scope: the tools have no such argument.
        (
            "remember",
            json!({"key": "card", "fact": "f", "tenant": "acme"}),
        ),
        (
            "recall",
            json!({"query": "card", "tenant": "acme", "scope": "user:alice"}),
        ),
        ("recall", json!({"query": "card", "namespace": "../../.."})),
        (
            "forget",
            json!({"key": "card", "namespace": "billing", "tenant": "acme"}),
        ),
        ("forget", json!({"key": "..", "namespace": "billing"})),
        ("forget", json!({"key": "card", "namespace": "billing\\.."})),
    ];
    for (tool, args) in &hostile {
        match call(&t, tool, args.clone()).await {
            Err(e @ ToolError::InvalidArguments { .. }) => {
                let text = e.to_model_text();
                assert!(text.starts_with("error: invalid arguments"), "{text}");
            }
            other => panic!("{tool} {args} was not refused: {other:?}"),
        }
    }
    let refused = call(
        &t,
        "remember",
        json!({"key": "x", "fact": "f", "namespace": "../acme"}),
    )
    .await
    .unwrap_err()
    .to_model_text();
    assert!(
        refused.contains("namespace '../acme' is refused"),
        "{refused}"
    );

    // Same user name, same namespace and key, another tenant: nothing of the victim's.
    let recalled = call(&t, "recall", json!({"query": "victim secret card 4242"}))
        .await
        .unwrap();
    assert!(facts(&recalled).is_empty(), "{recalled}");
    let forgot = call(&t, "forget", json!({"key": "card", "namespace": "billing"}))
        .await
        .unwrap();
    assert_eq!(forgot, "nothing was kept under 'card'");
    call(
        &t,
        "remember",
        json!({"key": "card", "fact": "attacker's", "namespace": "billing"}),
    )
    .await
    .unwrap();
    assert_eq!(
        memory
            .list(&attacker, &ListQuery::all())
            .await
            .unwrap()
            .len(),
        1
    );
    let kept = memory.list(&victim, &ListQuery::all()).await.unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].value, json!({"fact": "victim secret card 4242"}));
    let victim_recall = call(&victim_tools, "recall", json!({"query": "card"}))
        .await
        .unwrap();
    assert_eq!(facts(&victim_recall), ["card:victim secret card 4242"]);
}

#[tokio::test]
async fn the_tools_describe_arguments_without_a_tenant_or_scope() {
    let memory = Memory::new(TransientMemoryStore::new());
    for tool in tools(&memory, user("acme", "alice")) {
        let params = tool.parameters();
        let props = params["properties"].as_object().unwrap();
        for forbidden in ["tenant", "scope", "user", "thread"] {
            assert!(!props.contains_key(forbidden), "{}: {params}", tool.name());
        }
        assert!(!tool.description().is_empty());
    }
}
