//! The console in a real, headless Chromium driven through WebDriver (fantoccini): load the
//! page, give the token, send a message on the offline desk, see the streamed answer and the run
//! paths, approve the refund, see the run finish.
//!
//! Needs a chromedriver: `AGENTFLOW_WEBDRIVER_URL` (`.ci/chromium.sh` installs Chromium and its
//! driver and starts it). Without one the test says it is skipped. Screenshots go to
//! `$AGENTFLOW_SCREENSHOT_DIR` when set.

mod common;

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use common::*;
use fantoccini::{ClientBuilder, Locator};
use flow_runtime::testing::skip_missing_component;
use futures::FutureExt;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);

async fn browser(webdriver: &str, profile: &std::path::Path) -> fantoccini::Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1400,900",
                format!("--user-data-dir={}", profile.display()),
            ]
        }),
    );
    // Two TLS crypto providers are linked into this test (ring through reqwest, aws-lc-rs through
    // fantoccini's hyper-rustls), so rustls cannot pick one by itself: say which.
    let _ = rustls::crypto::ring::default_provider().install_default();
    ClientBuilder::rustls()
        .expect("TLS roots for the WebDriver client")
        .capabilities(caps)
        .connect(webdriver)
        .await
        .expect("a session of the WebDriver")
}

async fn screenshot(client: &fantoccini::Client, name: &str) {
    if let Ok(dir) = std::env::var("AGENTFLOW_SCREENSHOT_DIR") {
        let png = client.screenshot().await.expect("a screenshot");
        std::fs::write(std::path::Path::new(&dir).join(name), png).expect("screenshot written");
    }
}

/// Waits until an element matching the XPath exists, and returns its text.
async fn wait_text(client: &fantoccini::Client, xpath: &str) -> String {
    client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::XPath(xpath))
        .await
        .unwrap_or_else(|e| panic!("waiting for {xpath}: {e}"))
        .text()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_person_chats_and_approves_a_refund_in_the_console() {
    let Ok(webdriver) = std::env::var("AGENTFLOW_WEBDRIVER_URL") else {
        skip_missing_component(
            "Chromium with chromedriver",
            "install chromium and chromium-driver, run `chromedriver --port=9515` and set \
             AGENTFLOW_WEBDRIVER_URL=http://127.0.0.1:9515",
        );
        return;
    };
    let server = spawn(desk_state()).await;
    let profile = std::env::temp_dir().join(format!("agentflow-chromium-{}", std::process::id()));
    let client = browser(&webdriver, &profile).await;
    // Close the browser even when an assertion fails, then report the failure.
    let result = AssertUnwindSafe(drive(&client, &server.base))
        .catch_unwind()
        .await;
    client.close().await.ok();
    let _ = std::fs::remove_dir_all(&profile);
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

async fn drive(client: &fantoccini::Client, base: &str) {
    client.goto(&format!("{base}/")).await.unwrap();

    // The server wants a token: the console asks for it.
    let token = client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css("#auth:not([hidden]) #token"))
        .await
        .expect("the console asks for a token");
    token.send_keys(TOKEN).await.unwrap();
    client
        .find(Locator::Css("#auth-form button"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();

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
    let paths: Vec<String> = {
        let mut out = Vec::new();
        for e in client
            .find_all(Locator::Css("#timeline .run-path"))
            .await
            .unwrap()
        {
            out.push(e.text().await.unwrap());
        }
        out
    };
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
