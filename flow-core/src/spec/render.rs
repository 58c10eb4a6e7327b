//! Text renderings of a flow's tree, for the `mermaid()` and `to_dot()` of `flow!` types.

use std::fmt::Write as _;

/// A Mermaid flowchart: one node per agent, `<-->` from a parent to a sub-agent that may
/// transfer back, `-->` to one barred from it.
pub fn mermaid(names: &[&str], parents: &[Option<usize>], barred: &[bool]) -> String {
    let mut out = String::from("graph TD\n");
    for (i, name) in names.iter().enumerate() {
        let _ = writeln!(out, "    n{i}[\"{}\"]", name.replace('"', "#quot;"));
    }
    for (i, parent) in parents.iter().enumerate() {
        if let Some(p) = parent {
            let arrow = if barred[i] { "-->" } else { "<-->" };
            let _ = writeln!(out, "    n{p} {arrow} n{i}");
        }
    }
    out
}

/// A standalone SVG of the tree (see `agentweave-diagram`): `descriptions` and `notes` per
/// agent, in the order of `names`.
pub fn svg(
    flow: &str,
    names: &[&str],
    descriptions: &[&str],
    notes: &[&str],
    parents: &[Option<usize>],
    barred: &[bool],
) -> String {
    fn node(
        i: usize,
        names: &[&str],
        descriptions: &[&str],
        notes: &[&str],
        parents: &[Option<usize>],
        barred: &[bool],
    ) -> agentweave_diagram::Node {
        let mut out = agentweave_diagram::Node::new(names[i])
            .description(descriptions[i])
            .note(notes[i])
            .barred(barred[i]);
        for (c, parent) in parents.iter().enumerate() {
            if *parent == Some(i) {
                out = out.child(node(c, names, descriptions, notes, parents, barred));
            }
        }
        out
    }
    if names.is_empty() {
        return agentweave_diagram::svg(flow, &agentweave_diagram::Node::new(flow));
    }
    agentweave_diagram::svg(flow, &node(0, names, descriptions, notes, parents, barred))
}

/// A Graphviz digraph: one edge per parent and sub-agent, `dir=both` where the sub-agent
/// may transfer back.
pub fn dot(flow: &str, names: &[&str], parents: &[Option<usize>], barred: &[bool]) -> String {
    let quote = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let mut out = format!("digraph \"{}\" {{\n", quote(flow));
    for (i, name) in names.iter().enumerate() {
        let _ = writeln!(out, "    n{i} [label=\"{}\"];", quote(name));
    }
    for (i, parent) in parents.iter().enumerate() {
        if let Some(p) = parent {
            let dir = if barred[i] { "" } else { " [dir=both]" };
            let _ = writeln!(out, "    n{p} -> n{i}{dir};");
        }
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn renders() {
        let names = ["triage", "refund", "complaint", "escalation"];
        let parents = [None, Some(0), Some(0), Some(2)];
        let barred = [false, false, false, true];
        assert_eq!(
            super::mermaid(&names, &parents, &barred),
            "graph TD\n    n0[\"triage\"]\n    n1[\"refund\"]\n    n2[\"complaint\"]\n    \
             n3[\"escalation\"]\n    n0 <--> n1\n    n0 <--> n2\n    n2 --> n3\n"
        );
        assert_eq!(
            super::dot("Desk", &names, &parents, &barred),
            "digraph \"Desk\" {\n    n0 [label=\"triage\"];\n    n1 [label=\"refund\"];\n    \
             n2 [label=\"complaint\"];\n    n3 [label=\"escalation\"];\n    \
             n0 -> n1 [dir=both];\n    n0 -> n2 [dir=both];\n    n2 -> n3;\n}\n"
        );
    }
}
