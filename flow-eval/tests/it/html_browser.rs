//! The HTML report in a real browser: headless Chromium loads the page of an eval run, which
//! lists every case and draws each case's path on the flow's picture, and screenshots it.
//! Skipped locally without Chromium; CI installs it (`.ci/chromium.sh`).

use crate::common;

use std::process::Command;

use agentweave_eval::set::EvalSet;
use agentweave_eval::EvalRunner;
use agentweave_runtime::model::{ScriptStep, ScriptedModel};

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|bin| {
            Command::new(bin)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

#[tokio::test]
async fn chromium_renders_the_html_report() {
    let Some(bin) = chromium() else {
        agentweave_runtime::testing::skip_missing_component(
            "Chromium",
            "install the `chromium` package",
        );
        return;
    };
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/desk.json");
    let set = EvalSet::from_file(fixture).unwrap();
    let report = EvalRunner::new(common::desk)
        .judge(
            ScriptedModel::rules()
                .otherwise(ScriptStep::text(r#"{"score": 1, "reason": "fine"}"#))
                .named("judge"),
        )
        .run(&set)
        .await;

    let dir = std::env::temp_dir().join(format!("agentflow-eval-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("report.html");
    std::fs::write(&page, report.html()).unwrap();
    let url = format!("file://{}", page.display());
    let profile = format!("--user-data-dir={}", dir.join("profile").display());
    let headless = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        profile.as_str(),
    ];

    let dom = Command::new(bin)
        .args(headless)
        .args(["--dump-dom", &url])
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&dom.stdout);
    for case in &set.cases {
        assert!(
            dom.contains(&format!("id=\"case-{}\"", case.id)),
            "case {} is on the page",
            case.id
        );
    }
    // Each case's picture, with the agents its path reached marked.
    assert_eq!(
        dom.matches("<svg").count(),
        set.cases.len(),
        "one picture per case"
    );
    assert!(
        dom.contains("#c0r0 g.agent[data-name=\"refund\"] rect"),
        "the refund case marks refund"
    );
    assert!(dom.contains("<li>transfer triage -&gt; refund</li>"));

    let png = dir.join("report.png");
    let status = Command::new(bin)
        .args(headless)
        .arg(format!("--screenshot={}", png.display()))
        .args(["--window-size=1200,2400", &url])
        .output()
        .expect("chromium runs")
        .status;
    assert!(status.success());
    let bytes = std::fs::read(&png).expect("a screenshot");
    assert!(bytes.starts_with(b"\x89PNG"), "a PNG image");
    // Kept for a look when asked (AGENTFLOW_KEEP_SCREENSHOT=1); removed otherwise.
    if std::env::var_os("AGENTFLOW_KEEP_SCREENSHOT").is_none() {
        std::fs::remove_dir_all(&dir).ok();
    } else {
        eprintln!("screenshot: {}", png.display());
    }
}
