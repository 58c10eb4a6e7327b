//! Flows served as MCP tools (`/v1/mcp`, the `mcp` feature), driven by rmcp's MCP client (and,
//! in `the_official_python_sdk_client_calls_a_served_flow`, by the official Python SDK's):
//! the tools are the flows, a session is a thread, another tenant or principal reaches none of
//! it, scopes hold, an approval is asked by elicitation (approve and deny) and reported when it
//! cannot be, and bad input gets typed errors.
#![cfg(feature = "mcp")]

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentweave_runtime::{
    tool_fn, ChatModelAgent, FlowAgent, FnAgent, InMemoryStore, Role, ScriptStep, ScriptedModel,
    Tool, ToolApprovals,
};
use agentweave_server::{AppState, Auth, Limits, Principal, Scope};
use common::spawn;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, ErrorCode, ErrorData, Implementation, JsonObject,
    ProtocolVersion,
};
use rmcp::service::{RequestContext, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};

/// Chat, approve and read, tenant `_` (the shared one).
const CARA: &str = "cara-mcp-token-0123456789";
/// Chat only.
const DAN: &str = "dan-mcp-token-0123456789";
/// Read only.
const RITA: &str = "rita-mcp-token-0123456789";
/// Chat, approve and read, tenant `acme`.
const EVE: &str = "eve-mcp-token-0123456789";

/// The most bytes of a user message.
const MAX_MESSAGE: usize = 4_096;

fn auth() -> Auth {
    let all = [Scope::Chat, Scope::Approve, Scope::Read];
    Auth::tokens([
        (CARA, Principal::new("cara").scopes(all)),
        (DAN, Principal::new("dan").scopes([Scope::Chat])),
        (RITA, Principal::new("rita").scopes([Scope::Read])),
        (EVE, Principal::new("eve").tenant("acme").scopes(all)),
    ])
}

/// `echo`: says how many user messages its thread has and the last one. `pay`: pays 5 EUR
/// with a tool that needs an approval, then says "Paid.".
fn state(paid: &Arc<AtomicUsize>) -> AppState {
    let echo = FnAgent::new("echo", |cx, input| async move {
        let users: Vec<&str> = input
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .map(|m| m.content.as_str())
            .collect();
        cx.say(format!(
            "{} user messages; the last: {}",
            users.len(),
            users.last().unwrap_or(&"")
        ));
        Ok(())
    });
    let till = Arc::clone(paid);
    let pay = tool_fn(
        "pay",
        "Pays an amount.",
        move |_: std::collections::HashMap<String, Value>| {
            let till = Arc::clone(&till);
            async move {
                till.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>("paid 5 EUR".to_owned())
            }
        },
    );
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(pay)];
    let model = ScriptedModel::rules()
        .after_tool("pay", ScriptStep::text("Done."))
        .otherwise(ScriptStep::tool_call("pay", json!({"amount": 5})));
    let cashier = ChatModelAgent::builder("cashier", model)
        .description("Pays 5 EUR once a human approves.")
        .tools(ToolApprovals::new().always("pay").apply(tools))
        .build()
        .unwrap();
    let limits = Limits {
        max_message_bytes: MAX_MESSAGE,
        ..Limits::default()
    };
    AppState::builder(InMemoryStore::new())
        .flow("echo", FlowAgent::new(echo))
        .flow("pay", FlowAgent::new(cashier))
        .auth(auth())
        .limits(limits)
        .build()
        .unwrap()
}

/// The human behind an MCP client: whether its client takes elicitation, what it answers to an
/// approval (`None`: declines the form), and the forms it was shown.
#[derive(Clone, Default)]
struct Human {
    elicitation: bool,
    answer: Option<bool>,
    asked: Arc<Mutex<Vec<Value>>>,
    progress: Arc<Mutex<Vec<String>>>,
}

impl Human {
    fn answering(answer: Option<bool>) -> Self {
        Human {
            elicitation: true,
            answer,
            ..Human::default()
        }
    }
}

impl ClientHandler for Human {
    fn get_info(&self) -> ClientConfig {
        let capabilities = match self.elicitation {
            true => ClientCapabilities::builder().enable_elicitation().build(),
            false => ClientCapabilities::default(),
        };
        ClientConfig::new(capabilities, Implementation::new("mcp-serve-test", "0.1"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.progress
            .lock()
            .unwrap()
            .push(params.message.unwrap_or_default());
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked
            .lock()
            .unwrap()
            .push(serde_json::to_value(&request).unwrap());
        Ok(match self.answer {
            Some(approve) => ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({ "approve": approve, "reason": "checked" })),
            None => ElicitResult::new(ElicitationAction::Decline),
        })
    }
}

async fn connect(base: &str, token: &str, human: Human) -> RunningService<RoleClient, Human> {
    // rmcp's HTTP client is built without a crypto provider of its own (as agentweave-runtime's).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("{base}/v1/mcp")).auth_header(token);
    human
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("the MCP session opens")
}

fn args(value: Value) -> JsonObject {
    match value {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

async fn call(
    client: &RunningService<RoleClient, Human>,
    tool: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args(arguments)))
        .await
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The JSON-RPC error of a refused call.
fn refusal(result: Result<CallToolResult, ServiceError>) -> ErrorData {
    match result {
        Err(ServiceError::McpError(e)) => e,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

/// The caller's threads of `flow`, through the native API.
async fn threads(base: &str, token: &str, flow: &str) -> Vec<Value> {
    let body: Value = common::client()
        .get(format!("{base}/v1/flows/{flow}/threads"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["threads"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn the_tools_are_the_flows_and_a_session_is_one_thread_of_its_tenant() {
    let server = spawn(state(&Arc::default())).await;
    let cara = connect(&server.base, CARA, Human::default()).await;
    let tools = cara.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
    assert_eq!(names, ["echo", "pay"]);
    let pay = &tools[1];
    assert_eq!(
        pay.description.as_deref(),
        Some("Pays 5 EUR once a human approves.")
    );
    assert_eq!(pay.input_schema["required"], json!(["message"]));
    assert_eq!(
        pay.input_schema["properties"]["message"]["maxLength"],
        json!(MAX_MESSAGE)
    );

    let first = call(&cara, "echo", json!({"message": "hello"}))
        .await
        .unwrap();
    assert_eq!(first.is_error, Some(false), "{first:?}");
    assert_eq!(text(&first), "1 user messages; the last: hello");
    let second = call(&cara, "echo", json!({"message": "again"}))
        .await
        .unwrap();
    assert_eq!(text(&second), "2 user messages; the last: again");

    // One thread of the flow, under Cara's tenant; a new session is a new thread.
    let listed = threads(&server.base, CARA, "echo").await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let thread = listed[0]["thread"].as_str().unwrap().to_owned();
    assert!(thread.starts_with("mcp-"), "{thread}");
    let other_session = connect(&server.base, CARA, Human::default()).await;
    let fresh = call(&other_session, "echo", json!({"message": "new"}))
        .await
        .unwrap();
    assert_eq!(text(&fresh), "1 user messages; the last: new");

    // Eve, of tenant acme, sees none of Cara's threads, even under the same thread id.
    let eve = connect(&server.base, EVE, Human::default()).await;
    let own = call(&eve, "echo", json!({"message": "mine"}))
        .await
        .unwrap();
    assert_eq!(text(&own), "1 user messages; the last: mine");
    let seen = threads(&server.base, EVE, "echo").await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_ne!(seen[0]["thread"], json!(thread));
    let status = common::client()
        .get(format!("{}/v1/flows/echo/threads/{thread}", server.base))
        .bearer_auth(EVE)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 404);
    // With a progress token, what the agents say comes as progress notifications too.
    let listener = Human::default();
    let watcher = connect(&server.base, CARA, listener.clone()).await;
    let mut meta = rmcp::model::RequestMetaObject(Default::default());
    meta.set_progress_token(serde_json::from_value(json!("p1")).unwrap());
    let mut params =
        CallToolRequestParams::new("echo").with_arguments(args(json!({"message": "watch"})));
    params.meta = Some(meta);
    watcher.call_tool(params).await.unwrap();
    for _ in 0..100 {
        if !listener.progress.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        *listener.progress.lock().unwrap(),
        ["echo: 1 user messages; the last: watch"]
    );
    for client in [cara, other_session, eve, watcher] {
        client.cancel().await.unwrap();
    }
}

/// Opens a session by hand (`initialize`), as `token`, and gives its id.
async fn raw_session(base: &str, token: &str) -> String {
    let response = common::client()
        .post(format!("{base}/v1/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "0"}}
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let _ = response.text().await;
    let initialized = common::client()
        .post(format!("{base}/v1/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await
        .unwrap();
    assert_eq!(initialized.status(), 202);
    session
}

/// A JSON-RPC request in `session`, as `token`: the status and the body (JSON or SSE).
async fn raw_request(base: &str, token: &str, session: &str, body: Value) -> (u16, String) {
    let response = common::client()
        .post(format!("{base}/v1/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

#[tokio::test]
async fn a_session_is_its_principals_and_the_endpoint_needs_credentials() {
    let server = spawn(state(&Arc::default())).await;
    let session = raw_session(&server.base, CARA).await;
    let echo = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"message": "hi"}}});
    // Eve (another tenant) and Dan (another principal) cannot use Cara's session.
    for token in [EVE, DAN] {
        let (status, body) = raw_request(&server.base, token, &session, echo.clone()).await;
        assert_eq!(status, 403, "{body}");
        assert!(body.contains("opened by another principal"), "{body}");
        assert!(!body.contains("user messages"), "{body}");
        // Nor its stream, nor close it.
        for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
            let response = common::client()
                .request(method.clone(), format!("{}/v1/mcp", server.base))
                .bearer_auth(token)
                .header("accept", "text/event-stream")
                .header("mcp-session-id", &session)
                .header("mcp-protocol-version", "2025-11-25")
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 403, "{method}");
        }
    }
    // Cara can.
    let (_, body) = raw_request(&server.base, CARA, &session, echo.clone()).await;
    assert!(body.contains("1 user messages; the last: hi"), "{body}");
    // Closed by Cara, the session is gone.
    let closed = common::client()
        .delete(format!("{}/v1/mcp", server.base))
        .bearer_auth(CARA)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert!(closed.status().is_success(), "{}", closed.status());
    let (status, _) = raw_request(&server.base, CARA, &session, echo).await;
    assert_eq!(status, 404);
    // No credentials: 401, with the scheme.
    let response = common::client()
        .post(format!("{}/v1/mcp", server.base))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert!(response.headers().contains_key("www-authenticate"));
}

#[tokio::test]
async fn listing_needs_a_reading_scope_and_calling_needs_chat() {
    let paid = Arc::new(AtomicUsize::new(0));
    let server = spawn(state(&paid)).await;
    let rita = connect(&server.base, RITA, Human::default()).await;
    assert_eq!(rita.list_all_tools().await.unwrap().len(), 2);
    let refused = refusal(call(&rita, "pay", json!({"message": "pay"})).await);
    assert_eq!(refused.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(refused.data.unwrap()["code"], "forbidden");
    assert!(refused.message.contains("chat"), "{}", refused.message);
    assert_eq!(paid.load(Ordering::SeqCst), 0);
    assert!(threads(&server.base, RITA, "pay").await.is_empty());
    rita.cancel().await.unwrap();
}

#[tokio::test]
async fn an_approval_is_asked_by_elicitation_and_the_answer_resumes_the_turn() {
    let paid = Arc::new(AtomicUsize::new(0));
    let server = spawn(state(&paid)).await;

    // Approved: the form asks the question with the approval's schema; the tool pays.
    let yes = Human::answering(Some(true));
    let cara = connect(&server.base, CARA, yes.clone()).await;
    let result = call(&cara, "pay", json!({"message": "pay 5 EUR"}))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(text(&result), "Done.");
    assert_eq!(paid.load(Ordering::SeqCst), 1);
    let asked = yes.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(
        asked[0]["message"].as_str().unwrap().contains("`pay`"),
        "{asked:?}"
    );
    let schema = &asked[0]["requestedSchema"];
    assert_eq!(schema["properties"]["approve"]["type"], "boolean");
    assert_eq!(schema["required"], json!(["approve"]));
    // The answer is recorded in the thread, as Cara's.
    let thread = threads(&server.base, CARA, "pay").await[0]["thread"]
        .as_str()
        .unwrap()
        .to_owned();
    let record: Value = common::client()
        .get(format!("{}/v1/flows/pay/threads/{thread}", server.base))
        .bearer_auth(CARA)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let approvals = record["approvals"].as_array().unwrap();
    assert_eq!(approvals.len(), 1, "{record}");
    assert_eq!(approvals[0]["by"], "cara", "{record}");
    assert_eq!(approvals[0]["answered"]["approve"], true, "{record}");

    // Denied: asked the same way; nothing is paid, the turn ends.
    let no = Human::answering(Some(false));
    let denier = connect(&server.base, CARA, no.clone()).await;
    let result = call(&denier, "pay", json!({"message": "pay 5 EUR"}))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(no.asked.lock().unwrap().len(), 1);
    assert_eq!(paid.load(Ordering::SeqCst), 1);
    // The denial is recorded in the second session's thread, with its reason.
    let mut answers = Vec::new();
    for listed in threads(&server.base, CARA, "pay").await {
        let record: Value = common::client()
            .get(format!(
                "{}/v1/flows/pay/threads/{}",
                server.base,
                listed["thread"].as_str().unwrap()
            ))
            .bearer_auth(CARA)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        answers.extend(
            record["approvals"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a["answered"].clone()),
        );
    }
    answers.sort_by_key(|a| a["approve"].as_bool());
    assert_eq!(
        answers,
        [
            json!({"approve": false, "reason": "checked"}),
            json!({"approve": true, "reason": "checked"})
        ]
    );
    for client in [cara, denier] {
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn an_approval_nobody_here_may_give_is_reported_with_the_route_that_answers_it() {
    let paid = Arc::new(AtomicUsize::new(0));
    let server = spawn(state(&paid)).await;

    // Dan may chat but not approve: no form, the result says the thread waits and how to answer.
    let dan_human = Human::answering(Some(true));
    let dan = connect(&server.base, DAN, dan_human.clone()).await;
    let result = call(&dan, "pay", json!({"message": "pay"})).await.unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert!(dan_human.asked.lock().unwrap().is_empty());
    let waiting = result.structured_content.clone().unwrap();
    assert_eq!(waiting["status"], "waiting");
    let thread = waiting["thread"].as_str().unwrap().to_owned();
    let interrupt = waiting["interrupts"][0]["id"].as_str().unwrap().to_owned();
    let said = text(&result);
    assert!(said.contains("approve"), "{said}");
    assert!(
        said.contains(&format!("/v1/flows/pay/threads/{thread}/resume")),
        "{said}"
    );
    assert_eq!(paid.load(Ordering::SeqCst), 0);
    // A new message in the session waits for the answer, and says so.
    let again = call(&dan, "pay", json!({"message": "pay now"}))
        .await
        .unwrap();
    assert!(text(&again).contains("was not sent"), "{}", text(&again));
    // Cara answers through the native route; the thread goes on.
    let resumed = common::client()
        .post(format!(
            "{}/v1/flows/pay/threads/{thread}/resume",
            server.base
        ))
        .bearer_auth(CARA)
        .json(&json!({"interrupt_id": interrupt, "data": {"approve": true}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 200);
    let _ = resumed.text().await;
    assert_eq!(paid.load(Ordering::SeqCst), 1);

    // A client without elicitation: reported, not asked.
    let plain = connect(&server.base, CARA, Human::default()).await;
    let result = call(&plain, "pay", json!({"message": "pay"}))
        .await
        .unwrap();
    assert!(
        text(&result).contains("does not take elicitation"),
        "{}",
        text(&result)
    );
    // A declined form: reported, the thread waits.
    let decliner = connect(&server.base, CARA, Human::answering(None)).await;
    let result = call(&decliner, "pay", json!({"message": "pay"}))
        .await
        .unwrap();
    assert!(text(&result).contains("declined"), "{}", text(&result));
    assert_eq!(result.structured_content.unwrap()["status"], "waiting");
    assert_eq!(paid.load(Ordering::SeqCst), 1);
    for client in [dan, plain, decliner] {
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn hostile_input_gets_typed_errors_and_runs_nothing() {
    let paid = Arc::new(AtomicUsize::new(0));
    let server = spawn(state(&paid)).await;
    let cara = connect(&server.base, CARA, Human::answering(Some(true))).await;
    let unknown = refusal(call(&cara, "nope", json!({"message": "hi"})).await);
    assert_eq!(unknown.code, ErrorCode::INVALID_PARAMS);
    assert!(
        unknown.message.contains("no tool named 'nope'"),
        "{}",
        unknown.message
    );
    for (arguments, says) in [
        (json!({}), "no `message`"),
        (json!({"message": 5}), "not a string"),
        (
            json!({"message": "hi", "sql": "drop"}),
            "unknown argument 'sql'",
        ),
        (
            json!({"message": "x".repeat(MAX_MESSAGE + 1)}),
            "at most 4096",
        ),
    ] {
        let refused = refusal(call(&cara, "pay", arguments).await);
        assert_eq!(refused.code, ErrorCode::INVALID_PARAMS, "{says}");
        assert!(refused.message.contains(says), "{}", refused.message);
    }
    assert_eq!(paid.load(Ordering::SeqCst), 0);
    assert!(threads(&server.base, CARA, "pay").await.is_empty());
    cara.cancel().await.unwrap();

    // A body over the server's limit: 413 before anything is read into a request.
    let session = raw_session(&server.base, CARA).await;
    let huge = "x".repeat(Limits::default().max_body_bytes + 1);
    let (status, _) = raw_request(
        &server.base,
        CARA,
        &session,
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
               "params": {"name": "echo", "arguments": {"message": huge}}}),
    )
    .await;
    assert_eq!(status, 413);
}

#[tokio::test]
async fn a_failed_turn_is_a_tool_error_with_its_public_message_only() {
    const SECRET: &str = "upstream 10.9.8.7:443 reset by peer";
    let broken = ScriptStep::text("a partial answer that never ends").fail_mid_stream(
        2,
        agentweave_runtime::model::ModelError::Connection {
            model: "m".into(),
            message: SECRET.into(),
        },
    );
    let helper = ChatModelAgent::builder("helper", ScriptedModel::rules().otherwise(broken))
        .retry(agentweave_runtime::RetryPolicy::none())
        .build()
        .unwrap();
    let server = spawn(
        AppState::builder(InMemoryStore::new())
            .flow("helper", FlowAgent::new(helper))
            .auth(auth())
            .build()
            .unwrap(),
    )
    .await;
    let cara = connect(&server.base, CARA, Human::default()).await;
    let result = call(&cara, "helper", json!({"message": "help"}))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let said = text(&result);
    assert!(said.contains("(ref "), "{said}");
    assert!(
        !said.contains("10.9.8.7") && !said.contains("reset by peer"),
        "{said}"
    );
    // Nothing of the failed turn was recorded.
    let listed = threads(&server.base, CARA, "helper").await;
    assert!(listed.iter().all(|t| t["turns"] == json!(0)), "{listed:?}");
    cara.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_sdk_client_calls_a_served_flow() {
    let Some(python) = std::env::var_os("AGENTFLOW_MCP_PYTHON") else {
        agentweave_runtime::testing::skip_missing_component(
            "a Python with the MCP SDK",
            "set AGENTFLOW_MCP_PYTHON to a virtualenv's python with `pip install mcp` \
             (.ci/mcp.sh does it)",
        );
        return;
    };
    let paid = Arc::new(AtomicUsize::new(0));
    let server = spawn(state(&paid)).await;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/mcp_client/serve_check.py"
    );
    let run = tokio::process::Command::new(python)
        .arg(script)
        .env("AGENTFLOW_MCP_URL", format!("{}/v1/mcp", server.base))
        .env("AGENTFLOW_MCP_TOKEN", CARA)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the SDK script finished within 120 s")
        .expect("the SDK script started");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the MCP SDK script failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(stdout.contains("all checks passed"), "{stdout}");
    assert_eq!(paid.load(Ordering::SeqCst), 1);
}
