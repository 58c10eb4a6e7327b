//! The cost of a context budget: one run of an LLM agent (one model call) on an input of H
//! earlier messages, with no budget and with a budget it stays under (the check alone: count
//! the request, set nothing aside); then a run whose input is over its budget, so that it
//! compacts (plan the cut, summarise with a function, record the summary) before its call.
//!
//! ```text
//! cargo bench --bench compaction
//! ```

use agentweave::history::ContextBudget;
use agentweave::message::MessageRef;
use agentweave::model::{ScriptStep, ScriptedModel};
use agentweave::prelude::*;
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use futures::StreamExt;

fn runner(budget: Option<ContextBudget>) -> Runner {
    let model = ScriptedModel::rules()
        .otherwise(ScriptStep::text("Noted."))
        .keep_requests(false);
    let mut agent = ChatModelAgent::builder("clerk", model).instruction("You are a clerk.");
    if let Some(budget) = budget {
        agent = agent.context_budget(budget);
    }
    Runner::new(FlowAgent::new(agent.build().expect("valid agent")))
}

fn summarizer() -> impl agentweave::history::Summarizer {
    |_: &str, older: &[MessageRef]| Ok::<_, String>(format!("{} earlier messages.", older.len()))
}

fn history(h: usize) -> Vec<Message> {
    (0..h)
        .map(|i| {
            if i % 2 == 0 {
                Message::user(format!("earlier user message {i}"))
            } else {
                Message::assistant(format!("earlier reply {i}"))
            }
        })
        .collect()
}

/// Runs once; returns the number of events (checked, so the run is not optimised away).
async fn run(runner: &Runner, input: Vec<Message>) -> usize {
    let mut events = runner.run(input);
    let mut n = 0;
    while let Some(e) = events.next().await {
        assert!(e.error.is_none(), "{:?}", e.error);
        n += 1;
    }
    n
}

fn budget_check(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("context_budget");
    for h in [10, 100, 1000] {
        let input = history(h);
        let cases = [
            ("none", runner(None), 1),
            (
                "under_budget",
                runner(Some(
                    ContextBudget::new(usize::MAX / 2, summarizer())
                        .set_aside_tool_results_over(500),
                )),
                1,
            ),
            // Over: the input alone takes about 10 tokens a message (at H = 10 the summary
            // itself would not fit half of it).
            (
                "compacting",
                runner(Some(ContextBudget::new(5 * h, summarizer()))),
                2,
            ),
        ];
        for (label, runner, events) in cases.iter().filter(|c| h > 10 || c.0 != "compacting") {
            assert_eq!(rt.block_on(run(runner, input.clone())), *events, "{label}");
            group.bench_with_input(BenchmarkId::new(*label, h), &input, |b, input| {
                b.iter_batched(
                    || input.clone(),
                    |input| rt.block_on(run(runner, input)),
                    BatchSize::SmallInput,
                )
            });
        }
    }
    group.finish();
}

criterion_group!(benches, budget_check);
criterion_main!(benches);
