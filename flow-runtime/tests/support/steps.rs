//! The approval desk of the durable-turn tests: one turn of [`STEPS`] steps, each a call of the
//! `step` tool that interrupts for approval and, once approved, appends `N KEY` (the step and
//! the call's idempotency key) to a ledger file. A driver brings a thread to its end, and an
//! audit counts what the thread and the ledger hold.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use agentweave_runtime::store::RecordEnd;
use agentweave_runtime::{
    tool_fn_with_context, ChatModelAgent, ChatRequest, CheckpointError, FlowAgent, Message, Role,
    Runner, ScriptStep, ScriptedModel, ThreadError, ToolContext, TurnOutcome,
};
use serde_json::json;

use super::processes::{append, lines};
use agentweave_runtime::TurnRequest;

/// The steps of the turn.
pub const STEPS: u64 = 3;

/// The steps whose results a request already holds.
fn done_steps(r: &ChatRequest) -> u64 {
    r.messages
        .iter()
        .filter(|m| m.role == Role::Tool && m.content.starts_with("step "))
        .count() as u64
}

/// The desk: its model calls `step` with `n` = 0, 1, ... [`STEPS`] - 1, one call per reply,
/// then answers "all steps done". Each call interrupts for approval; approved, it appends
/// `n KEY` to `ledger` and returns `step n done`.
pub fn step_desk(ledger: PathBuf) -> FlowAgent {
    let tool = tool_fn_with_context(
        "step",
        "Does one step, after approval.",
        move |cx: ToolContext, args: serde_json::Value| {
            let ledger = ledger.clone();
            async move {
                let n = args["n"].as_u64().unwrap_or(u64::MAX);
                if cx.resume_data().is_none() {
                    return Err(cx.interrupt(json!(format!("approve step {n}"))));
                }
                append(&ledger, &format!("{n} {}", cx.idempotency_key()));
                Ok(format!("step {n} done"))
            }
        },
    );
    let mut model = ScriptedModel::rules();
    for n in 0..STEPS {
        model = model.when(
            move |r: &ChatRequest| done_steps(r) == n,
            ScriptStep::tool_call("step", json!({ "n": n })),
        );
    }
    let model = model.otherwise(ScriptStep::text("all steps done"));
    FlowAgent::new(
        ChatModelAgent::builder("desk", model)
            .tool(tool)
            .build()
            .unwrap(),
    )
}

/// Brings `thread` to the end of its turn: starts it if it has no record, else approves every
/// interrupt its last record waits on, until a turn completes. Returns the first error.
pub async fn drive(runner: &Runner, thread: &str) -> Result<(), ThreadError> {
    loop {
        let last = runner.thread(thread).records().await?.pop();
        let turn = match last.map(|r| r.end) {
            None => {
                runner
                    .turn(TurnRequest::new(thread, Message::user("go")))
                    .await?
            }
            Some(RecordEnd::Completed { .. }) => return Ok(()),
            Some(RecordEnd::Interrupted { interrupts, .. }) => {
                let approve: HashMap<String, serde_json::Value> = interrupts
                    .iter()
                    .map(|i| (i.id.to_string(), json!("yes")))
                    .collect();
                match runner.turn(TurnRequest::resume(thread, approve)).await {
                    Ok(turn) => turn,
                    // The thread was repaired behind interrupts it did not show yet: read it
                    // again.
                    Err(ThreadError::Checkpoint(CheckpointError::UnknownInterrupt { .. })) => {
                        continue
                    }
                    Err(e) => return Err(e),
                }
            }
        };
        match turn.finish().await {
            TurnOutcome::Completed { .. } => return Ok(()),
            TurnOutcome::Interrupted { .. } => {}
            TurnOutcome::Failed(e) => return Err(e),
        }
    }
}

/// What a thread and its ledger hold after a turn of [`step_desk`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Audit {
    /// Steps that ran (in the ledger) but are missing from the thread, or not in the thread
    /// at all, or an answer missing.
    pub losses: usize,
    /// Steps recorded twice in the thread, or paid twice (two idempotency keys in the ledger).
    pub doubles: usize,
    /// Records or ledger lines that do not read as they should.
    pub corrupt: usize,
}

/// Audits `thread` and its `ledger` (see [`Audit`]).
pub async fn audit(runner: &Runner, thread: &str, ledger: &Path) -> Audit {
    let mut audit = Audit::default();
    let messages = match runner.thread(thread).messages().await {
        Ok(messages) => messages,
        Err(_) => {
            audit.corrupt += 1;
            return audit;
        }
    };
    let mut keys: HashMap<u64, HashSet<String>> = HashMap::new();
    for line in lines(ledger) {
        match line
            .split_once(' ')
            .and_then(|(n, k)| Some((n.parse().ok()?, k)))
        {
            Some((n, key)) => {
                keys.entry(n).or_default().insert(key.to_owned());
            }
            None => audit.corrupt += 1,
        }
    }
    for n in 0..STEPS {
        let recorded = messages
            .iter()
            .filter(|m| {
                m.message.role == Role::Tool && m.message.content == format!("step {n} done")
            })
            .count();
        match recorded {
            0 => audit.losses += 1,
            1 => {}
            _ => audit.doubles += 1,
        }
        match keys.get(&n).map_or(0, HashSet::len) {
            0 => audit.losses += 1,
            1 => {}
            _ => audit.doubles += 1,
        }
    }
    let answers = messages
        .iter()
        .filter(|m| m.message.content == "all steps done")
        .count();
    match answers {
        0 => audit.losses += 1,
        1 => {}
        _ => audit.doubles += 1,
    }
    audit
}
