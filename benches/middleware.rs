//! The cost of middleware: one run of an LLM agent that calls a tool once (two model calls,
//! one tool call), with no middleware and with one pass-through middleware on the runner
//! (so it wraps the agent run, both model calls and the tool call: four wrapped calls).
//!
//! ```text
//! cargo bench --bench middleware
//! ```

use std::time::Instant;

use agentweave::async_trait;
use agentweave::middleware::Middleware;
use agentweave::model::{ScriptStep, ScriptedModel};
use agentweave::prelude::*;
use agentweave::run::RunnerBuilder;
use criterion::{criterion_group, criterion_main, Criterion};
use futures::StreamExt;

/// Implements no hook: every hook is the trait's default, which changes nothing.
struct PassThrough;

#[async_trait]
impl Middleware for PassThrough {}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Order {
    /// The order.
    order_id: u32,
}

fn runner(middleware: bool) -> Runner {
    let model = ScriptedModel::rules()
        .after_tool("lookup_order", ScriptStep::text("Order 42 is a kettle."))
        .otherwise(ScriptStep::tool_call(
            "lookup_order",
            serde_json::json!({"order_id": 42}),
        ))
        .keep_requests(false);
    let agent = ChatModelAgent::builder("clerk", model)
        .tool(tool_fn(
            "lookup_order",
            "Looks up an order.",
            |o: Order| async move { Ok::<_, String>(format!("order {}: a kettle", o.order_id)) },
        ))
        .build()
        .expect("valid agent");
    let runner = Runner::new(FlowAgent::new(agent));
    if middleware {
        RunnerBuilder::from(runner).middleware(PassThrough).build()
    } else {
        runner
    }
}

fn tool_round_trip(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("middleware_tool_round_trip");
    for (label, middleware) in [("none", false), ("one_pass_through", true)] {
        let runner = runner(middleware);
        let events = rt.block_on(runner.run("Where is order 42?").count());
        assert_eq!(events, 3, "a tool call, its result, the answer");
        group.bench_function(label, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        std::hint::black_box(runner.run("Where is order 42?").count().await);
                    }
                    start.elapsed()
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, tool_round_trip);
criterion_main!(benches);
