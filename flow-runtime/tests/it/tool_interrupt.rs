//! A plain function tool that stops for outside input (`ToolContext::interrupt`): the calling
//! ChatModelAgent ends its run with an interrupt addressed to the call, the runner checkpoints
//! it, and resume runs the call again with the caller's answer, then the ReAct loop goes on.

use crate::support;
use support::{line, lines};

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::{
    set_sub_agents, tool_fn_with_context, AgentEvent, AgentTool, ChatModelAgent, Checkpoint,
    CheckpointStore, FileStore, FlowAgent, FnAgent, FnTool, InMemoryStore, InterruptInfo, Message,
    MessageRef, Role, Runner, Session, ToolContext, ToolError, ToolInterrupt,
};
use agentweave_runtime::{ResumeRequest, RunRequest};
use futures::StreamExt;
use serde_json::json;

/// The addresses of the interrupts among `events`.
fn addresses(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(AgentEvent::interrupt)
        .map(InterruptInfo::address_string)
        .collect()
}

/// The session record as `path role: content` lines.
fn record(session: &Session) -> Vec<String> {
    session
        .events()
        .iter()
        .map(|e| match e.message_now() {
            Some(m) => format!("{} {:?}: {}", e.run_path(), m.role, m.content),
            None => format!("{} (no message)", e.run_path()),
        })
        .collect()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    amount: u32,
}

/// What each call of `issue_refund` saw: resuming, the resume data, the saved state.
type Calls = Arc<Mutex<Vec<(bool, Option<serde_json::Value>, Option<serde_json::Value>)>>>;

/// `issue_refund` stops for a human's approval (keeping the amount as state) unless it is
/// resumed with an answer: `"yes"` refunds, anything else declines.
fn issue_refund(calls: Calls) -> FnTool {
    tool_fn_with_context(
        "issue_refund",
        "Refunds the customer once a human approves.",
        move |cx: ToolContext, args: Refund| {
            calls.lock().unwrap().push((
                cx.is_resuming(),
                cx.resume_data().cloned(),
                cx.saved_state().cloned(),
            ));
            async move {
                match cx.resume_data() {
                    None => Err(cx.interrupt_with_state(
                        json!({"approve refund of": args.amount}),
                        json!({"amount": args.amount}),
                    )),
                    Some(answer) if answer == "yes" => Ok(format!("refunded ${}", args.amount)),
                    Some(_) => Ok(format!("refund of ${} declined", args.amount)),
                }
            }
        },
    )
}

/// Calls `issue_refund` for $40 until a refund result comes back, then says it is done.
fn refund_model() -> ScriptedModel {
    ScriptedModel::rules()
        .after_tool("issue_refund", "All done.")
        .otherwise(ScriptStep::tool_call("issue_refund", json!({"amount": 40})))
}

/// `desk` hands every request to `refund`, a ChatModelAgent with `tool`.
fn desk(model: ScriptedModel, tool: FnTool, desk_runs: Arc<AtomicUsize>) -> FlowAgent {
    let root = FlowAgent::new(FnAgent::new("desk", move |cx, _| {
        desk_runs.fetch_add(1, Ordering::SeqCst);
        async move {
            cx.say("desk passes to refund");
            cx.transfer("refund");
            Ok(())
        }
    }));
    let refund = ChatModelAgent::builder("refund", model)
        .instruction("You issue refunds.")
        .tool(tool)
        .build()
        .unwrap();
    set_sub_agents(root, [FlowAgent::new(refund)]).unwrap()
}

fn user(text: &str) -> [MessageRef; 1] {
    [MessageRef::new(Message::user(text))]
}

fn target(id: &str, data: serde_json::Value) -> HashMap<String, serde_json::Value> {
    HashMap::from([(id.to_owned(), data)])
}

async fn resume_all(
    runner: &Runner,
    id: &str,
    targets: HashMap<String, serde_json::Value>,
) -> Vec<AgentEvent> {
    runner
        .resume(ResumeRequest::new(id, targets))
        .await
        .unwrap()
        .collect()
        .await
}

/// The desk's run resumed with approval: the call answered, the model finished, and the
/// second call of `issue_refund` was the resumed one, with the answer and its state.
fn assert_approved_refund(resumed: &[AgentEvent], calls: &Calls) {
    assert_eq!(
        lines(resumed),
        [
            "refund@desk/refund: refunded $40",
            "refund@desk/refund: All done."
        ]
    );
    assert_eq!(
        calls.lock().unwrap()[1],
        (true, Some(json!("yes")), Some(json!({"amount": 40}))),
        "the call runs again, resuming, with the answer and its state"
    );
}

#[tokio::test]
async fn a_tool_interrupts_itself_and_resume_runs_the_call_again_with_the_answer() {
    let calls = Calls::default();
    let desk_runs = Arc::new(AtomicUsize::new(0));
    let model = refund_model();
    let store = InMemoryStore::new();
    let runner = Runner::builder(desk(
        model.clone(),
        issue_refund(Arc::clone(&calls)),
        Arc::clone(&desk_runs),
    ))
    .checkpoint_store(store.clone())
    .build();
    let first: Vec<AgentEvent> = runner
        .run(RunRequest::new(user("I want my $40 back")).checkpoint("r1"))
        .collect()
        .await;
    assert_eq!(
        lines(&first),
        [
            "desk@desk: desk passes to refund",
            r#"desk@desk:  [calls transfer_to_agent {"agent_name":"refund"}]"#,
            "desk@desk: successfully transferred to agent [refund] => transfer refund",
            r#"refund@desk/refund:  [calls issue_refund {"amount":40}]"#,
            "refund@desk/refund: => interrupt desk/refund",
        ]
    );
    assert_eq!(
        addresses(&first),
        ["agent:refund;tool:issue_refund:call_1_1"]
    );
    let info = first[4].interrupt().unwrap();
    assert_eq!(info.info, json!({"approve refund of": 40}));
    assert_eq!(
        info.state,
        Some(json!({"amount": 40})),
        "the tool's state is the interrupt's"
    );
    assert_eq!(info.address[0].tool.as_ref().unwrap().call_id, "call_1_1");
    assert!(
        info.address[0].state.is_some(),
        "the agent's frame keeps the turn"
    );
    assert!(store.get("r1").await.unwrap().is_some(), "checkpoint saved");
    assert_eq!(*calls.lock().unwrap(), [(false, None, None)]);

    let resumed = resume_all(&runner, "r1", target("desk/refund", json!("yes"))).await;
    assert_approved_refund(&resumed, &calls);
    assert_eq!(desk_runs.load(Ordering::SeqCst), 1, "desk is not run again");
    assert_eq!(
        model.calls(),
        2,
        "the model is not asked again for the call"
    );
    let last = model.requests().pop().unwrap();
    let seen: Vec<(Role, &str)> = last
        .messages
        .iter()
        .map(|m| (m.role, &*m.content))
        .collect();
    assert_eq!(
        seen,
        [
            (
                Role::System,
                // The instruction, then the transfer instructions: refund may go back to desk.
                "You issue refunds.\n\n\
                 You can transfer the conversation to these agents:\n\
                 - desk\n\
                 If you can answer the request yourself, answer it. If one of these agents is \
                 better placed to handle it, call the `transfer_to_agent` tool with that agent's \
                 name and do not answer it yourself."
            ),
            (Role::User, "I want my $40 back"),
            (
                Role::User,
                "For context: [desk] said: desk passes to refund."
            ),
            (
                Role::User,
                "For context: [desk] called tool: `transfer_to_agent` with arguments: \
                 {\"agent_name\":\"refund\"}."
            ),
            (
                Role::User,
                "For context: [desk] `transfer_to_agent` tool returned result: successfully \
                 transferred to agent [refund]."
            ),
            (Role::Assistant, ""),
            (Role::Tool, "refunded $40"),
        ]
    );
}

#[tokio::test]
async fn the_resumed_session_matches_a_run_whose_tool_never_stopped() {
    let store = InMemoryStore::new();
    let runner = Runner::builder(desk(
        refund_model(),
        issue_refund(Calls::default()),
        Arc::default(),
    ))
    .checkpoint_store(store.clone())
    .build();
    let held = Session::new();
    let first: Vec<AgentEvent> = runner
        .run(
            RunRequest::new(user("refund please"))
                .session(Arc::clone(&held))
                .checkpoint("r2"),
        )
        .collect()
        .await;
    assert!(first.last().unwrap().interrupt().is_some());
    let before = record(&held);
    let resumed = resume_all(&runner, "r2", target("desk/refund", json!("yes"))).await;
    assert!(resumed.iter().all(|e| e.error.is_none()), "{resumed:?}");
    let done = Checkpoint::decode("r2", &store.get("r2").await.unwrap().unwrap()).unwrap();
    let after: Vec<String> = done
        .events
        .iter()
        .map(|e| {
            let m = e.message.as_ref().expect("a message");
            format!("{} {:?}: {}", e.run_path, m.role, m.content)
        })
        .collect();

    // The same choices, with a tool that approves at once.
    let approving = tool_fn_with_context(
        "issue_refund",
        "Refunds the customer once a human approves.",
        |_: ToolContext, args: Refund| async move {
            Ok::<_, ToolError>(format!("refunded ${}", args.amount))
        },
    );
    let straight = Session::new();
    let _: Vec<AgentEvent> = Runner::new(desk(refund_model(), approving, Arc::default()))
        .run(RunRequest::new(user("refund please")).session(Arc::clone(&straight)))
        .collect()
        .await;
    let expected = record(&straight);
    assert_eq!(
        expected,
        [
            "desk Assistant: desk passes to refund",
            "desk Assistant: ",
            "desk Tool: successfully transferred to agent [refund]",
            "desk/refund Assistant: ",
            "desk/refund Tool: refunded $40",
            "desk/refund Assistant: All done.",
        ]
    );
    assert_eq!(after, expected);
    assert_eq!(
        before,
        expected[..4],
        "before the call finishes, only the reply that made it is recorded"
    );
}

#[tokio::test]
async fn resumed_without_an_answer_the_tool_interrupts_again_and_a_later_resume_finishes() {
    let calls = Calls::default();
    let store = InMemoryStore::new();
    let runner = Runner::builder(desk(
        refund_model(),
        issue_refund(Arc::clone(&calls)),
        Arc::default(),
    ))
    .checkpoint_store(store.clone())
    .build();
    let _: Vec<AgentEvent> = runner
        .run(RunRequest::new(user("refund please")).checkpoint("r4"))
        .collect()
        .await;
    let again = resume_all(&runner, "r4", HashMap::new()).await;
    assert_eq!(
        lines(&again),
        ["refund@desk/refund: => interrupt desk/refund"]
    );
    assert_eq!(
        addresses(&again),
        ["agent:refund;tool:issue_refund:call_1_1"]
    );
    assert_eq!(
        calls.lock().unwrap()[1],
        (true, None, Some(json!({"amount": 40}))),
        "re-entered with its state, but no answer"
    );
    let done = resume_all(&runner, "r4", target("desk/refund", json!("no"))).await;
    assert_eq!(
        lines(&done),
        [
            "refund@desk/refund: refund of $40 declined",
            "refund@desk/refund: All done."
        ]
    );
    let err = runner
        .resume(ResumeRequest::new("r4", []))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("already"), "{err}");
}

#[tokio::test]
async fn two_calls_of_one_reply_that_interrupt_get_their_own_ids_and_answers() {
    let calls = Calls::default();
    let clock_runs = Arc::new(AtomicUsize::new(0));
    let n = Arc::clone(&clock_runs);
    let clock = agentweave_runtime::tool_fn("clock", "The time.", move |_: NoArgs| {
        n.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, String>("12:00") }
    });
    let model = ScriptedModel::rules()
        .after_tool("issue_refund", "Both handled.")
        .otherwise(ScriptStep::tool_calls([
            ("issue_refund", json!({"amount": 40})),
            ("clock", json!({})),
            ("issue_refund", json!({"amount": 15})),
        ]));
    let refund = ChatModelAgent::builder("refund", model)
        .tool(issue_refund(Arc::clone(&calls)))
        .tool(clock)
        .build()
        .unwrap();
    let runner = Runner::builder(FlowAgent::new(refund))
        .checkpoint_store(InMemoryStore::new())
        .build();
    let first: Vec<AgentEvent> = runner
        .run(RunRequest::new(user("two refunds")).checkpoint("r5"))
        .collect()
        .await;
    assert_eq!(
        lines(&first)[1..],
        [
            "refund@refund: => interrupt refund",
            "refund@refund: => interrupt refund (call call_1_3)",
        ]
    );
    assert_eq!(
        addresses(&first),
        [
            "agent:refund;tool:issue_refund:call_1_1",
            "agent:refund;tool:issue_refund:call_1_3"
        ]
    );
    let targets = HashMap::from([
        ("refund".to_owned(), json!("yes")),
        ("refund (call call_1_3)".to_owned(), json!("no")),
    ]);
    let resumed = resume_all(&runner, "r5", targets).await;
    assert_eq!(
        lines(&resumed),
        [
            "refund@refund: refunded $40",
            "refund@refund: 12:00",
            "refund@refund: refund of $15 declined",
            "refund@refund: Both handled.",
        ],
        "results keep call order"
    );
    assert_eq!(clock_runs.load(Ordering::SeqCst), 1, "the clock ran once");
    let seen = calls.lock().unwrap();
    assert_eq!(seen.len(), 4);
    assert!(seen[2..].iter().all(|(resuming, _, _)| *resuming));
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

#[tokio::test]
async fn a_tool_interrupt_inside_an_agent_tool_crosses_both_calls_and_resumes_through_them() {
    let calls = Calls::default();
    let payments = ChatModelAgent::builder("payments", refund_model())
        .description("Pays refunds.")
        .tool(issue_refund(Arc::clone(&calls)))
        .build()
        .unwrap();
    let outer_model = ScriptedModel::rules()
        .after_tool("payments", "Your refund is on its way.")
        .otherwise(ScriptStep::tool_call(
            "payments",
            json!({"request": "refund $40"}),
        ));
    let assistant = ChatModelAgent::builder("assistant", outer_model)
        .tool(AgentTool::new(FlowAgent::new(payments)))
        .build()
        .unwrap();
    let runner = Runner::builder(FlowAgent::new(assistant))
        .checkpoint_store(InMemoryStore::new())
        .build();
    let first: Vec<AgentEvent> = runner
        .run(RunRequest::new(user("refund please")).checkpoint("r6"))
        .collect()
        .await;
    let info = first.last().unwrap().interrupt().expect("an interrupt");
    assert_eq!(
        info.address_string(),
        "agent:assistant;tool:payments:call_1_1;agent:payments;tool:issue_refund:call_1_1"
    );
    assert_eq!(info.id, "assistant/payments");
    let resumed = resume_all(&runner, "r6", target("assistant/payments", json!("yes"))).await;
    assert_eq!(
        lines(&resumed),
        [
            "assistant@assistant: All done.",
            "assistant@assistant: Your refund is on its way."
        ]
    );
    assert_eq!(
        calls.lock().unwrap()[1],
        (true, Some(json!("yes")), Some(json!({"amount": 40})))
    );
}

#[tokio::test]
async fn a_tool_interrupt_survives_a_new_runner_over_the_durable_store() {
    let dir = std::env::temp_dir().join(format!("agentflow-tool-interrupt-{}", std::process::id()));
    let calls = Calls::default();
    let first: Vec<AgentEvent> = Runner::builder(desk(
        refund_model(),
        issue_refund(Arc::clone(&calls)),
        Arc::default(),
    ))
    .checkpoint_store(FileStore::new(&dir).unwrap())
    .build()
    .run(RunRequest::new(user("refund please")).checkpoint("order-7"))
    .collect()
    .await;
    assert!(first.last().unwrap().interrupt().is_some());

    // A new tree, model and store over the same directory: nothing but the bytes carry over.
    let runner = Runner::builder(desk(
        refund_model(),
        issue_refund(Arc::clone(&calls)),
        Arc::default(),
    ))
    .checkpoint_store(FileStore::new(&dir).unwrap())
    .build();
    let resumed = resume_all(&runner, "order-7", target("desk/refund", json!("yes"))).await;
    assert_approved_refund(&resumed, &calls);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_tool_interrupt_without_any_interrupt_in_it_is_a_clear_error_and_keeps_the_record() {
    let empty = tool_fn_with_context(
        "stop",
        "Stops, badly.",
        |cx: ToolContext, _: NoArgs| async move {
            Err::<String, _>(ToolError::interrupted(
                cx.tool_name(),
                ToolInterrupt {
                    interrupts: Vec::new(),
                    state: None,
                },
            ))
        },
    );
    let agent = ChatModelAgent::builder(
        "refund",
        ScriptedModel::new([ScriptStep::tool_call("stop", json!({}))]),
    )
    .tool(empty)
    .build()
    .unwrap();
    let session = Session::new();
    let events: Vec<AgentEvent> = Runner::new(FlowAgent::new(agent))
        .run(RunRequest::new(user("go")).session(Arc::clone(&session)))
        .collect()
        .await;
    let last = line(events.last().unwrap());
    assert!(
        last.contains("agent 'refund' cannot resume: tool 'stop' stopped for outside input")
            && last.contains("ToolContext::interrupt"),
        "{last}"
    );
    assert_eq!(
        record(&session),
        ["refund Assistant: ", "refund (no message)"],
        "the reply stays recorded, then the error"
    );
}

#[tokio::test]
async fn outside_a_chat_agent_the_interrupt_is_an_error_that_says_why() {
    let tool = issue_refund(Calls::default());
    let cx = ToolContext::new(
        agentweave_runtime::RunContext::new_run(Session::new(), [], false, "test"),
        "c1",
    )
    .with_tool_name("issue_refund");
    let err = agentweave_runtime::Tool::call(&tool, &cx, r#"{"amount": 5}"#)
        .await
        .unwrap_err();
    let ToolError::Interrupted { tool, interrupt } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(&**tool, "issue_refund");
    assert_eq!(
        interrupt.interrupts[0].info,
        json!({"approve refund of": 5})
    );
    assert_eq!(interrupt.state, Some(json!({"amount": 5})));
    assert_eq!(
        err.to_string(),
        "tool 'issue_refund' stopped for outside input; it can only be called by an agent that \
         can pass its interrupts on and resume it (a ChatModelAgent)"
    );
}

#[tokio::test]
async fn tool_interrupts_in_two_parallel_lanes_resume_each_lane_with_its_answer() {
    let calls = Calls::default();
    let lane = |name: &str| {
        FlowAgent::new(
            ChatModelAgent::builder(name, refund_model())
                .tool(issue_refund(Arc::clone(&calls)))
                .build()
                .unwrap(),
        )
    };
    let desks = agentweave_runtime::Parallel::new("desks")
        .with_sub_agents([lane("north"), lane("south")])
        .unwrap();
    let runner = Runner::builder(desks)
        .checkpoint_store(InMemoryStore::new())
        .build();
    let first: Vec<AgentEvent> = runner
        .run(RunRequest::new(user("refund please")).checkpoint("r7"))
        .collect()
        .await;
    let mut ids: Vec<String> = first
        .iter()
        .filter_map(|e| e.interrupt().map(|i| i.id.clone()))
        .collect();
    ids.sort();
    assert_eq!(ids, ["desks/north", "desks/south"]);
    let mut got = addresses(&first);
    got.sort();
    assert_eq!(
        got,
        [
            "agent:desks;agent:north;tool:issue_refund:call_1_1",
            "agent:desks;agent:south;tool:issue_refund:call_1_1",
        ]
    );
    let targets = HashMap::from([
        ("desks/north".to_owned(), json!("yes")),
        ("desks/south".to_owned(), json!("no")),
    ]);
    let mut resumed = lines(&resume_all(&runner, "r7", targets).await);
    resumed.sort();
    assert_eq!(
        resumed,
        [
            "north@desks/north: All done.",
            "north@desks/north: refunded $40",
            "south@desks/south: All done.",
            "south@desks/south: refund of $40 declined",
        ]
    );
}
