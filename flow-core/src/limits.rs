//! [`RunLimits`]: bounds on what one run may grow to, and [`LimitReached`], the error a run
//! ends with when it meets one.
//!
//! A runaway model or a buggy agent can transfer back and forth forever or emit events without
//! end; these limits stop such a run with one typed error event naming the limit and how to
//! raise it. What the run recorded before stays recorded. The defaults are far above what an
//! ordinary flow does (LangGraph's `recursion_limit` is the precedent for the transfer limit).
//!
//! The limits of a model client's HTTP calls are in `model::HttpLimits` (feature `http`); the
//! per-reply tool-call limits are set on the [`ChatModelAgent`](crate::ChatModelAgent)
//! builder; the checkpoint size limit on the `Checkpoint` codec.

use std::fmt;
use std::sync::Arc;

/// Bounds on one run, set with `RunnerBuilder::limits`.
///
/// Every limit of a run, these and the others, in one table:
///
/// | limit | default | set with | when met |
/// | --- | --- | --- | --- |
/// | transfers per run | 1,000 | `RunnerBuilder::limits(RunLimits::default().max_transfers(n))` | one `AgentError::LimitReached` event, run ends |
/// | recorded events per run | 100,000 | `RunLimits::max_events` | same |
/// | tool calls run per model reply | 128 | `ChatModelAgentBuilder::max_tool_calls_per_reply` | later calls answered `ToolError::NotRun` (the model reads why) |
/// | tool calls running at once | 16 | `ChatModelAgentBuilder::max_concurrent_tool_calls` | the rest wait (results stay in call order) |
/// | HTTP connect / first byte / idle / total | 10 s / 300 s / 120 s / 900 s | `OpenAiConfig::limits(HttpLimits …)` | `ModelError::Timeout` (retryable) |
/// | response body / error body | 32 MiB / 64 KiB | `HttpLimits::max_body_bytes` / `max_error_body_bytes` | `ModelError::LimitExceeded` / body cut |
/// | SSE line / SSE event | 4 MiB / 16 MiB | `HttpLimits::max_sse_line_bytes` / `max_sse_event_bytes` | `ModelError::LimitExceeded` |
/// | checkpoint size on read | 64 MiB | `RunnerBuilder::checkpoint_codec(CheckpointCodec::default().max_checkpoint_bytes(n))` | `CheckpointError::TooLarge` |
///
/// ```
/// use agentweave_runtime::RunLimits;
/// let limits = RunLimits::default().max_transfers(200_000);
/// assert_eq!(limits.max_transfers, 200_000);
/// assert_eq!(limits.max_events, RunLimits::DEFAULT_MAX_EVENTS);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunLimits {
    /// Transfers (hops from one agent to another) one run may make. Default
    /// [`DEFAULT_MAX_TRANSFERS`](Self::DEFAULT_MAX_TRANSFERS).
    pub max_transfers: usize,
    /// Events one run may record in its session. Default
    /// [`DEFAULT_MAX_EVENTS`](Self::DEFAULT_MAX_EVENTS).
    pub max_events: usize,
}

impl RunLimits {
    /// The default limit on transfers per run.
    pub const DEFAULT_MAX_TRANSFERS: usize = 1_000;
    /// The default limit on recorded events per run.
    pub const DEFAULT_MAX_EVENTS: usize = 100_000;

    /// No limit at all (`usize::MAX` each): only for runs whose agents you trust.
    pub fn unlimited() -> Self {
        RunLimits {
            max_transfers: usize::MAX,
            max_events: usize::MAX,
        }
    }

    /// Sets [`max_transfers`](Self::max_transfers).
    pub fn max_transfers(mut self, limit: usize) -> Self {
        self.max_transfers = limit;
        self
    }

    /// Sets [`max_events`](Self::max_events).
    pub fn max_events(mut self, limit: usize) -> Self {
        self.max_events = limit;
        self
    }
}

impl Default for RunLimits {
    fn default() -> Self {
        RunLimits {
            max_transfers: Self::DEFAULT_MAX_TRANSFERS,
            max_events: Self::DEFAULT_MAX_EVENTS,
        }
    }
}

/// Which limit of a run was met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunLimit {
    /// [`RunLimits::max_transfers`].
    Transfers,
    /// [`RunLimits::max_events`].
    Events,
}

impl RunLimit {
    /// The [`RunLimits`] field that sets it.
    pub fn field(self) -> &'static str {
        match self {
            RunLimit::Transfers => "max_transfers",
            RunLimit::Events => "max_events",
        }
    }
}

impl fmt::Display for RunLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RunLimit::Transfers => "transfers",
            RunLimit::Events => "recorded events",
        })
    }
}

/// A run met one of its [`RunLimits`]; it stopped there, keeping what it had recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "run limit reached: {max} {limit} (RunLimits::{}) at agent '{agent}'; the run stopped here \
     and kept what it recorded. If the flow legitimately goes this far, raise it with \
     RunnerBuilder::limits(RunLimits::default().{}(N)); otherwise look for agents transferring back \
     and forth",
    limit.field(),
    limit.field()
)]
pub struct LimitReached {
    /// Which limit.
    pub limit: RunLimit,
    /// Its value.
    pub max: usize,
    /// The agent running when it was met.
    pub agent: Arc<str>,
}
