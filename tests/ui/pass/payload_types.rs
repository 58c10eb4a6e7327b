//! Payload and result types are compared as types: a type written through an import, an alias
//! or a full path is that type; a body reads its payload typed by its own `accepts`.
use agentweave::prelude::*;
use agentweave::spec::Finish;

mod types {
    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct RefundRequest {
        pub order_id: u64,
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct RefundOutcome {
        pub approved: bool,
    }
}

use types::RefundRequest;

/// The same type under another name.
type Request = types::RefundRequest;
type Outcome = types::RefundOutcome;

#[agent(transfers = [refund(types::RefundRequest), "refund-desk"(Request)])]
async fn triage(cx: &AgentContext) -> Option<TriageTransfer> {
    match cx.task_result::<refund>() {
        Some(Ok(outcome)) if outcome.approved => None,
        _ => Some(TriageTransfer::Refund(RefundRequest { order_id: 7 })),
    }
}

/// Reads its payload, typed by its own declaration.
#[agent(accepts = RefundRequest, returns = Outcome)]
async fn refund(cx: &AgentContext) -> AgentResult<Finish<types::RefundOutcome>> {
    let request: RefundRequest = cx.payload::<refund>().expect("sent by triage")?;
    Ok(Finish(types::RefundOutcome {
        approved: request.order_id > 0,
    }))
}

/// A struct agent reads its own payload as `Self`'s.
#[agent(name = "refund-desk", accepts = crate::types::RefundRequest)]
struct Desk2;

#[agent]
impl Desk2 {
    async fn run(&self, cx: &AgentContext) -> AgentResult {
        let request = cx.payload::<Self>().expect("sent by triage")?;
        cx.say(format!("order {}", request.order_id));
        Ok(())
    }
}

flow! {
    Service: triage => [refund(task), Desk2]
}

fn main() {
    let _ = Service::new();
}
