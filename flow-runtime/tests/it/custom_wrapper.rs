//! A custom agent wrapping a whole tree, placed in a flow (Eino's "custom agent wrapper"): a
//! wrapper whose `resume` delegates to the tree resumes the interrupt raised inside it; one
//! without a `resume` gets the typed `AgentError::NotResumable`, not a checkpoint error.

use std::collections::HashMap;
use std::sync::Arc;

use flow_runtime::{
    set_sub_agents, Agent, AgentError, AgentEvent, AgentInput, EventStream, FlowAgent, FnAgent,
    InMemoryStore, ResumeInfo, RunContext, Runner,
};
use flow_runtime::{ResumeRequest, RunRequest};
use futures::StreamExt;
use serde_json::json;

/// The inner tree: `inner` hands over to `approver`, which asks a human.
fn inner_tree() -> FlowAgent {
    let inner = FnAgent::new("inner", |cx, _| async move {
        cx.say("inner passes to approver");
        cx.transfer("approver");
        Ok(())
    });
    let approver = FnAgent::new("approver", |cx, _| async move {
        cx.interrupt(json!("approve?"));
        Ok(())
    })
    .on_resume(|cx, _input, info| async move {
        let yes = info.data().and_then(|d| d.as_bool()).unwrap_or(false);
        cx.say(if yes { "approved" } else { "declined" });
        Ok(())
    });
    set_sub_agents(FlowAgent::new(inner), [FlowAgent::new(approver)]).unwrap()
}

/// A wrapper that runs the inner tree and resumes it (Eino's `ResumableAgent`).
struct Wrapper(FlowAgent);

impl Agent for Wrapper {
    fn name(&self) -> &str {
        "wrapper"
    }

    fn run(self: Arc<Self>, cx: RunContext, input: AgentInput) -> EventStream {
        Arc::new(self.0.clone()).run(cx, input)
    }

    fn resume(self: Arc<Self>, cx: RunContext, input: AgentInput, info: ResumeInfo) -> EventStream {
        Arc::new(self.0.clone()).resume(cx, input, info)
    }
}

/// A wrapper that runs the inner tree but has no `resume`.
struct RunOnly(FlowAgent);

impl Agent for RunOnly {
    fn name(&self) -> &str {
        "wrapper"
    }

    fn run(self: Arc<Self>, cx: RunContext, input: AgentInput) -> EventStream {
        Arc::new(self.0.clone()).run(cx, input)
    }
}

fn desk(resumable: bool) -> FlowAgent {
    let front = FnAgent::new("front", |cx, _| async move {
        cx.transfer("wrapper");
        Ok(())
    });
    let wrapper = if resumable {
        FlowAgent::new(Wrapper(inner_tree()))
    } else {
        FlowAgent::new(RunOnly(inner_tree()))
    };
    set_sub_agents(FlowAgent::new(front), [wrapper]).unwrap()
}

fn lines(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let mut line = e.run_path().to_string();
            if let Some(m) = e.message_output() {
                line.push_str(&format!(": {}", m.content));
            }
            if let Some(i) = e.interrupt() {
                line.push_str(&format!(" interrupt {}", i.id));
            }
            if let Some(err) = &e.error {
                line.push_str(&format!(" error: {err}"));
            }
            line
        })
        .collect()
}

#[tokio::test]
async fn a_resumable_wrapper_of_a_tree_resumes_the_interrupt_raised_inside_it() {
    let runner = Runner::builder(desk(true))
        .checkpoint_store(InMemoryStore::new())
        .build();
    let first: Vec<AgentEvent> = runner
        .run(RunRequest::new([flow_runtime::Message::user("hi")]).checkpoint("w"))
        .collect()
        .await;
    let first = lines(&first);
    assert!(
        first.last().unwrap().contains("interrupt"),
        "the run stops inside the wrapped tree: {first:#?}"
    );
    let id = first.last().unwrap().rsplit(' ').next().unwrap().to_owned();
    let resumed = runner
        .resume(ResumeRequest::new("w", HashMap::from([(id, json!(true))])))
        .await
        .expect("a resumable wrapper's checkpoint resumes");
    let resumed: Vec<AgentEvent> = resumed.collect().await;
    assert_eq!(
        lines(&resumed),
        ["front/wrapper/approver: approved"],
        "the wrapped tree resumes at its interrupted node"
    );
}

#[tokio::test]
async fn a_wrapper_without_resume_gets_the_typed_not_resumable_error() {
    let runner = Runner::builder(desk(false))
        .checkpoint_store(InMemoryStore::new())
        .build();
    let first: Vec<AgentEvent> = runner
        .run(RunRequest::new([flow_runtime::Message::user("hi")]).checkpoint("w"))
        .collect()
        .await;
    let id = first
        .last()
        .unwrap()
        .interrupt()
        .expect("interrupted")
        .id
        .clone();
    let resumed: Vec<AgentEvent> = runner
        .resume(ResumeRequest::new(
            "w",
            HashMap::from([(id.to_string(), json!(true))]),
        ))
        .await
        .expect("the checkpoint fits the flow")
        .collect()
        .await;
    assert_eq!(resumed.len(), 1, "{:#?}", lines(&resumed));
    assert!(
        matches!(
            resumed[0].error,
            Some(AgentError::NotResumable { ref agent }) if &**agent == "wrapper"
        ),
        "{:#?}",
        lines(&resumed)
    );
}
