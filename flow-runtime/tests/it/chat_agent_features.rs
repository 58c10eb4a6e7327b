//! The ChatModelAgent features Eino pipelines are built on: transfer instructions, instruction
//! templates, output key, return-directly tools, tool-attached actions, the history modifier on
//! resume and per-agent run options. Each test asserts the exact events and model inputs.

use crate::support;

use std::collections::HashMap;
use std::sync::Arc;

use agentweave_runtime::model::{ChatRequest, ModelParams, ScriptStep, ScriptedModel};
use agentweave_runtime::RunnerBuilder;
use agentweave_runtime::{
    set_sub_agents, tool_fn, tool_fn_with_context, Action, AgentEvent, AgentRunOptions,
    ChatAgentError, ChatModelAgent, EventOutput, FlowAgent, InMemoryStore, InstructionError, Loop,
    Message, MessageRef, Role, RunOptions, Runner, Session, ToolContext,
};
use agentweave_runtime::{ResumeRequest, RunRequest, TurnRequest};
use futures::StreamExt;
use serde_json::json;

/// One event as `agent@path: content [calls ..] => action error: ..` ([`support::line`]);
/// streams are read whole.
async fn line(e: AgentEvent) -> String {
    let message = match e.output {
        Some(EventOutput::Message(ref m)) => Some((**m).clone()),
        Some(EventOutput::Stream(ref s)) => Some(s.fork().collect_message().await.unwrap()),
        _ => None,
    };
    support::line_with(&e, message.as_ref())
}

async fn collect(events: agentweave_runtime::EventStream) -> Vec<String> {
    let events: Vec<AgentEvent> = events.collect().await;
    let mut out = Vec::new();
    for e in events {
        out.push(line(e).await);
    }
    out
}

fn user(text: &str) -> [MessageRef; 1] {
    [Arc::new(Message::user(text))]
}

/// A request's messages as `role: content`, with `[name args]` per tool call.
fn seen(request: &ChatRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .map(|m| {
            let mut line = format!("{}: {}", m.role, m.content);
            for c in &m.tool_calls {
                line.push_str(&format!(" [{} {}]", c.name, c.arguments));
            }
            line
        })
        .collect()
}

const RULE: &str = "If you can answer the request yourself, answer it. If one of these agents is \
                    better placed to handle it, call the `transfer_to_agent` tool with that \
                    agent's name and do not answer it yourself.";

/// triage => [refund, complaint], all ChatModelAgents; `triage` is built by `f`.
fn desk(
    triage: impl FnOnce(
        agentweave_runtime::ChatModelAgentBuilder,
    ) -> agentweave_runtime::ChatModelAgentBuilder,
    triage_model: &ScriptedModel,
    refund_model: &ScriptedModel,
) -> FlowAgent {
    let triage = triage(
        ChatModelAgent::builder("triage", triage_model.clone())
            .description("Routes requests.")
            .instruction("You route customer requests."),
    )
    .build()
    .unwrap();
    let refund = ChatModelAgent::builder("refund", refund_model.clone())
        .description("Refunds orders.")
        .instruction("You refund orders.")
        .build()
        .unwrap();
    let complaint = ChatModelAgent::builder("complaint", ScriptedModel::new(["Sorry."]))
        .build()
        .unwrap();
    set_sub_agents(
        FlowAgent::new(triage),
        [FlowAgent::new(refund), FlowAgent::new(complaint)],
    )
    .unwrap()
}

#[tokio::test]
async fn transfer_instructions_list_the_targets_with_their_descriptions_by_default() {
    let triage_model = ScriptedModel::new([ScriptStep::transfer("refund")]);
    let refund_model = ScriptedModel::new(["Refunded."]);
    let runner = Runner::new(desk(|b| b, &triage_model, &refund_model));
    let events = collect(runner.run("refund please")).await;
    assert_eq!(
        events,
        [
            r#"triage@triage:  [calls transfer_to_agent {"agent_name":"refund"}]"#,
            "triage@triage: successfully transferred to agent [refund] => transfer refund",
            "refund@triage/refund: Refunded.",
        ]
    );
    assert_eq!(
        seen(&triage_model.requests()[0]),
        [
            format!(
                "system: You route customer requests.\n\n\
                 You can transfer the conversation to these agents:\n\
                 - refund: Refunds orders.\n\
                 - complaint\n\
                 {RULE}"
            ),
            "user: refund please".to_owned(),
        ]
    );
    assert_eq!(
        seen(&refund_model.requests()[0])[0],
        format!(
            "system: You refund orders.\n\n\
             You can transfer the conversation to these agents:\n\
             - triage: Routes requests.\n\
             {RULE}"
        ),
        "a sub-agent lists its parent"
    );
}

#[tokio::test]
async fn transfer_instructions_can_be_replaced_or_turned_off() {
    let triage_model = ScriptedModel::new(["Hello."]);
    let runner = Runner::new(desk(
        |b| {
            b.transfer_instructions_with(|targets| {
                let names: Vec<&str> = targets.iter().map(|t| &*t.name).collect();
                format!("Hand off to: {}.", names.join(", "))
            })
        },
        &triage_model,
        &ScriptedModel::new(["unused"]),
    ));
    assert_eq!(collect(runner.run("hi")).await, ["triage@triage: Hello."]);
    assert_eq!(
        seen(&triage_model.requests()[0]),
        [
            "system: You route customer requests.\n\nHand off to: refund, complaint.",
            "user: hi"
        ]
    );

    let off_model = ScriptedModel::new(["Hello."]);
    let runner = Runner::new(desk(
        |b| b.transfer_instructions(false),
        &off_model,
        &ScriptedModel::new(["unused"]),
    ));
    assert_eq!(collect(runner.run("hi")).await, ["triage@triage: Hello."]);
    let request = &off_model.requests()[0];
    assert_eq!(
        seen(request),
        ["system: You route customer requests.", "user: hi"]
    );
    assert_eq!(
        request.tools[0].name, "transfer_to_agent",
        "the tool stays: only the text is off"
    );

    // No instruction and no targets: no system message at all.
    let alone = ScriptedModel::new(["Hi."]);
    let agent = ChatModelAgent::builder("alone", alone.clone())
        .build()
        .unwrap();
    collect(Runner::new(FlowAgent::new(agent)).run("hi")).await;
    assert_eq!(seen(&alone.requests()[0]), ["user: hi"]);
}

#[tokio::test]
async fn instructions_are_templated_from_session_values_with_escaped_braces() {
    let model = ScriptedModel::new(["Hello Ada."]);
    let agent = ChatModelAgent::builder("greeter", model.clone())
        .instruction("Greet {user} ({orders} orders, vip: {vip}). Reply as {{\"text\": ...}}.")
        .build()
        .unwrap();
    let session = Session::new();
    session.set_value("user", "Ada").unwrap();
    session.set_value("orders", 3).unwrap();
    session.set_value("vip", true).unwrap();
    let events = collect(
        Runner::new(FlowAgent::new(agent)).run(RunRequest::new(user("hi")).session(session)),
    )
    .await;
    assert_eq!(events, ["greeter@greeter: Hello Ada."]);
    assert_eq!(
        seen(&model.requests()[0]),
        [
            "system: Greet Ada (3 orders, vip: true). Reply as {\"text\": ...}.",
            "user: hi"
        ]
    );
}

#[tokio::test]
async fn a_missing_session_value_is_an_error_naming_the_key_and_the_agent() {
    let model = ScriptedModel::new(["never"]);
    let agent = ChatModelAgent::builder("greeter", model.clone())
        .instruction("Greet {user}.")
        .build()
        .unwrap();
    let events = collect(Runner::new(FlowAgent::new(agent)).run("hi")).await;
    assert_eq!(
        events,
        [
            "greeter@greeter: error: agent 'greeter' cannot build its instruction: the session \
             value 'user' named by `{user}` is not set; set it before the run \
             (Session::set_value), or write literal braces as `{{` and `}}`"
        ]
    );
    assert_eq!(model.calls(), 0, "the model is not asked");
}

#[test]
fn a_template_that_cannot_be_read_fails_the_build() {
    let err = ChatModelAgent::builder("greeter", ScriptedModel::new(["x"]))
        .instruction("Answer as {\"text\": ...}")
        .build()
        .unwrap_err();
    assert!(matches!(
        err,
        ChatAgentError::Instruction(InstructionError::Template { .. })
    ));
    assert_eq!(
        err.to_string(),
        "agent 'greeter' has an instruction template that cannot be read: `{\"text\": ...}` at \
         byte 10 is not a session value key (letters, digits, `_`, `-`, `.`); write `{{` and \
         `}}` for literal braces"
    );
}

#[tokio::test]
async fn an_instruction_function_sees_the_run_and_its_error_ends_the_run() {
    let model = ScriptedModel::new(["Hi."]);
    let agent = ChatModelAgent::builder("greeter", model.clone())
        .instruction_fn(|cx| {
            let tier: Option<String> = cx.session().value("tier").ok().flatten();
            match tier {
                Some(tier) => Ok(format!(
                    "You run at {} for a {tier} customer.",
                    cx.run_path()
                )),
                None => Err("no customer tier in the session".to_owned()),
            }
        })
        .build()
        .unwrap();
    let runner = Runner::new(FlowAgent::new(agent));
    let session = Session::new();
    session.set_value("tier", "gold").unwrap();
    assert_eq!(
        collect(runner.run(RunRequest::new(user("hi")).session(session))).await,
        ["greeter@greeter: Hi."]
    );
    assert_eq!(
        seen(&model.requests()[0]),
        [
            "system: You run at greeter for a gold customer.",
            "user: hi"
        ]
    );
    assert_eq!(
        collect(runner.run("hi")).await,
        [
            "greeter@greeter: error: agent 'greeter' could not build its instruction: no \
             customer tier in the session"
        ]
    );
    assert_eq!(model.calls(), 1);
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Item {
    item: String,
}

fn lookup() -> agentweave_runtime::FnTool {
    tool_fn("lookup", "Looks an item up.", |a: Item| async move {
        if a.item == "bad" {
            return Err("no such item".to_owned());
        }
        Ok(format!("found {}", a.item))
    })
}

#[tokio::test]
async fn the_output_key_holds_the_final_answer_streamed_or_not() {
    for streaming in [false, true] {
        let model = ScriptedModel::new([
            ScriptStep::tool_call("lookup", json!({"item": "kettle"})),
            ScriptStep::text("The kettle is in stock."),
        ]);
        let agent = ChatModelAgent::builder("clerk", model.clone())
            .tool(lookup())
            .output_key("answer")
            .build()
            .unwrap();
        let session = Session::new();
        let events = collect(
            Runner::builder(FlowAgent::new(agent))
                .streaming(streaming)
                .build()
                .run(RunRequest::new(user("kettle?")).session(Arc::clone(&session))),
        )
        .await;
        assert_eq!(
            events,
            [
                r#"clerk@clerk:  [calls lookup {"item":"kettle"}]"#,
                "clerk@clerk: found kettle",
                "clerk@clerk: The kettle is in stock.",
            ],
            "streaming {streaming}"
        );
        assert_eq!(
            session.value::<String>("answer").unwrap().as_deref(),
            Some("The kettle is in stock."),
            "streaming {streaming}"
        );
        assert_eq!(
            seen(&model.requests()[1]),
            [
                "user: kettle?",
                r#"assistant:  [lookup {"item":"kettle"}]"#,
                "tool: found kettle"
            ]
        );
    }
}

#[tokio::test]
async fn a_return_directly_tool_ends_the_turn_with_its_result_as_the_last_event_and_the_final_output(
) {
    let model = ScriptedModel::new([
        ScriptStep::tool_calls([
            ("lookup", json!({"item": "bad"})),
            ("lookup", json!({"item": "kettle"})),
            ("clock", json!({})),
        ]),
        ScriptStep::text("never asked"),
    ]);
    let clock = tool_fn("clock", "The time.", |_: NoArgs| async move {
        Ok::<_, String>("12:00")
    });
    let agent = ChatModelAgent::builder("clerk", model.clone())
        .tool(lookup())
        .tool(clock)
        .return_directly("lookup")
        .output_key("answer")
        .build()
        .unwrap();
    let session = Session::new();
    let events = collect(
        Runner::new(FlowAgent::new(agent))
            .run(RunRequest::new(user("kettle?")).session(Arc::clone(&session))),
    )
    .await;
    assert_eq!(
        events,
        [
            r#"clerk@clerk:  [calls lookup {"item":"bad"}] [calls lookup {"item":"kettle"}] [calls clock {}]"#,
            "clerk@clerk: error: tool 'lookup' failed: no such item",
            "clerk@clerk: 12:00",
            "clerk@clerk: found kettle",
        ]
    );
    assert_eq!(model.calls(), 1, "the model is not asked again");
    assert_eq!(
        session.value::<String>("answer").unwrap().as_deref(),
        Some("found kettle"),
        "the first successful return-directly result is the output"
    );

    let err = ChatModelAgent::builder("clerk", ScriptedModel::new(["x"]))
        .return_directly("lookup")
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "agent 'clerk' cannot be built: return_directly names the tool 'lookup', which the \
         agent does not have; add the tool first, or fix the name"
    );
}

/// The clerk of the return-directly tests: one reply calling `lookup` (return-directly) and
/// then `clock`.
fn direct_clerk() -> ChatModelAgent {
    let model = ScriptedModel::new([
        ScriptStep::tool_calls([("lookup", json!({"item": "kettle"})), ("clock", json!({}))]),
        ScriptStep::text("never asked"),
    ]);
    let clock = tool_fn("clock", "The time.", |_: NoArgs| async move {
        Ok::<_, String>("12:00")
    });
    ChatModelAgent::builder("clerk", model)
        .tool(lookup())
        .tool(clock)
        .return_directly("lookup")
        .output_key("answer")
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_return_directly_result_is_a_turns_final_output_and_an_agent_tools_result() {
    // A turn of a thread: its answer is the return-directly result, not the later call's.
    let runner = Runner::builder(FlowAgent::new(direct_clerk()))
        .stores(InMemoryStore::new())
        .build();
    let turn = runner
        .turn(TurnRequest::new("t", Message::user("kettle?")))
        .await
        .unwrap();
    let answer = turn
        .final_output()
        .await
        .unwrap()
        .expect("the turn has an answer");
    assert_eq!(answer.content, "found kettle");

    // Through an agent tool: the caller's tool result is the return-directly result.
    let caller_model = ScriptedModel::new([
        ScriptStep::tool_call("clerk", json!({"request": "kettle?"})),
        ScriptStep::text("The clerk found it."),
    ]);
    let caller = ChatModelAgent::builder("desk", caller_model.clone())
        .tool(agentweave_runtime::AgentTool::new(FlowAgent::new(
            direct_clerk(),
        )))
        .build()
        .unwrap();
    let events = collect(Runner::new(FlowAgent::new(caller)).run("go")).await;
    assert_eq!(events[1], "desk@desk: found kettle", "{events:#?}");
    assert_eq!(
        seen(&caller_model.requests()[1]).last().unwrap(),
        "tool: found kettle"
    );
}

#[tokio::test]
async fn a_return_directly_result_held_back_across_an_interrupt_is_still_the_last_event() {
    let approve = tool_fn_with_context(
        "approve",
        "Asks a human.",
        |cx: ToolContext, a: Item| async move {
            match cx.resume_data() {
                None => Err(cx.interrupt(json!({ "approve": a.item }))),
                Some(_) => Ok(format!("approved {}", a.item)),
            }
        },
    );
    let model = ScriptedModel::new([
        ScriptStep::tool_calls([
            ("lookup", json!({"item": "kettle"})),
            ("approve", json!({"item": "mug"})),
        ]),
        ScriptStep::text("never asked"),
    ]);
    let agent = ChatModelAgent::builder("clerk", model.clone())
        .tool(lookup())
        .tool(approve)
        .return_directly("lookup")
        .output_key("answer")
        .build()
        .unwrap();
    let runner = Runner::builder(FlowAgent::new(agent))
        .checkpoint_store(InMemoryStore::new())
        .build();
    let first = collect(runner.run(RunRequest::new(user("kettle")).checkpoint("d"))).await;
    assert_eq!(
        first,
        [
            r#"clerk@clerk:  [calls lookup {"item":"kettle"}] [calls approve {"item":"mug"}]"#,
            "clerk@clerk: => interrupt clerk",
        ]
    );
    let resumed = runner
        .resume(ResumeRequest::new(
            "d",
            HashMap::from([("clerk".to_owned(), json!("yes"))]),
        ))
        .await
        .unwrap();
    assert_eq!(
        collect(resumed).await,
        ["clerk@clerk: approved mug", "clerk@clerk: found kettle"]
    );
    assert_eq!(model.calls(), 1, "the model is not asked again");
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Tag {
    tag: String,
}

#[tokio::test]
async fn concurrent_calls_of_one_tool_each_attach_their_own_action() {
    // Both calls are in flight before either attaches its action.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let tag = tool_fn_with_context(
        "tag",
        "Tags the conversation.",
        move |cx: ToolContext, t: Tag| {
            let barrier = Arc::clone(&barrier);
            async move {
                barrier.wait().await;
                cx.attach_action(Action::Custom(Arc::new(json!({ "tag": t.tag }))));
                Ok::<_, String>(format!("tagged {}", t.tag))
            }
        },
    );
    let model = ScriptedModel::new([
        ScriptStep::tool_calls([("tag", json!({"tag": "a"})), ("tag", json!({"tag": "b"}))]),
        ScriptStep::text("Tagged."),
    ]);
    let agent = ChatModelAgent::builder("clerk", model.clone())
        .tool(tag)
        .build()
        .unwrap();
    let events = collect(Runner::new(FlowAgent::new(agent)).run("tag it")).await;
    assert_eq!(
        events,
        [
            r#"clerk@clerk:  [calls tag {"tag":"a"}] [calls tag {"tag":"b"}]"#,
            r#"clerk@clerk: tagged a => custom {"tag":"a"}"#,
            r#"clerk@clerk: tagged b => custom {"tag":"b"}"#,
            "clerk@clerk: Tagged.",
        ],
        "a custom action rides on its call's result and the loop goes on"
    );
    assert_eq!(
        seen(&model.requests()[1])[2..],
        ["tool: tagged a", "tool: tagged b"]
    );
}

/// A tool that attaches `action` and answers `done`.
fn acting(action: Action) -> agentweave_runtime::FnTool {
    tool_fn_with_context("act", "Acts.", move |cx: ToolContext, _: NoArgs| {
        cx.attach_action(action.clone());
        async move { Ok::<_, String>("done") }
    })
}

#[tokio::test]
async fn a_tool_attached_exit_transfer_or_break_loop_ends_the_turn() {
    // Exit: the run ends after the reply's results.
    let model = ScriptedModel::new([
        ScriptStep::tool_calls([("act", json!({})), ("lookup", json!({"item": "x"}))]),
        ScriptStep::text("never asked"),
    ]);
    let agent = ChatModelAgent::builder("clerk", model.clone())
        .tool(acting(Action::Exit))
        .tool(lookup())
        .build()
        .unwrap();
    assert_eq!(
        collect(Runner::new(FlowAgent::new(agent)).run("go")).await,
        [
            r#"clerk@clerk:  [calls act {}] [calls lookup {"item":"x"}]"#,
            "clerk@clerk: done => exit",
            "clerk@clerk: found x",
            "clerk@clerk: => exit",
        ]
    );
    assert_eq!(model.calls(), 1);

    // Transfer: the flow hands over to the named agent.
    let triage_model = ScriptedModel::new([ScriptStep::tool_call("act", json!({}))]);
    let triage = ChatModelAgent::builder("triage", triage_model)
        .tool(acting(Action::transfer_to("refund")))
        .build()
        .unwrap();
    let refund = ChatModelAgent::builder("refund", ScriptedModel::new(["Refunded."]))
        .build()
        .unwrap();
    let tree = set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refund)]).unwrap();
    assert_eq!(
        collect(Runner::new(tree).run("go")).await,
        [
            "triage@triage:  [calls act {}]",
            "triage@triage: done => transfer refund",
            "refund@triage/refund: Refunded.",
        ]
    );

    // Break-loop: the loop stops after the agent.
    let reviewer = ChatModelAgent::builder(
        "reviewer",
        ScriptedModel::new([ScriptStep::tool_call("act", json!({}))]),
    )
    .tool(acting(Action::BreakLoop("reviewer".into())))
    .build()
    .unwrap();
    let review = Loop::new("review", 5)
        .with_sub_agents([FlowAgent::new(reviewer)])
        .unwrap();
    assert_eq!(
        collect(Runner::new(review).run("go")).await,
        [
            "reviewer@review/reviewer:  [calls act {}]",
            "reviewer@review/reviewer: done => break_loop reviewer",
        ]
    );
}

#[tokio::test]
async fn a_history_modifier_given_with_the_resume_edits_the_conversation_before_the_model() {
    let approve = tool_fn_with_context(
        "approve",
        "Asks a human.",
        |cx: ToolContext, a: Item| async move {
            match cx.resume_data() {
                None => Err(cx.interrupt(json!({ "approve": a.item }))),
                Some(_) => Ok(format!("approved {}", a.item)),
            }
        },
    );
    let model = ScriptedModel::new([
        ScriptStep::tool_call("approve", json!({"item": "kettle"})),
        ScriptStep::text("Approved, with the note."),
    ]);
    let agent = ChatModelAgent::builder("clerk", model.clone())
        .instruction("You approve.")
        .tool(approve)
        .build()
        .unwrap();
    let runner = Runner::builder(FlowAgent::new(agent))
        .checkpoint_store(InMemoryStore::new())
        .build();
    let first = collect(runner.run(RunRequest::new(user("kettle")).checkpoint("h"))).await;
    assert_eq!(
        first,
        [
            r#"clerk@clerk:  [calls approve {"item":"kettle"}]"#,
            "clerk@clerk: => interrupt clerk",
        ]
    );
    let options = RunOptions::new().agent(
        "clerk",
        AgentRunOptions::new().history_modifier(|mut history| {
            // A human corrects the user's message and adds a note.
            history[1] = Arc::new(Message::user("kettle, the blue one"));
            history.push(Arc::new(Message::user("Note: ship it today.")));
            history
        }),
    );
    // Given with this resume only: no clone of the runner to set them on.
    let resumed = runner
        .resume(
            ResumeRequest::new("h", HashMap::from([("clerk".to_owned(), json!("yes"))]))
                .options(options),
        )
        .await
        .unwrap();
    assert_eq!(
        collect(resumed).await,
        [
            "clerk@clerk: approved kettle",
            "clerk@clerk: Approved, with the note."
        ]
    );
    assert_eq!(
        seen(&model.requests()[1]),
        [
            "system: You approve.",
            "user: kettle, the blue one",
            r#"assistant:  [approve {"item":"kettle"}]"#,
            "tool: approved kettle",
            "user: Note: ship it today.",
        ]
    );
}

#[tokio::test]
async fn a_history_modifier_given_with_a_resumed_turn_edits_the_conversation() {
    let approve = tool_fn_with_context(
        "approve",
        "Asks a human.",
        |cx: ToolContext, a: Item| async move {
            match cx.resume_data() {
                None => Err(cx.interrupt(json!({ "approve": a.item }))),
                Some(_) => Ok(format!("approved {}", a.item)),
            }
        },
    );
    let model = ScriptedModel::new([
        ScriptStep::tool_call("approve", json!({"item": "kettle"})),
        ScriptStep::text("Approved, with the note."),
    ]);
    let agent = ChatModelAgent::builder("clerk", model.clone())
        .tool(approve)
        .build()
        .unwrap();
    let runner = Runner::builder(FlowAgent::new(agent))
        .stores(InMemoryStore::new())
        .build();
    let first = runner
        .turn(TurnRequest::new("t", Message::user("kettle")))
        .await
        .unwrap();
    let agentweave_runtime::TurnOutcome::Interrupted { .. } = first.finish().await else {
        panic!("the tool asked for approval")
    };
    let options = RunOptions::new().agent(
        "clerk",
        AgentRunOptions::new().history_modifier(|mut history| {
            history.push(Arc::new(Message::user("Note: ship it today.")));
            history
        }),
    );
    let resumed = runner
        .turn(
            TurnRequest::resume("t", HashMap::from([("clerk".to_owned(), json!("yes"))]))
                .options(options),
        )
        .await
        .unwrap();
    let answer = resumed.final_output().await.unwrap().unwrap();
    assert_eq!(answer.content, "Approved, with the note.");
    assert_eq!(
        seen(&model.requests()[1]).last().unwrap(),
        "user: Note: ship it today."
    );
}

#[tokio::test]
async fn a_resume_streams_as_the_resuming_runner_says_not_as_the_interrupted_run_did() {
    let approve = tool_fn_with_context(
        "approve",
        "Asks a human.",
        |cx: ToolContext, a: Item| async move {
            match cx.resume_data() {
                None => Err(cx.interrupt(json!({ "approve": a.item }))),
                Some(_) => Ok(format!("approved {}", a.item)),
            }
        },
    );
    let model = ScriptedModel::new([
        ScriptStep::tool_call("approve", json!({"item": "kettle"})),
        ScriptStep::text("Approved."),
    ]);
    let agent = ChatModelAgent::builder("clerk", model.clone())
        .tool(approve)
        .build()
        .unwrap();
    let store = InMemoryStore::new();
    let streaming = Runner::builder(FlowAgent::new(agent))
        .checkpoint_store(store.clone())
        .streaming(true)
        .build();
    let first: Vec<AgentEvent> = streaming
        .run(RunRequest::new(user("kettle")).checkpoint("s"))
        .collect()
        .await;
    assert!(
        matches!(first[0].output, Some(EventOutput::Stream(_))),
        "the first run streams"
    );
    let whole = RunnerBuilder::from(streaming.clone())
        .streaming(false)
        .build();
    let resumed: Vec<AgentEvent> = whole
        .resume(ResumeRequest::new(
            "s",
            HashMap::from([("clerk".to_owned(), json!("yes"))]),
        ))
        .await
        .unwrap()
        .collect()
        .await;
    let answer = resumed.last().unwrap();
    assert_eq!(
        answer.message_output().map(|m| m.content.as_str()),
        Some("Approved."),
        "the resuming runner does not stream, so the answer is whole"
    );
}

#[tokio::test]
async fn run_options_reach_only_the_agent_they_name() {
    let triage_model = ScriptedModel::new([ScriptStep::transfer("refund")]);
    let refund_model = ScriptedModel::new([
        ScriptStep::tool_call("price", json!({})),
        ScriptStep::text("Refunded."),
    ]);
    let price = tool_fn_with_context("price", "The price.", |cx: ToolContext, _: NoArgs| {
        let currency = cx.tool_option_value("currency").cloned();
        async move { Ok::<_, String>(format!("39 {}", currency.unwrap_or(json!("?")))) }
    });
    let triage = ChatModelAgent::builder("triage", triage_model.clone())
        .instruction("You route.")
        .model_params(ModelParams {
            temperature: Some(0.7),
            ..Default::default()
        })
        .transfer_instructions(false)
        .build()
        .unwrap();
    let refund = ChatModelAgent::builder("refund", refund_model.clone())
        .instruction("You refund.")
        .model_params(ModelParams {
            temperature: Some(0.7),
            top_p: Some(0.9),
            ..Default::default()
        })
        .transfer_instructions(false)
        .tool(price)
        .build()
        .unwrap();
    let tree = set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refund)]).unwrap();
    let options = RunOptions::new().agent(
        "refund",
        AgentRunOptions::new()
            .temperature(0.0)
            .max_tokens(64)
            .instruction("You refund {customer}.")
            .tool_option("currency", json!("EUR")),
    );
    let session = Session::new();
    session.set_value("customer", "Ada").unwrap();
    let events = collect(
        Runner::builder(tree)
            .run_options(options)
            .build()
            .run(RunRequest::new(user("refund")).session(session)),
    )
    .await;
    assert_eq!(
        events,
        [
            r#"triage@triage:  [calls transfer_to_agent {"agent_name":"refund"}]"#,
            "triage@triage: successfully transferred to agent [refund] => transfer refund",
            "refund@triage/refund:  [calls price {}]",
            r#"refund@triage/refund: 39 "EUR""#,
            "refund@triage/refund: Refunded.",
        ]
    );
    let triage_asked = &triage_model.requests()[0];
    assert_eq!(seen(triage_asked), ["system: You route.", "user: refund"]);
    assert_eq!(
        triage_asked.params,
        ModelParams {
            temperature: Some(0.7),
            ..Default::default()
        },
        "triage keeps its own parameters"
    );
    for asked in refund_model.requests() {
        assert_eq!(seen(&asked)[0], "system: You refund Ada.");
        assert_eq!(
            asked.params,
            ModelParams {
                temperature: Some(0.0),
                max_tokens: Some(64),
                top_p: Some(0.9),
                stop: None,
            }
        );
    }
}

#[tokio::test]
async fn an_instruction_override_is_a_template_too_and_its_errors_name_the_agent() {
    let model = ScriptedModel::new(["never"]);
    let agent = ChatModelAgent::builder("clerk", model.clone())
        .instruction("You clerk.")
        .build()
        .unwrap();
    let runner = Runner::new(FlowAgent::new(agent));
    let unreadable = RunOptions::new().agent("clerk", AgentRunOptions::new().instruction("Say {"));
    assert_eq!(
        collect(
            RunnerBuilder::from(runner.clone())
                .run_options(unreadable)
                .build()
                .run("hi")
        )
        .await,
        [
            "clerk@clerk: error: agent 'clerk' has an instruction template that cannot be read: \
             the instruction of its run options: the `{` at byte 4 is never closed; write `{{` \
             for a literal brace"
        ]
    );
    let missing = RunOptions::new().agent("clerk", AgentRunOptions::new().instruction("Hi {who}"));
    assert_eq!(
        collect(
            RunnerBuilder::from(runner)
                .run_options(missing)
                .build()
                .run("hi")
        )
        .await,
        [
            "clerk@clerk: error: agent 'clerk' cannot build its instruction: the session value \
             'who' named by `{who}` is not set; set it before the run (Session::set_value), or \
             write literal braces as `{{` and `}}`"
        ]
    );
    assert_eq!(model.calls(), 0);
}

#[tokio::test]
async fn options_for_another_agent_change_nothing() {
    let model = ScriptedModel::new(["Hi."]);
    let agent = ChatModelAgent::builder("clerk", model.clone())
        .instruction("You clerk.")
        .build()
        .unwrap();
    let options = RunOptions::new().agent(
        "someone",
        AgentRunOptions::new()
            .temperature(1.0)
            .instruction("Other."),
    );
    let events = collect(
        Runner::builder(FlowAgent::new(agent))
            .run_options(options)
            .build()
            .run("hi"),
    )
    .await;
    assert_eq!(events, ["clerk@clerk: Hi."]);
    let asked = &model.requests()[0];
    assert_eq!(seen(asked), ["system: You clerk.", "user: hi"]);
    assert_eq!(asked.params, ModelParams::default());
    assert_eq!(asked.messages[0].role, Role::System);
}
