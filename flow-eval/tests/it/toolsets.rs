//! A toolset fetched live (an MCP server's tools) records its tools' definitions in the
//! cassette; an offline replay makes the tools from them and never fetches, so it needs no
//! server installed. A cassette without the toolset says to record again.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use agentweave_eval::cassette::{CassetteFile, Mode};
use agentweave_eval::set::{EvalCase, EvalSet, ResponseExpectation, TurnCase};
use agentweave_eval::EvalRunner;
use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::{tool_fn, ChatModelAgent, FlowAgent, Tool};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ReadFile {
    /// The file's path.
    path: String,
}

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "agentweave-eval-toolsets-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The runner: a clerk that reads a file with the `files` toolset's `read_file`. `fetched`
/// counts the live fetches; `live` says whether the "server" is there.
fn runner(dir: &PathBuf, mode: Mode, fetched: &Arc<AtomicUsize>, live: bool) -> EvalRunner {
    let fetched = Arc::clone(fetched);
    EvalRunner::new(|env| {
        let model = ScriptedModel::rules()
            .after_tool("read_file", ScriptStep::text("The notes say: buy milk."))
            .otherwise(ScriptStep::tool_call(
                "read_file",
                json!({"path": "notes.txt"}),
            ));
        let agent = ChatModelAgent::builder("clerk", env.model(model))
            .tools(env.toolset("files"))
            .build()
            .unwrap();
        FlowAgent::new(agent)
    })
    .cassettes(dir)
    .mode(mode)
    .toolset("files", move || {
        let fetched = Arc::clone(&fetched);
        async move {
            fetched.fetch_add(1, Ordering::SeqCst);
            if !live {
                return Err("the MCP server 'files' is not installed".to_owned());
            }
            let read = tool_fn(
                "read_file",
                "Reads a file of the workspace.",
                |a: ReadFile| async move { Ok::<_, String>(format!("{}: buy milk", a.path)) },
            );
            Ok(vec![Arc::new(read) as Arc<dyn Tool>])
        }
    })
}

fn set() -> EvalSet {
    EvalSet::new("files").case(
        EvalCase::new("notes").turn(
            TurnCase::new("what do my notes say?")
                .response(ResponseExpectation::Contains("buy milk".into())),
        ),
    )
}

#[tokio::test]
async fn a_recorded_toolset_replays_without_its_server() {
    let dir = dir("replay");
    let fetched = Arc::new(AtomicUsize::new(0));
    let report = runner(&dir, Mode::Record, &fetched, true).run(&set()).await;
    assert!(report.passed(), "{}", report.table());
    assert_eq!(fetched.load(Ordering::SeqCst), 1);
    let file = CassetteFile::read(&dir.join("notes.json")).unwrap();
    let tools = &file.toolsets["files"];
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "read_file");
    assert_eq!(tools[0].description, "Reads a file of the workspace.");
    assert_eq!(tools[0].parameters["required"], json!(["path"]));

    // Offline, with no server: the tools come from the cassette, the fetch never runs, and the
    // model is offered the same definitions (the requests match exactly).
    let report = runner(&dir, Mode::Replay, &fetched, false)
        .run(&set())
        .await;
    assert!(report.passed(), "{}", report.table());
    assert_eq!(fetched.load(Ordering::SeqCst), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_cassette_without_the_toolset_says_to_record_again() {
    let dir = dir("missing");
    let fetched = Arc::new(AtomicUsize::new(0));
    // Recorded before the toolset existed: a cassette with no toolsets.
    std::fs::write(
        dir.join("notes.json"),
        serde_json::to_string(&CassetteFile::default()).unwrap(),
    )
    .unwrap();
    let report = runner(&dir, Mode::Replay, &fetched, false)
        .run(&set())
        .await;
    assert!(!report.passed());
    let error = report.cases[0].runs[0].error.clone().unwrap();
    assert!(
        error.contains("recorded no toolset 'files'") && error.contains("AGENTFLOW_RECORD=1"),
        "{error}"
    );
    assert_eq!(fetched.load(Ordering::SeqCst), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn recording_a_toolset_whose_server_is_missing_names_it() {
    let dir = dir("down");
    let fetched = Arc::new(AtomicUsize::new(0));
    let report = runner(&dir, Mode::Record, &fetched, false)
        .run(&set())
        .await;
    let error = report.cases[0].runs[0].error.clone().unwrap();
    assert!(
        error.contains("toolset 'files' could not be fetched") && error.contains("not installed"),
        "{error}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
