//! Budgets per thread and per tenant per period on Temporal: the model activity reserves each
//! call in its flow's spending budgets ([`Flows::spending`]) before calling the model, and
//! settles it after, as a runner does around a call in process (see
//! `agentweave_runtime::SpendingBudgets`).
//!
//! - **Exactly once.** An activity may run more than once (a worker dies, a model answers
//!   429). Each call reserves under its [`Charge`] key, the workflow's id and run id and the
//!   activity's id, the same on every attempt; the spending store records the key in the
//!   transaction that charges, so a retried attempt finds its reservation and charges nothing
//!   again, and only one settlement is applied. A call that failed gives its reservation back
//!   (another attempt reserves again).
//! - **A refusal ends the turn.** A reservation that would cross a limit fails the activity
//!   with a non-retryable failure of type [`BUDGET_FAILURE`] carrying the refusal
//!   ([`refusal_text`]); the workflow reads it back ([`refusal_of`]) and the agent's run ends
//!   with [`AgentError::BudgetExceeded`](agentweave_core::AgentError::BudgetExceeded), the
//!   outcome and public code of the same refusal in process.
//! - **A model without a price** under a money budget fails the activity for good too
//!   ([`UNPRICED_FAILURE`], read back by [`budget_error_of`]): the agent's run ends with the
//!   [`AgentError::Failed`](agentweave_core::AgentError::Failed) the same check gives in process.
//! - **Whose.** The thread is the workflow's id (a server's workflows are named by the
//!   thread's store id, `FLOW.TENANT.THREAD`); the tenant is what the budgets' `tenant_of`
//!   says of it; the flow in the usage report is the call's flow.

use std::sync::Arc;

use agentweave_core::budget::{BudgetError, BudgetExceeded};
use agentweave_core::history::estimate_tokens;
use agentweave_core::model::{ModelError, Usage};
use agentweave_core::spending::{SpendingCall, SpendingGate, SpendingHold};
use agentweave_core::Message;

use crate::effects::ModelCall;
use crate::flows::{Flows, LookupError};

/// The failure type of a model activity refused by a budget.
pub const BUDGET_FAILURE: &str = "AgentflowBudgetExceeded";

/// The failure type of a model activity whose model has no price while a budget of its call
/// counts money (its message: `{"agent": ..., "model": ...}`).
pub const UNPRICED_FAILURE: &str = "AgentflowBudgetUnpriced";

/// One model call's charge: its key, the same on every attempt of the activity, and when it
/// counts (the periods of a tenant's budgets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    /// `WORKFLOW_ID/RUN_ID/ACTIVITY_ID`.
    pub key: String,
    /// When the activity was first scheduled (ms since the Unix epoch).
    pub at_ms: u64,
}

impl Charge {
    /// The charge of activity `activity` of run `run` of workflow `workflow`, scheduled at
    /// `at_ms`.
    ///
    /// ```
    /// use agentweave_temporal::spending::Charge;
    /// let charge = Charge::new("desk.acme.t1", "run-7", "t0.1 clerk.model", 1_000);
    /// assert_eq!(charge.key, "desk.acme.t1/run-7/t0.1 clerk.model");
    /// ```
    pub fn new(workflow: &str, run: &str, activity: &str, at_ms: u64) -> Self {
        Charge {
            key: format!("{workflow}/{run}/{activity}"),
            at_ms,
        }
    }
}

/// A model call's reservation, settled (or given back) once the call answered or failed.
#[derive(Debug)]
pub struct Reserved {
    gate: Arc<dyn SpendingGate>,
    hold: SpendingHold,
    model: String,
}

/// Reserves model call `call` of thread `thread` under `charge` in the spending budgets of its
/// flow, if it has them (`Ok(None)` otherwise). Its estimate is the one a call in process
/// gets: the conversation's tokens as a context budget counts them (messages stored by
/// reference read back), the output at most the request's `max_tokens`.
pub async fn reserve(
    flows: &Flows,
    call: &ModelCall,
    thread: &str,
    charge: &Charge,
) -> Result<Option<Reserved>, BudgetError> {
    let Some(budgets) = flows.spending_budgets(&call.flow) else {
        return Ok(None);
    };
    // A request that cannot be read back fails the call after this; it is estimated as it is.
    let request = match crate::flows::loaded_request(flows, call).await {
        Ok(request) => request,
        Err(_) => call.request(),
    };
    let input: usize = request.messages.iter().map(|m| estimate_tokens(m)).sum();
    let output = request.params.max_tokens.map_or(1, u64::from).max(1);
    let gate = budgets.gate(&call.flow);
    let hold = gate
        .reserve(SpendingCall {
            thread: Some(thread),
            agent: &call.agent,
            model: &call.model,
            estimate: Usage::new(input as u64, output),
            at_ms: charge.at_ms,
            charge: Some(&charge.key),
        })
        .await?;
    Ok(Some(Reserved {
        gate,
        hold,
        model: call.model.clone(),
    }))
}

/// Settles `reserved` with the usage `reply` reports, or gives it back when the call failed.
pub async fn settle(
    reserved: Option<Reserved>,
    reply: &Result<Result<Message, ModelError>, LookupError>,
) {
    let Some(Reserved { gate, hold, model }) = reserved else {
        return;
    };
    match reply {
        Ok(Ok(message)) => {
            let model = message.model.as_deref().unwrap_or(&model);
            let usage = message.usage.as_deref().copied().unwrap_or_default();
            gate.settle(hold, Some((model, usage))).await;
        }
        _ => gate.settle(hold, None).await,
    }
}

/// A budget refusal as the message of a [`BUDGET_FAILURE`] activity failure (its JSON form).
pub fn refusal_text(exceeded: &BudgetExceeded) -> String {
    serde_json::to_string(exceeded).unwrap_or_else(|_| exceeded.to_string())
}

/// The budget refusal an activity failure of type `type_name` with message `message` carries,
/// if it is one ([`refusal_text`]).
///
/// ```
/// use agentweave_core::budget::{BudgetExceeded, BudgetKind, BudgetScope};
/// use agentweave_temporal::spending::{refusal_of, refusal_text, BUDGET_FAILURE};
/// let refusal = BudgetExceeded {
///     budget: BudgetKind::ModelCalls,
///     scope: BudgetScope::Thread,
///     agent: "clerk".into(),
///     limit: 2,
///     would_reach: 3,
/// };
/// let text = refusal_text(&refusal);
/// assert_eq!(refusal_of(BUDGET_FAILURE, &text), Some(refusal));
/// assert_eq!(refusal_of("ModelError", &text), None);
/// ```
pub fn refusal_of(type_name: &str, message: &str) -> Option<BudgetExceeded> {
    if type_name != BUDGET_FAILURE {
        return None;
    }
    serde_json::from_str(message).ok()
}

/// A budget check's error as a model activity's failure that is not retried: its type and
/// message ([`BUDGET_FAILURE`] with [`refusal_text`] for a crossed budget, [`UNPRICED_FAILURE`]
/// for a model without a price); `None` for an error another attempt may get past (the
/// spending store out of reach).
pub fn failure_of(error: &BudgetError) -> Option<(&'static str, String)> {
    match error {
        BudgetError::Exceeded(exceeded) => Some((BUDGET_FAILURE, refusal_text(exceeded))),
        BudgetError::Unpriced { agent, model } => Some((
            UNPRICED_FAILURE,
            serde_json::json!({ "agent": agent, "model": model }).to_string(),
        )),
        _ => None,
    }
}

/// The budget check's error a model activity failure of type `type_name` with message
/// `message` carries, if it is one ([`failure_of`]).
///
/// ```
/// use agentweave_core::budget::BudgetError;
/// use agentweave_temporal::spending::{budget_error_of, failure_of};
/// let unpriced = BudgetError::Unpriced { agent: "clerk".into(), model: "gpt-x".into() };
/// let (type_name, text) = failure_of(&unpriced).unwrap();
/// assert_eq!(budget_error_of(type_name, &text), Some(unpriced));
/// assert_eq!(budget_error_of("ModelError", &text), None);
/// ```
pub fn budget_error_of(type_name: &str, message: &str) -> Option<BudgetError> {
    #[derive(serde::Deserialize)]
    struct Unpriced {
        agent: Arc<str>,
        model: Arc<str>,
    }
    match type_name {
        BUDGET_FAILURE => refusal_of(type_name, message).map(BudgetError::Exceeded),
        UNPRICED_FAILURE => {
            serde_json::from_str::<Unpriced>(message)
                .ok()
                .map(|u| BudgetError::Unpriced {
                    agent: u.agent,
                    model: u.model,
                })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentweave_core::model::ModelParams;
    use agentweave_core::spending::BudgetPeriod;
    use agentweave_runtime::store::InMemoryRunQueue;
    use agentweave_runtime::{SpendingBudgets, SpendingLimits};

    /// A worker's flows with `budgets` (a reservation needs no tree: only the call).
    fn flows(budgets: SpendingBudgets) -> Flows {
        let flows = Flows::new();
        flows.spending("desk", budgets);
        flows
    }

    fn call(text: &str) -> ModelCall {
        ModelCall {
            flow: "desk".into(),
            agent: "clerk".into(),
            model: "m".into(),
            earlier: Vec::new(),
            messages: vec![std::sync::Arc::new(Message::user(text))],
            tools: Default::default(),
            params: ModelParams::default(),
            run_path: None,
            live: None,
            held: false,
        }
    }

    fn answered(input: u64, output: u64) -> Result<Result<Message, ModelError>, LookupError> {
        let mut reply = Message::assistant("done");
        reply.usage = Some(Box::new(Usage::new(input, output)));
        Ok(Ok(reply))
    }

    #[tokio::test]
    async fn a_retried_attempt_under_the_same_charge_charges_once() {
        let queue = Arc::new(InMemoryRunQueue::new());
        let budgets = SpendingBudgets::new(queue)
            .tenant(
                BudgetPeriod::Day,
                SpendingLimits::default().max_model_calls(5),
            )
            .tenant_of(|thread| thread.split('.').nth(1).map(str::to_owned));
        let flows = flows(budgets.clone());
        let charge = Charge::new("desk.acme.t1", "r1", "t0.0 clerk.model", 0);
        // The first attempt reserves, then its worker dies before settling; the second
        // attempt finds the reservation and settles it.
        let first = reserve(&flows, &call("hello"), "desk.acme.t1", &charge).await;
        assert!(first.expect("under the limit").is_some());
        let second = reserve(&flows, &call("hello"), "desk.acme.t1", &charge)
            .await
            .expect("already reserved");
        settle(second, &answered(40, 2)).await;
        // A third attempt after the settlement (its result was lost) charges nothing either.
        let third = reserve(&flows, &call("hello"), "desk.acme.t1", &charge)
            .await
            .expect("already settled");
        settle(third, &answered(40, 2)).await;
        let spent = budgets
            .tenant_spent("acme", BudgetPeriod::Day, 0)
            .await
            .unwrap();
        assert_eq!(spent.model_calls, 1);
        assert_eq!(spent.input_tokens, 40);
        assert_eq!(spent.output_tokens, 2);
    }

    #[tokio::test]
    async fn a_failed_call_gives_its_reservation_back_and_another_attempt_reserves_again() {
        let budgets = SpendingBudgets::new(Arc::new(InMemoryRunQueue::new()))
            .thread(SpendingLimits::default().max_model_calls(1));
        let flows = flows(budgets.clone());
        let charge = Charge::new("w", "r", "t0.0 clerk.model", 0);
        let held = reserve(&flows, &call("hi"), "w", &charge).await.unwrap();
        settle(held, &Ok(Err(ModelError::other("m", "503", true)))).await;
        assert_eq!(budgets.thread_spent("w").await.unwrap().model_calls, 0);
        let again = reserve(&flows, &call("hi"), "w", &charge).await.unwrap();
        settle(again, &answered(3, 1)).await;
        assert_eq!(budgets.thread_spent("w").await.unwrap().model_calls, 1);
    }

    #[tokio::test]
    async fn a_call_that_would_cross_a_limit_is_refused_and_charges_nothing() {
        let budgets = SpendingBudgets::new(Arc::new(InMemoryRunQueue::new()))
            .thread(SpendingLimits::default().max_model_calls(1));
        let flows = flows(budgets.clone());
        let one = Charge::new("w", "r", "t0.0 clerk.model", 0);
        let held = reserve(&flows, &call("hi"), "w", &one).await.unwrap();
        settle(held, &answered(3, 1)).await;
        let two = Charge::new("w", "r", "t0.2 clerk.model", 0);
        match reserve(&flows, &call("hi"), "w", &two).await {
            Err(BudgetError::Exceeded(exceeded)) => {
                assert_eq!(exceeded.agent.as_ref(), "clerk");
                assert_eq!(exceeded.limit, 1);
                assert_eq!(exceeded.would_reach, 2);
                let text = refusal_text(&exceeded);
                assert_eq!(refusal_of(BUDGET_FAILURE, &text), Some(exceeded));
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert_eq!(budgets.thread_spent("w").await.unwrap().model_calls, 1);
    }

    #[tokio::test]
    async fn without_spending_budgets_nothing_is_reserved() {
        let flows = Flows::new();
        let charge = Charge::new("w", "r", "a", 0);
        assert!(reserve(&flows, &call("hi"), "w", &charge)
            .await
            .unwrap()
            .is_none());
    }
}
