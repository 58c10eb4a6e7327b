//! The usage report (`GET /v1/usage`) and the spending shown in a thread's view, on a server
//! with budgets per thread and tenant ([`ServerBuilder::spending`]): a principal sees its own
//! tenant's rows only, an administrator every tenant's; the filters and pages; bad input is a
//! 400 that says what to write; a thread's budget stops a turn with the public code
//! `budget_exceeded`.

use crate::common::{client, read_sse, spawn};

use std::sync::Arc;
use std::time::SystemTime;

use agentweave_runtime::budget::ModelPrice;
use agentweave_runtime::model::{ScriptStep, ScriptedModel, Usage};
use agentweave_runtime::spending::BudgetPeriod;
use agentweave_runtime::store::InMemoryRunQueue;
use agentweave_runtime::{
    ChatModelAgent, FlowAgent, InMemoryStore, SpendingBudgets, SpendingLimits,
};
use agentweave_server::{AppState, Auth, Principal, Scope};
use serde_json::{json, Value};

const ANA: &str = "ana-token-0123456789";
const BOB: &str = "bob-token-0123456789";
const ROOT: &str = "root-token-0123456789";

/// Ana of tenant acme, Bob of tenant globex, Root an administrator.
fn auth() -> Auth {
    Auth::tokens([
        (
            ANA,
            Principal::new("ana")
                .tenant("acme")
                .scopes([Scope::Chat, Scope::Read]),
        ),
        (
            BOB,
            Principal::new("bob")
                .tenant("globex")
                .scopes([Scope::Chat, Scope::Read]),
        ),
        (ROOT, Principal::new("root").scopes([Scope::Admin])),
    ])
}

/// A flow whose agent answers every message in one model call of 100 + 10 tokens.
fn bot() -> FlowAgent {
    let model = ScriptedModel::rules()
        .otherwise(ScriptStep::text("hello").with_usage(Usage::new(100, 10)))
        .named("m");
    FlowAgent::new(ChatModelAgent::builder("bot", model).build().unwrap())
}

fn state(budgets: SpendingBudgets) -> AppState {
    AppState::builder(InMemoryStore::new())
        .auth(auth())
        .flow("desk", bot())
        .flow("other", bot())
        .spending(budgets)
        .build()
        .unwrap()
}

async fn turn(base: &str, token: &str, flow: &str, thread: &str) -> Vec<crate::common::Sse> {
    let response = client()
        .post(format!("{base}/v1/flows/{flow}/threads/{thread}/turns"))
        .bearer_auth(token)
        .json(&json!({ "message": "hi" }))
        .send()
        .await
        .unwrap();
    read_sse(response).await
}

async fn get(base: &str, token: &str, path: &str) -> (u16, Value) {
    let response = client()
        .get(format!("{base}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn today() -> String {
    let ms = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    BudgetPeriod::Day.label(ms)
}

/// `(tenant, flow, model_calls)` of each row of a report.
fn rows(body: &Value) -> Vec<(String, String, i64)> {
    body["usage"]
        .as_array()
        .unwrap_or_else(|| panic!("a report: {body}"))
        .iter()
        .map(|r| {
            (
                r["tenant"].as_str().unwrap().to_owned(),
                r["flow"].as_str().unwrap().to_owned(),
                r["model_calls"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// Ana: two turns on desk and one on other; Bob: one on desk.
async fn served() -> (crate::common::TestServer, SpendingBudgets) {
    let budgets = SpendingBudgets::new(Arc::new(InMemoryRunQueue::new()))
        .price("m", ModelPrice::per_million_tokens(2.0, 8.0));
    let server = spawn(state(budgets.clone())).await;
    turn(&server.base, ANA, "desk", "a1").await;
    turn(&server.base, ANA, "desk", "a1").await;
    turn(&server.base, ANA, "other", "a2").await;
    turn(&server.base, BOB, "desk", "b1").await;
    (server, budgets)
}

#[tokio::test]
async fn a_principal_sees_its_own_tenants_usage_and_an_administrator_every_tenants() {
    let (server, _) = served().await;
    let base = &server.base;
    let (status, ana) = get(base, ANA, "/v1/usage").await;
    assert_eq!(status, 200, "{ana}");
    assert_eq!(
        rows(&ana),
        [
            ("acme".to_owned(), "desk".to_owned(), 2),
            ("acme".to_owned(), "other".to_owned(), 1)
        ]
    );
    // 2 calls of 100 + 10 tokens at $2 and $8 per million: 2 x 280 millionths.
    let desk = &ana["usage"][0];
    assert_eq!(
        (&desk["day"], &desk["agent"], &desk["model"]),
        (&json!(today()), &json!("bot"), &json!("m"))
    );
    assert_eq!(
        (
            &desk["input_tokens"],
            &desk["output_tokens"],
            &desk["total_tokens"]
        ),
        (&json!(200), &json!(20), &json!(220))
    );
    assert_eq!(desk["cost_usd"], json!(0.00056));
    assert_eq!(ana["total"], 2);
    let (_, bob) = get(base, BOB, "/v1/usage").await;
    assert_eq!(rows(&bob), [("globex".to_owned(), "desk".to_owned(), 1)]);
    // Another tenant's report needs the admin scope.
    let (status, refused) = get(base, ANA, "/v1/usage?tenant=globex").await;
    assert_eq!(status, 403, "{refused}");
    assert!(refused["error"]["message"]
        .as_str()
        .unwrap()
        .contains("admin"));
    // Asking for one's own tenant by name is fine.
    let (status, _) = get(base, ANA, "/v1/usage?tenant=acme").await;
    assert_eq!(status, 200);
    let (_, all) = get(base, ROOT, "/v1/usage").await;
    assert_eq!(all["total"], 3);
    let (_, globex) = get(base, ROOT, "/v1/usage?tenant=globex").await;
    assert_eq!(rows(&globex), rows(&bob));
}

#[tokio::test]
async fn the_usage_report_filters_by_day_flow_and_agent_and_comes_in_pages() {
    let (server, _) = served().await;
    let base = &server.base;
    let day = today();
    let (_, by_flow) = get(base, ANA, "/v1/usage?flow=other").await;
    assert_eq!(rows(&by_flow), [("acme".to_owned(), "other".to_owned(), 1)]);
    let (_, by_day) = get(base, ANA, &format!("/v1/usage?from={day}&to={day}")).await;
    assert_eq!(by_day["total"], 2);
    let (_, later) = get(base, ANA, "/v1/usage?from=2999-01-01").await;
    assert_eq!(later["total"], 0);
    let (_, earlier) = get(base, ANA, "/v1/usage?to=2000-01-01").await;
    assert_eq!(earlier["total"], 0);
    let (_, nobody) = get(base, ANA, "/v1/usage?agent=nobody").await;
    assert_eq!(nobody["total"], 0);
    let (_, bot) = get(base, ANA, "/v1/usage?agent=bot").await;
    assert_eq!(bot["total"], 2);
    // Pages: one row, then the next from `next_offset`.
    let (_, first) = get(base, ANA, "/v1/usage?limit=1").await;
    assert_eq!(rows(&first).len(), 1);
    assert_eq!(first["next_offset"], 1);
    let (_, second) = get(base, ANA, "/v1/usage?limit=1&offset=1").await;
    assert_eq!(rows(&second), [("acme".to_owned(), "other".to_owned(), 1)]);
    assert!(second.get("next_offset").is_none());
}

#[tokio::test]
async fn bad_usage_queries_are_400s_that_say_what_to_write() {
    let (server, _) = served().await;
    let base = &server.base;
    for (query, says) in [
        ("from=2026-13-01", "YYYY-MM-DD"),
        ("to=yesterday", "YYYY-MM-DD"),
        ("from=2026-02-30", "YYYY-MM-DD"),
        ("from=2026-12-08&to=2026-12-07", "after"),
        ("agent=", "empty"),
        ("limit=many", "?from=YYYY-MM-DD"),
        ("colour=blue", "?from=YYYY-MM-DD"),
    ] {
        let (status, body) = get(base, ANA, &format!("/v1/usage?{query}")).await;
        assert_eq!(status, 400, "{query}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{query}: {message}");
    }
    let (status, body) = get(base, ANA, "/v1/usage?flow=nope").await;
    assert_eq!(status, 404, "{body}");
}

#[tokio::test]
async fn a_threads_view_shows_what_it_spent_and_its_budget_stops_it_with_the_public_code() {
    let budgets = SpendingBudgets::new(Arc::new(InMemoryRunQueue::new()))
        .thread(SpendingLimits::default().max_model_calls(2));
    let server = spawn(state(budgets)).await;
    let base = &server.base;
    for _ in 0..2 {
        let events = turn(base, ANA, "desk", "t1").await;
        assert_eq!(events.last().unwrap().name, "done", "{events:#?}");
    }
    let (status, view) = get(base, ANA, "/v1/flows/desk/threads/t1").await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(
        view["spent"],
        json!({"input_tokens": 200, "output_tokens": 20, "total_tokens": 220,
               "cost_usd": 0.0, "model_calls": 2})
    );
    // The third call would be the thread's third: refused before it is made.
    let events = turn(base, ANA, "desk", "t1").await;
    let error = events
        .iter()
        .filter_map(|e| e.data.get("error"))
        .find(|e| e["code"] == "budget_exceeded")
        .unwrap_or_else(|| panic!("a budget error: {events:#?}"));
    assert_eq!(
        error["message"],
        "This request reached the assistant's budget and was stopped."
    );
    // Another thread of the same tenant has its own budget.
    let events = turn(base, ANA, "desk", "t2").await;
    assert_eq!(events.last().unwrap().name, "done");
}

#[tokio::test]
async fn the_queues_sweeper_deletes_usage_rows_past_their_retention_on_the_queues_clock() {
    use agentweave_runtime::host::ManualHost;
    use agentweave_server::{QueueOptions, ScheduleClock};
    use std::time::Duration;
    let clock = ManualHost::starting_at(SystemTime::now());
    let queue = InMemoryRunQueue::new();
    let budgets = SpendingBudgets::new(Arc::new(queue.clone()));
    let mut options = QueueOptions::default();
    options.poll = Duration::from_millis(10);
    // The sweeper runs every quarter of the event retention (at least every second).
    options.event_retention = Duration::from_secs(4);
    options.usage_retention_days = Some(2);
    options.schedule_clock = ScheduleClock::new(clock.clone());
    let state = AppState::builder(InMemoryStore::new())
        .auth(auth())
        .flow("desk", bot())
        .run_queue_with(queue, options)
        .spending(budgets)
        .build()
        .unwrap();
    let server = spawn(state).await;
    turn(&server.base, ANA, "desk", "a1").await;
    let (_, report) = get(&server.base, ANA, "/v1/usage").await;
    assert_eq!(rows(&report), [("acme".to_owned(), "desk".to_owned(), 1)]);
    assert_eq!(report["usage"][0]["day"], json!(today()));
    // Two days later on the queue's clock, a retention of two days keeps yesterday and today:
    // the next sweep deletes the row (waited for, up to a minute, not timed).
    clock.advance(Duration::from_secs(2 * 86_400));
    let mut total = report["total"].clone();
    for _ in 0..600 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (status, report) = get(&server.base, ANA, "/v1/usage").await;
        assert_eq!(status, 200, "{report}");
        total = report["total"].clone();
        if total == json!(0) {
            break;
        }
    }
    assert_eq!(total, json!(0), "the sweeper never deleted the row");
}
