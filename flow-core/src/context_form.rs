//! The context form of a message: how another agent's message reaches an agent under the
//! default policy (Eino's `For context: [A] said: ...` rewrite, [`rewrite_for_context`]), and a
//! form made ahead of time (`ContextForm`) that events and sessions share.

use std::sync::Arc;

use crate::message::{ContentPart, Message, MessageRef, Role};

/// A message of `agent` with its [context form](rewrite_for_context), made ahead of time (a
/// tree makes them for the transfer messages of each of its edges): the session takes the
/// form instead of rewriting when an event it records carries this very message from this
/// very agent.
#[derive(Debug)]
pub(crate) struct ContextForm {
    agent: Arc<str>,
    message: MessageRef,
    form: MessageRef,
}

impl ContextForm {
    /// `message` of `agent`, rewritten now.
    pub(crate) fn new(agent: &Arc<str>, message: &MessageRef) -> Self {
        ContextForm {
            agent: Arc::clone(agent),
            message: Arc::clone(message),
            form: Arc::new(rewrite_for_context(agent, message)),
        }
    }

    /// The context form, if this was made for `message` of `agent`, or for a message of
    /// `agent` that reads the same (a model's transfer call, say, which differs from the
    /// tree's only in its call id).
    pub(crate) fn form_of(&self, agent: &Arc<str>, message: &MessageRef) -> Option<&MessageRef> {
        let same_agent = Arc::ptr_eq(&self.agent, agent) || self.agent == *agent;
        let same_message =
            Arc::ptr_eq(&self.message, message) || reads_the_same(&self.message, message);
        (same_agent && same_message).then_some(&self.form)
    }
}

/// The message a delegated agent's result ([`Action::Finish`](crate::Action::Finish)) is to its
/// parent: an assistant message of the agent holding the result (a string as it is, anything
/// else as JSON text), so the parent reads `For context: [refund] said: {...}` whichever way
/// the task finished (a code agent's `Finish`, an LLM agent's `finish_task` call).
pub(crate) fn result_message(result: &serde_json::Value) -> Message {
    Message::assistant(match result {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// Rewrites another agent's message as a user message that gives context, the way Eino does:
///
/// - an assistant message: `For context: [A] said: CONTENT.` (if it has content), then for
///   each of its [content parts](Message::parts) ` [A] said: TEXT.` for text and
///   ` [A] shared DESCRIPTION.` for anything else (an image: `an image at URL`,
///   `an image (image/png, N bytes)`, see [`ContentPart::describe`]), then
///   `` [A] called tool: `NAME` with arguments: ARGS.`` for each tool call;
/// - a tool result: ``For context: [A] `TOOL` tool returned result: CONTENT.`` (if it has
///   content), then per part ``[A] `TOOL` tool returned result: TEXT.`` or
///   ``[A] `TOOL` tool returned DESCRIPTION.``;
/// - anything else: `For context:`.
///
/// The rewritten message is text only: images are described, not passed on (a
/// [custom policy](crate::ContextPolicy::Custom) can pass them on).
///
/// ```
/// use agentweave_runtime::{rewrite_for_context, Message};
/// let m = rewrite_for_context("triage", &Message::assistant("it is a refund"));
/// assert_eq!(m.content, "For context: [triage] said: it is a refund.");
/// let m = rewrite_for_context(
///     "scanner",
///     &Message::assistant("the receipt").with_image_url("https://x/r.png"),
/// );
/// assert_eq!(
///     m.content,
///     "For context: [scanner] said: the receipt. [scanner] shared an image at https://x/r.png."
/// );
/// ```
pub fn rewrite_for_context(agent_name: &str, message: &Message) -> Message {
    // Sized for the common shapes, so the text is written without regrowing.
    let calls: usize = message
        .tool_calls
        .iter()
        .map(|c| c.name.len() + c.arguments.len() + agent_name.len() + 40)
        .sum();
    let tool = message.tool_name.as_deref().map_or(0, str::len);
    let mut text =
        String::with_capacity(64 + agent_name.len() + tool + message.content.len() + calls);
    text.push_str("For context:");
    // Written piece by piece: this runs once per message another agent reads.
    let said = |text: &mut String, what: &str| {
        push_all(text, &[" [", agent_name, "] said: ", what, "."]);
    };
    match message.role {
        Role::Assistant => {
            if !message.content.is_empty() {
                said(&mut text, &message.content);
            }
            // Parts other agents cannot see are described, not dropped.
            for part in &message.parts {
                match part {
                    ContentPart::Text { text: more } => said(&mut text, more),
                    other => push_all(
                        &mut text,
                        &[" [", agent_name, "] shared ", &other.describe(), "."],
                    ),
                }
            }
            for call in &message.tool_calls {
                push_all(
                    &mut text,
                    &[
                        " [",
                        agent_name,
                        "] called tool: `",
                        &call.name,
                        "` with arguments: ",
                        &call.arguments,
                        ".",
                    ],
                );
            }
        }
        Role::Tool => {
            let tool = message.tool_name.as_deref().unwrap_or("");
            let returned = |text: &mut String, what: &str, result: &str| {
                push_all(
                    text,
                    &[
                        " [",
                        agent_name,
                        "] `",
                        tool,
                        "` tool returned ",
                        what,
                        result,
                        ".",
                    ],
                );
            };
            if !message.content.is_empty() {
                returned(&mut text, "result: ", &message.content);
            }
            for part in &message.parts {
                match part {
                    ContentPart::Text { text: more } => returned(&mut text, "result: ", more),
                    other => returned(&mut text, "", &other.describe()),
                }
            }
        }
        _ => {}
    }
    Message::user(text)
}

/// Whether [`rewrite_for_context`] makes the same form of `a` and `b` (for one agent): they
/// agree on all it reads (call ids aside).
pub(crate) fn reads_the_same(a: &Message, b: &Message) -> bool {
    a.role == b.role
        && a.content == b.content
        && a.parts == b.parts
        && a.tool_name == b.tool_name
        && a.tool_calls.len() == b.tool_calls.len()
        && a.tool_calls
            .iter()
            .zip(&b.tool_calls)
            .all(|(x, y)| x.name == y.name && x.arguments == y.arguments)
}

fn push_all(text: &mut String, pieces: &[&str]) {
    for piece in pieces {
        text.push_str(piece);
    }
}
