//! Transfer payloads: [`Payload`], the data an agent declares it receives with a transfer
//! (`FlowAgent::accepts`, `#[agent(accepts = T)]`), checked where the transfer is made.

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;

use crate::model::OutputSchema;

/// Checks that a value decodes as a payload's type (the error in words).
type PayloadCheck = Arc<dyn Fn(&serde_json::Value) -> Result<(), String> + Send + Sync>;

/// The payload a node receives with a transfer to it: its type's name and JSON Schema, and a
/// check that a value decodes as that type. An LLM agent's transfer tool offers the schema and
/// answers a payload that does not decode as a tool error the model can correct.
#[derive(Clone)]
pub struct Payload {
    /// The type's name.
    pub type_name: Arc<str>,
    /// Its JSON Schema.
    pub schema: serde_json::Value,
    check: PayloadCheck,
}

impl Payload {
    /// The payload of type `T`.
    pub fn of<T: DeserializeOwned + serde::Serialize + schemars::JsonSchema + 'static>() -> Self {
        let schema = OutputSchema::of::<T>();
        Payload {
            type_name: Arc::from(schema.name.as_str()),
            schema: schema.schema,
            check: Arc::new(|value| {
                serde_json::from_value::<T>(value.clone())
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }),
        }
    }

    /// Whether `value` decodes as the payload's type; the error says why not.
    pub fn check(&self, value: &serde_json::Value) -> Result<(), String> {
        (self.check)(value)
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Payload")
            .field("type_name", &self.type_name)
            .finish_non_exhaustive()
    }
}

/// The session value under which the payload of the last transfer to `agent` is kept.
pub(crate) fn payload_key(agent: &str) -> String {
    format!("agentflow.transfer_payload.{agent}")
}

/// The payload a transfer call carries: the `payload` argument of a `transfer_to_agent` call.
pub(crate) fn payload_of_call(message: &crate::message::Message) -> Option<serde_json::Value> {
    let call = message
        .tool_calls
        .iter()
        .find(|c| c.name == crate::transfer::TRANSFER_TOOL_NAME)?;
    let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
    args.get("payload").filter(|p| !p.is_null()).cloned()
}
