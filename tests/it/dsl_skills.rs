//! Skill folders checked when the flow compiles (`#[agent(skills = [...])]`, `dyn
//! name(skills = [...])` in `flow!`) give the agent exactly the skills the run-time loader gives
//! for the same folders: the same catalog, the same instructions, the same resources; and a
//! skill written in the public Agent Skills layout loads unchanged on both routes.

use std::path::{Path, PathBuf};

use agentweave::kit::{EmbeddedSkill, FileTools, Skills};
use agentweave::model::{ScriptStep, ScriptedModel};
use agentweave::prelude::*;
use futures::StreamExt;
use serde_json::json;

/// Writes reports from CSV files and release notes.
#[agent(
    skills = ["tests/fixtures/skills/csv-report", "tests/fixtures/skills/release-notes"],
    tools = [read_file, write_file]
)]
async fn reporter(_cx: &AgentContext) {}

flow! {
    Desk: dyn analyst(skills = ["tests/fixtures/skills/csv-report"], tools = [read_file, write_file])
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/skills")
}

/// What the model of an agent given `skills` sees when it loads each skill and reads each of
/// its resources: every request's messages, as JSON.
async fn disclosure(skills: &Skills) -> Vec<String> {
    let mut steps = Vec::new();
    for skill in skills.iter() {
        steps.push(ScriptStep::tool_call(
            "load_skill",
            json!({"name": skill.name}),
        ));
        for resource in &skill.resources {
            steps.push(ScriptStep::tool_call(
                "read_skill_resource",
                json!({"skill": skill.name, "path": resource}),
            ));
        }
    }
    steps.push(ScriptStep::text("Done."));
    let model = ScriptedModel::new(steps).keep_requests(true);
    let agent = ChatModelAgent::builder("reporter", model.clone())
        .instruction(format!("You write reports.\n\n{}", skills.catalog()))
        .tools(skills.tools())
        .build()
        .unwrap();
    let mut events = Runner::new(FlowAgent::new(agent)).run("A report, please");
    while events.next().await.is_some() {}
    model
        .requests()
        .iter()
        .map(|r| serde_json::to_string(&r.messages).unwrap())
        .collect()
}

#[tokio::test]
async fn compile_time_skills_are_the_run_time_loaders_skills() {
    let compiled = Skills::of::<reporter>().unwrap();
    let loaded = Skills::load_dir(fixtures()).unwrap();

    // Level 1, the catalog.
    assert_eq!(compiled.catalog(), loaded.catalog());
    assert!(compiled
        .catalog()
        .contains("- csv-report: Summarises a CSV file"));
    // Each skill's fields, instructions and resources (the root is where each came from).
    let names = |s: &Skills| s.iter().map(|k| k.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&compiled), ["csv-report", "release-notes"]);
    assert_eq!(names(&compiled), names(&loaded));
    for (c, l) in compiled.iter().zip(loaded.iter()) {
        let mut c = c.clone();
        c.root = l.root.clone();
        assert_eq!(&c, l);
    }
    // Levels 2 and 3 as the model sees them: the same text for every step, read from the
    // binary on one route and from the folder on the other.
    let seen = disclosure(&compiled).await;
    // The first request, then one after each tool call: `load_skill` and three reads for
    // `csv-report`, `load_skill` and one read for `release-notes`.
    assert_eq!(seen.len(), 7);
    assert_eq!(seen, disclosure(&loaded).await);
    assert!(seen[1].contains("# CSV report"));
    assert!(seen[3].contains("No opinions: the report states figures."));
    assert!(seen[6].contains("Sentences in the present tense."));
}

#[test]
fn a_skill_in_the_public_agent_skills_layout_loads_unchanged_on_both_routes() {
    let compiled = Skills::of::<reporter>().unwrap();
    let loaded = Skills::load_dir(fixtures()).unwrap();
    for skills in [&compiled, &loaded] {
        let skill = skills.get("csv-report").unwrap();
        assert_eq!(skill.license.as_deref(), Some("Apache-2.0"));
        assert_eq!(skill.metadata["author"], "agentflow");
        assert_eq!(skill.metadata["version"], "1.2");
        assert_eq!(
            skill.allowed_tools.as_deref().unwrap(),
            ["read_file", "write_file", "run_skill_script"]
        );
        assert_eq!(
            skill.resources,
            [
                "assets/report-template.md",
                "references/REPORT_FORMAT.md",
                "scripts/summarise.py"
            ]
        );
        assert!(skill.instructions.starts_with("# CSV report\n"));
    }
    let embedded = <reporter as AgentSpec>::SKILLS;
    assert_eq!(embedded[0].folder, "tests/fixtures/skills/csv-report");
    assert_eq!(
        embedded[0].resource("scripts/summarise.py").unwrap(),
        std::fs::read(fixtures().join("csv-report/scripts/summarise.py")).unwrap()
    );
}

/// The `dyn` node's agent gets the node's embedded skills: the catalog in its instruction, the
/// skill tools, and its other tools guarded by the loaded skill's `allowed-tools`.
#[tokio::test]
async fn a_flow_node_gives_its_agent_the_embedded_skills_with_the_allowed_tools_guard() {
    let model = ScriptedModel::new([
        ScriptStep::tool_call("load_skill", json!({"name": "csv-report"})),
        // `search_files` is one of the agent's tools, but `csv-report` does not allow it.
        ScriptStep::tool_call("search_files", json!({"pattern": "total"})),
        ScriptStep::text("Done."),
    ])
    .keep_requests(true);
    let desk = Desk::builder()
        .analyst(|node| {
            let skills = Skills::from_embedded(node.skills()).unwrap();
            let files = FileTools::in_thread().all();
            let names: Vec<&str> = files.iter().map(|t| t.name()).collect();
            skills.check_tools(&names).unwrap();
            ChatModelAgent::builder(node, model.clone())
                .instruction(format!("You analyse data.\n\n{}", skills.catalog()))
                .tools(skills.tools())
                .tools(files.into_iter().map(|t| skills.guard(t)))
                .build()
                .unwrap()
        })
        .build()
        .unwrap();
    let mut events = Runner::new(desk).run("Sum up sales.csv");
    while events.next().await.is_some() {}
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let seen = |i: usize| serde_json::to_string(&requests[i].messages).unwrap();
    assert!(seen(0).contains("- csv-report: Summarises a CSV file"));
    assert!(seen(1).contains("# CSV report"));
    assert!(
        seen(2).contains("`search_files` is not allowed while skill `csv-report` is active"),
        "{}",
        seen(2)
    );
}

/// Resources of embedded skills come from the binary: this skill's folder exists nowhere on
/// disk.
#[tokio::test]
async fn embedded_resources_are_read_from_the_binary() {
    static SKILLS: [EmbeddedSkill; 1] = [EmbeddedSkill {
        folder: "nowhere/on-disk",
        text:
            "---\nname: on-disk\ndescription: Lives in the binary.\n---\nRead `references/a.md`.\n",
        resources: &[("references/a.md", b"compiled in")],
    }];
    let skills = Skills::from_embedded(&SKILLS).unwrap();
    assert!(!Path::new("nowhere/on-disk").exists());
    let seen = disclosure(&skills).await;
    assert!(seen[2].contains("compiled in"), "{}", seen[2]);
}
