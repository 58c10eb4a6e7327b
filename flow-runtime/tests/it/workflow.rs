//! Workflow agents: Sequential, Parallel and Loop — run paths, history, lanes, Exit,
//! BreakLoop, errors, and interrupt + resume inside each.

use crate::support;
use support::{contents, line, lines, user};

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agentweave_runtime::RunRequest;
use agentweave_runtime::{
    Agent, AgentEvent, AgentInput, DeterministicTransfer, FlowAgent, FnAgent, InterruptInfo, Loop,
    Message, MessageRef, Parallel, ResumeInfo, Role, RunContext, Runner, Sequential, Session,
};
use futures::channel::oneshot;
use futures::StreamExt;
use serde_json::json;

/// An agent that says `text`.
fn say(name: &'static str, text: &'static str) -> FlowAgent {
    FlowAgent::new(FnAgent::new(name, move |cx, _| async move {
        cx.say(text);
        Ok(())
    }))
}

type Inputs = Arc<Mutex<Vec<Vec<(Role, String)>>>>;

/// An agent that stores each input it gets, then says `text`.
fn recorder(name: &'static str, text: &'static str) -> (FlowAgent, Inputs) {
    let inputs: Inputs = Arc::default();
    let store = Arc::clone(&inputs);
    let agent = FnAgent::new(name, move |cx, input: AgentInput| {
        store.lock().unwrap().push(contents(&input.messages));
        async move {
            cx.say(text);
            Ok(())
        }
    });
    (FlowAgent::new(agent), inputs)
}

/// An agent that counts its runs and says `text`.
fn counted(name: &'static str, text: &'static str) -> (FlowAgent, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let n = Arc::clone(&runs);
    let agent = FnAgent::new(name, move |cx, _| {
        n.fetch_add(1, Ordering::SeqCst);
        async move {
            cx.say(text);
            Ok(())
        }
    });
    (FlowAgent::new(agent), runs)
}

/// An agent that says `before` and interrupts with `info`; resumed, it says what it was
/// given (`resumed with DATA`) or `resumed without data`.
fn gate(name: &'static str, before: &'static str, info: &'static str) -> FlowAgent {
    let agent = FnAgent::new(name, move |cx, _| async move {
        cx.say(before);
        cx.interrupt_with_state(json!(info), json!({ "asked": info }));
        Ok(())
    })
    .on_resume(move |cx, _, resume: ResumeInfo| async move {
        assert!(resume.was_interrupted());
        assert_eq!(resume.state(), Some(&json!({ "asked": info })));
        match resume.data() {
            Some(data) => cx.say(format!("resumed with {data}")),
            None => cx.say("resumed without data"),
        }
        Ok(())
    });
    FlowAgent::new(agent)
}

struct Run {
    root: FlowAgent,
    session: Arc<Session>,
    input: Vec<MessageRef>,
}

impl Run {
    fn new(root: FlowAgent, text: &str) -> Self {
        Run {
            root,
            session: Session::new(),
            input: vec![MessageRef::new(Message::user(text))],
        }
    }

    async fn start(&self) -> Vec<AgentEvent> {
        Runner::new(self.root.clone())
            .run(RunRequest::new(self.input.iter().cloned()).session(Arc::clone(&self.session)))
            .collect()
            .await
    }

    /// Resumes the run on the same session with the interrupts of `events`, giving `data` to
    /// the interrupts with these ids.
    async fn resume(
        &self,
        events: &[AgentEvent],
        data: &[(&str, serde_json::Value)],
    ) -> Vec<AgentEvent> {
        let targets: HashMap<String, serde_json::Value> = data
            .iter()
            .map(|(id, v)| (id.to_string(), v.clone()))
            .collect();
        self.resume_with(interrupts(events), targets).await
    }

    async fn resume_with(
        &self,
        interrupts: Vec<InterruptInfo>,
        targets: HashMap<String, serde_json::Value>,
    ) -> Vec<AgentEvent> {
        let info = ResumeInfo::new(interrupts, &targets);
        let cx = RunContext::new_run(
            Arc::clone(&self.session),
            self.input.iter().cloned(),
            false,
            self.root.name(),
        );
        Arc::new(self.root.clone())
            .resume(cx, AgentInput::new(self.input.iter().cloned()), info)
            .collect()
            .await
    }
}

fn interrupts(events: &[AgentEvent]) -> Vec<InterruptInfo> {
    events
        .iter()
        .filter_map(|e| e.interrupt().cloned())
        .collect()
}

/// The frames of an interrupt as `agent@path {state}`.
fn frames(info: &InterruptInfo) -> Vec<String> {
    info.address
        .iter()
        .map(|f| match &f.state {
            Some(s) => format!("{}@{} {s}", f.agent, f.run_path),
            None => format!("{}@{}", f.agent, f.run_path),
        })
        .collect()
}

const MOVED: &str = "successfully transferred to agent";

// ---------------------------------------------------------------------------------------
// Sequential

#[tokio::test]
async fn sequential_runs_each_sub_agent_in_turn_and_each_sees_the_earlier_ones() {
    let (s2, s2_inputs) = recorder("s2", "edited");
    let (s3, s3_inputs) = recorder("s3", "published");
    let pipeline = Sequential::new("pipeline")
        .with_sub_agents([say("s1", "drafted"), s2, s3])
        .unwrap();
    let events = Run::new(pipeline, "write it").start().await;
    assert_eq!(
        lines(&events),
        [
            "s1@pipeline/s1: drafted",
            "s2@pipeline/s1/s2: edited",
            "s3@pipeline/s1/s2/s3: published",
        ]
    );
    assert_eq!(
        *s2_inputs.lock().unwrap(),
        [vec![
            user("write it"),
            user("For context: [s1] said: drafted.")
        ]]
    );
    assert_eq!(
        *s3_inputs.lock().unwrap(),
        [vec![
            user("write it"),
            user("For context: [s1] said: drafted."),
            user("For context: [s2] said: edited."),
        ]]
    );
}

#[tokio::test]
async fn both_ways_of_building_a_workflow_node_give_the_same_tree() {
    let a = Sequential::new("w")
        .with_sub_agents([say("a", "1"), say("b", "2")])
        .unwrap();
    let b = FlowAgent::new(Sequential::new("w"))
        .with_sub_agents([say("a", "1"), say("b", "2")])
        .unwrap();
    // Sub-agents of a workflow are barred from transferring back to it.
    assert_eq!(a.shape(), "w(a^,b^)");
    assert_eq!(b.shape(), a.shape());
    assert_eq!(a.fingerprint(), b.fingerprint());
    assert!(a.sub_agents()[0].transfer_targets().is_empty());
}

#[tokio::test]
async fn a_sub_agent_may_transfer_inside_itself_and_the_sequence_goes_on() {
    let s1 = FlowAgent::new(FnAgent::new("s1", |cx, _| async move {
        cx.say("asking x");
        cx.transfer("x");
        Ok(())
    }))
    .with_sub_agents([say("x", "x answers")])
    .unwrap();
    let (s2, s2_inputs) = recorder("s2", "done");
    let w = Sequential::new("w").with_sub_agents([s1, s2]).unwrap();
    let events = Run::new(w, "go").start().await;
    assert_eq!(
        lines(&events),
        [
            "s1@w/s1: asking x".to_owned(),
            r#"s1@w/s1:  [calls transfer_to_agent {"agent_name":"x"}]"#.to_owned(),
            format!("s1@w/s1: {MOVED} [x] => transfer x"),
            "x@w/s1/x: x answers".to_owned(),
            "s2@w/s1/s2: done".to_owned(),
        ]
    );
    assert_eq!(s2_inputs.lock().unwrap()[0].len(), 5);
    assert_eq!(
        s2_inputs.lock().unwrap()[0][4],
        user("For context: [x] said: x answers.")
    );
}

#[tokio::test]
async fn a_transfer_back_to_the_workflow_is_refused_and_ends_it() {
    let (s2, s2_runs) = counted("s2", "never");
    let w = Sequential::new("w")
        .with_sub_agents([
            FlowAgent::new(FnAgent::new("s1", |cx, _| async move {
                cx.transfer("w");
                Ok(())
            })),
            s2,
        ])
        .unwrap();
    let events = Run::new(w, "go").start().await;
    assert_eq!(
        lines(&events),
        [
            r#"s1@w/s1:  [calls transfer_to_agent {"agent_name":"w"}]"#.to_owned(),
            format!("s1@w/s1: {MOVED} [w] => transfer w"),
            "s1@w/s1: error: transfer refused: agent 's1' may not transfer to its parent 'w' \
             (it was built with disallow_transfer_to_parent)"
                .to_owned(),
        ]
    );
    assert_eq!(s2_runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn exit_ends_the_sequence_and_every_enclosing_workflow() {
    let (b, b_runs) = counted("b", "never");
    let (c, c_runs) = counted("c", "never");
    let inner = Sequential::new("inner")
        .with_sub_agents([
            FlowAgent::new(FnAgent::new("a", |cx, _| async move {
                cx.say("that is all");
                cx.exit();
                Ok(())
            })),
            b,
        ])
        .unwrap();
    let outer = Sequential::new("outer")
        .with_sub_agents([inner, c])
        .unwrap();
    let events = Run::new(outer, "go").start().await;
    assert_eq!(
        lines(&events),
        ["a@outer/inner/a: that is all", "a@outer/inner/a: => exit"]
    );
    assert_eq!(b_runs.load(Ordering::SeqCst), 0);
    assert_eq!(c_runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_error_ends_the_sequence() {
    let (s2, s2_runs) = counted("s2", "never");
    let w = Sequential::new("w")
        .with_sub_agents([
            FlowAgent::new(FnAgent::new("s1", |cx, _| async move {
                cx.say("trying");
                Err(agentweave_runtime::AgentError::failed(
                    "s1",
                    "the database is down",
                ))
            })),
            s2,
        ])
        .unwrap();
    let events = Run::new(w, "go").start().await;
    assert_eq!(
        lines(&events),
        [
            "s1@w/s1: trying",
            "s1@w/s1: error: agent 's1' failed: the database is down"
        ]
    );
    assert_eq!(s2_runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_workflow_without_sub_agents_says_how_to_give_it_some() {
    let events = Run::new(FlowAgent::new(Sequential::new("lonely")), "go")
        .start()
        .await;
    assert_eq!(
        lines(&events),
        [
            "lonely@lonely: error: Sequential workflow 'lonely' has no sub-agents to run; give it \
          some with set_sub_agents (or Sequential::with_sub_agents) and run the FlowAgent node \
          it returns"
        ]
    );
}

#[tokio::test]
async fn a_workflow_can_be_the_transfer_target_of_an_ordinary_agent() {
    let pipeline = Sequential::new("pipeline")
        .with_sub_agents([say("a", "1"), say("b", "2")])
        .unwrap();
    let triage = FlowAgent::new(FnAgent::new("triage", |cx, _| async move {
        cx.transfer("pipeline");
        Ok(())
    }))
    .with_sub_agents([pipeline])
    .unwrap();
    let events = Run::new(triage, "go").start().await;
    assert_eq!(
        lines(&events)[2..],
        [
            "a@triage/pipeline/a: 1".to_owned(),
            "b@triage/pipeline/a/b: 2".to_owned(),
        ]
    );
}

#[tokio::test]
async fn interrupt_in_child_two_of_three_then_resume_runs_only_the_rest() {
    let (s1, s1_runs) = counted("s1", "drafted");
    let (s3, s3_inputs) = recorder("s3", "published");
    let w = Sequential::new("w")
        .with_sub_agents([s1, gate("s2", "checking", "approve?"), s3])
        .unwrap();
    let run = Run::new(w, "go");
    let events = run.start().await;
    assert_eq!(
        lines(&events),
        [
            "s1@w/s1: drafted",
            "s2@w/s1/s2: checking",
            "s2@w/s1/s2: => interrupt w/s1/s2"
        ]
    );
    let info = events[2].interrupt().unwrap();
    assert_eq!(info.info, json!("approve?"));
    assert_eq!(info.address_string(), "agent:w;agent:s2");
    assert_eq!(frames(info), [r#"w@w {"child":1}"#, "s2@w/s1/s2"]);
    assert!(s3_inputs.lock().unwrap().is_empty());

    let resumed = run.resume(&events, &[("w/s1/s2", json!("yes"))]).await;
    assert_eq!(
        lines(&resumed),
        [
            r#"s2@w/s1/s2: resumed with "yes""#,
            "s3@w/s1/s2/s3: published"
        ]
    );
    assert_eq!(s1_runs.load(Ordering::SeqCst), 1, "s1 is not run again");
    assert_eq!(
        *s3_inputs.lock().unwrap(),
        [vec![
            user("go"),
            user("For context: [s1] said: drafted."),
            user("For context: [s2] said: checking."),
            user(r#"For context: [s2] said: resumed with "yes"."#),
        ]]
    );
}

#[tokio::test]
async fn nested_sequences_resume_at_the_inner_position() {
    let (c, _) = counted("c", "after inner");
    let inner = Sequential::new("inner")
        .with_sub_agents([say("a", "a1"), gate("b", "b asks", "ok?")])
        .unwrap();
    let outer = Sequential::new("outer")
        .with_sub_agents([say("first", "f"), inner, c])
        .unwrap();
    let run = Run::new(outer, "go");
    let events = run.start().await;
    let info = events.last().unwrap().interrupt().unwrap();
    assert_eq!(info.id, "outer/first/inner/a/b");
    assert_eq!(
        frames(info),
        [
            r#"outer@outer {"child":1}"#,
            r#"inner@outer/first/inner {"child":1}"#,
            "b@outer/first/inner/a/b",
        ]
    );
    let resumed = run.resume(&events, &[]).await;
    assert_eq!(
        lines(&resumed),
        [
            "b@outer/first/inner/a/b: resumed without data",
            "c@outer/first/inner/c: after inner"
        ]
    );
}

#[tokio::test]
async fn resume_without_the_workflow_state_is_a_clear_error() {
    let w = Sequential::new("w")
        .with_sub_agents([say("s1", "x"), gate("s2", "checking", "ok?")])
        .unwrap();
    let run = Run::new(w, "go");
    let events = run.start().await;
    let mut broken = interrupts(&events);
    broken[0].address[0].state = None;
    let resumed = run.resume_with(broken, HashMap::new()).await;
    assert_eq!(
        lines(&resumed),
        ["w@w: error: Sequential workflow 'w' cannot resume: its interrupt state has no 'child' \
          (state: none); the interrupt was not forwarded by this workflow"]
    );
}

#[tokio::test]
async fn resume_at_a_position_that_does_not_match_the_interrupted_agent_is_refused() {
    let w = Sequential::new("w")
        .with_sub_agents([say("s1", "x"), gate("s2", "checking", "ok?")])
        .unwrap();
    let run = Run::new(w, "go");
    let events = run.start().await;
    let mut moved = interrupts(&events);
    moved[0].address[0].state = Some(json!({ "child": 0 }));
    let resumed = run.resume_with(moved, HashMap::new()).await;
    assert_eq!(
        lines(&resumed),
        [
            "w@w: error: Sequential workflow 'w' cannot resume: the saved position says the \
          sub-agent at 'w/s1' was running, but the interrupted agent 's2' ran at 'w/s1/s2'; \
          was the tree changed since?"
        ]
    );
}

// ---------------------------------------------------------------------------------------
// Parallel

#[tokio::test]
async fn parallel_lanes_do_not_see_each_other_and_the_join_point_sees_both() {
    // Lane a speaks first; lane b only starts its second agent once a's words are recorded,
    // and still must not see them.
    let (tx, rx) = oneshot::channel::<()>();
    let tx = Arc::new(Mutex::new(Some(tx)));
    let rx = Arc::new(Mutex::new(Some(rx)));
    let a = FlowAgent::new(FnAgent::new("a", move |cx, _| {
        let tx = tx.lock().unwrap().take().unwrap();
        async move {
            cx.yield_event(AgentEvent::message(Message::assistant("a says")))
                .await;
            tx.send(()).unwrap();
            Ok(())
        }
    }));
    let (b2, b2_inputs) = recorder("b2", "b2 says");
    let b = FlowAgent::new(FnAgent::new("b", move |cx, _| {
        let rx = rx.lock().unwrap().take().unwrap();
        async move {
            rx.await.unwrap();
            cx.say("b says");
            cx.transfer("b2");
            Ok(())
        }
    }))
    .with_sub_agents([b2])
    .unwrap();
    let (join, join_inputs) = recorder("join", "joined");
    let p = Parallel::new("p").with_sub_agents([a, b]).unwrap();
    let root = Sequential::new("root").with_sub_agents([p, join]).unwrap();
    let events = Run::new(root, "go").start().await;
    assert_eq!(
        lines(&events),
        [
            "a@root/p/a: a says".to_owned(),
            "b@root/p/b: b says".to_owned(),
            r#"b@root/p/b:  [calls transfer_to_agent {"agent_name":"b2"}]"#.to_owned(),
            format!("b@root/p/b: {MOVED} [b2] => transfer b2"),
            "b2@root/p/b/b2: b2 says".to_owned(),
            "join@root/p/join: joined".to_owned(),
        ]
    );
    assert_eq!(
        *b2_inputs.lock().unwrap(),
        [vec![
            user("go"),
            user("For context: [b] said: b says."),
            user(
                r#"For context: [b] called tool: `transfer_to_agent` with arguments: {"agent_name":"b2"}."#
            ),
            user(&format!(
                "For context: [b] `transfer_to_agent` tool returned result: {MOVED} [b2]."
            )),
        ]],
        "lane b does not see lane a"
    );
    let join_input = join_inputs.lock().unwrap()[0].clone();
    assert_eq!(join_input.len(), 6);
    assert_eq!(join_input[1], user("For context: [a] said: a says."));
    assert_eq!(join_input[5], user("For context: [b2] said: b2 says."));
}

#[tokio::test]
async fn dropping_a_parallel_stream_cancels_every_lane() {
    struct Guard(Arc<AtomicUsize>);
    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(AtomicUsize::new(0));
    let lane = |name: &'static str| {
        let dropped = Arc::clone(&dropped);
        FlowAgent::new(FnAgent::new(name, move |cx, _| {
            let guard = Guard(Arc::clone(&dropped));
            async move {
                let _guard = guard;
                cx.say(format!("{name} started"));
                futures::future::pending::<()>().await;
                Ok(())
            }
        }))
    };
    let p = Parallel::new("p")
        .with_sub_agents([lane("a"), lane("b")])
        .unwrap();
    let mut events = Runner::new(p).run("go");
    let mut started = vec![
        line(&events.next().await.unwrap()),
        line(&events.next().await.unwrap()),
    ];
    started.sort();
    assert_eq!(started, ["a@p/a: a started", "b@p/b: b started"]);
    assert_eq!(dropped.load(Ordering::SeqCst), 0);
    drop(events);
    assert_eq!(dropped.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn exit_in_one_lane_lets_the_other_finish_then_ends_the_enclosing_workflow() {
    let (after, after_runs) = counted("after", "never");
    let p = Parallel::new("p")
        .with_sub_agents([
            FlowAgent::new(FnAgent::new("a", |cx, _| async move {
                cx.exit();
                Ok(())
            })),
            say("b", "b finished"),
        ])
        .unwrap();
    let root = Sequential::new("root").with_sub_agents([p, after]).unwrap();
    let mut got = lines(&Run::new(root, "go").start().await);
    got.sort();
    assert_eq!(got, ["a@root/p/a: => exit", "b@root/p/b: b finished"]);
    assert_eq!(after_runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn interrupt_in_one_lane_while_the_other_finishes_then_resume_only_that_lane() {
    // Lane b finishes after lane a has spoken; lane a then interrupts.
    let (tx, rx) = oneshot::channel::<()>();
    let tx = Arc::new(Mutex::new(Some(tx)));
    let rx = Arc::new(Mutex::new(Some(rx)));
    let resumed_input: Inputs = Arc::default();
    let store = Arc::clone(&resumed_input);
    let a = FlowAgent::new(
        FnAgent::new("a", move |cx, _| {
            let tx = tx.lock().unwrap().take();
            async move {
                cx.yield_event(AgentEvent::message(Message::assistant("a working")))
                    .await;
                tx.unwrap().send(()).unwrap();
                cx.interrupt(json!("need a human"));
                Ok(())
            }
        })
        .on_resume(move |cx, input, info| {
            store.lock().unwrap().push(contents(&input.messages));
            async move {
                cx.say(format!("a resumed with {}", info.data().unwrap()));
                Ok(())
            }
        }),
    );
    let b_runs = Arc::new(AtomicUsize::new(0));
    let n = Arc::clone(&b_runs);
    let b = FlowAgent::new(FnAgent::new("b", move |cx, _| {
        n.fetch_add(1, Ordering::SeqCst);
        let rx = rx.lock().unwrap().take();
        async move {
            rx.unwrap().await.unwrap();
            cx.say("b done");
            Ok(())
        }
    }));
    let (join, join_inputs) = recorder("join", "joined");
    let p = Parallel::new("p").with_sub_agents([a, b]).unwrap();
    let root = Sequential::new("root").with_sub_agents([p, join]).unwrap();
    let run = Run::new(root, "go");
    let events = run.start().await;
    assert_eq!(
        lines(&events),
        [
            "a@root/p/a: a working",
            "b@root/p/b: b done",
            "a@root/p/a: => interrupt root/p/a"
        ]
    );
    assert_eq!(
        frames(events[2].interrupt().unwrap()),
        [
            r#"root@root {"child":0}"#,
            r#"p@root/p {"interrupted":["a"]}"#,
            "a@root/p/a"
        ]
    );
    assert!(join_inputs.lock().unwrap().is_empty());

    let resumed = run
        .resume(&events, &[("root/p/a", json!("approved"))])
        .await;
    assert_eq!(
        lines(&resumed),
        [
            r#"a@root/p/a: a resumed with "approved""#,
            "join@root/p/join: joined"
        ]
    );
    assert_eq!(b_runs.load(Ordering::SeqCst), 1, "b is not run again");
    assert_eq!(
        *resumed_input.lock().unwrap(),
        [vec![user("go"), (Role::Assistant, "a working".to_owned())]],
        "the resumed lane still does not see its sibling"
    );
    assert_eq!(
        join_inputs.lock().unwrap()[0],
        [
            user("go"),
            user("For context: [a] said: a working."),
            user("For context: [b] said: b done."),
            user(r#"For context: [a] said: a resumed with "approved"."#),
        ]
    );
}

#[tokio::test]
async fn both_lanes_interrupt_and_both_resume() {
    let (after, _) = counted("after", "all done");
    let p = Parallel::new("p")
        .with_sub_agents([gate("a", "a asks", "a?"), gate("b", "b asks", "b?")])
        .unwrap();
    let root = Sequential::new("root").with_sub_agents([p, after]).unwrap();
    let run = Run::new(root, "go");
    let events = run.start().await;
    let mut got = lines(&events);
    // The interrupts come last, once both lanes have ended.
    let tail = got.split_off(2);
    got.sort();
    assert_eq!(got, ["a@root/p/a: a asks", "b@root/p/b: b asks"]);
    let mut tail_sorted = tail.clone();
    tail_sorted.sort();
    assert_eq!(
        tail_sorted,
        [
            "a@root/p/a: => interrupt root/p/a",
            "b@root/p/b: => interrupt root/p/b"
        ]
    );
    for info in interrupts(&events) {
        let state = info.address[1].state.clone().unwrap();
        let mut lanes: Vec<String> = serde_json::from_value(state["interrupted"].clone()).unwrap();
        lanes.sort();
        assert_eq!(lanes, ["a", "b"]);
    }

    let resumed = run
        .resume(&events, &[("root/p/a", json!(1)), ("root/p/b", json!(2))])
        .await;
    let mut got = lines(&resumed);
    assert_eq!(got.pop().unwrap(), "after@root/p/after: all done");
    got.sort();
    assert_eq!(
        got,
        ["a@root/p/a: resumed with 1", "b@root/p/b: resumed with 2"]
    );
}

#[tokio::test]
async fn parallel_resume_missing_an_interrupted_lane_is_refused() {
    let p = Parallel::new("p")
        .with_sub_agents([gate("a", "a asks", "a?"), gate("b", "b asks", "b?")])
        .unwrap();
    let run = Run::new(p, "go");
    let events = run.start().await;
    let only_one: Vec<InterruptInfo> = interrupts(&events)
        .into_iter()
        .filter(|i| i.id == "p/a")
        .collect();
    let resumed = run.resume_with(only_one, HashMap::new()).await;
    assert_eq!(
        lines(&resumed),
        [
            "p@p: error: Parallel workflow 'p' cannot resume: lane 'b' was interrupted but the \
          resume info has no interrupt point in it; resume with every interrupt of the run"
        ]
    );
}

// ---------------------------------------------------------------------------------------
// Loop

#[tokio::test]
async fn loop_runs_up_to_its_limit_and_paths_keep_growing() {
    let (b, b_inputs) = recorder("b", "b");
    let l = Loop::new("l", 3)
        .with_sub_agents([say("a", "a"), b])
        .unwrap();
    let events = Run::new(l, "go").start().await;
    assert_eq!(
        lines(&events),
        [
            "a@l/a: a",
            "b@l/a/b: b",
            "a@l/a/b/a: a",
            "b@l/a/b/a/b: b",
            "a@l/a/b/a/b/a: a",
            "b@l/a/b/a/b/a/b: b",
        ]
    );
    let inputs = b_inputs.lock().unwrap();
    assert_eq!(inputs.len(), 3);
    assert_eq!(
        inputs[1],
        [
            user("go"),
            user("For context: [a] said: a."),
            (Role::Assistant, "b".to_owned()),
            user("For context: [a] said: a."),
        ]
    );
}

#[tokio::test]
async fn break_loop_stops_the_loop_and_names_the_agent_that_broke_it() {
    let checks = Arc::new(AtomicUsize::new(0));
    let n = Arc::clone(&checks);
    let checker = FlowAgent::new(FnAgent::new("checker", move |cx, _| {
        let round = n.fetch_add(1, Ordering::SeqCst) + 1;
        async move {
            if round == 2 {
                cx.say("good enough");
                cx.break_loop();
                // Events after the break still belong to this run.
                cx.say("stopping");
            } else {
                cx.say("again");
            }
            Ok(())
        }
    }));
    let l = Loop::new("l", 5)
        .with_sub_agents([say("writer", "draft"), checker])
        .unwrap();
    let events = Run::new(l, "go").start().await;
    assert_eq!(
        lines(&events),
        [
            "writer@l/writer: draft",
            "checker@l/writer/checker: again",
            "writer@l/writer/checker/writer: draft",
            "checker@l/writer/checker/writer/checker: good enough",
            "checker@l/writer/checker/writer/checker: => break_loop checker",
            "checker@l/writer/checker/writer/checker: stopping",
        ]
    );
    assert_eq!(checks.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn break_loop_inside_a_sequence_stops_the_loop_after_the_sequence() {
    let s = Sequential::new("s")
        .with_sub_agents([
            FlowAgent::new(FnAgent::new("breaker", |cx, _| async move {
                cx.break_loop();
                Ok(())
            })),
            say("tail", "tail still runs"),
        ])
        .unwrap();
    let l = Loop::new("l", 3).with_sub_agents([s]).unwrap();
    let events = Run::new(l, "go").start().await;
    assert_eq!(
        lines(&events),
        [
            "breaker@l/s/breaker: => break_loop breaker",
            "tail@l/s/breaker/tail: tail still runs"
        ]
    );
}

#[tokio::test]
async fn a_break_stops_only_the_innermost_loop() {
    let inner = Loop::new("inner", 5)
        .with_sub_agents([FlowAgent::new(FnAgent::new(
            "breaker",
            |cx, _| async move {
                cx.say("break");
                cx.break_loop();
                Ok(())
            },
        ))])
        .unwrap();
    let outer = Loop::new("outer", 2).with_sub_agents([inner]).unwrap();
    let events = Run::new(outer, "go").start().await;
    assert_eq!(
        lines(&events),
        [
            "breaker@outer/inner/breaker: break",
            "breaker@outer/inner/breaker: => break_loop breaker",
            "breaker@outer/inner/inner/breaker: break",
            "breaker@outer/inner/inner/breaker: => break_loop breaker",
        ]
    );
}

#[tokio::test]
async fn an_unbounded_loop_ends_by_break_and_a_zero_limit_is_an_error() {
    let turns = Arc::new(AtomicUsize::new(0));
    let n = Arc::clone(&turns);
    let worker = FlowAgent::new(FnAgent::new("w", move |cx, _| {
        let turn = n.fetch_add(1, Ordering::SeqCst) + 1;
        async move {
            if turn == 4 {
                cx.break_loop();
            }
            Ok(())
        }
    }));
    let l = Loop::unbounded("l").with_sub_agents([worker]).unwrap();
    let events = Run::new(l, "go").start().await;
    assert_eq!(lines(&events), ["w@l/w/w/w/w: => break_loop w"]);
    assert_eq!(turns.load(Ordering::SeqCst), 4);

    let zero = Loop::new("z", 0).with_sub_agents([say("a", "a")]).unwrap();
    let events = Run::new(zero, "go").start().await;
    assert_eq!(
        lines(&events),
        [
            "z@z: error: Loop workflow 'z' has max_iterations 0, so it would never run its \
          sub-agents; use at least 1, or Loop::unbounded for a loop that only BreakLoop or Exit \
          ends"
        ]
    );
}

#[tokio::test]
async fn exit_and_errors_end_a_loop() {
    let l = Loop::new("l", 3)
        .with_sub_agents([FlowAgent::new(FnAgent::new("a", |cx, _| async move {
            cx.exit();
            Ok(())
        }))])
        .unwrap();
    assert_eq!(lines(&Run::new(l, "go").start().await), ["a@l/a: => exit"]);

    let turns = Arc::new(AtomicUsize::new(0));
    let n = Arc::clone(&turns);
    let l = Loop::new("l", 10)
        .with_sub_agents([FlowAgent::new(FnAgent::new("a", move |cx, _| {
            let turn = n.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                if turn == 2 {
                    return Err(agentweave_runtime::AgentError::failed("a", "out of ideas"));
                }
                cx.say(format!("idea {turn}"));
                Ok(())
            }
        }))])
        .unwrap();
    assert_eq!(
        lines(&Run::new(l, "go").start().await),
        [
            "a@l/a: idea 1",
            "a@l/a/a: error: agent 'a' failed: out of ideas"
        ]
    );
    assert_eq!(turns.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn interrupt_in_loop_iteration_two_then_resume_carries_on_from_there() {
    let (worker, worker_runs) = counted("worker", "work");
    let checks = Arc::new(AtomicUsize::new(0));
    let n = Arc::clone(&checks);
    let review = FlowAgent::new(
        FnAgent::new("review", move |cx, _| {
            let round = n.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                if round == 2 {
                    cx.interrupt(json!("look at round 2"));
                } else {
                    cx.say(format!("round {round} ok"));
                }
                Ok(())
            }
        })
        .on_resume(|cx, _, info| async move {
            cx.say(format!("round 2 ok: {}", info.data().unwrap()));
            Ok(())
        }),
    );
    let l = Loop::new("l", 3).with_sub_agents([worker, review]).unwrap();
    let run = Run::new(l, "go");
    let events = run.start().await;
    assert_eq!(
        lines(&events),
        [
            "worker@l/worker: work",
            "review@l/worker/review: round 1 ok",
            "worker@l/worker/review/worker: work",
            "review@l/worker/review/worker/review: => interrupt l/worker/review/worker/review",
        ]
    );
    assert_eq!(
        frames(events[3].interrupt().unwrap()),
        [
            r#"l@l {"child":1,"iteration":1}"#,
            "review@l/worker/review/worker/review"
        ]
    );
    let resumed = run
        .resume(&events, &[("l/worker/review/worker/review", json!("fine"))])
        .await;
    assert_eq!(
        lines(&resumed),
        [
            r#"review@l/worker/review/worker/review: round 2 ok: "fine""#,
            "worker@l/worker/review/worker/review/worker: work",
            "review@l/worker/review/worker/review/worker/review: round 3 ok",
        ]
    );
    assert_eq!(worker_runs.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_loop_of_a_parallel_resumes_the_interrupted_lane_in_its_iteration() {
    let rounds = Arc::new(AtomicUsize::new(0));
    let n = Arc::clone(&rounds);
    let slow = FlowAgent::new(
        FnAgent::new("slow", move |cx, _| {
            let round = n.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                if round == 1 {
                    cx.interrupt(json!("wait"));
                } else {
                    cx.say(format!("slow {round}"));
                }
                Ok(())
            }
        })
        .on_resume(|cx, _, _| async move {
            cx.say("slow resumed");
            Ok(())
        }),
    );
    let p = Parallel::new("p")
        .with_sub_agents([slow, say("fast", "fast")])
        .unwrap();
    let l = Loop::new("l", 2).with_sub_agents([p]).unwrap();
    let run = Run::new(l, "go");
    let events = run.start().await;
    assert_eq!(
        lines(&events),
        [
            "fast@l/p/fast: fast",
            "slow@l/p/slow: => interrupt l/p/slow"
        ]
    );
    assert_eq!(
        frames(events[1].interrupt().unwrap()),
        [
            r#"l@l {"child":0,"iteration":0}"#,
            r#"p@l/p {"interrupted":["slow"]}"#,
            "slow@l/p/slow"
        ]
    );
    let resumed = run.resume(&events, &[]).await;
    let got = lines(&resumed);
    assert_eq!(got[0], "slow@l/p/slow: slow resumed");
    let mut second: Vec<String> = got[1..].to_vec();
    second.sort();
    assert_eq!(second, ["fast@l/p/p/fast: fast", "slow@l/p/p/slow: slow 2"]);
}

// ---------------------------------------------------------------------------------------
// Deterministic transfer

fn after(name: &'static str, text: &'static str, to: &'static str) -> FlowAgent {
    FlowAgent::new(DeterministicTransfer::new(
        FnAgent::new(name, move |cx, _| async move {
            cx.say(text);
            Ok(())
        }),
        [to],
    ))
}

#[tokio::test]
async fn deterministic_transfer_hands_off_after_the_agent_ends() {
    let (reviewer, inputs) = recorder("reviewer", "reviewed");
    let tree = after("writer", "drafted", "reviewer")
        .with_sub_agents([reviewer])
        .unwrap();
    let events = Run::new(tree, "go").start().await;
    assert_eq!(
        lines(&events),
        [
            "writer@writer: drafted".to_owned(),
            r#"writer@writer:  [calls transfer_to_agent {"agent_name":"reviewer"}]"#.to_owned(),
            format!("writer@writer: {MOVED} [reviewer] => transfer reviewer"),
            "reviewer@writer/reviewer: reviewed".to_owned(),
        ]
    );
    assert_eq!(
        inputs.lock().unwrap()[0],
        [
            user("go"),
            user("For context: [writer] said: drafted."),
            user(r#"For context: [writer] called tool: `transfer_to_agent` with arguments: {"agent_name":"reviewer"}."#),
            user(&format!("For context: [writer] `transfer_to_agent` tool returned result: {MOVED} [reviewer].")),
        ]
    );
}

#[tokio::test]
async fn deterministic_transfer_does_not_hand_off_after_exit_or_an_error() {
    let (reviewer, runs) = counted("reviewer", "never");
    let exits = FlowAgent::new(DeterministicTransfer::new(
        FnAgent::new("writer", |cx, _| async move {
            cx.exit();
            Ok(())
        }),
        ["reviewer"],
    ))
    .with_sub_agents([reviewer])
    .unwrap();
    assert_eq!(
        lines(&Run::new(exits, "go").start().await),
        ["writer@writer: => exit"]
    );

    let (reviewer, runs2) = counted("reviewer", "never");
    let fails = FlowAgent::new(DeterministicTransfer::new(
        FnAgent::new("writer", |_, _| async move {
            Err(agentweave_runtime::AgentError::failed("writer", "no ink"))
        }),
        ["reviewer"],
    ))
    .with_sub_agents([reviewer])
    .unwrap();
    assert_eq!(
        lines(&Run::new(fails, "go").start().await),
        ["writer@writer: error: agent 'writer' failed: no ink"]
    );
    assert_eq!(
        runs.load(Ordering::SeqCst) + runs2.load(Ordering::SeqCst),
        0
    );
}

#[tokio::test]
async fn deterministic_transfer_inside_a_sequence_hands_off_within_its_sub_agent() {
    let s1 = after("s1", "first", "helper")
        .with_sub_agents([say("helper", "helped")])
        .unwrap();
    let w = Sequential::new("w")
        .with_sub_agents([s1, say("s2", "second")])
        .unwrap();
    let events = Run::new(w, "go").start().await;
    assert_eq!(
        lines(&events),
        [
            "s1@w/s1: first".to_owned(),
            r#"s1@w/s1:  [calls transfer_to_agent {"agent_name":"helper"}]"#.to_owned(),
            format!("s1@w/s1: {MOVED} [helper] => transfer helper"),
            "helper@w/s1/helper: helped".to_owned(),
            "s2@w/s1/s2: second".to_owned(),
        ]
    );
}

#[tokio::test]
async fn a_wrapped_workflow_hands_back_to_its_parent_when_it_is_done() {
    let visits = Arc::new(AtomicUsize::new(0));
    let v = Arc::clone(&visits);
    let supervisor = FlowAgent::new(FnAgent::new("sup", move |cx, _| {
        let first = v.fetch_add(1, Ordering::SeqCst) == 0;
        async move {
            if first {
                cx.transfer("pipeline");
            } else {
                cx.say("all done");
            }
            Ok(())
        }
    }));
    let pipeline = FlowAgent::new(DeterministicTransfer::new(
        Sequential::new("pipeline"),
        ["sup"],
    ))
    .with_sub_agents([say("a", "a1"), say("b", "b1")])
    .unwrap();
    let tree = supervisor.with_sub_agents([pipeline]).unwrap();
    // The wrapper passes on runs_its_sub_agents, so a and b are barred from the pipeline.
    assert_eq!(tree.shape(), "sup(pipeline(a^,b^))");
    let events = Run::new(tree, "go").start().await;
    assert_eq!(
        lines(&events)[2..],
        [
            "a@sup/pipeline/a: a1".to_owned(),
            "b@sup/pipeline/a/b: b1".to_owned(),
            r#"pipeline@sup/pipeline:  [calls transfer_to_agent {"agent_name":"sup"}]"#.to_owned(),
            format!("pipeline@sup/pipeline: {MOVED} [sup] => transfer sup"),
            "sup@sup/pipeline/sup: all done".to_owned(),
        ]
    );
}

#[tokio::test]
async fn deterministic_transfer_waits_for_resume_then_hands_off() {
    let wrapped = FlowAgent::new(DeterministicTransfer::new(
        FnAgent::new("approver", |cx, _| async move {
            cx.interrupt(json!("approve?"));
            Ok(())
        })
        .on_resume(|cx, _, info| async move {
            cx.say(format!("approved: {}", info.data().unwrap()));
            Ok(())
        }),
        ["payer"],
    ))
    .with_sub_agents([say("payer", "paid")])
    .unwrap();
    let run = Run::new(wrapped, "go");
    let events = run.start().await;
    assert_eq!(lines(&events), ["approver@approver: => interrupt approver"]);
    let resumed = run.resume(&events, &[("approver", json!(true))]).await;
    assert_eq!(
        lines(&resumed),
        [
            "approver@approver: approved: true".to_owned(),
            r#"approver@approver:  [calls transfer_to_agent {"agent_name":"payer"}]"#.to_owned(),
            format!("approver@approver: {MOVED} [payer] => transfer payer"),
            "payer@approver/payer: paid".to_owned(),
        ]
    );
}
