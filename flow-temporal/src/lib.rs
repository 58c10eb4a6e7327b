//! Runs agentflow's engine on [Temporal](https://temporal.io): a thread is a workflow, each
//! turn a step of it, each model call and each tool call an activity, and a human's answer to
//! an approval a Temporal update.
//!
//! The orchestration (transfers, the ReAct loop, workflows, approvals, limits) runs inside the
//! workflow, deterministically: it reaches the world only through its host and middleware,
//! which here ask the workflow for every effect ([`effects`]). What a worker runs is named in
//! its [`Flows`]; what the activities do with them is in [`flows`]; how each is named and
//! retried in [`policy`].
//!
//! The Temporal half (the workflow, the activities, the worker and the client helpers: module
//! `sdk`, its items also at this crate's root) is behind this crate's feature `sdk`: the
//! Temporal SDK needs `protoc` and Rust 1.92 to build, and the workspace's
//! `cargo test --workspace` must build without them. The guide's chapter "Scaling out on
//! Temporal" says how to run it.
//!
//! # Live events
//!
//! A turn's events reach a reader as they are made, streamed model output included, each once
//! even when a worker dies mid-turn: the workflow answers the query `progress` with the running
//! turn's events from a count on (numbered by their place in the turn, the same on replay), and
//! a turn asked with a sink has its model calls post their streamed pieces to it (numbered by
//! call and piece, posted again from the first by a call run again). See [`live`]; agentweave-server's
//! `temporal` feature reads both for every door.
//!
//! # A thread over time
//!
//! - **Double texting.** A turn asked while another runs or waits follows its `if_busy`
//!   (`TurnRequest::if_busy`): `reject` is refused by the update's validator (it never enters
//!   the history; the client gets `TemporalError::Busy`), `enqueue` (the default) runs after
//!   the turns before it, `interrupt` stops the running turn at its next safe point (after its
//!   model call or its tool calls) and keeps what it finished, `rollback` drops it where it is
//!   and keeps nothing of it. Each turn's result says how it ended (`TurnEnd::Done`,
//!   `Cancelled`, `RolledBack`).
//! - **Resuming a stopped turn.** A turn stopped at a safe point (`interrupt`, `cancel_turn`
//!   in a safe-point mode) is kept with its place ([`StoppedTurn`], the in-process runner's
//!   checkpoint of such a turn): `TurnRequest::resume` goes on from there, as the runner's
//!   resume does (the calls it finished are not made again; its events join that turn), and a
//!   new message instead leaves it as it stopped. agentweave-server's `/resume` of a run
//!   stopped so on Temporal sends that resume.
//! - **Cancelling.** `Thread::cancel` cancels the workflow: the running turn stops as
//!   `ThreadStart::cancel_mode` says (by default at the engine's next safe point, the call under
//!   way finishing; `immediate` drops it), the turn's caller gets what it did, and the workflow
//!   ends as cancelled.
//! - **Local activities.** `ThreadStart::local_activities` runs model calls
//!   (`LocalSteps::Models`), and idempotent tool calls too (`ModelsAndIdempotentTools`), as
//!   local activities: in the worker that runs the workflow task, with no round trip through
//!   the task queue (under a millisecond against tens). A local activity whose worker dies runs
//!   again from its start, so a non-idempotent tool always stays a remote activity. A local
//!   model call's conversation and tools stay in the worker's memory; its activity's input
//!   is a stub naming them (never in the history either way). A remote activity on the
//!   worker's own task queue is executed eagerly (temporalio-sdk's default, kept: the server
//!   hands it back with the workflow task's completion, saving a poll).
//! - **One-shot threads.** `Thread::run_once` starts a thread and runs its one turn in a single
//!   request (update-with-start); the workflow ends after the turn.
//! - **Replay in CI.** The histories of the example flows are fixtures of the facade's tests
//!   (`tests/fixtures/temporal`), replayed by Temporal's replayer: a change to the engine or to
//!   a flow that would break running threads fails there first.
//!
//! # Payload sizes
//!
//! Every activity's input and result is a Temporal payload stored in the workflow's history: a
//! model call carries the conversation so far, a tool call its arguments, and each result its
//! text. Temporal refuses payloads over 2 MB (and warns from 512 KB), and a history is capped at
//! 50 MB and 51,200 events.
//!
//! - **Tool results and model replies by reference.** With [`Flows::store_large_payloads`], a
//!   tool result or a model reply over the threshold is stored in a [`BlobStore`] by its
//!   activity and only its reference enters the history; the model activity reads every
//!   reference back before calling the model, so the model sees all of it (see [`blobs`]: [`FileBlobStore`], a directory, and `SqliteBlobStore`, one
//!   SQLite file). Every worker of a task queue must reach the same store.
//!   The thread's events show the reference.
//! - **Bounded histories.** Between turns, once the history holds
//!   `ThreadStart::continue_as_new_after` events (by
//!   default when the server suggests it), the thread's workflow continues as new with the
//!   conversation in its input: the history of a long thread stays bounded, its conversation
//!   whole.
//! - **Long conversations by parts.** Many medium messages (each under the threshold) pass 2 MB
//!   in sum. With a blob store, a model call whose conversation passes [`parts::PART_BYTES`]
//!   (256 KB of JSON) gets it by parts: the workflow has each part it has not stored yet written
//!   to the store by a local activity (`agentflow.store_part`; the part's text never enters the
//!   history) and sends the parts' keys and the last messages; the model activity reads them
//!   back. Continue-as-new carries a long conversation the same way, and the next run reads
//!   its parts back by local activities (`agentflow.load_part`, a marker each in its history).
//! - What stays in history: the user's messages (each turn's update), the model's replies (the
//!   model activity's result) under the threshold, tool arguments, and each model call's last
//!   messages (up to a part). A user message over 2 MB fails its update, and so does a single
//!   turn (or a stopped turn's record) whose messages pass 2 MB when continue-as-new carries it.
//!
//! # What happens when something fails
//!
//! | failure | what happens |
//! | --- | --- |
//! | a worker dies during a model call | the activity times out (120 s per attempt) and runs again on another worker |
//! | a worker dies during a tool call | the activity times out (10 s per attempt, `ThreadStart::tool_timeout_ms`); an idempotent tool runs again under the same key, a non-idempotent one is reported to the model as "may or may not have happened" |
//! | a worker dies during a local activity (`ThreadStart::local_activities`) | the workflow task times out and another worker runs the call again from its start (so only model calls and idempotent tools may be local) |
//! | a worker dies between calls | another worker replays the workflow's history through the orchestration (no call runs again) and goes on |
//! | a model keeps failing | after its retries, the agent's run ends with an error event naming the agent and the failure; the turn ends |
//! | an answer by the requester, or without `approve` | the update's validator refuses it; nothing enters the history; the question still waits |
//! | a flow changed under running threads (an agent renamed, a tool removed) | the workflow's commands no longer match its history: the workflow task fails with Temporal's non-determinism error (TMPRL1100) and waits; deploy the old flow for old threads, or version the change |
//!
//! # Retries
//!
//! A model call retries with exponential backoff (1 s, doubling, up to 30 s, six
//! attempts); an error that says retrying cannot help (a 4xx other than 429) is not retried. A
//! tool that declared itself non-idempotent (`Tool::idempotent` is `false`) runs at most once:
//! if its worker dies during the call, the model is told the call may or may not have happened.
//! An idempotent tool (one that deduplicates on `ToolContext::idempotency_key`, or has no side
//! effects) is retried; every attempt gets the same key.

pub mod blobs;
pub mod effects;
pub mod flows;
pub mod live;
pub mod parts;
pub mod policy;
pub mod spending;
pub mod turn;

#[cfg(feature = "sdk")]
pub mod sdk;
#[cfg(feature = "sdk")]
pub use sdk::{
    connect, replay_history, replayer, run_worker, worker_flows, worker_options,
    AgentflowActivities, AnswerRequest, CancelTurn, Carried, LocalSteps, TemporalError, Thread,
    ThreadStart, ThreadWorkflow, TurnEnd, TurnRequest, TurnResult, APPROVE_GRANT, DEFAULT_ADDRESS,
};

#[cfg(feature = "sqlite")]
pub use blobs::SqliteBlobStore;
pub use blobs::{BlobError, BlobStore, FileBlobStore, LargePayloads, Reference};
pub use effects::{
    Effect, Effects, EffectsMiddleware, ModelCall, Outcome, TemporalHost, ToolCallInput,
    ToolOutcome, ToolResume,
};
pub use flows::{call_model, call_tool, Flows, LookupError};
pub use live::{LivePost, LiveSink, ModelMark, Progress, LAST_TURN};
pub use turn::{CarriedTurn, StoppedTurn};
