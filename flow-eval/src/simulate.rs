//! User simulation: the next message of a simulated user, from a script (offline) or from a
//! model playing a persona with a goal.

use std::sync::Arc;

use agentweave_runtime::{ChatModel, ChatRequest, Message};

use crate::criteria::Exchange;
use crate::set::Simulation;

/// The instructions a persona model is given. Placeholders: `{persona}`, `{goal}`, `{stop}`.
/// The conversation follows as messages: the flow's answers as the user's turns, the
/// persona's earlier messages as its own.
pub const PERSONA_PROMPT: &str = "\
You play a user talking with an assistant, to test the assistant. Stay in character.
Who you are: {persona}
What you want to get done: {goal}
Write only your next message to the assistant, short and natural. When your goal is done, or \
clearly cannot be done, reply with {stop} and nothing else.";

/// What the simulated user does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextTurn {
    /// Says this.
    Say(String),
    /// Ends the conversation (the script ran out, the persona said the stop word, or the
    /// turn limit was reached).
    Stop,
}

/// The simulated user's next message after `conversation` (the exchanges so far, the
/// opening first): the script's next line for a scripted persona, else `persona`'s answer.
/// A scripted simulation needs no model; a model simulation without one is an error.
pub async fn next_user_turn(
    simulation: &Simulation,
    conversation: &[Exchange],
    persona: Option<&Arc<dyn ChatModel>>,
) -> Result<NextTurn, String> {
    if conversation.len() >= simulation.max_turns as usize {
        return Ok(NextTurn::Stop);
    }
    if !simulation.script.is_empty() {
        // The opening was turn 1; the script holds turns 2, 3, ...
        return Ok(
            match simulation.script.get(conversation.len().saturating_sub(1)) {
                Some(line) if line.trim() != simulation.stop => NextTurn::Say(line.clone()),
                _ => NextTurn::Stop,
            },
        );
    }
    let Some(model) = persona else {
        return Err(
            "this case simulates a user with a model, but the runner has no persona model: \
             give one with EvalRunner::persona, or give the simulation a `script`"
                .into(),
        );
    };
    let instructions = PERSONA_PROMPT
        .replace(
            "{persona}",
            non_empty(&simulation.persona, "an ordinary customer"),
        )
        .replace("{goal}", non_empty(&simulation.goal, "get help"))
        .replace("{stop}", &simulation.stop);
    let mut messages = vec![Arc::new(Message::system(instructions))];
    for exchange in conversation {
        messages.push(Arc::new(Message::assistant(exchange.user.clone())));
        if let Some(answer) = &exchange.answer {
            messages.push(Arc::new(Message::user(answer.clone())));
        }
    }
    let reply = model
        .generate(&ChatRequest::new(messages))
        .await
        .map_err(|e| format!("the persona model failed: {e}"))?;
    let text = reply.content.trim();
    if text.is_empty() || text.contains(simulation.stop.as_str()) {
        Ok(NextTurn::Stop)
    } else {
        Ok(NextTurn::Say(text.to_owned()))
    }
}

fn non_empty<'a>(text: &'a str, otherwise: &'a str) -> &'a str {
    if text.trim().is_empty() {
        otherwise
    } else {
        text
    }
}
