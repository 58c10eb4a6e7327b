//! A custom agent wrapping a whole tree, placed in a flow (Eino's "custom agent wrapper"): a
//! wrapper whose `resume` delegates to the tree resumes the interrupt raised inside it; one
//! without a `resume` gets the typed `AgentError::NotResumable`, not a checkpoint error. As the
//! runner's root (Eino's usual layout), a wrapper that says it runs agents of its own resumes
//! the same way; one that does not say so is refused with what to do.

use std::collections::HashMap;
use std::sync::Arc;

use agentweave_runtime::{
    set_sub_agents, Agent, AgentError, AgentEvent, AgentInput, EventStream, FlowAgent, FnAgent,
    InMemoryStore, ResumeInfo, RunContext, Runner,
};
use agentweave_runtime::{ResumeRequest, RunRequest};
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

    fn runs_agents_of_its_own(&self) -> bool {
        true
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
        .run(RunRequest::new([agentweave_runtime::Message::user("hi")]).checkpoint("w"))
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
        .run(RunRequest::new([agentweave_runtime::Message::user("hi")]).checkpoint("w"))
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

#[tokio::test]
async fn a_resumable_wrapper_of_a_tree_as_the_runners_root_resumes_inside_it() {
    // Eino's usual layout: the runner's root is a custom agent wrapping the whole tree. The
    // interrupt is raised inside the wrapped tree; the resume goes through the root wrapper
    // and the run completes.
    let runner = Runner::builder(FlowAgent::new(Wrapper(inner_tree())))
        .checkpoint_store(InMemoryStore::new())
        .build();
    let first: Vec<AgentEvent> = runner
        .run(RunRequest::new([agentweave_runtime::Message::user("hi")]).checkpoint("root"))
        .collect()
        .await;
    let first = lines(&first);
    let interrupt = first.last().unwrap();
    assert!(interrupt.contains("interrupt"), "{first:#?}");
    let id = interrupt.rsplit(' ').next().unwrap().to_owned();
    let resumed: Vec<AgentEvent> = runner
        .resume(ResumeRequest::new(
            "root",
            HashMap::from([(id, json!(true))]),
        ))
        .await
        .unwrap_or_else(|e| panic!("the root wrapper's checkpoint fits its flow: {e} {first:#?}"))
        .collect()
        .await;
    let resumed = lines(&resumed);
    assert_eq!(resumed.len(), 1, "{first:#?} then {resumed:#?}");
    assert!(resumed[0].ends_with("approver: approved"), "{resumed:#?}");
}

#[tokio::test]
async fn a_root_wrapper_that_does_not_say_so_is_refused_with_what_to_do() {
    // A lone root agent is checked by name (a checkpoint naming another agent is forged, or
    // taken elsewhere); the refusal tells a wrapper how to say it runs a tree of its own.
    let runner = Runner::builder(FlowAgent::new(RunOnly(inner_tree())))
        .checkpoint_store(InMemoryStore::new())
        .build();
    let first: Vec<AgentEvent> = runner
        .run(RunRequest::new([agentweave_runtime::Message::user("hi")]).checkpoint("root"))
        .collect()
        .await;
    let id = first
        .last()
        .unwrap()
        .interrupt()
        .expect("interrupted")
        .id
        .to_string();
    let Err(error) = runner
        .resume(ResumeRequest::new(
            "root",
            HashMap::from([(id, json!(true))]),
        ))
        .await
    else {
        panic!("the checkpoint was not refused")
    };
    let agentweave_runtime::store::CheckpointError::NotInFlow { reason, .. } = &error else {
        panic!("{error}")
    };
    assert!(reason.contains("agent 'inner'"), "{reason}");
    assert!(reason.contains("Agent::runs_agents_of_its_own"), "{reason}");
}
