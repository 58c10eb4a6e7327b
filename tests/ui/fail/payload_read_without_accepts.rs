use agentweave::prelude::*;

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct RefundRequest {
    order_id: u64,
}

/// Declares no payload, but reads one.
#[agent]
async fn refund(cx: &AgentContext) -> AgentResult {
    let request: RefundRequest = cx.payload::<refund>().expect("a payload")?;
    cx.say(format!("{}", request.order_id));
    Ok(())
}

fn main() {}
