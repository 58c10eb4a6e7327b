// Its own test binary, not a module of tests/it: it re-executes its own test binary as a child
// process, naming a test by its name (`--exact`), which a module path would change.
//! Conversations: threads of turns kept in a store, routed back to the agent that answered,
//! with earlier turns reaching each agent through its context policy.

mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::store::{RecordEnd, RecordStart, ThreadStore};
use agentweave_runtime::RunnerBuilder;
use agentweave_runtime::{
    set_sub_agents, tool_fn, AgentEvent, ChatModelAgent, ContextPolicy, FileStore, FlowAgent,
    FnAgent, HistoryEntry, InMemoryStore, Message, MessageRef, Role, Runner, Sequential,
    ThreadError, ToolCall, ToolError, TurnOutcome, TurnRouting,
};
use agentweave_runtime::{ResumeRequest, TurnRequest};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct LogComplaint {
    /// What went wrong.
    summary: String,
}

/// triage => [complaint], both LLM agents on scripted models; complaint logs complaints with a
/// tool and ends with the exit tool.
fn desk(triage: &ScriptedModel, complaint: &ScriptedModel) -> FlowAgent {
    let triage = ChatModelAgent::builder("triage", triage.clone())
        .instruction("Route the customer.")
        .build()
        .unwrap();
    let complaint = ChatModelAgent::builder("complaint", complaint.clone())
        .instruction("Handle complaints.")
        .tool(tool_fn(
            "log_complaint",
            "Logs a complaint.",
            |a: LogComplaint| async move {
                Ok::<_, ToolError>(format!("complaint #1 logged: {}", a.summary))
            },
        ))
        .exit_tool(true)
        .build()
        .unwrap();
    set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(complaint)]).unwrap()
}

fn show(messages: &[MessageRef]) -> Vec<String> {
    messages
        .iter()
        .map(|m| {
            let mut s = format!("{}: {}", m.role, m.content);
            for c in &m.tool_calls {
                s.push_str(&format!(" [call {} {} {}]", c.id, c.name, c.arguments));
            }
            if let Some(id) = &m.tool_call_id {
                s.push_str(&format!(" [result of {id}]"));
            }
            s
        })
        .collect()
}

async fn run_turn(
    runner: &Runner,
    thread: &str,
    text: &str,
) -> (String, Vec<AgentEvent>, TurnOutcome) {
    let mut turn = runner
        .turn(TurnRequest::new(thread, Message::user(text)))
        .await
        .unwrap();
    let started = turn.started_at().to_string();
    let mut events = Vec::new();
    while let Some(e) = turn.next().await {
        events.push(e);
    }
    let outcome = turn.outcome().expect("the turn ended");
    (started, events, outcome)
}

/// Each request `model` received, shown: its system message (which must start with
/// `instruction`; the agent adds how to transfer) as `system: INSTRUCTION`, then the rest.
fn requests_of(model: &ScriptedModel, instruction: &str) -> Vec<Vec<String>> {
    model
        .requests()
        .iter()
        .map(|r| {
            let system = &r.messages[0];
            assert_eq!(system.role, Role::System);
            assert!(
                system.content.starts_with(instruction),
                "{}",
                system.content
            );
            let mut shown = vec![format!("system: {instruction}")];
            shown.extend(show(&r.messages[1..]));
            shown
        })
        .collect()
}

fn texts(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|l| (*l).to_owned()).collect()
}

#[tokio::test]
async fn three_turns_go_back_to_complaint_then_transfer_to_triage_and_each_agent_sees_exactly_its_input(
) {
    let triage = ScriptedModel::new([
        ScriptStep::transfer("complaint"),
        ScriptStep::text("Triage here: anything else?"),
    ]);
    let complaint = ScriptedModel::new([
        ScriptStep::tool_call("log_complaint", json!({"summary": "kettle broke"})),
        ScriptStep::exit("Logged as complaint #1."),
        ScriptStep::text("Complaint #1 is with our team."),
        ScriptStep::transfer("triage"),
    ]);
    let runner = Runner::builder(desk(&triage, &complaint))
        .thread_store(InMemoryStore::new())
        .build();

    // Turn 1 starts at the root and transfers to complaint, which logs and exits.
    let (started, events, outcome) = run_turn(&runner, "ada", "My kettle broke.").await;
    assert_eq!(started, "triage");
    assert_eq!(
        support::lines(&events),
        [
            r#"triage@triage:  [calls transfer_to_agent {"agent_name":"complaint"}]"#,
            "triage@triage: successfully transferred to agent [complaint] => transfer complaint",
            r#"complaint@triage/complaint:  [calls log_complaint {"summary":"kettle broke"}]"#,
            "complaint@triage/complaint: complaint #1 logged: kettle broke",
            r#"complaint@triage/complaint:  [calls exit {"final_result":"Logged as complaint #1."}]"#,
            "complaint@triage/complaint: Logged as complaint #1. => exit",
        ]
    );
    let TurnOutcome::Completed {
        answered_by,
        answer,
        version,
    } = outcome
    else {
        panic!("turn 1 completes: {outcome:?}")
    };
    assert_eq!(&*answered_by, "complaint");
    assert_eq!(answer.unwrap().content, "Logged as complaint #1.");
    assert_eq!(version, 1);

    // Turn 2 goes back to complaint, which answered: its events run at `complaint`.
    let (started, events, _) = run_turn(&runner, "ada", "Any news?").await;
    assert_eq!(started, "complaint");
    assert_eq!(
        support::lines(&events),
        ["complaint@complaint: Complaint #1 is with our team."]
    );

    // Turn 3 starts at complaint again, which transfers back up to triage.
    let (started, events, _) = run_turn(&runner, "ada", "I also want a refund.").await;
    assert_eq!(started, "complaint");
    assert_eq!(
        support::lines(&events),
        [
            r#"complaint@complaint:  [calls transfer_to_agent {"agent_name":"triage"}]"#,
            "complaint@complaint: successfully transferred to agent [triage] => transfer triage",
            "triage@complaint/triage: Triage here: anything else?",
        ]
    );

    // Every input, exactly. Another agent's tool calls arrive as context, never as calls of
    // tools the agent does not have; its own calls arrive as they were.
    let triage_saw = requests_of(&triage, "Route the customer.");
    assert_eq!(
        triage_saw,
        [
            texts(&["system: Route the customer.", "user: My kettle broke."]),
            texts(&[
                "system: Route the customer.",
                "user: My kettle broke.",
                r#"assistant:  [call call_1_1 transfer_to_agent {"agent_name":"complaint"}]"#,
                "tool: successfully transferred to agent [complaint] [result of call_1_1]",
                r#"user: For context: [complaint] called tool: `log_complaint` with arguments: {"summary":"kettle broke"}."#,
                "user: For context: [complaint] `log_complaint` tool returned result: complaint #1 logged: kettle broke.",
                r#"user: For context: [complaint] called tool: `exit` with arguments: {"final_result":"Logged as complaint #1."}."#,
                "user: For context: [complaint] `exit` tool returned result: Logged as complaint #1..",
                "user: Any news?",
                "user: For context: [complaint] said: Complaint #1 is with our team..",
                "user: I also want a refund.",
                r#"user: For context: [complaint] called tool: `transfer_to_agent` with arguments: {"agent_name":"triage"}."#,
                "user: For context: [complaint] `transfer_to_agent` tool returned result: successfully transferred to agent [triage].",
            ]),
        ]
    );
    let turn1_prefix = [
        "system: Handle complaints.",
        "user: My kettle broke.",
        r#"user: For context: [triage] called tool: `transfer_to_agent` with arguments: {"agent_name":"complaint"}."#,
        "user: For context: [triage] `transfer_to_agent` tool returned result: successfully transferred to agent [complaint].",
    ];
    let logged = [
        r#"assistant:  [call call_1_1 log_complaint {"summary":"kettle broke"}]"#,
        "tool: complaint #1 logged: kettle broke [result of call_1_1]",
    ];
    let exited = [
        r#"assistant:  [call call_2_1 exit {"final_result":"Logged as complaint #1."}]"#,
        "tool: Logged as complaint #1. [result of call_2_1]",
    ];
    let complaint_saw = requests_of(&complaint, "Handle complaints.");
    assert_eq!(
        complaint_saw,
        [
            texts(&turn1_prefix),
            texts(&[&turn1_prefix[..], &logged[..]].concat()),
            texts(
                &[
                    &turn1_prefix[..],
                    &logged[..],
                    &exited[..],
                    &["user: Any news?"]
                ]
                .concat()
            ),
            texts(
                &[
                    &turn1_prefix[..],
                    &logged[..],
                    &exited[..],
                    &[
                        "user: Any news?",
                        "assistant: Complaint #1 is with our team.",
                        "user: I also want a refund.",
                    ],
                ]
                .concat()
            ),
        ]
    );

    // The thread lists what was said, turn by turn.
    let messages = runner.thread("ada").messages().await.unwrap();
    let listed: Vec<(u64, String, String)> = messages
        .iter()
        .map(|m| (m.turn, m.agent_name.to_string(), m.message.content.clone()))
        .collect();
    assert_eq!(listed.len(), (1 + 6) + (1 + 1) + (1 + 3));
    assert_eq!(listed[0], (0, String::new(), "My kettle broke.".into()));
    assert_eq!(listed[7], (1, String::new(), "Any news?".into()));
    assert_eq!(
        listed[8],
        (
            1,
            "complaint".into(),
            "Complaint #1 is with our team.".into()
        )
    );
    assert_eq!(
        listed[12],
        (2, "triage".into(), "Triage here: anything else?".into())
    );
    let records = runner.thread("ada").records().await.unwrap();
    let starts: Vec<String> = records.iter().map(|r| r.started_at.to_string()).collect();
    assert_eq!(starts, ["triage", "complaint", "complaint"]);
}

/// An agent that says `text` and records every input it gets.
fn say(name: &'static str, text: &'static str, seen: &Inputs) -> FlowAgent {
    let seen = Arc::clone(seen);
    FlowAgent::new(FnAgent::new(name, move |cx, input| {
        seen.lock().unwrap().push((name, show(&input.messages)));
        async move {
            cx.say(text);
            Ok(())
        }
    }))
}

/// An agent that transfers to `target` on its first run and says `text` afterwards.
fn hop(name: &'static str, target: &'static str, text: &'static str, seen: &Inputs) -> FlowAgent {
    let seen = Arc::clone(seen);
    FlowAgent::new(FnAgent::new(name, move |cx, input| {
        let first = {
            let mut seen = seen.lock().unwrap();
            seen.push((name, show(&input.messages)));
            seen.iter().filter(|(n, _)| *n == name).count() == 1
        };
        async move {
            if first {
                cx.transfer(target);
            } else {
                cx.say(text);
            }
            Ok(())
        }
    }))
}

type Inputs = Arc<Mutex<Vec<(&'static str, Vec<String>)>>>;

async fn drain(runner: &Runner, thread: &str, text: &str) -> (String, Vec<String>) {
    let (started, events, outcome) = run_turn(runner, thread, text).await;
    assert!(
        matches!(outcome, TurnOutcome::Completed { .. }),
        "{outcome:?}"
    );
    (started, support::lines(&events))
}

#[tokio::test]
async fn with_root_routing_every_turn_starts_at_the_root() {
    let seen = Inputs::default();
    let tree = set_sub_agents(
        hop("triage", "refund", "triage again", &seen),
        [say("refund", "refunded", &seen)],
    )
    .unwrap();
    let runner = Runner::builder(tree)
        .thread_store(InMemoryStore::new())
        .turn_routing(TurnRouting::Root)
        .build();
    let (started, _) = drain(&runner, "t", "one").await;
    assert_eq!(started, "triage");
    let (started, lines) = drain(&runner, "t", "two").await;
    assert_eq!(started, "triage");
    assert_eq!(lines, ["triage@triage: triage again"]);
}

#[tokio::test]
async fn a_workflow_child_that_answered_starts_its_workflow_again() {
    let seen = Inputs::default();
    let pipeline = Sequential::new("pipeline")
        .with_sub_agents([
            say("draft", "drafted", &seen),
            say("review", "reviewed", &seen),
        ])
        .unwrap();
    let tree = set_sub_agents(hop("desk", "pipeline", "desk", &seen), [pipeline]).unwrap();
    let runner = Runner::builder(tree)
        .thread_store(InMemoryStore::new())
        .build();
    let (started, lines) = drain(&runner, "w", "write it").await;
    assert_eq!(started, "desk");
    assert_eq!(
        lines[2..],
        [
            "draft@desk/pipeline/draft: drafted",
            "review@desk/pipeline/draft/review: reviewed",
        ]
    );
    // `review` answered, but it may not be re-entered: the turn starts its workflow again.
    let (started, lines) = drain(&runner, "w", "again").await;
    assert_eq!(started, "pipeline");
    assert_eq!(
        lines,
        [
            "draft@pipeline/draft: drafted",
            "review@pipeline/draft/review: reviewed",
        ]
    );
}

/// triage => [complaint => [escalation]] on a thread store, complaint barred from its parent
/// if `barred`; each hops on, escalation answers `a manager calls you`.
fn escalation_desk(barred: bool) -> Runner {
    let seen = Inputs::default();
    let complaint =
        hop("complaint", "escalation", "complaint", &seen).disallow_transfer_to_parent(barred);
    let complaint =
        set_sub_agents(complaint, [say("escalation", "a manager calls you", &seen)]).unwrap();
    let tree = set_sub_agents(
        hop("triage", "complaint", "triage again", &seen),
        [complaint],
    )
    .unwrap();
    Runner::builder(tree)
        .thread_store(InMemoryStore::new())
        .build()
}

#[tokio::test]
async fn an_agent_below_a_barred_link_is_not_re_entered_so_the_root_stays_reachable() {
    // triage => [complaint(no_parent) => [escalation]]: from escalation the conversation could
    // never get back to triage, so the turn after escalation answered starts at triage.
    let runner = escalation_desk(true);
    let (_, lines) = drain(&runner, "e", "bad service").await;
    assert_eq!(
        lines.last().unwrap(),
        "escalation@triage/complaint/escalation: a manager calls you"
    );
    let (started, lines) = drain(&runner, "e", "hello?").await;
    assert_eq!(started, "triage");
    assert_eq!(lines, ["triage@triage: triage again"]);

    // Without the barred link, escalation is re-entered.
    let runner = escalation_desk(false);
    drain(&runner, "e", "bad service").await;
    let (started, lines) = drain(&runner, "e", "hello?").await;
    assert_eq!(started, "escalation");
    assert_eq!(lines, ["escalation@escalation: a manager calls you"]);
}

/// A thread of `turns` turns on `bot`, each `user N` answered `bot N`.
async fn bot_thread(policy: ContextPolicy, turns: usize) -> Vec<Vec<String>> {
    let seen = Inputs::default();
    let counter = Arc::new(Mutex::new(0));
    let inputs = Arc::clone(&seen);
    let bot = FnAgent::new("bot", move |cx, input| {
        inputs.lock().unwrap().push(("bot", show(&input.messages)));
        let n = {
            let mut c = counter.lock().unwrap();
            *c += 1;
            *c
        };
        async move {
            cx.send(Message::assistant_tool_calls(
                "",
                vec![ToolCall::new(format!("c{n}"), "lookup", "{}")],
            ));
            cx.send(Message::tool(
                format!("found {n}"),
                format!("c{n}"),
                "lookup",
            ));
            cx.say(format!("bot {n}"));
            Ok(())
        }
    });
    let helper = FnAgent::new("helper", |cx, _| async move {
        cx.say("helper here");
        Ok(())
    });
    // The user talks to `bot` under a root that hands over once and then stays out.
    let root = FnAgent::new("root", |cx, _| async move {
        cx.send(Message::assistant("routing you"));
        cx.transfer("bot");
        Ok(())
    });
    let tree = set_sub_agents(
        FlowAgent::new(root),
        [FlowAgent::new(bot).context(policy), FlowAgent::new(helper)],
    )
    .unwrap();
    let runner = Runner::builder(tree)
        .thread_store(InMemoryStore::new())
        .build();
    for n in 1..=turns {
        drain(&runner, "p", &format!("user {n}")).await;
    }
    let seen = seen.lock().unwrap();
    seen.iter().map(|(_, input)| input.clone()).collect()
}

#[tokio::test]
async fn the_default_policy_gives_every_earlier_turn_with_other_agents_as_context() {
    let inputs = bot_thread(ContextPolicy::Rewrite, 2).await;
    assert_eq!(
        inputs[1],
        [
            "user: user 1",
            "user: For context: [root] said: routing you.",
            r#"user: For context: [root] called tool: `transfer_to_agent` with arguments: {"agent_name":"bot"}."#,
            "user: For context: [root] `transfer_to_agent` tool returned result: successfully transferred to agent [bot].",
            "assistant:  [call c1 lookup {}]",
            "tool: found 1 [result of c1]",
            "assistant: bot 1",
            "user: user 2",
        ]
    );
}

#[tokio::test]
async fn last_turns_shows_only_the_latest_turns() {
    let inputs = bot_thread(ContextPolicy::LastTurns(2), 3).await;
    assert_eq!(
        inputs[2],
        [
            "user: user 2",
            "assistant:  [call c2 lookup {}]",
            "tool: found 2 [result of c2]",
            "assistant: bot 2",
            "user: user 3",
        ]
    );
    let inputs = bot_thread(ContextPolicy::LastTurns(1), 3).await;
    assert_eq!(inputs[2], ["user: user 3"]);
}

#[tokio::test]
async fn user_input_only_shows_what_the_user_said_in_every_turn() {
    let inputs = bot_thread(ContextPolicy::UserInputOnly, 3).await;
    assert_eq!(inputs[2], ["user: user 1", "user: user 2", "user: user 3"]);
}

#[tokio::test]
async fn a_custom_digest_stands_for_the_older_turns() {
    // A digest computed afresh at each input (the recorded, model-written summary is a
    // ContextBudget's): turns before the last two become one system message, the rest are
    // rewritten as by default.
    let policy = ContextPolicy::custom(|agent: &str, entries: &[HistoryEntry]| {
        let last = entries.iter().map(|e| e.turn).max().unwrap_or(0);
        let split = entries.partition_point(|e| e.turn + 1 < last);
        let (older, kept) = entries.split_at(split);
        let mut out: Vec<MessageRef> = Vec::new();
        if !older.is_empty() {
            let turns: std::collections::BTreeSet<u64> = older.iter().map(|e| e.turn).collect();
            out.push(Arc::new(Message::system(format!(
                "Summary for {agent}: {} messages of turns {turns:?}.",
                older.len()
            ))));
        }
        out.extend(ContextPolicy::Rewrite.apply(agent, kept)?);
        Ok(out)
    });
    let inputs = bot_thread(policy, 3).await;
    // Turn 1 has no older turns: no summary.
    assert_eq!(inputs[0].len(), 4);
    assert_eq!(inputs[0][0], "user: user 1");
    assert_eq!(
        inputs[2],
        [
            "system: Summary for bot: 7 messages of turns {0}.",
            "user: user 2",
            "assistant:  [call c2 lookup {}]",
            "tool: found 2 [result of c2]",
            "assistant: bot 2",
            "user: user 3",
        ]
    );
}

#[tokio::test]
async fn a_custom_rewriter_sees_the_whole_thread_with_turn_numbers() {
    let policy = ContextPolicy::custom(|_agent: &str, entries: &[HistoryEntry]| {
        Ok(entries
            .iter()
            .filter(|e| e.message.role == Role::Assistant && !e.message.content.is_empty())
            .map(|e| {
                Arc::new(Message::user(format!(
                    "turn {}: {}",
                    e.turn, e.message.content
                )))
            })
            .collect::<Vec<MessageRef>>())
    });
    let inputs = bot_thread(policy, 3).await;
    assert_eq!(
        inputs[2],
        [
            "user: turn 0: routing you",
            "user: turn 0: bot 1",
            "user: turn 1: bot 2"
        ]
    );
}

/// A desk for the restart test: triage hands over to refund on the first turn; refund answers
/// with how many messages it was given.
fn restart_desk() -> FlowAgent {
    let triage = FnAgent::new("triage", |cx, _| async move {
        cx.transfer("refund");
        Ok(())
    });
    let refund = FnAgent::new("refund", |cx, input| async move {
        let last = input
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        cx.say(format!(
            "refund saw {} messages, last: {last}",
            input.messages.len()
        ));
        Ok(())
    });
    set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refund)]).unwrap()
}

/// A runner of the restart desk on `backend` (`file:DIR`, `sqlite:PATH`, `postgres:URL`).
async fn restart_runner(backend: &str) -> Runner {
    support::processes::runner_on(backend, restart_desk()).await
}

/// Run as a child process by the `*_restart_between_turns_loses_nothing` tests: one turn on
/// the thread in the given store, then exit.
#[tokio::test]
async fn restart_child_runs_one_turn() {
    let (Ok(backend), Ok(text)) = (
        std::env::var("THREADS_RESTART_BACKEND"),
        std::env::var("THREADS_RESTART_TEXT"),
    ) else {
        return; // Not a child run.
    };
    let runner = restart_runner(&backend).await;
    let turn = runner
        .turn(TurnRequest::new("restart", Message::user(text)))
        .await
        .unwrap();
    println!("started at {}", turn.started_at());
    let answer = turn.final_output().await.unwrap().unwrap();
    println!("answer: {}", answer.content);
}

/// Two turns, each in a new process, then a third process reads, lists and deletes.
async fn restart_between_turns_loses_nothing(backend: &str) {
    let turn_in_new_process = |text: &str| {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "restart_child_runs_one_turn",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("THREADS_RESTART_BACKEND", backend)
            .env("THREADS_RESTART_TEXT", text)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let first = turn_in_new_process("refund please");
    assert!(first.contains("started at triage"), "{first}");
    assert!(first.contains("answer: refund saw 3 messages, last: For context: [triage] `transfer_to_agent` tool returned result: successfully transferred to agent [refund]."), "{first}");
    let second = turn_in_new_process("how long will it take?");
    assert!(second.contains("started at refund"), "{second}");
    // user 1, triage's two transfer messages, refund's answer, user 2.
    assert!(
        second.contains("answer: refund saw 5 messages, last: how long will it take?"),
        "{second}"
    );

    // A third process (this one) reads everything the two recorded.
    let runner = restart_runner(backend).await;
    let messages = runner.thread("restart").messages().await.unwrap();
    let listed: Vec<String> = messages
        .iter()
        .map(|m| format!("{}|{}|{}", m.turn, m.run_path, m.message.content))
        .collect();
    assert_eq!(
        listed,
        [
            "0||refund please",
            "0|triage|",
            "0|triage|successfully transferred to agent [refund]",
            "0|triage/refund|refund saw 3 messages, last: For context: [triage] `transfer_to_agent` tool returned result: successfully transferred to agent [refund].",
            "1||how long will it take?",
            "1|refund|refund saw 5 messages, last: how long will it take?",
        ]
    );
    assert_eq!(runner.threads().await.unwrap(), ["restart"]);
    assert!(runner.thread("restart").delete().await.unwrap());
    assert!(runner
        .thread("restart")
        .messages()
        .await
        .unwrap()
        .is_empty());
    assert!(runner.threads().await.unwrap().is_empty());
}

fn restart_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "agentflow-threads-restart-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[tokio::test]
async fn a_restart_between_turns_loses_nothing() {
    let dir = restart_dir("file");
    restart_between_turns_loses_nothing(&format!("file:{}", dir.display())).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn sqlite_restart_between_turns_loses_nothing() {
    let dir = restart_dir("sqlite");
    restart_between_turns_loses_nothing(&format!("sqlite:{}", dir.join("threads.db").display()))
        .await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_restart_between_turns_loses_nothing() {
    let Some(url) = agentweave_runtime::testing::fresh_postgres_database("restart").await else {
        return;
    };
    restart_between_turns_loses_nothing(&format!("postgres:{url}")).await;
}

/// An agent that waits for `gate` before answering, so two turns can overlap.
fn gated(gate: Arc<tokio::sync::Semaphore>) -> FlowAgent {
    FlowAgent::new(FnAgent::new("bot", move |cx, input| {
        let gate = Arc::clone(&gate);
        async move {
            gate.acquire().await.unwrap().forget();
            let last = input.messages.last().unwrap().content.clone();
            cx.say(format!("answer to {last}"));
            Ok(())
        }
    }))
}

#[tokio::test]
async fn a_second_turn_on_a_busy_thread_is_refused_in_one_runner() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let runner = Runner::builder(gated(Arc::clone(&gate)))
        .thread_store(InMemoryStore::new())
        .build();
    let first = runner
        .turn(TurnRequest::new("busy", Message::user("one")))
        .await
        .unwrap();
    let second = runner
        .turn(TurnRequest::new("busy", Message::user("two")))
        .await;
    assert!(
        matches!(&second, Err(ThreadError::Busy { id }) if id == "busy"),
        "{second:?}"
    );
    // Another thread is not held up.
    gate.add_permits(1);
    let other = runner
        .turn(TurnRequest::new("other", Message::user("hi")))
        .await
        .unwrap();
    assert!(other.final_output().await.is_ok());
    gate.add_permits(1);
    first.final_output().await.unwrap();
    // Once the first turn ended, the next one runs.
    gate.add_permits(1);
    let next = runner
        .turn(TurnRequest::new("busy", Message::user("two")))
        .await
        .unwrap();
    assert_eq!(
        next.final_output().await.unwrap().unwrap().content,
        "answer to two"
    );
}

/// Like `gated`, counting how many times the agent ran.
fn counted(gate: Arc<tokio::sync::Semaphore>, runs: Arc<AtomicUsize>) -> FlowAgent {
    FlowAgent::new(FnAgent::new("bot", move |cx, input| {
        let gate = Arc::clone(&gate);
        let runs = Arc::clone(&runs);
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            gate.acquire().await.unwrap().forget();
            let last = input.messages.last().unwrap().content.clone();
            cx.say(format!("answer to {last}"));
            Ok(())
        }
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_from_another_runner_on_a_busy_thread_is_refused_before_it_runs() {
    for trial in 0..20 {
        let store = InMemoryStore::new();
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let runs = Arc::new(AtomicUsize::new(0));
        // Two runners stand for two processes sharing one store; they start at once.
        let start = |text: &'static str| {
            let runner = Runner::builder(counted(Arc::clone(&gate), Arc::clone(&runs)))
                .thread_store(store.clone())
                .build();
            tokio::spawn(async move {
                let turn = runner
                    .turn(TurnRequest::new("race", Message::user(text)))
                    .await;
                (text, turn)
            })
        };
        let (a, b) = tokio::join!(start("from a"), start("from b"));
        let (won, turn) = match (a.unwrap(), b.unwrap()) {
            ((won, Ok(turn)), (_, Err(lost))) | ((_, Err(lost)), (won, Ok(turn))) => {
                assert!(
                    matches!(&lost, ThreadError::Busy { id } if id == "race"),
                    "trial {trial}: {lost}"
                );
                (won, turn)
            }
            other => panic!("trial {trial}: exactly one turn starts: {other:?}"),
        };
        gate.add_permits(1);
        assert!(matches!(turn.finish().await, TurnOutcome::Completed { .. }));
        // The refused turn ran nothing: the agent ran once.
        assert_eq!(runs.load(Ordering::SeqCst), 1, "trial {trial}");
        let records = store.read("race", 0..u64::MAX).await.unwrap();
        assert_eq!(records.len(), 1);
        let RecordStart::Turn { input } = &records[0].start else {
            panic!("a turn record")
        };
        assert_eq!(input[0].content, won);
        assert_eq!(
            records[0].events[0].message.as_ref().unwrap().content,
            format!("answer to {won}")
        );
        // Once the turn ended, the thread is free for the next one, from any runner.
        let next = Runner::builder(counted(Arc::clone(&gate), Arc::clone(&runs)))
            .thread_store(store.clone())
            .build();
        gate.add_permits(1);
        let turn = next
            .turn(TurnRequest::new("race", Message::user("next")))
            .await
            .unwrap();
        assert_eq!(turn.number(), 1);
        turn.finish().await;
    }
}

#[tokio::test]
async fn a_turn_whose_lease_ran_out_is_not_recorded_once_another_turn_took_the_thread() {
    let store = InMemoryStore::new();
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let slow = Runner::builder(gated(Arc::clone(&gate)))
        .thread_store(store.clone())
        .lease(Duration::from_millis(40))
        .build();
    let other = Runner::builder(gated(Arc::clone(&gate)))
        .thread_store(store.clone())
        .build();
    // The slow turn holds the thread but goes silent past its lease.
    let stalled = slow
        .turn(TurnRequest::new("t", Message::user("from slow")))
        .await
        .unwrap();
    let mut taken = None;
    for _ in 0..500 {
        match other
            .turn(TurnRequest::new("t", Message::user("from other")))
            .await
        {
            Ok(turn) => {
                taken = Some(turn);
                break;
            }
            Err(ThreadError::Busy { .. }) => tokio::time::sleep(Duration::from_millis(10)).await,
            Err(e) => panic!("{e}"),
        }
    }
    let taken = taken.expect("the silent turn's lease was never taken over");
    gate.add_permits(1);
    assert!(matches!(
        taken.finish().await,
        TurnOutcome::Completed { .. }
    ));
    // The silent turn wakes up: it is refused (its lease is gone, and the thread moved on).
    gate.add_permits(1);
    let outcome = stalled.finish().await;
    assert!(
        matches!(
            &outcome,
            TurnOutcome::Failed(ThreadError::LeaseLost { .. } | ThreadError::Conflict { .. })
        ),
        "{outcome:?}"
    );
    let records = store.read("t", 0..u64::MAX).await.unwrap();
    assert_eq!(records.len(), 1);
    let RecordStart::Turn { input } = &records[0].start else {
        panic!("a turn record")
    };
    assert_eq!(input[0].content, "from other");
}

#[tokio::test]
async fn a_cancelled_turn_leaves_the_thread_as_it_was() {
    let store = InMemoryStore::new();
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let runner = Runner::builder(gated(Arc::clone(&gate)))
        .thread_store(store.clone())
        .build();
    gate.add_permits(1);
    runner
        .turn(TurnRequest::new("c", Message::user("one")))
        .await
        .unwrap()
        .finish()
        .await;
    let before = store.read("c", 0..u64::MAX).await.unwrap();
    assert_eq!(before.len(), 1);

    // Cancelled while the agent runs.
    let mut turn = runner
        .turn(TurnRequest::new("c", Message::user("two")))
        .await
        .unwrap();
    let polled = futures::poll!(turn.next());
    assert!(polled.is_pending());
    drop(turn);
    // Cancelled after its answer, before the end of its stream.
    gate.add_permits(1);
    let mut turn = runner
        .turn(TurnRequest::new("c", Message::user("three")))
        .await
        .unwrap();
    let answer = turn.next().await.unwrap();
    assert_eq!(answer.message_output().unwrap().content, "answer to three");
    drop(turn);

    assert_eq!(store.read("c", 0..u64::MAX).await.unwrap(), before);
    // The thread serves the next turn as if the cancelled ones never happened.
    gate.add_permits(1);
    let turn = runner
        .turn(TurnRequest::new("c", Message::user("four")))
        .await
        .unwrap();
    assert_eq!(turn.number(), 1);
    turn.finish().await;
    let messages = runner.thread("c").messages().await.unwrap();
    let texts: Vec<&str> = messages
        .iter()
        .map(|m| m.message.content.as_str())
        .collect();
    assert_eq!(texts, ["one", "answer to one", "four", "answer to four"]);
}

#[tokio::test]
async fn a_failed_turn_records_nothing_and_says_why() {
    let store = InMemoryStore::new();
    let bot = FnAgent::new("bot", |cx, input| async move {
        cx.say("partial answer");
        if input.messages.last().unwrap().content == "fail" {
            return Err(agentweave_runtime::AgentError::failed(
                "bot",
                "the backend is down",
            ));
        }
        Ok(())
    });
    let runner = Runner::builder(FlowAgent::new(bot))
        .thread_store(store.clone())
        .build();
    runner
        .turn(TurnRequest::new("f", Message::user("ok")))
        .await
        .unwrap()
        .finish()
        .await;
    let error = runner
        .turn(TurnRequest::new("f", Message::user("fail")))
        .await
        .unwrap()
        .final_output()
        .await
        .unwrap_err();
    assert!(
        matches!(error, ThreadError::TurnFailed { turn: 1, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("the backend is down"), "{error}");
    assert!(
        error.to_string().contains("the thread is as it was"),
        "{error}"
    );
    assert_eq!(store.read("f", 0..u64::MAX).await.unwrap().len(), 1);
}

/// `approver` asks for approval (interrupt), and on resume says what it was told.
fn approvals() -> FlowAgent {
    let approver = FnAgent::new("approver", |cx, _| async move {
        cx.say("checking");
        cx.interrupt(json!("approve the refund?"));
        Ok(())
    })
    .on_resume(|cx, _input, info| async move {
        match info.data().and_then(|d| d.as_bool()) {
            Some(true) => cx.say("refund sent"),
            Some(false) => cx.say("refund declined"),
            None => cx.interrupt(json!("still waiting")),
        }
        Ok(())
    });
    let front = FnAgent::new("front", |cx, _| async move {
        cx.transfer("approver");
        Ok(())
    });
    set_sub_agents(FlowAgent::new(front), [FlowAgent::new(approver)]).unwrap()
}

#[tokio::test]
async fn an_interrupt_inside_a_turn_is_resumed_through_the_thread() {
    let store = InMemoryStore::new();
    let runner = Runner::builder(approvals()).stores(store.clone()).build();
    let (started, events, outcome) = run_turn(&runner, "h", "refund order 42").await;
    assert_eq!(started, "front");
    let TurnOutcome::Interrupted {
        checkpoint_id,
        interrupts,
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    assert!(checkpoint_id.starts_with("h.turn-0."), "{checkpoint_id}");
    assert_eq!(interrupts[0].id, "front/approver");
    // The interrupt reaches the caller last, once the thread has recorded it.
    assert!(events.last().unwrap().is_interrupt());
    let head = store.head("h").await.unwrap().unwrap();
    assert!(matches!(head.last.end, RecordEnd::Interrupted { .. }));

    // A new message waits for the resume.
    let refused = runner
        .turn(TurnRequest::new("h", Message::user("hello?")))
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, ThreadError::AwaitingResume { turn: 0, interrupts, .. } if interrupts == "front/approver"),
        "{refused}"
    );

    // Resumed without data it interrupts again; the thread records that too.
    let again = runner.turn(TurnRequest::resume("h", [])).await.unwrap();
    assert_eq!(again.started_at().to_string(), "front");
    assert!(matches!(
        again.finish().await,
        TurnOutcome::Interrupted { .. }
    ));

    let resumed = runner
        .turn(TurnRequest::resume(
            "h",
            HashMap::from([("front/approver".to_owned(), json!(true))]),
        ))
        .await
        .unwrap();
    let mut resumed = resumed;
    let mut lines = Vec::new();
    while let Some(e) = resumed.next().await {
        lines.push(support::line(&e));
    }
    assert_eq!(lines, ["approver@front/approver: refund sent"]);
    let TurnOutcome::Completed {
        answered_by,
        answer,
        version,
    } = resumed.outcome().unwrap()
    else {
        panic!()
    };
    assert_eq!(
        (&*answered_by, answer.unwrap().content.as_str(), version),
        ("approver", "refund sent", 3)
    );

    // One turn in three records: the start and its two continuations.
    let records = runner.thread("h").records().await.unwrap();
    assert_eq!(
        records.iter().map(|r| r.turn).collect::<Vec<_>>(),
        [0, 0, 0]
    );
    // A continuation interrupted again writes the child of the checkpoint it claimed, under the
    // same id: the store keeps the lineage in the id's history.
    let RecordEnd::Interrupted {
        checkpoint_id: second,
        ..
    } = &records[1].end
    else {
        panic!("the first resume interrupted again")
    };
    assert_eq!(*second, checkpoint_id);
    let history = agentweave_runtime::CheckpointStore::history(&store, &checkpoint_id)
        .await
        .unwrap();
    // The first part, its continuation interrupted again, and the finished continuation.
    assert_eq!(
        history
            .iter()
            .map(|m| (m.version, m.parent, m.state))
            .collect::<Vec<_>>(),
        [
            (1, None, agentweave_runtime::store::CheckpointState::Resumed),
            (
                2,
                Some(1),
                agentweave_runtime::store::CheckpointState::Resumed
            ),
            (
                3,
                Some(2),
                agentweave_runtime::store::CheckpointState::Finished
            ),
        ],
        "{history:?}"
    );
    assert!(
        matches!(&records[1].start, RecordStart::Resume { checkpoint_id: c, .. } if *c == checkpoint_id)
    );
    assert!(
        matches!(&records[2].start, RecordStart::Resume { checkpoint_id: c, targets } if c == second && targets["front/approver"] == json!(true))
    );
    // The resumed checkpoint is spent: resuming it directly runs nothing.
    assert!(matches!(
        runner.resume(ResumeRequest::new(second, [])).await,
        Err(agentweave_runtime::CheckpointError::AlreadyResumed { .. })
    ));
    let texts: Vec<String> = runner
        .thread("h")
        .messages()
        .await
        .unwrap()
        .iter()
        .map(|m| format!("{}:{}", m.agent_name, m.message.content))
        .collect();
    assert_eq!(
        texts,
        [
            ":refund order 42",
            "front:",
            "front:successfully transferred to agent [approver]",
            "approver:checking",
            "approver:refund sent",
        ]
    );
    // Nothing left to resume; the next turn goes back to approver.
    assert!(matches!(
        runner.turn(TurnRequest::resume("h", [])).await,
        Err(ThreadError::NotInterrupted { .. })
    ));
    let next = runner
        .turn(TurnRequest::new("h", Message::user("thanks")))
        .await
        .unwrap();
    assert_eq!(next.started_at().to_string(), "approver");
}

#[tokio::test]
async fn bad_thread_ids_and_missing_stores_are_typed_errors() {
    let runner = Runner::new(restart_desk());
    assert!(matches!(
        runner.turn(TurnRequest::new("t", Message::user("x"))).await,
        Err(ThreadError::NoStore)
    ));
    let runner = RunnerBuilder::from(runner)
        .thread_store(InMemoryStore::new())
        .build();
    for id in ["", "../x", "/abs", "a\0b", ".hidden", &"x".repeat(101)] {
        let error = runner
            .turn(TurnRequest::new(id, Message::user("x")))
            .await
            .unwrap_err();
        assert!(
            matches!(error, ThreadError::InvalidId { .. }),
            "{id:?}: {error}"
        );
    }
    // An interrupt with no checkpoint store fails the turn; the thread is left as it was.
    let runner = Runner::builder(approvals())
        .thread_store(InMemoryStore::new())
        .build();
    let outcome = runner
        .turn(TurnRequest::new("n", Message::user("x")))
        .await
        .unwrap()
        .finish()
        .await;
    assert!(
        matches!(&outcome, TurnOutcome::Failed(ThreadError::Checkpoint(_))),
        "{outcome:?}"
    );
    assert!(runner.thread("n").records().await.unwrap().is_empty());
}

#[tokio::test]
async fn file_store_appends_are_compare_and_swap_across_handles() {
    let dir = std::env::temp_dir().join(format!("agentflow-threads-cas-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let a = FileStore::new(&dir).unwrap();
    let b = FileStore::new(&dir).unwrap();
    let record = |turn| agentweave_runtime::store::ThreadRecord {
        seq: 0,
        turn,
        at_ms: 0,
        start: RecordStart::Turn {
            input: vec![Message::user(format!("turn {turn}"))],
        },
        started_at: agentweave_runtime::RunPath::root("bot"),
        events: vec![],
        end: RecordEnd::Completed {
            answered_by: "bot".into(),
        },
        by: None,
        values: None,
        run_id: None,
        sealed: None,
    };
    assert_eq!(a.append("t", 0, record(0)).await.unwrap(), 1);
    assert!(matches!(
        b.append("t", 0, record(0)).await,
        Err(ThreadError::Conflict {
            expected: 0,
            found: 1,
            ..
        })
    ));
    assert!(matches!(
        b.append("t", 5, record(1)).await,
        Err(ThreadError::Conflict {
            expected: 5,
            found: 1,
            ..
        })
    ));
    assert_eq!(b.append("t", 1, record(1)).await.unwrap(), 2);
    assert_eq!(a.head("t").await.unwrap().unwrap().turns, 2);
    let tail = a.read("t", 1..2).await.unwrap();
    assert_eq!((tail.len(), tail[0].seq, tail[0].turn), (1, 1, 1));
    // Many writers racing for one position: exactly one wins.
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let store = FileStore::new(&dir).unwrap();
        let r = record(2);
        tasks.push(tokio::spawn(async move {
            store.append("t", 2, r).await.is_ok()
        }));
    }
    let mut wins = 0;
    for t in tasks {
        wins += usize::from(t.await.unwrap());
    }
    assert_eq!(wins, 1);
    assert_eq!(a.list().await.unwrap(), ["t"]);
    for id in ["../x", "", ".t"] {
        assert!(matches!(
            a.head(id).await,
            Err(ThreadError::InvalidId { .. })
        ));
    }
    assert!(a.delete("t").await.unwrap());
    assert!(!a.delete("t").await.unwrap());
    assert!(a.head("t").await.unwrap().is_none());
    let _ = std::fs::remove_dir_all(&dir);
}
