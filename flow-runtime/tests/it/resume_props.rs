//! Property: interrupting a run at any agent of any tree and resuming it gives the same session
//! record as the uninterrupted run that made the same choices.

use std::sync::Arc;

use agentweave_runtime::{
    set_sub_agents, Action, Checkpoint, CheckpointStore, FlowAgent, FnAgent, InMemoryStore,
    Message, Runner, Session,
};
use agentweave_runtime::{ResumeRequest, RunRequest};
use futures::executor::block_on;
use futures::StreamExt;
use proptest::prelude::*;

/// What every agent does at visit `i` of the run (the run path's length minus one): say who it
/// is, then transfer to `script[i]` or end. The agent visited at `interrupt_at` interrupts after
/// speaking and transfers only once resumed.
#[derive(Clone)]
struct Plan {
    script: Arc<Vec<Option<String>>>,
    interrupt_at: Option<usize>,
}

fn agent(name: String, plan: Plan) -> FlowAgent {
    let resume_plan = plan.clone();
    FlowAgent::new(
        FnAgent::new(name.clone(), move |cx, _| {
            let plan = plan.clone();
            let name = name.clone();
            async move {
                let visit = cx.run_path().len() - 1;
                cx.say(format!("{name} at visit {visit}"));
                if plan.interrupt_at == Some(visit) {
                    cx.interrupt(serde_json::json!({ "visit": visit }));
                } else if let Some(to) = &plan.script[visit] {
                    cx.transfer(to);
                }
                Ok(())
            }
        })
        .on_resume(move |cx, _, _| {
            let plan = resume_plan.clone();
            async move {
                let visit = cx.run_path().len() - 1;
                if let Some(to) = &plan.script[visit] {
                    cx.transfer(to);
                }
                Ok(())
            }
        }),
    )
}

/// Builds the tree whose node `i > 0` has parent `parents[i - 1]`.
fn build(parents: &[usize], plan: &Plan) -> FlowAgent {
    let n = parents.len() + 1;
    fn node(i: usize, n: usize, parents: &[usize], plan: &Plan) -> FlowAgent {
        let me = agent(format!("n{i}"), plan.clone());
        let children: Vec<FlowAgent> = (1..n)
            .filter(|&c| parents[c - 1] == i)
            .map(|c| node(c, n, parents, plan))
            .collect();
        if children.is_empty() {
            me
        } else {
            set_sub_agents(me, children).unwrap()
        }
    }
    node(0, n, parents, plan)
}

type Record = Vec<(String, String, Option<String>, Option<Action>)>;

fn record_of(
    events: impl IntoIterator<Item = (String, String, Option<String>, Option<Action>)>,
) -> Record {
    events.into_iter().collect()
}

fn tree_and_walk() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, usize)> {
    (1usize..7).prop_flat_map(|extra| {
        let parents = (0..extra).map(|i| 0..=i).collect::<Vec<_>>();
        (
            parents,
            proptest::collection::vec(0usize..8, 0..7),
            any::<usize>(),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn interrupted_and_resumed_equals_uninterrupted(
        (parents, choices, interrupt_pick) in tree_and_walk()
    ) {
        let n = parents.len() + 1;
        let neighbours = |i: usize| -> Vec<usize> {
            let mut out: Vec<usize> = (1..n).filter(|&c| parents[c - 1] == i).collect();
            if i > 0 {
                out.push(parents[i - 1]);
            }
            out
        };
        // Walk the tree: at each visit pick a neighbour by the random choice.
        let mut script = Vec::new();
        let mut at = 0usize;
        for c in &choices {
            let options = neighbours(at);
            let next = options[c % options.len()];
            script.push(Some(format!("n{next}")));
            at = next;
        }
        script.push(None);
        let visits = script.len();
        let script = Arc::new(script);

        let plain = Plan { script: Arc::clone(&script), interrupt_at: None };
        let session = Session::new();
        let runner = Runner::new(build(&parents, &plain));
        let _: Vec<_> = block_on(
            runner
                .run(RunRequest::new([Message::user("go")]).session(Arc::clone(&session)))
                .collect(),
        );
        let expected = record_of(block_on(async {
            let mut out = Vec::new();
            for e in session.events() {
                let m = e.message().await.unwrap();
                out.push((
                    e.agent_name().to_owned(),
                    e.run_path().to_string(),
                    m.map(|m| m.content.clone()),
                    e.action().cloned(),
                ));
            }
            out
        }));
        prop_assert_eq!(expected.len(), 3 * visits - 2);

        let interrupted = Plan { script, interrupt_at: Some(interrupt_pick % visits) };
        let store = InMemoryStore::new();
        let runner = Runner::builder(build(&parents, &interrupted)).checkpoint_store(store.clone()).build();
        let first: Vec<_> = block_on(
            runner
                .run(RunRequest::new([Message::user("go")]).checkpoint("p"))
                .collect(),
        );
        prop_assert!(first.last().unwrap().is_interrupt());
        let resumed: Vec<_> = block_on(async {
            runner.resume(ResumeRequest::new("p", [])).await.unwrap().collect::<Vec<_>>().await
        });
        prop_assert!(resumed.iter().all(|e| e.error.is_none()));
        let saved = block_on(store.get("p")).unwrap().unwrap();
        let done = Checkpoint::decode("p", &saved).unwrap();
        let got = record_of(done.events.into_iter().map(|e| {
            (
                e.agent_name.to_string(),
                e.run_path.to_string(),
                e.message.map(|m| m.content),
                e.action,
            )
        }));
        prop_assert_eq!(got, expected);
    }
}
