//! AgentTool: an agent tree called as a tool by a ChatModelAgent on a ScriptedModel.

use crate::support;
use support::lines;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::RunRequest;
use agentweave_runtime::{
    Agent, AgentEvent, AgentInput, AgentTool, ChatModelAgent, FlowAgent, FnAgent, InterruptInfo,
    Message, MessageRef, ResumeInfo, Role, RunContext, Runner, Sequential, Session, Tool, ToolCall,
};
use futures::StreamExt;
use serde_json::json;

type Inputs = Arc<Mutex<Vec<Vec<(Role, String)>>>>;

/// The tool's tree: `researcher` looks things up by transferring to `librarian`, which
/// answers; both record their inputs.
fn research_tree() -> (FlowAgent, Inputs) {
    let inputs: Inputs = Arc::default();
    let r = Arc::clone(&inputs);
    let researcher = FnAgent::new("researcher", move |cx, input: AgentInput| {
        r.lock().unwrap().push(contents(&input.messages));
        async move {
            cx.say("asking the librarian");
            cx.transfer("librarian");
            Ok(())
        }
    })
    .with_description("Researches a topic.");
    let l = Arc::clone(&inputs);
    let librarian = FnAgent::new("librarian", move |cx, input: AgentInput| {
        l.lock().unwrap().push(contents(&input.messages));
        async move {
            cx.say("3 books on otters");
            Ok(())
        }
    });
    let tree = FlowAgent::new(researcher)
        .with_sub_agents([FlowAgent::new(librarian)])
        .unwrap();
    (tree, inputs)
}

fn contents(messages: &[MessageRef]) -> Vec<(Role, String)> {
    messages
        .iter()
        .map(|m| (m.role, m.content.clone()))
        .collect()
}

fn caller_model() -> ScriptedModel {
    ScriptedModel::new([
        ScriptStep::tool_call("researcher", json!({"request": "otters"})),
        ScriptStep::text("The library has 3 books on otters."),
    ])
}

fn caller(model: ScriptedModel, tool: AgentTool) -> FlowAgent {
    FlowAgent::new(
        ChatModelAgent::builder("assistant", model)
            .instruction("You help with research.")
            .tool(tool)
            .build()
            .unwrap(),
    )
}

async fn run_in(tree: FlowAgent, session: &Arc<Session>, text: &str) -> Vec<AgentEvent> {
    Runner::new(tree)
        .run(RunRequest::new([Message::user(text)]).session(Arc::clone(session)))
        .collect()
        .await
}

#[tokio::test]
async fn the_tool_agent_transfers_inside_itself_and_the_callers_session_is_unaffected() {
    let (tree, inputs) = research_tree();
    let model = caller_model();
    let session = Session::new();
    let events = run_in(
        caller(model.clone(), AgentTool::new(tree)),
        &session,
        "What is there on otters?",
    )
    .await;
    assert_eq!(
        lines(&events),
        [
            r#"assistant@assistant:  [calls researcher {"request":"otters"}]"#,
            "assistant@assistant: 3 books on otters",
            "assistant@assistant: The library has 3 books on otters.",
        ]
    );
    // The caller's record holds the caller's own three messages, nothing of the tool's run.
    let recorded: Vec<String> = session
        .events()
        .iter()
        .map(|e| {
            let m = e.message_now().unwrap();
            format!(
                "{}@{} {}: {}",
                e.agent_name(),
                e.run_path(),
                m.role,
                m.content
            )
        })
        .collect();
    assert_eq!(
        recorded,
        [
            "assistant@assistant assistant: ",
            "assistant@assistant tool: 3 books on otters",
            "assistant@assistant assistant: The library has 3 books on otters.",
        ]
    );
    // The tool's agents started from the request alone.
    assert_eq!(
        *inputs.lock().unwrap(),
        [
            vec![(Role::User, "otters".to_owned())],
            vec![
                (Role::User, "otters".to_owned()),
                (Role::User, "For context: [researcher] said: asking the librarian.".to_owned()),
                (
                    Role::User,
                    r#"For context: [researcher] called tool: `transfer_to_agent` with arguments: {"agent_name":"librarian"}."#
                        .to_owned()
                ),
                (
                    Role::User,
                    "For context: [researcher] `transfer_to_agent` tool returned result: \
                     successfully transferred to agent [librarian]."
                        .to_owned()
                ),
            ],
        ]
    );
    // The caller's model got the librarian's answer as the tool result.
    let second = &model.requests()[1];
    let result = second.messages.last().unwrap();
    assert_eq!(result.role, Role::Tool);
    assert_eq!(result.content, "3 books on otters");
    assert_eq!(result.tool_call_id.as_deref(), Some("call_1_1"));
}

#[tokio::test]
async fn surfaced_events_carry_their_own_run_paths_and_no_actions() {
    let (tree, _) = research_tree();
    let session = Session::new();
    let events = run_in(
        caller(caller_model(), AgentTool::new(tree).surface_events(true)),
        &session,
        "q",
    )
    .await;
    assert_eq!(
        lines(&events),
        [
            r#"assistant@assistant:  [calls researcher {"request":"otters"}]"#,
            "researcher@assistant/researcher: asking the librarian",
            r#"researcher@assistant/researcher:  [calls transfer_to_agent {"agent_name":"librarian"}]"#,
            "researcher@assistant/researcher: successfully transferred to agent [librarian]",
            "librarian@assistant/researcher/librarian: 3 books on otters",
            "assistant@assistant: 3 books on otters",
            "assistant@assistant: The library has 3 books on otters.",
        ]
    );
    assert_eq!(session.len(), 3, "surfaced events are not recorded");
}

#[tokio::test]
async fn exit_inside_the_tool_does_not_end_the_caller_or_its_workflow() {
    let quitter = FnAgent::new("quitter", |cx, _| async move {
        cx.say("final answer");
        cx.exit();
        Ok(())
    });
    let tool = AgentTool::new(FlowAgent::new(quitter)).surface_events(true);
    let model = ScriptedModel::new([
        ScriptStep::tool_call("quitter", json!({"request": "finish"})),
        ScriptStep::text("carrying on"),
    ]);
    let next = FlowAgent::new(FnAgent::new("next", |cx, _| async move {
        cx.say("next ran");
        Ok(())
    }));
    let w = Sequential::new("w")
        .with_sub_agents([caller(model, tool), next])
        .unwrap();
    let events = run_in(w, &Session::new(), "q").await;
    assert_eq!(
        lines(&events),
        [
            r#"assistant@w/assistant:  [calls quitter {"request":"finish"}]"#,
            "quitter@w/assistant/quitter: final answer",
            "quitter@w/assistant/quitter:",
            "assistant@w/assistant: final answer",
            "assistant@w/assistant: carrying on",
            "next@w/assistant/next: next ran",
        ]
    );
}

#[tokio::test]
async fn with_caller_history_the_tool_agent_sees_the_callers_conversation() {
    let inputs: Inputs = Arc::default();
    let store = Arc::clone(&inputs);
    let helper = FnAgent::new("helper", move |cx, input: AgentInput| {
        store.lock().unwrap().push(contents(&input.messages));
        async move {
            cx.say("helped");
            Ok(())
        }
    });
    let model = ScriptedModel::new([
        // The reply that makes the call is not part of what the tool agent sees.
        ScriptStep::Reply(Message::assistant_tool_calls(
            "Let me think.",
            vec![ToolCall::new("", "helper", r#"{"request":"help me"}"#)],
        )),
        ScriptStep::text("done"),
    ]);
    let tool = AgentTool::new(FlowAgent::new(helper)).with_caller_history(true);
    run_in(caller(model, tool), &Session::new(), "I need help").await;
    assert_eq!(
        *inputs.lock().unwrap(),
        [vec![
            (Role::User, "I need help".to_owned()),
            (Role::User, "help me".to_owned()),
        ]]
    );
}

#[tokio::test]
async fn the_callers_earlier_turns_reach_the_tool_agent_as_context() {
    let inputs: Inputs = Arc::default();
    let store = Arc::clone(&inputs);
    let helper = FnAgent::new("helper", move |cx, input: AgentInput| {
        store.lock().unwrap().push(contents(&input.messages));
        async move {
            cx.say("helped");
            Ok(())
        }
    });
    let clock = agentweave_runtime::tool_fn("clock", "The time.", |_: NoArgs| async move {
        Ok::<_, String>("12:00")
    });
    let model = ScriptedModel::new([
        ScriptStep::tool_call("clock", json!({})),
        ScriptStep::tool_call("helper", json!({"request": "plan my noon"})),
        ScriptStep::text("done"),
    ]);
    let tree = FlowAgent::new(
        ChatModelAgent::builder("assistant", model)
            .instruction("You help.")
            .tool(clock)
            .tool(AgentTool::new(FlowAgent::new(helper)).with_caller_history(true))
            .build()
            .unwrap(),
    );
    run_in(tree, &Session::new(), "What now?").await;
    assert_eq!(
        *inputs.lock().unwrap(),
        [vec![
            (Role::User, "What now?".to_owned()),
            (
                Role::User,
                "For context: [assistant] called tool: `clock` with arguments: {}.".to_owned()
            ),
            (
                Role::User,
                "For context: [assistant] `clock` tool returned result: 12:00.".to_owned()
            ),
            (Role::User, "plan my noon".to_owned()),
        ]]
    );
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// Runs one call of `tool` from a caller whose model calls it with `arguments`, and returns
/// the tool result the caller's model got.
async fn tool_result(tool: AgentTool, arguments: &str) -> String {
    let model = ScriptedModel::new([
        ScriptStep::raw_tool_call(tool.name().to_owned(), arguments),
        ScriptStep::text("ok"),
    ]);
    run_in(caller(model.clone(), tool), &Session::new(), "q").await;
    model.requests()[1].messages.last().unwrap().content.clone()
}

#[tokio::test]
async fn failures_inside_the_tool_are_answered_to_the_callers_model() {
    let (tree, _) = research_tree();
    assert_eq!(
        tool_result(AgentTool::new(tree), "{oops").await,
        "error: invalid arguments for tool 'researcher': the arguments are not valid JSON (key \
         must be a string at line 1 column 2); call it again with a JSON object that matches \
         its parameters schema"
    );

    let broken = FnAgent::new("broken", |_, _| async move {
        Err(agentweave_runtime::AgentError::failed(
            "broken",
            "index missing",
        ))
    });
    assert_eq!(
        tool_result(AgentTool::new(FlowAgent::new(broken)), r#"{"request":"x"}"#).await,
        "error: tool 'broken' failed: agent 'broken' failed: index missing"
    );

    let silent = FnAgent::new("silent", |_, _| async move { Ok(()) });
    assert_eq!(
        tool_result(AgentTool::new(FlowAgent::new(silent)), r#"{"request":"x"}"#).await,
        "error: tool 'silent' failed: agent 'silent' ended without a message, so there is no \
         result to return"
    );
}

#[tokio::test]
async fn session_values_are_shared_with_the_caller() {
    let writer = FnAgent::new("writer", |cx, _| async move {
        let seen: Option<String> = cx.session().value("user").unwrap();
        cx.session().set_value("note", "written").unwrap();
        cx.say(format!("wrote for {}", seen.unwrap()));
        Ok(())
    });
    let session = Session::new();
    session.set_value("user", "ada").unwrap();
    let model = ScriptedModel::new([
        ScriptStep::tool_call("writer", json!({"request": "note"})),
        ScriptStep::text("ok"),
    ]);
    let events = run_in(
        caller(model, AgentTool::new(FlowAgent::new(writer))),
        &session,
        "q",
    )
    .await;
    assert_eq!(lines(&events)[1], "assistant@assistant: wrote for ada");
    assert_eq!(
        session.value::<String>("note").unwrap().as_deref(),
        Some("written")
    );
}

#[test]
fn the_tool_is_named_and_described_after_its_agent() {
    let (tree, _) = research_tree();
    let tool = AgentTool::new(tree.clone());
    assert_eq!(tool.name(), "researcher");
    assert_eq!(tool.description(), "Researches a topic.");
    assert_eq!(
        tool.parameters(),
        json!({
            "type": "object",
            "properties": {
                "request": { "type": "string", "description": "What to ask the agent, in plain words." }
            },
            "required": ["request"]
        })
    );
    let plain = AgentTool::new(FlowAgent::new(FnAgent::new("x", |_, _| async { Ok(()) })));
    assert_eq!(
        plain.description(),
        "Asks the agent 'x' to handle a request and returns its answer."
    );
    assert_eq!(
        AgentTool::new(tree).with_description("Digs.").description(),
        "Digs."
    );
}

/// The tool's tree for interrupts: `desk` hands every request to `approver`, which stops for
/// a human and, resumed, says what it was told. Counts the runs of `desk`.
fn approval_tree() -> (FlowAgent, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let n = Arc::clone(&runs);
    let desk = FnAgent::new("desk", move |cx, _| {
        n.fetch_add(1, Ordering::SeqCst);
        async move {
            cx.transfer("approver");
            Ok(())
        }
    })
    .with_description("Gets refunds approved.");
    let approver = FnAgent::new("approver", |cx, input: AgentInput| async move {
        cx.say(format!("asking about: {}", input.messages[0].content));
        cx.interrupt(json!("approve the refund?"));
        Ok(())
    })
    .on_resume(|cx, _, info| async move {
        cx.say(format!("approved: {}", info.data().unwrap()));
        Ok(())
    });
    let tree = FlowAgent::new(desk)
        .with_sub_agents([FlowAgent::new(approver)])
        .unwrap();
    (tree, runs)
}

async fn resume(
    root: &FlowAgent,
    session: &Arc<Session>,
    text: &str,
    events: &[AgentEvent],
    data: &[(&str, serde_json::Value)],
) -> Vec<AgentEvent> {
    let interrupts: Vec<InterruptInfo> = events
        .iter()
        .filter_map(|e| e.interrupt().cloned())
        .collect();
    let targets: HashMap<String, serde_json::Value> = data
        .iter()
        .map(|(id, v)| (id.to_string(), v.clone()))
        .collect();
    let input = vec![MessageRef::new(Message::user(text))];
    let cx = RunContext::new_run(
        Arc::clone(session),
        input.iter().cloned(),
        false,
        root.name(),
    );
    Arc::new(root.clone())
        .resume(
            cx,
            AgentInput::new(input),
            ResumeInfo::new(interrupts, &targets),
        )
        .collect()
        .await
}

#[tokio::test]
async fn an_interrupt_inside_the_tool_crosses_to_the_caller_and_resume_goes_back_in() {
    let (tree, desk_runs) = approval_tree();
    let model = ScriptedModel::new([
        ScriptStep::tool_call("desk", json!({"request": "refund order 7"})),
        ScriptStep::text("Your refund is approved."),
    ]);
    let root = caller(model.clone(), AgentTool::new(tree).surface_events(true));
    let session = Session::new();
    let events = run_in(root.clone(), &session, "refund please").await;
    assert_eq!(
        lines(&events),
        [
            r#"assistant@assistant:  [calls desk {"request":"refund order 7"}]"#,
            r#"desk@assistant/desk:  [calls transfer_to_agent {"agent_name":"approver"}]"#,
            "desk@assistant/desk: successfully transferred to agent [approver]",
            "approver@assistant/desk/approver: asking about: refund order 7",
            "assistant@assistant: => interrupt assistant/desk/approver",
        ]
    );
    let info = events[4].interrupt().unwrap();
    assert_eq!(info.id, "assistant/desk/approver");
    assert_eq!(info.info, json!("approve the refund?"));
    assert_eq!(
        info.address_string(),
        "agent:assistant;tool:desk:call_1_1;agent:approver"
    );
    assert_eq!(
        info.address[1].run_path.to_string(),
        "assistant/desk/approver"
    );
    assert_eq!(session.len(), 1, "only the caller's reply is recorded");

    let resumed = resume(
        &root,
        &session,
        "refund please",
        &events,
        &[("assistant/desk/approver", json!("yes"))],
    )
    .await;
    assert_eq!(
        lines(&resumed),
        [
            "approver@assistant/desk/approver: approved: \"yes\"",
            "assistant@assistant: approved: \"yes\"",
            "assistant@assistant: Your refund is approved.",
        ]
    );
    assert_eq!(desk_runs.load(Ordering::SeqCst), 1, "desk is not run again");
    let second = &model.requests()[1];
    assert_eq!(
        contents(&second.messages[1..]),
        [
            (Role::User, "refund please".to_owned()),
            (Role::Assistant, String::new()),
            (Role::Tool, "approved: \"yes\"".to_owned()),
        ]
    );
    let recorded: Vec<String> = session
        .events()
        .iter()
        .map(|e| format!("{}: {}", e.run_path(), e.message_now().unwrap().content))
        .collect();
    assert_eq!(
        recorded,
        [
            "assistant: ",
            "assistant: approved: \"yes\"",
            "assistant: Your refund is approved.",
        ]
    );
}

#[tokio::test]
async fn a_later_call_of_the_same_reply_is_not_run_again_and_results_keep_call_order() {
    let (tree, _) = approval_tree();
    let clock_runs = Arc::new(AtomicUsize::new(0));
    let n = Arc::clone(&clock_runs);
    let clock = agentweave_runtime::tool_fn("clock", "The time.", move |_: NoArgs| {
        n.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, String>("12:00") }
    });
    let model = ScriptedModel::new([
        ScriptStep::tool_calls([("desk", json!({"request": "refund"})), ("clock", json!({}))]),
        ScriptStep::text("Done at noon."),
    ]);
    let agent = ChatModelAgent::builder("assistant", model)
        .tool(AgentTool::new(tree))
        .tool(clock)
        .build()
        .unwrap();
    let w = Sequential::new("w")
        .with_sub_agents([FlowAgent::new(agent)])
        .unwrap();
    let session = Session::new();
    let events = run_in(w.clone(), &session, "go").await;
    assert_eq!(events.len(), 2);
    let info = events[1].interrupt().unwrap();
    assert_eq!(
        info.address_string(),
        "agent:w;agent:assistant;tool:desk:call_1_1;agent:approver"
    );
    assert_eq!(info.address[0].state, Some(json!({"child": 0})));
    let resumed = resume(
        &w,
        &session,
        "go",
        &events,
        &[("w/assistant/desk/approver", json!(1))],
    )
    .await;
    assert_eq!(
        lines(&resumed),
        [
            "assistant@w/assistant: approved: 1",
            "assistant@w/assistant: 12:00",
            "assistant@w/assistant: Done at noon.",
        ]
    );
    assert_eq!(
        clock_runs.load(Ordering::SeqCst),
        1,
        "the clock call finished before"
    );
}

/// The input of the `researcher` agent tool with a custom schema.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Only decoded, to check the arguments: the agent gets their JSON text.
struct Search {
    /// The topic.
    topic: String,
    /// The earliest year.
    since: u16,
}

#[tokio::test]
async fn a_typed_input_schema_replaces_the_request_and_reaches_the_agent_as_its_input() {
    let inputs: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let seen = Arc::clone(&inputs);
    let researcher = FnAgent::new("researcher", move |cx, input| {
        seen.lock().unwrap().push(
            input
                .messages
                .iter()
                .map(|m| format!("{}: {}", m.role, m.content))
                .collect(),
        );
        async move {
            cx.say("3 papers.");
            Ok(())
        }
    });
    let tool = AgentTool::new(FlowAgent::new(researcher)).with_input_schema::<Search>();
    let model = ScriptedModel::new([
        ScriptStep::tool_call("researcher", json!({"topic": "otters"})),
        ScriptStep::tool_call("researcher", json!({"topic": "otters", "since": 2020})),
        ScriptStep::text("Three."),
    ]);
    let caller = ChatModelAgent::builder("assistant", model.clone())
        .tool(tool)
        .build()
        .unwrap();
    let events: Vec<AgentEvent> = Runner::new(FlowAgent::new(caller))
        .run("otter papers?")
        .collect()
        .await;
    assert_eq!(
        lines(&events),
        [
            r#"assistant@assistant:  [calls researcher {"topic":"otters"}]"#,
            "assistant@assistant: error: invalid arguments for tool 'researcher': the arguments \
             do not match the schema (missing field `since` at line 1 column 18); call it again \
             with a JSON object that matches its parameters schema",
            r#"assistant@assistant:  [calls researcher {"since":2020,"topic":"otters"}]"#,
            "assistant@assistant: 3 papers.",
            "assistant@assistant: Three.",
        ]
    );
    assert_eq!(
        *inputs.lock().unwrap(),
        [[r#"user: {"since":2020,"topic":"otters"}"#]],
        "the arguments, as the model wrote them, are the agent's input"
    );
    let asked = &model.requests()[0];
    assert_eq!(
        asked.tools[0].parameters,
        json!({
            "type": "object",
            "properties": {
                "topic": {"type": "string", "description": "The topic."},
                "since": {"type": "integer", "format": "uint16", "minimum": 0, "maximum": 65535,
                          "description": "The earliest year."}
            },
            "required": ["topic", "since"],
            "additionalProperties": false,
            "description": "The input of the `researcher` agent tool with a custom schema."
        })
    );
}
