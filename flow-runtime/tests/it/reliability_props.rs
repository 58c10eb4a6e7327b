//! Property tests over random trees and random walks through them, ending with a transfer to
//! any name (a neighbour, a node that is not one, or no node at all):
//! - run-path exactness: every event's run path starts at the root and each hop is between
//!   neighbours of the tree (parent or child); it is exactly the walk so far; the event's agent
//!   is the path's last step;
//! - recording: the session holds exactly the events of the run that are not interrupts, in
//!   order; a transfer outside the neighbours gives one error event and nothing else runs.

use std::sync::Arc;

use agentweave_runtime::RunRequest;
use agentweave_runtime::{
    set_sub_agents, AgentEvent, FlowAgent, FnAgent, Message, Runner, Session,
};
use futures::executor::block_on;
use futures::StreamExt;
use proptest::prelude::*;

/// Visit `i` says who it is, then transfers to `script[i]`, or interrupts when `script[i]` is
/// `"!"`, or ends when there is no step `i`.
fn agent(name: String, script: Arc<Vec<String>>) -> FlowAgent {
    FlowAgent::new(FnAgent::new(name.clone(), move |cx, _| {
        let script = Arc::clone(&script);
        let name = name.clone();
        async move {
            let visit = cx.run_path().len() - 1;
            cx.say(format!("{name} at visit {visit}"));
            match script.get(visit).map(String::as_str) {
                Some("!") => cx.interrupt(serde_json::json!(visit)),
                Some(to) => cx.transfer(to),
                None => {}
            }
            Ok(())
        }
    }))
}

fn build(parents: &[usize], script: &Arc<Vec<String>>) -> FlowAgent {
    fn node(i: usize, parents: &[usize], script: &Arc<Vec<String>>) -> FlowAgent {
        let me = agent(format!("n{i}"), Arc::clone(script));
        let children: Vec<FlowAgent> = (1..=parents.len())
            .filter(|&c| parents[c - 1] == i)
            .map(|c| node(c, parents, script))
            .collect();
        if children.is_empty() {
            me
        } else {
            set_sub_agents(me, children).unwrap()
        }
    }
    node(0, parents, script)
}

fn neighbours(parents: &[usize], i: usize) -> Vec<usize> {
    let mut out: Vec<usize> = (1..=parents.len())
        .filter(|&c| parents[c - 1] == i)
        .collect();
    if i > 0 {
        out.push(parents[i - 1]);
    }
    out
}

fn index_of(name: &str) -> usize {
    name[1..].parse().unwrap()
}

fn case() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, usize, u8)> {
    (0usize..7).prop_flat_map(|extra| {
        let parents = (0..extra).map(|i| 0..=i).collect::<Vec<_>>();
        (
            parents,
            proptest::collection::vec(0usize..8, 0..8),
            0usize..10,
            0u8..3,
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn run_paths_are_hop_chains_and_the_session_holds_exactly_the_recorded_events(
        (parents, choices, last_pick, ending) in case()
    ) {
        // A walk along neighbours, then an ending: nothing, an interrupt, or a transfer to
        // any node index or to a name outside the tree.
        let mut walk = vec![0usize];
        for c in &choices {
            let here = *walk.last().unwrap();
            let next = neighbours(&parents, here);
            if next.is_empty() {
                break;
            }
            walk.push(next[c % next.len()]);
        }
        let mut script: Vec<String> = walk[1..].iter().map(|i| format!("n{i}")).collect();
        let last_target = match ending {
            0 => None,
            1 => {
                script.push("!".into());
                None
            }
            _ => {
                let t = if last_pick > parents.len() { "ghost".to_owned() } else { format!("n{last_pick}") };
                script.push(t.clone());
                Some(t)
            }
        };
        let script = Arc::new(script);
        let session = Session::new();
        let events: Vec<AgentEvent> = block_on(
            Runner::new(build(&parents, &script))
                .run(RunRequest::new([Message::user("go")]).session(Arc::clone(&session)))
                .collect(),
        );

        // Which visits ran, and how the run ends.
        let here = *walk.last().unwrap();
        let legal_last = last_target
            .as_deref()
            .filter(|t| *t != "ghost" && neighbours(&parents, here).contains(&index_of(t)));
        let mut visits: Vec<usize> = walk.clone();
        if let Some(t) = legal_last {
            visits.push(index_of(t));
        }

        let mut expected_own = 0;
        let mut v = 0;
        for e in &events {
            let shown = e.run_path().to_string();
            let path: Vec<&str> = shown.split('/').collect();
            prop_assert_eq!(path[0], "n0");
            for hop in path.windows(2) {
                prop_assert!(
                    neighbours(&parents, index_of(hop[0])).contains(&index_of(hop[1])),
                    "hop {} -> {} is not an edge of the tree", hop[0], hop[1]
                );
            }
            prop_assert_eq!(e.agent_name(), *path.last().unwrap());
            // The path is exactly the walk up to this visit.
            let at = path.len() - 1;
            prop_assert!(at >= v);
            v = at;
            let want: Vec<String> = visits[..=at].iter().map(|i| format!("n{i}")).collect();
            prop_assert_eq!(&path, &want.iter().map(String::as_str).collect::<Vec<_>>());
            if !e.is_interrupt() {
                expected_own += 1;
            }
        }
        // Every visit spoke first.
        let said: Vec<String> = events
            .iter()
            .filter_map(|e| e.message_output())
            .filter(|m| m.content.contains(" at visit "))
            .map(|m| m.content.clone())
            .collect();
        let want_said: Vec<String> =
            visits.iter().enumerate().map(|(k, i)| format!("n{i} at visit {k}")).collect();
        prop_assert_eq!(said, want_said);

        // The ending.
        let last = events.last().unwrap();
        match (ending, &last_target, legal_last) {
            (1, _, _) => prop_assert!(last.is_interrupt()),
            (2, Some(t), None) => prop_assert_eq!(
                last.error.as_ref().map(|e| e.to_string()),
                Some(format!(
                    "transfer failed: agent '{t}' not found when transferring from 'n{here}'"
                ))
            ),
            _ => prop_assert!(last.error.is_none() && !last.is_interrupt()),
        }

        // The session holds exactly the non-interrupt events, in order; the flow's own
        // transfer error is not an agent's event and is not recorded.
        if ending == 2 && legal_last.is_none() {
            expected_own -= 1;
        }
        let recorded = session.events();
        prop_assert_eq!(recorded.len(), expected_own);
        let mut own = events.iter().filter(|e| !e.is_interrupt() && e.error.is_none());
        for r in &recorded {
            let e = own.next().unwrap();
            prop_assert_eq!(r.run_path(), e.run_path());
            prop_assert_eq!(r.agent_name(), e.agent_name());
            prop_assert_eq!(r.action(), e.action.as_ref());
            prop_assert_eq!(
                r.message_now().map(|m| Message::clone(&m)),
                e.message_output().cloned()
            );
        }
    }
}
