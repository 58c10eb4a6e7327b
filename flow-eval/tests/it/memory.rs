//! Long-term memory in eval cases: a case seeds the runner's memory, and a turn's `memory`
//! expectation checks what its recall gave the model and what is kept after it (an
//! extraction's consolidation included); a wrong expectation fails with a reason.

use agentweave_eval::runner::{CaseEnv, EvalRunner};
use agentweave_eval::set::EvalSet;
use agentweave_runtime::memory::{
    Memory, MemoryExtraction, MemoryRecall, Namespace, Partition, Scope, TransientMemoryStore,
};
use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::{ChatModelAgent, FlowAgent};
use serde_json::json;

/// A desk that recalls Alice's facts, and an extractor that replaces her printer.
fn desk(env: &CaseEnv) -> FlowAgent {
    let (memory, tenant) = (env.memory().unwrap().clone(), env.tenant().unwrap().clone());
    let alice = Scope::user("alice").unwrap();
    let recall = MemoryRecall::new(memory.clone(), tenant.clone(), [alice.clone()], 200);
    let model = env.model(ScriptedModel::new(["Is it the X200?"]));
    let desk = ChatModelAgent::builder("desk", model)
        .middleware(recall)
        .build()
        .unwrap();
    let extractor = ScriptedModel::rules()
        .after_tool("update_memory", "done")
        .otherwise(ScriptStep::tool_call(
            "update_memory",
            json!({"changes": [{"op": "update", "key": "printer", "fact": "Alice's printer is an X300"}]}),
        ));
    let at = Partition::new(tenant, alice);
    MemoryExtraction::new(extractor, memory, at, Namespace::parse("facts").unwrap())
        .after(FlowAgent::new(desk))
        .unwrap()
}

fn set(expect: serde_json::Value) -> EvalSet {
    let set = json!({"name": "memory", "cases": [{
        "id": "printer",
        "memory": [
            {"scope": "user:alice", "namespace": "facts", "key": "printer",
             "value": {"fact": "Alice's printer is an X200"}, "text": "Alice's printer is an X200"},
            {"scope": "user:bob", "namespace": "facts", "key": "printer",
             "value": {"fact": "Bob's printer is a Z1"}, "text": "Bob's printer is a Z1"}
        ],
        "turns": [{"user": "my printer jams, I have an X300 now", "expect": {"memory": expect}}]
    }]});
    EvalSet::from_json("inline.json", &set.to_string()).unwrap()
}

fn runner() -> EvalRunner {
    EvalRunner::new(desk).memory("acme", || Memory::new(TransientMemoryStore::new()))
}

#[tokio::test]
async fn a_case_seeds_memory_and_checks_what_a_turn_recalled_and_stored() {
    let expect = json!({
        "recalled": ["facts/printer"],
        "stored": [{"scope": "user:alice", "namespace": "facts", "key": "printer", "text_contains": "X300"},
                   {"scope": "user:bob", "namespace": "facts", "key": "printer", "text_contains": "Z1"}],
        "absent": [{"scope": "user:alice", "namespace": "facts", "key": "printer", "text_contains": "X200"},
                   {"scope": "user:alice", "namespace": "facts", "key": "laptop"}]
    });
    let report = runner().run(&set(expect)).await;
    assert!(report.passed(), "{}", report.table());
    let scores = &report.cases[0].runs[0].turns[0].scores;
    assert_eq!(scores.len(), 1);
    assert_eq!(scores[0].criterion, "memory");
    assert_eq!(scores[0].reason, "5 memory checks hold");
}

#[tokio::test]
async fn wrong_memory_expectations_fail_with_their_reasons() {
    let expect = json!({
        "recalled": ["facts/laptop"],
        "not_recalled": ["facts/printer"],
        "stored": [{"scope": "user:alice", "namespace": "facts", "key": "printer", "value": "X200"}],
        "absent": [{"scope": "user:bob", "namespace": "facts", "key": "printer"}]
    });
    let report = runner().run(&set(expect)).await;
    assert!(!report.passed());
    let score = &report.cases[0].runs[0].turns[0].scores[0];
    assert!(!score.passed && score.score == 0.0, "{score:?}");
    for part in [
        "'facts/laptop' was not recalled",
        "'facts/printer' was recalled",
        "'facts/printer' of user:alice is kept as",
        "'facts/printer' of user:bob is kept",
    ] {
        assert!(score.reason.contains(part), "{part}: {}", score.reason);
    }
}

#[tokio::test]
async fn memory_cases_need_a_runner_with_memory_and_valid_addresses() {
    let no_memory = EvalRunner::new(|_| {
        FlowAgent::new(
            ChatModelAgent::builder("desk", ScriptedModel::new(["hi"]))
                .build()
                .unwrap(),
        )
    });
    let report = no_memory.run(&set(json!({"recalled": []}))).await;
    let error = report.cases[0].runs[0].error.clone().unwrap();
    assert!(error.contains("EvalRunner::memory"), "{error}");

    let hostile = json!({"name": "memory", "cases": [{"id": "x",
        "memory": [{"scope": "user:../bob", "namespace": "facts", "key": "k", "value": 1}],
        "turns": [{"user": "hi"}]}]});
    let hostile = EvalSet::from_json("inline.json", &hostile.to_string()).unwrap();
    let report = runner().run(&hostile).await;
    let error = report.cases[0].runs[0].error.clone().unwrap();
    assert!(error.contains("memory scope 'user:../bob'"), "{error}");
}
