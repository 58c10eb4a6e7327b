//! Middleware around agent runs, model calls and tool calls: order, changes, short-circuits,
//! refusals and panics, attached per runner, per node and per agent.

use std::sync::{Arc, Mutex};

use agentweave_runtime::middleware::{Hook, HookContext, HookError, Middleware, MiddlewareError};
use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::RunRequest;
use agentweave_runtime::{
    async_trait, set_sub_agents, tool_fn, AgentError, AgentEvent, AgentInput, ChatModelAgent,
    ChatRequest, FlowAgent, FnAgent, Message, Role, RunLimit, RunLimits, Runner, Session, ToolCall,
};
use futures::executor::block_on;
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;

type Log = Arc<Mutex<Vec<String>>>;

/// Logs every hook it sees, as `NAME hook [detail]`.
struct Logger {
    name: &'static str,
    log: Log,
}

impl Logger {
    fn push(&self, text: String) {
        self.log
            .lock()
            .unwrap()
            .push(format!("{} {text}", self.name));
    }
}

#[async_trait]
impl Middleware for Logger {
    async fn before_agent(
        &self,
        cx: &HookContext,
        _input: &mut AgentInput,
    ) -> Result<Option<Message>, HookError> {
        self.push(format!("before_agent {}", cx.run_path()));
        Ok(None)
    }
    async fn after_agent(&self, cx: &HookContext) -> Result<(), HookError> {
        self.push(format!("after_agent {}", cx.run_path()));
        Ok(())
    }
    async fn before_model(
        &self,
        cx: &HookContext,
        _request: &mut ChatRequest,
    ) -> Result<Option<Message>, HookError> {
        self.push(format!("before_model {}", cx.model_name().unwrap()));
        Ok(None)
    }
    async fn after_model(&self, _cx: &HookContext, _reply: &mut Message) -> Result<(), HookError> {
        self.push("after_model".into());
        Ok(())
    }
    async fn before_tool(
        &self,
        cx: &HookContext,
        _call: &mut ToolCall,
    ) -> Result<Option<String>, HookError> {
        self.push(format!(
            "before_tool {} {}",
            cx.tool_name().unwrap(),
            cx.tool_call_id().unwrap()
        ));
        Ok(None)
    }
    async fn after_tool(&self, _cx: &HookContext, result: &mut String) -> Result<(), HookError> {
        self.push(format!("after_tool {result}"));
        Ok(())
    }
}

#[derive(Deserialize, JsonSchema)]
struct Order {
    /// The order.
    order_id: u32,
}

/// An agent that looks up an order, then answers; `ran` counts the tool's runs.
fn clerk(
    model: ScriptedModel,
    ran: Arc<Mutex<Vec<u32>>>,
) -> agentweave_runtime::ChatModelAgentBuilder {
    ChatModelAgent::builder("clerk", model.named("clerk-model")).tool(tool_fn(
        "lookup_order",
        "Looks up an order.",
        move |o: Order| {
            let ran = Arc::clone(&ran);
            async move {
                ran.lock().unwrap().push(o.order_id);
                Ok::<_, String>(format!("order {}: a kettle", o.order_id))
            }
        },
    ))
}

fn lookup_then_answer() -> ScriptedModel {
    ScriptedModel::new([
        ScriptStep::tool_call("lookup_order", serde_json::json!({"order_id": 42})),
        ScriptStep::text("Order 42 is a kettle."),
    ])
}

fn run(runner: &Runner, question: &str) -> (Vec<AgentEvent>, Arc<Session>) {
    let session = Session::new();
    let events = block_on(
        runner
            .run(RunRequest::new([Message::user(question)]).session(Arc::clone(&session)))
            .collect(),
    );
    (events, session)
}

fn contents(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| match (e.message_output(), &e.error) {
            (Some(m), _) => format!("{}: {}", m.role, m.content),
            (None, Some(err)) => format!("error: {err}"),
            (None, None) => "-".into(),
        })
        .collect()
}

fn recorded_messages(session: &Session) -> usize {
    session.events().iter().filter(|e| e.has_message()).count()
}

fn middleware_error(event: &AgentEvent) -> &MiddlewareError {
    match &event.error {
        Some(AgentError::Middleware(e)) => e,
        other => panic!("expected a middleware error, got {other:?}"),
    }
}

#[test]
fn hooks_run_in_chain_order_runner_then_node_then_agent_and_after_hooks_in_reverse() {
    let log: Log = Arc::default();
    let logger = |name| Logger {
        name,
        log: Arc::clone(&log),
    };
    let ran = Arc::default();
    let agent = clerk(lookup_then_answer(), Arc::clone(&ran))
        .middleware(logger("agent"))
        .build()
        .unwrap();
    let runner = Runner::builder(FlowAgent::new(agent).middleware(logger("node")))
        .middleware(logger("runner"))
        .build();
    let (events, _) = run(&runner, "Where is order 42?");
    assert_eq!(
        contents(&events),
        [
            "assistant: ",
            "tool: order 42: a kettle",
            "assistant: Order 42 is a kettle."
        ]
    );
    let got = log.lock().unwrap().clone();
    assert_eq!(
        got,
        [
            "runner before_agent clerk",
            "node before_agent clerk",
            "agent before_agent clerk",
            "runner before_model clerk-model",
            "node before_model clerk-model",
            "agent before_model clerk-model",
            "agent after_model",
            "node after_model",
            "runner after_model",
            "runner before_tool lookup_order call_1_1",
            "node before_tool lookup_order call_1_1",
            "agent before_tool lookup_order call_1_1",
            "agent after_tool order 42: a kettle",
            "node after_tool order 42: a kettle",
            "runner after_tool order 42: a kettle",
            "runner before_model clerk-model",
            "node before_model clerk-model",
            "agent before_model clerk-model",
            "agent after_model",
            "node after_model",
            "runner after_model",
            "agent after_agent clerk",
            "node after_agent clerk",
            "runner after_agent clerk",
        ]
    );
}

/// Replaces digits in user messages with `#`.
struct RedactDigits;

#[async_trait]
impl Middleware for RedactDigits {
    async fn before_model(
        &self,
        _cx: &HookContext,
        request: &mut ChatRequest,
    ) -> Result<Option<Message>, HookError> {
        for m in &mut request.messages {
            if m.role == Role::User {
                let redacted: String = m
                    .content
                    .chars()
                    .map(|c| if c.is_ascii_digit() { '#' } else { c })
                    .collect();
                *m = Arc::new(Message::user(redacted));
            }
        }
        Ok(None)
    }
}

#[test]
fn before_model_redacts_the_prompt_the_model_sees_but_not_the_record() {
    let model = ScriptedModel::new([ScriptStep::text("Noted.")]);
    let agent = ChatModelAgent::builder("bot", model.clone())
        .middleware(RedactDigits)
        .build()
        .unwrap();
    let (events, _) = run(
        &Runner::new(FlowAgent::new(agent)),
        "My card is 4111 1111 1111 1111",
    );
    assert_eq!(contents(&events), ["assistant: Noted."]);
    let asked = model.requests();
    assert_eq!(
        asked[0].messages[0].content,
        "My card is #### #### #### ####"
    );
}

/// Answers from a cache: the model is not called.
struct Cache(&'static str);

#[async_trait]
impl Middleware for Cache {
    async fn before_model(
        &self,
        _cx: &HookContext,
        _request: &mut ChatRequest,
    ) -> Result<Option<Message>, HookError> {
        Ok(Some(Message::assistant(self.0)))
    }
}

/// Appends a signature to every reply.
struct Sign;

#[async_trait]
impl Middleware for Sign {
    async fn after_model(&self, _cx: &HookContext, reply: &mut Message) -> Result<(), HookError> {
        reply.content.push_str(" -- the desk");
        Ok(())
    }
}

#[test]
fn a_cached_reply_short_circuits_the_model_and_earlier_after_hooks_still_edit_it() {
    let model = ScriptedModel::new(Vec::<ScriptStep>::new());
    let agent = ChatModelAgent::builder("bot", model.clone())
        .middleware(Sign)
        .middleware(Cache("From the cache."))
        .build()
        .unwrap();
    let (events, session) = run(&Runner::new(FlowAgent::new(agent)), "hi");
    assert_eq!(
        contents(&events),
        ["assistant: From the cache. -- the desk"]
    );
    assert_eq!(model.calls(), 0, "the model was not called");
    let recorded = session.events()[0].message_now().unwrap();
    assert_eq!(recorded.content, "From the cache. -- the desk");
}

#[test]
fn after_model_edits_a_streamed_reply_in_the_record_while_the_caller_saw_the_chunks() {
    let model = ScriptedModel::new([ScriptStep::text("Refund approved.")]);
    let agent = ChatModelAgent::builder("bot", model)
        .middleware(Sign)
        .build()
        .unwrap();
    let runner = Runner::builder(FlowAgent::new(agent))
        .streaming(true)
        .build();
    let session = Session::new();
    let streamed: Vec<String> = block_on(async {
        let mut events =
            runner.run(RunRequest::new([Message::user("ok?")]).session(Arc::clone(&session)));
        let mut seen = Vec::new();
        while let Some(e) = events.next().await {
            if let Some(agentweave_runtime::EventOutput::Stream(s)) = e.output {
                let whole = s.collect_message().await.unwrap();
                seen.push(whole.content.clone());
            }
        }
        seen
    });
    assert_eq!(streamed, ["Refund approved."]);
    let recorded = session.events()[0].message_now().unwrap();
    assert_eq!(recorded.content, "Refund approved. -- the desk");
}

/// Rewrites the order id of every `lookup_order` call to 7, and denies `delete_order`.
struct ToolPolicy;

#[async_trait]
impl Middleware for ToolPolicy {
    async fn before_tool(
        &self,
        cx: &HookContext,
        call: &mut ToolCall,
    ) -> Result<Option<String>, HookError> {
        match cx.tool_name() {
            Some("lookup_order") => {
                call.arguments = r#"{"order_id": 7}"#.into();
                Ok(None)
            }
            Some("delete_order") => Ok(Some("denied: deleting orders needs a human".into())),
            _ => Ok(None),
        }
    }
    async fn after_tool(&self, _cx: &HookContext, result: &mut String) -> Result<(), HookError> {
        *result = result.to_uppercase();
        Ok(())
    }
}

#[test]
fn before_tool_rewrites_arguments_and_denies_a_call_the_model_is_told_about() {
    let ran: Arc<Mutex<Vec<u32>>> = Arc::default();
    let deleted: Arc<Mutex<u32>> = Arc::default();
    let d = Arc::clone(&deleted);
    let model = ScriptedModel::new([
        ScriptStep::tool_calls([
            ("lookup_order", serde_json::json!({"order_id": 42})),
            ("delete_order", serde_json::json!({"order_id": 42})),
        ]),
        ScriptStep::text("I could not delete it."),
    ]);
    let agent = clerk(model.clone(), Arc::clone(&ran))
        .tool(tool_fn(
            "delete_order",
            "Deletes an order.",
            move |_o: Order| {
                let d = Arc::clone(&d);
                async move {
                    *d.lock().unwrap() += 1;
                    Ok::<_, String>("deleted".to_owned())
                }
            },
        ))
        .middleware(ToolPolicy)
        .build()
        .unwrap();
    let (events, _) = run(&Runner::new(FlowAgent::new(agent)), "Delete order 42");
    assert_eq!(
        contents(&events),
        [
            "assistant: ",
            "tool: ORDER 7: A KETTLE",
            "tool: DENIED: DELETING ORDERS NEEDS A HUMAN",
            "assistant: I could not delete it."
        ]
    );
    assert_eq!(
        *ran.lock().unwrap(),
        [7],
        "the tool got the rewritten arguments"
    );
    assert_eq!(*deleted.lock().unwrap(), 0, "the denied tool never ran");
    // The model read the denial as the call's result.
    let second = &model.requests()[1];
    assert_eq!(
        second.messages.last().unwrap().content,
        "DENIED: DELETING ORDERS NEEDS A HUMAN"
    );
}

/// Refuses at one hook.
struct Refuse(Hook);

#[async_trait]
impl Middleware for Refuse {
    fn name(&self) -> std::borrow::Cow<'_, str> {
        "guard".into()
    }
    async fn before_agent(
        &self,
        _cx: &HookContext,
        _input: &mut AgentInput,
    ) -> Result<Option<Message>, HookError> {
        match self.0 {
            Hook::BeforeAgent => Err(HookError::refuse("off-topic")),
            _ => Ok(None),
        }
    }
    async fn before_tool(
        &self,
        _cx: &HookContext,
        _call: &mut ToolCall,
    ) -> Result<Option<String>, HookError> {
        match self.0 {
            Hook::BeforeTool => Err(HookError::refuse("no lookups today")),
            _ => Ok(None),
        }
    }
    async fn after_model(&self, _cx: &HookContext, reply: &mut Message) -> Result<(), HookError> {
        match self.0 {
            Hook::AfterModel if reply.content.contains("kettle") => {
                Err(HookError::refuse("the reply names a product"))
            }
            _ => Ok(()),
        }
    }
}

#[test]
fn a_refusal_in_a_tool_hook_ends_the_run_with_a_typed_error_and_runs_nothing_more() {
    let ran: Arc<Mutex<Vec<u32>>> = Arc::default();
    let model = lookup_then_answer();
    let agent = clerk(model.clone(), Arc::clone(&ran))
        .middleware(Refuse(Hook::BeforeTool))
        .build()
        .unwrap();
    let (events, session) = run(&Runner::new(FlowAgent::new(agent)), "Where is order 42?");
    assert_eq!(events.len(), 2, "{:?}", contents(&events));
    let error = middleware_error(&events[1]);
    assert!(error.is_refusal());
    assert_eq!(error.hook(), Hook::BeforeTool);
    assert_eq!(
        error.to_string(),
        "middleware 'guard' refused in before_tool of agent 'clerk' (at clerk): no lookups today"
    );
    assert!(ran.lock().unwrap().is_empty(), "the tool did not run");
    assert_eq!(model.calls(), 1, "the model was not asked again");
    assert_eq!(
        recorded_messages(&session),
        1,
        "the model's reply stays recorded"
    );
}

#[test]
fn an_output_guardrail_refuses_a_reply_and_an_input_guardrail_stops_the_agent() {
    let ran = Arc::default();
    let agent = clerk(lookup_then_answer(), ran)
        .middleware(Refuse(Hook::AfterModel))
        .build()
        .unwrap();
    let (events, session) = run(&Runner::new(FlowAgent::new(agent)), "Where is order 42?");
    let last = events.last().unwrap();
    let error = middleware_error(last);
    assert_eq!(error.hook(), Hook::AfterModel);
    assert!(error.to_string().contains("the reply names a product"));
    assert!(
        !contents(&events)
            .iter()
            .any(|c| c.contains("Order 42 is a kettle")),
        "the refused reply was not emitted"
    );
    assert_eq!(
        recorded_messages(&session),
        2,
        "the tool call and its result stay recorded"
    );

    // On a node of any agent: the agent does not run at all.
    let ran_fn: Arc<Mutex<bool>> = Arc::default();
    let r = Arc::clone(&ran_fn);
    let bot = FnAgent::new("bot", move |cx, _| {
        let r = Arc::clone(&r);
        async move {
            *r.lock().unwrap() = true;
            cx.say("hello");
            Ok(())
        }
    });
    let runner = Runner::new(FlowAgent::new(bot).middleware(Refuse(Hook::BeforeAgent)));
    let (events, _) = run(&runner, "tell me a joke");
    assert_eq!(events.len(), 1);
    assert_eq!(middleware_error(&events[0]).hook(), Hook::BeforeAgent);
    assert!(!*ran_fn.lock().unwrap());
}

/// Panics in `after_tool`.
struct Panicky;

#[async_trait]
impl Middleware for Panicky {
    async fn after_tool(&self, _cx: &HookContext, _result: &mut String) -> Result<(), HookError> {
        panic!("boom in after_tool");
    }
}

#[test]
fn a_panicking_middleware_is_an_error_event_and_the_runner_keeps_serving() {
    let ran = Arc::default();
    let agent = clerk(
        ScriptedModel::rules()
            .after_tool("lookup_order", ScriptStep::text("done"))
            .otherwise(ScriptStep::tool_call(
                "lookup_order",
                serde_json::json!({"order_id": 1}),
            )),
        ran,
    )
    .build()
    .unwrap();
    let runner = Runner::builder(FlowAgent::new(agent))
        .middleware(Panicky)
        .build();
    for _ in 0..2 {
        let (events, _) = run(&runner, "x");
        let error = middleware_error(events.last().unwrap());
        assert!(matches!(error, MiddlewareError::Panicked { .. }));
        assert!(error.to_string().contains("boom in after_tool"), "{error}");
        assert!(error.to_string().contains("Panicky"), "{error}");
    }
}

/// Answers in the agent's place when the user says hello.
struct Greeter;

#[async_trait]
impl Middleware for Greeter {
    async fn before_agent(
        &self,
        _cx: &HookContext,
        input: &mut AgentInput,
    ) -> Result<Option<Message>, HookError> {
        let hello = input.messages.iter().any(|m| m.content == "hello");
        Ok(hello.then(|| Message::assistant("Hello from the desk!")))
    }
}

/// `triage` hands over to `refund`, whose node has the [`Greeter`].
fn greeted_desk() -> FlowAgent {
    let root = FnAgent::new("triage", |cx, _| async move {
        cx.transfer("refund");
        Ok(())
    });
    let refund = FnAgent::new("refund", |cx, _| async move {
        cx.say("refund agent ran");
        Ok(())
    });
    set_sub_agents(
        FlowAgent::new(root),
        [FlowAgent::new(refund).middleware(Greeter)],
    )
    .unwrap()
}

#[test]
fn before_agent_on_a_node_answers_in_the_agents_place_and_the_answer_is_recorded() {
    let tree = greeted_desk();
    let (events, session) = run(&Runner::new(tree), "hello");
    let lines: Vec<String> = events
        .iter()
        .map(|e| format!("{} {}", e.run_path(), contents(std::slice::from_ref(e))[0]))
        .collect();
    assert_eq!(
        lines,
        [
            "triage assistant: ",
            "triage tool: successfully transferred to agent [refund]",
            "triage/refund assistant: Hello from the desk!",
        ]
    );
    assert_eq!(session.len(), 3);
}

#[test]
fn an_answer_in_the_agents_place_past_the_event_limit_is_the_limit_error_not_a_record() {
    let tree = greeted_desk();
    // triage's two events fill the run's record: the greeting would be the third.
    let runner = Runner::builder(tree)
        .limits(RunLimits::default().max_events(2))
        .build();
    let (events, session) = run(&runner, "hello");
    assert_eq!(events.len(), 3);
    assert_eq!(session.len(), 2, "what was recorded stays, nothing more");
    let last = events.last().unwrap();
    assert_eq!(last.run_path().to_string(), "triage/refund");
    match &last.error {
        Some(AgentError::LimitReached(l)) => {
            assert_eq!((l.limit, l.max), (RunLimit::Events, 2));
        }
        other => panic!("expected the event limit, got {other:?}"),
    }
    assert!(last.message_output().is_none(), "the greeting is not sent");
}

/// Waits a little before each of its agent hooks (as a hook calling a service would) and logs
/// them; its `after_agent` fails if `fail_after` is set, and its `before_agent` answers in the
/// agent's place if `answer` is.
struct Slow {
    log: Log,
    answer: Option<&'static str>,
    fail_after: bool,
}

#[async_trait]
impl Middleware for Slow {
    async fn before_agent(
        &self,
        cx: &HookContext,
        _input: &mut AgentInput,
    ) -> Result<Option<Message>, HookError> {
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        self.log
            .lock()
            .unwrap()
            .push(format!("before {}", cx.run_path()));
        Ok(self.answer.map(Message::assistant))
    }
    async fn after_agent(&self, cx: &HookContext) -> Result<(), HookError> {
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        self.log
            .lock()
            .unwrap()
            .push(format!("after {}", cx.run_path()));
        if self.fail_after {
            return Err(HookError::failed("the audit log is down"));
        }
        Ok(())
    }
}

/// `triage` waits, then hands over to `refund`, which speaks, waits and speaks again; the
/// `refund` node has `slow` around it.
fn slow_desk(slow: Slow) -> FlowAgent {
    let root = FnAgent::new("triage", |cx, _| async move {
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        cx.transfer("refund");
        Ok(())
    });
    let refund = FnAgent::new("refund", |cx, _| async move {
        cx.say("one");
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        cx.say("two");
        Ok(())
    });
    set_sub_agents(
        FlowAgent::new(root),
        [FlowAgent::new(refund).middleware(slow)],
    )
    .unwrap()
}

async fn run_on_tokio(tree: FlowAgent) -> Vec<String> {
    Runner::new(tree)
        .run("hello")
        .map(|e| {
            let what = match (&e.error, e.message_output()) {
                (Some(error), _) => format!("error: {error}"),
                (None, Some(m)) => m.content.clone(),
                (None, None) => String::new(),
            };
            format!("{} {what}", e.run_path())
        })
        .collect()
        .await
}

#[tokio::test]
async fn the_run_loop_waits_on_slow_hooks_and_slow_agents_and_keeps_their_order() {
    let log = Log::default();
    let slow = Slow {
        log: Arc::clone(&log),
        answer: None,
        fail_after: false,
    };
    let lines = run_on_tokio(slow_desk(slow)).await;
    assert_eq!(
        lines,
        [
            "triage ",
            "triage successfully transferred to agent [refund]",
            "triage/refund one",
            "triage/refund two",
        ]
    );
    assert_eq!(
        *log.lock().unwrap(),
        ["before triage/refund", "after triage/refund"]
    );
}

#[tokio::test]
async fn a_slow_answer_in_the_agents_place_then_a_failing_after_hook_ends_with_its_error() {
    let log = Log::default();
    let slow = Slow {
        log: Arc::clone(&log),
        answer: Some("Hello from the desk!"),
        fail_after: true,
    };
    let lines = run_on_tokio(slow_desk(slow)).await;
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(lines[2], "triage/refund Hello from the desk!");
    assert!(
        lines[3].starts_with("triage/refund error: middleware")
            && lines[3].contains("the audit log is down"),
        "{}",
        lines[3]
    );
    assert_eq!(
        *log.lock().unwrap(),
        ["before triage/refund", "after triage/refund"],
        "the agent itself never ran, its after hook did"
    );
}
