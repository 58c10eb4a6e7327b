//! Orchestration semantics of flow trees: run paths, history, transfers, construction errors,
//! isolation and panics.

use crate::support;
use support::{contents, user};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agentweave_runtime::RunRequest;
use agentweave_runtime::{
    set_sub_agents, Action, AgentError, AgentEvent, AgentInfo, AgentInput, ContextPolicy,
    EventOutput, FlowAgent, FlowError, FnAgent, HistoryEntry, Message, MessageRef, OnSubAgents,
    Role, Runner, Session, ToolCall,
};
use futures::StreamExt;

/// What a test compares: who emitted what, where, and with which action.
#[derive(Debug, PartialEq)]
struct Seen {
    agent: String,
    path: String,
    content: Option<String>,
    action: Option<Action>,
    error: Option<String>,
}

fn seen(e: &AgentEvent) -> Seen {
    Seen {
        agent: e.agent_name().to_owned(),
        path: e.run_path().to_string(),
        content: e.message_output().map(|m| m.content.clone()),
        action: e.action.clone(),
        error: e.error.as_ref().map(ToString::to_string),
    }
}

fn s(agent: &str, path: &str, content: Option<&str>, action: Option<Action>) -> Seen {
    Seen {
        agent: agent.into(),
        path: path.into(),
        content: content.map(Into::into),
        action,
        error: None,
    }
}

async fn collect(runner: &Runner, text: &str) -> Vec<AgentEvent> {
    runner.run(text).collect().await
}

/// An agent that says `text` and then transfers to `to` (if any).
fn hop(name: &'static str, text: &'static str, to: Option<&'static str>) -> FlowAgent {
    FlowAgent::new(FnAgent::new(name, move |cx, _| async move {
        cx.say(text);
        if let Some(to) = to {
            cx.transfer(to);
        }
        Ok(())
    }))
}

/// An agent that stores the input it received, then says `text`.
fn recorder(name: &'static str, text: &'static str) -> (FlowAgent, Arc<Mutex<Vec<Vec<Message>>>>) {
    let inputs = Arc::new(Mutex::new(Vec::new()));
    let store = Arc::clone(&inputs);
    let agent = FnAgent::new(name, move |cx, input: AgentInput| {
        let store = Arc::clone(&store);
        async move {
            store
                .lock()
                .unwrap()
                .push(input.messages.iter().map(|m| Message::clone(m)).collect());
            cx.say(text);
            Ok(())
        }
    });
    (FlowAgent::new(agent), inputs)
}

fn transfer(to: &str) -> Option<Action> {
    Some(Action::transfer_to(to))
}

#[tokio::test]
async fn run_paths_at_depth_one_two_and_three() {
    let root = hop("root", "at root", Some("a"));
    let a = hop("a", "at a", Some("b"));
    let b = hop("b", "at b", None);
    let tree = set_sub_agents(root, [set_sub_agents(a, [b]).unwrap()]).unwrap();
    let events = collect(&Runner::new(tree), "go").await;
    let got: Vec<Seen> = events.iter().map(seen).collect();
    let moved = |to: &str| format!("successfully transferred to agent [{to}]");
    assert_eq!(
        got,
        vec![
            s("root", "root", Some("at root"), None),
            s("root", "root", Some(""), None),
            s("root", "root", Some(&moved("a")), transfer("a")),
            s("a", "root/a", Some("at a"), None),
            s("a", "root/a", Some(""), None),
            s("a", "root/a", Some(&moved("b")), transfer("b")),
            s("b", "root/a/b", Some("at b"), None),
        ]
    );
}

#[tokio::test]
async fn run_path_records_every_hop_of_a_round_trip() {
    // A -> B -> A -> C gives C the path A/B/A/C.
    let visits = Arc::new(AtomicUsize::new(0));
    let v = Arc::clone(&visits);
    let a = FlowAgent::new(FnAgent::new("A", move |cx, _| {
        let first = v.fetch_add(1, Ordering::SeqCst) == 0;
        async move {
            cx.transfer(if first { "B" } else { "C" });
            Ok(())
        }
    }));
    let tree = set_sub_agents(a, [hop("B", "b", Some("A")), hop("C", "c", None)]).unwrap();
    let events = collect(&Runner::new(tree), "go").await;
    let last = events.last().unwrap();
    assert_eq!(last.run_path().to_string(), "A/B/A/C");
    assert_eq!(last.message_output().unwrap().content, "c");
    let paths: Vec<String> = events.iter().map(|e| e.run_path().to_string()).collect();
    assert_eq!(
        paths,
        ["A", "A", "A/B", "A/B", "A/B", "A/B/A", "A/B/A", "A/B/A/C"]
    );
}

/// A says something, calls a lookup tool, gets its result and transfers to B.
fn talkative_a() -> FlowAgent {
    FlowAgent::new(FnAgent::new("A", |cx, _| async move {
        cx.say("let me check");
        cx.send(Message::assistant_tool_calls(
            "",
            vec![ToolCall::new("c1", "lookup", r#"{"order":7}"#)],
        ));
        cx.send(Message::tool("shipped", "c1", "lookup"));
        cx.transfer("B");
        Ok(())
    }))
}

async fn b_input_with(configure: impl FnOnce(FlowAgent) -> FlowAgent) -> Vec<Message> {
    let (b, inputs) = recorder("B", "done");
    let tree = set_sub_agents(talkative_a(), [configure(b)]).unwrap();
    let events = collect(&Runner::new(tree), "where is my order?").await;
    assert_eq!(events.last().unwrap().run_path().to_string(), "A/B");
    let inputs = inputs.lock().unwrap();
    assert_eq!(inputs.len(), 1, "B runs once");
    inputs[0].clone()
}

#[tokio::test]
async fn default_rewriter_turns_other_agents_messages_into_context() {
    let input = b_input_with(|b| b).await;
    assert_eq!(
        contents(&input),
        vec![
            user("where is my order?"),
            user("For context: [A] said: let me check."),
            user(r#"For context: [A] called tool: `lookup` with arguments: {"order":7}."#),
            user("For context: [A] `lookup` tool returned result: shipped."),
            user(r#"For context: [A] called tool: `transfer_to_agent` with arguments: {"agent_name":"B"}."#),
            user("For context: [A] `transfer_to_agent` tool returned result: successfully transferred to agent [B]."),
        ]
    );
}

#[tokio::test]
async fn skip_transfer_messages_drops_the_transfer_call_and_its_result() {
    let input = b_input_with(|b| b.skip_transfer_messages(true)).await;
    assert_eq!(
        contents(&input),
        vec![
            user("where is my order?"),
            user("For context: [A] said: let me check."),
            user(r#"For context: [A] called tool: `lookup` with arguments: {"order":7}."#),
            user("For context: [A] `lookup` tool returned result: shipped."),
        ]
    );
}

#[tokio::test]
async fn user_input_only_policy_hides_other_agents() {
    let input = b_input_with(|b| b.context(ContextPolicy::UserInputOnly)).await;
    assert_eq!(contents(&input), vec![user("where is my order?")]);
}

#[tokio::test]
async fn last_n_policy_keeps_user_input_and_the_last_entries() {
    let input = b_input_with(|b| b.context(ContextPolicy::LastN(2))).await;
    assert_eq!(
        contents(&input),
        vec![
            user("where is my order?"),
            user(r#"For context: [A] called tool: `transfer_to_agent` with arguments: {"agent_name":"B"}."#),
            user("For context: [A] `transfer_to_agent` tool returned result: successfully transferred to agent [B]."),
        ]
    );
}

#[tokio::test]
async fn last_n_policy_combines_with_skip_transfer_messages() {
    let input = b_input_with(|b| {
        b.context(ContextPolicy::LastN(1))
            .skip_transfer_messages(true)
    })
    .await;
    assert_eq!(
        contents(&input),
        vec![
            user("where is my order?"),
            user("For context: [A] `lookup` tool returned result: shipped."),
        ]
    );
}

#[tokio::test]
async fn custom_rewriter_sees_every_entry_and_decides() {
    let input = b_input_with(|b| {
        b.history_rewriter(|agent: &str, entries: &[HistoryEntry]| {
            let summary = entries
                .iter()
                .map(|e| {
                    if e.is_user_input {
                        format!("user:{}", e.message.content)
                    } else {
                        format!("{}:{}:{}", e.agent_name, e.message.role, e.message.content)
                    }
                })
                .collect::<Vec<_>>()
                .join("|");
            Ok(vec![MessageRef::new(Message::system(format!(
                "{agent} sees {summary}"
            )))])
        })
    })
    .await;
    assert_eq!(
        contents(&input),
        vec![(
            Role::System,
            "B sees user:where is my order?|A:assistant:let me check|A:assistant:|A:tool:shipped|A:assistant:|A:tool:successfully transferred to agent [B]".to_owned()
        )]
    );
}

#[tokio::test]
async fn custom_rewriter_error_becomes_an_error_event() {
    let (b, inputs) = recorder("B", "never");
    let b = b.history_rewriter(|agent: &str, _: &[HistoryEntry]| {
        Err(AgentError::failed(agent, "history too long"))
    });
    let tree = set_sub_agents(talkative_a(), [b]).unwrap();
    let events = collect(&Runner::new(tree), "q").await;
    let last = events.last().unwrap();
    assert_eq!(
        last.error.as_ref().unwrap().to_string(),
        "agent 'B' failed: history too long"
    );
    assert!(inputs.lock().unwrap().is_empty(), "B never ran");
}

#[tokio::test]
async fn an_agents_own_earlier_messages_reach_it_unrewritten() {
    // A says hi and transfers to B; B hands back; A sees its own words as it said them.
    let second_a_input = Arc::new(Mutex::new(None));
    let slot = Arc::clone(&second_a_input);
    let runs = Arc::new(AtomicUsize::new(0));
    let a = FlowAgent::new(FnAgent::new("A", move |cx, input: AgentInput| {
        let n = runs.fetch_add(1, Ordering::SeqCst);
        let slot = Arc::clone(&slot);
        async move {
            if n == 0 {
                cx.say("hi from A");
                cx.transfer("B");
            } else {
                *slot.lock().unwrap() = Some(input.messages.clone());
                cx.say("back in A");
            }
            Ok(())
        }
    }));
    let tree = set_sub_agents(a, [hop("B", "over to you", Some("A"))]).unwrap();
    let events = collect(&Runner::new(tree), "start").await;
    assert_eq!(events.last().unwrap().run_path().to_string(), "A/B/A");
    let input = second_a_input.lock().unwrap().take().unwrap();
    let got: Vec<(Role, &str)> = input.iter().map(|m| (m.role, &*m.content)).collect();
    assert_eq!(
        got,
        vec![
            (Role::User, "start"),
            (Role::Assistant, "hi from A"),
            (Role::Assistant, ""),
            (Role::Tool, "successfully transferred to agent [B]"),
            (Role::User, "For context: [B] said: over to you."),
            (Role::User, r#"For context: [B] called tool: `transfer_to_agent` with arguments: {"agent_name":"A"}."#),
            (Role::User, "For context: [B] `transfer_to_agent` tool returned result: successfully transferred to agent [A]."),
        ]
    );
    // A's own messages are the very messages it emitted, shared, not copies.
    assert_eq!(input[2].tool_calls[0].name, "transfer_to_agent");
}

#[tokio::test]
async fn transfer_to_parent_runs_the_parent_again() {
    let parent = hop("desk", "desk here", Some("refund"));
    let tree = set_sub_agents(parent.clone(), [hop("refund", "not mine", Some("desk"))]).unwrap();
    // The desk transfers to refund every time; stop the loop with a bounded prefix.
    let events: Vec<AgentEvent> = Runner::new(tree).run("x").take(9).collect().await;
    let paths: Vec<String> = events.iter().map(|e| e.run_path().to_string()).collect();
    assert_eq!(
        paths,
        [
            "desk",
            "desk",
            "desk",
            "desk/refund",
            "desk/refund",
            "desk/refund",
            "desk/refund/desk",
            "desk/refund/desk",
            "desk/refund/desk"
        ]
    );
}

#[tokio::test]
async fn transfer_to_a_barred_parent_is_refused() {
    let desk_runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&desk_runs);
    let desk = FlowAgent::new(FnAgent::new("desk", move |cx, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move {
            cx.transfer("refund");
            Ok(())
        }
    }));
    let refund = hop("refund", "back you go", Some("desk")).disallow_transfer_to_parent(true);
    let tree = set_sub_agents(desk, [refund]).unwrap();
    let events = collect(&Runner::new(tree), "x").await;
    let last = seen(events.last().unwrap());
    assert_eq!(
        last,
        Seen {
            agent: "refund".into(),
            path: "desk/refund".into(),
            content: None,
            action: None,
            error: Some(
                "transfer refused: agent 'refund' may not transfer to its parent 'desk' \
                 (it was built with disallow_transfer_to_parent)"
                    .into()
            ),
        }
    );
    assert_eq!(events.len(), 6, "nothing runs after the refusal");
    assert_eq!(
        desk_runs.load(Ordering::SeqCst),
        1,
        "the desk does not run again"
    );
}

#[tokio::test]
async fn transfer_to_an_unknown_agent_is_one_error_event_and_nothing_more() {
    let (refund, refund_inputs) = recorder("refund", "never");
    let root = hop("triage", "routing", Some("billing"));
    let tree = set_sub_agents(root, [refund]).unwrap();
    let session = Session::new();
    let events: Vec<AgentEvent> = Runner::new(tree)
        .run(RunRequest::new([Message::user("q")]).session(Arc::clone(&session)))
        .collect()
        .await;
    assert_eq!(events.len(), 4);
    let errors: Vec<String> = events
        .iter()
        .filter_map(|e| e.error.as_ref().map(ToString::to_string))
        .collect();
    assert_eq!(
        errors,
        ["transfer failed: agent 'billing' not found when transferring from 'triage'"]
    );
    assert_eq!(events[3].run_path().to_string(), "triage");
    assert!(matches!(
        events[3].error,
        Some(AgentError::TransferTargetNotFound { .. })
    ));
    assert!(refund_inputs.lock().unwrap().is_empty());
    // What triage said is recorded; the error is not part of the history.
    assert_eq!(session.len(), 3);
}

#[tokio::test]
async fn transfer_to_a_sibling_or_grandchild_is_not_allowed() {
    // Only children and the parent are neighbours.
    let tree = set_sub_agents(
        hop("root", "r", Some("a")),
        [
            set_sub_agents(hop("a", "a", Some("b")), [hop("grand", "g", None)]).unwrap(),
            hop("b", "b", None),
        ],
    )
    .unwrap();
    let events = collect(&Runner::new(tree), "x").await;
    assert_eq!(
        events.last().unwrap().error.as_ref().unwrap().to_string(),
        "transfer failed: agent 'b' not found when transferring from 'a'"
    );
}

#[test]
fn set_sub_agents_twice_is_an_error() {
    let tree = set_sub_agents(hop("p", "", None), [hop("a", "", None)]).unwrap();
    let err = set_sub_agents(tree, [hop("b", "", None)]).unwrap_err();
    assert_eq!(err, FlowError::AlreadyHasSubAgents { agent: "p".into() });
    assert_eq!(
        err.to_string(),
        "agent 'p' already has sub-agents; give an agent all its sub-agents in one set_sub_agents call"
    );
}

#[test]
fn a_child_given_a_second_parent_is_an_error() {
    let first = set_sub_agents(hop("p1", "", None), [hop("child", "", None)]).unwrap();
    let child = first.sub_agents().remove(0);
    let err = set_sub_agents(hop("p2", "", None), [child]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "agent 'child' already has parent 'p1'; an agent can have only one parent (build a second instance for the other tree)"
    );
}

#[test]
fn duplicate_names_and_empty_children_are_errors() {
    let err = set_sub_agents(hop("p", "", None), [hop("p", "", None)]).unwrap_err();
    assert_eq!(err, FlowError::DuplicateName { name: "p".into() });
    let err = set_sub_agents(hop("p", "", None), []).unwrap_err();
    assert_eq!(err, FlowError::NoSubAgents { agent: "p".into() });
}

#[test]
fn joining_trees_copies_them() {
    let a = hop("a", "", None);
    let tree = set_sub_agents(a.clone(), [hop("b", "", None)]).unwrap();
    // The handle we kept is still a lone agent; the joined tree has the child.
    assert!(a.sub_agents().is_empty());
    assert_eq!(tree.sub_agents()[0].name(), "b");
    assert_eq!(tree.sub_agents()[0].parent().unwrap().name(), "a");
    assert_eq!(tree.shape(), "a(b)");
}

#[derive(Default)]
struct HookLog(Mutex<Vec<String>>);

struct Hooked {
    name: &'static str,
    log: Arc<HookLog>,
    refuse_parent: bool,
}

impl agentweave_runtime::Agent for Hooked {
    fn name(&self) -> &str {
        self.name
    }
    fn run(
        self: Arc<Self>,
        _cx: agentweave_runtime::RunContext,
        _input: AgentInput,
    ) -> agentweave_runtime::EventStream {
        agentweave_runtime::EventStream::empty()
    }
    fn on_sub_agents(&self) -> Option<&dyn OnSubAgents> {
        Some(self)
    }
}

impl OnSubAgents for Hooked {
    fn on_set_sub_agents(&self, sub_agents: &[AgentInfo]) -> Result<(), FlowError> {
        let names: Vec<&str> = sub_agents.iter().map(|a| &*a.name).collect();
        self.log
            .0
            .lock()
            .unwrap()
            .push(format!("{} got {}", self.name, names.join(",")));
        Ok(())
    }
    fn on_set_as_sub_agent(&self, parent: &AgentInfo) -> Result<(), FlowError> {
        if self.refuse_parent {
            return Err(FlowError::Hook {
                agent: self.name.into(),
                message: "I work alone".into(),
            });
        }
        self.log
            .0
            .lock()
            .unwrap()
            .push(format!("{} under {}", self.name, parent.name));
        Ok(())
    }
    fn on_disallow_transfer_to_parent(&self) -> Result<(), FlowError> {
        self.log
            .0
            .lock()
            .unwrap()
            .push(format!("{} barred", self.name));
        Ok(())
    }
}

#[test]
fn on_sub_agents_hooks_are_called_in_order() {
    let log = Arc::new(HookLog::default());
    let mk = |name, refuse_parent| Hooked {
        name,
        log: Arc::clone(&log),
        refuse_parent,
    };
    set_sub_agents(
        FlowAgent::new(mk("p", false)),
        [
            FlowAgent::new(mk("a", false)),
            FlowAgent::new(mk("b", false)).disallow_transfer_to_parent(true),
        ],
    )
    .unwrap();
    assert_eq!(
        *log.0.lock().unwrap(),
        ["p got a,b", "a under p", "b under p", "b barred"]
    );
    let err = set_sub_agents(
        FlowAgent::new(mk("q", false)),
        [FlowAgent::new(mk("loner", true))],
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "agent 'loner' refused its place in the tree: I work alone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_tree_serves_concurrent_runs_without_leaks() {
    // Each run writes its own query into a session value and its agents echo it back.
    let root = FlowAgent::new(FnAgent::new("root", |cx, input: AgentInput| async move {
        let q = input.messages[0].content.clone();
        cx.session().set_value("query", &q).unwrap();
        tokio::task::yield_now().await;
        cx.say(format!("root saw {q}"));
        cx.transfer("child");
        Ok(())
    }));
    let child = FlowAgent::new(FnAgent::new("child", |cx, input: AgentInput| async move {
        tokio::task::yield_now().await;
        let q: String = cx.session().value("query").unwrap().unwrap();
        cx.say(format!(
            "child saw {q} after {} messages",
            input.messages.len()
        ));
        Ok(())
    }));
    let runner = Runner::new(set_sub_agents(root, [child]).unwrap());
    let runs = (0..64).map(|i| {
        let runner = runner.clone();
        tokio::spawn(async move {
            let session = Session::new();
            let events: Vec<AgentEvent> = runner
                .run(
                    RunRequest::new([Message::user(format!("q{i}"))]).session(Arc::clone(&session)),
                )
                .collect()
                .await;
            (i, events, session)
        })
    });
    for run in futures::future::join_all(runs).await {
        let (i, events, session) = run.unwrap();
        let texts: Vec<String> = events
            .iter()
            .filter_map(|e| e.message_output().map(|m| m.content.clone()))
            .collect();
        assert_eq!(texts[0], format!("root saw q{i}"));
        assert_eq!(texts[3], format!("child saw q{i} after 4 messages"));
        assert_eq!(session.len(), 4);
        assert_eq!(
            session.value::<String>("query").unwrap().unwrap(),
            format!("q{i}")
        );
    }
}

#[tokio::test]
async fn session_values_are_shared_within_a_run_and_isolated_between_runs() {
    let writer = FlowAgent::new(FnAgent::new("writer", |cx, _| async move {
        let before: Option<u32> = cx.session().value("count").unwrap();
        cx.session()
            .set_value("count", before.unwrap_or(0) + 1)
            .unwrap();
        cx.transfer("reader");
        Ok(())
    }));
    let reader = FlowAgent::new(FnAgent::new("reader", |cx, _| async move {
        let n: u32 = cx.session().value("count").unwrap().unwrap();
        cx.say(format!("count={n}"));
        Ok(())
    }));
    let runner = Runner::new(set_sub_agents(writer, [reader]).unwrap());
    for _ in 0..2 {
        let events = collect(&runner, "x").await;
        assert_eq!(
            events.last().unwrap().message_output().unwrap().content,
            "count=1"
        );
    }
}

#[tokio::test]
async fn a_panicking_agent_yields_one_error_event_and_the_runtime_carries_on() {
    let root = hop("root", "before the panic", Some("boom"));
    let boom = FlowAgent::new(FnAgent::new("boom", |cx, _| async move {
        cx.say("about to fail");
        tokio::task::yield_now().await;
        panic!("kaboom");
    }));
    let runner = Runner::new(set_sub_agents(root, [boom]).unwrap());
    let events = collect(&runner, "x").await;
    let tail: Vec<Seen> = events[3..].iter().map(seen).collect();
    assert_eq!(
        tail,
        vec![
            s("boom", "root/boom", Some("about to fail"), None),
            Seen {
                agent: "boom".into(),
                path: "root/boom".into(),
                content: None,
                action: None,
                error: Some("panic in agent 'boom': kaboom".into()),
            },
        ]
    );
    assert!(tail[1].error.as_ref().unwrap().starts_with("panic"));
    // The same runner (and runtime) serves the next run.
    let again = collect(&runner, "y").await;
    assert_eq!(again.len(), 5);
}

#[tokio::test]
async fn a_panic_while_starting_an_agent_is_reported_too() {
    struct Bad;
    impl agentweave_runtime::Agent for Bad {
        fn name(&self) -> &str {
            "bad"
        }
        fn run(
            self: Arc<Self>,
            _: agentweave_runtime::RunContext,
            _: AgentInput,
        ) -> agentweave_runtime::EventStream {
            panic!("no stream for you")
        }
    }
    let events = collect(&Runner::new(FlowAgent::new(Bad)), "x").await;
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0].error.as_ref().unwrap().to_string(),
        "panic in agent 'bad': no stream for you"
    );
}

#[tokio::test]
async fn streamed_messages_are_recorded_and_rewritten_whole() {
    let root = FlowAgent::new(FnAgent::new("root", |cx, _| async move {
        let (tx, stream) = agentweave_runtime::MessageStream::channel();
        cx.send_stream(stream);
        for word in ["refund ", "it ", "is"] {
            tx.send(Message::assistant(word));
        }
        drop(tx);
        cx.transfer("refund");
        Ok(())
    }));
    let (refund, inputs) = recorder("refund", "ok");
    let tree = set_sub_agents(root, [refund]).unwrap();
    let events = Runner::builder(tree)
        .streaming(true)
        .build()
        .run("help")
        .collect::<Vec<_>>()
        .await;
    // The caller's own reader sees every chunk.
    let Some(EventOutput::Stream(stream)) = events[0].output.clone() else {
        panic!("expected a stream");
    };
    assert_eq!(
        stream.collect_message().await.unwrap().content,
        "refund it is"
    );
    let input = inputs.lock().unwrap()[0].clone();
    assert_eq!(input[1].content, "For context: [root] said: refund it is.");
}

#[tokio::test]
async fn events_of_a_nested_tree_keep_their_paths_and_are_recorded_once() {
    // A whole tree used as one node's agent.
    let inner = set_sub_agents(
        hop("inner", "in", Some("leaf")),
        [hop("leaf", "leaf", None)],
    )
    .unwrap();
    let outer =
        set_sub_agents(hop("outer", "out", Some("inner")), [FlowAgent::new(inner)]).unwrap();
    let session = Session::new();
    let events: Vec<AgentEvent> = Runner::new(outer)
        .run(RunRequest::new([Message::user("x")]).session(Arc::clone(&session)))
        .collect()
        .await;
    let paths: Vec<String> = events.iter().map(|e| e.run_path().to_string()).collect();
    assert_eq!(
        paths,
        [
            "outer",
            "outer",
            "outer",
            "outer/inner",
            "outer/inner",
            "outer/inner",
            "outer/inner/leaf"
        ]
    );
    assert_eq!(session.len(), events.len());
}
