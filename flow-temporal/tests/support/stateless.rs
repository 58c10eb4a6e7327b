//! A scripted model any process answers alike (shared by the tests with and without the SDK:
//! `effects_in_process.rs` includes this file alone).

use flow_runtime::model::{ChatRequest, ScriptStep, ScriptedModel};
use flow_runtime::Role;

/// A model that answers from its script by how many times it has answered in this request's
/// conversation (its assistant messages since the conversation's last user message), so that
/// any process gives the same answer to the same request.
pub fn stateless(script: Vec<ScriptStep>) -> ScriptedModel {
    ScriptedModel::rules().otherwise_with(move |request: &ChatRequest| {
        let since_user = request
            .messages
            .iter()
            .rev()
            .take_while(|m| m.role != Role::User)
            .filter(|m| m.role == Role::Assistant)
            .count();
        script
            .get(since_user)
            .cloned()
            .unwrap_or_else(|| ScriptStep::text("nothing more to say"))
    })
}
