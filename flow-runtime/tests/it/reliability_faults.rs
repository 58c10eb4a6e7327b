//! Faults: a tool that never returns, a model stream that gives up part-way inside a tree, a
//! checkpoint store whose writes fail, a checkpoint that cannot be captured. Each gives a clear
//! error (a tool error to the model, or an error event), the run ends cleanly, what was
//! recorded stays, and a stored checkpoint is never replaced by a broken one.
//! (`chat_agent.rs` and `resume.rs` cover the retried stream failure, the panicking tool and the
//! failing re-interrupt write; these extend them.)

use crate::support;
use support::FailingStore;
use support::Held;

use std::collections::HashMap;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::model::{ModelError, RetryPolicy, ScriptStep, ScriptedModel};
use agentweave_runtime::{
    set_sub_agents, tool_fn, AgentEvent, ChatModelAgent, Checkpoint, CheckpointError,
    CheckpointStore, FlowAgent, FnAgent, InMemoryStore, Message, MessageStream, Runner, Session,
    StreamError, ToolError,
};
use agentweave_runtime::{ResumeRequest, RunRequest};
use futures::StreamExt;
use serde_json::json;

/// An event as one line: path, role and content (a stream is read through a fork), action,
/// error.
async fn line(e: &AgentEvent) -> String {
    let mut s = e.run_path().to_string();
    if let Some(m) = e.message_output() {
        s.push_str(&format!(" {}: {}", m.role, m.content));
        for c in &m.tool_calls {
            s.push_str(&format!(" [{} {}]", c.name, c.arguments));
        }
    }
    if let Some(agentweave_runtime::EventOutput::Stream(stream)) = &e.output {
        match stream.fork().collect_message().await {
            Ok(m) => s.push_str(&format!(" stream {}: {}", m.role, m.content)),
            Err(err) => s.push_str(&format!(" stream failed: {}", err.message)),
        }
    }
    if let Some(a) = &e.action {
        s.push_str(&format!(" => {a:?}"));
    }
    if let Some(err) = &e.error {
        s.push_str(&format!(" error: {err}"));
    }
    s
}

async fn lines(events: &[AgentEvent]) -> Vec<String> {
    let mut out = Vec::new();
    for e in events {
        out.push(line(e).await);
    }
    out
}

async fn record(session: &Session) -> Vec<String> {
    let mut out = Vec::new();
    for e in session.events() {
        let mut s = e.run_path().to_string();
        if let Some(m) = e.message().await.expect("a recorded message") {
            s.push_str(&format!(" {}: {}", m.role, m.content));
        }
        if let Some(a) = e.action() {
            s.push_str(&format!(" => {a:?}"));
        }
        out.push(s);
    }
    out
}

#[tokio::test]
async fn a_tool_that_never_returns_is_stopped_at_the_tool_timeout_and_the_model_is_told() {
    let live = Arc::new(AtomicIsize::new(0));
    let in_tool = Arc::clone(&live);
    let hang = tool_fn("hang", "Never returns.", move |_: serde_json::Value| {
        let held = Held::new(&in_tool);
        async move {
            let _held = held;
            futures::future::pending::<()>().await;
            Ok::<_, ToolError>("unreachable")
        }
    });
    let quick = tool_fn("quick", "Returns at once.", |_: serde_json::Value| async {
        Ok::<_, ToolError>("quick result")
    });
    let model = ScriptedModel::new([
        ScriptStep::tool_calls([("hang", json!({})), ("quick", json!({}))]),
        ScriptStep::text("The lookup hung; here is what I have."),
    ]);
    let agent = ChatModelAgent::builder("bot", model.clone())
        .tool(hang)
        .tool(quick)
        // The subject of the test, not a timing assertion: the tool never ends by itself.
        .tool_timeout(Duration::from_millis(20))
        .build()
        .unwrap();
    let session = Session::new();
    let events: Vec<AgentEvent> = Runner::new(FlowAgent::new(agent))
        .run(RunRequest::new([Message::user("look it up")]).session(Arc::clone(&session)))
        .collect()
        .await;
    let timed_out = "error: tool 'hang' timed out after 20 ms (the agent's tool_timeout); it was \
                     stopped";
    assert_eq!(
        lines(&events).await,
        [
            "bot assistant:  [hang {}] [quick {}]".to_owned(),
            format!("bot tool: {timed_out}"),
            "bot tool: quick result".to_owned(),
            "bot assistant: The lookup hung; here is what I have.".to_owned(),
        ]
    );
    assert_eq!(
        record(&session).await,
        [
            "bot assistant: ",
            &format!("bot tool: {timed_out}"),
            "bot tool: quick result",
            "bot assistant: The lookup hung; here is what I have.",
        ]
    );
    let second = &model.requests()[1].messages;
    assert_eq!(second[second.len() - 2].content, timed_out);
    // The stopped call was dropped, not left running.
    assert_eq!(live.load(Ordering::SeqCst), 0);
    assert_eq!(
        ToolError::TimedOut {
            tool: "hang".into(),
            limit: Duration::from_secs(60)
        }
        .to_string(),
        "tool 'hang' timed out after 60000 ms (the agent's tool_timeout); it was stopped"
    );
}

#[tokio::test]
async fn a_model_stream_giving_up_part_way_in_a_sub_agent_ends_the_run_and_keeps_the_record() {
    let broken = ModelError::StreamInterrupted {
        model: "scripted".into(),
        message: "connection reset".into(),
    };
    let root = FnAgent::new("root", |cx, _| async move {
        cx.say("over to refund");
        cx.transfer("refund");
        Ok(())
    });
    let refund_model =
        ScriptedModel::new([ScriptStep::text("Your refund is on").fail_mid_stream(2, broken)]);
    let refund = ChatModelAgent::builder("refund", refund_model.clone())
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let tree = set_sub_agents(FlowAgent::new(root), [FlowAgent::new(refund)]).unwrap();
    let session = Session::new();
    let events: Vec<AgentEvent> = Runner::builder(tree)
        .streaming(true)
        .build()
        .run(RunRequest::new([Message::user("refund")]).session(Arc::clone(&session)))
        .collect()
        .await;
    assert_eq!(
        lines(&events).await,
        [
            "root assistant: over to refund",
            r#"root assistant:  [transfer_to_agent {"agent_name":"refund"}]"#,
            "root tool: successfully transferred to agent [refund] => TransferToAgent(\"refund\")",
            "root/refund stream failed: model 'scripted' stream broke off part-way: connection \
             reset; agent 'refund' is giving up",
            "root/refund error: agent 'refund' got no answer from its model after 1 attempt(s): \
             model 'scripted' stream broke off part-way: connection reset",
        ]
    );
    // The root's events stay; the broken answer was never recorded, only the error event
    // (which has no message) at refund's path.
    assert_eq!(
        record(&session).await,
        [
            "root assistant: over to refund",
            "root assistant: ",
            "root tool: successfully transferred to agent [refund] => TransferToAgent(\"refund\")",
            "root/refund",
        ]
    );
    assert_eq!(refund_model.calls(), 1);
}

fn failing_store(ok_writes: usize) -> FailingStore {
    FailingStore {
        inner: InMemoryStore::new(),
        ok_writes: Arc::new(AtomicUsize::new(ok_writes)),
    }
}

/// An agent that says something, interrupts, and on resume says what it was given.
fn approver() -> FlowAgent {
    FlowAgent::new(
        FnAgent::new("approver", |cx, _| async move {
            cx.say("needs approval");
            cx.interrupt(json!("approve?"));
            Ok(())
        })
        .on_resume(|cx, _, info| async move {
            cx.say(format!(
                "resumed with {}",
                info.data().cloned().unwrap_or_default()
            ));
            Ok(())
        }),
    )
}

#[tokio::test]
async fn a_failing_first_write_is_an_error_event_and_nothing_is_stored() {
    let store = failing_store(0);
    let runner = Runner::builder(approver())
        .checkpoint_store(store.clone())
        .build();
    let session = Session::new();
    let events: Vec<AgentEvent> = runner
        .run(
            RunRequest::new([Message::user("go")])
                .session(Arc::clone(&session))
                .checkpoint("c1"),
        )
        .collect()
        .await;
    let shown = lines(&events).await;
    // The interrupt that could not be saved is not shown: only the error.
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert_eq!(shown[0], "approver assistant: needs approval");
    assert!(!events.iter().any(AgentEvent::is_interrupt));
    assert_eq!(
        shown[1],
        "approver error: checkpoint: could not save checkpoint 'c1': checkpoint store failed on \
         'c1': disk full"
    );
    assert_eq!(store.inner.get("c1").await.unwrap(), None);
    assert_eq!(
        record(&session).await,
        ["approver assistant: needs approval"]
    );
    assert!(matches!(
        runner.resume(ResumeRequest::new("c1", [])).await,
        Err(CheckpointError::NotFound { .. })
    ));
}

#[tokio::test]
async fn after_a_failed_rewrite_the_old_checkpoint_still_resumes() {
    // The first write (the interrupt's checkpoint) succeeds, the second (the resumed run's
    // "resumed" mark) fails.
    let store = failing_store(1);
    let runner = Runner::builder(approver())
        .checkpoint_store(store.clone())
        .build();
    let _: Vec<AgentEvent> = runner
        .run(RunRequest::new([Message::user("go")]).checkpoint("c2"))
        .collect()
        .await;
    let saved = store.inner.get("c2").await.unwrap().unwrap();
    let mut targets = HashMap::new();
    targets.insert("approver".to_owned(), json!("yes"));
    let events: Vec<AgentEvent> = runner
        .resume(ResumeRequest::new("c2", targets.clone()))
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(
        lines(&events).await,
        [
            "approver assistant: resumed with \"yes\"",
            "approver error: checkpoint: could not save checkpoint 'c2': checkpoint store failed \
             on 'c2': disk full",
        ]
    );
    // The stored checkpoint is the one the interrupt wrote, still waiting for its resume.
    assert_eq!(store.inner.get("c2").await.unwrap().unwrap(), saved);
    store.ok_writes.store(1, Ordering::SeqCst);
    let again: Vec<AgentEvent> = runner
        .resume(ResumeRequest::new("c2", targets))
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(
        lines(&again).await,
        ["approver assistant: resumed with \"yes\""]
    );
    assert!(matches!(
        runner.resume(ResumeRequest::new("c2", [])).await,
        Err(CheckpointError::AlreadyResumed { .. })
    ));
}

#[tokio::test]
async fn a_session_that_cannot_be_captured_never_replaces_the_stored_checkpoint() {
    // An agent whose recorded stream fails, then interrupts: the checkpoint cannot hold the
    // session whole, so it is not written, and the old bytes stay.
    let broken = FnAgent::new("approver", |cx, _| async move {
        let chunks = futures::stream::iter([
            Ok(Message::assistant("half ")),
            Err(StreamError::new("source died")),
        ]);
        cx.send_stream(MessageStream::from_stream(chunks));
        cx.interrupt(json!("approve?"));
        Ok(())
    });
    let store = failing_store(usize::MAX);
    let old = {
        let runner = Runner::builder(approver())
            .checkpoint_store(store.clone())
            .build();
        let _: Vec<AgentEvent> = runner
            .run(RunRequest::new([Message::user("old")]).checkpoint("c3"))
            .collect()
            .await;
        store.inner.get("c3").await.unwrap().unwrap()
    };
    let runner = Runner::builder(FlowAgent::new(broken))
        .checkpoint_store(store.clone())
        .build();
    let events: Vec<AgentEvent> = runner
        .run(
            RunRequest::new([Message::user("new")])
                .checkpoint("c3")
                .replacing(),
        )
        .collect()
        .await;
    let shown = lines(&events).await;
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert_eq!(shown[0], "approver stream failed: source died");
    assert!(!events.iter().any(AgentEvent::is_interrupt));
    assert_eq!(
        shown[1],
        "approver error: checkpoint: could not save checkpoint 'c3': checkpoint 'c3' cannot be \
         saved: a recorded stream failed: message stream failed: source died"
    );
    let stored = store.inner.get("c3").await.unwrap().unwrap();
    assert_eq!(stored, old);
    assert_eq!(
        Checkpoint::decode("c3", &stored).unwrap().root_input,
        [Message::user("old")]
    );
}
