//! One reply of a ChatModelAgent calls several tools; some finish, some stop for outside input.
//! Whatever the order of finished and interrupted calls, and whether the interrupts are answered
//! together or one at a time (re-interrupting in between), resume runs exactly the calls that
//! had not answered, each interrupt keeps its id until it is answered, and the model is asked
//! again only once every call of the reply has its result.

use crate::support;
use support::lines;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use agentweave_runtime::model::{ChatRequest, ScriptStep, ScriptedModel};
use agentweave_runtime::{
    tool_fn, tool_fn_with_context, AgentEvent, ChatModelAgent, Checkpoint, CheckpointStore,
    FlowAgent, InMemoryStore, InterruptInfo, Message, MessageRef, Role, Runner, Session,
    ToolContext,
};
use agentweave_runtime::{ResumeRequest, RunRequest};
use futures::StreamExt;
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Item {
    item: String,
}

/// The clerk's calls: `approve` (stops for a human unless answered: `"yes"` approves) and
/// `lookup` (always finishes). Counts the runs of each tool.
struct Desk {
    runner: Runner,
    store: InMemoryStore,
    model: ScriptedModel,
    approvals: Arc<AtomicUsize>,
    lookups: Arc<AtomicUsize>,
}

/// A clerk whose model calls `calls` in one reply, then says `Done.`.
fn desk(calls: &[(&str, &str)]) -> Desk {
    let approvals = Arc::new(AtomicUsize::new(0));
    let lookups = Arc::new(AtomicUsize::new(0));
    let a = Arc::clone(&approvals);
    let approve = tool_fn_with_context(
        "approve",
        "Asks a human to approve an item.",
        move |cx: ToolContext, args: Item| {
            a.fetch_add(1, Ordering::SeqCst);
            async move {
                match cx.resume_data() {
                    None => Err(cx.interrupt(json!({ "approve": args.item }))),
                    Some(answer) if answer == "yes" => Ok(format!("approved {}", args.item)),
                    Some(_) => Ok(format!("declined {}", args.item)),
                }
            }
        },
    );
    let l = Arc::clone(&lookups);
    let lookup = tool_fn("lookup", "Looks an item up.", move |args: Item| {
        l.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, String>(format!("found {}", args.item)) }
    });
    let model = ScriptedModel::new([
        ScriptStep::tool_calls(
            calls
                .iter()
                .map(|(tool, item)| (*tool, json!({ "item": item }))),
        ),
        ScriptStep::text("Done."),
    ]);
    let clerk = ChatModelAgent::builder("clerk", model.clone())
        .instruction("You clerk.")
        .tool(approve)
        .tool(lookup)
        .build()
        .unwrap();
    let store = InMemoryStore::new();
    Desk {
        runner: Runner::builder(FlowAgent::new(clerk))
            .checkpoint_store(store.clone())
            .build(),
        store,
        model,
        approvals,
        lookups,
    }
}

impl Desk {
    async fn start(&self) -> Vec<AgentEvent> {
        let input: [MessageRef; 1] = [Arc::new(Message::user("go"))];
        self.runner
            .run(RunRequest::new(input).checkpoint("c"))
            .collect()
            .await
    }

    async fn resume(&self, targets: &[(&str, &str)]) -> Vec<AgentEvent> {
        let targets: HashMap<String, serde_json::Value> = targets
            .iter()
            .map(|(id, data)| ((*id).to_owned(), json!(data)))
            .collect();
        self.runner
            .resume(ResumeRequest::new("c", targets))
            .await
            .unwrap()
            .collect()
            .await
    }

    /// Every model request, each message as one line.
    fn requests(&self) -> Vec<Vec<String>> {
        self.model.requests().iter().map(seen).collect()
    }

    /// Asserts the model was asked twice: the question, then again with its `reply` and the
    /// calls' `results`.
    #[track_caller]
    fn assert_asked_again_with(&self, reply: &str, results: &[&str]) {
        assert_eq!(
            self.requests(),
            [first_request(), second_request(reply, results)]
        );
    }
}

/// A request's messages as `role: content`, with `[id name args]` per tool call and the call
/// id of a tool result.
fn seen(request: &ChatRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .map(|m| {
            let mut line = match (&m.role, &m.tool_call_id) {
                (Role::Tool, Some(id)) => format!("tool {id}: {}", m.content),
                (role, _) => format!("{role}: {}", m.content),
            };
            for c in &m.tool_calls {
                line.push_str(&format!(" [{} {} {}]", c.id, c.name, c.arguments));
            }
            line
        })
        .collect()
}

/// `id @ address` of each interrupt among `events`.
fn interrupts(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(AgentEvent::interrupt)
        .map(|i: &InterruptInfo| format!("{} @ {}", i.id, i.address_string()))
        .collect()
}

const REPLY_A_B: &str =
    r#"assistant:  [call_1_1 approve {"item":"a"}] [call_1_2 lookup {"item":"b"}]"#;

fn first_request() -> Vec<String> {
    vec!["system: You clerk.".to_owned(), "user: go".to_owned()]
}

fn second_request(reply: &str, results: &[&str]) -> Vec<String> {
    let mut out = first_request();
    out.push(reply.to_owned());
    out.extend(results.iter().map(|r| (*r).to_owned()));
    out
}

#[tokio::test]
async fn finished_then_interrupted_resume_runs_the_interrupted_call_before_asking_the_model() {
    let desk = desk(&[("lookup", "b"), ("approve", "a")]);
    let first = desk.start().await;
    assert_eq!(
        lines(&first),
        [
            r#"clerk@clerk:  [calls lookup {"item":"b"}] [calls approve {"item":"a"}]"#,
            "clerk@clerk: found b",
            "clerk@clerk: => interrupt clerk",
        ]
    );
    assert_eq!(
        interrupts(&first),
        ["clerk @ agent:clerk;tool:approve:call_1_2"]
    );
    let resumed = desk.resume(&[("clerk", "yes")]).await;
    assert_eq!(
        lines(&resumed),
        ["clerk@clerk: approved a", "clerk@clerk: Done."]
    );
    let reply = r#"assistant:  [call_1_1 lookup {"item":"b"}] [call_1_2 approve {"item":"a"}]"#;
    desk.assert_asked_again_with(
        reply,
        &["tool call_1_1: found b", "tool call_1_2: approved a"],
    );
    assert_eq!(desk.lookups.load(Ordering::SeqCst), 1, "lookup ran once");
    assert_eq!(desk.approvals.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn interrupted_then_finished_resume_emits_the_held_result_after_the_answered_call() {
    let desk = desk(&[("approve", "a"), ("lookup", "b")]);
    let first = desk.start().await;
    assert_eq!(
        lines(&first),
        [
            r#"clerk@clerk:  [calls approve {"item":"a"}] [calls lookup {"item":"b"}]"#,
            "clerk@clerk: => interrupt clerk",
        ],
        "the finished result waits for the call before it"
    );
    assert_eq!(
        interrupts(&first),
        ["clerk @ agent:clerk;tool:approve:call_1_1"]
    );
    let resumed = desk.resume(&[("clerk", "yes")]).await;
    assert_eq!(
        lines(&resumed),
        [
            "clerk@clerk: approved a",
            "clerk@clerk: found b",
            "clerk@clerk: Done."
        ]
    );
    desk.assert_asked_again_with(
        REPLY_A_B,
        &["tool call_1_1: approved a", "tool call_1_2: found b"],
    );
    assert_eq!(desk.lookups.load(Ordering::SeqCst), 1, "lookup ran once");
}

#[tokio::test]
async fn finished_interrupted_finished_resume_keeps_call_order() {
    let desk = desk(&[("lookup", "b"), ("approve", "a"), ("lookup", "c")]);
    let first = desk.start().await;
    assert_eq!(
        lines(&first),
        [
            r#"clerk@clerk:  [calls lookup {"item":"b"}] [calls approve {"item":"a"}] [calls lookup {"item":"c"}]"#,
            "clerk@clerk: found b",
            "clerk@clerk: => interrupt clerk",
        ]
    );
    let resumed = desk.resume(&[("clerk", "no")]).await;
    assert_eq!(
        lines(&resumed),
        [
            "clerk@clerk: declined a",
            "clerk@clerk: found c",
            "clerk@clerk: Done."
        ]
    );
    let reply = r#"assistant:  [call_1_1 lookup {"item":"b"}] [call_1_2 approve {"item":"a"}] [call_1_3 lookup {"item":"c"}]"#;
    desk.assert_asked_again_with(
        reply,
        &[
            "tool call_1_1: found b",
            "tool call_1_2: declined a",
            "tool call_1_3: found c",
        ],
    );
    assert_eq!(
        desk.lookups.load(Ordering::SeqCst),
        2,
        "each lookup ran once"
    );
}

const REPLY_A_B_APPROVALS: &str =
    r#"assistant:  [call_1_1 approve {"item":"a"}] [call_1_2 approve {"item":"b"}]"#;

fn two_approvals() -> Desk {
    desk(&[("approve", "a"), ("approve", "b")])
}

async fn start_two_approvals(desk: &Desk) {
    let first = desk.start().await;
    assert_eq!(
        lines(&first),
        [
            r#"clerk@clerk:  [calls approve {"item":"a"}] [calls approve {"item":"b"}]"#,
            "clerk@clerk: => interrupt clerk",
            "clerk@clerk: => interrupt clerk (call call_1_2)",
        ]
    );
    assert_eq!(
        interrupts(&first),
        [
            "clerk @ agent:clerk;tool:approve:call_1_1",
            "clerk (call call_1_2) @ agent:clerk;tool:approve:call_1_2",
        ]
    );
}

#[tokio::test]
async fn two_interrupted_calls_answered_together() {
    let desk = two_approvals();
    start_two_approvals(&desk).await;
    let resumed = desk
        .resume(&[("clerk", "yes"), ("clerk (call call_1_2)", "no")])
        .await;
    assert_eq!(
        lines(&resumed),
        [
            "clerk@clerk: approved a",
            "clerk@clerk: declined b",
            "clerk@clerk: Done."
        ]
    );
    desk.assert_asked_again_with(
        REPLY_A_B_APPROVALS,
        &["tool call_1_1: approved a", "tool call_1_2: declined b"],
    );
}

#[tokio::test]
async fn two_interrupted_calls_answered_first_then_second() {
    let desk = two_approvals();
    start_two_approvals(&desk).await;
    let once = desk.resume(&[("clerk", "yes")]).await;
    assert_eq!(
        lines(&once),
        [
            "clerk@clerk: approved a",
            "clerk@clerk: => interrupt clerk (call call_1_2)",
        ],
        "the second call keeps its id"
    );
    assert_eq!(
        interrupts(&once),
        ["clerk (call call_1_2) @ agent:clerk;tool:approve:call_1_2"]
    );
    assert_eq!(desk.model.calls(), 1, "not asked with a call unanswered");
    let twice = desk.resume(&[("clerk (call call_1_2)", "yes")]).await;
    assert_eq!(
        lines(&twice),
        ["clerk@clerk: approved b", "clerk@clerk: Done."]
    );
    desk.assert_asked_again_with(
        REPLY_A_B_APPROVALS,
        &["tool call_1_1: approved a", "tool call_1_2: approved b"],
    );
    assert_eq!(desk.approvals.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn two_interrupted_calls_answered_second_then_first() {
    let desk = two_approvals();
    start_two_approvals(&desk).await;
    let once = desk.resume(&[("clerk (call call_1_2)", "no")]).await;
    assert_eq!(
        lines(&once),
        ["clerk@clerk: => interrupt clerk"],
        "the answered result waits for the call before it"
    );
    assert_eq!(
        interrupts(&once),
        ["clerk @ agent:clerk;tool:approve:call_1_1"]
    );
    assert_eq!(desk.model.calls(), 1);
    let twice = desk.resume(&[("clerk", "yes")]).await;
    assert_eq!(
        lines(&twice),
        [
            "clerk@clerk: approved a",
            "clerk@clerk: declined b",
            "clerk@clerk: Done."
        ]
    );
    desk.assert_asked_again_with(
        REPLY_A_B_APPROVALS,
        &["tool call_1_1: approved a", "tool call_1_2: declined b"],
    );
    assert_eq!(
        desk.approvals.load(Ordering::SeqCst),
        5,
        "the answered call is not run again"
    );
}

#[tokio::test]
async fn re_interrupted_calls_keep_their_ids_until_answered() {
    let desk = desk(&[("approve", "a"), ("lookup", "c"), ("approve", "b")]);
    let first = desk.start().await;
    let ids = [
        "clerk @ agent:clerk;tool:approve:call_1_1",
        "clerk (call call_1_3) @ agent:clerk;tool:approve:call_1_3",
    ];
    assert_eq!(interrupts(&first), ids);
    // Re-entered without answers: both stop again, under the same ids.
    let again = desk.resume(&[]).await;
    assert_eq!(
        lines(&again),
        [
            "clerk@clerk: => interrupt clerk",
            "clerk@clerk: => interrupt clerk (call call_1_3)",
        ]
    );
    assert_eq!(interrupts(&again), ids);
    // The later one answered: the earlier one stops again, alone, under its id.
    let third = desk.resume(&[("clerk (call call_1_3)", "yes")]).await;
    assert_eq!(lines(&third), ["clerk@clerk: => interrupt clerk"]);
    assert_eq!(interrupts(&third), &ids[..1]);
    let fourth = desk.resume(&[]).await;
    assert_eq!(interrupts(&fourth), &ids[..1]);
    let done = desk.resume(&[("clerk", "no")]).await;
    assert_eq!(
        lines(&done),
        [
            "clerk@clerk: declined a",
            "clerk@clerk: found c",
            "clerk@clerk: approved b",
            "clerk@clerk: Done."
        ]
    );
    let reply = r#"assistant:  [call_1_1 approve {"item":"a"}] [call_1_2 lookup {"item":"c"}] [call_1_3 approve {"item":"b"}]"#;
    desk.assert_asked_again_with(
        reply,
        &[
            "tool call_1_1: declined a",
            "tool call_1_2: found c",
            "tool call_1_3: approved b",
        ],
    );
    assert_eq!(desk.lookups.load(Ordering::SeqCst), 1, "lookup ran once");
}

#[tokio::test]
async fn a_finished_call_then_one_re_interrupted_twice() {
    let desk = desk(&[("lookup", "b"), ("approve", "a")]);
    desk.start().await;
    for _ in 0..2 {
        let again = desk.resume(&[]).await;
        assert_eq!(lines(&again), ["clerk@clerk: => interrupt clerk"]);
        assert_eq!(
            interrupts(&again),
            ["clerk @ agent:clerk;tool:approve:call_1_2"]
        );
    }
    assert_eq!(desk.model.calls(), 1);
    let done = desk.resume(&[("clerk", "yes")]).await;
    assert_eq!(
        lines(&done),
        ["clerk@clerk: approved a", "clerk@clerk: Done."]
    );
    let reply = r#"assistant:  [call_1_1 lookup {"item":"b"}] [call_1_2 approve {"item":"a"}]"#;
    assert_eq!(
        desk.requests()[1],
        second_request(
            reply,
            &["tool call_1_1: found b", "tool call_1_2: approved a"]
        )
    );
    assert_eq!(desk.lookups.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_session_record_after_the_resumes_is_the_uninterrupted_one() {
    let desk = two_approvals();
    let session = Session::new();
    let input: [MessageRef; 1] = [Arc::new(Message::user("go"))];
    let _: Vec<AgentEvent> = desk
        .runner
        .run(
            RunRequest::new(input)
                .session(Arc::clone(&session))
                .checkpoint("c"),
        )
        .collect()
        .await;
    desk.resume(&[("clerk", "yes")]).await;
    desk.resume(&[("clerk (call call_1_2)", "yes")]).await;
    let bytes = desk.store.get("c").await.unwrap().unwrap();
    let stored = Checkpoint::decode("c", &bytes).unwrap();
    let record: Vec<String> = stored
        .events
        .iter()
        .map(|e| {
            let m = e.message.as_ref().unwrap();
            format!("{:?} {:?}: {}", m.role, m.tool_call_id, m.content)
        })
        .collect();
    assert_eq!(
        record,
        [
            "Assistant None: ",
            "Tool Some(\"call_1_1\"): approved a",
            "Tool Some(\"call_1_2\"): approved b",
            "Assistant None: Done.",
        ]
    );
}

#[tokio::test]
async fn two_calls_of_an_agent_tool_that_interrupts_keep_their_ids_when_answered_one_at_a_time() {
    // `payments` asks `approve` for the amount it was asked about; two calls of it in one reply.
    let approve = tool_fn_with_context(
        "approve",
        "Asks a human.",
        |cx: ToolContext, a: Item| async move {
            match cx.resume_data() {
                None => Err(cx.interrupt(json!({ "approve": a.item }))),
                Some(answer) => Ok(format!("{answer} for {}", a.item)),
            }
        },
    );
    let inner = ScriptedModel::rules()
        .after_tool("approve", "paid")
        .when_last_user_contains(
            "40",
            ScriptStep::tool_call("approve", json!({"item": "40"})),
        )
        .otherwise(ScriptStep::tool_call("approve", json!({"item": "15"})));
    let payments = ChatModelAgent::builder("payments", inner)
        .description("Pays.")
        .tool(approve)
        .build()
        .unwrap();
    let outer = ScriptedModel::new([
        ScriptStep::tool_calls([
            ("payments", json!({"request": "pay 40"})),
            ("payments", json!({"request": "pay 15"})),
        ]),
        ScriptStep::text("Both paid."),
    ]);
    let assistant = ChatModelAgent::builder("assistant", outer.clone())
        .tool(agentweave_runtime::AgentTool::new(FlowAgent::new(payments)))
        .build()
        .unwrap();
    let runner = Runner::builder(FlowAgent::new(assistant))
        .checkpoint_store(InMemoryStore::new())
        .build();
    let first: Vec<AgentEvent> = runner
        .run(RunRequest::new([Message::user("pay both")]).checkpoint("p"))
        .collect()
        .await;
    let ids = [
        "assistant/payments @ agent:assistant;tool:payments:call_1_1;agent:payments;tool:approve:call_1_1",
        "assistant/payments (call call_1_2) @ agent:assistant;tool:payments:call_1_2;agent:payments;tool:approve:call_1_1",
    ];
    assert_eq!(interrupts(&first), ids);
    let resume = |id: &str| {
        let targets = HashMap::from([(id.to_owned(), json!("yes"))]);
        let runner = runner.clone();
        async move {
            let events: Vec<AgentEvent> = runner
                .resume(ResumeRequest::new("p", targets))
                .await
                .unwrap()
                .collect()
                .await;
            events
        }
    };
    let once = resume("assistant/payments").await;
    assert_eq!(
        lines(&once),
        [
            "assistant@assistant: paid",
            "assistant@assistant: => interrupt assistant/payments (call call_1_2)",
        ]
    );
    assert_eq!(interrupts(&once), &ids[1..]);
    assert_eq!(outer.calls(), 1, "not asked with a call unanswered");
    let twice = resume("assistant/payments (call call_1_2)").await;
    assert_eq!(
        lines(&twice),
        [
            "assistant@assistant: paid",
            "assistant@assistant: Both paid."
        ]
    );
    assert_eq!(
        desk_requests(&outer)[1],
        [
            "user: pay both",
            r#"assistant:  [call_1_1 payments {"request":"pay 40"}] [call_1_2 payments {"request":"pay 15"}]"#,
            "tool call_1_1: paid",
            "tool call_1_2: paid",
        ]
    );
}

fn desk_requests(model: &ScriptedModel) -> Vec<Vec<String>> {
    model.requests().iter().map(seen).collect()
}
