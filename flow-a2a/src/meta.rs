//! agentflow's entry in A2A metadata, written by an agentflow server and read by an agentflow
//! client: `{"agentflow": {"agent": NAME, "runPath": "triage/refund"}}` names the agent that
//! said a message and where it stands in the remote tree.

use serde_json::{json, Map, Value};

/// The key of agentflow's entry in A2A metadata.
pub const METADATA_KEY: &str = "agentflow";

/// The metadata naming `agent` at `run_path` (agent names joined by `/`).
pub fn path_metadata(agent: &str, run_path: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        METADATA_KEY.into(),
        json!({ "agent": agent, "runPath": run_path }),
    );
    m
}

/// The run path named in `metadata` by [`path_metadata`], as its agent names.
pub fn run_path_of(metadata: Option<&Map<String, Value>>) -> Option<Vec<String>> {
    let path = metadata?.get(METADATA_KEY)?.get("runPath")?.as_str()?;
    if path.is_empty() {
        return None;
    }
    Some(path.split('/').map(str::to_owned).collect())
}

/// The agent named in `metadata` by [`path_metadata`].
pub fn agent_of(metadata: Option<&Map<String, Value>>) -> Option<&str> {
    metadata?.get(METADATA_KEY)?.get("agent")?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_path_goes_into_metadata_and_back() {
        let m = path_metadata("refund", "triage/refund");
        assert_eq!(run_path_of(Some(&m)).unwrap(), ["triage", "refund"]);
        assert_eq!(agent_of(Some(&m)), Some("refund"));
        assert_eq!(run_path_of(None), None);
        assert_eq!(run_path_of(Some(&path_metadata("a", ""))), None);
    }
}
