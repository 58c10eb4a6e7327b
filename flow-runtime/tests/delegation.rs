// Its own test binary, not a module of tests/it: it re-executes its own test binary as a child
// process, naming a test by its name (`--exact`), which a module path would change.
//! Delegation that comes back: task and single-turn nodes return their result to their parent,
//! which runs again in the same turn; a task converses with the user over several turns of a
//! thread first; the parent's input is scoped to the results.

use std::sync::{Arc, Mutex};

use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::TurnRequest;
use agentweave_runtime::{
    set_sub_agents, Action, AgentEvent, ChatModelAgent, Delegation, FlowAgent, FnAgent,
    InMemoryStore, Message, MessageRef, Role, Runner, TurnOutcome,
};
use futures::StreamExt;
use serde_json::json;

mod support;

/// Each agent's inputs, in order: `(agent, messages as "role: content")`.
type Inputs = Arc<Mutex<Vec<(String, Vec<String>)>>>;

fn show(messages: &[MessageRef]) -> Vec<String> {
    messages
        .iter()
        .map(|m| format!("{}: {}", m.role, m.content))
        .collect()
}

/// A refund task: asks for the order number, then the reason, then finishes with a typed
/// outcome (as JSON). It counts the user's messages it has seen to know where it is.
fn refund_task(inputs: &Inputs) -> FlowAgent {
    let inputs = Arc::clone(inputs);
    let refund = FnAgent::new("refund", move |cx, input| {
        let inputs = Arc::clone(&inputs);
        async move {
            inputs
                .lock()
                .unwrap()
                .push(("refund".into(), show(&input.messages)));
            let users: Vec<&str> = input
                .messages
                .iter()
                .filter(|m| m.role == Role::User && !m.content.starts_with("For context"))
                .map(|m| m.content.as_str())
                .collect();
            match users.len() {
                1 => cx.say("Which order number?"),
                2 => cx.say("Why do you want a refund?"),
                _ => cx.finish(json!({
                    "order_id": users[1].parse::<u64>().unwrap_or(0),
                    "reason": users[2],
                    "approved": true,
                })),
            }
            Ok(())
        }
    });
    FlowAgent::new(refund).delegation(Delegation::Task)
}

/// A refund task that asks for the order number, then asks a human to approve the refund (an
/// interrupt inside the task), and finishes with the answer when resumed.
fn approving_refund_task(inputs: &Inputs) -> FlowAgent {
    let order = |input: &agentweave_runtime::AgentInput| {
        input
            .messages
            .iter()
            .filter(|m| m.role == Role::User && !m.content.starts_with("For context"))
            .nth(1)
            .map(|m| m.content.clone())
    };
    let seen = Arc::clone(inputs);
    let refund = FnAgent::new("refund", move |cx, input| {
        let seen = Arc::clone(&seen);
        async move {
            seen.lock()
                .unwrap()
                .push(("refund".into(), show(&input.messages)));
            match order(&input) {
                None => cx.say("Which order number?"),
                Some(order) => cx.interrupt(json!(format!("approve a refund for order {order}?"))),
            }
            Ok(())
        }
    })
    .on_resume({
        let seen = Arc::clone(inputs);
        move |cx, input, info| {
            let seen = Arc::clone(&seen);
            async move {
                seen.lock()
                    .unwrap()
                    .push(("refund".into(), show(&input.messages)));
                let approved = info.data().and_then(|d| d.as_bool()).unwrap_or(false);
                let order = order(&input).unwrap_or_default();
                cx.finish(json!({
                    "order_id": order.parse::<u64>().unwrap_or(0),
                    "approved": approved,
                }));
                Ok(())
            }
        }
    });
    FlowAgent::new(refund).delegation(Delegation::Task)
}

/// A code parent: delegates a refund, and when the result comes back closes the conversation.
fn code_triage(inputs: &Inputs) -> FlowAgent {
    let inputs = Arc::clone(inputs);
    FlowAgent::new(FnAgent::new("triage", move |cx, input| {
        let inputs = Arc::clone(&inputs);
        async move {
            inputs
                .lock()
                .unwrap()
                .push(("triage".into(), show(&input.messages)));
            match cx.task_result() {
                Some(done) => {
                    assert_eq!(&*done.from, "refund");
                    cx.say(format!(
                        "Refund for order {} approved: {}.",
                        done.result["order_id"], done.result["approved"]
                    ));
                }
                None => cx.transfer("refund"),
            }
            Ok(())
        }
    }))
}

async fn answer(runner: &Runner, text: &str) -> (String, String) {
    let turn = runner
        .turn(TurnRequest::new("ada", Message::user(text)))
        .await
        .unwrap();
    let started = turn.started_at().to_string();
    let answer = turn.final_output().await.unwrap().unwrap();
    (started, answer.content)
}

#[tokio::test]
async fn a_task_spans_three_turns_then_returns_its_result_to_a_code_parent() {
    let inputs = Inputs::default();
    let desk = set_sub_agents(code_triage(&inputs), [refund_task(&inputs)]).unwrap();
    let runner = Runner::builder(desk)
        .thread_store(InMemoryStore::new())
        .build();

    assert_eq!(
        answer(&runner, "I want a refund").await,
        ("triage".into(), "Which order number?".into())
    );
    // The next turns go to the active task.
    assert_eq!(
        answer(&runner, "42").await,
        ("refund".into(), "Why do you want a refund?".into())
    );
    assert_eq!(
        answer(&runner, "it arrived broken").await,
        (
            "refund".into(),
            "Refund for order 42 approved: true.".into()
        )
    );

    let inputs = inputs.lock().unwrap().clone();
    let agents: Vec<&str> = inputs.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(agents, ["triage", "refund", "refund", "refund", "triage"]);
    // The task sees the conversation, its own questions as they are.
    assert_eq!(
        inputs[3].1,
        [
            "user: I want a refund",
            "user: For context: [triage] called tool: `transfer_to_agent` with arguments: {\"agent_name\":\"refund\"}.",
            "user: For context: [triage] `transfer_to_agent` tool returned result: successfully transferred to agent [refund].",
            "assistant: Which order number?",
            "user: 42",
            "assistant: Why do you want a refund?",
            "user: it arrived broken",
        ]
    );
    // The parent sees what it did and what the user said, and of the task only its result.
    assert_eq!(
        inputs[4].1,
        [
            "user: I want a refund",
            "assistant: ",
            "tool: successfully transferred to agent [refund]",
            "user: 42",
            "user: it arrived broken",
            "user: For context: [refund] said: {\"approved\":true,\"order_id\":42,\"reason\":\"it arrived broken\"}.",
        ]
    );
}

#[tokio::test]
async fn a_task_returns_its_result_to_an_llm_parent_which_continues_in_the_same_turn() {
    let inputs = Inputs::default();
    let model = ScriptedModel::new([
        ScriptStep::transfer("refund"),
        ScriptStep::text("Your refund for order 42 is approved. Anything else?"),
    ]);
    let triage = ChatModelAgent::builder("triage", model.clone())
        .instruction("Route the customer.")
        .build()
        .unwrap();
    let desk = set_sub_agents(FlowAgent::new(triage), [refund_task(&inputs)]).unwrap();
    let runner = Runner::builder(desk)
        .thread_store(InMemoryStore::new())
        .build();

    assert_eq!(
        answer(&runner, "refund please").await.1,
        "Which order number?"
    );
    assert_eq!(answer(&runner, "42").await.1, "Why do you want a refund?");
    let (started, last) = answer(&runner, "broken").await;
    assert_eq!(started, "refund");
    assert_eq!(last, "Your refund for order 42 is approved. Anything else?");

    // The model's second call: its own transfer, the user's messages, the task's result.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let seen: Vec<String> = requests[1]
        .messages
        .iter()
        .skip(1) // the instruction
        .map(|m| format!("{}: {}", m.role, m.content))
        .collect();
    assert_eq!(
        seen,
        [
            "user: refund please",
            "assistant: ",
            "tool: successfully transferred to agent [refund]",
            "user: 42",
            "user: broken",
            "user: For context: [refund] said: {\"approved\":true,\"order_id\":42,\"reason\":\"broken\"}.",
        ]
    );
}

#[tokio::test]
async fn a_single_turn_agent_runs_once_and_its_answer_returns_to_the_parent() {
    let research = FnAgent::new("research", |cx, _| async move {
        cx.say("Kettles of this model fail at the hinge");
        Ok(())
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let saw = Arc::clone(&seen);
    let lead = FnAgent::new("lead", move |cx, input| {
        let saw = Arc::clone(&saw);
        async move {
            saw.lock().unwrap().push(show(&input.messages));
            match cx.task_result() {
                Some(found) => cx.say(format!("Found: {}", found.result.as_str().unwrap())),
                None => cx.transfer("research"),
            }
            Ok(())
        }
    });
    let tree = set_sub_agents(
        FlowAgent::new(lead),
        [FlowAgent::new(research).delegation(Delegation::SingleTurn)],
    )
    .unwrap();
    let events: Vec<AgentEvent> = Runner::new(tree).run("why did it break?").collect().await;
    let paths: Vec<String> = events.iter().map(|e| e.run_path().to_string()).collect();
    assert_eq!(
        paths,
        ["lead", "lead", "lead/research", "lead/research/lead"]
    );
    let last = events.last().unwrap().message_output().unwrap();
    assert_eq!(
        last.content,
        "Found: Kettles of this model fail at the hinge"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen[1].last().unwrap(),
        "user: For context: [research] said: Kettles of this model fail at the hinge."
    );
}

#[tokio::test]
async fn nested_tasks_return_level_by_level() {
    let inner = FnAgent::new("check_stock", |cx, _| async move {
        cx.finish(json!({"in_stock": 3}));
        Ok(())
    });
    let middle = FnAgent::new("replace", |cx, _| async move {
        match cx.task_result() {
            Some(stock) => {
                cx.finish(json!({"replaced": stock.result["in_stock"].as_u64() > Some(0)}))
            }
            None => cx.transfer("check_stock"),
        }
        Ok(())
    });
    let root = FnAgent::new("desk", |cx, _| async move {
        match cx.task_result() {
            Some(done) => cx.say(format!("replaced: {}", done.result["replaced"])),
            None => cx.transfer("replace"),
        }
        Ok(())
    });
    let middle = set_sub_agents(
        FlowAgent::new(middle).delegation(Delegation::Task),
        [FlowAgent::new(inner).delegation(Delegation::Task)],
    )
    .unwrap();
    let tree = set_sub_agents(FlowAgent::new(root), [middle]).unwrap();
    let events: Vec<AgentEvent> = Runner::new(tree).run("swap my kettle").collect().await;
    let finishes: Vec<String> = events
        .iter()
        .filter(|e| matches!(e.action, Some(Action::Finish(_))))
        .map(|e| e.run_path().to_string())
        .collect();
    assert_eq!(
        finishes,
        [
            "desk/replace/check_stock",
            "desk/replace/check_stock/replace"
        ]
    );
    let last = events.last().unwrap();
    assert_eq!(
        last.run_path().to_string(),
        "desk/replace/check_stock/replace/desk"
    );
    assert_eq!(last.message_output().unwrap().content, "replaced: true");
}

#[tokio::test]
async fn finishing_outside_a_task_is_an_error_that_says_what_to_do() {
    let lone = FnAgent::new("lone", |cx, _| async move {
        cx.finish(json!(1));
        Ok(())
    });
    let events: Vec<AgentEvent> = Runner::new(FlowAgent::new(lone)).run("hi").collect().await;
    let error = events.last().unwrap().error.as_ref().unwrap().to_string();
    assert!(
        error.contains("'lone'") || error.contains("lone"),
        "{error}"
    );
    assert!(error.contains("it is the root of its tree"), "{error}");
}

#[tokio::test]
async fn a_task_interrupted_for_approval_resumes_through_it_and_returns() {
    let refund = FnAgent::new("refund", |cx, _| async move {
        cx.interrupt(json!("approve a refund of 30 EUR?"));
        Ok(())
    })
    .on_resume(|cx, _, info| async move {
        let approved = info.data().and_then(|d| d.as_bool()).unwrap_or(false);
        cx.finish(json!({ "approved": approved }));
        Ok(())
    });
    let triage = FnAgent::new("triage", |cx, _| async move {
        match cx.task_result() {
            Some(done) => cx.say(format!("approved: {}", done.result["approved"])),
            None => cx.transfer("refund"),
        }
        Ok(())
    });
    let tree = set_sub_agents(
        FlowAgent::new(triage),
        [FlowAgent::new(refund).delegation(Delegation::Task)],
    )
    .unwrap();
    let store = InMemoryStore::new();
    let runner = Runner::builder(tree.clone()).stores(store.clone()).build();
    let first = runner
        .turn(TurnRequest::new("bob", Message::user("refund")))
        .await
        .unwrap();
    let TurnOutcome::Interrupted { interrupts, .. } = first.finish().await else {
        panic!("the task asked for approval");
    };
    // A new runner (as a new process would build) resumes the turn through the task.
    let again = Runner::builder(tree).stores(store).build();
    let resumed = again
        .turn(TurnRequest::resume(
            "bob",
            [(interrupts[0].id.clone(), json!(true))],
        ))
        .await
        .unwrap();
    let answer = resumed.final_output().await.unwrap().unwrap();
    assert_eq!(answer.content, "approved: true");
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Outcome {
    /// The order refunded.
    order_id: u64,
    approved: bool,
}

#[tokio::test]
async fn an_llm_task_finishes_through_finish_task_with_its_typed_result() {
    let refund_model = ScriptedModel::new([
        // A hallucinated result: the tool error tells the model, which corrects it.
        ScriptStep::tool_call("finish_task", json!({"order": "42"})),
        ScriptStep::tool_call("finish_task", json!({"order_id": 42, "approved": true})),
    ]);
    let refund = ChatModelAgent::builder("refund", refund_model.clone())
        .instruction("Decide refunds.")
        .returns::<Outcome>()
        .build()
        .unwrap();
    let triage = FnAgent::new("triage", |cx, _| async move {
        match cx.task_result() {
            Some(done) => cx.say(format!("order {} approved", done.result["order_id"])),
            None => cx.transfer("refund"),
        }
        Ok(())
    });
    let tree = set_sub_agents(
        FlowAgent::new(triage),
        [FlowAgent::new(refund).delegation(Delegation::Task)],
    )
    .unwrap();
    let events: Vec<AgentEvent> = Runner::new(tree).run("refund 42").collect().await;
    let requests = refund_model.requests();
    // The tool's schema is the result type's.
    let finish = requests[0]
        .tools
        .iter()
        .find(|t| t.name == "finish_task")
        .expect("finish_task offered");
    assert_eq!(
        finish.parameters["required"],
        json!(["order_id", "approved"])
    );
    // The bad call was answered as a tool error, so the model called again.
    let error = requests[1].messages.last().unwrap();
    assert_eq!(error.role, Role::Tool);
    assert!(error.content.contains("order_id"), "{}", error.content);
    let last = events.last().unwrap();
    assert_eq!(last.run_path().to_string(), "triage/refund/triage");
    assert_eq!(last.message_output().unwrap().content, "order 42 approved");
}

#[tokio::test]
async fn an_llm_tasks_result_reaches_an_llm_parent_as_the_tasks_message() {
    // The task's `finish_task` result reads, to its parent, as the task's message (as a code
    // task's `Finish` does), in the turn it finished and in later turns of the thread.
    let refund_model = ScriptedModel::new([ScriptStep::tool_call(
        "finish_task",
        json!({"order_id": 42, "approved": true}),
    )]);
    let refund = ChatModelAgent::builder("refund", refund_model)
        .instruction("Decide refunds.")
        .returns::<Outcome>()
        .build()
        .unwrap();
    let triage_model = ScriptedModel::new([
        ScriptStep::transfer("refund"),
        ScriptStep::text("Your refund is approved."),
        ScriptStep::text("You are welcome."),
    ]);
    let triage = ChatModelAgent::builder("triage", triage_model.clone())
        .instruction("Route the customer.")
        .build()
        .unwrap();
    let desk = set_sub_agents(
        FlowAgent::new(triage),
        [FlowAgent::new(refund).delegation(Delegation::Task)],
    )
    .unwrap();
    let runner = Runner::builder(desk)
        .thread_store(InMemoryStore::new())
        .build();
    assert_eq!(
        answer(&runner, "refund order 42").await.1,
        "Your refund is approved."
    );
    assert_eq!(answer(&runner, "thanks").await.1, "You are welcome.");
    let result = "user: For context: [refund] said: {\"approved\":true,\"order_id\":42}.";
    let requests = triage_model.requests();
    let seen = |k: usize| -> Vec<String> {
        requests[k]
            .messages
            .iter()
            .map(|m| format!("{}: {}", m.role, m.content))
            .collect()
    };
    assert_eq!(seen(1).last().unwrap(), result);
    assert!(seen(2).iter().any(|m| m == result), "{:?}", seen(2));
    assert!(
        !seen(2).iter().any(|m| m.contains("finish_task")),
        "{:?}",
        seen(2)
    );
}

#[tokio::test]
async fn a_code_tasks_finish_reaches_the_user_as_an_action_not_a_message() {
    // The user's stream shows the result as the `finish` action only; the parent's answer is
    // the turn's message. In a later turn, read back from the thread, the parent still reads
    // the result as the task's message.
    let inputs = Inputs::default();
    let model = ScriptedModel::new([
        ScriptStep::transfer("refund"),
        ScriptStep::text("Approved."),
        ScriptStep::text("You are welcome."),
    ]);
    let triage = ChatModelAgent::builder("triage", model.clone())
        .instruction("Route the customer.")
        .build()
        .unwrap();
    let desk = set_sub_agents(FlowAgent::new(triage), [refund_task(&inputs)]).unwrap();
    let runner = Runner::builder(desk)
        .thread_store(InMemoryStore::new())
        .build();
    answer(&runner, "refund please").await;
    answer(&runner, "42").await;
    let turn = runner
        .turn(TurnRequest::new("ada", Message::user("broken")))
        .await
        .unwrap();
    let events: Vec<AgentEvent> = turn.collect().await;
    let finish = events
        .iter()
        .find(|e| matches!(e.action, Some(Action::Finish(_))))
        .expect("the task finished");
    assert!(finish.message_output().is_none(), "{finish:?}");
    let as_json = serde_json::to_value(finish).unwrap();
    assert_eq!(
        as_json["action"],
        json!({"finish": {"approved": true, "order_id": 42, "reason": "broken"}})
    );
    assert!(as_json.get("message").is_none(), "{as_json}");
    let said: Vec<String> = events
        .iter()
        .filter_map(|e| e.message_output())
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.content.clone())
        .collect();
    assert_eq!(said, ["Approved."]);

    assert_eq!(answer(&runner, "thanks").await.1, "You are welcome.");
    let result =
        "user: For context: [refund] said: {\"approved\":true,\"order_id\":42,\"reason\":\"broken\"}.";
    let requests = model.requests();
    for k in [1, 2] {
        let seen: Vec<String> = requests[k]
            .messages
            .iter()
            .map(|m| format!("{}: {}", m.role, m.content))
            .collect();
        assert!(seen.iter().any(|m| m == result), "call {k}: {seen:?}");
    }
}

#[tokio::test]
async fn single_turn_researchers_in_a_parallel_workflow_return_all_their_answers() {
    let researcher = |name: &'static str, found: &'static str| {
        FlowAgent::new(FnAgent::new(name, move |cx, _| async move {
            cx.say(found);
            Ok(())
        }))
    };
    let research = agentweave_runtime::Parallel::new("research")
        .with_sub_agents([
            researcher("prices", "cheapest at 30 EUR"),
            researcher("reviews", "4.5 stars"),
        ])
        .unwrap()
        .delegation(Delegation::SingleTurn);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let saw = Arc::clone(&seen);
    let lead = FnAgent::new("lead", move |cx, input| {
        let saw = Arc::clone(&saw);
        async move {
            saw.lock().unwrap().push(show(&input.messages));
            match cx.task_result() {
                Some(found) => {
                    let mut all: Vec<String> = found
                        .result
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_str().unwrap().to_owned())
                        .collect();
                    all.sort();
                    cx.say(all.join("; "));
                }
                None => cx.transfer("research"),
            }
            Ok(())
        }
    });
    let tree = set_sub_agents(FlowAgent::new(lead), [research]).unwrap();
    let events: Vec<AgentEvent> = Runner::new(tree).run("which kettle?").collect().await;
    let last = events.last().unwrap();
    assert_eq!(last.run_path().to_string(), "lead/research/lead");
    assert_eq!(
        last.message_output().unwrap().content,
        "4.5 stars; cheapest at 30 EUR"
    );
    // The lead sees the researchers' answers, in their context form.
    let seen = seen.lock().unwrap();
    let mut tail: Vec<String> = seen[1][3..].to_vec();
    tail.sort();
    assert_eq!(
        tail,
        [
            "user: For context: [prices] said: cheapest at 30 EUR.",
            "user: For context: [reviews] said: 4.5 stars.",
        ]
    );
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct RefundRequest {
    order_id: u64,
}

/// triage (an LLM) => refund, which declares a `RefundRequest` payload and reports it.
fn payload_desk(model: &ScriptedModel) -> FlowAgent {
    let triage = ChatModelAgent::builder("triage", model.clone())
        .instruction("Route the customer.")
        .build()
        .unwrap();
    let refund = FnAgent::new("refund", |cx, _| async move {
        let payload = cx.transfer_payload().expect("a payload");
        let request: RefundRequest = serde_json::from_value(payload).unwrap();
        cx.say(format!("refunding order {}", request.order_id));
        Ok(())
    });
    set_sub_agents(
        FlowAgent::new(triage),
        [FlowAgent::new(refund).accepts::<RefundRequest>()],
    )
    .unwrap()
}

#[tokio::test]
async fn a_typed_transfer_payload_reaches_the_target_and_the_tool_schema_offers_it() {
    let model = ScriptedModel::new([ScriptStep::tool_call(
        "transfer_to_agent",
        json!({"agent_name": "refund", "payload": {"order_id": 42}}),
    )]);
    let events: Vec<AgentEvent> = Runner::new(payload_desk(&model))
        .run("refund")
        .collect()
        .await;
    let last = events.last().unwrap();
    assert_eq!(last.message_output().unwrap().content, "refunding order 42");
    let transfer = model.requests()[0]
        .tools
        .iter()
        .find(|t| t.name == "transfer_to_agent")
        .cloned()
        .unwrap();
    let payload = &transfer.parameters["properties"]["payload"];
    assert_eq!(payload["anyOf"][0]["required"], json!(["order_id"]));
    assert!(payload["description"]
        .as_str()
        .unwrap()
        .contains("refund (a RefundRequest)"));
}

#[tokio::test]
async fn a_hallucinated_payload_is_a_tool_error_the_model_corrects() {
    let model = ScriptedModel::new([
        ScriptStep::tool_call(
            "transfer_to_agent",
            json!({"agent_name": "refund", "payload": {"order": "forty-two"}}),
        ),
        ScriptStep::tool_call(
            "transfer_to_agent",
            json!({"agent_name": "refund", "payload": {"order_id": 42}}),
        ),
    ]);
    let events: Vec<AgentEvent> = Runner::new(payload_desk(&model))
        .run("refund")
        .collect()
        .await;
    let error = model.requests()[1].messages.last().unwrap().clone();
    assert_eq!(error.role, Role::Tool);
    assert!(
        error
            .content
            .contains("the payload for agent 'refund' is not a RefundRequest"),
        "{}",
        error.content
    );
    assert_eq!(
        events.last().unwrap().message_output().unwrap().content,
        "refunding order 42"
    );
}

#[tokio::test]
async fn a_code_parent_transfers_with_a_payload() {
    let triage = FnAgent::new("triage", |cx, _| async move {
        cx.transfer_with("refund", json!({"order_id": 7}));
        Ok(())
    });
    let refund = FnAgent::new("refund", |cx, _| async move {
        cx.say(format!(
            "order {}",
            cx.transfer_payload().unwrap()["order_id"]
        ));
        Ok(())
    });
    let tree = set_sub_agents(
        FlowAgent::new(triage),
        [FlowAgent::new(refund).accepts::<RefundRequest>()],
    )
    .unwrap();
    let events: Vec<AgentEvent> = Runner::new(tree).run("refund").collect().await;
    assert_eq!(
        events.last().unwrap().message_output().unwrap().content,
        "order 7"
    );
}

#[tokio::test]
async fn a_payload_sent_to_a_node_that_declares_none_is_not_kept() {
    let triage = FnAgent::new("triage", |cx, _| async move {
        cx.transfer_with("refund", json!({"order_id": 7}));
        Ok(())
    });
    let refund = FnAgent::new("refund", |cx, _| async move {
        let kept = cx
            .run_context()
            .session()
            .values()
            .keys()
            .any(|k| k.contains("payload"));
        cx.say(format!(
            "payload: {:?}, kept: {kept}",
            cx.transfer_payload()
        ));
        Ok(())
    });
    // `refund` declares no payload: the transfer does no payload work, and none reaches it.
    let tree = set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refund)]).unwrap();
    let events: Vec<AgentEvent> = Runner::new(tree).run("refund").collect().await;
    assert_eq!(
        events.last().unwrap().message_output().unwrap().content,
        "payload: None, kept: false"
    );
}

/// desk => manager => worker (a task, made one after the tree was joined): the manager hands
/// the work to the worker, gets its result, goes back to the desk, and is reached by a
/// transfer again: by then no result waits for it.
#[tokio::test]
async fn a_node_reached_again_by_a_transfer_sees_no_earlier_result() {
    let desk_runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let desk = FnAgent::new("desk", move |cx, _| {
        let runs = desk_runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            if runs < 2 {
                cx.transfer("manager");
            }
            Ok(())
        }
    });
    let seen: Arc<Mutex<Vec<Option<serde_json::Value>>>> = Arc::default();
    let manager = {
        let seen = Arc::clone(&seen);
        FnAgent::new("manager", move |cx, _| {
            let seen = Arc::clone(&seen);
            async move {
                let result = cx.run_context().task_result().map(|r| r.result);
                let runs = {
                    let mut seen = seen.lock().unwrap();
                    seen.push(result.clone());
                    seen.len()
                };
                match (runs, result) {
                    (1, None) => cx.transfer("worker"),
                    (2, Some(_)) => cx.transfer("desk"),
                    _ => cx.say("done"),
                }
                Ok(())
            }
        })
    };
    let worker = FnAgent::new("worker", |cx, _| async move {
        cx.finish(json!("checked"));
        Ok(())
    });
    let tree = set_sub_agents(
        FlowAgent::new(desk),
        [set_sub_agents(FlowAgent::new(manager), [FlowAgent::new(worker)]).unwrap()],
    )
    .unwrap()
    .find("worker")
    .unwrap()
    .delegation(Delegation::Task)
    .root();
    let events: Vec<AgentEvent> = Runner::new(tree).run("work").collect().await;
    assert!(events.iter().all(|e| e.error.is_none()), "{events:?}");
    assert_eq!(
        *seen.lock().unwrap(),
        [None, Some(json!("checked")), None],
        "the manager reads the worker's result once, and not after a later transfer"
    );
}

/// Run as a child process by `a_task_goes_on_in_a_new_process_each_turn_and_returns`: one
/// turn of the thread `ada` on the given store, then exit.
#[tokio::test]
async fn task_child_runs_one_turn() {
    let (Ok(backend), Ok(text)) = (
        std::env::var("TASK_PROCESS_BACKEND"),
        std::env::var("TASK_PROCESS_TEXT"),
    ) else {
        return; // Not a child run.
    };
    let inputs = Inputs::default();
    let refund = match std::env::var("TASK_PROCESS_FLOW").as_deref() {
        Ok("approval") => approving_refund_task(&inputs),
        _ => refund_task(&inputs),
    };
    let desk = set_sub_agents(code_triage(&inputs), [refund]).unwrap();
    let runner = support::processes::runner_on(&backend, desk).await;
    let turn = match std::env::var("TASK_PROCESS_APPROVE") {
        // Answers the interrupt `text` names: this process did not see it raised.
        Ok(approved) => runner
            .turn(TurnRequest::resume(
                "ada",
                [(text.clone(), json!(approved == "yes"))],
            ))
            .await
            .unwrap(),
        Err(_) => runner
            .turn(TurnRequest::new("ada", Message::user(text)))
            .await
            .unwrap(),
    };
    println!("started at {}", turn.started_at());
    match turn.finish().await {
        TurnOutcome::Completed { answer, .. } => {
            println!("answer: {}", answer.map(|m| m.content).unwrap_or_default());
        }
        TurnOutcome::Interrupted { interrupts, .. } => {
            for interrupt in interrupts {
                println!("interrupt: {} asks {}", interrupt.id, interrupt.info);
            }
        }
        TurnOutcome::Failed(e) => panic!("the turn failed: {e}"),
    }
    let agents: Vec<&str> = inputs
        .lock()
        .unwrap()
        .iter()
        .map(|(a, _)| if a == "triage" { "triage" } else { "refund" })
        .collect::<Vec<_>>();
    println!("ran: {}", agents.join(","));
}

/// Each turn of a task in a new OS process on a durable store: the first process delegates
/// and the task asks; it exits; the next processes route the turns to the task, which
/// finishes in the third and returns its result to its parent there.
async fn a_task_goes_on_in_new_processes(backend: &str) {
    let turn_in_new_process = |text: &str| {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "task_child_runs_one_turn",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("TASK_PROCESS_BACKEND", backend)
            .env("TASK_PROCESS_TEXT", text)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let first = turn_in_new_process("I want a refund");
    assert!(first.contains("started at triage"), "{first}");
    assert!(first.contains("answer: Which order number?"), "{first}");
    assert!(first.contains("ran: triage,refund"), "{first}");
    let second = turn_in_new_process("42");
    assert!(second.contains("started at refund"), "{second}");
    assert!(
        second.contains("answer: Why do you want a refund?"),
        "{second}"
    );
    assert!(second.contains("ran: refund\n"), "{second}");
    let third = turn_in_new_process("it arrived broken");
    assert!(third.contains("started at refund"), "{third}");
    // The task finished and its parent ran again in the same turn, in this process.
    assert!(third.contains("ran: refund,triage"), "{third}");
    assert!(
        third.contains("answer: Refund for order 42 approved: true."),
        "{third}"
    );
}

/// A task interrupted for approval in one OS process and resumed in another: the first
/// process delegates and the task asks for the order; the second routes the answer to the task,
/// which asks a human to approve and the process exits with the turn interrupted; a third
/// process, which never saw the interrupt raised, resumes it by its id through the task,
/// which finishes, and its parent answers in that same resumed turn.
async fn an_approval_inside_a_task_resumes_in_a_new_process(backend: &str) {
    let in_new_process = |text: &str, approve: Option<&str>| {
        let mut command = std::process::Command::new(std::env::current_exe().unwrap());
        command
            .args([
                "--exact",
                "task_child_runs_one_turn",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("TASK_PROCESS_BACKEND", backend)
            .env("TASK_PROCESS_FLOW", "approval")
            .env("TASK_PROCESS_TEXT", text);
        if let Some(approve) = approve {
            command.env("TASK_PROCESS_APPROVE", approve);
        }
        let out = command.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let first = in_new_process("I want a refund", None);
    assert!(first.contains("answer: Which order number?"), "{first}");
    assert!(first.contains("ran: triage,refund\n"), "{first}");
    let second = in_new_process("42", None);
    assert!(second.contains("started at refund"), "{second}");
    assert!(second.contains("ran: refund\n"), "{second}");
    // The interrupt's id is the task's run path under its parent.
    let line = second
        .lines()
        .find(|l| l.starts_with("interrupt: "))
        .unwrap_or_else(|| panic!("the task asked for approval: {second}"));
    assert!(
        line.ends_with(r#"asks "approve a refund for order 42?""#),
        "{line}"
    );
    let id = line["interrupt: ".len()..].split(' ').next().unwrap();
    assert!(id.ends_with("refund"), "{id}");
    let third = in_new_process(id, Some("yes"));
    // Resumed through the task, which finished; the parent ran again in the same turn.
    assert!(third.contains("ran: refund,triage\n"), "{third}");
    assert!(
        third.contains("answer: Refund for order 42 approved: true."),
        "{third}"
    );
    // The thread goes on: the task is done, so the next turn starts at the parent again,
    // which delegates anew.
    let fourth = in_new_process("another refund please", None);
    assert!(fourth.contains("started at triage"), "{fourth}");
    assert!(fourth.contains("ran: triage,refund\n"), "{fourth}");
}

#[tokio::test]
async fn an_approval_inside_a_task_resumes_in_a_new_process_file() {
    let dir = process_dir("approval-file");
    an_approval_inside_a_task_resumes_in_a_new_process(&format!("file:{}", dir.display())).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn an_approval_inside_a_task_resumes_in_a_new_process_sqlite() {
    let dir = process_dir("approval-sqlite");
    std::fs::create_dir_all(&dir).unwrap();
    an_approval_inside_a_task_resumes_in_a_new_process(&format!(
        "sqlite:{}",
        dir.join("threads.db").display()
    ))
    .await;
    let _ = std::fs::remove_dir_all(&dir);
}

fn process_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "agentflow-task-process-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[tokio::test]
async fn a_task_goes_on_in_a_new_process_each_turn_and_returns_file() {
    let dir = process_dir("file");
    a_task_goes_on_in_new_processes(&format!("file:{}", dir.display())).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_task_goes_on_in_a_new_process_each_turn_and_returns_sqlite() {
    let dir = process_dir("sqlite");
    std::fs::create_dir_all(&dir).unwrap();
    a_task_goes_on_in_new_processes(&format!("sqlite:{}", dir.join("threads.db").display())).await;
    let _ = std::fs::remove_dir_all(&dir);
}
