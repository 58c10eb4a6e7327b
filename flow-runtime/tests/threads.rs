//! Conversations: threads of turns kept in a store, routed back to the agent that answered,
//! with earlier turns reaching each agent through its context policy.

mod support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use flow_runtime::model::{ScriptStep, ScriptedModel};
use flow_runtime::store::{RecordEnd, RecordStart, ThreadStore};
use flow_runtime::{
    set_sub_agents, tool_fn, AgentEvent, ChatModelAgent, ContextPolicy, FileStore, FlowAgent,
    FnAgent, HistoryEntry, InMemoryStore, Message, MessageRef, Role, Runner, Sequential,
    ThreadError, ToolCall, ToolError, TurnOutcome, TurnRouting,
};
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

async fn run_turn(runner: &Runner, thread: &str, text: &str) -> (String, Vec<AgentEvent>, TurnOutcome) {
    let mut turn = runner.turn(thread, Message::user(text)).await.unwrap();
    let started = turn.started_at().to_string();
    let mut events = Vec::new();
    while let Some(e) = turn.next().await {
        events.push(e);
    }
    let outcome = turn.outcome().expect("the turn ended");
    (started, events, outcome)
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
    let runner = Runner::new(desk(&triage, &complaint)).thread_store(InMemoryStore::new());

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
    let triage_saw: Vec<Vec<String>> = triage.requests().iter().map(|r| show(&r.messages)).collect();
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
    let complaint_saw: Vec<Vec<String>> =
        complaint.requests().iter().map(|r| show(&r.messages)).collect();
    assert_eq!(
        complaint_saw,
        [
            texts(&turn1_prefix),
            texts(&[&turn1_prefix[..], &logged[..]].concat()),
            texts(&[&turn1_prefix[..], &logged[..], &exited[..], &["user: Any news?"]].concat()),
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
    let messages = runner.thread_messages("ada").await.unwrap();
    let listed: Vec<(u64, String, String)> = messages
        .iter()
        .map(|m| (m.turn, m.agent_name.to_string(), m.message.content.clone()))
        .collect();
    assert_eq!(listed.len(), (1 + 6) + (1 + 1) + (1 + 3));
    assert_eq!(listed[0], (0, String::new(), "My kettle broke.".into()));
    assert_eq!(listed[7], (1, String::new(), "Any news?".into()));
    assert_eq!(listed[8], (1, "complaint".into(), "Complaint #1 is with our team.".into()));
    assert_eq!(listed[12], (2, "triage".into(), "Triage here: anything else?".into()));
    let records = runner.thread_records("ada").await.unwrap();
    let starts: Vec<String> = records.iter().map(|r| r.started_at.to_string()).collect();
    assert_eq!(starts, ["triage", "complaint", "complaint"]);
}
