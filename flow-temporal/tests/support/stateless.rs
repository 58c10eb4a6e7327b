//! A scripted model any process answers alike (shared by the tests with and without the SDK:
//! `effects_in_process.rs` includes this file alone).

use agentweave_runtime::model::{ScriptRules, ScriptStep, ScriptedModel};

/// A model that answers from its script by how many times it has answered in this request's
/// conversation (its assistant messages since the conversation's last user message), so that
/// any process gives the same answer to the same request.
pub fn stateless(script: Vec<ScriptStep>) -> ScriptedModel {
    ScriptRules::per_turn(script, "nothing more to say").build()
}
