//! [`ModelParams`]: sampling parameters sent with a [`ChatRequest`](super::ChatRequest).

use serde::{Deserialize, Serialize};

/// Sampling parameters of one model call. Each is optional: an unset one is not sent and the
/// model's own default applies. A [`ChatModelAgent`](crate::ChatModelAgent) sends its own
/// ([`model_params`](crate::ChatModelAgentBuilder::model_params)), overridden field by field by
/// the [run options](crate::AgentRunOptions) addressed to it.
///
/// ```
/// use agentweave_runtime::model::ModelParams;
/// let agent = ModelParams { temperature: Some(0.2), max_tokens: Some(500), ..Default::default() };
/// let run = ModelParams { temperature: Some(0.0), ..Default::default() };
/// let sent = agent.overridden_by(&run);
/// assert_eq!((sent.temperature, sent.max_tokens), (Some(0.0), Some(500)));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelParams {
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// The most tokens the answer may have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Nucleus sampling: the probability mass to sample from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    /// Sequences that end the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Vec<String>>,
}

impl ModelParams {
    /// These parameters, with each one `over` sets replacing this one's.
    pub fn overridden_by(&self, over: &ModelParams) -> ModelParams {
        ModelParams {
            temperature: over.temperature.or(self.temperature),
            max_tokens: over.max_tokens.or(self.max_tokens),
            top_p: over.top_p.or(self.top_p),
            stop: over.stop.clone().or_else(|| self.stop.clone()),
        }
    }

    /// Whether no parameter is set.
    pub fn is_empty(&self) -> bool {
        *self == ModelParams::default()
    }
}
