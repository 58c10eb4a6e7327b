//! The answer of a turn: what its recorded events say it answered (a run's outcome, a
//! turn's final output).

use crate::event::Action;
use crate::message::{Message, Role};

/// The answer of a turn (see [`Turn::final_output`](crate::Turn::final_output)).
pub(super) fn answer_of(events: &[crate::store::RecordedEvent]) -> Option<Message> {
    if let Some(last) = events.last() {
        if matches!(last.action, Some(Action::Exit)) {
            if let Some(m) = last.message.as_ref().filter(|m| !m.content.is_empty()) {
                return Some(m.clone());
            }
        }
        // A return-directly tool's result is the last event of its agent's run.
        if last.action.is_none() {
            if let Some(m) = last.message.as_ref().filter(|m| m.role == Role::Tool) {
                return Some(m.clone());
            }
        }
    }
    events
        .iter()
        .rev()
        .filter_map(|e| e.message.as_ref())
        .find(|m| m.role == Role::Assistant && !m.content.is_empty() && m.tool_calls.is_empty())
        .cloned()
}
