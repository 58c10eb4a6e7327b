//! The console in a real, headless Chromium driven through WebDriver (fantoccini): load the
//! page, give the token, send a message on the offline desk, see the streamed answer and the run
//! paths, approve the refund, see the run finish. And the trust boundary as a person sees it: a
//! model outage shows the public message and its correlation id, nothing of the infrastructure;
//! a requester (`chat` only) is offered no Approve button; an approver answers from the queue
//! and sees who approved.
//!
//! Needs a chromedriver: `AGENTFLOW_WEBDRIVER_URL` (`.ci/chromium.sh` installs Chromium and its
//! driver and starts it). Without one the test says it is skipped. Screenshots go to
//! `$AGENTFLOW_SCREENSHOT_DIR` when set.

use crate::common;

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use agentweave_runtime::testing::skip_missing_component;
use agentweave_runtime::{
    ChatModelAgent, FlowAgent, InMemoryStore, ModelError, RetryPolicy, ScriptStep, ScriptedModel,
};
use agentweave_server::{AppState, Auth, Principal, Scope};
use common::*;
use fantoccini::{ClientBuilder, Locator};
use futures::FutureExt;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);

async fn browser(webdriver: &str, profile: &std::path::Path) -> fantoccini::Client {
    // Two TLS crypto providers are linked into this test (ring through reqwest, aws-lc-rs through
    // fantoccini's hyper-rustls), so rustls cannot pick one by itself: say which.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // Starting Chromium can fail on a loaded machine ("Chrome failed to start", "DevToolsActivePort
    // file doesn't exist") while another test's browser starts or stops: that is the machine, not
    // the console, so a session is asked for again, each time on a fresh profile, and the last
    // error is shown in full if none starts.
    let mut last_error = None;
    for attempt in 0..4u32 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(500 * u64::from(attempt))).await;
        }
        let _ = std::fs::remove_dir_all(profile);
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--window-size=1400,900",
                    format!("--user-data-dir={}", profile.display()),
                ]
            }),
        );
        let connected = ClientBuilder::rustls()
            .expect("TLS roots for the WebDriver client")
            .capabilities(caps)
            .connect(webdriver)
            .await;
        match connected {
            Ok(client) => return client,
            Err(error) => {
                eprintln!("WebDriver session, attempt {}: {error}", attempt + 1);
                last_error = Some(error);
            }
        }
    }
    panic!("no session of the WebDriver after 4 attempts: {last_error:?}")
}

async fn screenshot(client: &fantoccini::Client, name: &str) {
    if let Ok(dir) = std::env::var("AGENTFLOW_SCREENSHOT_DIR") {
        let png = client.screenshot().await.expect("a screenshot");
        std::fs::write(std::path::Path::new(&dir).join(name), png).expect("screenshot written");
    }
}

/// Waits until an element matching the XPath exists, and returns its text. The console
/// redraws parts of the page (the tree at each event, the lists after each run): an element
/// replaced between finding it and reading it is found again.
async fn wait_text(client: &fantoccini::Client, xpath: &str) -> String {
    for _ in 0..50 {
        let found = client
            .wait()
            .at_most(WAIT)
            .for_element(Locator::XPath(xpath))
            .await
            .unwrap_or_else(|e| panic!("waiting for {xpath}: {e}"));
        match found.text().await {
            Ok(text) => return text,
            Err(e) if e.is_stale_element_reference() => continue,
            Err(e) => panic!("reading {xpath}: {e}"),
        }
    }
    panic!("{xpath} was replaced each time it was found")
}

/// The WebDriver's URL, or `None` after saying the test is skipped.
fn webdriver() -> Option<String> {
    let url = std::env::var("AGENTFLOW_WEBDRIVER_URL").ok();
    if url.is_none() {
        skip_missing_component(
            "Chromium with chromedriver",
            "install chromium and chromium-driver, run `chromedriver --port=9515` and set \
             AGENTFLOW_WEBDRIVER_URL=http://127.0.0.1:9515",
        );
    }
    url
}

/// Runs `drive` in a fresh browser (its own profile), closing the browser even when an
/// assertion fails, then reporting the failure.
async fn in_browser<F, Fut>(webdriver: &str, name: &str, drive: F)
where
    F: FnOnce(fantoccini::Client) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let profile =
        std::env::temp_dir().join(format!("agentflow-chromium-{}-{name}", std::process::id()));
    let client = browser(webdriver, &profile).await;
    let result = AssertUnwindSafe(drive(client.clone())).catch_unwind().await;
    client.close().await.ok();
    let _ = std::fs::remove_dir_all(&profile);
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

#[tokio::test]
async fn a_person_chats_and_approves_a_refund_in_the_console() {
    let Some(webdriver) = webdriver() else {
        return;
    };
    let server = spawn(desk_state()).await;
    let base = server.base.clone();
    in_browser(&webdriver, "desk", |client| async move {
        drive(&client, &base).await
    })
    .await;
}

/// Opens the console at `base` and gives it `token` when it asks.
async fn sign_in(client: &fantoccini::Client, base: &str, token: &str) {
    sign_in_at(client, &format!("{base}/"), token).await
}

/// Opens the console's page `url` and gives it `token` when it asks.
async fn sign_in_at(client: &fantoccini::Client, url: &str, token: &str) {
    client.goto(url).await.unwrap();

    // The server wants a token: the console asks for it.
    let input = client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css("#auth:not([hidden]) #token"))
        .await
        .expect("the console asks for a token");
    input.send_keys(token).await.unwrap();
    client
        .find(Locator::Css("#auth-form button"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

async fn drive(client: &fantoccini::Client, base: &str) {
    sign_in(client, base, TOKEN).await;

    // The tree is drawn, one box per agent.
    for agent in ["triage", "refund", "complaint"] {
        let text = wait_text(
            client,
            &format!("//*[@id='tree']//*[@data-agent='{agent}']"),
        )
        .await;
        assert_eq!(text, agent);
    }

    // A greeting: triage streams its answer into the chat.
    send(client, "Hi there").await;
    let answer = wait_text(
        client,
        "//div[contains(@class,'msg') and contains(@class,'assistant') and not(contains(@class,'streaming'))]",
    )
    .await;
    assert!(
        answer.contains("Hello! I can help with refunds and complaints."),
        "{answer}"
    );
    assert!(
        answer.starts_with("triage"),
        "the bubble names its run path: {answer}"
    );
    wait_text(client, "//*[@id='status' and text()='finished']").await;
    let timeline = texts(client, "#timeline li").await;
    assert_eq!(
        timeline
            .iter()
            .filter(|t| t.contains("Hello! I can help"))
            .count(),
        1,
        "the answer once in the timeline: {timeline:?}"
    );
    assert!(timeline[0].starts_with("turn 0"), "{timeline:?}");

    // A refund: triage hands over to refund, which waits for a human.
    send(client, "I want a refund for order 42").await;
    let question = wait_text(
        client,
        "//*[@id='approvals']//*[contains(@class,'question')]",
    )
    .await;
    assert_eq!(question, "Approve a refund of 39.00 EUR for order 42?");
    let transfer = wait_text(client, "//*[@id='timeline']/li[@data-kind='transfer']").await;
    assert!(
        transfer.contains("triage") && transfer.contains("refund"),
        "{transfer}"
    );
    let paths = texts(client, "#timeline .run-path").await;
    assert!(paths.iter().any(|p| p == "triage/refund"), "{paths:?}");
    let calls = wait_text(
        client,
        "//*[@id='timeline']/li[@data-kind='tool-call'][last()]",
    )
    .await;
    assert!(calls.contains("issue_refund"), "{calls}");
    wait_text(
        client,
        "//*[@id='status' and text()='waiting for approval']",
    )
    .await;
    // No new message while an approval waits: the composer is closed and says why.
    let input = client.find(Locator::Css("#message-input")).await.unwrap();
    assert_eq!(
        input.prop("disabled").await.unwrap().as_deref(),
        Some("true")
    );
    assert_eq!(
        input.attr("placeholder").await.unwrap().as_deref(),
        Some("Waiting for an approval…")
    );
    screenshot(client, "console-waiting.png").await;

    // Approve: the refund is paid and the turn finishes.
    client
        .find(Locator::Css("#approvals button.approve"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let done = wait_text(
        client,
        "//div[contains(@class,'assistant') and contains(., 'Done: 39 EUR')]",
    )
    .await;
    assert!(done.starts_with("triage/refund"), "{done}");
    wait_text(client, "//*[@id='status' and text()='finished']").await;
    let result = wait_text(
        client,
        "//*[@id='timeline']/li[@data-kind='tool-result'][last()]",
    )
    .await;
    assert!(
        result.contains("refunded 39.00 EUR for order 42"),
        "{result}"
    );
    let count = wait_text(client, "//*[@id='approval-count']").await;
    assert_eq!(count, "0");
    screenshot(client, "console-finished.png").await;

    // Time travel: the history lists the thread's steps; fork at the approval and deny it on
    // the fork (a new thread), which asks again.
    let original = client
        .find(Locator::Css("#thread"))
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap()
        .unwrap();
    client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::XPath(
            "//*[@id='history']/li[contains(., 'interrupt')]//button[contains(@class,'fork')]",
        ))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let question = wait_text(
        client,
        "//*[@id='approvals']//*[contains(@class,'question')]",
    )
    .await;
    assert_eq!(question, "Approve a refund of 39.00 EUR for order 42?");
    let fork = client
        .find(Locator::Css("#thread"))
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap()
        .unwrap();
    assert_ne!(fork, original, "the fork is a new thread");
    client
        .find(Locator::Css("#approvals button.deny"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(
        client,
        "//div[contains(@class,'assistant') and contains(., 'not approved')]",
    )
    .await;
    screenshot(client, "console-forked.png").await;
}

async fn send(client: &fantoccini::Client, text: &str) {
    let input = client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css("#message-input"))
        .await
        .unwrap();
    input.send_keys(text).await.unwrap();
    client
        .find(Locator::Css("#send"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// The texts of every element matching `css` (read again if the page redrew them meanwhile).
async fn texts(client: &fantoccini::Client, css: &str) -> Vec<String> {
    'again: for _ in 0..50 {
        let mut out = Vec::new();
        for e in client.find_all(Locator::Css(css)).await.unwrap() {
            match e.text().await {
                Ok(text) => out.push(text),
                Err(e) if e.is_stale_element_reference() => continue 'again,
                Err(e) => panic!("reading {css}: {e}"),
            }
        }
        return out;
    }
    panic!("{css} was redrawn each time it was read")
}

const CANARY: &str = "INSTRUCTION-CANARY: the vault code is 7311";
const OUTAGE: &str = "POST http://127.0.0.1:4999/v1/chat/completions: error sending request for \
                      url: Connection refused (os error 111)";

/// A flow whose model is down, failing with a transport error full of infrastructure.
fn outage_state() -> AppState {
    let model = ScriptedModel::new([ScriptStep::fail(ModelError::Connection {
        model: "gpt-internal".into(),
        message: OUTAGE.into(),
    })]);
    let agent = ChatModelAgent::builder("assistant", model)
        .instruction(CANARY)
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    AppState::builder(InMemoryStore::new())
        .flow("outage", FlowAgent::new(agent))
        .auth(Auth::bearer(TOKEN))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_model_outage_shows_the_public_message_and_a_correlation_id_and_nothing_else() {
    let Some(webdriver) = webdriver() else {
        return;
    };
    let server = spawn(outage_state()).await;
    let base = server.base.clone();
    in_browser(&webdriver, "outage", |client| async move {
        sign_in(&client, &base, TOKEN).await;
        wait_text(&client, "//*[@id='tree']//*[@data-agent='assistant']").await;
        send(&client, "hello").await;
        wait_text(&client, "//*[@id='status' and text()='failed']").await;
        screenshot(&client, "console-outage.png").await;

        // One error in the chat: the public message and the reference an operator finds the
        // internal error by.
        let errors = texts(&client, "#chat .msg.error").await;
        assert_eq!(errors.len(), 1, "{errors:?}");
        let (message, reference) = errors[0]
            .rsplit_once(" (ref ")
            .unwrap_or_else(|| panic!("a correlation id in {:?}", errors[0]));
        assert!(
            message.ends_with("The assistant is unavailable right now; try again."),
            "{message}"
        );
        let id = reference.strip_suffix(')').expect("the reference closes");
        assert_eq!(id.len(), 16, "{id}");
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");

        // The agent that failed is drawn as failed, not as running; the legend says so.
        client
            .find(Locator::Css("#tree .node.failed[data-agent='assistant']"))
            .await
            .expect("the failed agent drawn red");
        assert!(client
            .find_all(Locator::Css("#tree .node.active"))
            .await
            .unwrap()
            .is_empty());
        let legend = texts(&client, "#legend li").await;
        assert_eq!(
            legend,
            ["agent", "running now", "ran in this turn", "failed"],
            "{legend:?}"
        );

        // Nothing of the infrastructure anywhere on the page, the timeline included.
        let page = client.source().await.unwrap();
        let shown: String = client
            .execute("return document.body.innerText", vec![])
            .await
            .unwrap()
            .as_str()
            .unwrap()
            .to_owned();
        for text in [&page, &shown] {
            for secret in [
                "127.0.0.1:4999",
                "chat/completions",
                "os error",
                "Connection refused",
                "gpt-internal",
                "outage._.",
                "INSTRUCTION-CANARY",
                "custom",
            ] {
                assert!(!text.contains(secret), "{secret} on the page: {text}");
            }
        }
        assert!(shown.contains(id), "the reference is shown: {shown}");
        // One outage, one reference: every place the page shows one (the chat, the timeline)
        // shows this one.
        let refs: std::collections::BTreeSet<&str> = shown
            .split("(ref ")
            .skip(1)
            .filter_map(|rest| rest.split(')').next())
            .collect();
        assert_eq!(refs, std::collections::BTreeSet::from([id]), "{shown}");
    })
    .await;
}

const REQUESTER: &str = "ana-requester-token-0123456789";
const APPROVER: &str = "ben-approver-token-0123456789";

/// The demo desk (and a second flow, `notes`) with a requester who may only chat and an
/// approver who may approve and read.
fn two_principals_state() -> AppState {
    let notes = ChatModelAgent::builder("notes", ScriptedModel::new([ScriptStep::text("Noted.")]))
        .build()
        .unwrap();
    AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .flow("notes", FlowAgent::new(notes))
        .auth(Auth::tokens([
            (
                REQUESTER,
                Principal::new("ana").tenant("acme").scopes([Scope::Chat]),
            ),
            (
                APPROVER,
                Principal::new("ben")
                    .tenant("acme")
                    .scopes([Scope::Approve, Scope::Read]),
            ),
        ]))
        .turn_routing(agentweave_runtime::TurnRouting::Root)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_requester_sees_no_approve_button_and_an_approver_answers_from_the_queue() {
    let Some(webdriver) = webdriver() else {
        return;
    };
    let server = spawn(two_principals_state()).await;
    let base = server.base.clone();

    // The requester asks for a refund; the console says it waits for an approver and offers
    // no button to approve it.
    let thread = {
        let base = base.clone();
        let thread = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let out = std::sync::Arc::clone(&thread);
        in_browser(&webdriver, "requester", |client| async move {
            sign_in(&client, &base, REQUESTER).await;
            wait_text(&client, "//*[@id='tree']//*[@data-agent='refund']").await;
            send(&client, "I want a refund for order 42").await;
            let question = wait_text(
                &client,
                "//*[@id='approvals']//*[contains(@class,'question')]",
            )
            .await;
            assert_eq!(question, "Approve a refund of 39.00 EUR for order 42?");
            wait_text(
                &client,
                "//*[@id='status' and text()='waiting for approval']",
            )
            .await;
            let waiting = wait_text(&client, "//*[@id='approvals']//p[@class='muted']").await;
            assert_eq!(waiting, "Waiting for an approver.");
            let buttons = client
                .find_all(Locator::Css("button.approve, button.deny"))
                .await
                .unwrap();
            assert!(buttons.is_empty(), "a requester is offered no answer");
            screenshot(&client, "console-requester.png").await;

            // Reloaded, the page cannot read the thread (no `read` scope) and lets the requester
            // write; the refusal is said in plain words, not in the API's.
            client.refresh().await.unwrap();
            wait_text(&client, "//*[@id='status' and text()='ready']").await;
            send(&client, "Any news?").await;
            let refused = wait_text(
                &client,
                "//div[contains(@class,'msg') and contains(@class,'error')]",
            )
            .await;
            assert_eq!(
                refused,
                "This conversation waits for an approval; it goes on once someone answers it."
            );
            let shown: String = client
                .execute("return document.body.innerText", vec![])
                .await
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned();
            for api_words in ["POST", "/resume", "Retry-After", "::"] {
                assert!(
                    !shown.contains(api_words),
                    "{api_words} on the page: {shown}"
                );
            }
            let id = client
                .find(Locator::Css("#thread"))
                .await
                .unwrap()
                .prop("value")
                .await
                .unwrap()
                .unwrap();
            *out.lock().unwrap() = id;
        })
        .await;
        let id = thread.lock().unwrap().clone();
        id
    };
    assert!(thread.starts_with("t-"), "{thread}");

    // The approver opens the console on another flow, sees the requester's refund in the
    // queue, approves it, and sees the refund paid and the record of who approved.
    let approver_base = base.clone();
    let requester_thread = thread.clone();
    in_browser(&webdriver, "approver", |client| async move {
        sign_in_at(&client, &format!("{approver_base}/#flow=notes"), APPROVER).await;
        wait_text(&client, "//*[@id='tree']//*[@data-agent='notes']").await;
        let entry = format!(
            "//*[@id='approvals']/div[@data-flow='desk' and @data-thread='{requester_thread}']"
        );
        let question =
            wait_text(&client, &format!("{entry}//*[contains(@class,'question')]")).await;
        assert_eq!(question, "Approve a refund of 39.00 EUR for order 42?");
        assert_eq!(wait_text(&client, "//*[@id='approval-count']").await, "1");
        screenshot(&client, "console-approver-queue.png").await;
        client
            .find(Locator::XPath(&format!(
                "{entry}//button[contains(@class,'approve')]"
            )))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let done = wait_text(
            &client,
            "//div[contains(@class,'assistant') and contains(., 'Done: 39 EUR')]",
        )
        .await;
        assert!(done.starts_with("triage/refund"), "{done}");
        wait_text(&client, "//*[@id='status' and text()='finished']").await;
        let current = client
            .find(Locator::Css("#thread"))
            .await
            .unwrap()
            .prop("value")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            current, requester_thread,
            "the console shows the answered thread"
        );
        let flow = client
            .find(Locator::Css("#flow"))
            .await
            .unwrap()
            .prop("value")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(flow, "desk", "and its flow");
        wait_text(&client, "//*[@id='approval-count' and text()='0']").await;
        let answered = wait_text(&client, "//*[@id='answered']/li").await;
        assert!(answered.contains("approved by ben for ana"), "{answered}");
        screenshot(&client, "console-approver-done.png").await;
    })
    .await;

    // The thread's record names the approver.
    let thread_json: serde_json::Value = client()
        .get(format!("{base}/v1/flows/desk/threads/{thread}"))
        .bearer_auth(APPROVER)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let approvals = thread_json["approvals"].as_array().unwrap();
    assert_eq!(approvals.len(), 1, "{thread_json}");
    assert_eq!(approvals[0]["by"], "ben");
    assert_eq!(approvals[0]["requested_by"], "ana");
}

/// The gate the `gated` flow's tool waits at: the tool says when it is there, and goes on
/// when the test adds a permit.
struct Gate {
    running: tokio::sync::mpsc::UnboundedSender<()>,
    open: tokio::sync::Semaphore,
    ledger: std::sync::Mutex<Vec<String>>,
}

/// Calls `lookup` with the user's last message, then answers with what it found; each reply
/// reports its tokens (11 + 20 in, 2 + 5 out: 31 in and 7 out per turn).
struct LookupModel;

#[agentweave_runtime::async_trait]
impl agentweave_runtime::ChatModel for LookupModel {
    fn model_name(&self) -> &str {
        "lookup"
    }

    async fn generate(
        &self,
        request: &agentweave_runtime::model::ChatRequest,
    ) -> Result<agentweave_runtime::Message, ModelError> {
        use agentweave_runtime::{Message, Role, ToolCall, Usage};
        let last_user = request
            .messages
            .iter()
            .rposition(|m| m.role == Role::User)
            .unwrap_or(0);
        let q = request.messages[last_user].content.clone();
        let mut reply = match request.messages[last_user..]
            .iter()
            .find(|m| m.role == Role::Tool)
        {
            None => Message::assistant_tool_calls(
                "",
                vec![ToolCall::new(
                    format!("call-{last_user}"),
                    "lookup",
                    json!({ "q": q }).to_string(),
                )],
            ),
            Some(found) => Message::assistant(format!("answer: {}", found.content)),
        };
        reply.usage = Some(Box::new(if reply.tool_calls.is_empty() {
            Usage::new(20, 5)
        } else {
            Usage::new(11, 2)
        }));
        Ok(reply)
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    q: String,
}

/// A server with the flow `gated`, whose tool waits at the gate.
fn gated_state() -> (
    AppState,
    std::sync::Arc<Gate>,
    tokio::sync::mpsc::UnboundedReceiver<()>,
) {
    gated_state_with(agentweave_server::Limits::default())
}

/// [`gated_state`] with `limits`.
fn gated_state_with(
    limits: agentweave_server::Limits,
) -> (
    AppState,
    std::sync::Arc<Gate>,
    tokio::sync::mpsc::UnboundedReceiver<()>,
) {
    let (running, heard) = tokio::sync::mpsc::unbounded_channel();
    let gate = std::sync::Arc::new(Gate {
        running,
        open: tokio::sync::Semaphore::new(0),
        ledger: std::sync::Mutex::new(Vec::new()),
    });
    let tool_gate = std::sync::Arc::clone(&gate);
    let lookup =
        agentweave_runtime::tool_fn("lookup", "Looks a question up.", move |args: Lookup| {
            let gate = std::sync::Arc::clone(&tool_gate);
            async move {
                gate.ledger
                    .lock()
                    .unwrap()
                    .push(format!("start {}", args.q));
                let _ = gate.running.send(());
                gate.open.acquire().await.unwrap().forget();
                gate.ledger.lock().unwrap().push(format!("end {}", args.q));
                Ok::<_, std::convert::Infallible>(format!("found {}", args.q))
            }
        });
    let agent = ChatModelAgent::builder("clerk", LookupModel)
        .tool(lookup)
        .build()
        .unwrap();
    let state = AppState::builder(InMemoryStore::new())
        .flow("gated", FlowAgent::new(agent))
        .auth(Auth::bearer(TOKEN))
        .limits(limits)
        .build()
        .unwrap();
    (state, gate, heard)
}

/// The thread id in the console's address (`#flow=...&thread=...`).
async fn thread_in_url(client: &fantoccini::Client) -> String {
    let url = client.current_url().await.unwrap();
    let fragment = url.fragment().unwrap_or_default().to_owned();
    assert!(fragment.contains("flow=gated"), "{fragment}");
    fragment
        .split('&')
        .find_map(|p| p.strip_prefix("thread="))
        .unwrap_or_else(|| panic!("a thread in {fragment}"))
        .to_owned()
}

/// The texts of the chat's bubbles of `role` (`user`, `assistant`).
async fn bubbles(client: &fantoccini::Client, role: &str) -> Vec<String> {
    texts(client, &format!("#chat .msg.{role} .text")).await
}

/// Checks what the page shows of the finished `kettle` turn: the user's message and the
/// answer once each (in the chat and in the timeline), the turn numbered as the API numbers
/// it, its tokens.
async fn shows_the_kettle_turn_once(client: &fantoccini::Client) {
    assert_eq!(bubbles(client, "user").await, ["kettle"]);
    assert_eq!(bubbles(client, "assistant").await, ["answer: found kettle"]);
    let timeline = texts(client, "#timeline li").await;
    let said: Vec<&String> = timeline
        .iter()
        .filter(|t| t.contains("answer: found kettle"))
        .collect();
    assert_eq!(
        said.len(),
        1,
        "the answer once in the timeline: {timeline:?}"
    );
    assert!(
        timeline[0].starts_with("turn 0"),
        "turns count from 0, as the API: {timeline:?}"
    );
    let usage = wait_text(client, "//*[@id='timeline']/li[@data-kind='usage']").await;
    assert!(usage.contains("31 in · 7 out"), "{usage}");
}

#[tokio::test]
async fn a_reload_mid_run_keeps_the_thread_reattaches_and_shows_the_answer_once() {
    let Some(webdriver) = webdriver() else {
        return;
    };
    let (state, gate, mut running) = gated_state();
    let server = spawn(state).await;
    let base = server.base.clone();
    in_browser(&webdriver, "reload", |client| async move {
        sign_in(&client, &base, TOKEN).await;
        wait_text(&client, "//*[@id='tree']//*[@data-agent='clerk']").await;
        let placeholder = client
            .find(Locator::Css("#message-input"))
            .await
            .unwrap()
            .attr("placeholder")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(placeholder, "Write a message to gated", "the flow's own");
        send(&client, "kettle").await;
        running.recv().await.expect("the tool runs");
        let thread = thread_in_url(&client).await;

        // Reload while the tool waits: the page comes back on the same thread and follows
        // the run going on in the server from its first event.
        client.refresh().await.unwrap();
        wait_text(
            &client,
            "//*[@id='status' and text()='re-attached to a running turn']",
        )
        .await;
        assert_eq!(thread_in_url(&client).await, thread);
        wait_text(&client, "//*[@id='timeline']/li[@data-kind='tool-call']").await;
        client
            .find(Locator::Css("#stop-bar:not([hidden]) #stop"))
            .await
            .expect("Stop is offered while the run goes on");
        let input = client.find(Locator::Css("#message-input")).await.unwrap();
        assert_eq!(
            input.prop("disabled").await.unwrap().as_deref(),
            Some("true")
        );
        gate.open.add_permits(1);
        wait_text(&client, "//*[@id='status' and text()='finished']").await;
        shows_the_kettle_turn_once(&client).await;
        screenshot(&client, "console-reattached.png").await;

        // The thread and its run are listed, with their status.
        let listed = wait_text(
            &client,
            &format!("//*[@id='threads']/li[@data-thread='{thread}']"),
        )
        .await;
        assert!(listed.contains("1 turn"), "{listed}");
        wait_text(&client, "//*[@id='runs']/li[@data-status='success']").await;

        // A reload after the end rebuilds the same conversation from the stored record.
        client.refresh().await.unwrap();
        wait_text(&client, "//*[@id='status' and text()='ready']").await;
        assert_eq!(thread_in_url(&client).await, thread);
        shows_the_kettle_turn_once(&client).await;
    })
    .await;
}

#[tokio::test]
async fn a_run_goes_on_when_the_tab_closes_and_is_shown_when_it_reopens() {
    let Some(webdriver) = webdriver() else {
        return;
    };
    let (state, gate, mut running) = gated_state();
    let server = spawn(state).await;
    let base = server.base.clone();
    let thread = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    {
        let (base, out) = (base.clone(), std::sync::Arc::clone(&thread));
        let running = &mut running;
        in_browser(&webdriver, "closing", |client| async move {
            sign_in(&client, &base, TOKEN).await;
            wait_text(&client, "//*[@id='tree']//*[@data-agent='clerk']").await;
            send(&client, "kettle").await;
            running.recv().await.expect("the tool runs");
            *out.lock().unwrap() = thread_in_url(&client).await;
        })
        .await;
    }
    let thread = thread.lock().unwrap().clone();

    // The tab is closed; the run goes on.
    let runs: serde_json::Value = client()
        .get(format!("{base}/v1/flows/gated/threads/{thread}/runs"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(runs["runs"][0]["status"], "running", "{runs}");

    let reopened = format!("{base}/#flow=gated&thread={thread}");
    in_browser(&webdriver, "reopened", |client| async move {
        sign_in_at(&client, &reopened, TOKEN).await;
        wait_text(
            &client,
            "//*[@id='status' and text()='re-attached to a running turn']",
        )
        .await;
        gate.open.add_permits(1);
        wait_text(&client, "//*[@id='status' and text()='ready']").await;
        shows_the_kettle_turn_once(&client).await;
    })
    .await;
}

#[tokio::test]
async fn stop_after_tools_ends_the_run_after_the_tool_and_continue_goes_on() {
    let Some(webdriver) = webdriver() else {
        return;
    };
    let (state, gate, mut running) = gated_state();
    let server = spawn(state).await;
    let base = server.base.clone();
    in_browser(&webdriver, "stop", |client| async move {
        sign_in(&client, &base, TOKEN).await;
        wait_text(&client, "//*[@id='tree']//*[@data-agent='clerk']").await;
        send(&client, "kettle").await;
        running.recv().await.expect("the tool runs");
        client
            .find(Locator::Css("#cancel-mode option[value='after_tools']"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        client
            .find(Locator::Css("#stop-bar:not([hidden]) #stop"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        // The server took the cancel before the tool goes on.
        wait_text(
            &client,
            "//*[@id='status' and text()='stopping after the tool calls…']",
        )
        .await;
        gate.open.add_permits(1);
        wait_text(&client, "//*[@id='status' and text()='stopped']").await;
        screenshot(&client, "console-stopped.png").await;

        // The tool finished and its result is kept; the model was not asked again.
        let result = wait_text(&client, "//*[@id='timeline']/li[@data-kind='tool-result']").await;
        assert!(result.contains("found kettle"), "{result}");
        assert!(bubbles(&client, "assistant").await.is_empty());
        let notice = wait_text(&client, "//div[contains(@class,'notice')]").await;
        assert!(notice.contains("Stopped after the tool calls."), "{notice}");
        assert_eq!(
            *gate.ledger.lock().unwrap(),
            ["start kettle", "end kettle"],
            "the tool ran once, to its end"
        );
        wait_text(&client, "//*[@id='runs']/li[@data-status='cancelled']").await;

        // Continue: the run goes on from where it stopped, without calling the tool again.
        client
            .find(Locator::Css("#chat button.continue"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        wait_text(&client, "//*[@id='status' and text()='finished']").await;
        assert_eq!(
            bubbles(&client, "assistant").await,
            ["answer: found kettle"]
        );
        assert_eq!(gate.ledger.lock().unwrap().len(), 2, "no second tool call");
    })
    .await;
}

#[tokio::test]
async fn a_stream_that_ends_mid_run_is_followed_again_after_its_last_event_id() {
    let Some(webdriver) = webdriver() else {
        return;
    };
    // Every stream of the server ends after 300 ms while the run goes on: the page must
    // attach again, after the last event it saw, until the run ends.
    let (state, gate, mut running) = gated_state_with(agentweave_server::Limits {
        max_turn_duration: Duration::from_millis(300),
        ..agentweave_server::Limits::default()
    });
    let server = spawn(state).await;
    let base = server.base.clone();
    in_browser(&webdriver, "reattach", |client| async move {
        sign_in(&client, &base, TOKEN).await;
        wait_text(&client, "//*[@id='tree']//*[@data-agent='clerk']").await;
        send(&client, "kettle").await;
        running.recv().await.expect("the tool runs");
        // Two re-attachments while the tool waits, then the tool goes on.
        wait_text(&client, "//*[@id='status' and @data-reattached >= 2]").await;
        gate.open.add_permits(1);
        wait_text(&client, "//*[@id='status' and text()='finished']").await;
        // Each event once: one tool call, one result, one answer, no stream error shown.
        shows_the_kettle_turn_once(&client).await;
        assert_eq!(
            texts(&client, "#timeline li[data-kind='tool-call']")
                .await
                .len(),
            1
        );
        assert_eq!(
            texts(&client, "#timeline li[data-kind='tool-result']")
                .await
                .len(),
            1
        );
        assert!(texts(&client, "#timeline li[data-kind='error']")
            .await
            .is_empty());
    })
    .await;
}

const OWNER: &str = "owen-owner-token-0123456789";

/// The demo desk with a thread owner who may chat and read, not approve.
fn owner_state() -> AppState {
    AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::tokens([(
            OWNER,
            Principal::new("owen")
                .tenant("acme")
                .scopes([Scope::Chat, Scope::Read]),
        )]))
        .turn_routing(agentweave_runtime::TurnRouting::Root)
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_owner_forks_inside_a_turn_and_continues_it_without_an_approver() {
    let Some(webdriver) = webdriver() else {
        return;
    };
    let server = spawn(owner_state()).await;
    let base = server.base.clone();
    in_browser(&webdriver, "fork-owner", |client| async move {
        sign_in(&client, &base, OWNER).await;
        wait_text(&client, "//*[@id='tree']//*[@data-agent='refund']").await;
        send(&client, "I want a refund for order 42").await;
        wait_text(
            &client,
            "//*[@id='status' and text()='waiting for approval']",
        )
        .await;
        let original = thread_shown(&client).await;

        // The history says what each step said, and when.
        let first = wait_text(&client, "//*[@id='history']/li[@data-step='0']").await;
        assert!(first.contains("turn 0 · input"), "{first}");
        assert!(first.contains("I want a refund for order 42"), "{first}");
        let when = wait_text(&client, "//*[@id='history']/li[@data-step='0']/time").await;
        assert!(when.contains(':'), "a time of day: {when}");
        let asked = wait_text(&client, "//*[@id='history']/li[@data-kind='interrupt']").await;
        assert!(
            asked.contains("Approve a refund of 39.00 EUR for order 42?"),
            "{asked}"
        );

        // Fork inside the turn (its second step): the fork waits for its owner, not for an
        // approver, and nothing runs yet.
        client
            .wait()
            .at_most(WAIT)
            .for_element(Locator::XPath(
                "//*[@id='history']/li[@data-step='1']//button[contains(@class,'fork')]",
            ))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        wait_text(&client, "//*[@id='status' and text()='forked at step 1']").await;
        let fork = thread_shown(&client).await;
        assert_ne!(fork, original, "the fork is a new thread");
        let notice = wait_text(&client, "//div[contains(@class,'notice')]").await;
        assert!(notice.contains("Forked at step 1"), "{notice}");
        screenshot(&client, "console-fork-point.png").await;
        let shown: String = client
            .execute("return document.body.innerText", vec![])
            .await
            .unwrap()
            .as_str()
            .unwrap()
            .to_owned();
        for wrong in [
            "fork_point",
            "approve` scope",
            "approve scope",
            "re-running",
        ] {
            assert!(!shown.contains(wrong), "{wrong} on the page: {shown}");
        }
        // The queue holds the original's refund only (the fork point asks nobody).
        let entries = client
            .find_all(Locator::Css("#approvals .approval"))
            .await
            .unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(
            entries[0].attr("data-thread").await.unwrap().as_deref(),
            Some(original.as_str())
        );

        // Continue: the turn goes on from step 1 and the refund asks again, on the fork.
        client
            .find(Locator::Css("#chat button.fork-continue"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        wait_text(
            &client,
            "//*[@id='status' and text()='waiting for approval']",
        )
        .await;
        wait_text(
            &client,
            &format!("//*[@id='approvals']/div[@data-thread='{fork}']"),
        )
        .await;
        assert!(client
            .find_all(Locator::Css("#chat .msg.error"))
            .await
            .unwrap()
            .is_empty());
        screenshot(&client, "console-fork-continued.png").await;
    })
    .await;
}

/// The thread the console shows (its Thread field).
async fn thread_shown(client: &fantoccini::Client) -> String {
    client
        .find(Locator::Css("#thread"))
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn an_approval_card_shows_the_question_redacted_arguments_requester_and_agent() {
    let Some(webdriver) = webdriver() else {
        return;
    };
    let (state, called) = crate::tool_approvals::password_desk();
    let server = spawn(state).await;
    let base = server.base.clone();
    let requester_base = base.clone();
    in_browser(&webdriver, "card-requester", |client| async move {
        sign_in(&client, &requester_base, crate::tool_approvals::ANA).await;
        wait_text(&client, "//*[@id='tree']//*[@data-agent='helpdesk']").await;
        send(&client, "reset kim's password").await;
        let question = wait_text(
            &client,
            "//*[@id='approvals']//*[contains(@class,'question')]",
        )
        .await;
        assert_eq!(question, "Reset the password of kim (reset_password)?");
        wait_text(
            &client,
            "//*[@id='approvals']//dl[@class='arguments']/dd[text()='[redacted]']",
        )
        .await;
    })
    .await;
    in_browser(&webdriver, "card-approver", |client| async move {
        sign_in(&client, &base, crate::tool_approvals::BEN).await;
        let card = "//*[@id='approvals']/div[@data-thread]";
        let question = wait_text(&client, &format!("{card}//*[@class='question']")).await;
        assert_eq!(question, "Reset the password of kim (reset_password)?");
        let args = texts(
            &client,
            "#approvals .approval .arguments dt, #approvals .approval .arguments dd",
        )
        .await;
        // serde_json's objects keep their keys sorted.
        assert_eq!(
            args,
            ["new_password", "[redacted]", "user", "kim"],
            "{args:?}"
        );
        let who = wait_text(&client, &format!("{card}//*[@class='who']")).await;
        assert_eq!(who, "asked by ana · agent helpdesk");
        let shown: String = client
            .execute("return document.body.innerText", vec![])
            .await
            .unwrap()
            .as_str()
            .unwrap()
            .to_owned();
        assert!(!shown.contains("hunter2"), "{shown}");
        screenshot(&client, "console-approval-card.png").await;
        client
            .find(Locator::XPath(&format!(
                "{card}//button[contains(@class,'approve')]"
            )))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        wait_text(
            &client,
            "//div[contains(@class,'assistant') and contains(., 'Kim can sign in again.')]",
        )
        .await;
    })
    .await;
    assert_eq!(*called.lock().unwrap(), ["hunter2-SECRET"]);
}

const ALICE: &str = "alice-acme-token-0123456789";
const BOB: &str = "bob-acme-token-0123456789";

/// The demo desk with long-term memory (when `memory`), for alice and bob of one tenant, who
/// may chat and read.
fn memory_state(memory: bool) -> AppState {
    let builder = AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::tokens([
            (
                ALICE,
                Principal::new("alice")
                    .tenant("acme")
                    .scopes([Scope::Chat, Scope::Read]),
            ),
            (
                BOB,
                Principal::new("bob")
                    .tenant("acme")
                    .scopes([Scope::Chat, Scope::Read]),
            ),
        ]));
    let builder = if memory {
        builder.memory(agentweave_runtime::memory::Memory::new(
            agentweave_runtime::memory::TransientMemoryStore::new(),
        ))
    } else {
        builder
    };
    builder.build().unwrap()
}

/// Writes one item of `token`'s principal's user memory.
async fn remember(base: &str, token: &str, namespace: &str, key: &str, text: &str) {
    let response = client()
        .put(format!("{base}/v1/memory/item"))
        .bearer_auth(token)
        .json(&json!({"namespace": namespace, "key": key, "value": {"fact": text}, "text": text}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
}

#[tokio::test]
async fn the_console_shows_what_is_remembered_about_the_user_and_deletes_it() {
    let Some(webdriver) = webdriver() else {
        return;
    };
    let server = spawn(memory_state(true)).await;
    let base = server.base.clone();
    remember(
        &base,
        ALICE,
        "profile",
        "device",
        "Alice's printer is an X200",
    )
    .await;
    remember(&base, ALICE, "prefs", "language", "Alice writes in French").await;
    remember(&base, BOB, "profile", "device", "Bob's router is a R7").await;
    let page = base.clone();
    in_browser(&webdriver, "memory", |client| async move {
        sign_in(&client, &page, ALICE).await;
        let item = "//*[@id='memory']/li[@data-namespace='profile' and @data-key='device']";
        let text = wait_text(&client, item).await;
        assert!(text.contains("profile · device"), "{text}");
        assert!(text.contains("Alice's printer is an X200"), "{text}");
        assert!(text.contains("updated "), "{text}");
        let shown = texts(&client, "#memory li .text").await;
        assert_eq!(shown.len(), 2, "alice's items only: {shown:?}");
        assert!(!shown.iter().any(|t| t.contains("Bob")), "{shown:?}");
        screenshot(&client, "console-memory.png").await;

        client
            .find(Locator::XPath(&format!(
                "{item}//button[contains(@class,'forget')]"
            )))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        client
            .wait()
            .at_most(WAIT)
            .for_element(Locator::XPath(
                "//*[@id='memory' and count(li)=1 and li[@data-key='language']]",
            ))
            .await
            .expect("the deleted item leaves the list");
    })
    .await;
    // Deleted in the server; bob's item of the same address is untouched.
    let gone = client()
        .get(format!(
            "{base}/v1/memory/item?namespace=profile&key=device"
        ))
        .bearer_auth(ALICE)
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 404);
    let kept = client()
        .get(format!(
            "{base}/v1/memory/item?namespace=profile&key=device"
        ))
        .bearer_auth(BOB)
        .send()
        .await
        .unwrap();
    assert_eq!(kept.status(), 200);

    // A server without memory: no memory panel.
    let server = spawn(memory_state(false)).await;
    let base = server.base.clone();
    in_browser(&webdriver, "no-memory", |client| async move {
        sign_in(&client, &base, ALICE).await;
        wait_text(&client, "//*[@id='status' and text()='new thread']").await;
        let section = client
            .wait()
            .at_most(WAIT)
            .for_element(Locator::Css("#memory-section[data-state='absent']"))
            .await
            .expect("the console asked for the memory and heard there is none");
        assert!(
            !section.is_displayed().await.unwrap(),
            "hidden without memory"
        );
    })
    .await;
}

#[tokio::test]
async fn a_link_naming_a_thread_opens_it_and_messages_go_to_it() {
    let Some(webdriver) = webdriver() else {
        return;
    };
    let server = spawn(desk_state()).await;
    let base = server.base.clone();
    let page = base.clone();
    let first = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let out = std::sync::Arc::clone(&first);
    in_browser(&webdriver, "hash-link", |client| async move {
        sign_in(&client, &page, TOKEN).await;
        send(&client, "Hi there").await;
        wait_text(&client, "//*[@id='status' and text()='finished']").await;
        *out.lock().unwrap() = thread_shown(&client).await;

        // A link to another thread, followed in the same page (only the hash changes).
        client
            .execute(
                "location.hash = '#flow=desk&thread=t-linked'; return null",
                vec![],
            )
            .await
            .unwrap();
        // The Thread field follows the address (it is no attribute a WebDriver waits on).
        for _ in 0..100 {
            if thread_shown(&client).await == "t-linked" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(thread_shown(&client).await, "t-linked");
        wait_text(&client, "//*[@id='status' and text()='new thread']").await;
        assert!(
            bubbles(&client, "user").await.is_empty(),
            "the old thread's chat is gone"
        );
        send(&client, "Hello from the link").await;
        wait_text(&client, "//*[@id='status' and text()='finished']").await;
    })
    .await;
    let first = first.lock().unwrap().clone();
    let thread = |id: String| {
        let base = base.clone();
        async move {
            let v: serde_json::Value = client()
                .get(format!("{base}/v1/flows/desk/threads/{id}"))
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            v
        }
    };
    let linked = thread("t-linked".into()).await;
    assert_eq!(linked["turns"], 1, "{linked}");
    assert_eq!(
        linked["messages"][0]["message"]["content"],
        "Hello from the link"
    );
    let original = thread(first).await;
    assert_eq!(
        original["turns"], 1,
        "the first thread got no second message: {original}"
    );
}

/// A flow `forum` whose agent `reader` calls `crawl`, which reports its progress as an MCP
/// server's tool does (`{progress, total, message}`), then waits until `gate` lets it finish.
fn crawler_state(gate: std::sync::Arc<tokio::sync::Semaphore>) -> AppState {
    let model = ScriptedModel::rules()
        .after_tool("crawl", ScriptStep::text("The forum likes the kettle."))
        .otherwise(ScriptStep::tool_call("crawl", json!({"forum": "kettles"})));
    let agent = ChatModelAgent::builder("reader", model)
        .tool(agentweave_runtime::tool_fn_with_context(
            "crawl",
            "Reads a forum.",
            move |cx: agentweave_runtime::ToolContext, _args: serde_json::Value| {
                let gate = std::sync::Arc::clone(&gate);
                async move {
                    cx.progress(json!({"progress": 1, "total": 2, "message": "page 1 read"}))
                        .await;
                    gate.acquire().await.unwrap().forget();
                    Ok::<_, String>("2 pages read".to_owned())
                }
            },
        ))
        .build()
        .unwrap();
    AppState::builder(InMemoryStore::new())
        .flow("forum", FlowAgent::new(agent))
        .auth(Auth::bearer(TOKEN))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_tools_progress_shows_on_its_call_not_as_a_pseudo_agent() {
    let Some(webdriver) = webdriver() else {
        return;
    };
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let server = spawn(crawler_state(std::sync::Arc::clone(&gate))).await;
    let base = server.base.clone();
    in_browser(&webdriver, "progress", |client| async move {
        sign_in(&client, &base, TOKEN).await;
        wait_text(&client, "//*[@id='tree']//*[@data-agent='reader']").await;
        send(&client, "what does the forum say?").await;
        let progress = wait_text(
            &client,
            "//*[@id='timeline']/li[@data-kind='tool-call' and contains(., 'calls crawl')]/*[@class='progress']",
        )
        .await;
        assert_eq!(progress, "page 1 read (1/2)");
        // One row for the call; none for a pseudo-agent named after the tool, no raw JSON.
        let rows = texts(&client, "#timeline li").await;
        assert_eq!(
            rows.iter().filter(|r| r.contains("crawl")).count(),
            1,
            "{rows:?}"
        );
        assert!(
            !texts(&client, "#timeline .run-path")
                .await
                .iter()
                .any(|p| p.ends_with("crawl")),
            "{rows:?}"
        );
        let shown: String = client
            .execute("return document.body.innerText", vec![])
            .await
            .unwrap()
            .as_str()
            .unwrap()
            .to_owned();
        assert!(!shown.contains("tool_progress"), "{shown}");
        client
            .find(Locator::Css("#tree .node.active[data-agent='reader']"))
            .await
            .expect("the caller is drawn running");
        screenshot(&client, "console-tool-progress.png").await;
        gate.add_permits(1);
        wait_text(
            &client,
            "//div[contains(@class,'assistant') and contains(., 'The forum likes the kettle.')]",
        )
        .await;
    })
    .await;
}

/// The agent's plan beside the timeline: each version as the agent writes it, the last one
/// after the turn (every step done), and again after a reload, from the thread.
#[tokio::test]
async fn the_plan_shows_beside_the_timeline_and_after_a_reload() {
    let Some(webdriver) = webdriver() else {
        return;
    };
    let state = AppState::builder(InMemoryStore::new())
        .flow("planner", crate::a2a::planner())
        .auth(Auth::bearer(TOKEN))
        .build()
        .unwrap();
    let server = spawn(state).await;
    let base = server.base.clone();
    in_browser(&webdriver, "plan", |client| async move {
        sign_in(&client, &base, TOKEN).await;
        assert!(
            texts(&client, "#plan li").await.is_empty(),
            "no plan before the agent writes one"
        );
        send(&client, "Write the report").await;
        wait_text(&client, "//*[@id='status' and text()='finished']").await;
        wait_text(&client, "//*[@id='plan-section' and not(@hidden)]//li").await;
        assert_eq!(
            texts(&client, "#plan li").await,
            ["[x] gather", "[x] write"]
        );
        let done = client
            .find_all(Locator::Css("#plan li[data-status='done']"))
            .await
            .unwrap();
        assert_eq!(done.len(), 2);
        screenshot(&client, "console-plan.png").await;

        client.refresh().await.unwrap();
        wait_text(&client, "//*[@id='plan-section' and not(@hidden)]//li").await;
        assert_eq!(
            texts(&client, "#plan li").await,
            ["[x] gather", "[x] write"]
        );
    })
    .await;
}

const CAROL: &str = "carol-acme-token-0123456789";
const DAVE: &str = "dave-globex-token-0123456789";

/// A server counting spending: `desk` and `other`, each answering in one model call of 100 + 10
/// tokens of model `m` (priced); Carol of tenant acme, Dave of tenant globex.
fn usage_state(spending: bool) -> AppState {
    use agentweave_runtime::budget::ModelPrice;
    use agentweave_runtime::store::InMemoryRunQueue;
    use agentweave_runtime::{model::Usage, SpendingBudgets};
    let bot = || {
        let model = ScriptedModel::rules()
            .otherwise(ScriptStep::text("hello").with_usage(Usage::new(100, 10)))
            .named("m");
        FlowAgent::new(ChatModelAgent::builder("bot", model).build().unwrap())
    };
    let builder = AppState::builder(InMemoryStore::new())
        .flow("desk", bot())
        .flow("other", bot())
        .auth(Auth::tokens([
            (
                CAROL,
                Principal::new("carol")
                    .tenant("acme")
                    .scopes([Scope::Chat, Scope::Read]),
            ),
            (
                DAVE,
                Principal::new("dave")
                    .tenant("globex")
                    .scopes([Scope::Chat, Scope::Read]),
            ),
        ]));
    let builder = if spending {
        builder.spending(
            SpendingBudgets::new(std::sync::Arc::new(InMemoryRunQueue::new()))
                .price("m", ModelPrice::per_million_tokens(2.0, 8.0)),
        )
    } else {
        builder
    };
    builder.build().unwrap()
}

/// One turn of `flow`'s thread `thread` as `token`, read to its end.
async fn take_turn(base: &str, token: &str, flow: &str, thread: &str) {
    let response = client()
        .post(format!("{base}/v1/flows/{flow}/threads/{thread}/turns"))
        .bearer_auth(token)
        .json(&json!({ "message": "hi" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    read_sse(response).await;
}

#[tokio::test]
async fn the_console_shows_the_tenants_usage_by_day_flow_agent_and_model() {
    let Some(webdriver) = webdriver() else {
        return;
    };
    let server = spawn(usage_state(true)).await;
    let base = server.base.clone();
    take_turn(&base, CAROL, "desk", "c1").await;
    take_turn(&base, CAROL, "desk", "c1").await;
    take_turn(&base, CAROL, "other", "c2").await;
    take_turn(&base, DAVE, "desk", "d1").await;
    let today = {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        agentweave_runtime::spending::BudgetPeriod::Day.label(ms)
    };
    let page = base.clone();
    in_browser(&webdriver, "usage", |client| async move {
        sign_in_at(&client, &format!("{page}/#flow=desk&thread=c3"), CAROL).await;
        let desk = format!(
            "//*[@id='usage']//tr[@data-day='{today}' and @data-flow='desk' and \
             @data-agent='bot' and @data-model='m']"
        );
        let cells: Vec<String> = wait_text(&client, &desk)
            .await
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        // Two calls of 110 tokens at $2 and $8 per million: 2 x 280 millionths.
        assert_eq!(cells, [&today, "desk", "bot", "m", "220", "2", "$0.000560"]);
        // Carol's tenant only: desk and other, not Dave's globex.
        let rows = texts(&client, "#usage tbody tr").await;
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert!(rows.iter().any(|r| r.contains("other")), "{rows:?}");
        let total = wait_text(&client, "//*[@id='usage-total']").await;
        assert_eq!(total, "In all: 330 tokens in 3 model calls, $0.000840");
        screenshot(&client, "console-usage.png").await;
        // A message sent in the console is counted once its run ends.
        send(&client, "hello again").await;
        wait_text(
            &client,
            &format!(
                "//*[@id='usage']//tr[@data-day='{today}' and @data-flow='desk']/td[6][text()='3']"
            ),
        )
        .await;
    })
    .await;

    // A server that counts no spending shows no usage section.
    let server = spawn(usage_state(false)).await;
    let page = server.base.clone();
    in_browser(&webdriver, "no-usage", |client| async move {
        sign_in(&client, &page, CAROL).await;
        client
            .wait()
            .at_most(WAIT)
            .for_element(Locator::Css("#usage-section[data-state='absent'][hidden]"))
            .await
            .expect("no usage section without spending");
    })
    .await;
}
