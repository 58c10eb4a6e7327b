//! The API `#[agent]` and `flow!` generate, and how generated agents behave when run.

use std::sync::Arc;

use agentweave::prelude::*;
use agentweave::{history::HistoryEntry, message::MessageRef, spec::TransferTarget};
use futures::StreamExt;

/// Decides which desk owns the request.
#[agent(transfers = [refund, complaint])]
async fn triage(cx: &AgentContext, input: AgentInput) -> AgentResult<TriageTransfer> {
    let text = input.messages[0].content.clone();
    cx.say("routing");
    if text.contains("refund") {
        Ok(TriageTransfer::Refund)
    } else if text.contains("fail") {
        Err(AgentError::failed("triage", "cannot route"))
    } else {
        Ok(TriageTransfer::Complaint)
    }
}

/// Refunds.
#[agent]
async fn refund(cx: &AgentContext) {
    cx.say("refunded");
}

/// Complaints.
#[agent(transfers = [escalation, "triage"])]
async fn complaint(_cx: &AgentContext) -> ComplaintTransfer {
    ComplaintTransfer::Escalation
}

/// Escalations; never hands back.
#[agent(no_parent)]
async fn escalation(cx: &AgentContext, input: AgentInput) -> Exit {
    cx.say(format!("{} messages", input.messages.len()));
    Exit
}

flow! {
    /// The desk.
    pub Desk: triage => [refund, complaint => [escalation]]
}

async fn contents(flow: impl Into<FlowAgent>, query: &str) -> Vec<String> {
    Runner::new(flow)
        .run(query)
        .map(|e| {
            let text = e
                .message_output()
                .map(|m| m.content.clone())
                .or_else(|| e.error.as_ref().map(|x| format!("error: {x}")))
                .or_else(|| e.action.as_ref().map(|a| format!("{a:?}")))
                .unwrap_or_default();
            format!("{}: {text}", e.run_path())
        })
        .collect()
        .await
}

#[test]
fn agent_facts() {
    assert_eq!(<triage as AgentSpec>::NAME, "triage");
    assert_eq!(
        <triage as AgentSpec>::DESCRIPTION,
        "Decides which desk owns the request."
    );
    assert_eq!(<triage as AgentSpec>::TRANSFERS, ["refund", "complaint"]);
    assert_eq!(
        [
            <triage as AgentSpec>::NO_PARENT,
            <escalation as AgentSpec>::NO_PARENT
        ],
        [false, true]
    );
    assert_eq!(<escalation as AgentSpec>::TRANSFERS, [] as [&str; 0]);
    assert_eq!(triage.name(), "triage");
    assert_eq!(refund.description(), "Refunds.");
}

#[test]
fn transfer_enums() {
    assert_eq!(TriageTransfer::Refund.as_str(), "refund");
    assert_eq!(TriageTransfer::Complaint.to_string(), "complaint");
    assert_eq!(
        TriageTransfer::ALL,
        [TriageTransfer::Refund, TriageTransfer::Complaint]
    );
    assert_eq!(ComplaintTransfer::Triage.agent_name(), "triage");
    assert_eq!(
        <ComplaintTransfer as TransferTarget>::ALL,
        [ComplaintTransfer::Escalation, ComplaintTransfer::Triage]
    );
}

#[test]
fn flow_consts() {
    assert_eq!(Desk::NAME, "Desk");
    assert_eq!(
        Desk::AGENTS,
        ["triage", "refund", "complaint", "escalation"]
    );
    assert_eq!(
        Desk::PATHS,
        [
            ("triage", &["triage"][..]),
            ("refund", &["triage", "refund"][..]),
            ("complaint", &["triage", "complaint"][..]),
            ("escalation", &["triage", "complaint", "escalation"][..]),
        ]
    );
    assert_eq!(
        Desk::path_of("escalation"),
        Some(&["triage", "complaint", "escalation"][..])
    );
    assert_eq!(Desk::path_of("billing"), None);
    // `#[agent(no_parent)]` bars the node even though the flow does not say so.
    assert_eq!(
        Desk::FINGERPRINT,
        agentweave::spec::fingerprint_of("triage(refund,complaint(escalation^))")
    );
    let flow = Desk::new().unwrap();
    assert_eq!(flow.flow().shape(), "triage(refund,complaint(escalation^))");
    assert_eq!(flow.runner().agent().name(), "triage");
}

#[test]
fn agent_enum() {
    assert_eq!(DeskAgent::ALL.len(), 4);
    assert_eq!(DeskAgent::Complaint.name(), "complaint");
    assert_eq!(DeskAgent::Escalation.to_string(), "escalation");
    assert_eq!("refund".parse::<DeskAgent>(), Ok(DeskAgent::Refund));
    let err = "billing".parse::<DeskAgent>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "flow 'Desk' has no agent named 'billing'; its agents are: triage, refund, complaint, \
         escalation"
    );
    assert_eq!(DeskAgent::Escalation.parent(), Some(DeskAgent::Complaint));
    assert_eq!(DeskAgent::Triage.parent(), None);
    assert_eq!(
        DeskAgent::Triage.children(),
        [DeskAgent::Refund, DeskAgent::Complaint]
    );
    assert_eq!(DeskAgent::Refund.path(), ["triage", "refund"]);
}

#[test]
fn node_target_enums() {
    // A node filled by an agent type has the agent's transfer enum as its target type.
    let triage_target: TriageTransfer = DeskTriageTarget::Refund;
    assert_eq!(triage_target, TriageTransfer::Refund);
    assert_eq!(
        DeskTriageTarget::ALL,
        [DeskTriageTarget::Refund, DeskTriageTarget::Complaint]
    );
    assert_eq!(
        DeskComplaintTarget::ALL,
        [DeskComplaintTarget::Escalation, DeskComplaintTarget::Triage]
    );
    assert_eq!(DeskComplaintTarget::Triage.as_str(), "triage");
    assert_eq!(
        DeskAgent::from(DeskComplaintTarget::Triage),
        DeskAgent::Triage
    );
    assert_eq!(DeskComplaintTarget::Triage.to_string(), "triage");
    assert_eq!(format!("{:?}", DeskTriageTarget::Complaint), "Complaint");
    // `refund` declares no transfers: a transfer it makes is one it declared, so none.
    assert!(<DeskRefundTarget as TransferTarget>::ALL.is_empty());
}

/// Agents declared in another module, and their target types through the flow's aliases.
mod desks {
    use agentweave::prelude::*;

    /// Routes orders.
    #[agent(transfers = [billing, "shipping"])]
    pub async fn orders(_cx: &AgentContext) -> OrdersTransfer {
        OrdersTransfer::Billing
    }

    /// Bills.
    #[agent]
    pub async fn billing(_cx: &AgentContext) {}

    /// Ships.
    #[agent(transfers = [orders])]
    pub async fn shipping(_cx: &AgentContext) {}
}

flow! { Shop: desks::orders => [desks::billing, desks::shipping] }

#[test]
fn target_aliases_of_agents_in_another_module() {
    fn code(target: ShopOrdersTarget) -> u8 {
        match target {
            ShopOrdersTarget::Billing => 1,
            ShopOrdersTarget::Shipping => 2,
        }
    }
    assert_eq!(code(ShopOrdersTarget::Shipping), 2);
    assert_eq!(ShopOrdersTarget::ALL, desks::OrdersTransfer::ALL);
    assert_eq!(ShopShippingTarget::Orders.as_str(), "orders");
    assert_eq!(
        ShopAgent::from(ShopOrdersTarget::Billing),
        ShopAgent::Billing
    );
    assert_eq!(
        Shop::trajectory()
            .transfer(ShopShippingTarget::Orders)
            .steps()[0],
        agentweave::spec::expected::ExpectedStep::Transfer {
            from: "shipping",
            to: "orders"
        }
    );
}

#[test]
fn diagrams() {
    assert_eq!(
        Desk::mermaid(),
        "graph TD\n    n0[\"triage\"]\n    n1[\"refund\"]\n    n2[\"complaint\"]\n    \
         n3[\"escalation\"]\n    n0 <--> n1\n    n0 <--> n2\n    n2 --> n3\n"
    );
    assert_eq!(
        Desk::to_dot(),
        "digraph \"Desk\" {\n    n0 [label=\"triage\"];\n    n1 [label=\"refund\"];\n    \
         n2 [label=\"complaint\"];\n    n3 [label=\"escalation\"];\n    \
         n0 -> n1 [dir=both];\n    n0 -> n2 [dir=both];\n    n2 -> n3;\n}\n"
    );
}

/// The agents drawn in an SVG, by name, with the texts of each box, and the edges as
/// `(class, from, to)`.
#[allow(clippy::type_complexity)]
fn drawn(svg: &str) -> (Vec<(String, Vec<String>)>, Vec<(String, String, String)>) {
    let doc = roxmltree::Document::parse(svg).expect("a well-formed SVG");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let agents = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("agent"))
        .map(|g| {
            let texts = g
                .descendants()
                .filter(|n| n.has_tag_name("text"))
                .filter_map(|n| n.text().map(str::to_owned))
                .collect();
            (g.attribute("data-name").unwrap().to_owned(), texts)
        })
        .collect();
    let edges = doc
        .descendants()
        .filter(|n| n.has_tag_name("path") && n.attribute("data-from").is_some())
        .map(|n| {
            (
                n.attribute("class").unwrap().to_owned(),
                n.attribute("data-from").unwrap().to_owned(),
                n.attribute("data-to").unwrap().to_owned(),
            )
        })
        .collect();
    (agents, edges)
}

#[test]
fn svg_draws_every_agent_with_its_real_name_and_description() {
    let (agents, edges) = drawn(&Desk::svg());
    let names: Vec<&str> = agents.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, Desk::AGENTS);
    // The description is wrapped over lines.
    assert_eq!(agents[0].1[0], "triage");
    assert_eq!(
        agents[0].1[1..].join(" "),
        "Decides which desk owns the request."
    );
    assert_eq!(
        agents[3].1,
        ["escalation", "Escalations; never hands back."]
    );
    let edge = |from: &str, to: &str| {
        edges
            .iter()
            .find(|(_, f, t)| f == from && t == to)
            .map(|(c, _, _)| c.clone())
    };
    assert_eq!(edge("triage", "refund").as_deref(), Some("edge"));
    // `escalation` is `#[agent(no_parent)]`: barred, drawn dashed.
    assert_eq!(
        edge("complaint", "escalation").as_deref(),
        Some("edge barred")
    );

    // A renamed agent is drawn by its name; a built tree adds the `dyn` agents' descriptions.
    let orders = Orders::builder()
        .lookup(Lookup {
            endpoint: "orders-db".into(),
        })
        .audit(|node| {
            FnAgent::new(node, |_, _| async move { Ok(()) }).with_description("Audits orders.")
        })
        .build()
        .unwrap();
    let (agents, edges) = drawn(&orders.flow().to_svg());
    let names: Vec<&str> = agents.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["front", "lookup-desk", "audit"]);
    assert_eq!(agents[2].1, ["audit", "Audits orders."]);
    assert!(edges.contains(&("edge barred".into(), "front".into(), "audit".into())));
    let (agents, _) = drawn(&Orders::svg());
    assert_eq!(agents[1].1[0], "lookup-desk");
    assert_eq!(agents[2].1, ["audit", "dyn: built at run time"]);
}

#[tokio::test]
async fn outcomes_steer_the_run() {
    let flow = Desk::new().unwrap();
    assert_eq!(
        contents(flow.clone(), "refund please").await,
        [
            "triage: routing",
            "triage: ",
            "triage: successfully transferred to agent [refund]",
            "triage/refund: refunded",
        ]
    );
    assert_eq!(
        contents(flow.clone(), "this will fail").await,
        [
            "triage: routing",
            "triage: error: agent 'triage' failed: cannot route"
        ]
    );
    let escalated = contents(flow, "broken").await;
    assert_eq!(
        escalated.last().unwrap(),
        "triage/complaint/escalation: Exit"
    );
    assert_eq!(
        escalated[escalated.len() - 2],
        "triage/complaint/escalation: 6 messages"
    );
}

/// Tries to transfer by emitting the action itself.
#[agent]
async fn sneaky(cx: &AgentContext) {
    cx.emit(AgentEvent::action(Action::transfer_to("refund")));
}

flow! {
    Sneaky: sneaky => [refund]
}

#[tokio::test]
async fn an_agent_cannot_transfer_by_emitting_the_action() {
    assert_eq!(
        contents(Sneaky::new().unwrap(), "hi").await,
        [
            "sneaky: error: agent 'sneaky' failed: emitted a transfer to 'refund' as an event; an \
          #[agent] transfers by returning a variant of its transfer enum"
        ]
    );
}

/// Looks orders up at the endpoint it holds, then hands back.
#[agent(name = "lookup-desk", transfers = [front])]
struct Lookup {
    endpoint: String,
}

#[agent]
impl Lookup {
    async fn run(&self, cx: &AgentContext, input: AgentInput) -> LookupTransfer {
        cx.say(format!("{} saw {}", self.endpoint, input.messages.len()));
        LookupTransfer::Front
    }
}

/// Sends lookups; ends the run after the lookup desk hands back.
#[agent(transfers = ["lookup-desk"])]
async fn front(cx: &AgentContext) -> Option<FrontTransfer> {
    let back = cx
        .session()
        .events()
        .iter()
        .any(|e| e.agent_name() == "lookup-desk");
    if back {
        cx.say("done");
        None
    } else {
        Some(FrontTransfer::LookupDesk)
    }
}

fn only_user(_agent: &str, entries: &[HistoryEntry]) -> Result<Vec<MessageRef>, AgentError> {
    Ok(entries
        .iter()
        .filter(|e| e.is_user_input)
        .map(|e| Arc::clone(&e.message))
        .collect())
}

flow! {
    Orders: front => [Lookup(runtime, context = custom(only_user)), dyn audit(no_parent)]
}

#[tokio::test]
async fn struct_agents_and_runtime_nodes() {
    let audit = FnAgent::new("audit", |cx, _| async move {
        cx.say("audited");
        Ok(())
    });
    assert_eq!(
        format!("{:?}", Orders::builder()),
        "OrdersBuilder { lookup: Unset, audit: Unset }"
    );
    let orders = Orders::builder()
        .lookup(Lookup {
            endpoint: "orders-db".into(),
        })
        .audit(|_| audit)
        .build()
        .unwrap();
    assert_eq!(Orders::AGENTS, ["front", "lookup-desk", "audit"]);
    assert_eq!(orders.flow().shape(), "front(lookup-desk,audit^)");
    assert_eq!(Orders::FINGERPRINT, orders.flow().fingerprint());
    assert_eq!(OrdersAgent::Lookup.name(), "lookup-desk");
    assert_eq!(
        contents(orders, "where is my order").await,
        [
            "front: ",
            "front: successfully transferred to agent [lookup-desk]",
            // The custom policy kept only the user's message.
            "front/lookup-desk: orders-db saw 1",
            "front/lookup-desk: ",
            "front/lookup-desk: successfully transferred to agent [front]",
            "front/lookup-desk/front: done",
        ]
    );
}

/// Reads what it is given.
#[agent]
async fn reader(cx: &AgentContext, input: AgentInput) {
    let all: Vec<String> = input.messages.iter().map(|m| m.content.clone()).collect();
    cx.say(all.join(" | "));
}

/// Talks, then transfers.
#[agent(transfers = [reader])]
async fn talker(cx: &AgentContext) -> TalkerTransfer {
    cx.say("one");
    cx.say("two");
    TalkerTransfer::Reader
}

flow! {
    LastOne: talker => [reader(context = last(1))]
}

flow! {
    Skipping: talker => [reader(skip_transfer_messages)]
}

#[tokio::test]
async fn context_options_reach_the_node() {
    let last = contents(LastOne::new().unwrap(), "hi").await;
    assert_eq!(
        last.last().unwrap(),
        "talker/reader: hi | For context: [talker] `transfer_to_agent` tool returned result: \
         successfully transferred to agent [reader]."
    );
    let skipped = contents(Skipping::new().unwrap(), "hi").await;
    assert_eq!(
        skipped.last().unwrap(),
        "talker/reader: hi | For context: [talker] said: one. | For context: [talker] said: two."
    );
}

/// A hand-written target naming an agent `bypass` never declared.
#[derive(Clone, Copy)]
struct Forged;

impl std::fmt::Display for Forged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("complaint")
    }
}

impl TransferTarget for Forged {
    const ALL: &'static [Self] = &[Forged];
    fn agent_name(self) -> &'static str {
        "complaint"
    }
}

/// Declares only `refund`, then tries the only transfer function there is with a forged
/// target naming its sibling `complaint`.
#[agent(name = "triage", transfers = [refund])]
async fn forger(cx: &AgentContext) -> AgentResult {
    agentweave::__private::transfer(cx, Forged)
}

flow! {
    Forgery: forger => [refund, complaint => [escalation]]
}

#[tokio::test]
async fn a_forged_target_is_refused_and_nothing_transfers() {
    let out = contents(Forgery::new().unwrap(), "hi").await;
    assert_eq!(
        out,
        [
            "triage: error: agent 'triage' failed: refused a transfer to 'complaint': it is not \
             among the agent's declared transfers (refund); declare it with #[agent(transfers = \
             [...])]"
        ]
    );
}

/// Says a lot, then hands over to the budgeted clerk.
#[agent(transfers = [clerk])]
async fn chatter(cx: &AgentContext) -> ChatterTransfer {
    for i in 0..30 {
        cx.say(format!(
            "sentence {i} of a long preamble that fills the context"
        ));
    }
    ChatterTransfer::Clerk
}

/// The budget of the clerk node: 400 tokens, summarised by a function.
fn clerk_budget() -> agentweave::history::ContextBudget {
    agentweave::history::ContextBudget::new(400, |_: &str, older: &[MessageRef]| {
        Ok::<_, String>(format!("{} messages of preamble.", older.len()))
    })
}

flow! {
    Budgeted: chatter => [dyn clerk(context = compact(clerk_budget))]
}

#[tokio::test]
async fn a_compact_node_option_keeps_the_agent_within_its_budget() {
    use agentweave::history::{estimate_tokens, CompactionRecord};
    use agentweave::model::{ScriptStep, ScriptedModel};
    let model = std::sync::Arc::new(ScriptedModel::new([ScriptStep::text("Noted.")]));
    let clerk = ChatModelAgent::builder_with_arc(
        "clerk",
        model.clone() as Arc<dyn agentweave::model::ChatModel>,
    )
    .build()
    .unwrap();
    let flow = Budgeted::builder().clerk(|_| clerk).build().unwrap();
    let events: Vec<AgentEvent> = Runner::new(flow).run("hello").collect().await;
    let errors: Vec<String> = events
        .iter()
        .filter_map(|e| e.error.as_ref())
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    // The clerk recorded one summary, then answered.
    let summaries: Vec<&AgentEvent> = events
        .iter()
        .filter(|e| e.action.as_ref().and_then(CompactionRecord::of).is_some())
        .collect();
    assert_eq!(summaries.len(), 1);
    assert_eq!(summaries[0].agent_name(), "clerk");
    // Its one request starts from the summary and is under the budget.
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0].messages;
    // (after the instruction: the transfer instructions of a node with a parent)
    assert_eq!(sent[0].role, agentweave::Role::System);
    assert!(sent[1]
        .content
        .starts_with("Summary of the earlier conversation"));
    assert!(sent.iter().map(|m| estimate_tokens(m)).sum::<usize>() <= 400);
    assert_eq!(
        events.last().unwrap().message_output().unwrap().content,
        "Noted."
    );
}

flow! {
    /// The customer-service desk: the front desk routes each request to refunds or
    /// complaints.
    ///
    /// More details that a catalogue does not show.
    pub DocumentedDesk: triage => [refund, complaint => [escalation]]
}

#[test]
fn the_flow_doc_comment_is_the_flow_description() {
    // The first paragraph of the doc comment, as one line.
    let desk = DocumentedDesk::new().unwrap().into_flow();
    assert_eq!(
        desk.flow_description(),
        "The customer-service desk: the front desk routes each request to refunds or complaints."
    );
    // The root agent keeps its own description.
    assert_eq!(desk.description(), "Decides which desk owns the request.");
    // Without a doc comment the flow is described by its root agent.
    let plain = Sneaky::new().unwrap().into_flow();
    assert_eq!(plain.flow_description(), plain.description());
}
