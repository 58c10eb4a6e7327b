//! Names that collide with Rust keywords or with generated items still work: an agent fn
//! `r#match` is the agent `match`, a `dyn build` node gets the setter `build_agent` (the
//! builder's `build()` keeps its name), and a flow may be named like one of its agents.
use agentweave::prelude::*;

/// Matches a customer to a desk.
#[agent(transfers = [r#type, build])]
async fn r#match(_cx: &AgentContext) -> MatchTransfer {
    MatchTransfer::Type
}

#[agent]
async fn r#type(_cx: &AgentContext) {}

flow! {
    Desk: r#match => [r#type, dyn build]
}

mod agents {
    use agentweave::prelude::*;

    /// The refund desk.
    #[agent(name = "refund-desk")]
    pub async fn desk(_cx: &AgentContext) {}
}

// The flow `desk` shares its name with its agent `agents::desk` (another module).
flow! {
    #[allow(non_camel_case_types)]
    pub desk: dyn triage => [agents::desk]
}

// A flow named like its agent's name.
#[agent]
async fn solo(_cx: &AgentContext) {}

flow! {
    Solo: solo
}

fn main() {
    assert_eq!(<r#match as AgentSpec>::NAME, "match");
    assert_eq!(<r#match as AgentSpec>::TRANSFERS, ["type", "build"]);
    assert_eq!(MatchTransfer::Type.to_string(), "type");
    let built = Desk::builder()
        .build_agent(|node| FnAgent::new(node, |_, _| async move { Ok(()) }))
        .build()
        .unwrap();
    assert_eq!(built.flow().shape(), "match(type,build)");
    assert_eq!(Desk::AGENTS, ["match", "type", "build"]);
    assert_eq!("match".parse::<DeskAgent>(), Ok(DeskAgent::Match));
    assert_eq!(DeskMatchTarget::Build.as_str(), "build");

    let flow = desk::builder()
        .triage(|node| FnAgent::new(node, |_, _| async move { Ok(()) }))
        .build()
        .unwrap();
    assert_eq!(flow.flow().shape(), "triage(refund-desk)");
    assert_eq!(Solo::new().unwrap().flow().shape(), "solo");
}
