//! The checks of the [`SpendingStore`] contract, what threads and tenants spent as a run
//! queue's store keeps it (through
//! [`RunQueue::spending`](crate::store::RunQueue::spending)), each on a store given (see
//! [`spending`](super::spending)).

use std::sync::Arc;

use crate::budget::{BudgetKind, BudgetLimits, BudgetScope};
use crate::spending::BudgetPeriod;
use crate::store::{Spending, SpendingScope, SpendingStore, UsageFilter, UsageRow};

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

/// A call reserved under a charge key ([`SpendingStore::reserve_once`]: a Temporal activity's,
/// retried) charges once: a second
/// reservation under the key charges and checks nothing, one settlement is applied (and one
/// usage row), a failed call's reservation is given back and its key forgotten, a refused one
/// records no key, and trimming the report drops old keys.
pub async fn charge_keys_charge_once(store: &dyn SpendingStore) {
    let thread = SpendingScope {
        key: "thread:k1".into(),
        thread: Some("k1".into()),
        scope: BudgetScope::Thread,
        limits: BudgetLimits::default().max_model_calls(2),
    };
    let scopes = [thread.clone()];
    let keys = [(thread.key.clone(), thread.thread.clone())];
    let call = Spending {
        input_tokens: 50,
        output_tokens: 1,
        model_calls: 1,
        ..Spending::default()
    };
    let day = "2026-12-07";
    assert_eq!(
        store.reserve_once("c1", day, &scopes, &call).await.unwrap(),
        Ok(true)
    );
    assert_eq!(
        store.reserve_once("c1", day, &scopes, &call).await.unwrap(),
        Ok(false)
    );
    assert_eq!(store.spent(&thread.key).await.unwrap().model_calls, 1);
    let correction = Spending {
        input_tokens: -10,
        output_tokens: 2,
        ..Spending::default()
    };
    let row = UsageRow {
        tenant: "_".into(),
        day: day.into(),
        flow: "desk".into(),
        agent: "clerk".into(),
        model: "m".into(),
        spent: Spending {
            input_tokens: 40,
            output_tokens: 3,
            model_calls: 1,
            ..Spending::default()
        },
    };
    assert!(store
        .settle_once("c1", &keys, &correction, Some(&row))
        .await
        .unwrap());
    assert!(!store
        .settle_once("c1", &keys, &correction, Some(&row))
        .await
        .unwrap());
    let spent = store.spent(&thread.key).await.unwrap();
    assert_eq!(
        (spent.model_calls, spent.input_tokens, spent.output_tokens),
        (1, 40, 3)
    );
    assert_eq!(store.count_usage(&UsageFilter::default()).await.unwrap(), 1);
    let report = store.usage(&UsageFilter::default(), 10, 0).await.unwrap();
    assert_eq!(report[0].spent.model_calls, 1);
    // After its settlement the key charges nothing either.
    assert_eq!(
        store.reserve_once("c1", day, &scopes, &call).await.unwrap(),
        Ok(false)
    );
    // A failed call gives its reservation back; another attempt reserves again.
    assert_eq!(
        store.reserve_once("c2", day, &scopes, &call).await.unwrap(),
        Ok(true)
    );
    let back = Spending {
        input_tokens: -50,
        output_tokens: -1,
        model_calls: -1,
        ..Spending::default()
    };
    assert!(store.settle_once("c2", &keys, &back, None).await.unwrap());
    assert_eq!(store.spent(&thread.key).await.unwrap().model_calls, 1);
    assert_eq!(
        store.reserve_once("c2", day, &scopes, &call).await.unwrap(),
        Ok(true)
    );
    // The thread's limit of two calls is reached: a third key is refused and not recorded.
    let refused = store.reserve_once("c3", day, &scopes, &call).await.unwrap();
    assert_eq!(
        refused.map_err(|c| (c.budget, c.limit, c.would_reach)),
        Err((BudgetKind::ModelCalls, 2, 3))
    );
    assert!(!store.settle_once("c3", &keys, &back, None).await.unwrap());
    // Trimming the report's days before the next one drops the keys of that day.
    store.trim_usage("2026-12-08").await.unwrap();
    assert!(!store
        .settle_once("c2", &keys, &correction, Some(&row))
        .await
        .unwrap());
}
