// Its own test binary, not a module of tests/it: it sets a process-wide environment variable
// (`std::env::set_var`), which other tests of a shared binary could read while it changes.
//! The agent kit: skills loaded from folders and disclosed in three levels, `allowed-tools`
//! enforced, skill scripts in a limited child process, the plan tool, and the file tools over
//! the thread's values and over a jailed directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::kit::{
    DeepAgent, FileTools, JailedDir, Plan, PlanTool, ScriptPolicy, Skill, Skills, StepStatus,
    ThreadFiles, ACTIVE_SKILLS_KEY,
};
use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::store::InMemoryStore;
use agentweave_runtime::tool::{Tool, ToolContext, ToolError};
use agentweave_runtime::{ChatModelAgent, FlowAgent, Message, Runner, Session, TurnRequest};
use futures::StreamExt;
use serde_json::{json, Value};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/skills")
}

fn cx_in(session: Arc<Session>) -> ToolContext {
    ToolContext::new(
        agentweave_runtime::RunContext::new_run(session, [], false, "desk"),
        "call-1",
    )
}

fn cx() -> ToolContext {
    cx_in(Session::new())
}

async fn call(
    tools: &[Arc<dyn Tool>],
    cx: &ToolContext,
    name: &str,
    args: Value,
) -> Result<String, ToolError> {
    let tool = tools
        .iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"));
    tool.call(cx, &args.to_string()).await
}

/// A scratch directory of its own for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agentflow-kit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_skill_folder_in_the_standard_layout_loads_unchanged() {
    let skill = Skill::load(fixtures().join("release-notes")).unwrap();
    assert_eq!(skill.name, "release-notes");
    assert!(skill
        .description
        .starts_with("Writes release notes from a changelog."));
    assert_eq!(skill.license.as_deref(), Some("Apache-2.0"));
    assert_eq!(skill.metadata["author"], "agentflow");
    assert!(skill.instructions.starts_with("# Release notes"));
    assert_eq!(skill.resources, ["references/style.md", "scripts/count.py"]);
    assert_eq!(skill.allowed_tools, None);

    let skills = Skills::load_dir(fixtures()).unwrap();
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["release-notes", "report-writer"]);
}

#[test]
fn a_malformed_skill_is_refused_naming_its_file() {
    let dir = scratch("malformed");
    std::fs::create_dir_all(dir.join("notes")).unwrap();
    std::fs::write(
        dir.join("notes/SKILL.md"),
        "---\nname: Notes\ndescription: x\n---\n",
    )
    .unwrap();
    let err = Skills::load_dir(&dir).unwrap_err().to_string();
    assert!(err.contains("notes/SKILL.md"), "{err}");
    assert!(err.contains("`name`"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_link_to_a_resource_the_folder_lacks_is_refused_naming_the_file_and_the_link() {
    let dir = scratch("missing-link");
    std::fs::create_dir_all(dir.join("notes/references")).unwrap();
    std::fs::write(
        dir.join("notes/SKILL.md"),
        "---\nname: notes\ndescription: x\n---\nRead [it](references/a.md) and `references/b.md`.\n",
    )
    .unwrap();
    std::fs::write(dir.join("notes/references/a.md"), "a").unwrap();
    let err = Skills::load_dir(&dir).unwrap_err().to_string();
    assert!(err.contains("notes/SKILL.md"), "{err}");
    assert!(
        err.contains("`references/b.md`, which is not in the skill's folder"),
        "{err}"
    );
    std::fs::write(dir.join("notes/references/b.md"), "b").unwrap();
    Skills::load_dir(&dir).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_shared_rules_know_the_skill_tools_by_their_runtime_names() {
    use agentweave_runtime::kit::{LOAD_SKILL_TOOL_NAME, READ_SKILL_RESOURCE_TOOL_NAME};
    assert_eq!(
        agentweave_skill::SKILL_TOOLS,
        [
            LOAD_SKILL_TOOL_NAME,
            READ_SKILL_RESOURCE_TOOL_NAME,
            agentweave_runtime::kit::RUN_SKILL_SCRIPT_TOOL_NAME
        ]
    );
    for name in agentweave_skill::SKILL_TOOLS {
        assert!(Skills::is_skill_tool(name), "{name}");
    }
}

#[test]
fn allowed_tools_naming_a_tool_the_agent_lacks_is_refused() {
    let skills = Skills::load_dir(fixtures()).unwrap();
    let err = skills.check_tools(&["read_file"]).unwrap_err().to_string();
    assert!(err.contains("report-writer/SKILL.md"), "{err}");
    assert!(err.contains("`write_file`"), "{err}");
    skills.check_tools(&["read_file", "write_file"]).unwrap();
}

/// The three levels, as the model sees them: the catalog in the instruction (names and
/// descriptions only), the instructions when it loads a skill, a resource when it reads one.
#[tokio::test]
async fn the_model_sees_each_level_of_a_skill_only_when_it_asks() {
    let skills = Skills::load_dir(fixtures()).unwrap();
    let model = ScriptedModel::new([
        ScriptStep::tool_call("load_skill", json!({"name": "release-notes"})),
        ScriptStep::tool_call(
            "read_skill_resource",
            json!({"skill": "release-notes", "path": "references/style.md"}),
        ),
        ScriptStep::text("Here are the notes."),
    ])
    .keep_requests(true);
    let agent = ChatModelAgent::builder("writer", model.clone())
        .instruction(format!("You write documents.\n\n{}", skills.catalog()))
        .tools(skills.tools())
        .build()
        .unwrap();
    let mut events = Runner::new(FlowAgent::new(agent)).run("Release notes for 1.2, please");
    while events.next().await.is_some() {}
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let seen = |i: usize| serde_json::to_string(&requests[i].messages).unwrap();

    // Level 1: each skill's name and description; none of the instructions or files.
    let first = seen(0);
    assert!(first.contains("release-notes: Writes release notes from a changelog."));
    assert!(first.contains("report-writer: Drafts short reports into files."));
    assert!(!first.contains("house style") && !first.contains("Read `references/style.md`"));
    // Level 2: the instructions and the list of files, not the files' text.
    let second = seen(1);
    assert!(second.contains("Read `references/style.md` for the house style."));
    assert!(second.contains("- references/style.md"));
    assert!(!second.contains("Sentences in the present tense."));
    // Level 3: the file asked for.
    assert!(seen(2).contains("Sentences in the present tense."));
}

#[tokio::test]
async fn a_resource_is_read_only_from_a_loaded_skill_and_by_its_listed_path() {
    let skills = Skills::load_dir(fixtures()).unwrap();
    let tools = skills.tools();
    let cx = cx();
    let read = |path: &str| json!({"skill": "release-notes", "path": path});
    let before = call(
        &tools,
        &cx,
        "read_skill_resource",
        read("references/style.md"),
    )
    .await;
    assert!(before.unwrap_err().to_string().contains("not loaded"));
    call(&tools, &cx, "load_skill", json!({"name": "release-notes"}))
        .await
        .unwrap();
    for path in [
        "../report-writer/SKILL.md",
        "/etc/passwd",
        "SKILL.md",
        "references/../SKILL.md",
    ] {
        let err = call(&tools, &cx, "read_skill_resource", read(path))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("has no file"), "{path}: {err}");
    }
    let unknown = call(&tools, &cx, "load_skill", json!({"name": "nope"}))
        .await
        .unwrap_err();
    assert!(unknown
        .to_string()
        .contains("the skills are: release-notes, report-writer"));
}

#[tokio::test]
async fn while_a_skill_with_allowed_tools_is_active_other_tools_are_refused() {
    let skills = Skills::load_dir(fixtures()).unwrap();
    let mut tools = skills.tools();
    tools.extend(
        FileTools::in_thread()
            .all()
            .into_iter()
            .map(|t| skills.guard(t)),
    );
    tools.push(skills.guard(Arc::new(PlanTool)));
    let cx = cx();
    let plan = json!({"steps": [{"step": "draft", "status": "in_progress"}]});
    // No skill active: every tool works.
    call(&tools, &cx, "write_plan", plan.clone()).await.unwrap();
    // A skill without `allowed-tools` restricts nothing.
    call(&tools, &cx, "load_skill", json!({"name": "release-notes"}))
        .await
        .unwrap();
    call(&tools, &cx, "write_plan", plan.clone()).await.unwrap();
    // `report-writer` allows `read_file` and `write_file` only.
    let loaded = call(&tools, &cx, "load_skill", json!({"name": "report-writer"}))
        .await
        .unwrap();
    assert!(loaded.contains("you may call only: read_file, write_file"));
    call(
        &tools,
        &cx,
        "write_file",
        json!({"path": "report.md", "text": "# Report\n"}),
    )
    .await
    .unwrap();
    call(&tools, &cx, "read_file", json!({"path": "report.md"}))
        .await
        .unwrap();
    let refused = call(&tools, &cx, "write_plan", plan).await.unwrap_err();
    assert_eq!(
        refused.to_model_text(),
        "error: tool 'write_plan' failed: `write_plan` is not allowed while skill \
         `report-writer` is active; the tools it allows are: read_file, write_file"
    );
    // The skill tools stay callable.
    call(
        &tools,
        &cx,
        "read_skill_resource",
        json!({"skill": "release-notes", "path": "references/style.md"}),
    )
    .await
    .unwrap();
    let active: Vec<String> = cx
        .run_context()
        .session()
        .value(ACTIVE_SKILLS_KEY)
        .unwrap()
        .unwrap();
    assert_eq!(active, ["release-notes", "report-writer"]);
}

/// A skill of its own, with one script, in a scratch folder.
fn script_skill(dir: &Path, script: &str) -> Skills {
    script_skill_file(dir, "probe.sh", script)
}

/// A skill of its own, with one script `scripts/{file}`, in a scratch folder.
fn script_skill_file(dir: &Path, file: &str, script: &str) -> Skills {
    let folder = dir.join("probe");
    std::fs::create_dir_all(folder.join("scripts")).unwrap();
    std::fs::write(
        folder.join("SKILL.md"),
        "---\nname: probe\ndescription: Probes.\n---\nRun it.\n",
    )
    .unwrap();
    std::fs::write(folder.join("scripts").join(file), script).unwrap();
    Skills::load_dir(dir).unwrap()
}

async fn run_script(skills: Skills, policy: ScriptPolicy) -> Result<String, ToolError> {
    run_script_file(skills, policy, "scripts/probe.sh").await
}

async fn run_script_file(
    skills: Skills,
    policy: ScriptPolicy,
    script: &str,
) -> Result<String, ToolError> {
    let tools = skills.with_scripts(policy.without_approval()).tools();
    let cx = cx();
    call(&tools, &cx, "load_skill", json!({"name": "probe"}))
        .await
        .unwrap();
    call(
        &tools,
        &cx,
        "run_skill_script",
        json!({"skill": "probe", "script": script}),
    )
    .await
}

/// The parent's environment is out of the script's reach both ways: its variables are not
/// passed, and `/proc/<parent>/environ` (where they could be read) is outside what it may read.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_script_runs_in_its_folder_with_an_empty_environment() {
    std::env::set_var("AGENTFLOW_KIT_SECRET", "hunter2");
    let dir = scratch("env");
    let skills = script_skill(
        &dir,
        "echo \"secret=[$AGENTFLOW_KIT_SECRET] home=[$HOME]\"\npwd\n\
         cat /proc/$PPID/environ /proc/self/environ 2>&1 | tr '\\0' ' '\necho\nenv | wc -l\n",
    );
    let out = run_script(skills, ScriptPolicy::new()).await.unwrap();
    assert!(out.contains("secret=[] home=[]"), "{out}");
    assert!(!out.contains("hunter2"), "{out}");
    assert!(out.contains("Permission denied"), "{out}");
    let folder = dir.join("probe").canonicalize().unwrap();
    assert!(out.contains(&folder.display().to_string()), "{out}");
    // `sh` itself sets PWD (and may set SHLVL, _): nothing of the parent's.
    let count: usize = out.lines().last().unwrap().trim().parse().unwrap();
    assert!(count <= 3, "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A script writes in its own folder (and in a scratch folder the policy adds); a write
/// anywhere else, or a read of the application's files, is refused by the kernel, and the
/// model is told the script failed, with what it printed.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_script_writing_or_reading_outside_its_folder_is_refused() {
    let dir = scratch("confined");
    std::fs::write(dir.join("secret.txt"), "api-key-1234").unwrap();
    let skills = script_skill(
        &dir,
        "echo ok > mine.txt && echo wrote mine\n\
         echo bad > ../outside.txt\n",
    );
    let err = run_script(skills, ScriptPolicy::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`scripts/probe.sh` of skill `probe` failed"),
        "{err}"
    );
    assert!(
        err.contains("wrote mine") && err.contains("Permission denied"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("probe/mine.txt")).unwrap(),
        "ok\n"
    );
    assert!(!dir.join("outside.txt").exists());

    let skills = script_skill(&dir, "cat ../secret.txt\n");
    let err = run_script(skills, ScriptPolicy::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("Permission denied"), "{err}");
    assert!(!err.contains("api-key-1234"), "{err}");

    // A scratch folder the application names is writable.
    let scratch_dir = scratch("confined-scratch");
    let skills = script_skill(
        &dir,
        &format!("echo note > {}/note.txt\n", scratch_dir.display()),
    );
    run_script(skills, ScriptPolicy::new().write_path(&scratch_dir))
        .await
        .unwrap();
    assert!(scratch_dir.join("note.txt").exists());
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&scratch_dir).unwrap();
}

/// A script that allocates past its memory limit fails to, and the model is told, with the
/// limit.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_script_past_its_memory_limit_is_stopped_and_reported() {
    let dir = scratch("memory");
    // 300 MB held in one shell variable, against a 64 MiB limit.
    let skills = script_skill(
        &dir,
        "echo allocating\nbig=$(head -c 300000000 /dev/zero | tr '\\0' x)\necho \"held ${#big}\"\n",
    );
    let err = run_script(skills, ScriptPolicy::new().max_memory(64 * 1024 * 1024))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`scripts/probe.sh` of skill `probe` failed"),
        "{err}"
    );
    assert!(err.contains("its memory is limited to 64 MiB"), "{err}");
    assert!(err.contains("allocating") && !err.contains("held"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(unix)]
#[tokio::test]
async fn a_script_past_its_time_or_output_limit_is_stopped_and_reported() {
    let dir = scratch("limits");
    let slow = script_skill(&dir, "echo started\nsleep 30\necho never\n");
    let err = run_script(
        slow,
        ScriptPolicy::new().timeout(Duration::from_millis(300)),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("ran past its time limit of 0.3 s"), "{err}");
    assert!(err.contains("started") && !err.contains("never"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();

    let dir = scratch("flood");
    // 100 MB of output, against a 64 KiB limit.
    let loud = script_skill(&dir, "head -c 104857600 /dev/zero | tr '\\0' x\n");
    let err = run_script(loud, ScriptPolicy::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("wrote more than 65536 bytes of output and was stopped"),
        "{err}"
    );
    assert!(err.len() < 70_000, "{}", err.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// By default a run waits for a human: the turn stops with an approval interrupt naming the
/// skill, the script and its arguments, and the script has not run; approved on resume, it
/// runs once and the model gets its output. A denied run does not happen, and the model is
/// told.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_script_runs_only_once_a_human_approves_it() {
    let dir = scratch("approval");
    let skills = script_skill(&dir, "echo run >> runs.log\necho \"ran with $1\"\n");
    let runs = dir.join("probe/runs.log");
    let run_call = ScriptStep::tool_call(
        "run_skill_script",
        json!({"skill": "probe", "script": "scripts/probe.sh", "args": ["--fast"]}),
    );
    let model = ScriptedModel::new([
        ScriptStep::tool_call("load_skill", json!({"name": "probe"})),
        run_call.clone(),
        ScriptStep::text("done"),
        ScriptStep::tool_call("load_skill", json!({"name": "probe"})),
        run_call,
        ScriptStep::text("not run"),
    ])
    .keep_requests(true);
    let agent = ChatModelAgent::builder("runner", model.clone())
        .tools(skills.with_scripts(ScriptPolicy::new()).tools())
        .build()
        .unwrap();
    let runner = Runner::builder(FlowAgent::new(agent))
        .thread_store(InMemoryStore::new())
        .checkpoint_store(InMemoryStore::new())
        .build();

    for (thread, approve) in [("yes", true), ("no", false)] {
        let mut turn = runner
            .turn(TurnRequest::new(thread, Message::user("probe it")))
            .await
            .unwrap();
        let mut interrupts = Vec::new();
        while let Some(e) = turn.next().await {
            assert!(e.error.is_none(), "{:?}", e.error);
            interrupts.extend(e.interrupt().cloned());
        }
        assert_eq!(interrupts.len(), 1, "the run stops for approval");
        let asked = &interrupts[0].info;
        assert_eq!(asked["approval"]["tool"], "run_skill_script");
        assert_eq!(
            asked["approval"]["arguments"],
            json!({"skill": "probe", "script": "scripts/probe.sh", "args": ["--fast"]})
        );
        assert_eq!(
            asked["question"],
            "Allow skill 'probe' to run its script 'scripts/probe.sh' with arguments [\"--fast\"]?"
        );
        let ran_before = if approve { "" } else { "run\n" };
        assert_eq!(
            std::fs::read_to_string(&runs).unwrap_or_default(),
            ran_before,
            "nothing ran before the answer"
        );

        let id = interrupts[0].id.clone();
        let mut resumed = runner
            .turn(TurnRequest::resume(thread, [(id, json!(approve))]))
            .await
            .unwrap();
        while let Some(e) = resumed.next().await {
            assert!(e.error.is_none(), "{:?}", e.error);
            assert!(e.interrupt().is_none());
        }
        let last = serde_json::to_string(&model.requests().last().unwrap().messages).unwrap();
        if approve {
            assert_eq!(std::fs::read_to_string(&runs).unwrap(), "run\n", "ran once");
            assert!(last.contains("ran with --fast"), "{last}");
        } else {
            assert_eq!(
                std::fs::read_to_string(&runs).unwrap(),
                "run\n",
                "no second run"
            );
            assert!(last.contains("was not approved by a human"), "{last}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_script_runs_only_where_allowed_and_only_from_scripts() {
    let dir = scratch("allowed");
    let skills = script_skill(&dir, "echo hi\n");
    let names: Vec<String> = skills.tools().iter().map(|t| t.name().to_owned()).collect();
    assert_eq!(names, ["load_skill", "read_skill_resource"]);
    let tools = skills
        .with_scripts(ScriptPolicy::new().without_approval())
        .tools();
    let cx = cx();
    call(&tools, &cx, "load_skill", json!({"name": "probe"}))
        .await
        .unwrap();
    let err = call(
        &tools,
        &cx,
        "run_skill_script",
        json!({"skill": "probe", "script": "SKILL.md"}),
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("its scripts are: scripts/probe.sh"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn the_plan_is_kept_in_the_thread_values() {
    let session = Session::new();
    let cx = cx_in(session.clone());
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(PlanTool)];
    let out = call(
        &tools,
        &cx,
        "write_plan",
        json!({"steps": [
            {"step": "search", "status": "done"},
            {"step": "summarise", "status": "in_progress"},
            {"step": "review", "status": "pending"}
        ]}),
    )
    .await
    .unwrap();
    assert_eq!(out, "Plan saved:\n[x] search\n[>] summarise\n[ ] review\n");
    let plan = Plan::of(&session).unwrap();
    assert_eq!(plan.steps[1].status, StepStatus::InProgress);
    let two_busy = json!({"steps": [
        {"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}
    ]});
    let err = call(&tools, &cx, "write_plan", two_busy).await.unwrap_err();
    assert!(err.to_string().contains("keep one at a time"));
    assert_eq!(
        Plan::of(&session).unwrap(),
        plan,
        "a refused plan changes nothing"
    );
}

#[tokio::test]
async fn the_file_tools_read_ranges_edit_exactly_and_search() {
    let session = Session::new();
    let cx = cx_in(session.clone());
    let tools = FileTools::in_thread().all();
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    call(
        &tools,
        &cx,
        "write_file",
        json!({"path": "notes/a.txt", "text": text}),
    )
    .await
    .unwrap();
    let part = call(
        &tools,
        &cx,
        "read_file",
        json!({"path": "notes/a.txt", "offset": 3, "limit": 2}),
    )
    .await
    .unwrap();
    assert_eq!(
        part,
        "     3\tline 3\n     4\tline 4\n[lines 3-4 of 10; read on with offset 5]\n"
    );
    let twice = call(
        &tools,
        &cx,
        "edit_file",
        json!({"path": "notes/a.txt", "old_text": "line 1", "new_text": "x"}),
    )
    .await;
    assert!(twice.unwrap_err().to_string().contains("occurs 2 times"));
    call(
        &tools,
        &cx,
        "edit_file",
        json!({"path": "notes/a.txt", "old_text": "line 10\n", "new_text": "last\n"}),
    )
    .await
    .unwrap();
    let hits = call(&tools, &cx, "search_files", json!({"text": "last"}))
        .await
        .unwrap();
    assert_eq!(hits, "notes/a.txt:10: last");
    assert_eq!(
        ThreadFiles::of(&session)["notes/a.txt"].lines().last(),
        Some("last")
    );
    for bad in ["../x", "/etc/passwd", "a/../../x"] {
        let err = call(&tools, &cx, "write_file", json!({"path": bad, "text": "x"}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("refused"), "{bad}: {err}");
    }
}

#[tokio::test]
async fn the_jailed_directory_refuses_dotdot_absolute_paths_and_symlinks_out() {
    let dir = scratch("jail");
    let root = dir.join("root");
    let outside = dir.join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret.txt"), root.join("secret.txt")).unwrap();
    }
    let tools = FileTools::new(JailedDir::new(&root).unwrap()).all();
    let cx = cx();
    call(
        &tools,
        &cx,
        "write_file",
        json!({"path": "sub/ok.txt", "text": "fine"}),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("sub/ok.txt")).unwrap(),
        "fine"
    );
    let abs = outside.join("secret.txt").display().to_string();
    let mut cases = vec![
        (
            "read_file",
            json!({"path": "../outside/secret.txt"}),
            "`..` is not allowed",
        ),
        (
            "read_file",
            json!({"path": abs}),
            "absolute paths are not allowed",
        ),
        (
            "write_file",
            json!({"path": "sub/../../outside/x.txt", "text": "x"}),
            "`..` is not allowed",
        ),
    ];
    if cfg!(unix) {
        cases.push((
            "read_file",
            json!({"path": "link/secret.txt"}),
            "symbolic links are not followed",
        ));
        cases.push((
            "read_file",
            json!({"path": "secret.txt"}),
            "symbolic links are not followed",
        ));
        cases.push((
            "write_file",
            json!({"path": "link/new.txt", "text": "x"}),
            "symbolic links are not followed",
        ));
    }
    for (tool, args, expected) in cases {
        let err = call(&tools, &cx, tool, args.clone())
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains(expected), "{tool} {args}: {err}");
    }
    assert!(!outside.join("x.txt").exists() && !outside.join("new.txt").exists());
    let listed = call(&tools, &cx, "list_files", json!({})).await.unwrap();
    assert_eq!(listed, "sub/ok.txt");
    std::fs::remove_dir_all(&dir).unwrap();
}

async fn finish_turn(runner: &Runner, thread: &str, text: &str) {
    let mut turn = runner
        .turn(TurnRequest::new(thread, Message::user(text)))
        .await
        .unwrap();
    while let Some(e) = turn.next().await {
        assert!(e.error.is_none(), "{:?}", e.error);
    }
}

/// The plan and the files are thread values: the next turn starts with them, a fork copies
/// them at its step, and what a fork writes stays in the fork.
#[tokio::test]
async fn plan_and_files_carry_across_turns_and_a_fork_writes_apart() {
    let model = ScriptedModel::new([
        // Turn 1 on `main`.
        ScriptStep::tool_call(
            "write_plan",
            json!({"steps": [{"step": "draft", "status": "in_progress"}]}),
        ),
        ScriptStep::tool_call("write_file", json!({"path": "a.md", "text": "one"})),
        ScriptStep::text("drafted"),
        // Turn 2, on the fork.
        ScriptStep::tool_call("write_file", json!({"path": "b.md", "text": "two"})),
        ScriptStep::text("forked"),
        // Turn 3, on `main` again.
        ScriptStep::tool_call("read_file", json!({"path": "a.md"})),
        ScriptStep::text("read"),
    ])
    .keep_requests(true);
    let agent = DeepAgent::new("worker", model.clone()).build().unwrap();
    let runner = Runner::builder(FlowAgent::new(agent))
        .thread_store(InMemoryStore::new())
        .build();
    finish_turn(&runner, "main", "start").await;
    let values = runner.thread("main").values().await.unwrap();
    assert_eq!(values["kit.plan"]["steps"][0]["step"], "draft");
    assert_eq!(values["kit.files"], json!({"a.md": "one"}));

    let last = runner
        .thread("main")
        .history()
        .await
        .unwrap()
        .last()
        .unwrap()
        .id;
    runner.thread("main").fork(last, "fork").await.unwrap();
    finish_turn(&runner, "fork", "more").await;
    let forked = runner.thread("fork").values().await.unwrap();
    assert_eq!(forked["kit.files"], json!({"a.md": "one", "b.md": "two"}));
    assert_eq!(forked["kit.plan"], values["kit.plan"]);
    assert_eq!(
        runner.thread("main").values().await.unwrap()["kit.files"],
        json!({"a.md": "one"}),
        "the fork's write did not touch the original"
    );

    finish_turn(&runner, "main", "read it").await;
    let last_request = serde_json::to_string(&model.requests().last().unwrap().messages).unwrap();
    assert!(last_request.contains("     1\\tone"), "{last_request}");
}

/// A worker writing its plan and a file dies at each point of its turn in turn; another
/// worker recovers the turn from the journal. The recovered turn sees exactly what was written
/// before the crash (its `read_file` returns the file), and the thread ends with the plan and
/// the file, as a turn that never died would.
#[tokio::test]
async fn plan_and_files_survive_a_crash_and_recovery() {
    use agentweave_runtime::model::ChatRequest;
    use agentweave_runtime::{Durability, RecoverError, Role, Turn};

    let model = || {
        ScriptedModel::rules()
            .when_with(
                |r: &ChatRequest| {
                    r.messages.last().is_some_and(|m| {
                        m.role == Role::Tool && m.tool_name.as_deref() == Some("read_file")
                    })
                },
                |r: &ChatRequest| {
                    let read = &r.messages.last().unwrap().content;
                    ScriptStep::text(format!("read back: {}", read.trim()))
                },
            )
            .after_tool(
                "write_file",
                ScriptStep::tool_call("read_file", json!({"path": "notes.md"})),
            )
            .after_tool(
                "write_plan",
                ScriptStep::tool_call("write_file", json!({"path": "notes.md", "text": "42"})),
            )
            .otherwise(ScriptStep::tool_call(
                "write_plan",
                json!({"steps": [{"step": "note", "status": "in_progress"}]}),
            ))
    };
    let runner = |store: &InMemoryStore| {
        let agent = DeepAgent::new("worker", model()).build().unwrap();
        Runner::builder(FlowAgent::new(agent))
            .stores(store.clone())
            .journal_store(store.clone())
            .durability(Durability::Sync)
            .lease(Duration::from_millis(60))
            .build()
    };
    let expected_values = json!({
        "plan": {"steps": [{"step": "note", "status": "in_progress"}]},
        "files": {"notes.md": "42"},
    });
    async fn answer(events: &[agentweave_runtime::AgentEvent]) -> Option<String> {
        for e in events {
            if let Some(m) = e.read_message().await.unwrap() {
                if m.content.starts_with("read back") {
                    return Some(m.content.clone());
                }
            }
        }
        None
    }

    // The reference: the turn without a crash.
    let store = InMemoryStore::new();
    let reference = runner(&store);
    let events: Vec<_> = reference
        .turn(TurnRequest::new("t", Message::user("take a note")))
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(answer(&events).await.as_deref(), Some("read back: 1\t42"));
    let total = events.len();

    for seen in 1..total {
        let store = InMemoryStore::new();
        let mut turn: Turn = runner(&store)
            .turn(TurnRequest::new("t", Message::user("take a note")))
            .await
            .unwrap();
        for _ in 0..seen {
            turn.next().await.unwrap();
        }
        // The worker dies: nothing of its turn runs any more, its lease is never given back.
        std::mem::forget(turn);
        let other = runner(&store);
        let recovered = loop {
            match other.recover("t").await {
                Err(RecoverError::Leased { .. }) => {
                    tokio::time::sleep(Duration::from_millis(10)).await
                }
                other => break other.unwrap().expect("a turn to recover"),
            }
        };
        let events: Vec<_> = recovered.collect().await;
        assert_eq!(
            answer(&events).await.as_deref(),
            Some("read back: 1\t42"),
            "point {seen}"
        );
        let values = other.thread("t").values().await.unwrap();
        let kept = json!({"plan": values.get("kit.plan"), "files": values.get("kit.files")});
        assert_eq!(kept, expected_values, "point {seen}");
    }
}

#[test]
fn the_deep_agent_preset_explains_and_gives_its_kit() {
    let searcher = FlowAgent::new(
        agentweave_runtime::FnAgent::new("searcher", |cx, _| async move {
            cx.say("found");
            Ok(())
        })
        .with_description("Searches sources."),
    );
    let skills = Skills::load_dir(fixtures()).unwrap();
    let deep = DeepAgent::new("researcher", ScriptedModel::new(["ok"]))
        .task("You research topics.")
        .skills(skills.clone())
        .sub_agent(searcher);
    let instruction = deep.instruction();
    assert!(instruction.starts_with("You research topics.\n\n"));
    assert!(instruction.contains("`write_plan`"));
    assert!(instruction.contains("- searcher: Searches sources."));
    assert!(instruction.contains("- release-notes: Writes release notes"));
    let agent = deep.build().unwrap();
    let mut tools: Vec<String> = agent
        .tool_definitions(None)
        .into_iter()
        .map(|d| d.name)
        .collect();
    tools.sort();
    assert_eq!(
        tools,
        [
            "edit_file",
            "list_files",
            "load_skill",
            "read_file",
            "read_skill_resource",
            "search_files",
            "searcher",
            "write_file",
            "write_plan"
        ]
    );
    assert_eq!(agent.instruction(), instruction);

    // A skill allowing a tool the agent lacks: refused when built.
    let dir = scratch("deep");
    std::fs::create_dir_all(dir.join("web")).unwrap();
    std::fs::write(
        dir.join("web/SKILL.md"),
        "---\nname: web\ndescription: Browses.\nallowed-tools: fetch_url\n---\n",
    )
    .unwrap();
    let err = DeepAgent::new("r", ScriptedModel::new(["ok"]))
        .skills(Skills::load_dir(&dir).unwrap())
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("`fetch_url`"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What each level of disclosure costs in tokens (OpenAI's o200k tokenizer), for the two skills
/// of `tests/fixtures/skills`: the numbers the rustdoc of `Skills` shows.
#[cfg(feature = "tiktoken")]
#[tokio::test]
async fn each_level_of_disclosure_costs_what_the_docs_say() {
    use agentweave_runtime::history::{TiktokenCounter, TokenCounter};
    let tokens = |text: &str| TiktokenCounter::o200k().count(&Message::user(text));
    let skills = Skills::load_dir(fixtures()).unwrap();
    let tools = skills.tools();
    let cx = cx();
    let catalog = tokens(&skills.catalog());
    let loaded = call(&tools, &cx, "load_skill", json!({"name": "release-notes"}))
        .await
        .unwrap();
    let style = call(
        &tools,
        &cx,
        "read_skill_resource",
        json!({"skill": "release-notes", "path": "references/style.md"}),
    )
    .await
    .unwrap();
    let costs = [catalog, tokens(&loaded), tokens(&style)];
    println!("catalog, load_skill, read_skill_resource: {costs:?}");
    assert_eq!(costs, [98, 85, 26]);

    // Level 1 per skill: each skill's catalog line, as text (no message overhead).
    let counter = TiktokenCounter::o200k();
    let lines: Vec<(String, usize)> = skills
        .iter()
        .map(|s| (s.name.clone(), counter.tokens(&format!("- {s}\n"))))
        .collect();
    println!("catalog line per skill: {lines:?}");
    assert_eq!(
        lines,
        [
            ("release-notes".to_owned(), 29),
            ("report-writer".to_owned(), 20)
        ]
    );
    // Against putting every skill's whole folder in the instruction up front.
    let mut eager = String::new();
    for skill in skills.iter() {
        eager.push_str(&std::fs::read_to_string(skill.root.join("SKILL.md")).unwrap());
        for resource in &skill.resources {
            eager.push_str(&std::fs::read_to_string(skill.root.join(resource)).unwrap());
        }
    }
    let eager = tokens(&eager);
    println!("every skill's folder up front: {eager}");
    assert_eq!(eager, 266);
}
