//! Agents given at run time: a struct agent holding state (`runtime`) and any agent (`dyn`).
use agentweave::prelude::*;

#[agent(transfers = [lookup, billing])]
async fn triage(_cx: &AgentContext) {}

/// Looks orders up.
#[agent(name = "lookup")]
struct Lookup {
    endpoint: String,
}

#[agent]
impl Lookup {
    async fn run(&self, cx: &AgentContext) {
        cx.say(self.endpoint.clone());
    }
}

flow! {
    Desk: triage => [Lookup(runtime), dyn billing(no_parent)]
}

fn main() {
    let billing = FnAgent::new("billing", |cx, _| async move {
        cx.say("billed");
        Ok(())
    });
    // Setters in any order.
    let desk = Desk::builder()
        .billing(|_| billing)
        .lookup(Lookup {
            endpoint: "orders".into(),
        })
        .build()
        .unwrap();
    assert_eq!(desk.flow().shape(), "triage(lookup,billing^)");

    // The node's own name and targets reach the closure.
    let desk = Desk::builder()
        .lookup(Lookup {
            endpoint: "orders".into(),
        })
        .billing(|node| {
            assert_eq!((node.flow(), node.name()), ("Desk", "billing"));
            // `billing` is barred from its parent and has no sub-agents.
            assert!(node.targets().is_empty());
            FnAgent::new(node, |_, _| async move { Ok(()) })
        })
        .build()
        .unwrap();
    assert_eq!(desk.flow().shape(), "triage(lookup,billing^)");
    assert_eq!(Desk::FINGERPRINT, desk.flow().fingerprint());

    let misnamed = FnAgent::new("payments", |_, _| async move { Ok(()) });
    let err = Desk::builder()
        .lookup(Lookup {
            endpoint: "orders".into(),
        })
        .billing(|_| misnamed)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "node 'billing' of flow 'Desk' was given an agent named 'payments'; the agent of a \
         `dyn` node must carry the node's name (rename the node or the agent)"
    );
}
