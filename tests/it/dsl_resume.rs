//! `#[agent]` bodies interrupt, and resume by running again with the caller's answer: in a
//! plain tree, inside a workflow, and as a struct agent; `break_loop` ends a loop.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentweave::prelude::*;
use agentweave::store::InMemoryStore;
use agentweave::{ResumeRequest, RunRequest};
use futures::StreamExt;
use serde_json::json;

/// Routes every request to refunds.
#[agent(transfers = [refund])]
async fn triage(cx: &AgentContext) -> TriageTransfer {
    cx.say("passing you to refunds");
    TriageTransfer::Refund
}

/// Refunds once a human approves.
#[agent]
async fn refund(cx: &AgentContext, input: AgentInput) {
    if !cx.is_resuming() {
        cx.say("order #7 qualifies for $40");
        cx.interrupt_with_state(json!("approve $40 for order #7?"), json!({"amount": 40}));
        return;
    }
    let seen: Vec<&str> = input.messages.iter().map(|m| &*m.content).collect();
    cx.say(format!("resumed seeing {seen:?}"));
    match cx.resume_data() {
        Some(answer) if answer == "yes" => {
            let amount = &cx.saved_state().expect("the saved state")["amount"];
            cx.say(format!("refunded ${amount}"));
        }
        Some(_) => cx.say("declined"),
        None => cx.interrupt_with_state(json!("still waiting"), json!({"amount": 40})),
    }
}

flow! {
    /// A desk whose refunds need approval.
    Desk: triage => [refund]
}

fn line(e: &AgentEvent) -> String {
    let mut out = format!("{}:", e.run_path());
    if let Some(m) = e.message_output() {
        out.push(' ');
        out.push_str(&m.content);
    }
    if let Some(i) = e.interrupt() {
        out.push_str(&format!(" interrupt {} {}", i.id, i.info));
    }
    if let Some(a @ (Action::TransferToAgent(_) | Action::BreakLoop(_))) = &e.action {
        out.push_str(&format!(" => {a:?}"));
    }
    if let Some(err) = &e.error {
        out.push_str(&format!(" error: {err}"));
    }
    out
}

async fn first_run(runner: &Runner, id: &str) -> Vec<String> {
    runner
        .run(RunRequest::new([Message::user("refund please")]).checkpoint(id))
        .map(|e| line(&e))
        .collect()
        .await
}

async fn resume(runner: &Runner, id: &str, targets: &[(&str, serde_json::Value)]) -> Vec<String> {
    let targets: HashMap<String, serde_json::Value> = targets
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    runner
        .resume(ResumeRequest::new(id, targets))
        .await
        .unwrap()
        .map(|e| line(&e))
        .collect()
        .await
}

#[tokio::test]
async fn an_agent_fn_interrupts_and_runs_again_with_the_answer_and_its_state() {
    let runner = Runner::builder(Desk::new().unwrap())
        .checkpoint_store(InMemoryStore::new())
        .build();
    assert_eq!(
        first_run(&runner, "d1").await,
        [
            "triage: passing you to refunds",
            "triage: ",
            r#"triage: successfully transferred to agent [refund] => TransferToAgent("refund")"#,
            "triage/refund: order #7 qualifies for $40",
            r#"triage/refund: interrupt triage/refund "approve $40 for order #7?""#,
        ]
    );
    assert_eq!(
        resume(&runner, "d1", &[("triage/refund", json!("yes"))]).await,
        [
            "triage/refund: resumed seeing [\"refund please\", \"For context: [triage] said: \
             passing you to refunds.\", \"For context: [triage] called tool: \
             `transfer_to_agent` with arguments: {\\\"agent_name\\\":\\\"refund\\\"}.\", \
             \"For context: [triage] `transfer_to_agent` tool returned result: successfully \
             transferred to agent [refund].\", \"order #7 qualifies for $40\"]",
            "triage/refund: refunded $40",
        ],
        "triage is not run again; refund sees what it said before the interrupt"
    );
}

#[tokio::test]
async fn resumed_without_an_answer_an_agent_fn_may_interrupt_again() {
    let runner = Runner::builder(Desk::new().unwrap())
        .checkpoint_store(InMemoryStore::new())
        .build();
    first_run(&runner, "d2").await;
    let again = resume(&runner, "d2", &[]).await;
    assert_eq!(
        again.last().unwrap(),
        r#"triage/refund: interrupt triage/refund "still waiting""#
    );
    let done = resume(&runner, "d2", &[("triage/refund", json!("no"))]).await;
    assert_eq!(done.last().unwrap(), "triage/refund: declined");
}

static DRAFTS: AtomicUsize = AtomicUsize::new(0);

/// Drafts a post.
#[agent]
async fn drafter(cx: &AgentContext) {
    DRAFTS.fetch_add(1, Ordering::SeqCst);
    cx.say("a draft");
}

/// Asks an editor before publishing.
#[agent]
async fn editor(cx: &AgentContext) {
    match cx.resume_data() {
        None => cx.interrupt(json!("publish this draft?")),
        Some(answer) => cx.say(format!("editor says {answer}")),
    }
}

/// Publishes.
#[agent]
async fn publisher(cx: &AgentContext) {
    cx.say("published");
}

flow! {
    /// Drafts, asks an editor, publishes.
    Publishing: pipeline = sequential [drafter, editor, publisher]
}

#[tokio::test]
async fn inside_a_sequential_workflow_the_resumed_agent_goes_on_to_the_next() {
    let runner = Runner::builder(Publishing::new().unwrap())
        .checkpoint_store(InMemoryStore::new())
        .build();
    let before = DRAFTS.load(Ordering::SeqCst);
    assert_eq!(
        first_run(&runner, "p1").await,
        [
            "pipeline/drafter: a draft",
            r#"pipeline/drafter/editor: interrupt pipeline/drafter/editor "publish this draft?""#,
        ]
    );
    assert_eq!(
        resume(&runner, "p1", &[("pipeline/drafter/editor", json!("ok"))]).await,
        [
            "pipeline/drafter/editor: editor says \"ok\"",
            "pipeline/drafter/editor/publisher: published",
        ]
    );
    assert_eq!(
        DRAFTS.load(Ordering::SeqCst) - before,
        1,
        "the drafter is not run again"
    );
}

/// Writes numbered drafts.
#[agent]
async fn writer(cx: &AgentContext, input: AgentInput) {
    let drafts = input
        .messages
        .iter()
        .filter(|m| m.content.contains("draft"))
        .count();
    cx.say(format!("draft {}", drafts + 1));
}

/// Approves the second draft.
#[agent]
async fn critic(cx: &AgentContext, input: AgentInput) {
    if input.messages.iter().any(|m| m.content.contains("draft 2")) {
        cx.say("approved");
        cx.break_loop();
    } else {
        cx.say("again");
    }
}

flow! {
    /// Rewrites until the critic approves.
    Refining: refine = loop(max = 5) [writer, critic]
}

#[tokio::test]
async fn an_agent_fn_breaks_the_loop_it_runs_in() {
    let events: Vec<String> = Refining::new()
        .unwrap()
        .runner()
        .run("write")
        .map(|e| line(&e))
        .collect()
        .await;
    assert_eq!(
        events,
        [
            "refine/writer: draft 1",
            "refine/writer/critic: again",
            "refine/writer/critic/writer: draft 2",
            "refine/writer/critic/writer/critic: approved",
            r#"refine/writer/critic/writer/critic: => BreakLoop("critic")"#,
        ]
    );
}

/// Pays out, with a limit that needs approval above it.
#[agent(name = "payout")]
struct Payout {
    limit: u32,
}

#[agent]
impl Payout {
    async fn run(&self, cx: &AgentContext) {
        match (cx.is_resuming(), cx.resume_data()) {
            (false, _) => cx.interrupt_with_state(
                json!(format!("over the limit of ${}: approve?", self.limit)),
                json!(self.limit + 10),
            ),
            (true, Some(answer)) if answer == "yes" => {
                cx.say(format!("paid ${}", cx.saved_state().unwrap()))
            }
            (true, _) => cx.say("not paid"),
        }
    }
}

flow! {
    /// A payout desk holding its limit.
    Payouts: payout_desk = sequential [Payout(runtime)]
}

#[tokio::test]
async fn a_struct_agent_interrupts_and_resumes_too() {
    let runner = Runner::builder(
        Payouts::builder()
            .payout(Payout { limit: 100 })
            .build()
            .unwrap(),
    )
    .checkpoint_store(InMemoryStore::new())
    .build();
    assert_eq!(
        first_run(&runner, "s1").await,
        [r#"payout_desk/payout: interrupt payout_desk/payout "over the limit of $100: approve?""#]
    );
    assert_eq!(
        resume(&runner, "s1", &[("payout_desk/payout", json!("yes"))]).await,
        ["payout_desk/payout: paid $110"]
    );
}
