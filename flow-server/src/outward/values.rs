//! A run's session values as a client sees them: the application's values, without the
//! framework's own.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::Value;

/// The key prefix of the framework's own session values (token usage, transfer payloads,
/// task results): `agentweave` itself and every key starting with `agentflow.`.
const RESERVED: &str = "agentflow";

/// The session values a client may see: every value the application's agents and tools set
/// (and a client gave), ordered by key. The framework's own values (keys `agentweave` and
/// `agentflow.*`: token usage, transfer payloads, task results) stay inside, and so does
/// everything that is not a session value (agents' saved state, checkpoints).
///
/// ```
/// use std::collections::HashMap;
/// use agentweave_server::outward::OutwardValues;
/// let values = HashMap::from([
///     ("cart".to_owned(), serde_json::json!(["kettle"])),
///     ("agentflow.usage".to_owned(), serde_json::json!({"total": 12})),
/// ]);
/// let outward = serde_json::to_value(OutwardValues::of(&values)).unwrap();
/// assert_eq!(outward, serde_json::json!({"cart": ["kettle"]}));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct OutwardValues(pub BTreeMap<String, Value>);

impl OutwardValues {
    /// The outward form of a session's `values`.
    pub fn of(values: &HashMap<String, Value>) -> Self {
        OutwardValues(
            values
                .iter()
                .filter(|(k, _)| !Self::is_reserved(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )
    }

    /// Whether `key` names one of the framework's own values, which a client neither sees nor
    /// sets.
    pub fn is_reserved(key: &str) -> bool {
        key.strip_prefix(RESERVED)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frameworks_values_stay_inside() {
        assert!(OutwardValues::is_reserved("agentflow"));
        assert!(OutwardValues::is_reserved("agentflow.task_result.triage"));
        assert!(!OutwardValues::is_reserved("agentflowers"));
        assert!(!OutwardValues::is_reserved("cart"));
    }
}
