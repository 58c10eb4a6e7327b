//! A deeper tree: nodes with sub-agents at several levels, options on inner nodes.
use agentweave::prelude::*;

#[agent(transfers = [sales, support])]
async fn root(_cx: &AgentContext) -> Option<RootTransfer> {
    None
}
#[agent(transfers = [quotes, root])]
async fn sales(_cx: &AgentContext) {}
#[agent]
async fn quotes(_cx: &AgentContext) {}
#[agent(transfers = [hardware, software])]
async fn support(_cx: &AgentContext) {}
#[agent(transfers = [drivers, support])]
async fn hardware(_cx: &AgentContext) {}
#[agent(no_parent)]
async fn drivers(_cx: &AgentContext) {}
#[agent]
async fn software(_cx: &AgentContext) {}

flow! {
    /// Sales and support.
    Company: root => [
        sales(skip_transfer_messages) => [quotes(context = last(3))],
        support => [
            hardware => [drivers],
            software(no_parent, context = rewrite),
        ],
    ]
}

fn main() {
    let flow = Company::new().unwrap();
    assert_eq!(
        flow.flow().shape(),
        "root(sales(quotes),support(hardware(drivers^),software^))"
    );
    assert_eq!(Company::FINGERPRINT, flow.flow().fingerprint());
    assert_eq!(
        Company::path_of("drivers"),
        Some(&["root", "support", "hardware", "drivers"][..])
    );
    assert_eq!(CompanyAgent::Drivers.parent(), Some(CompanyAgent::Hardware));
    assert_eq!(CompanyHardwareTarget::ALL.len(), 2);
}
