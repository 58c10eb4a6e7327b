//! A deep agent, offline: a researcher with a plan, files and a searching sub-agent, on
//! scripted models. It prints the plan each time the agent rewrites it, then the report it
//! wrote in its files.
//!
//! ```text
//! cargo run --example deep_research
//! ```
//!
//! The researcher's model is a script: it writes a plan of three steps, hands the search to
//! the `searcher` sub-agent, marks the search done, writes `report.md`, marks every step done
//! and answers. A real model decides these steps itself, from the instruction the preset
//! writes (printed first).

use agentweave::kit::{DeepAgent, Plan, ThreadFiles, WRITE_PLAN_TOOL_NAME};
use agentweave::model::{ScriptStep, ScriptedModel};
use agentweave::{FlowAgent, FnAgent, RunRequest, Runner, Session};
use futures::StreamExt;
use serde_json::json;

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn plan(steps: [(&str, &str); 3]) -> serde_json::Value {
    json!({ "steps": steps.map(|(step, status)| json!({"step": step, "status": status})) })
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let searcher = FlowAgent::new(
        FnAgent::new("searcher", |cx, _| async move {
            cx.say("Three sources: otters use tools (2019), hold hands asleep (2021), eat 25% of their weight a day (2023).");
            Ok(())
        })
        .with_description("Searches sources on a topic and lists what it found."),
    );
    let steps = ["search sources", "write report.md", "check the report"];
    let model = ScriptedModel::new([
        ScriptStep::tool_call(
            WRITE_PLAN_TOOL_NAME,
            plan([
                (steps[0], "in_progress"),
                (steps[1], "pending"),
                (steps[2], "pending"),
            ]),
        ),
        ScriptStep::tool_call(
            "searcher",
            json!({"request": "otter behaviour, recent findings"}),
        ),
        ScriptStep::tool_call(
            WRITE_PLAN_TOOL_NAME,
            plan([
                (steps[0], "done"),
                (steps[1], "in_progress"),
                (steps[2], "pending"),
            ]),
        ),
        ScriptStep::tool_call(
            "write_file",
            json!({"path": "report.md", "text": "# Otters\n\n- They use tools (2019).\n- They hold hands asleep (2021).\n- They eat a quarter of their weight a day (2023).\n"}),
        ),
        ScriptStep::tool_call(
            WRITE_PLAN_TOOL_NAME,
            plan([(steps[0], "done"), (steps[1], "done"), (steps[2], "done")]),
        ),
        ScriptStep::text("The report is in report.md."),
    ]);
    let researcher = DeepAgent::new("researcher", model)
        .task("You research a topic and write a short report in `report.md`.")
        .sub_agent(searcher)
        .build()?;
    println!("--- instruction ---\n{}", researcher.instruction());

    let runner = Runner::new(FlowAgent::new(researcher));
    let session = Session::new();
    let request = RunRequest::from("Write a short report on otters.").session(session.clone());
    let mut events = runner.run(request);
    while let Some(event) = events.next().await {
        if let Some(m) = event.message_output() {
            if m.content.starts_with("Plan saved:") {
                println!(
                    "--- plan ---\n{}",
                    m.content.trim_start_matches("Plan saved:\n")
                );
            } else if !m.content.is_empty() && m.tool_calls.is_empty() {
                println!("{}: {}", event.run_path(), m.content);
            }
        }
        if let Some(e) = &event.error {
            return Err(e.to_string().into());
        }
    }
    if let Some(plan) = Plan::of(&session) {
        println!("--- final plan ---\n{}", plan.render());
    }
    for (path, text) in ThreadFiles::of(&session) {
        println!("--- {path} ---\n{text}");
    }
    Ok(())
}
