//! The system prompt of a [`ChatModelAgent`](crate::ChatModelAgent): its instruction, a
//! template over session values or a function of the run, and the transfer instructions added
//! when the agent can transfer.
//!
//! # Templates
//!
//! An instruction given as text is a template: `{key}` is replaced by the session value `key`
//! of the run (a string as it is, any other JSON value as JSON text); `{{` and `}}` are literal
//! braces. A key is made of letters, digits, `_`, `-` and `.`. A value that is not set when the
//! agent runs ends its run with [`InstructionError::MissingValue`], naming the key and the
//! agent; a template that cannot be read (an unclosed `{`, a lone `}`, an empty or invalid key)
//! is refused when the agent is built.
//!
//! ```
//! # futures::executor::block_on(async {
//! use agentweave_runtime::model::{ScriptStep, ScriptedModel};
//! use agentweave_runtime::{ChatModelAgent, FlowAgent, Message, RunRequest, Runner, Session};
//! use futures::StreamExt;
//! use std::sync::Arc;
//!
//! let model = ScriptedModel::new([ScriptStep::text("Hello Ada.")]);
//! let agent = ChatModelAgent::builder("greeter", model.clone())
//!     .instruction("Greet {user} by name. Answer as JSON: {{\"greeting\": ...}}")
//!     .build()
//!     .unwrap();
//! let session = Session::new();
//! session.set_value("user", "Ada").unwrap();
//! let _: Vec<_> = Runner::new(FlowAgent::new(agent))
//!     .run(RunRequest::new([Message::user("hi")]).session(session))
//!     .collect()
//!     .await;
//! assert_eq!(
//!     model.requests()[0].messages[0].content,
//!     "Greet Ada by name. Answer as JSON: {\"greeting\": ...}"
//! );
//! # });
//! ```
//!
//! For anything more, [`instruction_fn`](crate::ChatModelAgentBuilder::instruction_fn) takes a
//! function of the run's [`RunContext`] (session values, run path, root input).
//!
//! # Transfer instructions
//!
//! When the agent runs at a node with transfer targets, its system message gains a block that
//! lists the agents it may transfer to, with their descriptions, and the rule to follow:
//! answer yourself, or call `transfer_to_agent` (see [`default_transfer_instructions`]). Real
//! models rarely transfer well from the tool's schema alone. It is on by default; replace it
//! with [`transfer_instructions_with`](crate::ChatModelAgentBuilder::transfer_instructions_with)
//! or turn it off with [`transfer_instructions`](crate::ChatModelAgentBuilder::transfer_instructions).

use std::fmt;
use std::sync::Arc;

use crate::agent::{AgentInfo, RunContext};
use crate::transfer::TRANSFER_TOOL_NAME;

/// Why a [`ChatModelAgent`](crate::ChatModelAgent)'s instruction could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InstructionError {
    /// The template names a session value the run does not have.
    #[error(
        "agent '{agent}' cannot build its instruction: the session value '{key}' named by \
         `{{{key}}}` is not set; set it before the run (Session::set_value), or write literal \
         braces as `{{{{` and `}}}}`"
    )]
    MissingValue {
        /// The agent.
        agent: Arc<str>,
        /// The key.
        key: Arc<str>,
    },
    /// The template cannot be read (found when the agent is built).
    #[error("agent '{agent}' has an instruction template that cannot be read: {message}")]
    Template {
        /// The agent.
        agent: Arc<str>,
        /// What is wrong, and where.
        message: Arc<str>,
    },
    /// The instruction function failed.
    #[error("agent '{agent}' could not build its instruction: {message}")]
    Function {
        /// The agent.
        agent: Arc<str>,
        /// The function's error.
        message: Arc<str>,
    },
}

impl InstructionError {
    /// The agent whose instruction could not be made.
    pub fn agent(&self) -> &Arc<str> {
        match self {
            InstructionError::MissingValue { agent, .. }
            | InstructionError::Template { agent, .. }
            | InstructionError::Function { agent, .. } => agent,
        }
    }
}

/// An instruction function: builds the instruction from the run (see
/// [`instruction_fn`](crate::ChatModelAgentBuilder::instruction_fn)); an `Err` ends the run
/// with [`InstructionError::Function`].
pub type InstructionFn = dyn Fn(&RunContext) -> Result<String, String> + Send + Sync;

/// Makes the transfer instructions from the agent's transfer targets (see
/// [`transfer_instructions_with`](crate::ChatModelAgentBuilder::transfer_instructions_with)).
pub type TransferInstructionsFn = dyn Fn(&[AgentInfo]) -> String + Send + Sync;

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    Text(String),
    Key(String),
}

/// An instruction: a template over session values, or a function of the run.
#[derive(Clone)]
pub(crate) enum Instruction {
    Template(Arc<[Part]>),
    Function(Arc<InstructionFn>),
}

impl Default for Instruction {
    fn default() -> Self {
        Instruction::Template(Arc::from([]))
    }
}

impl fmt::Debug for Instruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Instruction::Template(parts) => f.debug_tuple("Template").field(parts).finish(),
            Instruction::Function(_) => f.write_str("Function(..)"),
        }
    }
}

impl Instruction {
    /// Parses a template; the error says what is wrong and at which byte.
    pub(crate) fn template(text: &str) -> Result<Self, String> {
        parse(text).map(|parts| Instruction::Template(parts.into()))
    }

    /// The text, if it does not depend on the run.
    pub(crate) fn fixed(&self) -> Option<String> {
        match self {
            Instruction::Template(parts) => parts
                .iter()
                .map(|p| match p {
                    Part::Text(t) => Some(t.as_str()),
                    Part::Key(_) => None,
                })
                .collect::<Option<String>>(),
            Instruction::Function(_) => None,
        }
    }

    /// The instruction for this run.
    pub(crate) fn render(&self, agent: &str, cx: &RunContext) -> Result<String, InstructionError> {
        match self {
            Instruction::Function(f) => f(cx).map_err(|message| InstructionError::Function {
                agent: agent.into(),
                message: message.into(),
            }),
            Instruction::Template(parts) => {
                let mut out = String::new();
                for part in parts.iter() {
                    match part {
                        Part::Text(t) => out.push_str(t),
                        Part::Key(key) => {
                            let value = cx
                                .session()
                                .value::<serde_json::Value>(key)
                                .ok()
                                .flatten()
                                .ok_or_else(|| InstructionError::MissingValue {
                                    agent: agent.into(),
                                    key: key.as_str().into(),
                                })?;
                            match value {
                                serde_json::Value::String(s) => out.push_str(&s),
                                other => out.push_str(&other.to_string()),
                            }
                        }
                    }
                }
                Ok(out)
            }
        }
    }
}

fn parse(text: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '{' if chars.peek().map(|&(_, n)| n) == Some('{') => {
                chars.next();
                literal.push('{');
            }
            '}' if chars.peek().map(|&(_, n)| n) == Some('}') => {
                chars.next();
                literal.push('}');
            }
            '{' => {
                let mut key = String::new();
                let closed = loop {
                    match chars.next() {
                        Some((_, '}')) => break true,
                        Some((_, k)) => key.push(k),
                        None => break false,
                    }
                };
                if !closed {
                    return Err(format!(
                        "the `{{` at byte {at} is never closed; write `{{{{` for a literal brace"
                    ));
                }
                let valid = !key.is_empty()
                    && key
                        .chars()
                        .all(|k| k.is_alphanumeric() || matches!(k, '_' | '-' | '.'));
                if !valid {
                    return Err(format!(
                        "`{{{key}}}` at byte {at} is not a session value key (letters, digits, \
                         `_`, `-`, `.`); write `{{{{` and `}}}}` for literal braces"
                    ));
                }
                if !literal.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut literal)));
                }
                parts.push(Part::Key(key));
            }
            '}' => {
                return Err(format!(
                    "the `}}` at byte {at} closes nothing; write `}}}}` for a literal brace"
                ));
            }
            c => literal.push(c),
        }
    }
    if !literal.is_empty() {
        parts.push(Part::Text(literal));
    }
    Ok(parts)
}

/// Whether and how a [`ChatModelAgent`](crate::ChatModelAgent) that can transfer says so in
/// its system message.
#[derive(Clone, Default)]
pub(crate) enum TransferInstructions {
    /// [`default_transfer_instructions`].
    #[default]
    Default,
    /// None.
    Off,
    /// The user's.
    Custom(Arc<TransferInstructionsFn>),
}

impl fmt::Debug for TransferInstructions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TransferInstructions::Default => "Default",
            TransferInstructions::Off => "Off",
            TransferInstructions::Custom(_) => "Custom(..)",
        })
    }
}

impl TransferInstructions {
    /// The block for these targets (none when there are no targets or it is off).
    pub(crate) fn text(&self, targets: &[AgentInfo]) -> Option<String> {
        if targets.is_empty() {
            return None;
        }
        let text = match self {
            TransferInstructions::Default => default_transfer_instructions(targets),
            TransferInstructions::Off => return None,
            TransferInstructions::Custom(f) => f(targets),
        };
        (!text.is_empty()).then_some(text)
    }
}

/// The transfer instructions a [`ChatModelAgent`](crate::ChatModelAgent) adds to its system
/// message when it can transfer: the agents it may transfer to, one a line with their
/// descriptions, and the decision rule.
///
/// ```
/// use std::sync::Arc;
/// use agentweave_runtime::{default_transfer_instructions, AgentInfo};
/// let targets = [
///     AgentInfo { name: Arc::from("refund"), description: Arc::from("Refunds orders.") },
///     AgentInfo { name: Arc::from("triage"), description: Arc::from("") },
/// ];
/// assert_eq!(
///     default_transfer_instructions(&targets),
///     "You can transfer the conversation to these agents:\n\
///      - refund: Refunds orders.\n\
///      - triage\n\
///      If you can answer the request yourself, answer it. If one of these agents is better \
///      placed to handle it, call the `transfer_to_agent` tool with that agent's name and \
///      do not answer it yourself."
/// );
/// ```
pub fn default_transfer_instructions(targets: &[AgentInfo]) -> String {
    let mut text = String::from("You can transfer the conversation to these agents:");
    for t in targets {
        text.push_str("\n- ");
        text.push_str(&t.name);
        if !t.description.is_empty() {
            text.push_str(": ");
            text.push_str(&t.description);
        }
    }
    text.push_str(&format!(
        "\nIf you can answer the request yourself, answer it. If one of these agents is better \
         placed to handle it, call the `{TRANSFER_TOOL_NAME}` tool with that agent's name and \
         do not answer it yourself."
    ));
    text
}

/// The system message text: the instruction, then the transfer block, a blank line apart.
pub(crate) fn system_text(instruction: &str, transfer: Option<&str>) -> Option<String> {
    match (instruction.is_empty(), transfer) {
        (true, None) => None,
        (false, None) => Some(instruction.to_owned()),
        (true, Some(t)) => Some(t.to_owned()),
        (false, Some(t)) => Some(format!("{instruction}\n\n{t}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_parse_keys_and_escapes() {
        assert_eq!(
            parse("Hi {user}, {{x}} {a.b-c_1}").unwrap(),
            [
                Part::Text("Hi ".into()),
                Part::Key("user".into()),
                Part::Text(", {x} ".into()),
                Part::Key("a.b-c_1".into()),
            ]
        );
        assert_eq!(
            parse("a {b c} d").unwrap_err(),
            "`{b c}` at byte 2 is not a session value key (letters, digits, `_`, `-`, `.`); \
             write `{{` and `}}` for literal braces"
        );
        assert_eq!(
            parse("a {b").unwrap_err(),
            "the `{` at byte 2 is never closed; write `{{` for a literal brace"
        );
        assert_eq!(
            parse("a } b").unwrap_err(),
            "the `}` at byte 2 closes nothing; write `}}` for a literal brace"
        );
        assert!(parse("{}").is_err());
    }
}
