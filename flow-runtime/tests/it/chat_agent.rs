//! The ReAct loop of `ChatModelAgent` over `ScriptedModel`: events, tools, transfers, errors,
//! retries and streaming, asserted exactly.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentweave_runtime::model::{ModelError, RetryPolicy, ScriptStep, ScriptedModel};
use agentweave_runtime::RunRequest;
use agentweave_runtime::RunnerBuilder;
use agentweave_runtime::{
    set_sub_agents, tool_fn, AgentEvent, ChatModelAgent, ChatModelAgentBuilder, EventOutput,
    FlowAgent, IllegalTransfer, Message, Role, Runner, Session, ToolError,
};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// Arguments of `lookup_order`.
#[derive(Deserialize, JsonSchema)]
struct LookupOrder {
    /// The order number.
    order_id: u64,
}

fn lookup_tool() -> agentweave_runtime::FnTool {
    tool_fn(
        "lookup_order",
        "Finds an order by its number.",
        |args: LookupOrder| async move {
            Ok::<_, ToolError>(format!("order {}: one kettle, 39 EUR", args.order_id))
        },
    )
}

fn show(m: &Message) -> String {
    let mut s = format!("{}: {}", m.role, m.content);
    for c in &m.tool_calls {
        s.push_str(&format!(" [call {} {} {}]", c.id, c.name, c.arguments));
    }
    if let (Some(id), Some(name)) = (&m.tool_call_id, &m.tool_name) {
        s.push_str(&format!(" [result of {name} {id}]"));
    }
    s
}

/// One event as a line: run path, message (a stream shows its chunks), action, error.
async fn line(e: &AgentEvent) -> String {
    let mut s = e.run_path().to_string();
    match &e.output {
        Some(EventOutput::Message(m)) => {
            s.push(' ');
            s.push_str(&show(m));
        }
        Some(EventOutput::Stream(stream)) => {
            let mut reader = stream.fork();
            let mut parts = Vec::new();
            while let Some(chunk) = reader.next().await {
                parts.push(match chunk {
                    Ok(c) if c.tool_calls.is_empty() => format!("{:?}", c.content),
                    Ok(c) => c
                        .tool_calls
                        .iter()
                        .map(|t| {
                            format!("#{:?} {:?} {:?} {:?}", t.index, t.id, t.name, t.arguments)
                        })
                        .collect::<Vec<_>>()
                        .join(" "),
                    Err(e) => format!("error: {}", e.message),
                });
            }
            s.push_str(&format!(" stream[{}]", parts.join(", ")));
        }
        Some(EventOutput::Custom(v)) => s.push_str(&format!(" custom {v}")),
        None => {}
    }
    if let Some(a) = &e.action {
        s.push_str(&format!(" => {a:?}"));
    }
    if let Some(err) = &e.error {
        s.push_str(&format!(" error: {err}"));
    }
    s
}

async fn lines(events: Vec<AgentEvent>) -> Vec<String> {
    let mut out = Vec::new();
    for e in &events {
        out.push(line(e).await);
    }
    out
}

async fn run(runner: &Runner, text: &str) -> (Vec<String>, Vec<String>) {
    let session = Session::new();
    let events: Vec<AgentEvent> = runner
        .run(RunRequest::new([Message::user(text)]).session(Arc::clone(&session)))
        .collect()
        .await;
    let lines = lines(events).await;
    (lines, session_lines(&session).await)
}

/// The session's record: run path, message, action.
async fn session_lines(session: &Session) -> Vec<String> {
    let mut out = Vec::new();
    for e in session.events() {
        let mut s = e.run_path().to_string();
        if let Some(m) = e.message().await.expect("recorded message") {
            s.push(' ');
            s.push_str(&show(&m));
        }
        if let Some(a) = e.action() {
            s.push_str(&format!(" => {a:?}"));
        }
        out.push(s);
    }
    out
}

fn shown(messages: &[Arc<Message>]) -> Vec<String> {
    messages.iter().map(|m| show(m)).collect()
}

fn agent(name: &str, model: &ScriptedModel) -> ChatModelAgentBuilder {
    ChatModelAgent::builder(name, model.clone()).retry(fast_retry(2))
}

fn fast_retry(max_retries: u32) -> RetryPolicy {
    RetryPolicy::new(max_retries).initial_backoff(Duration::from_millis(1))
}

fn runner(agent: ChatModelAgentBuilder) -> Runner {
    Runner::new(FlowAgent::new(agent.build().unwrap()))
}

#[tokio::test]
async fn react_loop_runs_a_tool_and_answers() {
    let model = ScriptedModel::new([
        ScriptStep::tool_call("lookup_order", json!({"order_id": 42})),
        ScriptStep::text("Order 42 is one kettle for 39 EUR."),
    ]);
    let clerk = agent("clerk", &model)
        .instruction("You look up orders.")
        .tool(lookup_tool());
    let (events, session) = run(&runner(clerk), "What is in order 42?").await;
    let expected = [
        r#"clerk assistant:  [call call_1_1 lookup_order {"order_id":42}]"#,
        "clerk tool: order 42: one kettle, 39 EUR [result of lookup_order call_1_1]",
        "clerk assistant: Order 42 is one kettle for 39 EUR.",
    ];
    assert_eq!(events, expected);
    assert_eq!(session, expected);

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        shown(&requests[1].messages),
        [
            "system: You look up orders.",
            "user: What is in order 42?",
            r#"assistant:  [call call_1_1 lookup_order {"order_id":42}]"#,
            "tool: order 42: one kettle, 39 EUR [result of lookup_order call_1_1]",
        ]
    );
    // Alone in its tree, the agent has no transfer tool.
    let tools: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["lookup_order"]);
    assert_eq!(
        requests[0].tools[0].parameters,
        json!({
            "description": "Arguments of `lookup_order`.",
            "type": "object",
            "properties": {
                "order_id": {
                    "description": "The order number.",
                    "type": "integer", "format": "uint64", "minimum": 0
                }
            },
            "required": ["order_id"]
        })
    );
}

#[derive(Deserialize, JsonSchema)]
struct Step {
    name: String,
}

#[tokio::test]
async fn concurrent_tool_calls_report_results_in_call_order() {
    // `first` can only finish after `second` has: run one after the other, they would
    // deadlock (the timeout below turns that into a failure).
    let second_done = Arc::new(tokio::sync::Notify::new());
    let finished = Arc::new(Mutex::new(Vec::<String>::new()));
    let (wait, log) = (Arc::clone(&second_done), Arc::clone(&finished));
    let first = tool_fn("first", "Waits for second.", move |s: Step| {
        let (wait, log) = (Arc::clone(&wait), Arc::clone(&log));
        async move {
            wait.notified().await;
            log.lock().unwrap().push(s.name.clone());
            Ok::<_, String>(format!("{} done", s.name))
        }
    });
    let (notify, log) = (Arc::clone(&second_done), Arc::clone(&finished));
    let second = tool_fn("second", "Finishes at once.", move |s: Step| {
        let (notify, log) = (Arc::clone(&notify), Arc::clone(&log));
        async move {
            log.lock().unwrap().push(s.name.clone());
            notify.notify_one();
            Ok::<_, String>(format!("{} done", s.name))
        }
    });
    let model = ScriptedModel::new([
        ScriptStep::tool_calls([
            ("first", json!({"name": "a"})),
            ("second", json!({"name": "b"})),
        ]),
        ScriptStep::text("Both done."),
    ]);
    let worker = agent("worker", &model).tool(first).tool(second);
    let (events, _) = tokio::time::timeout(Duration::from_secs(30), run(&runner(worker), "go"))
        .await
        .expect("tools ran one after the other and deadlocked");
    assert_eq!(
        events,
        [
            r#"worker assistant:  [call call_1_1 first {"name":"a"}] [call call_1_2 second {"name":"b"}]"#,
            "worker tool: a done [result of first call_1_1]",
            "worker tool: b done [result of second call_1_2]",
            "worker assistant: Both done.",
        ]
    );
    assert_eq!(*finished.lock().unwrap(), ["b", "a"]);
}

/// triage => [refund, complaint]; triage routes by keyword.
fn desk(triage_model: &ScriptedModel, refund_model: &ScriptedModel) -> FlowAgent {
    let triage = agent("triage", triage_model)
        .description("Routes requests.")
        .instruction("You route customer requests.")
        .build()
        .unwrap();
    let refund = agent("refund", refund_model)
        .description("Handles refunds.")
        .instruction("You handle refunds.")
        .build()
        .unwrap();
    let complaint_model = ScriptedModel::new(["Sorry about that."]);
    let complaint = agent("complaint", &complaint_model)
        .description("Handles complaints.")
        .build()
        .unwrap();
    set_sub_agents(
        FlowAgent::new(triage),
        [FlowAgent::new(refund), FlowAgent::new(complaint)],
    )
    .unwrap()
}

#[tokio::test]
async fn transfer_tool_hands_over_to_a_sub_agent_with_rewritten_context() {
    let triage_model = ScriptedModel::rules()
        .when_last_user_contains("refund", ScriptStep::transfer("refund"))
        .otherwise("How can I help?");
    let refund_model = ScriptedModel::new(["Your refund is on its way."]);
    let runner = Runner::new(desk(&triage_model, &refund_model));
    let (events, session) = run(&runner, "I want a refund").await;
    let expected = [
        r#"triage assistant:  [call call_1_1 transfer_to_agent {"agent_name":"refund"}]"#,
        "triage tool: successfully transferred to agent [refund] [result of transfer_to_agent call_1_1] => TransferToAgent(\"refund\")",
        "triage/refund assistant: Your refund is on its way.",
    ];
    assert_eq!(events, expected);
    assert_eq!(session, expected);
    // The sub-agent's input, rewritten by the default policy, after its instruction.
    let refund_request = &refund_model.requests()[0];
    assert_eq!(
        shown(&refund_request.messages),
        [
            // Its instruction, then the transfer instructions: it can transfer to its parent.
            "system: You handle refunds.\n\n\
             You can transfer the conversation to these agents:\n\
             - triage: Routes requests.\n\
             If you can answer the request yourself, answer it. If one of these agents is \
             better placed to handle it, call the `transfer_to_agent` tool with that agent's \
             name and do not answer it yourself.",
            "user: I want a refund",
            r#"user: For context: [triage] called tool: `transfer_to_agent` with arguments: {"agent_name":"refund"}."#,
            "user: For context: [triage] `transfer_to_agent` tool returned result: successfully transferred to agent [refund].",
        ]
    );
    // The sub-agent may transfer back to its parent only.
    let tool = &refund_request.tools[0];
    assert_eq!(tool.name, "transfer_to_agent");
    assert_eq!(
        tool.parameters["properties"]["agent_name"]["enum"],
        json!(["triage"])
    );
}

#[tokio::test]
async fn transfer_tool_schema_lists_exactly_the_legal_targets() {
    let triage_model = ScriptedModel::new(["Hello."]);
    let refund_model = ScriptedModel::new(["unused"]);
    let runner = Runner::new(desk(&triage_model, &refund_model));
    let (events, _) = run(&runner, "hi").await;
    assert_eq!(events, ["triage assistant: Hello."]);
    let tools = &triage_model.requests()[0].tools;
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "transfer_to_agent");
    assert_eq!(
        tools[0].description,
        "Hands the conversation to another agent, which answers the user from then on. Call it \
         when one of these agents is better placed to handle the request:\n\
         - refund: Handles refunds.\n\
         - complaint: Handles complaints."
    );
    assert_eq!(
        tools[0].parameters,
        json!({
            "type": "object",
            "properties": {
                "agent_name": {
                    "description": "The name of the agent to hand the conversation to.",
                    "type": "string",
                    "enum": ["refund", "complaint"]
                }
            },
            "required": ["agent_name"]
        })
    );

    // A leaf barred from its parent has no legal target, hence no transfer tool.
    let leaf = agent("leaf", &ScriptedModel::new(["x"])).build().unwrap();
    let root = agent("root", &ScriptedModel::new(["x"])).build().unwrap();
    let tree = set_sub_agents(
        FlowAgent::new(root),
        [FlowAgent::new(leaf).disallow_transfer_to_parent(true)],
    )
    .unwrap();
    let leaf_node = tree.find("leaf").unwrap();
    // The definitions a node gets, from an agent configured like the leaf plus `exit`.
    let probe = agent("leaf", &ScriptedModel::new(["x"]))
        .exit_tool(true)
        .build()
        .unwrap();
    let names: Vec<String> = probe
        .tool_definitions(Some(&leaf_node))
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(names, ["exit"]);
    let names: Vec<String> = probe
        .tool_definitions(Some(&tree))
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(names, ["transfer_to_agent", "exit"]);
}

#[tokio::test]
async fn illegal_transfer_target_is_answered_and_the_model_corrects_itself() {
    let triage_model = ScriptedModel::new([
        ScriptStep::transfer("refunds"),
        ScriptStep::transfer("refund"),
    ]);
    let refund_model = ScriptedModel::new(["Refunded."]);
    let runner = Runner::new(desk(&triage_model, &refund_model));
    let (events, session) = run(&runner, "money back please").await;
    let expected = [
        r#"triage assistant:  [call call_1_1 transfer_to_agent {"agent_name":"refunds"}]"#,
        "triage tool: error: cannot transfer to agent 'refunds': it is not one of the agents you \
         can transfer to (refund, complaint); call transfer_to_agent again with one of them \
         [result of transfer_to_agent call_1_1]",
        r#"triage assistant:  [call call_2_1 transfer_to_agent {"agent_name":"refund"}]"#,
        "triage tool: successfully transferred to agent [refund] [result of transfer_to_agent call_2_1] => TransferToAgent(\"refund\")",
        "triage/refund assistant: Refunded.",
    ];
    assert_eq!(events, expected);
    assert_eq!(session, expected);
}

#[tokio::test]
async fn illegal_transfer_can_fail_the_run_as_eino_does() {
    let triage_model = ScriptedModel::new([ScriptStep::transfer("refunds")]);
    let triage = agent("triage", &triage_model)
        .on_illegal_transfer(IllegalTransfer::FailRun)
        .build()
        .unwrap();
    let refund = agent("refund", &ScriptedModel::new(["x"])).build().unwrap();
    let tree = set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refund)]).unwrap();
    let (events, _) = run(&Runner::new(tree), "money back").await;
    assert_eq!(
        events,
        [
            r#"triage assistant:  [call call_1_1 transfer_to_agent {"agent_name":"refunds"}]"#,
            "triage tool: successfully transferred to agent [refunds] [result of transfer_to_agent call_1_1] => TransferToAgent(\"refunds\")",
            "triage error: transfer failed: agent 'refunds' not found when transferring from 'triage'",
        ]
    );
}

#[tokio::test]
async fn arguments_that_are_not_json_or_do_not_fit_are_answered_as_tool_errors() {
    let model = ScriptedModel::new([
        ScriptStep::raw_tool_call("lookup_order", "{order_id: 42"),
        ScriptStep::tool_call("lookup_order", json!({"order_id": "42"})),
        ScriptStep::tool_call("lookup_order", json!({"order_id": 42})),
        ScriptStep::text("Found it."),
    ]);
    let clerk = agent("clerk", &model).tool(lookup_tool());
    let (events, _) = run(&runner(clerk), "order 42?").await;
    assert_eq!(
        events,
        [
            "clerk assistant:  [call call_1_1 lookup_order {order_id: 42]",
            "clerk tool: error: invalid arguments for tool 'lookup_order': the arguments are not \
             valid JSON (key must be a string at line 1 column 2); call it again with a JSON object \
             that matches its parameters schema [result of lookup_order call_1_1]",
            r#"clerk assistant:  [call call_2_1 lookup_order {"order_id":"42"}]"#,
            "clerk tool: error: invalid arguments for tool 'lookup_order': the arguments do not \
             match the schema (invalid type: string \"42\", expected u64 at line 1 column 16); call \
             it again with a JSON object that matches its parameters schema [result of lookup_order call_2_1]",
            r#"clerk assistant:  [call call_3_1 lookup_order {"order_id":42}]"#,
            "clerk tool: order 42: one kettle, 39 EUR [result of lookup_order call_3_1]",
            "clerk assistant: Found it.",
        ]
    );
}

#[tokio::test]
async fn unknown_tools_are_answered_with_the_available_ones() {
    let model = ScriptedModel::new([
        ScriptStep::tool_call("cancel_order", json!({"order_id": 1})),
        ScriptStep::text("I cannot cancel orders."),
    ]);
    let clerk = agent("clerk", &model).tool(lookup_tool());
    let (events, _) = run(&runner(clerk), "cancel order 1").await;
    assert_eq!(
        events,
        [
            r#"clerk assistant:  [call call_1_1 cancel_order {"order_id":1}]"#,
            "clerk tool: error: unknown tool 'cancel_order'; the available tools are: lookup_order; \
             call one of them or answer without tools [result of cancel_order call_1_1]",
            "clerk assistant: I cannot cancel orders.",
        ]
    );

    // An agent with no tools at all says so.
    let model = ScriptedModel::new([
        ScriptStep::tool_call("search", json!({})),
        ScriptStep::text("OK."),
    ]);
    let (events, _) = run(&runner(agent("bare", &model)), "search").await;
    assert_eq!(
        events[1],
        "bare tool: error: unknown tool 'search'; this agent has no tools: answer without calling \
         any [result of search call_1_1]"
    );
    assert_eq!(events.len(), 3);
}

#[tokio::test]
async fn reaching_max_iterations_is_an_error_event_naming_agent_and_limit() {
    let model = ScriptedModel::rules().otherwise(ScriptStep::tool_call(
        "lookup_order",
        json!({"order_id": 7}),
    ));
    let looper = agent("looper", &model)
        .tool(lookup_tool())
        .max_iterations(2);
    let (events, session) = run(&runner(looper), "loop").await;
    assert_eq!(
        events,
        [
            r#"looper assistant:  [call call_1_1 lookup_order {"order_id":7}]"#,
            "looper tool: order 7: one kettle, 39 EUR [result of lookup_order call_1_1]",
            r#"looper assistant:  [call call_2_1 lookup_order {"order_id":7}]"#,
            "looper tool: order 7: one kettle, 39 EUR [result of lookup_order call_2_1]",
            "looper error: agent 'looper' reached its limit of 2 model calls without a final \
             answer; raise it with max_iterations(..) or check that its tools let the model finish",
        ]
    );
    assert_eq!(model.calls(), 2);
    assert_eq!(session.len(), 5);
}

#[tokio::test]
async fn a_chat_agents_error_is_found_by_downcast_whichever_variant_carries_it() {
    // The rule of `AgentError`: ask the error (`downcast_ref`), not its variant. A
    // ChatModelAgent's own error is under `ChatAgent` (it was once under `Custom`, where a
    // match now finds nothing); `downcast_ref` finds it, and a caller's own error under
    // `Custom` too, down its source chain.
    let model = ScriptedModel::rules().otherwise(ScriptStep::tool_call(
        "lookup_order",
        json!({"order_id": 7}),
    ));
    let looper = agent("looper", &model)
        .tool(lookup_tool())
        .max_iterations(1);
    let events: Vec<AgentEvent> = runner(looper).run("loop").collect().await;
    let error = events
        .last()
        .unwrap()
        .error
        .as_ref()
        .expect("an error event");
    assert!(!matches!(error, agentweave_runtime::AgentError::Custom(_)));
    assert!(matches!(
        error.downcast_ref::<agentweave_runtime::ChatAgentError>(),
        Some(agentweave_runtime::ChatAgentError::MaxIterations { limit: 1, .. })
    ));
    assert!(std::ptr::eq(
        error
            .downcast_ref::<agentweave_runtime::ChatAgentError>()
            .unwrap(),
        error.chat_agent_error().unwrap()
    ));

    #[derive(Debug, thiserror::Error)]
    #[error("the till is closed")]
    struct TillClosed;
    #[derive(Debug, thiserror::Error)]
    #[error("could not pay")]
    struct PayFailed(#[source] TillClosed);
    let mine = agentweave_runtime::AgentError::custom(PayFailed(TillClosed));
    assert!(mine.downcast_ref::<PayFailed>().is_some());
    assert!(mine.downcast_ref::<TillClosed>().is_some());
    assert!(mine
        .downcast_ref::<agentweave_runtime::ChatAgentError>()
        .is_none());
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

#[tokio::test]
async fn a_panicking_tool_becomes_a_tool_error_and_the_run_goes_on() {
    let explode = tool_fn("explode", "Always panics.", |_: Nothing| async move {
        if true {
            panic!("boom");
        }
        Ok::<String, String>(String::new())
    });
    let model = ScriptedModel::new([
        ScriptStep::tool_calls([
            ("explode", json!({})),
            ("lookup_order", json!({"order_id": 3})),
        ]),
        ScriptStep::text("The explosion tool is broken."),
    ]);
    let bomber = agent("bomber", &model).tool(explode).tool(lookup_tool());
    let (events, _) = run(&runner(bomber), "go").await;
    assert_eq!(
        events,
        [
            r#"bomber assistant:  [call call_1_1 explode {}] [call call_1_2 lookup_order {"order_id":3}]"#,
            "bomber tool: error: tool 'explode' panicked: boom [result of explode call_1_1]",
            "bomber tool: order 3: one kettle, 39 EUR [result of lookup_order call_1_2]",
            "bomber assistant: The explosion tool is broken.",
        ]
    );
}

#[tokio::test]
async fn exit_tool_ends_the_run_with_exit() {
    let model = ScriptedModel::new([ScriptStep::exit("All settled.")]);
    let closer = agent("closer", &model).exit_tool(true);
    let (events, _) = run(&runner(closer), "bye").await;
    assert_eq!(
        events,
        [
            r#"closer assistant:  [call call_1_1 exit {"final_result":"All settled."}]"#,
            "closer tool: All settled. [result of exit call_1_1] => Exit",
        ]
    );
    assert_eq!(
        model.requests()[0].tools[0].parameters,
        json!({
            "type": "object",
            "properties": {
                "final_result": {
                    "description": "The final answer of the conversation.",
                    "type": "string"
                }
            },
            "required": ["final_result"]
        })
    );
}

#[tokio::test]
async fn a_transfer_before_other_calls_of_the_same_reply_still_decides() {
    let triage_model = ScriptedModel::new([ScriptStep::tool_calls([
        ("transfer_to_agent", json!({"agent_name": "refund"})),
        ("transfer_to_agent", json!({"agent_name": "complaint"})),
    ])]);
    let refund_model = ScriptedModel::new(["Refunded."]);
    let runner = Runner::new(desk(&triage_model, &refund_model));
    let (events, session) = run(&runner, "refund or complaint").await;
    let expected = [
        r#"triage assistant:  [call call_1_1 transfer_to_agent {"agent_name":"refund"}] [call call_1_2 transfer_to_agent {"agent_name":"complaint"}]"#,
        "triage tool: successfully transferred to agent [refund] [result of transfer_to_agent call_1_1] => TransferToAgent(\"refund\")",
        "triage tool: error: tool 'transfer_to_agent' was not run: an earlier call of the same reply \
         already transfers to agent 'refund' [result of transfer_to_agent call_1_2]",
        "triage => TransferToAgent(\"refund\")",
        "triage/refund assistant: Refunded.",
    ];
    assert_eq!(events, expected);
    assert_eq!(session, expected);
}

#[tokio::test]
async fn retryable_failures_are_retried_and_never_recorded() {
    let model = ScriptedModel::new([
        ScriptStep::fail(ModelError::http("scripted", 429, "slow down")),
        ScriptStep::fail(ModelError::http("scripted", 503, "overloaded")),
        ScriptStep::text("Here you are."),
    ]);
    let (events, session) = run(&runner(agent("patient", &model)), "hi").await;
    assert_eq!(events, ["patient assistant: Here you are."]);
    assert_eq!(session, ["patient assistant: Here you are."]);
    assert_eq!(model.calls(), 3);

    // Out of retries: the last failure, with the number of attempts.
    let model = ScriptedModel::rules().otherwise(ScriptStep::fail(ModelError::http(
        "scripted",
        503,
        "overloaded",
    )));
    let (events, session) = run(&runner(agent("patient", &model)), "hi").await;
    assert_eq!(
        events,
        ["patient error: agent 'patient' got no answer from its model after 3 attempt(s): model \
          'scripted' answered HTTP 503: overloaded; the server failed: retry later"]
    );
    // Only the error event is recorded (it has no message); no failed attempt is.
    assert_eq!(session, ["patient"]);
    assert_eq!(model.calls(), 3);

    // Not retryable: one attempt.
    let model = ScriptedModel::rules().otherwise(ScriptStep::fail(ModelError::http(
        "scripted", 401, "bad key",
    )));
    let (events, _) = run(&runner(agent("patient", &model)), "hi").await;
    assert_eq!(
        events,
        ["patient error: agent 'patient' got no answer from its model after 1 attempt(s): model \
          'scripted' answered HTTP 401: bad key; check the API key (OPENAI_API_KEY)"]
    );
    assert_eq!(model.calls(), 1);
}

#[tokio::test]
async fn a_stream_failing_part_way_is_seen_by_the_caller_but_not_recorded() {
    let broken = ModelError::StreamInterrupted {
        model: "scripted".into(),
        message: "connection reset".into(),
    };
    let triage_model = ScriptedModel::new([
        ScriptStep::text("Let me transfer you").fail_mid_stream(2, broken),
        ScriptStep::transfer("refund"),
    ]);
    let refund_model = ScriptedModel::new(["Refund approved."]);
    let runner = Runner::builder(desk(&triage_model, &refund_model))
        .streaming(true)
        .build();
    let (events, session) = run(&runner, "refund please").await;
    assert_eq!(
        events,
        [
            "triage stream[\"Let\", \" me\", error: model 'scripted' stream broke off part-way: \
             connection reset; agent 'triage' will retry (attempt 2 of 3)]",
            "triage stream[#Some(0) \"call_1_1\" \"transfer_to_agent\" \"{\\\"agent_nam\", \
             #Some(0) \"\" \"\" \"e\\\":\\\"refund\\\"}\"]",
            "triage tool: successfully transferred to agent [refund] [result of transfer_to_agent call_1_1] => TransferToAgent(\"refund\")",
            "triage/refund stream[\"Refund\", \" approved.\"]",
        ]
    );
    assert_eq!(
        session,
        [
            r#"triage assistant:  [call call_1_1 transfer_to_agent {"agent_name":"refund"}]"#,
            "triage tool: successfully transferred to agent [refund] [result of transfer_to_agent call_1_1] => TransferToAgent(\"refund\")",
            "triage/refund assistant: Refund approved.",
        ]
    );
    // The partial answer reached neither the retry nor the next agent.
    assert_eq!(
        shown(&triage_model.requests()[1].messages),
        shown(&triage_model.requests()[0].messages)
    );
    assert_eq!(
        shown(&refund_model.requests()[0].messages)[2..],
        [
            r#"user: For context: [triage] called tool: `transfer_to_agent` with arguments: {"agent_name":"refund"}."#,
            "user: For context: [triage] `transfer_to_agent` tool returned result: successfully transferred to agent [refund].",
        ]
    );
}

#[tokio::test]
async fn streaming_react_loop_streams_answers_and_records_whole_messages() {
    let model = ScriptedModel::new([
        ScriptStep::tool_call("lookup_order", json!({"id": 1})),
        ScriptStep::tool_call("lookup_order", json!({"order_id": 5})),
        ScriptStep::text("Order 5 is a kettle."),
    ]);
    let clerk = agent("clerk", &model).tool(lookup_tool());
    let (events, session) = run(
        &RunnerBuilder::from(runner(clerk)).streaming(true).build(),
        "order 5?",
    )
    .await;
    assert_eq!(
        events,
        [
            "clerk stream[#Some(0) \"call_1_1\" \"lookup_order\" \"{\\\"id\", #Some(0) \"\" \"\" \"\\\":1}\"]",
            "clerk tool: error: invalid arguments for tool 'lookup_order': the arguments do not \
             match the schema (missing field `order_id` at line 1 column 8); call it again with a \
             JSON object that matches its parameters schema [result of lookup_order call_1_1]",
            "clerk stream[#Some(0) \"call_2_1\" \"lookup_order\" \"{\\\"order\", #Some(0) \"\" \"\" \"_id\\\":5}\"]",
            "clerk tool: order 5: one kettle, 39 EUR [result of lookup_order call_2_1]",
            "clerk stream[\"Order\", \" 5\", \" is\", \" a\", \" kettle.\"]",
        ]
    );
    assert_eq!(
        session,
        [
            r#"clerk assistant:  [call call_1_1 lookup_order {"id":1}]"#,
            "clerk tool: error: invalid arguments for tool 'lookup_order': the arguments do not \
             match the schema (missing field `order_id` at line 1 column 8); call it again with a \
             JSON object that matches its parameters schema [result of lookup_order call_1_1]",
            r#"clerk assistant:  [call call_2_1 lookup_order {"order_id":5}]"#,
            "clerk tool: order 5: one kettle, 39 EUR [result of lookup_order call_2_1]",
            "clerk assistant: Order 5 is a kettle.",
        ]
    );
    // What the model was sent back is the concatenated message.
    let last = &model.requests()[2].messages;
    assert_eq!(last[3].role, Role::Assistant);
    assert_eq!(last[3].tool_calls[0].arguments, r#"{"order_id":5}"#);
}

#[tokio::test]
async fn the_builder_refuses_configurations_that_cannot_work() {
    let model = ScriptedModel::new(["x"]);
    let e = agent("a", &model)
        .tool(lookup_tool())
        .tool(lookup_tool())
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "agent 'a' cannot be built: two tools are named 'lookup_order'; tool names must be unique \
         per agent"
    );
    let e = agent("a", &model).max_iterations(0).build().unwrap_err();
    assert_eq!(
        e.to_string(),
        "agent 'a' cannot be built: max_iterations is 0, so the model could never be called; use \
         at least 1"
    );
    let exit = tool_fn("exit", "mine", |_: Nothing| async { Ok::<_, String>("x") });
    let e = agent("a", &model).tool(exit).build().unwrap_err();
    assert_eq!(
        e.to_string(),
        "agent 'a' cannot be built: a tool is named 'exit', the name of a built-in tool; rename it"
    );
}
