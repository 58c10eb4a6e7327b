//! Budgets per thread and per tenant per period, shared by every runner on one store
//! ([`SpendingBudgets`] over a [`SpendingStore`]): each scope stops a turn at the call past
//! it and not before; two runners on one SQLite (or PostgreSQL) store stop together at the
//! tenant's limit; a tenant's day rolls over at UTC midnight on the host's clock; deleting a
//! thread deletes its row; every call is written to the usage report.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentweave_runtime::budget::{BudgetKind, BudgetScope, ModelPrice};
use agentweave_runtime::host::ManualHost;
use agentweave_runtime::model::{ScriptStep, ScriptedModel, Usage};
use agentweave_runtime::spending::BudgetPeriod;
use agentweave_runtime::store::conformance::{
    charge_keys_charge_once, racing_reservations, reservation_is_all_or_nothing,
};
use agentweave_runtime::store::{InMemoryRunQueue, RunQueue, Spending, SpendingStore, UsageFilter};
use agentweave_runtime::{
    tool_fn, AgentError, AgentEvent, BudgetExceeded, ChatModelAgent, FlowAgent, InMemoryStore,
    Message, Runner, SpendingBudgets, SpendingLimits, TurnRequest,
};
use futures::StreamExt;
use serde_json::json;

/// An agent whose model, in each of four turns, calls `lookup` `tool_turns` times, then
/// answers; each reply reports `usage`. Its model, to count the calls that reached it.
fn looping_agent(tool_turns: usize, usage: Usage) -> (ChatModelAgent, ScriptedModel) {
    let mut steps: Vec<ScriptStep> = Vec::new();
    for _ in 0..4 {
        steps.extend(
            (0..tool_turns).map(|_| ScriptStep::tool_call("lookup", json!({})).with_usage(usage)),
        );
        steps.push(ScriptStep::text("done").with_usage(usage));
    }
    let model = ScriptedModel::new(steps).named("m");
    let lookup = tool_fn(
        "lookup",
        "Looks something up.",
        |_: serde_json::Value| async { Ok::<_, String>("found".to_owned()) },
    );
    let agent = ChatModelAgent::builder("agent", model.clone())
        .tool(lookup)
        .build()
        .unwrap();
    (agent, model)
}

/// Threads named `TENANT.ID` belong to TENANT.
fn by_prefix(thread: &str) -> Option<String> {
    thread.split_once('.').map(|(t, _)| t.to_owned())
}

fn runner(agent: ChatModelAgent, budgets: SpendingBudgets, host: Option<&ManualHost>) -> Runner {
    let builder = Runner::builder(FlowAgent::new(agent))
        .stores(InMemoryStore::new())
        .spending(budgets);
    match host {
        Some(host) => builder.host(Arc::new(host.clone())).build(),
        None => builder.build(),
    }
}

async fn turn(runner: &Runner, thread: &str) -> Vec<AgentEvent> {
    runner
        .turn(TurnRequest::new(thread, Message::user("go")))
        .await
        .unwrap()
        .collect()
        .await
}

fn exceeded(events: &[AgentEvent]) -> Option<BudgetExceeded> {
    match events.last().and_then(|e| e.error.as_ref()) {
        Some(AgentError::BudgetExceeded(e)) => Some(e.clone()),
        _ => None,
    }
}

fn ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

#[tokio::test]
async fn a_thread_budget_stops_the_turn_at_the_call_past_it_and_not_before() {
    let queue = InMemoryRunQueue::new();
    let budgets = SpendingBudgets::new(Arc::new(queue.clone()))
        .thread(SpendingLimits::default().max_model_calls(5));
    // Each turn makes three calls (two tool turns, then the answer).
    let (agent, model) = looping_agent(2, Usage::new(10, 2));
    let runner = runner(agent, budgets.clone(), None);
    let first = turn(&runner, "t1").await;
    assert!(exceeded(&first).is_none(), "{first:#?}");
    assert_eq!(budgets.thread_spent("t1").await.unwrap().model_calls, 3);
    // The second turn's first two calls fit (4, 5); its third would be the sixth.
    let second = turn(&runner, "t1").await;
    let error = exceeded(&second).expect("the thread's budget stops the turn");
    assert_eq!(
        (
            error.budget,
            error.scope,
            &*error.agent,
            error.limit,
            error.would_reach
        ),
        (BudgetKind::ModelCalls, BudgetScope::Thread, "agent", 5, 6)
    );
    assert_eq!(model.calls(), 5);
    assert_eq!(
        second.last().unwrap().error.as_ref().unwrap().kind(),
        "budget_exceeded"
    );
    // The reservation of the refused call was not kept; the settled ones hold the reported
    // usage, not their estimates.
    assert_eq!(
        budgets.thread_spent("t1").await.unwrap(),
        Spending {
            input_tokens: 50,
            output_tokens: 10,
            cost_micro_usd: 0,
            model_calls: 5
        }
    );
    // Another thread has a budget of its own.
    let (agent, _) = looping_agent(2, Usage::new(10, 2));
    let other = runner_on(agent, &budgets);
    assert!(exceeded(&turn(&other, "t2").await).is_none());
}

fn runner_on(agent: ChatModelAgent, budgets: &SpendingBudgets) -> Runner {
    runner(agent, budgets.clone(), None)
}

#[tokio::test]
async fn a_tenant_budget_counts_every_thread_of_the_tenant_and_no_other() {
    let queue = InMemoryRunQueue::new();
    let budgets = SpendingBudgets::new(Arc::new(queue.clone()))
        .tenant(
            BudgetPeriod::Month,
            SpendingLimits::default().max_cost_usd(0.000_008),
        )
        .price("m", ModelPrice::per_million_tokens(0.0, 1.0))
        .tenant_of(by_prefix);
    // Only reply tokens cost: a millionth each. Each call replies one token, and is estimated
    // at one (the request sets no max_tokens).
    let (agent, _) = looping_agent(20, Usage::new(10, 1));
    let runner = runner_on(agent, &budgets);
    let a = turn(&runner, "acme.a").await;
    let error = exceeded(&a).expect("the tenant's month stops the turn");
    assert_eq!(
        (error.budget, error.scope),
        (
            BudgetKind::Cost,
            BudgetScope::Tenant {
                period: BudgetPeriod::Month
            }
        )
    );
    let now = ms(SystemTime::now());
    let spent = budgets
        .tenant_spent("acme", BudgetPeriod::Month, now)
        .await
        .unwrap();
    // Eight calls (8) fit; the ninth would reach 9.
    assert_eq!((spent.model_calls, spent.cost_micro_usd), (8, 8));
    assert_eq!((error.limit, error.would_reach), (8, 9));
    // The tenant's other thread is refused at its first call; another tenant runs.
    let b = turn(&runner, "acme.b").await;
    assert_eq!(exceeded(&b).map(|e| e.limit), Some(8));
    let (agent, model) = looping_agent(2, Usage::new(10, 1));
    let other = runner_on(agent, &budgets);
    assert!(exceeded(&turn(&other, "globex.a").await).is_none());
    assert_eq!(model.calls(), 3);
}

#[tokio::test]
async fn a_tenants_day_rolls_over_at_utc_midnight_on_the_hosts_clock() {
    // 2026-12-07T23:59:00Z.
    let start = UNIX_EPOCH + Duration::from_millis(1_796_687_940_000);
    let host = ManualHost::starting_at(start);
    let queue = InMemoryRunQueue::new();
    let budgets = SpendingBudgets::new(Arc::new(queue.clone()))
        .tenant(
            BudgetPeriod::Day,
            SpendingLimits::default().max_model_calls(4),
        )
        .tenant(
            BudgetPeriod::Month,
            SpendingLimits::default().max_model_calls(100),
        )
        .tenant_of(by_prefix);
    let (agent, model) = looping_agent(10, Usage::new(10, 2));
    let runner = runner(agent, budgets.clone(), Some(&host));
    let error = exceeded(&turn(&runner, "acme.a").await).expect("the day's calls are spent");
    assert_eq!(
        (error.scope, error.limit, error.would_reach),
        (
            BudgetScope::Tenant {
                period: BudgetPeriod::Day
            },
            4,
            5
        )
    );
    assert_eq!(model.calls(), 4);
    // Still the same day: refused at once.
    assert!(exceeded(&turn(&runner, "acme.b").await).is_some());
    assert_eq!(model.calls(), 4);
    // Two minutes later it is the 8th: a new day, four more calls.
    host.advance(Duration::from_secs(120));
    let error = exceeded(&turn(&runner, "acme.c").await).expect("the new day's calls are spent");
    assert_eq!(error.would_reach, 5);
    assert_eq!(model.calls(), 8);
    let spent = |period, at| {
        let budgets = budgets.clone();
        async move {
            budgets
                .tenant_spent("acme", period, at)
                .await
                .unwrap()
                .model_calls
        }
    };
    assert_eq!(spent(BudgetPeriod::Day, ms(start)).await, 4);
    assert_eq!(
        spent(
            BudgetPeriod::Day,
            ms(agentweave_runtime::host::Host::now(&host))
        )
        .await,
        4
    );
    // Both days are in December: the month counts all eight.
    assert_eq!(spent(BudgetPeriod::Month, ms(start)).await, 8);
    // The usage report has a row per day.
    let store = queue.spending().unwrap();
    let rows = store.usage(&UsageFilter::default(), 10, 0).await.unwrap();
    let days: Vec<(&str, i64)> = rows
        .iter()
        .map(|r| (r.day.as_str(), r.spent.model_calls))
        .collect();
    assert_eq!(days, [("2026-12-07", 4), ("2026-12-08", 4)]);
}

#[tokio::test]
async fn deleting_a_thread_deletes_its_spending_row_and_not_the_tenants() {
    let queue = InMemoryRunQueue::new();
    let budgets = SpendingBudgets::new(Arc::new(queue.clone()))
        .thread(SpendingLimits::default().max_model_calls(100))
        .tenant(
            BudgetPeriod::Day,
            SpendingLimits::default().max_model_calls(100),
        )
        .tenant_of(by_prefix);
    let (agent, _) = looping_agent(1, Usage::new(10, 2));
    let runner = runner_on(agent, &budgets);
    turn(&runner, "acme.a").await;
    assert_eq!(budgets.thread_spent("acme.a").await.unwrap().model_calls, 2);
    assert!(runner.thread("acme.a").delete().await.unwrap());
    assert_eq!(
        budgets.thread_spent("acme.a").await.unwrap(),
        Spending::default()
    );
    let now = ms(SystemTime::now());
    let tenant = budgets
        .tenant_spent("acme", BudgetPeriod::Day, now)
        .await
        .unwrap();
    assert_eq!(tenant.model_calls, 2);
}

#[tokio::test]
async fn every_call_is_written_to_the_usage_report_per_agent_and_model() {
    let queue = InMemoryRunQueue::new();
    let budgets = SpendingBudgets::new(Arc::new(queue.clone()))
        .price("m", ModelPrice::per_million_tokens(2.0, 8.0))
        .tenant_of(by_prefix)
        .flow("desk");
    let (agent, _) = looping_agent(2, Usage::new(100, 10));
    let runner = runner_on(agent, &budgets);
    turn(&runner, "acme.a").await;
    turn(&runner, "globex.a").await;
    let store = queue.spending().unwrap();
    let acme = UsageFilter {
        tenant: Some("acme".into()),
        ..UsageFilter::default()
    };
    let rows = store.usage(&acme, 10, 0).await.unwrap();
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(
        (&*row.tenant, &*row.flow, &*row.agent, &*row.model),
        ("acme", "desk", "agent", "m")
    );
    // Three calls of 100 + 10 tokens, each 100 x 2 + 10 x 8 = 280 millionths.
    assert_eq!(
        row.spent,
        Spending {
            input_tokens: 300,
            output_tokens: 30,
            cost_micro_usd: 840,
            model_calls: 3
        }
    );
    assert_eq!(store.count_usage(&UsageFilter::default()).await.unwrap(), 2);
    let other_flow = UsageFilter {
        flow: Some("other".into()),
        ..UsageFilter::default()
    };
    assert_eq!(store.count_usage(&other_flow).await.unwrap(), 0);
}

#[tokio::test]
async fn the_in_memory_store_reserves_all_or_nothing() {
    let queue = InMemoryRunQueue::new();
    reservation_is_all_or_nothing(queue.spending().unwrap()).await;
    racing_reservations(Arc::new(queue.clone()), Arc::new(queue)).await;
}

/// Two runners, each with its own queue handle on one shared store, run turns of the same
/// tenant at once: together they make exactly the tenant's limit of calls, and both stop.
async fn two_runners_stop_together(a: Arc<dyn SpendingStore>, b: Arc<dyn SpendingStore>) {
    let limit = 7;
    let budgets = |store| {
        SpendingBudgets::new(store)
            .tenant(
                BudgetPeriod::Day,
                SpendingLimits::default().max_model_calls(limit),
            )
            .tenant_of(by_prefix)
    };
    let (agent_a, model_a) = looping_agent(20, Usage::new(10, 2));
    let (agent_b, model_b) = looping_agent(20, Usage::new(10, 2));
    let runner_a = runner(agent_a, budgets(a), None);
    let runner_b = runner(agent_b, budgets(b), None);
    let made = Arc::new(Mutex::new(Vec::new()));
    let go = |runner: Runner, thread: &'static str| {
        let made = Arc::clone(&made);
        tokio::spawn(async move {
            let events = turn(&runner, thread).await;
            made.lock().unwrap().push(exceeded(&events));
        })
    };
    let (x, y) = tokio::join!(go(runner_a, "acme.a"), go(runner_b, "acme.b"));
    x.unwrap();
    y.unwrap();
    assert_eq!(model_a.calls() + model_b.calls(), limit as usize);
    for stop in made.lock().unwrap().iter() {
        let stop = stop
            .as_ref()
            .expect("both turns stop at the tenant's limit");
        assert_eq!(
            (stop.scope, stop.limit),
            (
                BudgetScope::Tenant {
                    period: BudgetPeriod::Day
                },
                limit
            )
        );
    }
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_runners_on_one_sqlite_store_stop_together_at_the_tenants_limit() {
    use agentweave_runtime::store::SqliteRunQueue;
    let dir = crate::support::dirs::temp_dir("spending", "sqlite");
    let path = dir.join("store.db");
    let a = SqliteRunQueue::open(&path).await.unwrap();
    let b = SqliteRunQueue::open(&path).await.unwrap();
    reservation_is_all_or_nothing(&a).await;
    let (a, b): (Arc<dyn SpendingStore>, Arc<dyn SpendingStore>) = (Arc::new(a), Arc::new(b));
    racing_reservations(Arc::clone(&a), Arc::clone(&b)).await;
    two_runners_stop_together(a, b).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_runners_on_one_postgres_store_stop_together_at_the_tenants_limit() {
    use agentweave_runtime::store::PostgresRunQueue;
    let Some(url) = agentweave_runtime::testing::fresh_postgres_database("spending").await else {
        return;
    };
    let a = PostgresRunQueue::connect(&url).await.unwrap();
    let b = PostgresRunQueue::connect(&url).await.unwrap();
    reservation_is_all_or_nothing(&a).await;
    let (a, b): (Arc<dyn SpendingStore>, Arc<dyn SpendingStore>) = (Arc::new(a), Arc::new(b));
    racing_reservations(Arc::clone(&a), Arc::clone(&b)).await;
    two_runners_stop_together(a, b).await;
}

/// The refund task's result.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

#[tokio::test]
async fn a_turns_spending_rolls_up_through_an_agent_tool_and_a_task_into_its_thread() {
    use agentweave_runtime::{set_sub_agents, AgentTool, Delegation};
    // triage calls the `researcher` agent tool (two model calls inside), transfers to the
    // `refund` task (one call), then answers: six calls, 210 + 21 tokens.
    let lookup = tool_fn(
        "lookup",
        "Looks something up.",
        |_: serde_json::Value| async { Ok::<_, String>("found".to_owned()) },
    );
    let researcher = ChatModelAgent::builder(
        "researcher",
        ScriptedModel::new([
            ScriptStep::tool_call("lookup", json!({})).with_usage(Usage::new(30, 3)),
            ScriptStep::text("prices are up").with_usage(Usage::new(40, 4)),
        ]),
    )
    .tool(lookup)
    .build()
    .unwrap();
    let refund = ChatModelAgent::builder(
        "refund",
        ScriptedModel::new([
            ScriptStep::tool_call("finish_task", json!({"ok": true})).with_usage(Usage::new(50, 5))
        ]),
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
            ScriptStep::text("all done").with_usage(Usage::new(60, 6)),
        ]),
    )
    .tool(AgentTool::new(FlowAgent::new(researcher)))
    .build()
    .unwrap();
    let tree = set_sub_agents(
        FlowAgent::new(triage),
        [FlowAgent::new(refund).delegation(Delegation::Task)],
    )
    .unwrap();
    let queue = InMemoryRunQueue::new();
    let budgets = SpendingBudgets::new(Arc::new(queue.clone()))
        .thread(SpendingLimits::default().max_model_calls(100))
        .tenant_of(by_prefix);
    let runner = Runner::builder(tree)
        .stores(InMemoryStore::new())
        .spending(budgets.clone())
        .build();
    let events = turn(&runner, "acme.t").await;
    assert!(events.iter().all(|e| e.error.is_none()), "{events:#?}");
    assert_eq!(
        budgets.thread_spent("acme.t").await.unwrap(),
        Spending {
            input_tokens: 210,
            output_tokens: 21,
            cost_micro_usd: 0,
            model_calls: 6
        }
    );
    // The usage report has the same calls, per agent.
    let rows = queue
        .spending()
        .unwrap()
        .usage(&UsageFilter::default(), 10, 0)
        .await
        .unwrap();
    let by_agent: Vec<(&str, i64)> = rows
        .iter()
        .map(|r| (r.agent.as_str(), r.spent.model_calls))
        .collect();
    assert_eq!(by_agent, [("refund", 1), ("researcher", 2), ("triage", 3)]);
}

/// Writes one usage row for each of five days on `host`'s clock (the day it shows, then a day
/// later each time), then trims the report to a retention of three days, and of three days
/// again one day later: the older days go, the kept ones and the scopes' spending stay.
async fn usage_retention_keeps_its_days(store: &dyn SpendingStore) {
    use agentweave_runtime::store::{usage_kept_from, SpendingScope, UsageRow};
    // 2026-12-03T12:00:00Z.
    let host = ManualHost::starting_at(UNIX_EPOCH + Duration::from_millis(1_796_299_200_000));
    let now = || ms(agentweave_runtime::host::Host::now(&host));
    let tenant = SpendingScope {
        key: "tenant:acme:month:2026-12".into(),
        thread: None,
        scope: BudgetScope::Tenant {
            period: BudgetPeriod::Month,
        },
        limits: Default::default(),
    };
    let call = Spending {
        model_calls: 1,
        ..Spending::default()
    };
    for _ in 0..5 {
        assert!(store
            .reserve(std::slice::from_ref(&tenant), &call)
            .await
            .unwrap()
            .is_ok());
        let row = UsageRow {
            tenant: "acme".into(),
            day: BudgetPeriod::Day.label(now()),
            flow: "desk".into(),
            agent: "agent".into(),
            model: "m".into(),
            spent: call,
        };
        store
            .settle(&[], &Spending::default(), Some(&row))
            .await
            .unwrap();
        host.advance(Duration::from_secs(86_400));
    }
    let days = || async {
        let rows = store.usage(&UsageFilter::default(), 10, 0).await.unwrap();
        rows.into_iter().map(|r| r.day).collect::<Vec<_>>()
    };
    assert_eq!(
        days().await,
        [
            "2026-12-03",
            "2026-12-04",
            "2026-12-05",
            "2026-12-06",
            "2026-12-07"
        ]
    );
    // The clock is on the 8th now: three days kept are the 6th, the 7th and the 8th.
    let first_kept = usage_kept_from(now(), 3);
    assert_eq!(first_kept, "2026-12-06");
    assert_eq!(store.trim_usage(&first_kept).await.unwrap(), 3);
    assert_eq!(days().await, ["2026-12-06", "2026-12-07"]);
    // Trimming again the same day removes nothing; a day later, the 6th goes.
    assert_eq!(
        store.trim_usage(&usage_kept_from(now(), 3)).await.unwrap(),
        0
    );
    host.advance(Duration::from_secs(86_400));
    assert_eq!(
        store.trim_usage(&usage_kept_from(now(), 3)).await.unwrap(),
        1
    );
    assert_eq!(days().await, ["2026-12-07"]);
    // What the budgets count is not the report: the tenant's month still holds five calls.
    assert_eq!(store.spent(&tenant.key).await.unwrap().model_calls, 5);
}

#[tokio::test]
async fn usage_rows_past_their_retention_are_deleted_in_memory() {
    usage_retention_keeps_its_days(&InMemoryRunQueue::new()).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn usage_rows_past_their_retention_are_deleted_on_sqlite() {
    use agentweave_runtime::store::SqliteRunQueue;
    let dir = crate::support::dirs::temp_dir("spending", "retention");
    let queue = SqliteRunQueue::open(dir.join("store.db")).await.unwrap();
    usage_retention_keeps_its_days(&queue).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn usage_rows_past_their_retention_are_deleted_on_postgres() {
    use agentweave_runtime::store::PostgresRunQueue;
    let Some(url) = agentweave_runtime::testing::fresh_postgres_database("retention").await else {
        return;
    };
    let queue = PostgresRunQueue::connect(&url).await.unwrap();
    usage_retention_keeps_its_days(&queue).await;
}

#[tokio::test]
async fn a_charge_key_charges_once_in_memory() {
    charge_keys_charge_once(&InMemoryRunQueue::new()).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_charge_key_charges_once_on_sqlite() {
    use agentweave_runtime::store::SqliteRunQueue;
    let dir = crate::support::dirs::temp_dir("spending", "charges");
    let queue = SqliteRunQueue::open(dir.join("store.db")).await.unwrap();
    charge_keys_charge_once(&queue).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_charge_key_charges_once_on_postgres() {
    use agentweave_runtime::store::PostgresRunQueue;
    let Some(url) = agentweave_runtime::testing::fresh_postgres_database("charges").await else {
        return;
    };
    let queue = PostgresRunQueue::connect(&url).await.unwrap();
    charge_keys_charge_once(&queue).await;
}
