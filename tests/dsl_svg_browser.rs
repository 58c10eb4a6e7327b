//! The flow picture in a real browser: headless Chromium loads `CustomerService::svg()` as an
//! SVG document (an XML error would give a `parsererror` page) and renders it to a PNG.
//! Skipped locally without Chromium; CI installs it (`.ci/chromium.sh`).

use std::process::Command;

#[allow(dead_code)]
#[path = "../examples/customer_service.rs"]
mod customer_service;

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

#[test]
fn chromium_loads_and_renders_the_flow_svg() {
    let Some(bin) = chromium() else {
        agentflow::testing::skip_missing_component("Chromium", "install the `chromium` package");
        return;
    };
    let dir = std::env::temp_dir().join(format!("agentflow-svg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg_path = dir.join("desk.svg");
    std::fs::write(&svg_path, customer_service::CustomerService::svg()).unwrap();
    let url = format!("file://{}", svg_path.display());
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
    assert!(
        !dom.contains("parsererror"),
        "Chromium could not parse the SVG: {dom}"
    );
    for agent in ["triage", "refund", "complaint"] {
        assert!(
            dom.contains(&format!("data-name=\"{agent}\"")),
            "{agent} is in the document Chromium built"
        );
    }

    let png = dir.join("desk.png");
    let status = Command::new(bin)
        .args(headless)
        .arg(format!("--screenshot={}", png.display()))
        .args(["--window-size=800,400", &url])
        .output()
        .expect("chromium runs")
        .status;
    assert!(status.success());
    let bytes = std::fs::read(&png).expect("a screenshot");
    assert!(bytes.starts_with(b"\x89PNG"), "a PNG image");
    std::fs::remove_dir_all(&dir).ok();
}
