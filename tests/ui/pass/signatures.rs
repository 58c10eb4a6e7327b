//! Every supported agent fn signature and return type.
use agentweave::prelude::*;

#[derive(Debug)]
struct MyError;

impl From<MyError> for AgentError {
    fn from(_: MyError) -> Self {
        AgentError::failed("mine", "my error")
    }
}

#[agent(transfers = [b, c, d, e, f, g, h])]
async fn a(cx: &AgentContext, input: AgentInput) -> ATransfer {
    cx.say(input.messages.len().to_string());
    ATransfer::B
}
#[agent]
async fn b(cx: &mut AgentContext) {
    cx.say("by mutable reference");
}
#[agent]
async fn c(cx: AgentContext, _input: AgentInput) -> Exit {
    cx.say("by value");
    Exit
}
#[agent(transfers = [a])]
async fn d(_cx: &AgentContext) -> Option<DTransfer> {
    Some(DTransfer::A)
}
#[agent(transfers = [a])]
async fn e(_cx: &AgentContext) -> AgentResult<Option<ETransfer>> {
    Ok(None)
}
#[agent]
async fn f(_cx: &AgentContext) -> AgentResult<Exit> {
    Ok(Exit)
}
#[agent]
async fn g(_cx: &AgentContext) -> Result<(), MyError> {
    Err(MyError)
}
#[agent]
async fn h(_cx: &AgentContext) -> AgentResult {
    Ok(())
}

flow! {
    All: a => [b, c, d, e, f, g, h]
}

fn main() {
    assert_eq!(All::AGENTS, ["a", "b", "c", "d", "e", "f", "g", "h"]);
    let _ = All::new().unwrap();
}
