//! Agents named like the locals and parameters of generated code still work: the generated
//! code's own names cannot collide with an agent's unit struct.
use agentweave::prelude::*;

#[agent(transfers = [f, h, v, s, a, cx, agent, flow, name, path, target, outcome, node_agent, make, node])]
async fn root(_cx: &AgentContext) {}

macro_rules! leaves {
    ($($name:ident),*) => {
        $(
            #[agent]
            async fn $name(_cx: &AgentContext) {}
        )*
    };
}

leaves!(f, h, v, s, a, cx, agent, flow, name, path, target, outcome, node_agent, billing, make, node);

flow! {
    Hygiene: root => [f, h, v, s, a, cx, agent, flow, name, path, target, outcome, node_agent(runtime), make, node, dyn billing]
}

fn main() {
    let billing_agent = FnAgent::new("billing", |_, _| async move { Ok(()) });
    let built = Hygiene::builder()
        .node_agent(node_agent)
        .billing(|_| billing_agent)
        .build()
        .unwrap();
    assert_eq!(Hygiene::FINGERPRINT, built.flow().fingerprint());
    assert_eq!("h".parse::<HygieneAgent>(), Ok(HygieneAgent::H));
    assert_eq!(Hygiene::path_of("cx"), Some(&["root", "cx"][..]));
    assert_eq!(HygieneRootTarget::F.to_string(), "f");
}
