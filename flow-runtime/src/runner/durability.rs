//! [`Durability`]: how much of a run is journaled before it ends (the modes and what each
//! guarantees; the journal itself is `journal`).

use serde::{Deserialize, Serialize};

/// How much of a run is written to its journal before the run ends: set per runner with
/// [`RunnerBuilder::durability`](crate::RunnerBuilder::durability) (per turn with [`TurnRequest::durability`](crate::TurnRequest::durability)).
///
/// | mode | what is written between interrupts | an event reaches the caller | lost on a crash |
/// | --- | --- | --- | --- |
/// | [`Durability::Exit`] (default) | nothing (the checkpoint at an interrupt and the thread record at the end, as without a journal) | at once | everything since the last interrupt |
/// | [`Durability::Async`] | every step, in batches: appended by a background task (a store that [keeps deferred steps](crate::store::JournalStore::keeps_deferred), in memory: kept by the run and handed over unencoded every 64 steps, before an interrupt's checkpoint, at the end, and when the run is dropped) | at once (never waits for the store) | the steps not yet stored when the process dies: the tail still queued in the process (on every store, SQLite included), and with [`append_steps_unsynced`](crate::store::JournalStore::append_steps_unsynced) on SQLite those since its last synced commit on a power loss; a recovery re-runs what that tail held, so tools that cost money or are not idempotent want `Sync` |
/// | [`Durability::Sync`] | every step, appended before the event that reports it is passed on (SQLite: in a group commit with the steps other runs append meanwhile); in a thread's turn a tool call starts once the reply that asked for it is stored | after its step is stored (a streamed message: once whole) | nothing the caller has seen |
///
///
/// What is exactly-once and what is at-least-once: a resume's claim and a thread turn's lease
/// make one worker run a checkpoint's continuation; a tool call that was in flight when its
/// worker died runs again in the worker that takes the run over, with the same
/// [`idempotency_key`](crate::ToolContext::idempotency_key), so a tool with side effects can
/// deduplicate it (at-least-once, closed by the key). A journaled turn whose worker died is
/// picked up by [`Runner::recover`](crate::Runner::recover), which replays the journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// Write at interrupts and at the end only (no journal steps).
    #[default]
    Exit,
    /// Append every step in the background; never block an event.
    Async,
    /// Append every step before the event that reports it reaches the caller.
    Sync,
}
