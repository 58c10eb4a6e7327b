//! The checks of the [`SpendingStore`] contract, what threads and tenants spent as a run
//! queue's store keeps it (through
//! [`RunQueue::spending`](crate::store::RunQueue::spending)), each on a store given (see
//! [`spending`](super::spending)).

use std::sync::Arc;

use crate::budget::{BudgetKind, BudgetLimits, BudgetScope};
use crate::spending::BudgetPeriod;
use crate::store::{Spending, SpendingScope, SpendingStore};

/// The store's reservation is all or nothing: a call refused by its second scope charges
/// neither.
pub async fn reservation_is_all_or_nothing(store: &dyn SpendingStore) {
    let scope = |key: &str, calls: u64| SpendingScope {
        key: key.into(),
        thread: Some("t".into()),
        scope: BudgetScope::Thread,
        limits: BudgetLimits::default().max_model_calls(calls),
    };
    let call = Spending {
        input_tokens: 5,
        model_calls: 1,
        ..Spending::default()
    };
    let wide = scope("a", 10);
    let narrow = scope("b", 1);
    assert!(store
        .reserve(&[wide.clone(), narrow.clone()], &call)
        .await
        .unwrap()
        .is_ok());
    let crossed = store
        .reserve(&[wide.clone(), narrow.clone()], &call)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(
        (
            crossed.scope,
            crossed.budget,
            crossed.limit,
            crossed.would_reach
        ),
        (1, BudgetKind::ModelCalls, 1, 2)
    );
    assert_eq!(store.spent("a").await.unwrap().model_calls, 1);
    // A settlement corrects both rows; deleting the thread removes both.
    let correction = Spending {
        input_tokens: -3,
        ..Spending::default()
    };
    store
        .settle(
            &[
                ("a".into(), Some("t".into())),
                ("b".into(), Some("t".into())),
            ],
            &correction,
            None,
        )
        .await
        .unwrap();
    assert_eq!(store.spent("b").await.unwrap().input_tokens, 2);
    assert_eq!(store.delete_thread("t").await.unwrap(), 2);
    assert_eq!(store.spent("a").await.unwrap(), Spending::default());
}

/// Sixteen reservations raced from two handles on one store against a limit of five calls:
/// exactly five pass.
pub async fn racing_reservations(a: Arc<dyn SpendingStore>, b: Arc<dyn SpendingStore>) {
    let scope = SpendingScope {
        key: "tenant:race:day:2026-12-07".into(),
        thread: None,
        scope: BudgetScope::Tenant {
            period: BudgetPeriod::Day,
        },
        limits: BudgetLimits::default().max_model_calls(5),
    };
    let call = Spending {
        model_calls: 1,
        ..Spending::default()
    };
    let tasks: Vec<_> = (0..16)
        .map(|k| {
            let store = Arc::clone(if k % 2 == 0 { &a } else { &b });
            let (scope, call) = (scope.clone(), call);
            tokio::spawn(async move { store.reserve(&[scope], &call).await.unwrap().is_ok() })
        })
        .collect();
    let mut passed = 0;
    for task in tasks {
        passed += usize::from(task.await.unwrap());
    }
    assert_eq!(passed, 5);
    assert_eq!(a.spent(&scope.key).await.unwrap().model_calls, 5);
}
