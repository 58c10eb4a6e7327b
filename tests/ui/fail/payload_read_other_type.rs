use agentweave::prelude::*;

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct RefundRequest {
    order_id: u64,
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct ComplaintForm {
    text: String,
}

#[agent(accepts = RefundRequest)]
async fn refund(cx: &AgentContext) -> AgentResult {
    let form: ComplaintForm = cx.payload::<refund>().expect("a payload")?;
    cx.say(form.text);
    Ok(())
}

fn main() {}
