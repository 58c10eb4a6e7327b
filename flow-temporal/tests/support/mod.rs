//! What the Temporal tests share: the dev server (skipped locally when none answers, required
//! in CI), a worker on a task queue of the test's own, and the flows they run (scripted models
//! that answer from the request, so any worker process gives the same answer).

#![allow(dead_code)]

mod stateless;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentweave_runtime::model::ScriptStep;
use agentweave_runtime::testing::skip_missing_component;
use agentweave_runtime::{
    set_sub_agents, tool_fn, tool_fn_with_context, ChatModelAgent, FlowAgent, NeedsApproval,
    ToolContext, ToolError,
};
use serde::Deserialize;
use serde_json::json;
use temporalio_client::Client;

/// The environment variable naming the dev server (`http://host:port`); `.ci/temporal.sh`
/// exports it.
pub const ADDRESS_ENV: &str = "AGENTFLOW_TEMPORAL_ADDRESS";

pub fn address() -> String {
    std::env::var(ADDRESS_ENV).unwrap_or_else(|_| agentweave_temporal::DEFAULT_ADDRESS.into())
}

/// A client of the dev server, or `None` (after saying why the test is skipped).
pub async fn server() -> Option<Client> {
    let address = address();
    match tokio::time::timeout(
        Duration::from_secs(10),
        agentweave_temporal::connect(&address),
    )
    .await
    {
        Ok(Ok(client)) => Some(client),
        Ok(Err(e)) => {
            skip_missing_component(
                "the Temporal dev server",
                &format!(
                    "none answers at {address} ({e}); start one with `temporal server start-dev \
                     --headless --ip 127.0.0.1 --port 7233` or set {ADDRESS_ENV}"
                ),
            );
            None
        }
        Err(_) => {
            skip_missing_component(
                "the Temporal dev server",
                &format!("{address} did not answer in 10 s; set {ADDRESS_ENV}"),
            );
            None
        }
    }
}

/// A name unique to this test run (task queues, workflow ids, flow names).
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", agentweave_runtime::ids::unique_token())
}

/// Starts a worker of `task_queue` in this process, on a thread of its own (the SDK's worker
/// future is not `Send`); it runs until the process ends.
pub fn start_worker(client: &Client, task_queue: &str) {
    let client = client.clone();
    let queue = task_queue.to_owned();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        if let Err(e) = runtime.block_on(agentweave_temporal::run_worker(client, &queue)) {
            panic!("the worker of {queue} failed: {e}");
        }
    });
}

pub use stateless::stateless;

#[derive(Deserialize, schemars::JsonSchema)]
pub struct PayArgs {
    pub amount: u32,
}

/// A ledger on disk, shared by every process of a test: one line per call of the paying tool,
/// `KEY AMOUNT` (a payment service keeps one payment per key).
#[derive(Debug, Clone)]
pub struct Ledger(pub PathBuf);

impl Ledger {
    pub fn new() -> Self {
        let path = std::env::temp_dir().join(unique("agentweave-temporal-ledger"));
        std::fs::write(&path, "").unwrap();
        Ledger(path)
    }

    pub fn at(path: &Path) -> Self {
        Ledger(path.to_owned())
    }

    fn append(&self, key: &str, amount: u32) {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.0)
            .unwrap();
        writeln!(file, "{key} {amount}").unwrap();
        file.sync_all().unwrap();
    }

    fn starts_path(&self) -> PathBuf {
        self.0.with_extension("starts")
    }

    /// Notes that this process started a call under `key`.
    fn started(&self, key: &str) {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.starts_path())
            .unwrap();
        writeln!(file, "{} {key}", std::process::id()).unwrap();
        file.sync_all().unwrap();
    }

    /// The calls started: (process id, key).
    pub fn starts(&self) -> Vec<(u32, String)> {
        std::fs::read_to_string(self.starts_path())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let (pid, key) = l.split_once(' ')?;
                Some((pid.parse().ok()?, key.to_owned()))
            })
            .collect()
    }

    /// Every call made: (key, amount).
    pub fn calls(&self) -> Vec<(String, u32)> {
        std::fs::read_to_string(&self.0)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let (key, amount) = l.rsplit_once(' ')?;
                Some((key.to_owned(), amount.parse().ok()?))
            })
            .collect()
    }

    /// The payments: one per key.
    pub fn payments(&self) -> std::collections::BTreeMap<String, u32> {
        self.calls().into_iter().collect()
    }
}

/// The desk: `desk` transfers to `billing`, which pays `amount` (after `pay_delay`, the window a
/// kill test aims at) under the call's idempotency key, then says it is done.
pub fn desk(ledger: &Ledger, amount: u32, pay_delay: Duration) -> FlowAgent {
    let ledger = ledger.clone();
    let pay = tool_fn_with_context(
        "pay",
        "Pays an amount.",
        move |cx: ToolContext, args: PayArgs| {
            let ledger = ledger.clone();
            async move {
                ledger.started(&cx.idempotency_key());
                tokio::time::sleep(pay_delay).await;
                ledger.append(&cx.idempotency_key(), args.amount);
                Ok::<_, ToolError>(format!("paid {}", args.amount))
            }
        },
    );
    let billing = ChatModelAgent::builder(
        "billing",
        stateless(vec![
            ScriptStep::tool_call("pay", json!({ "amount": amount })),
            ScriptStep::text(format!("billing paid {amount}")),
        ]),
    )
    .description("Pays bills.")
    .tool(pay)
    .build()
    .unwrap();
    let desk = ChatModelAgent::builder("desk", stateless(vec![ScriptStep::transfer("billing")]))
        .description("The front desk.")
        .build()
        .unwrap();
    set_sub_agents(FlowAgent::new(desk), [FlowAgent::new(billing)]).unwrap()
}

/// A clerk whose `refund` tool needs a human's approval before it runs.
pub fn clerk(ledger: &Ledger) -> FlowAgent {
    let ledger = ledger.clone();
    let refund = tool_fn_with_context(
        "refund",
        "Refunds an amount.",
        move |cx: ToolContext, args: PayArgs| {
            let ledger = ledger.clone();
            async move {
                ledger.append(&cx.idempotency_key(), args.amount);
                Ok::<_, ToolError>(format!("refunded {}", args.amount))
            }
        },
    );
    let lookup = tool_fn(
        "lookup",
        "Looks an order up.",
        |_: serde_json::Value| async { Ok::<_, ToolError>("order 7: 5 EUR".to_string()) },
    );
    let clerk = ChatModelAgent::builder(
        "clerk",
        stateless(vec![
            ScriptStep::tool_call("lookup", json!({})),
            ScriptStep::tool_call("refund", json!({ "amount": 5 })),
            ScriptStep::text("the refund is handled"),
        ]),
    )
    .tool(lookup)
    .tool(NeedsApproval::always(std::sync::Arc::new(refund)))
    .build()
    .unwrap();
    FlowAgent::new(clerk)
}
