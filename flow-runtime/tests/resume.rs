// Its own test binary, not a module of tests/it: it re-executes its own test binary as a child
// process, naming a test by its name (`--exact`), which a module path would change.
//! Interrupts, checkpoints and resume: at any depth, with state, with and without targets,
//! and every way a checkpoint can be wrong.

mod support;
use support::FailingStore;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agentweave_runtime::{
    set_sub_agents, Action, AgentEvent, AgentInput, Checkpoint, CheckpointError, CheckpointStore,
    FileStore, FlowAgent, FnAgent, InMemoryStore, Message, Role, Runner, StoreError,
};
use agentweave_runtime::{ResumeRequest, RunRequest};
use futures::StreamExt;
use serde_json::json;

#[derive(Debug, PartialEq)]
struct Seen {
    path: String,
    content: Option<String>,
    action: Option<String>,
    error: Option<String>,
}

fn seen(e: &AgentEvent) -> Seen {
    Seen {
        path: e.run_path().to_string(),
        content: e.message_output().map(|m| m.content.clone()),
        action: e.action.as_ref().map(|a| match a {
            Action::Interrupted(i) => format!("interrupt {} at {}", i.id, i.address_string()),
            Action::TransferToAgent(t) => format!("transfer {t}"),
            other => format!("{other:?}"),
        }),
        error: e.error.as_ref().map(ToString::to_string),
    }
}

fn say(path: &str, text: &str) -> Seen {
    Seen {
        path: path.into(),
        content: Some(text.into()),
        action: None,
        error: None,
    }
}

fn hop(name: &'static str, to: &'static str) -> FlowAgent {
    FlowAgent::new(FnAgent::new(name, move |cx, _| async move {
        cx.say(format!("{name} passes to {to}"));
        cx.transfer(to);
        Ok(())
    }))
}

/// An agent that asks for approval, then acts on the answer; its resume input is recorded.
fn approver(name: &'static str, inputs: Arc<Mutex<Vec<Vec<Message>>>>) -> FlowAgent {
    FlowAgent::new(
        FnAgent::new(name, |cx, _| async move {
            cx.say("checking the order");
            cx.interrupt_with_state(
                json!({"ask": "approve refund of $40?"}),
                json!({"amount": 40}),
            );
            Ok(())
        })
        .on_resume(move |cx, input: AgentInput, info| {
            inputs
                .lock()
                .unwrap()
                .push(input.messages.iter().map(|m| Message::clone(m)).collect());
            async move {
                assert!(info.was_interrupted());
                let amount = info.state().unwrap()["amount"].as_u64().unwrap();
                match info.data() {
                    Some(d) if d["approve"] == json!(true) => cx.say(format!("refunded ${amount}")),
                    Some(_) => cx.say("refund declined"),
                    None => cx.interrupt_with_state(
                        json!({"ask": "still waiting for approval"}),
                        json!({"amount": amount}),
                    ),
                }
                Ok(())
            }
        }),
    )
}

async fn run_to_interrupt(runner: &Runner, id: &str, text: &str) -> Vec<AgentEvent> {
    runner
        .run(RunRequest::new([Message::user(text)]).checkpoint(id))
        .collect()
        .await
}

/// Resumes `id` and collects the whole resumed run.
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

/// No resume targets: every interrupt is re-entered without data.
fn no_targets() -> HashMap<String, serde_json::Value> {
    HashMap::new()
}

fn target(id: &str, data: serde_json::Value) -> HashMap<String, serde_json::Value> {
    HashMap::from([(id.to_owned(), data)])
}

#[tokio::test]
async fn interrupt_at_depth_one_then_resume() {
    let inputs = Arc::new(Mutex::new(Vec::new()));
    let runner = Runner::builder(approver("refund", Arc::clone(&inputs)))
        .checkpoint_store(InMemoryStore::new())
        .build();
    let first = run_to_interrupt(&runner, "c1", "refund order 7").await;
    assert_eq!(
        first.iter().map(seen).collect::<Vec<_>>(),
        vec![
            say("refund", "checking the order"),
            Seen {
                path: "refund".into(),
                content: None,
                action: Some("interrupt refund at agent:refund".into()),
                error: None
            },
        ]
    );
    let info = first[1].interrupt().unwrap();
    assert_eq!(info.info, json!({"ask": "approve refund of $40?"}));

    let resumed: Vec<AgentEvent> =
        resume_all(&runner, "c1", target("refund", json!({"approve": true}))).await;
    assert_eq!(
        resumed.iter().map(seen).collect::<Vec<_>>(),
        vec![say("refund", "refunded $40")]
    );
    // The resumed agent sees the run's input and its own words, as before the interrupt.
    let inputs = inputs.lock().unwrap();
    let got: Vec<(Role, &str)> = inputs[0].iter().map(|m| (m.role, &*m.content)).collect();
    assert_eq!(
        got,
        [
            (Role::User, "refund order 7"),
            (Role::Assistant, "checking the order")
        ]
    );
}

#[tokio::test]
async fn interrupt_at_depth_two_resumes_the_child_at_its_path_without_rerunning_the_root() {
    let inputs = Arc::new(Mutex::new(Vec::new()));
    let root_runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&root_runs);
    let root = FlowAgent::new(FnAgent::new("desk", move |cx, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move {
            cx.say("desk passes to refund");
            cx.transfer("refund");
            Ok(())
        }
    }));
    let tree = set_sub_agents(root, [approver("refund", Arc::clone(&inputs))]).unwrap();
    let store = InMemoryStore::new();
    let runner = Runner::builder(tree)
        .checkpoint_store(store.clone())
        .build();
    let first = run_to_interrupt(&runner, "c2", "money back please").await;
    assert_eq!(
        seen(first.last().unwrap()).action.unwrap(),
        "interrupt desk/refund at agent:refund"
    );
    assert_eq!(first.len(), 5);

    let session = runner
        .checkpoints()
        .load("c2")
        .await
        .unwrap()
        .restore_session();
    assert_eq!(session.len(), 4, "interrupts are never recorded");

    let resumed: Vec<AgentEvent> = resume_all(
        &runner,
        "c2",
        target("desk/refund", json!({"approve": false})),
    )
    .await;
    assert_eq!(
        resumed.iter().map(seen).collect::<Vec<_>>(),
        vec![say("desk/refund", "refund declined")]
    );
    assert_eq!(
        root_runs.load(Ordering::SeqCst),
        1,
        "the desk is not run again"
    );
    let inputs = inputs.lock().unwrap();
    let got: Vec<&str> = inputs[0].iter().map(|m| &*m.content).collect();
    assert_eq!(
        got,
        [
            "money back please",
            "For context: [desk] said: desk passes to refund.",
            r#"For context: [desk] called tool: `transfer_to_agent` with arguments: {"agent_name":"refund"}."#,
            "For context: [desk] `transfer_to_agent` tool returned result: successfully transferred to agent [refund].",
            "checking the order",
        ]
    );
}

#[tokio::test]
async fn interrupt_at_depth_three_and_the_run_goes_on_after_resume() {
    let inputs = Arc::new(Mutex::new(Vec::new()));
    // root -> a -> refund (interrupts) -> after approval hands back to a, which ends.
    let a_runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&a_runs);
    let a = FlowAgent::new(FnAgent::new("a", move |cx, _| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        async move {
            if n == 0 {
                cx.transfer("refund");
            } else {
                cx.say("a wraps up");
            }
            Ok(())
        }
    }));
    let refund = FlowAgent::new(
        FnAgent::new("refund", |cx, _| async move {
            cx.interrupt(json!("approve?"));
            Ok(())
        })
        .on_resume(move |cx, input: AgentInput, info| {
            let inputs = Arc::clone(&inputs);
            async move {
                inputs.lock().unwrap().push(input.messages.len());
                assert_eq!(info.data(), Some(&json!("yes")));
                cx.say("approved");
                cx.transfer("a");
                Ok(())
            }
        }),
    );
    let tree = set_sub_agents(hop("root", "a"), [set_sub_agents(a, [refund]).unwrap()]).unwrap();
    let runner = Runner::builder(tree)
        .checkpoint_store(InMemoryStore::new())
        .build();
    let first = run_to_interrupt(&runner, "c3", "go").await;
    let last = first.last().unwrap();
    assert_eq!(last.run_path().to_string(), "root/a/refund");
    assert_eq!(last.interrupt().unwrap().id, "root/a/refund");

    let resumed: Vec<AgentEvent> =
        resume_all(&runner, "c3", target("root/a/refund", json!("yes"))).await;
    let paths: Vec<String> = resumed.iter().map(|e| e.run_path().to_string()).collect();
    assert_eq!(
        paths,
        [
            "root/a/refund",
            "root/a/refund",
            "root/a/refund",
            "root/a/refund/a"
        ]
    );
    assert_eq!(
        resumed.last().unwrap().message_output().unwrap().content,
        "a wraps up"
    );
    assert_eq!(a_runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn resume_without_targets_re_enters_and_may_interrupt_again() {
    let inputs = Arc::new(Mutex::new(Vec::new()));
    let runner = Runner::builder(approver("refund", inputs))
        .checkpoint_store(InMemoryStore::new())
        .build();
    run_to_interrupt(&runner, "c4", "refund").await;
    let again: Vec<AgentEvent> = resume_all(&runner, "c4", no_targets()).await;
    assert_eq!(
        again[0].interrupt().unwrap().info,
        json!({"ask": "still waiting for approval"})
    );
    // The new interrupt replaced the checkpoint; it resumes with its state.
    let done: Vec<AgentEvent> =
        resume_all(&runner, "c4", target("refund", json!({"approve": true}))).await;
    assert_eq!(done[0].message_output().unwrap().content, "refunded $40");
}

#[tokio::test]
async fn resuming_twice_is_an_error_and_the_record_stays() {
    let runner = Runner::builder(approver("refund", Arc::default()))
        .checkpoint_store(InMemoryStore::new())
        .build();
    run_to_interrupt(&runner, "c5", "refund").await;
    let done: Vec<AgentEvent> =
        resume_all(&runner, "c5", target("refund", json!({"approve": true}))).await;
    assert_eq!(done.len(), 1);
    let err = runner
        .resume(ResumeRequest::new("c5", no_targets()))
        .await
        .unwrap_err();
    assert!(matches!(err, CheckpointError::AlreadyResumed { .. }));
    assert_eq!(
        err.to_string(),
        "checkpoint 'c5' was already resumed; a checkpoint resumes once"
    );
}

#[tokio::test]
async fn a_second_resume_while_the_first_runs_is_refused() {
    let runner = Runner::builder(approver("refund", Arc::default()))
        .checkpoint_store(InMemoryStore::new())
        .build();
    run_to_interrupt(&runner, "c6", "refund").await;
    let first = runner
        .resume(ResumeRequest::new("c6", no_targets()))
        .await
        .unwrap();
    let err = runner
        .resume(ResumeRequest::new("c6", no_targets()))
        .await
        .unwrap_err();
    assert!(matches!(err, CheckpointError::Claimed { .. }), "{err}");
    // Dropping the first resume gives its claim back (in a task of the runtime).
    drop(first);
    tokio::task::yield_now().await;
    assert!(runner
        .resume(ResumeRequest::new("c6", no_targets()))
        .await
        .is_ok());
}

#[tokio::test]
async fn resume_errors_are_typed_and_leave_the_store_as_it_was() {
    let store = InMemoryStore::new();
    let runner = Runner::builder(approver("refund", Arc::default()))
        .checkpoint_store(store.clone())
        .build();

    let err = runner
        .resume(ResumeRequest::new("missing", no_targets()))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "no checkpoint 'missing' in the store; check the id the interrupted run printed"
    );

    run_to_interrupt(&runner, "good", "refund").await;
    let good = store.get("good").await.unwrap().unwrap();

    let err = runner
        .resume(ResumeRequest::new("good", target("nobody", json!(1))))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "checkpoint 'good' has no interrupt 'nobody'; its interrupts are: refund"
    );

    store
        .set("foreign", b"{\"hello\": 1}".to_vec())
        .await
        .unwrap();
    assert!(matches!(
        runner
            .resume(ResumeRequest::new("foreign", no_targets()))
            .await
            .unwrap_err(),
        CheckpointError::Foreign { .. }
    ));

    let mut newer = good.clone();
    newer[b"agentflow-checkpoint ".len()] = b'9';
    store.set("newer", newer).await.unwrap();
    assert_eq!(
        runner
            .resume(ResumeRequest::new("newer", no_targets()))
            .await
            .unwrap_err()
            .to_string(),
        "checkpoint 'newer' has format version 9; this build reads versions 1 to 2 only"
    );

    store
        .set("truncated", good[..good.len() - 10].to_vec())
        .await
        .unwrap();
    let err = runner
        .resume(ResumeRequest::new("truncated", no_targets()))
        .await
        .unwrap_err();
    assert!(matches!(err, CheckpointError::Corrupt { .. }), "{err}");

    let mut flipped = good.clone();
    let at = flipped.len() - 20;
    flipped[at] ^= 0x20;
    store.set("flipped", flipped).await.unwrap();
    let err = runner
        .resume(ResumeRequest::new("flipped", no_targets()))
        .await
        .unwrap_err();
    assert!(matches!(err, CheckpointError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("checksum does not match"), "{err}");

    // None of that touched the good checkpoint.
    assert_eq!(store.get("good").await.unwrap().unwrap(), good);
    assert!(runner
        .resume(ResumeRequest::new("good", no_targets()))
        .await
        .is_ok());
}

#[tokio::test]
async fn a_checkpoint_from_a_changed_flow_is_refused() {
    let store = InMemoryStore::new();
    let old = Runner::builder(
        set_sub_agents(hop("desk", "refund"), [approver("refund", Arc::default())]).unwrap(),
    )
    .checkpoint_store(store.clone())
    .build();
    run_to_interrupt(&old, "c7", "refund").await;

    let changed = Runner::builder(
        set_sub_agents(
            hop("desk", "refund"),
            [approver("refund", Arc::default()), hop("complaint", "desk")],
        )
        .unwrap(),
    )
    .checkpoint_store(store)
    .build();
    let err = changed
        .resume(ResumeRequest::new("c7", no_targets()))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "checkpoint 'c7' was taken in a flow of shape `desk(refund)`, but this runner's flow has \
         shape `desk(refund,complaint)`; resume it with the flow it was taken in"
    );
}

#[tokio::test]
async fn resuming_an_agent_that_cannot_resume_is_an_error_event() {
    let plain = FlowAgent::new(FnAgent::new("plain", |cx, _| async move {
        cx.interrupt(json!("stop"));
        Ok(())
    }));
    let runner = Runner::builder(plain)
        .checkpoint_store(InMemoryStore::new())
        .build();
    run_to_interrupt(&runner, "c8", "x").await;
    let events: Vec<AgentEvent> = resume_all(&runner, "c8", no_targets()).await;
    assert_eq!(
        seen(&events[0]).error.unwrap(),
        "agent 'plain' was interrupted but is not resumable; implement Agent::resume for it (or use FnAgent::on_resume)"
    );
}

#[tokio::test]
async fn a_failing_store_gives_an_error_event_and_keeps_the_old_checkpoint() {
    let store = FailingStore {
        inner: InMemoryStore::new(),
        ok_writes: Arc::new(AtomicUsize::new(1)),
    };
    let runner = Runner::builder(approver("refund", Arc::default()))
        .checkpoint_store(store.clone())
        .build();
    run_to_interrupt(&runner, "c9", "refund").await;
    let saved = store.inner.get("c9").await.unwrap().unwrap();

    // The resumed run interrupts again, but this write fails.
    // The interrupt whose checkpoint could not be stored is not passed on: only the error.
    let events: Vec<AgentEvent> = resume_all(&runner, "c9", no_targets()).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        events[0].error.as_ref().unwrap().to_string(),
        "checkpoint: could not save checkpoint 'c9': checkpoint store failed on 'c9': disk full"
    );
    assert_eq!(store.inner.get("c9").await.unwrap().unwrap(), saved);
    let decoded = Checkpoint::decode("c9", &saved).unwrap();
    assert_eq!(decoded.interrupts[0].id, "refund");
}

#[tokio::test]
async fn the_file_store_survives_a_new_runner_and_writes_whole_files() {
    let dir = std::env::temp_dir().join(format!("agentflow-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = FileStore::new(&dir).unwrap();
    let runner = Runner::builder(approver("refund", Arc::default()))
        .checkpoint_store(store)
        .build();
    run_to_interrupt(&runner, "order-1042", "refund").await;

    let fresh = Runner::builder(approver("refund", Arc::default()))
        .checkpoint_store(FileStore::new(&dir).unwrap())
        .build();
    let events: Vec<AgentEvent> = resume_all(
        &fresh,
        "order-1042",
        target("refund", json!({"approve": true})),
    )
    .await;
    assert_eq!(events[0].message_output().unwrap().content, "refunded $40");
    let names = |dir: &std::path::Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(names(&dir), ["runs"]);
    assert_eq!(names(&dir.join("runs")), ["order-1042"]);
    // The interrupted record, the finished one, the index and the lock: no temporary files.
    assert_eq!(
        names(&dir.join("runs/order-1042")),
        ["1.ckpt", "2.ckpt", "lock", "records.json"]
    );
    assert!(matches!(
        FileStore::new(&dir).unwrap().set("../escape", vec![]).await,
        Err(StoreError::InvalidId { .. })
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

const CHILD_ENV: &str = "AGENTFLOW_RESUME_CHILD_DIR";

fn desk() -> FlowAgent {
    set_sub_agents(hop("desk", "refund"), [approver("refund", Arc::default())]).unwrap()
}

/// Runs only as the child process of the test below: interrupts and exits.
#[tokio::test]
async fn child_process_entry() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let runner = Runner::builder(desk())
        .checkpoint_store(FileStore::new(dir).unwrap())
        .build();
    let events = run_to_interrupt(&runner, "crossing", "refund order 9").await;
    println!(
        "interrupted: {}",
        events.last().unwrap().interrupt().unwrap().id
    );
    std::process::exit(0);
}

#[tokio::test]
async fn a_run_interrupted_in_one_process_resumes_in_another() {
    let dir = std::env::temp_dir().join(format!("agentflow-child-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed: {stdout}");
    assert!(stdout.contains("interrupted: desk/refund"), "{stdout}");

    let runner = Runner::builder(desk())
        .checkpoint_store(FileStore::new(&dir).unwrap())
        .build();
    let events: Vec<AgentEvent> = resume_all(
        &runner,
        "crossing",
        target("desk/refund", json!({"approve": true})),
    )
    .await;
    assert_eq!(
        events.iter().map(seen).collect::<Vec<_>>(),
        vec![say("desk/refund", "refunded $40")]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two runs save their first checkpoint under the same id at the same moment: the one that
/// loses sees only the store's refusal, never an interrupt it could not save (an approval a
/// client showed for it could never be resumed).
#[tokio::test]
async fn the_run_that_loses_a_checkpoint_id_race_sees_only_the_error() {
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let gate = Arc::clone(&barrier);
    let agent = FlowAgent::new(
        FnAgent::new("gate", move |cx, _| {
            let gate = Arc::clone(&gate);
            async move {
                // Both runs are past the early check when either interrupts.
                gate.wait().await;
                cx.interrupt(json!({"ask": "approve?"}));
                Ok(())
            }
        })
        .on_resume(|cx, _, _| async move {
            cx.say("approved");
            Ok(())
        }),
    );
    let runner = Runner::builder(agent)
        .checkpoint_store(InMemoryStore::new())
        .build();
    let (a, b) = tokio::join!(
        run_to_interrupt(&runner, "same", "one"),
        run_to_interrupt(&runner, "same", "two"),
    );
    let interrupted = |events: &[AgentEvent]| events.iter().any(|e| e.interrupt().is_some());
    let failed = |events: &[AgentEvent]| events.iter().any(|e| e.error.is_some());
    let (winner, loser) = if interrupted(&a) && !failed(&a) {
        (a, b)
    } else {
        (b, a)
    };
    assert!(interrupted(&winner) && !failed(&winner), "{winner:?}");
    assert!(failed(&loser), "the loser is told: {loser:?}");
    assert!(
        !interrupted(&loser),
        "the loser shows no interrupt it could not save: {loser:?}"
    );
    // The winner's interrupt is the one stored, and it resumes.
    let resumed = resume_all(&runner, "same", no_targets()).await;
    assert!(resumed.iter().all(|e| e.error.is_none()), "{resumed:?}");
}
