//! [`paths`]: a flow's `PATHS`, each agent's path from the root, computed at compile time from
//! the tree's parents, so `flow!` writes two calls instead of an indexing expression for every
//! step of every path (about 600 of them for a 200-agent flow, type-checked one by one).

/// The names along every node's path from the root, node after node (the root first, then
/// each node's ancestors from the root down and the node itself): `T` names in all, the sum of
/// the nodes' depths plus one. `agents` and `parents` are by node, depth first from the root,
/// so a parent always comes before its children.
///
/// # Panics
///
/// At compile time, if `T` is not the total length of the paths (`flow!` computes it).
pub const fn path_names<const T: usize>(
    agents: &[&'static str],
    parents: &[Option<usize>],
) -> [&'static str; T] {
    let mut out = [""; T];
    let mut end = 0;
    let mut i = 0;
    while i < agents.len() {
        // The path of node `i`, written backwards from its end.
        end += depth(parents, i) + 1;
        let mut at = end;
        let mut node = Some(i);
        while let Some(k) = node {
            at -= 1;
            out[at] = agents[k];
            node = parents[k];
        }
        i += 1;
    }
    assert!(end == T, "the paths' total length is not T");
    out
}

/// Each node's name and its path from the root, a slice of `names` (the [`path_names`] of the
/// same flow): `flow!`'s `PATHS`.
pub const fn paths<const N: usize>(
    agents: &[&'static str],
    parents: &[Option<usize>],
    names: &'static [&'static str],
) -> [(&'static str, &'static [&'static str]); N] {
    let mut out: [(&'static str, &'static [&'static str]); N] = [("", &[]); N];
    let mut rest = names;
    let mut i = 0;
    while i < N {
        let (path, after) = rest.split_at(depth(parents, i) + 1);
        out[i] = (agents[i], path);
        rest = after;
        i += 1;
    }
    out
}

/// How many ancestors node `i` has.
const fn depth(parents: &[Option<usize>], i: usize) -> usize {
    let mut d = 0;
    let mut node = parents[i];
    while let Some(p) = node {
        d += 1;
        node = parents[p];
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_from_the_root() {
        // triage => [refund => [escalation], billing]
        const AGENTS: &[&str] = &["triage", "refund", "escalation", "billing"];
        const PARENTS: &[Option<usize>] = &[None, Some(0), Some(1), Some(0)];
        const NAMES: [&str; 8] = path_names::<8>(AGENTS, PARENTS);
        const PATHS: [(&str, &[&str]); 4] = paths::<4>(AGENTS, PARENTS, &NAMES);
        assert_eq!(
            PATHS,
            [
                ("triage", &["triage"][..]),
                ("refund", &["triage", "refund"][..]),
                ("escalation", &["triage", "refund", "escalation"][..]),
                ("billing", &["triage", "billing"][..]),
            ]
        );
    }

    #[test]
    #[should_panic(expected = "total length")]
    fn a_wrong_total_is_refused() {
        let _ = path_names::<5>(&["a", "b"], &[None, Some(0)]);
    }
}
