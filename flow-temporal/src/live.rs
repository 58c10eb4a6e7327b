//! Live events out of a durable run: how a client sees a turn's events as they happen, streamed
//! model output included, while the turn runs as a workflow on some worker.
//!
//! Two channels, each deduplicated by a number the workflow's history fixes:
//!
//! - **The turn's events** (messages, transfers, tool results, errors) are made by the
//!   orchestration inside the workflow. The workflow keeps the running turn's events in its
//!   state as they are made, and answers the query [`progress`](crate::ThreadWorkflow::progress)
//!   with them ([`Progress`]): a query enters no history and is answered by a worker from the
//!   workflow's state once the workflow task that made the events has ended (the task that
//!   starts the next activity, or ends the turn), so an event does not wait for the next
//!   activity to end. An event's number is its place in the turn: a worker that dies and is
//!   replaced replays the history and makes the same events under the same numbers, so a
//!   reader that keeps the count it has read ([`Progress::events`] from `since`) sees each
//!   event once.
//! - **Streamed model output** is made inside a model activity, on a worker, before the
//!   activity ends. A turn asked with a *sink* (an HTTP URL of the server process that streams
//!   the turn to its client: [`TurnRequest::live`](crate::TurnRequest)) has each model call
//!   stream its model's reply and POST each piece to the sink as it comes ([`LivePost`]), keyed
//!   by the call's number in the turn ([`LiveSink::effect`]) and the piece's number, with the
//!   call's place among the turn's events ([`LiveSink::at`]: a reader that has passed it opens
//!   the streamed reply with its first piece, without asking the workflow). An
//!   activity that runs again after its worker died posts its pieces again from the first:
//!   the sink drops the pieces it has (by call and number), so a scripted or otherwise
//!   deterministic model's pieces reach the client once; a model that answers differently on
//!   the second attempt streams pieces that do not add up to the recorded reply, and the
//!   turn's event (the reply whole, from the workflow) is what is recorded. A sink that does
//!   not answer is not retried: the pieces are a preview, the events are the record.
//!
//! Nothing here is needed for a turn to run: a turn asked without a sink streams nothing and
//! its events come with its result, as before.

use agentweave_core::event::InterruptInfo;
use agentweave_core::{Message, RunPath};
use serde::{Deserialize, Serialize};

/// The turn number that asks [`progress`](crate::ThreadWorkflow::progress) for the last turn
/// asked (the one a reader just asked for, when it does not know its number yet).
pub const LAST_TURN: u64 = u64::MAX;

/// Where a model call streams its reply: the sink's URL and the call's number in the turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveSink {
    /// The URL each piece is POSTed to (JSON, a [`LivePost`]).
    pub url: String,
    /// The turn's number in the thread.
    pub turn: u64,
    /// The call's number among the turn's effects (the same on every worker and attempt).
    pub effect: u64,
    /// The call's place among the turn's events: how many were made before it was asked (as
    /// [`ModelMark::at`]; the same on every worker and attempt). `None` from a workflow of an
    /// earlier version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<u64>,
}

/// What a model activity POSTs to a sink: one piece of the reply, or its end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LivePost {
    /// The turn's number in the thread.
    pub turn: u64,
    /// The call's number in the turn.
    pub effect: u64,
    /// The piece's number in the call's reply, from 0 (the end's is the number of pieces).
    pub seq: u64,
    /// The call's place among the turn's events ([`LiveSink::at`]): a reader that has passed
    /// on that many events opens the call's streamed message with its first piece, without
    /// asking the workflow where it goes. `None` from a worker of an earlier version (the
    /// reader then asks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<u64>,
    /// The agent whose model streams.
    pub agent: String,
    /// Its run path.
    pub run_path: RunPath,
    /// The piece; `None` for the end of the reply.
    pub chunk: Option<Message>,
    /// At the end: why the call failed, when it did (the pieces posted are not the reply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The running turn as the query [`progress`](crate::ThreadWorkflow::progress) shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// The turn shown (the one asked for).
    pub turn: Option<u64>,
    /// Its events from the number asked for on, in their JSON form (`AgentEvent::to_json`).
    pub events: Vec<serde_json::Value>,
    /// The number of its first event in `events`.
    pub since: u64,
    /// Whether the turn has ended (its events are all there).
    pub ended: bool,
    /// The question the turn waits on, if any.
    pub question: Option<InterruptInfo>,
    /// The turn's model calls so far, each placed among its events.
    #[serde(default)]
    pub models: Vec<ModelMark>,
}

/// A model call of a turn, placed among the turn's events: its reply streams after the events
/// before `at` and before the ones from `at` on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelMark {
    /// The call's number in the turn ([`LiveSink::effect`]).
    pub effect: u64,
    /// How many of the turn's events were made before it was asked.
    pub at: u64,
    /// The calling agent.
    pub agent: String,
    /// Its run path.
    pub run_path: RunPath,
    /// Whether its activity has ended (its reply, or its failure, is in).
    pub done: bool,
}

/// A running turn's events as the workflow keeps them for [`Progress`].
#[derive(Debug, Clone, Default)]
pub struct LiveTurn {
    /// The turn.
    pub turn: Option<u64>,
    /// Its events so far, in their JSON form.
    pub events: Vec<serde_json::Value>,
    /// Whether it has ended.
    pub ended: bool,
    /// Its model calls so far.
    pub models: Vec<ModelMark>,
}

impl LiveTurn {
    /// The progress of turn `turn` from event `since` on (nothing when another turn is shown).
    pub fn progress(&self, turn: u64, since: u64, question: Option<InterruptInfo>) -> Progress {
        if self.turn != Some(turn) {
            // Asked and not started yet (or an older turn): nothing to show.
            return Progress {
                turn: Some(turn),
                since,
                ..Progress::default()
            };
        }
        Progress {
            turn: self.turn,
            events: self.events.iter().skip(since as usize).cloned().collect(),
            since,
            ended: self.ended,
            question,
            models: self.models.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_gives_the_events_from_the_number_asked_and_only_of_that_turn() {
        let live = LiveTurn {
            turn: Some(2),
            events: vec![
                serde_json::json!(0),
                serde_json::json!(1),
                serde_json::json!(2),
            ],
            ended: false,
            models: Vec::new(),
        };
        let p = live.progress(2, 1, None);
        assert_eq!(p.events, [serde_json::json!(1), serde_json::json!(2)]);
        assert_eq!((p.since, p.ended), (1, false));
        let other = live.progress(3, 0, None);
        assert!(other.events.is_empty());
        assert_eq!((other.turn, other.ended), (Some(3), false));
    }
}
