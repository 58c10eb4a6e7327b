//! [`OutputSchema`]: the JSON Schema a request asks the model's final answer to match, and how
//! an answer is decoded against it (see [`crate::structured`] for agents with a declared output).

use std::fmt;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

/// Default number of times a reply that does not decode is sent back to the model.
pub const DEFAULT_OUTPUT_RETRIES: u32 = 2;

/// The type an agent's final answer must have: its JSON Schema, and how to check a reply
/// against it.
#[derive(Clone)]
pub struct OutputSchema {
    /// The schema's name (the type's, made of letters, digits, `_` and `-`, as the OpenAI
    /// protocol requires).
    pub name: String,
    /// The JSON Schema of the answer.
    pub schema: Value,
    /// Whether to ask the server to follow the schema strictly (OpenAI's `strict`; off by
    /// default: strict mode accepts only a subset of JSON Schema).
    pub strict: bool,
    decode: fn(&str) -> Result<Value, serde_json::Error>,
}

impl OutputSchema {
    /// The schema of `T`, decoding answers into `T`.
    ///
    /// ```
    /// use agentweave_runtime::model::OutputSchema;
    /// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// struct Answer { city: String }
    /// let schema = OutputSchema::of::<Answer>();
    /// assert_eq!(schema.name, "Answer");
    /// assert!(schema.decode(r#"{"city": "Oslo"}"#).is_ok());
    /// assert!(schema.decode("Oslo").is_err());
    /// ```
    pub fn of<T: JsonSchema + DeserializeOwned + Serialize>() -> Self {
        let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default();
        if let Some(map) = schema.as_object_mut() {
            // Not part of the answer's shape; some servers refuse `$schema`.
            map.remove("$schema");
        }
        let name: String = T::schema_name()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        OutputSchema {
            name,
            schema,
            strict: false,
            decode: |text| {
                let value: T = serde_json::from_str(json_text(text))?;
                serde_json::to_value(value)
            },
        }
    }

    /// This schema with strict mode on or off.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Decodes an answer into the type, returned as JSON. The text may be wrapped in a
    /// Markdown code fence (```` ```json ````), as models sometimes do.
    pub fn decode(&self, text: &str) -> Result<Value, serde_json::Error> {
        (self.decode)(text)
    }

    /// The `response_format` field of an OpenAI chat-completions request.
    pub fn openai_response_format(&self) -> Value {
        json!({
            "type": "json_schema",
            "json_schema": {
                "name": self.name,
                "schema": self.schema,
                "strict": self.strict,
            }
        })
    }

    /// The message that tells the model its answer did not decode.
    pub(crate) fn correction(&self, error: &serde_json::Error) -> String {
        format!(
            "Your answer did not match the required JSON schema `{}`: {error}. Answer again \
             with only a JSON value that matches the schema.",
            self.name
        )
    }
}

/// The JSON in `text`: trimmed, and out of a Markdown code fence if it is in one.
fn json_text(text: &str) -> &str {
    let text = text.trim();
    let Some(inner) = text.strip_prefix("```") else {
        return text;
    };
    let Some(inner) = inner.strip_suffix("```") else {
        return text;
    };
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    inner.trim()
}

impl PartialEq for OutputSchema {
    /// Schemas are equal when their name, schema and strictness are.
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.schema == other.schema && self.strict == other.strict
    }
}

impl fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputSchema")
            .field("name", &self.name)
            .field("schema", &self.schema)
            .field("strict", &self.strict)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Pair {
        a: u32,
    }

    #[test]
    fn decode_accepts_a_fenced_answer_and_names_the_error_otherwise() {
        let s = OutputSchema::of::<Pair>();
        assert_eq!(
            s.decode("```json\n{\"a\": 1}\n```").unwrap(),
            json!({"a": 1})
        );
        let e = s.decode(r#"{"a": "x"}"#).unwrap_err();
        assert!(s.correction(&e).contains("`Pair`"), "{}", s.correction(&e));
        assert_eq!(
            s.openai_response_format()["json_schema"]["schema"]["required"],
            json!(["a"])
        );
    }
}
