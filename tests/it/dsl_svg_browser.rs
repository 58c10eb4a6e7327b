//! The flow picture in a real browser: headless Chromium loads `CustomerService::svg()` as an
//! SVG document (an XML error would give a `parsererror` page) and renders it to a PNG; and it
//! loads the rustdoc page of a flow (`tests/fixtures/docs_picture.rs`, documented with
//! `cargo doc --offline` in `target/tmp`) and reads what the picture and the page show.
//! Skipped locally without Chromium; CI installs it (`.ci/chromium.sh`).

use std::path::Path;
use std::process::Command;

use crate::customer_service;

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
        agentweave::testing::skip_missing_component("Chromium", "install the `chromium` package");
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

/// The DOM Chromium builds for `page`.
fn dump_dom(bin: &str, page: &Path, profile: &Path) -> String {
    let url = format!("file://{}", page.display());
    let profile = format!("--user-data-dir={}", profile.display());
    let out = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            profile.as_str(),
            "--dump-dom",
            &url,
        ])
        .output()
        .expect("chromium runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn fixtures_target() -> std::path::PathBuf {
    // Shared with `tests/it/strict_lints.rs`'s fixture, which depends on agentflow the same way
    // (without its features): the dependencies are checked once for both.
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("fixtures_target")
}

/// Documents the fixture crate; returns the page of its flow type.
fn document_fixture() -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("docs_picture");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"docs-picture-fixture\"\nversion = \"0.0.0\"\n\
         edition = \"2021\"\npublish = false\n\n[workspace]\n\n[dependencies]\n\
         agentweave = {{ path = {:?}, default-features = false }}\n",
        root.display().to_string()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::copy(
        root.join("tests/fixtures/docs_picture.rs"),
        dir.join("src/lib.rs"),
    )
    .unwrap();
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(["doc", "--offline", "--quiet", "--no-deps"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", fixtures_target())
        .env_remove("RUSTFLAGS")
        .env_remove("RUSTDOCFLAGS")
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo doc of the fixture failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = fixtures_target().join("doc/docs_picture_fixture");
    let page = doc.join("struct.Desk.html");
    assert!(page.exists(), "rustdoc wrote {}", page.display());
    page
}

#[test]
fn chromium_shows_the_rustdoc_picture_with_real_names_and_descriptions() {
    let Some(bin) = chromium() else {
        agentweave::testing::skip_missing_component("Chromium", "install the `chromium` package");
        return;
    };
    let page = document_fixture();
    let profile = std::env::temp_dir().join(format!("agentflow-doc-{}", std::process::id()));
    let dom = dump_dom(bin, &page, &profile);
    std::fs::remove_dir_all(&profile).ok();
    let start = dom
        .find("<svg xmlns=\"http://www.w3.org/2000/svg\"")
        .expect("the page holds the flow's picture");
    let end = start + dom[start..].find("</svg>").expect("the picture ends");
    let picture = &dom[start..end];

    // The names a model uses: the renamed agent by its real name, not its fn's identifier.
    for name in ["triage", "refund-desk", "lookup", "billing"] {
        assert!(
            picture.contains(&format!("data-name=\"{name}\"")),
            "the picture draws `{name}`: {picture}"
        );
    }
    assert!(!picture.contains("other_desk"), "{picture}");
    // Descriptions: fn and struct agents' doc comments, and a `dyn` node's in `flow!`.
    for text in [
        "Routes each request to the desk",
        "Refunds orders of up to 50 EUR.",
        "Finds an order by its number.",
        "Answers billing questions",
    ] {
        assert!(
            picture.contains(text),
            "the picture shows {text:?}: {picture}"
        );
    }
    // The legend explains the edges drawn: nothing is barred here.
    assert!(picture.contains("transfers both ways"), "{picture}");
    assert!(!picture.contains("barred from its parent"), "{picture}");
    // The page names no internal item.
    for internal in [
        "__AgentflowFacts",
        "__agentflow",
        "__PARENTS",
        "__BARRED",
        "__DESCRIPTIONS",
        "__NOTES",
        "__flow",
    ] {
        assert!(!dom.contains(internal), "the page shows `{internal}`");
    }
}
