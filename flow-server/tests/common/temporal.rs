//! What the Temporal tests share (`it`'s module `temporal` and the `temporal_kill` binary): the
//! dev server's address and a client of it, unique names, a model every process answers alike,
//! and the payment tool's arguments.
#![allow(dead_code)]

use std::time::Duration;

use agentweave_runtime::model::{ScriptRules, ScriptStep, ScriptedModel};
use agentweave_runtime::testing::skip_missing_component;

/// Where the dev server is (as `.ci/temporal.sh` exports it).
pub const ADDRESS_ENV: &str = "AGENTFLOW_TEMPORAL_ADDRESS";

/// The dev server's address: `AGENTFLOW_TEMPORAL_ADDRESS`, else the default port.
pub fn address() -> String {
    std::env::var(ADDRESS_ENV).unwrap_or_else(|_| agentweave_temporal::DEFAULT_ADDRESS.into())
}

/// A client of the dev server, or `None` after saying why the test is skipped (a failure in CI,
/// `AGENTFLOW_REQUIRE_COMPONENTS=1`).
pub async fn dev_server() -> Option<temporalio_client::Client> {
    let address = address();
    let why = match tokio::time::timeout(
        Duration::from_secs(10),
        agentweave_temporal::connect(&address),
    )
    .await
    {
        Ok(Ok(client)) => return Some(client),
        Ok(Err(e)) => e.to_string(),
        Err(_) => format!("{address} did not answer in 10 s"),
    };
    skip_missing_component(
        "the Temporal dev server",
        &format!("{why}; run .ci/temporal.sh or set {ADDRESS_ENV}"),
    );
    None
}

/// `prefix` and a token unique to this run.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", agentweave_runtime::ids::unique_token())
}

/// A model any process answers alike: by how many times it answered since the request's last
/// user message ([`ScriptRules::per_turn`]).
pub fn stateless(script: Vec<ScriptStep>) -> ScriptedModel {
    ScriptRules::per_turn(script, "nothing more to say").build()
}

/// The payment tools' arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct PayArgs {
    /// How much.
    pub amount: u32,
}
