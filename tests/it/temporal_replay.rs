//! Temporal's replayer over recorded histories of the example flows: each example that builds
//! a flow ran one turn as a thread workflow on a dev server (its questions answered by an
//! approver), and its history is a fixture (`tests/fixtures/temporal/EXAMPLE.json`). Replaying
//! each through today's workflow and flows must give no non-determinism error; a flow changed
//! under its history must be caught.
//!
//! The replay needs no server. The fixtures are recorded again (after a change that is meant
//! to change the workflow's commands) with the ignored test here, against a dev server:
//!
//! ```text
//! AGENTFLOW_TEMPORAL_ADDRESS=http://127.0.0.1:7233 cargo test --features temporal --test it \
//!     -- temporal_replay::record --ignored
//! ```
//!
//! Examples left out, and why: `a2a`, `serve` and `mcp_tools` serve or call a flow over a
//! protocol (their flows are other examples' desks or need an MCP server); `deep_research`
//! builds its flow inside its `run` (a deep agent over a workspace on disk), `memory` and `eval`
//! from outside state (a memory store read inside the orchestration, an eval case).

use std::path::PathBuf;
use std::time::Duration;

use agentweave::model::EnvModels;
use agentweave::temporal::{self, worker_flows, AnswerRequest, Thread};
use agentweave::FlowAgent;

#[allow(dead_code)]
#[cfg(feature = "sqlite")]
#[path = "../../examples/approvals.rs"]
mod approvals;
#[allow(dead_code)]
#[path = "../../examples/chat.rs"]
mod chat;
#[allow(dead_code)]
#[path = "../../examples/crash_recovery.rs"]
mod crash_recovery;
#[allow(dead_code)]
#[path = "../../examples/dsl_tour.rs"]
mod dsl_tour;
#[allow(dead_code)]
#[path = "../../examples/guardrails.rs"]
mod guardrails;
#[allow(dead_code)]
#[path = "../../examples/human_in_the_loop.rs"]
mod human_in_the_loop;
#[allow(dead_code)]
#[path = "../../examples/parallel_research.rs"]
mod parallel_research;
#[allow(dead_code)]
#[path = "../../examples/research_pipeline.rs"]
mod research_pipeline;
#[allow(dead_code)]
#[path = "../../examples/temporal.rs"]
mod temporal_example;

/// An example's flow, the name it runs under, and what the user says.
struct Example {
    name: &'static str,
    flow: FlowAgent,
    says: &'static str,
}

fn examples() -> Vec<Example> {
    let mut all = vec![
        Example {
            name: "customer_service",
            flow: crate::customer_service::desk(&EnvModels::offline()),
            says: "I want a refund, please.",
        },
        Example {
            name: "chat",
            flow: chat::Models::new().desk(),
            says: "My kettle arrived broken.",
        },
        Example {
            name: "crash_recovery",
            flow: crash_recovery::desk(
                &std::env::temp_dir().join("agentflow-replay-ledger"),
                false,
            ),
            says: "refund my order",
        },
        Example {
            name: "dsl_tour",
            flow: dsl_tour::CustomerService::builder()
                .refund(|node| {
                    agentweave::FnAgent::new(node, |cx, _| async move {
                        cx.say("Your refund is on its way.");
                        Ok(())
                    })
                })
                .build()
                .unwrap()
                .into(),
            says: "I want my money back",
        },
        Example {
            name: "guardrails",
            flow: guardrails::support_agent().unwrap(),
            says: "Where are my orders?",
        },
        Example {
            name: "human_in_the_loop",
            flow: human_in_the_loop::desk().unwrap(),
            says: "I want a refund for order #1042",
        },
        Example {
            name: "parallel_research",
            flow: parallel_research::Lab::builder()
                .crawler(|_| parallel_research::crawler())
                .build()
                .unwrap()
                .into(),
            says: "Which kettle should I buy?",
        },
        Example {
            name: "research_pipeline",
            flow: agentweave::workflow::Sequential::new("research")
                .with_sub_agents([
                    research_pipeline::drafter().unwrap(),
                    research_pipeline::reviewers().unwrap(),
                    research_pipeline::revise().unwrap(),
                ])
                .unwrap(),
            says: "Write a note on sea otters and kelp.",
        },
        Example {
            name: "temporal",
            flow: temporal_example::desk(),
            says: "please pay my bill",
        },
    ];
    #[cfg(feature = "sqlite")]
    all.push(Example {
        name: "approvals",
        flow: approvals::desk().unwrap(),
        says: "Please refund order #1042.",
    });
    all
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/temporal")
        .join(format!("{name}.json"))
}

fn flow_name(example: &str) -> String {
    format!("example-{example}")
}

/// The history the deliberately changed flow is replayed over: the `temporal` example's desk,
/// recorded under a name of its own (so that changing the flow under it races no other test).
const PROBE: &str = "changed_probe";

#[tokio::test]
async fn every_example_flow_replays_its_recorded_history_with_no_nondeterminism() {
    let mut replayed = Vec::new();
    for example in examples() {
        worker_flows().insert(flow_name(example.name), example.flow);
        let path = fixture(example.name);
        let json = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "the fixture {} is missing ({e}): record it (see this module's docs)",
                path.display()
            )
        });
        temporal::replay_history(&json)
            .await
            .unwrap_or_else(|e| panic!("example {}: the replayer says {e}", example.name));
        replayed.push(example.name);
    }
    eprintln!("replayed: {replayed:?}");
    assert!(replayed.len() >= 9, "{replayed:?}");
}

#[tokio::test]
async fn a_flow_changed_under_its_history_is_caught_by_the_replayer() {
    let json = std::fs::read(fixture(PROBE)).expect("the probe's fixture");
    // The recorded flow first: it replays.
    worker_flows().insert(flow_name(PROBE), temporal_example::desk());
    temporal::replay_history(&json)
        .await
        .expect("the recorded flow replays");
    // The same name, another flow: its first agent is the human-in-the-loop desk's triage,
    // which says something and transfers where the recorded desk called a model.
    worker_flows().insert(flow_name(PROBE), human_in_the_loop::desk().unwrap());
    let error = temporal::replay_history(&json)
        .await
        .expect_err("the changed flow is caught");
    let text = error.to_string().to_lowercase();
    eprintln!("the replayer says: {error}");
    assert!(
        text.contains("nondetermin") || text.contains("non-determin"),
        "{error}"
    );
}

/// Records the fixtures on the dev server: one thread per example, one turn, each question
/// answered by an approver, the history written as JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "records tests/fixtures/temporal against a dev server: run with --ignored"]
async fn record() {
    let address = std::env::var("AGENTFLOW_TEMPORAL_ADDRESS")
        .unwrap_or_else(|_| temporal::DEFAULT_ADDRESS.to_owned());
    let client = temporal::connect(&address).await.expect("a dev server");
    let queue = format!("replay-fixtures-{}", std::process::id());
    {
        let client = client.clone();
        let queue = queue.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime
                .block_on(temporal::run_worker(client, &queue))
                .expect("the worker runs");
        });
    }
    let mut all = examples();
    all.push(Example {
        name: PROBE,
        flow: temporal_example::desk(),
        says: "please pay my bill",
    });
    std::fs::create_dir_all(fixture("x").parent().unwrap()).unwrap();
    for example in all {
        worker_flows().insert(flow_name(example.name), example.flow);
        let id = format!("replay-{}-{}", example.name, std::process::id());
        let thread = Thread::start(&client, &queue, &flow_name(example.name), &id)
            .await
            .unwrap();
        let turn = {
            let thread = Thread::of(&client, &id);
            let says = example.says;
            tokio::spawn(async move { thread.turn("ana", says).await })
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while !turn.is_finished() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "example {}: the turn did not end in 60 s",
                example.name
            );
            if let Ok(Some(question)) = thread.question().await {
                let _ = thread
                    .answer(AnswerRequest {
                        by: "approver".into(),
                        grants: vec![temporal::APPROVE_GRANT.into()],
                        interrupt_id: question.id.clone(),
                        answer: serde_json::json!({ "approve": true }),
                        live: None,
                    })
                    .await;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let result = turn.await.unwrap().unwrap();
        assert!(!result.events.is_empty(), "example {}", example.name);
        tokio::time::timeout(Duration::from_secs(30), thread.close())
            .await
            .expect("the thread closes")
            .unwrap();
        let json = thread.history_json().await.unwrap();
        std::fs::write(fixture(example.name), &json).unwrap();
        eprintln!(
            "{}: {} events, {} bytes of history; the last: {}",
            example.name,
            result.events.len(),
            json.len(),
            result.events.last().unwrap()
        );
    }
}
