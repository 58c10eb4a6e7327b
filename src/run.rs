//! Runs, turns and threads: what a [`Runner`](crate::Runner)'s verbs take and give back.
//!
//! A [`Runner`](crate::Runner) is configuration ([`RunnerBuilder`]); what it is asked is a
//! request value ([`RunRequest`](crate::RunRequest), [`TurnRequest`](crate::TurnRequest),
//! [`ResumeRequest`](crate::ResumeRequest)) and what it answers is an event stream, a
//! [`Turn`](crate::Turn) or a [`RunHandle`]. This module holds the rest of that vocabulary:
//!
//! - threads: [`ThreadHandle`] (a thread's history, records, values and runs), [`TurnRouting`],
//!   [`TurnOutcome`], [`ThreadMessage`], [`ThreadState`], double texting ([`DoubleText`]);
//! - runs that outlive their connection: [`RunHandle`], [`RunInfo`], [`RunStatus`],
//!   [`RunEvent`], cancel modes ([`CancelMode`], [`CancelSignal`], [`SafePoint`]);
//! - durability and recovery: [`Durability`](crate::Durability), the step journal's [`Step`]s,
//!   [`RecoverError`], claims ([`HeldClaim`]);
//! - time travel: [`ThreadStep`], [`Fork`], [`TimeTravelError`];
//! - housekeeping: [`Retention`], [`RunRetention`], [`PurgeReport`];
//! - what one run may do: [`RunLimits`], and [`RunOptions`] addressed to agents by name;
//!   what threads and tenants may spend, shared by every runner on one store:
//!   [`SpendingBudgets`] and their [`SpendingLimits`] (with [`NO_TENANT`], the usage report's
//!   tenant of a call without one);
//! - who asks: a request's [`Caller`] (an id with grants) and the runner's [`AnswerRule`]
//!   (who may answer an interrupt);
//! - a turn as one stream of items for a protocol to map: [`TurnStream`], [`TurnItem`],
//!   [`TurnEvent`].

pub use agentweave_runtime::cancel::{
    cancel_info, is_cancel_interrupt, CancelMode, CancelSignal, SafePoint, UnknownCancelMode,
};
pub use agentweave_runtime::options::{AgentRunOptions, HistoryModifier, RunOptions};
pub use agentweave_runtime::{is_withdrawn, turn_journal_id, turn_mark_id, WITHDRAWN_KEY};
pub use agentweave_runtime::{AnswerRule, Caller, TurnEvent, TurnItem, TurnStream};
pub use agentweave_runtime::{
    AttachError, CancelError, Checkpoints, DoubleText, Fork, ForkEnd, HeldClaim, PurgeReport,
    RecoverError, Retention, RunError, RunEvent, RunFailure, RunHandle, RunInfo, RunItem,
    RunOutcome, RunRetention, RunStatus, RunnerBuilder, Step, StepKind, ThreadHandle,
    ThreadMessage, ThreadState, ThreadStep, ThreadStepKind, TimeTravelError, TurnOutcome,
    TurnRouting, UnknownStrategy, FORK_POINT, FRAMEWORK_KEY_PREFIX,
};
pub use agentweave_runtime::{LimitReached, RunLimit, RunLimits};
pub use agentweave_runtime::{SpendingBudgets, SpendingLimits, NO_TENANT};
