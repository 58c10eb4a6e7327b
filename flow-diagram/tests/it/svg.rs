//! The SVG is a well-formed XML document that holds every agent, with the edges it promises.

use agentweave_diagram::{svg, Node};

fn desk() -> Node {
    Node::new("triage")
        .description("Decides which desk owns the request.")
        .child(
            Node::new("refund-desk")
                .description("Issues refunds <up to 100 EUR> & answers \"where is my money\".")
                .transfer("complaint"),
        )
        .child(
            Node::new("complaint")
                .note("dyn: given at run time")
                .description(
                    "Takes complaints about broken or missing goods, logs them and, when the \
                     customer is very unhappy, hands them to a human who calls back.",
                )
                .child(Node::new("escalation").barred(true)),
        )
}

#[test]
fn well_formed_and_holds_every_agent() {
    let picture = svg("Desk", &desk());
    let doc = roxmltree::Document::parse(&picture).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    let agents: Vec<&str> = root
        .descendants()
        .filter(|n| n.attribute("class") == Some("agent"))
        .filter_map(|n| n.attribute("data-name"))
        .collect();
    assert_eq!(agents, ["triage", "refund-desk", "complaint", "escalation"]);
    let texts: Vec<String> = root
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(str::to_owned))
        .collect();
    for name in ["triage", "refund-desk", "complaint", "escalation"] {
        assert!(texts.iter().any(|t| t == name), "{name} is drawn");
    }
    assert!(texts.iter().any(|t| t == "dyn: given at run time"));
    // Escaped text comes back as written.
    assert!(texts.join(" ").contains("<up to 100 EUR> & answers"));
    // A long description is wrapped and cut with an ellipsis.
    assert!(texts.iter().any(|t| t.ends_with('…')));
}

#[test]
fn barred_edges_are_drawn_differently() {
    let picture = svg("Desk", &desk());
    let doc = roxmltree::Document::parse(&picture).unwrap();
    let edges: Vec<(String, String, String)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("path"))
        .filter_map(|n| {
            Some((
                n.attribute("class")?.to_owned(),
                n.attribute("data-from")?.to_owned(),
                n.attribute("data-to")?.to_owned(),
            ))
        })
        .collect();
    let class_of = |from: &str, to: &str| {
        edges
            .iter()
            .find(|(_, f, t)| f == from && t == to)
            .map(|(c, _, _)| c.as_str())
    };
    assert_eq!(class_of("triage", "refund-desk"), Some("edge"));
    assert_eq!(class_of("triage", "complaint"), Some("edge"));
    assert_eq!(class_of("complaint", "escalation"), Some("edge barred"));
    // The declared transfer between siblings is a dotted curve.
    assert_eq!(class_of("refund-desk", "complaint"), Some("edge transfer"));
    let barred = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("edge barred"))
        .unwrap();
    assert!(barred.attribute("stroke-dasharray").is_some());
    assert!(barred.attribute("marker-start").is_none(), "no way back up");
    let open = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("edge"))
        .unwrap();
    assert!(open.attribute("marker-start").is_some(), "both ways");
}

#[test]
fn the_same_tree_draws_the_same_picture() {
    assert_eq!(svg("Desk", &desk()), svg("Desk", &desk()));
    let one = svg("Solo", &Node::new("solo"));
    roxmltree::Document::parse(&one).unwrap();
    assert!(one.contains(">solo</text>"));
}
