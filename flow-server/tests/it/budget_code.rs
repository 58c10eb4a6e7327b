//! A run stopped by its budget reaches a client with the public code `budget_exceeded` and the
//! public message, never the internal text.

use crate::common::{spawn, turn, TOKEN};
use agentweave_runtime::budget::{BudgetLimits, Budgets};
use agentweave_runtime::InMemoryStore;
use agentweave_server::{AppState, Auth};

#[tokio::test]
async fn a_budget_stop_has_its_public_code_over_the_native_api() {
    let state = AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::bearer(TOKEN))
        .runners(|_, runner| {
            runner.budgets(Budgets::new(BudgetLimits::default().max_model_calls(1)))
        })
        .build()
        .unwrap();
    let server = spawn(state).await;
    let events = turn(&server.base, "desk", "b1", "I want a refund").await;
    let errors: Vec<_> = events.iter().filter_map(|e| e.data.get("error")).collect();
    let error = errors
        .iter()
        .find(|e| e["code"] == "budget_exceeded")
        .unwrap_or_else(|| panic!("a budget error: {events:?}"));
    assert_eq!(
        error["message"],
        "This request reached the assistant's budget and was stopped."
    );
    let text = format!("{events:?}");
    assert!(
        !text.contains("max_model_calls"),
        "internal text leaked: {text}"
    );
}
