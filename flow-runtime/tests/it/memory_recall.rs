//! Recall before a model call ([`MemoryRecall`]): what is injected (under the token bound),
//! what the events show, once per turn, and never another tenant's items.

use agentweave_runtime::history::estimate_tokens;
use agentweave_runtime::memory::{
    ItemKey, Memory, MemoryRecall, Namespace, Partition, PutItem, Scope, Tenant,
    TransientMemoryStore, MEMORY_RECALL_EVENT, RECALL_HEADER,
};
use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::{
    tool_fn_with_context, AgentEvent, ChatModelAgent, EventOutput, FlowAgent, InMemoryStore,
    Message, Runner, TurnRequest,
};
use futures::StreamExt;
use serde_json::{json, Value};

fn user(tenant: &str, id: &str) -> Partition {
    Partition::new(Tenant::new(tenant).unwrap(), Scope::user(id).unwrap())
}

async fn keep(memory: &Memory, at: &Partition, key: &str, text: &str) {
    let put = PutItem::new(json!({ "fact": text })).text(text);
    let (ns, key) = (
        Namespace::parse("desk").unwrap(),
        ItemKey::new(key).unwrap(),
    );
    memory.put(at, &ns, &key, put).await.unwrap();
}

fn recalls(events: &[AgentEvent]) -> Vec<Value> {
    events
        .iter()
        .filter_map(|e| match &e.output {
            Some(EventOutput::Custom(c)) => c.get(MEMORY_RECALL_EVENT).cloned(),
            _ => None,
        })
        .collect()
}

fn desk(model: &ScriptedModel, recall: MemoryRecall) -> FlowAgent {
    let agent = ChatModelAgent::builder("desk", model.clone())
        .instruction("You are a support desk.")
        .middleware(recall)
        .build()
        .unwrap();
    FlowAgent::new(agent)
}

#[tokio::test]
async fn recalled_facts_are_injected_and_shown_and_another_tenant_sees_none() {
    let memory = Memory::new(TransientMemoryStore::new());
    keep(
        &memory,
        &user("acme", "alice"),
        "printer",
        "Alice's printer is an X200 laser printer",
    )
    .await;
    keep(
        &memory,
        &user("acme", "alice"),
        "tone",
        "Alice prefers short answers",
    )
    .await;
    // The same user id in another tenant, and another user of the same tenant.
    keep(
        &memory,
        &user("globex", "alice"),
        "printer",
        "globex printer is a secret P9",
    )
    .await;
    keep(
        &memory,
        &user("acme", "bob"),
        "printer",
        "Bob's printer is a Z1 printer",
    )
    .await;

    let acme = Tenant::new("acme").unwrap();
    let recall = MemoryRecall::new(memory.clone(), acme, [Scope::user("alice").unwrap()], 500);
    let model = ScriptedModel::new(["Is it the X200 again?"]);
    let events: Vec<_> = Runner::new(desk(&model, recall))
        .run("my printer jams")
        .collect()
        .await;
    let request = &model.requests()[0];
    let system = &request.messages[0];
    assert!(
        system.content.starts_with("You are a support desk.\n\n"),
        "{system:?}"
    );
    assert!(system.content.contains(RECALL_HEADER));
    assert!(system
        .content
        .contains("[desk/printer] Alice's printer is an X200 laser printer"));
    assert!(!system.content.contains("P9") && !system.content.contains("Z1"));
    let shown = recalls(&events);
    assert_eq!(shown.len(), 1, "{events:?}");
    let shown = &shown[0];
    assert_eq!(shown["query"], "my printer jams");
    assert_eq!(shown["items"][0]["key"], "printer");
    assert_eq!(shown["items"][0]["scope"], "res:user:alice");
    assert_eq!(shown["items"][0]["version"], 1);
    assert!(shown["tokens"].as_u64().unwrap() <= 500);
    // The recall event comes before the model's reply, at the agent's path.
    let at = events
        .iter()
        .position(|e| e.message_output().is_some())
        .unwrap();
    assert!(events[..at]
        .iter()
        .any(|e| matches!(&e.output, Some(EventOutput::Custom(_)))));

    // The other tenant's Alice, asking the same, gets her own only.
    let globex = Tenant::new("globex").unwrap();
    let recall = MemoryRecall::new(memory, globex, [Scope::user("alice").unwrap()], 500);
    let model = ScriptedModel::new(["Hello."]);
    let events: Vec<_> = Runner::new(desk(&model, recall))
        .run("my printer")
        .collect()
        .await;
    let system = &model.requests()[0].messages[0].content;
    assert!(
        system.contains("P9") && !system.contains("X200"),
        "{system}"
    );
    let shown = recalls(&events);
    assert_eq!(shown[0]["items"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn the_block_stays_under_the_token_bound() {
    let memory = Memory::new(TransientMemoryStore::new());
    let alice = user("acme", "alice");
    for k in 0..20 {
        let text = format!(
            "printer note {k}: {}",
            "the printer was serviced ".repeat(k % 4 + 1)
        );
        keep(&memory, &alice, &format!("note-{k}"), &text).await;
    }
    let acme = Tenant::new("acme").unwrap();
    for bound in [0, 10, 40, 80, 150, 400] {
        let recall = MemoryRecall::new(memory.clone(), acme.clone(), [alice.scope.clone()], bound)
            .per_scope(20);
        let got = recall.recall("printer serviced").await.unwrap();
        match &got.block {
            Some(block) => {
                let counted = estimate_tokens(&Message::system(block.as_str()));
                assert_eq!(counted, got.tokens);
                assert!(counted <= bound, "bound {bound}: {counted} tokens");
                assert_eq!(block.lines().count(), got.items.len() + 1);
            }
            None => assert!(got.items.is_empty() && got.tokens == 0),
        }
        assert_eq!(got.items.len() + got.left_out, 20, "bound {bound}");
        if bound <= 10 {
            assert!(
                got.block.is_none(),
                "a bound under the header's cost keeps nothing"
            );
        }
        if bound == 400 {
            assert!(got.left_out > 0 && got.items.len() > 3, "{got:?}");
        }
    }
    // Nothing kept: the request is left as it was, and the event says so.
    let recall = MemoryRecall::new(memory, acme, [alice.scope.clone()], 5);
    let model = ScriptedModel::new(["ok"]);
    let events: Vec<_> = Runner::new(desk(&model, recall))
        .run("printer")
        .collect()
        .await;
    assert_eq!(
        model.requests()[0].messages[0].content,
        "You are a support desk."
    );
    let shown = recalls(&events);
    assert_eq!(shown[0]["items"], json!([]));
    assert_eq!(shown[0]["left_out"], 5);
}

#[tokio::test]
async fn it_recalls_once_per_turn_and_again_the_next_turn() {
    let memory = Memory::new(TransientMemoryStore::new());
    let alice = user("acme", "alice");
    keep(&memory, &alice, "printer", "Alice's printer is an X200").await;
    let acme = Tenant::new("acme").unwrap();
    let recall = MemoryRecall::new(memory.clone(), acme, [alice.scope.clone()], 500)
        .under(Namespace::parse("desk").unwrap());
    // A tool that changes the memory between the turn's two model calls: the second call
    // still gets the turn's block (the same prompt), the next turn the new fact.
    let (m, at) = (memory.clone(), alice.clone());
    let swap = tool_fn_with_context("swap", "Replaces the printer.", move |_cx, _a: Value| {
        let (m, at) = (m.clone(), at.clone());
        async move {
            keep(&m, &at, "printer", "Alice's printer is now a Y300").await;
            Ok::<_, String>("done".to_owned())
        }
    });
    let model = ScriptedModel::new([
        ScriptStep::tool_call("swap", json!({})),
        ScriptStep::text("Swapped."),
        ScriptStep::text("The Y300."),
    ]);
    let agent = ChatModelAgent::builder("desk", model.clone())
        .instruction("You are a support desk.")
        .tool(swap)
        .middleware(recall)
        .build()
        .unwrap();
    let store = InMemoryStore::new();
    let runner = Runner::builder(FlowAgent::new(agent)).stores(store).build();
    let first: Vec<_> = runner
        .turn(TurnRequest::new("t", Message::user("swap my printer")))
        .await
        .unwrap()
        .collect()
        .await;
    let second: Vec<_> = runner
        .turn(TurnRequest::new(
            "t",
            Message::user("which printer do I have?"),
        ))
        .await
        .unwrap()
        .collect()
        .await;
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let system = |k: usize| requests[k].messages[0].content.clone();
    assert!(system(0).contains("X200"));
    assert_eq!(
        system(1),
        system(0),
        "one recall for the turn's model calls"
    );
    assert!(system(2).contains("Y300") && !system(2).contains("X200"));
    assert_eq!(recalls(&first).len(), 1, "{first:?}");
    assert_eq!(recalls(&second).len(), 1);
    assert_eq!(recalls(&second)[0]["items"][0]["version"], 2);
    // The recall event is for display: the thread's record holds no trace of it.
    let records = runner.thread("t").records().await.unwrap();
    let recorded = serde_json::to_string(&records).unwrap();
    assert!(!recorded.contains(MEMORY_RECALL_EVENT), "{recorded}");
}

#[tokio::test]
async fn the_query_is_the_turns_user_message_not_another_agents_words() {
    let memory = Memory::new(TransientMemoryStore::new());
    let alice = user("acme", "alice");
    keep(&memory, &alice, "printer", "Alice's printer is an X200").await;
    keep(&memory, &alice, "coffee", "Alice's coffee machine is a C5").await;
    let triage = agentweave_runtime::FnAgent::new("triage", |cx, _| async move {
        cx.say("Routing this coffee machine question.");
        Ok(())
    });
    let recall = MemoryRecall::new(
        memory,
        Tenant::new("acme").unwrap(),
        [alice.scope.clone()],
        500,
    )
    .per_scope(1);
    let model = ScriptedModel::new(["The X200?"]);
    let tree = agentweave_runtime::Sequential::new("desk_line")
        .with_sub_agents([FlowAgent::new(triage), desk(&model, recall)])
        .unwrap();
    let events: Vec<_> = Runner::new(tree).run("my printer jams").collect().await;
    let shown = recalls(&events);
    assert_eq!(shown[0]["query"], "my printer jams", "{shown:?}");
    assert_eq!(shown[0]["items"][0]["key"], "printer");
}
