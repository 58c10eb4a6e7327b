//! The outward form: what leaves the server of a run that holds secrets inside (an instruction,
//! an interrupt's saved state, a model outage's transport error, store keys). Every server of
//! these tests (and of the whole suite: see `common::spawn`) is also scanned byte by byte for
//! what must never be sent.

use crate::common;

use agentweave_runtime::TurnRequest;
use agentweave_runtime::{
    tool_fn_with_context, ChatModelAgent, FlowAgent, InMemoryStore, Message, ModelError,
    RetryPolicy, Runner, ScriptStep, ScriptedModel, ToolContext,
};
use agentweave_server::{AppState, Auth};
use common::{done, get, post, spawn, turn, TOKEN};
use futures::StreamExt;
use serde_json::{json, Value};

const CANARY: &str = "INSTRUCTION-CANARY: the vault code is 7311";
const OUTAGE: &str = "POST http://127.0.0.1:4999/v1/chat/completions: error sending request for \
                      url: Connection refused (os error 111)";

/// A desk whose agent has a secret instruction and a tool that waits for approval.
fn approvals_flow() -> FlowAgent {
    let model = ScriptedModel::rules()
        .after_tool(
            "reset_password",
            ScriptStep::text("The password was reset."),
        )
        .otherwise(ScriptStep::tool_call(
            "reset_password",
            json!({"user": "ana"}),
        ));
    let agent = ChatModelAgent::builder("helpdesk", model)
        .instruction(CANARY)
        .tool(tool_fn_with_context(
            "reset_password",
            "Resets a user's password; a human approves.",
            |cx: ToolContext, _args: Value| async move {
                match cx.resume_data() {
                    Some(_) => Ok::<_, agentweave_runtime::ToolError>("reset done".to_owned()),
                    None => Err(cx.interrupt(json!({"question": "Reset ana's password?"}))),
                }
            },
        ))
        .build()
        .unwrap();
    FlowAgent::new(agent)
}

/// An agent whose model is down, failing with a transport error full of infrastructure.
fn outage_flow() -> FlowAgent {
    let model = ScriptedModel::new([ScriptStep::fail(ModelError::Connection {
        model: "gpt-internal".into(),
        message: OUTAGE.into(),
    })]);
    let agent = ChatModelAgent::builder("assistant", model)
        .instruction(CANARY)
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    FlowAgent::new(agent)
}

fn state() -> AppState {
    AppState::builder(InMemoryStore::new())
        .flow("helpdesk", approvals_flow())
        .flow("outage", outage_flow())
        .auth(Auth::bearer(TOKEN))
        .streaming(false)
        .build()
        .unwrap()
}

/// The runtime's own JSON of the interrupt holds the instruction (in its address's saved
/// state): what the server must keep to itself.
#[tokio::test]
async fn the_runtime_interrupt_carries_the_secret_the_server_must_not_send() {
    let runner = Runner::builder(approvals_flow())
        .stores(InMemoryStore::new())
        .build();
    let mut turn = runner
        .turn(TurnRequest::new("t", Message::user("reset ana")))
        .await
        .unwrap();
    let mut json = String::new();
    while let Some(event) = turn.next().await {
        json.push_str(&serde_json::to_string(&event.to_json().unwrap()).unwrap());
    }
    assert!(json.contains("\"state\""), "{json}");
    assert!(json.contains("INSTRUCTION-CANARY"), "{json}");
}

#[tokio::test]
async fn an_interrupt_goes_out_without_saved_state_everywhere() {
    let server = spawn(state()).await;
    let events = turn(&server.base, "helpdesk", "t1", "please reset ana").await;
    let all = serde_json::to_string(&events.iter().map(|e| &e.data).collect::<Vec<_>>()).unwrap();
    assert!(!all.contains("INSTRUCTION-CANARY"), "{all}");
    assert!(!all.contains("\"state\""), "{all}");
    let interrupted = events
        .iter()
        .find_map(|e| e.data["action"]["interrupted"].as_object())
        .expect("an interrupt event");
    let mut keys: Vec<&str> = interrupted.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["address", "id", "info"]);
    assert_eq!(done(&events)["interrupted"], true);

    // The JSON endpoints show the same allow-listed interrupt.
    for path in [
        "/v1/flows/helpdesk/threads/t1",
        "/v1/flows/helpdesk/threads/t1/interrupts",
        "/v1/flows/helpdesk/interrupts",
    ] {
        let body: Value = get(&server.base, path).await.json().await.unwrap();
        let text = body.to_string();
        assert!(!text.contains("INSTRUCTION-CANARY"), "{path}: {text}");
        assert!(!text.contains("\"state\""), "{path}: {text}");
        assert!(!text.contains("helpdesk._."), "{path}: {text}");
    }

    // A wrong resume names neither the checkpoint nor its store key.
    let response = post(
        &server.base,
        "/v1/flows/helpdesk/threads/t1/resume",
        json!({"interrupt_id": "nobody", "data": true}),
    )
    .await;
    assert_eq!(response.status(), 400);
    let text = response.text().await.unwrap();
    assert!(!text.contains("helpdesk._."), "{text}");
}

/// A background run's stream and an Agent Protocol stream of the same interrupt: no saved
/// state of the agent or of any frame of its address, no instruction.
#[tokio::test]
async fn a_run_stream_carries_no_saved_state_of_an_interrupt() {
    let server = spawn(state()).await;
    let started: Value = post(
        &server.base,
        "/v1/flows/helpdesk/threads/r1/runs",
        json!({"message": "please reset ana"}),
    )
    .await
    .json()
    .await
    .unwrap();
    let run = started["run_id"].as_str().unwrap();
    let outcome: Value = get(
        &server.base,
        &format!("/v1/flows/helpdesk/threads/r1/runs/{run}/wait"),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(outcome["status"], "interrupted", "{outcome}");
    let text = get(
        &server.base,
        &format!("/v1/flows/helpdesk/threads/r1/runs/{run}/stream"),
    )
    .await
    .text()
    .await
    .unwrap();
    assert!(text.contains("\"interrupted\""), "{text}");
    assert!(text.contains("\"address\""), "{text}");
    assert!(!text.contains("INSTRUCTION-CANARY"), "{text}");
    assert!(!text.contains("\"state\""), "{text}");

    let text = post(
        &server.base,
        "/v1/threads/ap-1/runs/stream",
        json!({"assistant_id": "helpdesk", "stream_mode": ["updates", "values"],
            "input": {"messages": [{"role": "user", "content": "please reset ana"}]}}),
    )
    .await
    .text()
    .await
    .unwrap();
    assert!(text.contains("__interrupt__"), "{text}");
    assert!(!text.contains("INSTRUCTION-CANARY"), "{text}");
}

#[tokio::test]
async fn a_model_outage_reaches_the_client_as_a_public_error_with_a_correlation_id() {
    let server = spawn(state()).await;
    let events = turn(&server.base, "outage", "o1", "hello").await;
    let all = serde_json::to_string(&events.iter().map(|e| &e.data).collect::<Vec<_>>()).unwrap();
    for secret in [
        "127.0.0.1",
        "os error",
        "Connection refused",
        "gpt-internal",
        "custom",
    ] {
        assert!(!all.contains(secret), "{secret} in {all}");
    }
    let error = events
        .iter()
        .find_map(|e| e.data.get("error").filter(|e| e.is_object()))
        .expect("an error event");
    assert_eq!(error["code"], "model_unavailable", "{error}");
    assert_eq!(
        error["message"],
        "The assistant is unavailable right now; try again."
    );
    let id = error["correlation_id"].as_str().unwrap();
    assert_eq!(id.len(), 16);
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
}

/// Every kind of action and error the runtime has, through the outward form: no saved state,
/// no internal text, a stable code for each failure.
#[test]
fn every_kind_of_event_and_error_goes_out_allow_listed() {
    use agentweave_runtime::{
        Action, AgentError, AgentEvent, ChatAgentError, InterruptFrame, InterruptInfo,
        MiddlewareError, StoreError, StreamError,
    };
    use agentweave_server::outward::OutwardEvent;

    let secret = format!("{CANARY} {OUTAGE} desk._.t-93dc");
    let mut interrupt = InterruptInfo::new(json!({"question": "ok?"})).with_state(json!(secret));
    interrupt.id = "desk/refund".into();
    interrupt.address = vec![InterruptFrame {
        agent: "desk".into(),
        run_path: Default::default(),
        state: Some(json!({"instruction": secret})),
        tool: None,
    }];
    let model = ChatAgentError::Model {
        agent: "a".into(),
        attempts: 1,
        source: ModelError::Connection {
            model: "m".into(),
            message: OUTAGE.into(),
        },
    };
    let cases: Vec<(AgentEvent, Option<&str>)> = vec![
        (AgentEvent::action(Action::interrupted(interrupt)), None),
        (AgentEvent::action(Action::Exit), None),
        (AgentEvent::action(Action::transfer_to("b")), None),
        (AgentEvent::action(Action::BreakLoop("c".into())), None),
        (
            AgentEvent::error(AgentError::from(model)),
            Some("model_unavailable"),
        ),
        (
            AgentEvent::error(AgentError::Stream(StreamError::new(secret.clone()))),
            Some("model_unavailable"),
        ),
        (
            AgentEvent::error(AgentError::custom(StoreError::Other {
                id: "desk._.t-93dc".into(),
                message: secret.clone(),
            })),
            Some("store_unavailable"),
        ),
        (
            AgentEvent::error(AgentError::Thread {
                message: secret.clone().into(),
            }),
            Some("store_unavailable"),
        ),
        (
            AgentEvent::error(AgentError::custom(agentweave_runtime::ToolError::failed(
                "t",
                secret.clone(),
            ))),
            Some("tool_failed"),
        ),
        (
            AgentEvent::error(AgentError::failed("a", secret.clone())),
            Some("agent_failed"),
        ),
        (
            AgentEvent::error(AgentError::Panic {
                agent: "a".into(),
                message: secret.clone().into(),
            }),
            Some("internal"),
        ),
        (
            AgentEvent::error(AgentError::from(MiddlewareError::Refused {
                middleware: "guard".into(),
                hook: agentweave_runtime::middleware::Hook::BeforeModel,
                agent: "a".into(),
                run_path: Default::default(),
                reason: secret.clone().into(),
            })),
            Some("refused"),
        ),
    ];
    for (event, code) in &cases {
        let text = serde_json::to_string(&OutwardEvent::of(event)).unwrap();
        for needle in [
            "INSTRUCTION-CANARY",
            "127.0.0.1",
            "os error",
            "desk._.",
            "\"state\"",
        ] {
            assert!(!text.contains(needle), "{needle} in {text}");
        }
        let value: Value = serde_json::from_str(&text).unwrap();
        if let Some(code) = code {
            assert_eq!(value["error"]["code"], *code, "{text}");
            assert!(value["error"]["correlation_id"].is_string(), "{text}");
        }
    }
}
