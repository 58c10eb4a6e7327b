//! Budgets: each kind stops a run before the call that would cross it, and not before; usage
//! and spending roll up through a task, an agent tool and a recovered turn.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentweave_runtime::budget::{BudgetKind, BudgetLimits, BudgetScope, Budgets, ModelPrice};
use agentweave_runtime::host::ManualHost;
use agentweave_runtime::middleware::{HookContext, HookError, Middleware};
use agentweave_runtime::model::{ModelParams, ScriptStep, ScriptedModel, Usage, UsageReport};
use agentweave_runtime::{
    set_sub_agents, tool_fn, AgentError, AgentEvent, AgentTool, BudgetExceeded, ChatModelAgent,
    Delegation, Durability, FlowAgent, InMemoryStore, Message, RecoverError, RunRequest, Runner,
    Session, Turn, TurnRequest,
};
use async_trait::async_trait;
use futures::StreamExt;
use serde_json::json;

/// A tool that counts its runs.
fn counted_tool(name: &'static str, runs: &Arc<Mutex<u32>>) -> agentweave_runtime::FnTool {
    let runs = Arc::clone(runs);
    tool_fn(name, "Looks something up.", move |_: serde_json::Value| {
        let runs = Arc::clone(&runs);
        async move {
            *runs.lock().unwrap() += 1;
            Ok::<_, String>("found".to_owned())
        }
    })
}

/// Runs `runner` on one user message with a session the test keeps.
async fn run(runner: &Runner, text: &str) -> (Vec<AgentEvent>, Arc<Session>) {
    let session = Session::new();
    let events = runner
        .run(RunRequest::new([Message::user(text)]).session(Arc::clone(&session)))
        .collect()
        .await;
    (events, session)
}

/// The run's last event's budget error.
fn exceeded(events: &[AgentEvent]) -> BudgetExceeded {
    match events.last().and_then(|e| e.error.as_ref()) {
        Some(AgentError::BudgetExceeded(e)) => e.clone(),
        other => panic!("expected a budget error, got {other:?} in {events:#?}"),
    }
}

/// An agent whose model calls `lookup` `tool_turns` times, then answers; each reply reports
/// `usage`.
fn looping_agent(tool_turns: usize, usage: Usage, runs: &Arc<Mutex<u32>>) -> ChatModelAgent {
    let mut steps: Vec<ScriptStep> = (0..tool_turns)
        .map(|_| ScriptStep::tool_call("lookup", json!({})).with_usage(usage))
        .collect();
    steps.push(ScriptStep::text("done").with_usage(usage));
    ChatModelAgent::builder("agent", ScriptedModel::new(steps).named("m"))
        .tool(counted_tool("lookup", runs))
        .build()
        .unwrap()
}

fn runner_with(agent: ChatModelAgent, budgets: Budgets) -> Runner {
    Runner::builder(FlowAgent::new(agent))
        .budgets(budgets)
        .build()
}

#[tokio::test]
async fn a_model_call_budget_stops_before_the_call_past_it_and_not_before() {
    let runs = Arc::default();
    let runner = runner_with(
        looping_agent(5, Usage::new(10, 2), &runs),
        Budgets::new(BudgetLimits::default().max_model_calls(3)),
    );
    let (events, session) = run(&runner, "go").await;
    let error = exceeded(&events);
    assert_eq!(
        (
            error.budget,
            error.scope,
            &*error.agent,
            error.limit,
            error.would_reach
        ),
        (BudgetKind::ModelCalls, BudgetScope::Run, "agent", 3, 4)
    );
    // Three calls answered and their three tool calls ran; the fourth call was never made.
    assert_eq!(session.budget_ledger().total.model_calls, 3);
    assert_eq!(session.usage().calls, 3);
    assert_eq!(*runs.lock().unwrap(), 3);
    assert!(error.to_string().contains("max_model_calls"), "{error}");
    // The ledger is among the session values a checkpoint saves, and a session made from
    // them (a resumed run's) goes on from it.
    let restored = Session::new();
    restored.add_values(session.values());
    assert_eq!(restored.budget_ledger(), session.budget_ledger());

    // The same flow with room for every call ends normally.
    let runs = Arc::default();
    let runner = runner_with(
        looping_agent(5, Usage::new(10, 2), &runs),
        Budgets::new(BudgetLimits::default().max_model_calls(6)),
    );
    let (events, _) = run(&runner, "go").await;
    assert!(events.iter().all(|e| e.error.is_none()), "{events:#?}");
    assert_eq!(
        events.last().unwrap().message_output().unwrap().content,
        "done"
    );
}

#[tokio::test]
async fn a_tool_call_budget_refuses_the_batch_that_would_cross_it() {
    let runs: Arc<Mutex<u32>> = Arc::default();
    let model = ScriptedModel::new([
        ScriptStep::tool_calls([("lookup", json!({"q": 1})), ("lookup", json!({"q": 2}))]),
        ScriptStep::tool_calls([("lookup", json!({"q": 3})), ("lookup", json!({"q": 4}))]),
        ScriptStep::text("done"),
    ]);
    let agent = ChatModelAgent::builder("agent", model.clone())
        .tool(counted_tool("lookup", &runs))
        .build()
        .unwrap();
    let runner = runner_with(
        agent,
        Budgets::new(BudgetLimits::default().max_tool_calls(3)),
    );
    let (events, session) = run(&runner, "go").await;
    let error = exceeded(&events);
    assert_eq!(
        (error.budget, error.limit, error.would_reach),
        (BudgetKind::ToolCalls, 3, 4)
    );
    // The first pair ran; the second reply's pair was refused whole, before either ran.
    assert_eq!(*runs.lock().unwrap(), 2);
    assert_eq!(model.calls(), 2);
    assert_eq!(session.budget_ledger().total.tool_calls, 2);

    // Four is enough for both pairs.
    let runs = Arc::default();
    let model = ScriptedModel::new([
        ScriptStep::tool_calls([("lookup", json!({"q": 1})), ("lookup", json!({"q": 2}))]),
        ScriptStep::tool_calls([("lookup", json!({"q": 3})), ("lookup", json!({"q": 4}))]),
        ScriptStep::text("done"),
    ]);
    let agent = ChatModelAgent::builder("agent", model)
        .tool(counted_tool("lookup", &runs))
        .build()
        .unwrap();
    let runner = runner_with(
        agent,
        Budgets::new(BudgetLimits::default().max_tool_calls(4)),
    );
    let (events, _) = run(&runner, "go").await;
    assert!(events.iter().all(|e| e.error.is_none()), "{events:#?}");
    assert_eq!(*runs.lock().unwrap(), 4);
}

/// `front` answers with a transfer to `back` and then two `lookup` calls in one reply; `back`
/// answers. Returns the runner, the lookups' run count and back's model.
fn transfer_then_tools(budgets: Budgets) -> (Runner, Arc<Mutex<u32>>, ScriptedModel) {
    let runs = Arc::default();
    let front_model = ScriptedModel::new([ScriptStep::tool_calls([
        ("transfer_to_agent", json!({"agent_name": "back"})),
        ("lookup", json!({"q": 1})),
        ("lookup", json!({"q": 2})),
    ])]);
    let back_model = ScriptedModel::new([ScriptStep::text("done")]);
    let front = ChatModelAgent::builder("front", front_model)
        .tool(counted_tool("lookup", &runs))
        .build()
        .unwrap();
    let back = ChatModelAgent::builder("back", back_model.clone())
        .build()
        .unwrap();
    let tree = set_sub_agents(FlowAgent::new(front), [FlowAgent::new(back)]).unwrap();
    let runner = Runner::builder(tree).budgets(budgets).build();
    (runner, runs, back_model)
}

#[tokio::test]
async fn a_tool_call_budget_counts_the_tools_after_a_transfer_in_a_reply_and_not_the_transfer() {
    // One tool call allowed: the reply's two lookups are refused whole, before either runs
    // and before the transfer is made.
    let (runner, runs, back_model) =
        transfer_then_tools(Budgets::new(BudgetLimits::default().max_tool_calls(1)));
    let (events, session) = run(&runner, "go").await;
    let error = exceeded(&events);
    assert_eq!(
        (error.budget, &*error.agent, error.limit, error.would_reach),
        (BudgetKind::ToolCalls, "front", 1, 2)
    );
    assert_eq!(*runs.lock().unwrap(), 0);
    assert_eq!(back_model.calls(), 0);
    assert_eq!(session.budget_ledger().total.tool_calls, 0);

    // Two: the lookups are charged, the transfer is not.
    let (runner, _, back_model) =
        transfer_then_tools(Budgets::new(BudgetLimits::default().max_tool_calls(2)));
    let (events, session) = run(&runner, "go").await;
    assert!(events.iter().all(|e| e.error.is_none()), "{events:#?}");
    assert_eq!(session.budget_ledger().total.tool_calls, 2);
    assert_eq!(back_model.calls(), 1);
}

#[tokio::test]
async fn an_input_token_budget_counts_the_next_prompt_before_sending_it() {
    // Each reply reports 100 prompt tokens. With 250: after two calls (200 spent) the third
    // prompt, estimated at a dozen tokens or more, would pass 250 only if 50 were estimated;
    // it is not, so the third call is made; the fourth (300 spent) is refused.
    let runs = Arc::default();
    let runner = runner_with(
        looping_agent(5, Usage::new(100, 1), &runs),
        Budgets::new(BudgetLimits::default().max_input_tokens(250)),
    );
    let (events, session) = run(&runner, "go").await;
    let error = exceeded(&events);
    assert_eq!((error.budget, error.limit), (BudgetKind::InputTokens, 250));
    assert_eq!(session.budget_ledger().total.model_calls, 3);
    assert!(error.would_reach > 300, "{error}");

    // A prompt that alone is estimated past the budget is never sent.
    let runs = Arc::default();
    let agent = looping_agent(0, Usage::new(1, 1), &runs);
    let runner = runner_with(
        agent,
        Budgets::new(BudgetLimits::default().max_input_tokens(100)),
    );
    let (events, session) = run(&runner, &"word ".repeat(200)).await;
    let error = exceeded(&events);
    // 1,000 bytes: 4 + 250 tokens by the estimate.
    assert_eq!((error.would_reach, error.limit), (254, 100));
    assert_eq!(session.usage().calls, 0);
}

/// `front` looks something up and transfers to `back`, which answers; neither reports usage,
/// so what a check counts of a prompt is its estimate alone. Returns the runner and the models.
fn front_and_back(budgets: Budgets) -> (Runner, ScriptedModel, ScriptedModel) {
    let runs = Arc::default();
    let front_model = ScriptedModel::new(vec![
        ScriptStep::tool_call(
            "lookup",
            json!({"order": "A-1234", "note": "x".repeat(120)}),
        ),
        ScriptStep::transfer("back"),
    ]);
    let back_model = ScriptedModel::new(vec![ScriptStep::text("done")]);
    let front = ChatModelAgent::builder("front", front_model.clone())
        .tool(counted_tool("lookup", &runs))
        .build()
        .unwrap();
    let back = ChatModelAgent::builder("back", back_model.clone())
        .build()
        .unwrap();
    let tree = set_sub_agents(FlowAgent::new(front), [FlowAgent::new(back)]).unwrap();
    let runner = Runner::builder(tree).budgets(budgets).build();
    (runner, front_model, back_model)
}

/// A request's prompt tokens as the budgets estimate them.
fn estimated(request: &agentweave_runtime::model::ChatRequest) -> u64 {
    request
        .messages
        .iter()
        .map(|m| agentweave_runtime::history::estimate_tokens(m) as u64)
        .sum()
}

#[tokio::test]
async fn a_transferred_agents_prompt_counts_the_others_messages_in_their_context_form() {
    // Within budget: the prompts as sent, and their estimates.
    let (runner, front_model, back_model) = front_and_back(Budgets::new(
        BudgetLimits::default().max_input_tokens(1_000_000),
    ));
    let (events, _) = run(&runner, "where is my order?").await;
    assert!(events.iter().all(|e| e.error.is_none()), "{events:#?}");
    let back_prompt = &back_model.requests()[0];
    assert!(
        back_prompt
            .messages
            .iter()
            .any(|m| m.content.starts_with("For context: [front]")),
        "{back_prompt:?}"
    );
    let back_tokens = estimated(back_prompt);
    let front_tokens = front_model.requests().iter().map(estimated).max().unwrap();
    assert!(front_tokens < back_tokens, "{front_tokens} {back_tokens}");

    // One token short of the back agent's prompt: it is refused before the call, with the
    // prompt's whole estimate (the front agent's calls, smaller, are made).
    let (runner, front_model, back_model) = front_and_back(Budgets::new(
        BudgetLimits::default().max_input_tokens(back_tokens - 1),
    ));
    let (events, _) = run(&runner, "where is my order?").await;
    let error = exceeded(&events);
    assert_eq!(
        (error.budget, &*error.agent, error.would_reach),
        (BudgetKind::InputTokens, "back", back_tokens)
    );
    assert_eq!((front_model.calls(), back_model.calls()), (2, 0));

    // Exactly the back agent's prompt: the call is made.
    let (runner, _, back_model) = front_and_back(Budgets::new(
        BudgetLimits::default().max_input_tokens(back_tokens),
    ));
    let (events, _) = run(&runner, "where is my order?").await;
    assert!(events.iter().all(|e| e.error.is_none()), "{events:#?}");
    assert_eq!(back_model.calls(), 1);
}

#[tokio::test]
async fn output_and_total_token_budgets_use_the_requests_max_tokens() {
    // max_tokens 50: the next reply may be 50 tokens long, so with 120 spent-or-promised the
    // budget holds two replies of 50 and refuses the third.
    let runs = Arc::default();
    let model = ScriptedModel::new(
        (0..4)
            .map(|_| ScriptStep::tool_call("lookup", json!({})).with_usage(Usage::new(5, 50)))
            .collect::<Vec<_>>(),
    );
    let agent = ChatModelAgent::builder("agent", model.clone())
        .tool(counted_tool("lookup", &runs))
        .model_params(ModelParams {
            max_tokens: Some(50),
            ..Default::default()
        })
        .build()
        .unwrap();
    let runner = runner_with(
        agent,
        Budgets::new(BudgetLimits::default().max_output_tokens(120)),
    );
    let (events, _) = run(&runner, "go").await;
    let error = exceeded(&events);
    assert_eq!(
        (error.budget, error.limit, error.would_reach),
        (BudgetKind::OutputTokens, 120, 150)
    );
    assert_eq!(model.calls(), 2);

    // Total tokens: each call reports 100 in and 10 out; 230 allows two calls (220 spent) but
    // not a third, whatever its prompt.
    let runs = Arc::default();
    let runner = runner_with(
        looping_agent(5, Usage::new(100, 10), &runs),
        Budgets::new(BudgetLimits::default().max_total_tokens(230)),
    );
    let (events, session) = run(&runner, "go").await;
    let error = exceeded(&events);
    assert_eq!((error.budget, error.limit), (BudgetKind::TotalTokens, 230));
    assert_eq!(session.budget_ledger().total.usage.total_tokens(), 220);
}

#[tokio::test]
async fn a_money_budget_prices_cached_and_reasoning_tokens_apart() {
    // 1,000 in (800 cached), 100 out (50 reasoning), at 10 / 1 / 30 / 60 dollars a million:
    // 200 x 10 + 800 x 1 + 50 x 30 + 50 x 60 = 7,300 millionths of a dollar a call.
    let usage = Usage::new(1_000, 100)
        .with_cached_input(800)
        .with_reasoning(50);
    let price = ModelPrice::per_million_tokens(10.0, 30.0)
        .cached_input(1.0)
        .reasoning(60.0);
    let runs = Arc::default();
    let runner = runner_with(
        looping_agent(5, usage, &runs),
        Budgets::new(BudgetLimits::default().max_cost_usd(0.02)).price("m", price),
    );
    let (events, session) = run(&runner, "go").await;
    let error = exceeded(&events);
    assert_eq!((error.budget, error.limit), (BudgetKind::Cost, 20_000));
    // Two calls spent 14,600; a third spends at least its prompt's estimate more, and the
    // check let it through only because 14,600 + estimate stays under 20,000: the fourth is
    // refused (21,900 spent + its estimate).
    let ledger = session.budget_ledger();
    assert_eq!(ledger.total.model_calls, 3);
    assert_eq!(ledger.total.cost_micro_usd, 21_900);
    assert_eq!(ledger.agent("agent").unwrap().cost_micro_usd, 21_900);

    // A money budget and a model with no price: a clear error before any call.
    let runs = Arc::default();
    let runner = runner_with(
        looping_agent(1, usage, &runs),
        Budgets::new(BudgetLimits::default().max_cost_usd(1.0)),
    );
    let (events, session) = run(&runner, "go").await;
    let error = events.last().unwrap().error.as_ref().expect("an error");
    assert!(
        error.to_string().contains("Budgets::price(\"m\""),
        "{error}"
    );
    assert_eq!(session.usage().calls, 0);
}

#[tokio::test]
async fn a_wall_time_budget_reads_the_hosts_clock() {
    let host = ManualHost::new();
    let runs: Arc<Mutex<u32>> = Arc::default();
    let clock = host.clone();
    let slow = tool_fn(
        "lookup",
        "Takes ten seconds.",
        move |_: serde_json::Value| {
            let (clock, runs) = (clock.clone(), Arc::clone(&runs));
            async move {
                clock.advance(Duration::from_secs(10));
                *runs.lock().unwrap() += 1;
                Ok::<_, String>("found".to_owned())
            }
        },
    );
    let steps: Vec<ScriptStep> = (0..5)
        .map(|_| ScriptStep::tool_call("lookup", json!({})))
        .collect();
    let agent = ChatModelAgent::builder("agent", ScriptedModel::new(steps))
        .tool(slow)
        .build()
        .unwrap();
    let runner = Runner::builder(FlowAgent::new(agent))
        .host(Arc::new(host.clone()))
        .budgets(Budgets::new(
            BudgetLimits::default().max_wall_time(Duration::from_secs(25)),
        ))
        .build();
    let (events, _) = run(&runner, "go").await;
    let error = exceeded(&events);
    // Checks at 0, 10 and 20 s pass; at 30 s the fourth model call is refused.
    assert_eq!(
        (error.budget, error.limit, error.would_reach),
        (BudgetKind::WallTime, 25_000, 30_000)
    );
    assert_eq!(host.elapsed(), Duration::from_secs(30));
}

#[tokio::test]
async fn an_agents_own_budget_names_it_and_leaves_the_others_alone() {
    let runs = Arc::default();
    let refund = ChatModelAgent::builder(
        "refund",
        ScriptedModel::new([
            ScriptStep::tool_call("lookup", json!({})),
            ScriptStep::text("refunded"),
        ]),
    )
    .tool(counted_tool("lookup", &runs))
    .build()
    .unwrap();
    let triage = ChatModelAgent::builder(
        "triage",
        ScriptedModel::new([
            ScriptStep::tool_call("lookup", json!({})),
            ScriptStep::transfer("refund"),
        ]),
    )
    .tool(counted_tool("lookup", &runs))
    .build()
    .unwrap();
    let tree = set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refund)]).unwrap();
    // triage makes two calls, refund would make two; refund may make only one.
    let budgets = Budgets::new(BudgetLimits::default().max_model_calls(10))
        .agent("refund", BudgetLimits::default().max_model_calls(1));
    let runner = Runner::builder(tree).budgets(budgets).build();
    let (events, session) = run(&runner, "refund please").await;
    let error = exceeded(&events);
    assert_eq!(
        (error.budget, error.scope, &*error.agent, error.would_reach),
        (BudgetKind::ModelCalls, BudgetScope::Agent, "refund", 2)
    );
    let ledger = session.budget_ledger();
    assert_eq!(ledger.agent("triage").unwrap().model_calls, 2);
    assert_eq!(ledger.agent("refund").unwrap().model_calls, 1);
    assert_eq!(ledger.agent("triage").unwrap().tool_calls, 1);
    assert_eq!(ledger.agent("refund").unwrap().tool_calls, 1);
    assert_eq!(ledger.total.model_calls, 3);
}

/// The sum of the usages the run's events report (whole messages only).
fn sum_of_events(events: &[AgentEvent]) -> (Usage, u64) {
    let mut sum = Usage::default();
    let mut calls = 0;
    for usage in events.iter().filter_map(AgentEvent::usage) {
        sum += *usage;
        calls += 1;
    }
    (sum, calls)
}

/// The refund task's result.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

#[tokio::test]
async fn usage_rolls_up_through_a_task_and_an_agent_tool() {
    // triage calls the `research` agent tool (whose agent makes two model calls), then
    // transfers to the `refund` task (one call: finish_task), then answers.
    let researcher = ChatModelAgent::builder(
        "researcher",
        ScriptedModel::new([
            ScriptStep::tool_call("lookup", json!({})).with_usage(Usage::new(30, 3)),
            ScriptStep::text("prices are up").with_usage(Usage::new(40, 4)),
        ])
        .named("research-model"),
    )
    .tool(counted_tool("lookup", &Arc::default()))
    .build()
    .unwrap();
    let refund = ChatModelAgent::builder(
        "refund",
        ScriptedModel::new([ScriptStep::tool_call("finish_task", json!({"ok": true}))
            .with_usage(Usage::new(50, 5).with_cached_input(20))])
        .named("refund-model"),
    )
    .returns::<Done>()
    .build()
    .unwrap();
    let triage = ChatModelAgent::builder(
        "triage",
        ScriptedModel::new([
            ScriptStep::tool_call("researcher", json!({"request": "prices"}))
                .with_usage(Usage::new(10, 1)),
            ScriptStep::transfer("refund").with_usage(Usage::new(20, 2)),
            ScriptStep::text("all done").with_usage(Usage::new(60, 6).with_reasoning(2)),
        ])
        .named("triage-model"),
    )
    .tool(AgentTool::new(FlowAgent::new(researcher)))
    .build()
    .unwrap();
    let tree = set_sub_agents(
        FlowAgent::new(triage),
        [FlowAgent::new(refund).delegation(Delegation::Task)],
    )
    .unwrap();
    let runner = Runner::builder(tree)
        .budgets(Budgets::new(BudgetLimits::default().max_model_calls(100)))
        .build();
    let (events, session) = run(&runner, "refund please").await;
    assert!(events.iter().all(|e| e.error.is_none()), "{events:#?}");
    assert_eq!(
        events.last().unwrap().message_output().unwrap().content,
        "all done"
    );
    let expected = Usage::new(210, 21).with_cached_input(20).with_reasoning(2);
    let report = session.usage();
    assert_eq!((report.total, report.calls), (expected, 6));
    assert_eq!(report.by_agent["researcher"].calls, 2);
    assert_eq!(
        report.by_agent["refund"].usage,
        Usage::new(50, 5).with_cached_input(20)
    );
    assert_eq!(report.by_agent["triage"].calls, 3);
    // Every call of the run's own agents is in its event; the agent tool's inner run's
    // events stay inside the tool, and the report adds them.
    let inner = report.by_agent["researcher"].usage;
    assert_eq!(inner, Usage::new(70, 7));
    let (outer, outer_calls) = sum_of_events(&events);
    assert_eq!((outer + inner, outer_calls + 2), (expected, 6));
    // The budget ledger saw the same calls.
    let ledger = session.budget_ledger();
    assert_eq!(
        (ledger.total.usage, ledger.total.model_calls),
        (expected, 6)
    );
    assert_eq!(ledger.agent("researcher").unwrap().tool_calls, 1);
}

/// Keeps the usage report of the root agent's run when it ends.
struct KeepUsage(Arc<Mutex<Option<UsageReport>>>);

#[async_trait]
impl Middleware for KeepUsage {
    async fn after_agent(&self, cx: &HookContext) -> Result<(), HookError> {
        if cx.agent_name() == "desk" {
            *self.0.lock().unwrap() = Some(cx.session().usage());
        }
        Ok(())
    }
}

/// The desk of the recovery test: `note` once, then an answer; each reply reports usage.
fn desk(kept: &Arc<Mutex<Option<UsageReport>>>, store: &InMemoryStore) -> (Runner, ScriptedModel) {
    let model = ScriptedModel::rules()
        .after_tool(
            "note",
            ScriptStep::text("noted").with_usage(Usage::new(200, 20)),
        )
        .otherwise(ScriptStep::tool_call("note", json!({})).with_usage(Usage::new(100, 10)));
    let agent = ChatModelAgent::builder("desk", model.clone())
        .tool(counted_tool("note", &Arc::default()))
        .build()
        .unwrap();
    let runner = Runner::builder(FlowAgent::new(agent))
        .stores(store.clone())
        .journal_store(store.clone())
        .durability(Durability::Sync)
        .lease(Duration::from_millis(60))
        .middleware(KeepUsage(Arc::clone(kept)))
        .build();
    (runner, model)
}

#[tokio::test]
async fn a_recovered_turn_counts_the_usage_of_its_replayed_model_calls() {
    let store = InMemoryStore::new();
    let dead_kept = Arc::default();
    let (dead, _) = desk(&dead_kept, &store);
    // The worker dies after the first reply and its tool result were journaled.
    let mut turn: Turn = dead
        .turn(TurnRequest::new("t", Message::user("note it")))
        .await
        .unwrap();
    for _ in 0..2 {
        turn.next().await.expect("an event");
    }
    std::mem::forget(turn);

    let kept = Arc::default();
    let (alive, model) = desk(&kept, &store);
    let recovered = loop {
        match alive.recover("t").await {
            Err(RecoverError::Leased { .. }) => tokio::time::sleep(Duration::from_millis(10)).await,
            other => break other.unwrap().expect("a turn to recover"),
        }
    };
    let events: Vec<AgentEvent> = recovered.collect().await;
    assert_eq!(
        events.last().unwrap().message_output().unwrap().content,
        "noted"
    );
    // Only the second call reached the model; the first was answered from the journal.
    assert_eq!(model.calls(), 1);
    let report = kept.lock().unwrap().clone().expect("the desk ended");
    assert_eq!(report.total, Usage::new(300, 30));
    assert_eq!(report.calls, 2);
    assert!(dead_kept.lock().unwrap().is_none());
}
