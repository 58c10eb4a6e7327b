//! Tool call ids unique within a run, whatever the models send: AG-UI clients key a run's tool
//! calls by `toolCallId` (`HttpAgent` merges two calls with one id), but models number their
//! calls as they like (a scripted model per model, some providers `call_0` every time).
//!
//! A call keeps the model's id the first time the run sees it; the same id again (from another
//! agent, or the same one) goes out as `ID~2`, `ID~3`... Its arguments, end and result follow
//! the call they belong to (by the agent's run path and the model's id), and the front end's
//! answer to a front-end tool call comes back under the id it was sent with: [`model_id`]
//! reads the model's id out of it.

use std::collections::{HashMap, HashSet};

use agentweave_runtime::RunPath;
use serde_json::Value;

/// The tool call ids of one run.
#[derive(Debug, Default)]
pub(crate) struct CallIds {
    /// Every id sent in this run.
    sent: HashSet<String>,
    /// The id sent for each (run path, model's id): the latest call of that pair.
    by_call: HashMap<(String, String), String>,
    /// The id sent for each model's id, latest first (for the pending calls a run ends on).
    latest: HashMap<String, String>,
}

impl CallIds {
    /// The id a new call of `model_id` by the agent at `path` goes out with.
    fn start(&mut self, path: &RunPath, model_id: &str) -> String {
        let base = if model_id.is_empty() {
            "call"
        } else {
            model_id
        };
        let mut id = base.to_owned();
        let mut n = 1;
        while self.sent.contains(&id) {
            n += 1;
            id = format!("{base}~{n}");
        }
        self.sent.insert(id.clone());
        self.by_call
            .insert((path.to_string(), model_id.to_owned()), id.clone());
        self.latest.insert(model_id.to_owned(), id.clone());
        id
    }

    /// The id the call of `model_id` by the agent at `path` went out with (the model's id if
    /// the run never sent it).
    fn of(&self, path: &RunPath, model_id: &str) -> String {
        self.by_call
            .get(&(path.to_string(), model_id.to_owned()))
            .or_else(|| self.latest.get(model_id))
            .cloned()
            .unwrap_or_else(|| model_id.to_owned())
    }

    /// A run that answers a front-end call: its result goes out under `sent`, the id the call
    /// went out with in the run before.
    pub(crate) fn answered(&mut self, model_id: &str, sent: &str) {
        self.sent.insert(sent.to_owned());
        self.latest.insert(model_id.to_owned(), sent.to_owned());
    }

    /// The id a pending front-end call of `model_id` went out with.
    pub(crate) fn pending(&self, model_id: &str) -> String {
        self.latest
            .get(model_id)
            .cloned()
            .unwrap_or_else(|| model_id.to_owned())
    }

    /// Rewrites the `toolCallId` of an AG-UI event of the agent at `path`: a
    /// `TOOL_CALL_START` gets a new unique id; its `ARGS`, `END` and a `TOOL_CALL_RESULT` the
    /// id of the call they belong to.
    pub(crate) fn rewrite(&mut self, event: &mut Value, path: &RunPath) {
        let Some(model_id) = event["toolCallId"].as_str().map(str::to_owned) else {
            return;
        };
        let id = match event["type"].as_str() {
            Some("TOOL_CALL_START") => self.start(path, &model_id),
            Some("TOOL_CALL_ARGS" | "TOOL_CALL_END" | "TOOL_CALL_RESULT") => {
                self.of(path, &model_id)
            }
            _ => return,
        };
        event["toolCallId"] = Value::String(id);
    }
}

/// The model's id of a call id this server sent (`ID~N` is `ID`).
pub(crate) fn model_id(sent: &str) -> &str {
    match sent.rsplit_once('~') {
        Some((id, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => id,
        _ => sent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn repeated_model_ids_go_out_unique_and_their_parts_follow_them() {
        let mut ids = CallIds::default();
        let triage = RunPath::root("triage");
        let refund = triage.child("refund");
        let mut events = [
            (
                json!({"type": "TOOL_CALL_START", "toolCallId": "call_1"}),
                &triage,
            ),
            (
                json!({"type": "TOOL_CALL_END", "toolCallId": "call_1"}),
                &triage,
            ),
            (
                json!({"type": "TOOL_CALL_START", "toolCallId": "call_1"}),
                &refund,
            ),
            (
                json!({"type": "TOOL_CALL_ARGS", "toolCallId": "call_1"}),
                &refund,
            ),
            (
                json!({"type": "TOOL_CALL_RESULT", "toolCallId": "call_1"}),
                &refund,
            ),
            (
                json!({"type": "TOOL_CALL_RESULT", "toolCallId": "call_1"}),
                &triage,
            ),
            (
                json!({"type": "TOOL_CALL_START", "toolCallId": "call_1"}),
                &refund,
            ),
        ];
        for (event, path) in &mut events {
            ids.rewrite(event, path);
        }
        let sent: Vec<&str> = events
            .iter()
            .map(|(e, _)| e["toolCallId"].as_str().unwrap())
            .collect();
        assert_eq!(
            sent,
            ["call_1", "call_1", "call_1~2", "call_1~2", "call_1~2", "call_1", "call_1~3"]
        );
        assert_eq!(ids.pending("call_1"), "call_1~3");
        assert_eq!(model_id("call_1~3"), "call_1");
        assert_eq!(model_id("call~x"), "call~x");
        assert_eq!(model_id("plain"), "plain");
    }
}
