//! Agents and flows compile inside a `#[no_implicit_prelude]` module: generated code names
//! everything by its full path.
#[no_implicit_prelude]
mod desk {
    use ::agentweave::{AgentContext, AgentInput, AgentResult, Exit};

    /// Routes.
    #[::agentweave::agent(transfers = [refund, billing])]
    pub async fn triage(_cx: &AgentContext, _input: AgentInput) -> AgentResult<TriageTransfer> {
        ::core::result::Result::Ok(TriageTransfer::Refund)
    }

    /// Refunds.
    #[::agentweave::agent(no_parent)]
    pub async fn refund(_cx: &AgentContext) -> Exit {
        Exit
    }

    /// Looks orders up.
    #[::agentweave::agent(name = "lookup")]
    pub struct Lookup {
        pub endpoint: ::std::string::String,
    }

    #[::agentweave::agent]
    impl Lookup {
        async fn run(&self, _cx: &AgentContext) {}
    }

    ::agentweave::flow! {
        /// The desk.
        pub Desk: triage => [refund, dyn billing, Lookup(runtime, context = last(2)), checks = sequential [dyn audit]]
    }
}

fn main() {
    let desk = desk::Desk::builder()
        .billing(|node| agentweave::FnAgent::new(node, |_, _| async move { Ok(()) }))
        .lookup(desk::Lookup {
            endpoint: "orders".into(),
        })
        .audit(|node| agentweave::FnAgent::new(node, |_, _| async move { Ok(()) }))
        .build()
        .unwrap();
    assert_eq!(desk.flow().shape(), "triage(refund^,billing,lookup,checks(audit^))");
    assert_eq!("billing".parse::<desk::DeskAgent>(), Ok(desk::DeskAgent::Billing));
    assert_eq!(desk::Desk::path_of("audit"), Some(&["triage", "checks", "audit"][..]));
    assert!(desk::Desk::mermaid().contains("billing"));
    assert!(desk::Desk::to_dot().contains("billing"));
}
