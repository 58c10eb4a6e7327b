//! AgentTool: an agent tree called as a tool by a ChatModelAgent on a ScriptedModel.

use std::sync::{Arc, Mutex};

use flow_runtime::model::{ScriptStep, ScriptedModel};
use flow_runtime::{
    Action, AgentEvent, AgentInput, AgentTool, ChatModelAgent, FlowAgent, FnAgent, Message,
    MessageRef, Role, Runner, Sequential, Session, Tool, ToolCall,
};
use futures::StreamExt;
use serde_json::json;

/// One event as a line: `agent@path: content`, ` [calls TOOL ARGS]` for tool calls and
/// ` => ACTION` for an action.
fn line(e: &AgentEvent) -> String {
    let mut out = format!("{}@{}:", e.agent_name(), e.run_path());
    if let Some(m) = e.message_output() {
        out.push(' ');
        out.push_str(&m.content);
        for c in &m.tool_calls {
            out.push_str(&format!(" [calls {} {}]", c.name, c.arguments));
        }
    }
    match &e.action {
        Some(Action::TransferToAgent(to)) => out.push_str(&format!(" => transfer {to}")),
        Some(Action::Exit) => out.push_str(" => exit"),
        Some(other) => out.push_str(&format!(" => {other:?}")),
        None => {}
    }
    if let Some(err) = &e.error {
        out.push_str(&format!(" error: {err}"));
    }
    out
}

fn lines(events: &[AgentEvent]) -> Vec<String> {
    events.iter().map(line).collect()
}

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
        .run_in(Arc::clone(session), [MessageRef::new(Message::user(text))])
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
    let clock = flow_runtime::tool_fn("clock", "The time.", |_: NoArgs| async move {
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
        Err(flow_runtime::AgentError::failed("broken", "index missing"))
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

    let asks = FnAgent::new("asks", |cx, _| async move {
        cx.interrupt(json!("which account?"));
        Ok(())
    });
    assert_eq!(
        tool_result(AgentTool::new(FlowAgent::new(asks)), r#"{"request":"x"}"#).await,
        "error: tool 'asks' failed: agent 'asks' stopped for outside input (\"which account?\"), \
         but an interrupt cannot cross an agent tool: 'assistant' cannot be resumed inside a \
         tool call; ask for the input before calling the tool, or run 'asks' in the tree \
         instead of as a tool"
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
