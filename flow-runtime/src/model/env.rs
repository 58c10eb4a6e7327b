//! [`EnvModels`]: each agent's model chosen from the environment, scripted when none is
//! configured ("offline unless configured", written once instead of in every app).

use std::sync::Arc;

use super::{ChatModel, ModelError, ScriptedModel};

/// Chooses each agent's model from the environment, with a scripted fallback.
///
/// A real model is configured when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set and the
/// `openai` cargo feature is on. Then agent `refund` gets an OpenAI-compatible model named by
/// `OPENAI_MODEL_REFUND` (the agent's name upper-cased, `-` and `.` as `_`), or else by
/// `OPENAI_MODEL`, at `OPENAI_BASE_URL` with `OPENAI_API_KEY` (see `OpenAiConfig::from_env`).
/// Otherwise every agent gets the [`ScriptedModel`] its code gives: the app runs offline and
/// deterministically.
///
/// ```
/// use agentweave_runtime::model::{EnvModels, ScriptStep, ScriptedModel};
///
/// // Offline (no OPENAI_* variable set in this test): the script answers.
/// let models = EnvModels::offline();
/// assert!(!models.is_live());
/// let model = models
///     .model_for("refund", ScriptedModel::new([ScriptStep::text("refunded")]))
///     .unwrap();
/// assert_eq!(model.model_name(), "scripted");
/// assert_eq!(EnvModels::variable_for("refund-desk"), "OPENAI_MODEL_REFUND_DESK");
/// ```
#[derive(Debug, Clone)]
pub struct EnvModels {
    live: bool,
}

impl EnvModels {
    /// Reads the environment: live when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set and this
    /// build has the `openai` feature.
    pub fn from_env() -> Self {
        let configured = std::env::var_os("OPENAI_API_KEY").is_some()
            || std::env::var_os("OPENAI_BASE_URL").is_some();
        EnvModels {
            live: configured && cfg!(feature = "openai"),
        }
    }

    /// Scripted models for every agent, whatever the environment says.
    pub fn offline() -> Self {
        EnvModels { live: false }
    }

    /// Whether agents get real models (else their scripts).
    pub fn is_live(&self) -> bool {
        self.live
    }

    /// Whether the environment asks for real models that this build cannot give (the
    /// `openai` feature is off): worth telling the user.
    pub fn asked_without_support() -> bool {
        (std::env::var_os("OPENAI_API_KEY").is_some()
            || std::env::var_os("OPENAI_BASE_URL").is_some())
            && !cfg!(feature = "openai")
    }

    /// The variable naming agent `agent`'s own model: `OPENAI_MODEL_` and the name
    /// upper-cased, with every character other than a letter or digit as `_`.
    pub fn variable_for(agent: &str) -> String {
        let mut name = String::from("OPENAI_MODEL_");
        name.extend(agent.chars().map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        }));
        name
    }

    /// The model name agent `agent` gets when live: its own variable, else `OPENAI_MODEL`,
    /// else the client's default.
    pub fn model_name_for(agent: &str) -> Option<String> {
        std::env::var(Self::variable_for(agent))
            .ok()
            .filter(|v| !v.is_empty())
            .or_else(|| std::env::var("OPENAI_MODEL").ok().filter(|v| !v.is_empty()))
    }

    /// Agent `agent`'s model: the configured one when live, else `scripted`. An error if the
    /// configured client cannot be made (its TLS setup failed, for instance).
    pub fn model_for(
        &self,
        agent: &str,
        scripted: ScriptedModel,
    ) -> Result<Arc<dyn ChatModel>, ModelError> {
        if !self.live {
            return Ok(Arc::new(scripted));
        }
        self.live_model(agent)
    }

    #[cfg(feature = "openai")]
    fn live_model(&self, agent: &str) -> Result<Arc<dyn ChatModel>, ModelError> {
        let mut config = super::OpenAiConfig::from_env();
        if let Some(model) = Self::model_name_for(agent) {
            config.model = model;
        }
        Ok(Arc::new(super::OpenAiChatModel::new(config)?))
    }

    #[cfg(not(feature = "openai"))]
    fn live_model(&self, _agent: &str) -> Result<Arc<dyn ChatModel>, ModelError> {
        unreachable!("EnvModels is live only with the openai feature")
    }

    /// One line saying what the agents run on, for an app to print at start.
    pub fn describe(&self) -> String {
        if !self.live {
            return if Self::asked_without_support() {
                "offline: scripted models (OPENAI_* is set, but this build has no `openai` \
                 feature)"
                    .to_owned()
            } else {
                "offline: scripted models (set OPENAI_API_KEY or OPENAI_BASE_URL and build with \
                 the `openai` feature for a real model)"
                    .to_owned()
            };
        }
        self.live_description()
    }

    #[cfg(feature = "openai")]
    fn live_description(&self) -> String {
        let config = super::OpenAiConfig::from_env();
        format!(
            "live: {} at {} (OPENAI_MODEL_<AGENT> picks one agent's model)",
            config.model, config.base_url
        )
    }

    #[cfg(not(feature = "openai"))]
    fn live_description(&self) -> String {
        unreachable!("EnvModels is live only with the openai feature")
    }
}
