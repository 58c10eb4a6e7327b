//! Draws a tree of agents as one standalone SVG document.
//!
//! The picture is laid out here, in plain Rust with no dependencies: no JavaScript, no web
//! fonts, no network. It is what `flow!` inlines into the rustdoc of a generated flow at
//! compile time, and what the runtime returns for a tree built at run time, so both draw the
//! same way.
//!
//! Each agent is a box holding its name (bold), an optional note (its kind, in italics) and its
//! description (wrapped, at most three lines). A sub-agent hangs below its parent:
//!
//! - a solid edge with arrowheads at both ends: the parent may transfer to the sub-agent and
//!   the sub-agent back to its parent;
//! - a dashed edge with one arrowhead and a bar at the sub-agent's end: the sub-agent is barred
//!   from transferring to its parent;
//! - a dotted curve: a transfer edge between agents that are not parent and sub-agent.
//!
//! A legend under the tree explains the kinds of edge it shows (none for a lone agent).
//!
//! ```
//! use agentweave_diagram::{svg, Node};
//!
//! let tree = Node::new("triage")
//!     .description("Decides which desk owns the request.")
//!     .child(Node::new("refund").description("Issues refunds."))
//!     .child(
//!         Node::new("complaint")
//!             .child(Node::new("escalation").barred(true)),
//!     );
//! let picture = svg("Desk", &tree);
//! assert!(picture.starts_with("<svg "));
//! assert!(picture.contains(">escalation</text>"));
//! ```

use std::fmt::Write as _;

/// One agent of the tree to draw, with its sub-agents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    /// The agent's name: what a model must use to transfer to it.
    pub name: String,
    /// What the agent does; wrapped under the name (empty: none).
    pub description: String,
    /// A short note under the name, such as `sequential workflow` (empty: none).
    pub note: String,
    /// Whether the agent is barred from transferring to its parent.
    pub barred: bool,
    /// Names of other agents of the tree it may transfer to besides its parent and sub-agents
    /// (drawn as dotted curves); names of its parent or sub-agents, or of no agent in the
    /// tree, are ignored.
    pub transfers: Vec<String>,
    /// Its sub-agents, in order.
    pub children: Vec<Node>,
}

impl Node {
    /// A leaf named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Node {
            name: name.into(),
            ..Node::default()
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Sets the note.
    #[must_use]
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = note.into();
        self
    }

    /// Sets whether the agent is barred from its parent.
    #[must_use]
    pub fn barred(mut self, barred: bool) -> Self {
        self.barred = barred;
        self
    }

    /// Adds a transfer edge to the agent named `target`.
    #[must_use]
    pub fn transfer(mut self, target: impl Into<String>) -> Self {
        self.transfers.push(target.into());
        self
    }

    /// Appends a sub-agent.
    #[must_use]
    pub fn child(mut self, child: Node) -> Self {
        self.children.push(child);
        self
    }
}

// Geometry, in SVG user units (pixels at 100%).
const NAME_SIZE: f64 = 14.0;
const TEXT_SIZE: f64 = 12.0;
/// Average advance of a character, as a fraction of the font size (sans-serif, a little wide
/// so that text never overflows its box).
const NAME_ADVANCE: f64 = 0.62;
const TEXT_ADVANCE: f64 = 0.56;
const LINE: f64 = 16.0;
const PAD_X: f64 = 12.0;
const PAD_Y: f64 = 10.0;
const MIN_BOX: f64 = 110.0;
const MAX_TEXT_CHARS: usize = 34;
const MAX_DESCRIPTION_LINES: usize = 3;
const GAP_X: f64 = 28.0;
const GAP_Y: f64 = 56.0;
const MARGIN: f64 = 16.0;
const LEGEND: f64 = 44.0;

/// A node's box and text, measured.
struct Placed {
    name: String,
    note: String,
    lines: Vec<String>,
    barred: bool,
    transfers: Vec<String>,
    parent: Option<usize>,
    children: Vec<usize>,
    depth: usize,
    w: f64,
    h: f64,
    /// Center x and top y.
    x: f64,
    y: f64,
    /// Width of the subtree rooted here.
    span: f64,
}

/// Draws the tree as a standalone SVG document titled `title` (the flow's name, say).
///
/// The output depends only on the input (no clock, no randomness), so it can be compared in
/// tests and embedded in documentation.
pub fn svg(title: &str, root: &Node) -> String {
    let mut nodes: Vec<Placed> = Vec::new();
    flatten(root, None, 0, &mut nodes);

    // Row heights: the tallest box of each depth.
    let depths = nodes.iter().map(|n| n.depth).max().unwrap_or(0) + 1;
    let mut row_h = vec![0.0f64; depths];
    for n in &nodes {
        row_h[n.depth] = row_h[n.depth].max(n.h);
    }
    let mut row_y = vec![MARGIN; depths];
    for d in 1..depths {
        row_y[d] = row_y[d - 1] + row_h[d - 1] + GAP_Y;
    }

    measure_spans(&mut nodes, 0);
    place(&mut nodes, 0, MARGIN, &row_y);

    let width = (nodes[0].span + 2.0 * MARGIN).max(360.0);
    let tree_bottom = row_y[depths - 1] + row_h[depths - 1];
    // The legend explains only the kinds of edges the picture has.
    let two_way = nodes.iter().any(|n| n.parent.is_some() && !n.barred);
    let barred = nodes.iter().any(|n| n.barred);
    let legend_h = if two_way || barred { LEGEND } else { 0.0 };
    let height = tree_bottom + MARGIN + legend_h;

    let mut out = String::new();
    let title = escape(title);
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
         viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{title}: a tree of {n} agents\" \
         font-family=\"system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif\">",
        w = num(width),
        h = num(height),
        n = nodes.len(),
    );
    let _ = write!(out, "<title>{title}</title>");
    out.push_str(
        "<defs>\
         <marker id=\"af-head\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" \
         markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" \
         fill=\"#4a5568\"/></marker>\
         <marker id=\"af-head-barred\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" \
         markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path \
         d=\"M0,0 L10,5 L0,10 z\" fill=\"#b7472a\"/></marker>\
         </defs>",
    );
    out.push_str("<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>");

    // Tree edges first, so boxes cover their ends.
    for (i, n) in nodes.iter().enumerate() {
        let Some(p) = n.parent else { continue };
        let parent = &nodes[p];
        // Edges leave the parent spread along its bottom, so their arrowheads do not overlap.
        let k = parent.children.iter().position(|&c| c == i).unwrap_or(0);
        let count = parent.children.len();
        let spread = if count > 1 {
            let room = (parent.w * 0.5).min(24.0 * (count - 1) as f64);
            -room / 2.0 + room * k as f64 / (count - 1) as f64
        } else {
            0.0
        };
        let (x1, y1) = (parent.x + spread, parent.y + parent.h);
        let (x2, y2) = (n.x, n.y);
        let mid = (y1 + y2) / 2.0;
        let d = format!(
            "M{},{} C{},{} {},{} {},{}",
            num(x1),
            num(y1),
            num(x1),
            num(mid),
            num(x2),
            num(mid),
            num(x2),
            num(y2)
        );
        if n.barred {
            let _ = write!(
                out,
                "<path class=\"edge barred\" data-from=\"{}\" data-to=\"{}\" d=\"{d}\" \
                 fill=\"none\" stroke=\"#b7472a\" stroke-width=\"1.6\" \
                 stroke-dasharray=\"6 4\" marker-end=\"url(#af-head-barred)\"/>",
                escape(&parent.name),
                escape(&nodes[i].name),
            );
            // The bar: a short stroke across the edge just above the sub-agent.
            let by = y2 - 17.0;
            let _ = write!(
                out,
                "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#b7472a\" \
                 stroke-width=\"2.4\"/>",
                num(x2 - 8.0),
                num(by),
                num(x2 + 8.0),
                num(by)
            );
        } else {
            let _ = write!(
                out,
                "<path class=\"edge\" data-from=\"{}\" data-to=\"{}\" d=\"{d}\" fill=\"none\" \
                 stroke=\"#4a5568\" stroke-width=\"1.6\" marker-start=\"url(#af-head)\" \
                 marker-end=\"url(#af-head)\"/>",
                escape(&parent.name),
                escape(&nodes[i].name),
            );
        }
    }

    // Transfer edges between agents that are not parent and sub-agent.
    for n in &nodes {
        for target in &n.transfers {
            let Some(t) = nodes.iter().position(|m| &m.name == target) else {
                continue;
            };
            let other = &nodes[t];
            let related = n.parent.is_some_and(|p| nodes[p].name == *target)
                || n.children.iter().any(|&c| nodes[c].name == *target)
                || other.name == n.name;
            if related {
                continue;
            }
            let (x1, y1) = (n.x, n.y + n.h / 2.0);
            let (x2, y2) = (other.x, other.y + other.h / 2.0);
            let bend = -(x2 - x1).abs().max(60.0) * 0.25;
            let d = format!(
                "M{},{} Q{},{} {},{}",
                num(x1),
                num(y1),
                num((x1 + x2) / 2.0),
                num((y1 + y2) / 2.0 + bend),
                num(x2),
                num(y2)
            );
            let _ = write!(
                out,
                "<path class=\"edge transfer\" data-from=\"{}\" data-to=\"{}\" d=\"{d}\" \
                 fill=\"none\" stroke=\"#2b6cb0\" stroke-width=\"1.4\" \
                 stroke-dasharray=\"2 3\" marker-end=\"url(#af-head)\"/>",
                escape(&n.name),
                escape(target),
            );
        }
    }

    for n in &nodes {
        node_svg(n, &mut out);
    }

    legend(tree_bottom + MARGIN, two_way, barred, &mut out);
    out.push_str("</svg>");
    out
}

fn flatten(node: &Node, parent: Option<usize>, depth: usize, out: &mut Vec<Placed>) {
    let lines = wrap(&node.description, MAX_TEXT_CHARS, MAX_DESCRIPTION_LINES);
    let name_w = text_width(&node.name, NAME_SIZE, NAME_ADVANCE);
    let note_w = text_width(&node.note, TEXT_SIZE, TEXT_ADVANCE);
    let lines_w = lines
        .iter()
        .map(|l| text_width(l, TEXT_SIZE, TEXT_ADVANCE))
        .fold(0.0, f64::max);
    let w = (name_w.max(note_w).max(lines_w) + 2.0 * PAD_X).max(MIN_BOX);
    let text_lines = 1 + usize::from(!node.note.is_empty()) + lines.len();
    let h = 2.0 * PAD_Y + LINE * text_lines as f64 + 2.0;
    let index = out.len();
    out.push(Placed {
        name: node.name.clone(),
        note: node.note.clone(),
        lines,
        barred: node.barred && parent.is_some(),
        transfers: node.transfers.clone(),
        parent,
        children: Vec::new(),
        depth,
        w,
        h,
        x: 0.0,
        y: 0.0,
        span: 0.0,
    });
    for child in &node.children {
        let c = out.len();
        out[index].children.push(c);
        flatten(child, Some(index), depth + 1, out);
    }
}

fn measure_spans(nodes: &mut [Placed], i: usize) -> f64 {
    let children = nodes[i].children.clone();
    let mut total = 0.0;
    for (k, &c) in children.iter().enumerate() {
        if k > 0 {
            total += GAP_X;
        }
        total += measure_spans(nodes, c);
    }
    let span = nodes[i].w.max(total);
    nodes[i].span = span;
    span
}

/// Places the subtree of `i` in the band starting at `left`.
fn place(nodes: &mut [Placed], i: usize, left: f64, row_y: &[f64]) {
    let children = nodes[i].children.clone();
    let span = nodes[i].span;
    nodes[i].y = row_y[nodes[i].depth];
    if children.is_empty() {
        nodes[i].x = left + span / 2.0;
        return;
    }
    let total: f64 =
        children.iter().map(|&c| nodes[c].span).sum::<f64>() + GAP_X * (children.len() - 1) as f64;
    let mut at = left + (span - total) / 2.0;
    for &c in &children {
        place(nodes, c, at, row_y);
        at += nodes[c].span + GAP_X;
    }
    let first = nodes[children[0]].x;
    let last = nodes[children[children.len() - 1]].x;
    nodes[i].x = (first + last) / 2.0;
}

fn node_svg(n: &Placed, out: &mut String) {
    let left = n.x - n.w / 2.0;
    let (fill, stroke) = if n.parent.is_none() {
        ("#ebf4ff", "#2b6cb0")
    } else {
        ("#f7fafc", "#4a5568")
    };
    let _ = write!(
        out,
        "<g class=\"agent\" data-name=\"{}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" \
         rx=\"8\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"1.4\"/>",
        escape(&n.name),
        num(left),
        num(n.y),
        num(n.w),
        num(n.h)
    );
    let mut y = n.y + PAD_Y + NAME_SIZE;
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"{NAME_SIZE}\" \
         font-weight=\"700\" fill=\"#1a202c\">{}</text>",
        num(n.x),
        num(y),
        escape(&n.name)
    );
    if !n.note.is_empty() {
        y += LINE;
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"{TEXT_SIZE}\" \
             font-style=\"italic\" fill=\"#6b46c1\">{}</text>",
            num(n.x),
            num(y),
            escape(&n.note)
        );
    }
    for line in &n.lines {
        y += LINE;
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"{TEXT_SIZE}\" \
             fill=\"#4a5568\">{}</text>",
            num(n.x),
            num(y),
            escape(line)
        );
    }
    out.push_str("</g>");
}

fn legend(top: f64, two_way: bool, barred: bool, out: &mut String) {
    if !two_way && !barred {
        return;
    }
    let y = top + 14.0;
    let ty = num(y + 4.0);
    let yy = num(y);
    let _ = write!(
        out,
        "<g class=\"legend\" font-size=\"{TEXT_SIZE}\" fill=\"#4a5568\">"
    );
    let mut x = MARGIN;
    if two_way {
        let _ = write!(
            out,
            "<line x1=\"{a}\" y1=\"{yy}\" x2=\"{b}\" y2=\"{yy}\" stroke=\"#4a5568\" \
             stroke-width=\"1.6\" marker-start=\"url(#af-head)\" marker-end=\"url(#af-head)\"/>\
             <text x=\"{t}\" y=\"{ty}\">transfers both ways</text>",
            a = num(x),
            b = num(x + 36.0),
            t = num(x + 44.0),
        );
        x += 180.0;
    }
    if barred {
        let _ = write!(
            out,
            "<line x1=\"{c}\" y1=\"{yy}\" x2=\"{d}\" y2=\"{yy}\" stroke=\"#b7472a\" \
             stroke-width=\"1.6\" stroke-dasharray=\"6 4\" marker-end=\"url(#af-head-barred)\"/>\
             <text x=\"{t}\" y=\"{ty}\">barred from its parent</text>",
            c = num(x),
            d = num(x + 36.0),
            t = num(x + 44.0),
        );
    }
    out.push_str("</g>");
}

/// The width of `s` at `size`, estimated from its character count.
fn text_width(s: &str, size: f64, advance: f64) -> f64 {
    s.chars().count() as f64 * size * advance
}

/// Wraps `text` into at most `max_lines` lines of at most `width` characters, breaking at
/// spaces; a cut last line ends with `…`.
fn wrap(text: &str, width: usize, max_lines: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut cut = false;
    for word in text.split_whitespace() {
        let mut word: String = word.to_owned();
        if word.chars().count() > width {
            word = word.chars().take(width - 1).collect::<String>() + "…";
        }
        let len = current.chars().count();
        if len > 0 && len + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut current));
            if lines.len() == max_lines {
                cut = true;
                break;
            }
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(&word);
    }
    if !cut && !current.is_empty() {
        lines.push(current);
    }
    if cut {
        if let Some(last) = lines.last_mut() {
            while last.chars().count() > width - 1 {
                last.pop();
            }
            last.push('…');
        }
    }
    lines
}

/// A coordinate with at most one decimal, no trailing `.0`.
fn num(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r.fract() == 0.0 {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// Escapes text for XML, and the characters Markdown would read (`*`, `_`, `` ` ``, `[`,
/// `]`, `\`), so the SVG can stand inside a doc comment as it is.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '*' => out.push_str("&#42;"),
            '_' => out.push_str("&#95;"),
            '`' => out.push_str("&#96;"),
            '[' => out.push_str("&#91;"),
            ']' => out.push_str("&#93;"),
            '\\' => out.push_str("&#92;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_spaces_and_cuts_with_an_ellipsis() {
        assert_eq!(wrap("a b c", 3, 3), ["a b", "c"]);
        assert_eq!(wrap("aaa bbb ccc ddd", 3, 2), ["aaa", "bb…"]);
        assert_eq!(wrap("", 10, 3), Vec::<String>::new());
        assert_eq!(wrap("abcdefgh", 4, 1), ["abc…"]);
    }

    #[test]
    fn escapes_xml_and_markdown() {
        assert_eq!(
            escape("<a & \"b\"> *c* _d_ `e`"),
            "&lt;a &amp; &quot;b&quot;&gt; &#42;c&#42; &#95;d&#95; &#96;e&#96;"
        );
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(num(12.0), "12");
        assert_eq!(num(12.25), "12.3");
        assert_eq!(num(-3.0), "-3");
    }

    #[test]
    fn parents_are_centered_over_their_children() {
        let tree = Node::new("root")
            .child(Node::new("a"))
            .child(Node::new("b"));
        let mut nodes = Vec::new();
        flatten(&tree, None, 0, &mut nodes);
        measure_spans(&mut nodes, 0);
        place(&mut nodes, 0, 0.0, &[0.0, 100.0]);
        assert_eq!(nodes[0].x, (nodes[1].x + nodes[2].x) / 2.0);
        assert!(nodes[2].x - nodes[2].w / 2.0 >= nodes[1].x + nodes[1].w / 2.0 + GAP_X - 1e-9);
    }

    #[test]
    fn the_legend_explains_only_the_edges_drawn() {
        let open = svg("F", &Node::new("root").child(Node::new("a")));
        assert!(open.contains("transfers both ways"));
        assert!(!open.contains("barred from its parent"));

        let barred = svg("F", &Node::new("root").child(Node::new("a").barred(true)));
        assert!(!barred.contains("transfers both ways"));
        assert!(barred.contains("barred from its parent"));

        let both = svg(
            "F",
            &Node::new("root")
                .child(Node::new("a"))
                .child(Node::new("b").barred(true)),
        );
        assert!(both.contains("transfers both ways") && both.contains("barred from its parent"));

        let alone = svg("F", &Node::new("root"));
        assert!(!alone.contains("class=\"legend\""));
    }
}
