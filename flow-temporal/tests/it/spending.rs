//! Budgets per thread and per tenant on a real dev server: the model activity reserves each
//! call in its flow's spending budgets (`Flows::spending`). A tenant's limit refuses the model
//! call that would cross it, across the tenant's threads: the model is not called, the
//! activity is not retried, and the turn ends with the `budget_exceeded` error of the same
//! refusal in process. An activity that fails after its charge (its model call panics once)
//! is retried under the same charge key and the call is charged once, with the usage the
//! model reported.
//!
//! A model without a price under a money budget fails the turn at once (not retried) with the
//! error of the same check in process: `AgentError::Failed` of the agent, the same message.
//!
//! Needs the dev server (see tests/it/temporal.rs).

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use agentweave_runtime::budget::{BudgetExceeded, BudgetKind, BudgetScope};
use agentweave_runtime::model::{ChatModel, ChatRequest, ModelError, Usage};
use agentweave_runtime::spending::BudgetPeriod;
use agentweave_runtime::store::InMemoryRunQueue;
use agentweave_runtime::{
    async_trait, ChatModelAgent, FlowAgent, Message, SpendingBudgets, SpendingLimits,
};
use agentweave_temporal::{worker_flows, Thread, ThreadStart};
use support::*;

/// A model that answers "hello" with a usage of 7 prompt and 3 reply tokens; its first
/// `panics` calls panic instead (the activity fails after its reservation).
struct Counting {
    panics: usize,
    calls: AtomicUsize,
}

#[async_trait]
impl ChatModel for Counting {
    fn model_name(&self) -> &str {
        "counting"
    }

    async fn generate(&self, _request: &ChatRequest) -> Result<Message, ModelError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) < self.panics {
            panic!("the worker fails after the call was charged");
        }
        let mut reply = Message::assistant("hello");
        reply.usage = Some(Box::new(Usage::new(7, 3)));
        Ok(reply)
    }
}

/// Registers a flow of one agent on `model` with `budgets` (threads `FLOW.TENANT.ID` belong to
/// TENANT, as a server names them), starts a worker; answers the client, the queue and the
/// flow's name.
async fn serve(
    model: Arc<Counting>,
    budgets: SpendingBudgets,
) -> Option<(temporalio_client::Client, String, String)> {
    let client = server().await?;
    let flow = unique("spend").replace('-', "_");
    let agent = ChatModelAgent::builder_with_arc("bot", model)
        .build()
        .unwrap();
    worker_flows().insert(&flow, FlowAgent::new(agent));
    worker_flows().spending(
        &flow,
        budgets.tenant_of(|thread| thread.split('.').nth(1).map(str::to_owned)),
    );
    let queue = unique("queue");
    start_worker(&client, &queue);
    Some((client, queue, flow))
}

async fn thread(client: &temporalio_client::Client, queue: &str, flow: &str, id: &str) -> Thread {
    Thread::start_with(client, queue, ThreadStart::new(flow, id))
        .await
        .unwrap()
}

fn error_of(events: &[serde_json::Value]) -> Option<&serde_json::Value> {
    events
        .iter()
        .find_map(|e| e.get("error").filter(|e| !e.is_null()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_limit_refuses_the_model_call_that_would_cross_it_and_the_turn_ends_budget_exceeded(
) {
    let model = Arc::new(Counting {
        panics: 0,
        calls: AtomicUsize::new(0),
    });
    let budgets = SpendingBudgets::new(Arc::new(InMemoryRunQueue::new())).tenant(
        BudgetPeriod::Day,
        SpendingLimits::default().max_model_calls(2),
    );
    let Some((client, queue, flow)) = serve(model.clone(), budgets.clone()).await else {
        return;
    };
    let tenant = unique("acme").replace('-', "_");
    let first = thread(&client, &queue, &flow, &format!("{flow}.{tenant}.a")).await;
    for _ in 0..2 {
        let events = first.turn("ana", "hi").await.unwrap().events;
        assert_eq!(error_of(&events), None, "within the limit: {events:#?}");
    }
    // The tenant's third call, on another of its threads, would cross its daily limit.
    let second = thread(&client, &queue, &flow, &format!("{flow}.{tenant}.b")).await;
    let events = second.turn("ana", "hi").await.unwrap().events;
    let error = error_of(&events).unwrap_or_else(|| panic!("a refusal: {events:#?}"));
    assert_eq!(error["kind"], "budget_exceeded", "{error}");
    let refusal: BudgetExceeded = serde_json::from_value(error["budget"].clone()).unwrap();
    assert_eq!(refusal.budget, BudgetKind::ModelCalls);
    assert_eq!(
        refusal.scope,
        BudgetScope::Tenant {
            period: BudgetPeriod::Day
        }
    );
    assert_eq!(refusal.agent.as_ref(), "bot");
    assert_eq!((refusal.limit, refusal.would_reach), (2, 3));
    assert_eq!(
        model.calls.load(Ordering::SeqCst),
        2,
        "the refused call was not made"
    );
    let spent = budgets
        .tenant_spent(&tenant, BudgetPeriod::Day, now_ms())
        .await
        .unwrap();
    assert_eq!(spent.model_calls, 2, "the refusal charged nothing");
    // Another tenant is not held by this one's limit.
    let other = unique("globex").replace('-', "_");
    let third = thread(&client, &queue, &flow, &format!("{flow}.{other}.a")).await;
    let events = third.turn("ana", "hi").await.unwrap().events;
    assert_eq!(error_of(&events), None, "{events:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_activity_retried_after_its_charge_charges_the_call_once() {
    let model = Arc::new(Counting {
        panics: 1,
        calls: AtomicUsize::new(0),
    });
    let budgets = SpendingBudgets::new(Arc::new(InMemoryRunQueue::new()))
        .thread(SpendingLimits::default().max_model_calls(10));
    let Some((client, queue, flow)) = serve(model.clone(), budgets.clone()).await else {
        return;
    };
    let id = format!("{flow}.acme.a");
    let thread = thread(&client, &queue, &flow, &id).await;
    let events = thread.turn("ana", "hi").await.unwrap().events;
    assert_eq!(error_of(&events), None, "{events:#?}");
    assert_eq!(
        model.calls.load(Ordering::SeqCst),
        2,
        "one failed attempt, one retry"
    );
    let spent = budgets.thread_spent(&id).await.unwrap();
    assert_eq!(spent.model_calls, 1, "charged once");
    assert_eq!(
        (spent.input_tokens, spent.output_tokens),
        (7, 3),
        "settled once, with the usage the model reported"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_without_a_price_under_a_money_budget_fails_the_turn_as_in_process() {
    use agentweave_runtime::store::InMemoryStore;
    use agentweave_runtime::{AgentError, ErrorJson, Runner, TurnRequest};
    use futures::StreamExt;

    let limits = SpendingLimits::default().max_cost_usd(1.0);
    // In process: the runner's own check of the same budgets.
    let local = Arc::new(Counting {
        panics: 0,
        calls: AtomicUsize::new(0),
    });
    let agent = ChatModelAgent::builder_with_arc("bot", local.clone())
        .build()
        .unwrap();
    let runner = Runner::builder(FlowAgent::new(agent))
        .stores(InMemoryStore::new())
        .spending(SpendingBudgets::new(Arc::new(InMemoryRunQueue::new())).thread(limits))
        .build();
    let events: Vec<_> = runner
        .turn(TurnRequest::new("acme.t", Message::user("hi")))
        .await
        .unwrap()
        .collect()
        .await;
    let in_process = events
        .iter()
        .find_map(|e| e.error.as_ref())
        .expect("an error in process");
    assert!(
        matches!(in_process, AgentError::Failed { agent, .. } if &**agent == "bot"),
        "{in_process:?}"
    );
    assert_eq!(local.calls.load(Ordering::SeqCst), 0);

    // On Temporal: the model activity's reservation fails for good, and the turn ends with
    // the same error.
    let model = Arc::new(Counting {
        panics: 0,
        calls: AtomicUsize::new(0),
    });
    let budgets = SpendingBudgets::new(Arc::new(InMemoryRunQueue::new())).thread(limits);
    let Some((client, queue, flow)) = serve(model.clone(), budgets).await else {
        return;
    };
    let thread = thread(&client, &queue, &flow, &format!("{flow}.acme.a")).await;
    let events = thread.turn("ana", "hi").await.unwrap().events;
    let error = error_of(&events).unwrap_or_else(|| panic!("an error: {events:#?}"));
    let on_temporal: ErrorJson = serde_json::from_value(error.clone()).unwrap();
    assert_eq!(on_temporal, ErrorJson::from(in_process), "{error}");
    assert_eq!(on_temporal.kind, "failed");
    assert!(
        on_temporal
            .message
            .contains("model 'counting', which has no price"),
        "{error}"
    );
    assert_eq!(
        model.calls.load(Ordering::SeqCst),
        0,
        "the model was not called"
    );
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}
