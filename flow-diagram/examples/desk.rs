//! Prints the SVG of a small customer-service desk: `cargo run -p agentweave-diagram --example desk > desk.svg`.

use agentweave_diagram::{svg, Node};

fn main() {
    let tree = Node::new("triage")
        .description("Decides which desk owns the request.")
        .child(
            Node::new("refund-desk")
                .description("Issues refunds: looks the order up and pays the money back."),
        )
        .child(
            Node::new("complaint")
                .note("dyn: given at run time")
                .description("Takes complaints about broken or missing goods.")
                .child(
                    Node::new("escalation")
                        .description("Takes over serious complaints.")
                        .barred(true),
                )
                .child(Node::new("survey")),
        );
    println!("{}", svg("CustomerService", &tree));
}
