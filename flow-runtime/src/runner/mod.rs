//! Run-time services: starting runs, checkpointing and resuming them, and threads of turns.
//!
//! - `runs`: [`Runner`] (runs, checkpointed runs, resume with its exactly-once claim);
//! - `claimed`: workers draining a store in batches ([`Checkpoints::claim`](crate::Checkpoints::claim),
//!   [`ResumeRequest::claimed`](crate::ResumeRequest::claimed), [`HeldClaim`]);
//! - `turn`: threads on a [`ThreadStore`](crate::ThreadStore): [`Runner::turn`], routing a new
//!   turn ([`TurnRouting`]), the thread's lease, recording a turn ([`Turn`], [`TurnOutcome`]);
//! - `journal`: the step journal ([`Durability`] modes, [`Step`]s, [`Runner::journal`]): what a
//!   run appends as it proceeds, in the [`JournalStore`](crate::store::JournalStore) contract.
//!   Background runs, cancellation and recovery read the same journal: a run's steps are
//!   [`Runner::journal`]`(id)`, keyed by its checkpoint id or [`turn_journal_id`];
//! - `journal_gate`: in `Sync` mode, a tool call waits until the model reply that asked for it
//!   is journaled (so a recovery never asks for a reply whose tools already ran);
//! - `journal_nested`: the steps of runs nested in a journaled turn's tool calls (an agent
//!   tool's), journaled beside the turn's journal so a recovery replays them;
//! - `recover`: crash recovery ([`Runner::recover`], [`RecoverError`]): a turn whose worker
//!   died is run again from its journal, replaying what the journal holds (`replay`: the
//!   middleware answering from the journal); `turn_mark`: the start marks a journaled turn
//!   (new or resumed) writes, which recovery reads, and the ids of a turn's side journals;
//! - `authority`: who may answer a thread's interrupts ([`AnswerRule`], checked for every
//!   request that continues a turn, as its [`Caller`]'s), in the one pipeline every door passes;
//! - `turn_stream`: a turn as one stream of items ([`TurnStream`], [`TurnItem`]): chunks, a
//!   broken stream, events with their messages whole, and always last the outcome; every
//!   reader of a turn (a background run, a service's protocols) maps it, so a turn is read once;
//! - `run_handle`: runs as objects ([`RunHandle`]): a turn running as a task of the runner,
//!   its kept events ([`RunEvent`]) any reader attaches to, its outcome, its cancel;
//! - `double_text`: starting runs ([`Runner::start`]) and a message meeting a running turn
//!   of its thread ([`DoubleText`]); resuming a cancelled run;
//! - `queued`: running a run taken from the run queue ([`TurnRequest::run_id`](crate::TurnRequest::run_id),
//!   [`Runner::start`]): the run keeps its queued id and its turn's idempotency scope;
//! - `time_travel`: a thread's steps ([`ThreadHandle::history`](crate::ThreadHandle::history)), forks at any step
//!   ([`ThreadHandle::fork`](crate::ThreadHandle::fork)) and re-runs from a step ([`ThreadHandle::run_from`](crate::ThreadHandle::run_from)); a fork point's
//!   continuation replays the fork's steps;
//! - `thread_values`: session values that carry across a thread's turns (the inheriting
//!   rule), [`ThreadHandle::values`](crate::ThreadHandle::values) and [`ThreadHandle::update_state`](crate::ThreadHandle::update_state) (a values step);
//! - `spending`: budgets per thread and per tenant per period, shared by every runner on one
//!   store ([`SpendingBudgets`], [`RunnerBuilder::spending`]), and the usage report;
//! - `housekeeping`: retention ([`Runner::purge`] of old turns' journal steps), a TTL per
//!   thread ([`RunnerBuilder::thread_ttl`](crate::RunnerBuilder::thread_ttl));
//! - `withdraw`: [`ThreadHandle::withdraw`](crate::ThreadHandle::withdraw), giving up a turn that waits for input (its
//!   interrupts dropped, its checkpoint released), and [`is_withdrawn`] to tell its record;
//! - `checkpoint`: capturing a run's session into a [`Checkpoint`](crate::Checkpoint) and
//!   restoring one (the byte format is the store's).
//!
//! `runs` and `turn` share the claim and the capture of a checkpoint, and `turn` adds the thread
//! methods to [`Runner`]: they are one service, split by what a caller starts.

mod answer;
mod authority;
mod builder;
mod caller;
mod checkpoint;
mod checkpoints;
mod claimed;
mod claims;
mod double_text;
mod durability;
mod earlier;
mod fork_point;
mod housekeeping;
pub mod journal;
mod journal_gate;
mod journal_nested;
mod recover;
mod replay;
mod request;
mod run_handle;
mod runs;
mod spending;
mod thread_handle;
mod thread_values;
pub mod time_travel;
mod turn;
mod turn_mark;
mod turn_stream;
mod withdraw;

pub use authority::{AnswerRule, Caller};
pub use builder::RunnerBuilder;
pub use checkpoints::Checkpoints;
pub use claims::HeldClaim;
pub use durability::Durability;
pub use housekeeping::{PurgeReport, Retention};
pub use journal::{turn_journal_id, Step, StepKind};
pub use recover::RecoverError;
pub use request::{DoubleText, RunError, UnknownStrategy};
pub use request::{ResumeRequest, RunRequest, TurnRequest};
pub use run_handle::{
    AttachError, CancelError, RunEvent, RunFailure, RunHandle, RunInfo, RunItem, RunOutcome,
    RunRetention, RunStatus, SteerError,
};
pub use runs::Runner;
pub use spending::{SpendingBudgets, SpendingLimits, NO_TENANT};
pub use thread_handle::ThreadHandle;
pub use thread_values::{ThreadState, FRAMEWORK_KEY_PREFIX};
pub use time_travel::{
    fork_point_step, Fork, ForkEnd, ThreadStep, ThreadStepKind, TimeTravelError, FORK_POINT,
};
pub use turn::{ThreadMessage, Turn, TurnOutcome, TurnRouting};
pub use turn_mark::turn_mark_id;
pub use turn_stream::{TurnEvent, TurnItem, TurnStream};
pub use withdraw::{is_withdrawn, WITHDRAWN_KEY};
