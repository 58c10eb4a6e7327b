//! An agent served by the official A2A Python SDK (`tests/a2a/sdk_server.py`, a2a-sdk
//! installed by `.ci/a2a.sh`) as the `billing` node of a tree: triage transfers to it, its
//! events arrive at `triage/billing`, its question interrupts the turn, the resume reaches it
//! through its task, and control returns to triage. The node sends the remote agent the
//! conversation it sees (the earlier turn, triage's words), its request last.

use std::collections::HashMap;
use std::time::Duration;

use agentweave_a2a::A2aAgent;
use agentweave_runtime::TurnRequest;
use agentweave_runtime::{
    set_sub_agents, FlowAgent, FnAgent, InMemoryStore, Message, Runner, TurnOutcome,
};
use futures::StreamExt;
use serde_json::json;

/// The Python server, killed when dropped.
struct PythonServer {
    child: tokio::process::Child,
    base: String,
}

impl Drop for PythonServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

async fn start_server(python: &str) -> PythonServer {
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/a2a/sdk_server.py");
    let child = tokio::process::Command::new(python)
        .arg(script)
        .arg(port.to_string())
        .kill_on_drop(true)
        .spawn()
        .expect("the SDK server starts");
    let base = format!("http://127.0.0.1:{port}");
    let server = PythonServer { child, base };
    // Ready when its card answers (at most 30 s).
    let card = format!("{}/.well-known/agent-card.json", server.base);
    for _ in 0..300 {
        if reqwest::get(&card)
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return server;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the SDK server did not answer at {card}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_sdk_agent_is_a_remote_node_of_the_tree() {
    let Ok(python) = std::env::var("AGENTFLOW_A2A_PYTHON") else {
        agentweave_runtime::testing::skip_missing_component(
            "the A2A Python SDK (a2a-sdk)",
            "source .ci/a2a.sh to install it and set AGENTFLOW_A2A_PYTHON",
        );
        return;
    };
    let server = start_server(&python).await;
    let billing = A2aAgent::from_card("billing", &server.base, None)
        .await
        .unwrap();
    // The card's description and skills are the node's description.
    assert_eq!(
        agentweave_runtime::Agent::description(&billing),
        "Sends invoices. Skills: invoices: Sends an invoice by email."
    );
    let triage = FnAgent::new("triage", |cx, input| async move {
        // Billing's answer reaches triage as context once control is back.
        let billed = input.messages.iter().any(|m| {
            m.content
                .contains("[billing] said: Invoice sent to ada@example.com")
        });
        let asks = cx
            .root_input()
            .iter()
            .any(|m| m.content.contains("invoice"));
        if billed {
            cx.say("Back at triage: the invoice is on its way.");
        } else if asks {
            cx.transfer("billing");
        } else {
            cx.say("Hello Ada, how can I help?");
        }
        Ok(())
    });
    let desk = set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(billing)]).unwrap();
    let runner = Runner::builder(desk).stores(InMemoryStore::new()).build();

    let first = runner
        .turn(TurnRequest::new("t1", Message::user("Hi, I am Ada")))
        .await
        .unwrap()
        .final_output()
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.content, "Hello Ada, how can I help?");
    let mut turn = runner
        .turn(TurnRequest::new(
            "t1",
            Message::user("Please send me the invoice"),
        ))
        .await
        .unwrap();
    let mut said = Vec::new();
    while let Some(event) = turn.next().await {
        if let Some(m) = event.message_output() {
            if !m.content.is_empty() && m.tool_calls.is_empty() && m.tool_call_id.is_none() {
                said.push((event.run_path().to_string(), m.content.clone()));
            }
        }
    }
    assert_eq!(
        said,
        [
            (
                "triage/billing".to_owned(),
                "Billing here: I will send the invoice.".to_owned()
            ),
            (
                "triage/billing".to_owned(),
                // The earlier turn and triage's words, as the node's context policy shapes
                // them, then the request.
                [
                    "I read: Hi, I am Ada",
                    "For context: [triage] said: Hello Ada, how can I help?.",
                    "For context: [triage] called tool: `transfer_to_agent` with arguments: \
                     {\"agent_name\":\"billing\"}.",
                    "For context: [triage] `transfer_to_agent` tool returned result: \
                     successfully transferred to agent [billing].",
                    "Please send me the invoice"
                ]
                .join(" | ")
            )
        ]
    );
    let Some(TurnOutcome::Interrupted { interrupts, .. }) = turn.outcome() else {
        panic!(
            "the remote question interrupts the turn: {:?}",
            turn.outcome()
        );
    };
    assert_eq!(interrupts.len(), 1);
    assert_eq!(
        interrupts[0].info["question"],
        "Which email should the invoice go to?"
    );
    assert_eq!(interrupts[0].info["remote"]["agent"], "billing");

    // The answer reaches the remote task; its completion hands control back to triage.
    let targets = HashMap::from([(interrupts[0].id.clone(), json!("ada@example.com"))]);
    let mut resumed = runner
        .turn(TurnRequest::resume("t1", targets))
        .await
        .unwrap();
    let mut said = Vec::new();
    while let Some(event) = resumed.next().await {
        assert!(event.error.is_none(), "{:?}", event.error);
        if let Some(m) = event.message_output() {
            if !m.content.is_empty() && m.tool_calls.is_empty() && m.tool_call_id.is_none() {
                said.push((event.run_path().to_string(), m.content.clone()));
            }
        }
    }
    assert_eq!(
        said,
        [
            (
                "triage/billing".to_owned(),
                "Invoice sent to ada@example.com.".to_owned()
            ),
            (
                "triage/billing/triage".to_owned(),
                "Back at triage: the invoice is on its way.".to_owned()
            ),
        ]
    );
    match resumed.outcome() {
        Some(TurnOutcome::Completed { answered_by, .. }) => assert_eq!(&*answered_by, "triage"),
        other => panic!("the turn completes at triage: {other:?}"),
    }
    drop(server);
}
