//! Cancelling a run at a safe point: [`CancelMode`] (Eino's modes: immediately, after the
//! current model call, after the current tool calls; combinable; recursive into agent tools),
//! and the [`CancelSignal`] a run's context carries so its agents can stop where they promised.
//!
//! A signal is shared by every agent of one run (workflows run their sub-agents in the same
//! run). An [`AgentTool`](crate::AgentTool)'s nested run sees it only when the mode is
//! [`recursive`](CancelMode::recursive); otherwise the nested run finishes and the calling
//! agent stops after it. An agent that stops at a safe point emits an interrupt whose
//! [`info`](crate::InterruptInfo::info) is `{"cancelled": MODE}` ([`cancel_info`]) and whose
//! state lets it go on from there when the run is resumed.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::event::InterruptInfo;

/// How a run is cancelled: a set of stop points, plus whether nested runs stop too.
///
/// `IMMEDIATE` stops the run where it is (a model call half streamed, a tool running: dropped);
/// `AFTER_MODEL` stops at the end of a model call and keeps its reply (its tool calls do not
/// run): the call under way, or, when the cancel arrives while tool calls run, the next one (as
/// Eino's `CancelAfterChatModel`: the calls finish and the model is asked once more), a final
/// answer too, since a workflow would go on after it; `AFTER_TOOLS` lets the current tool calls finish and keeps their results,
/// then stops before the model is asked again. Combined (`AFTER_MODEL | AFTER_TOOLS`), the run
/// stops at whichever comes first.
///
/// ```
/// use agentweave_runtime::CancelMode;
/// let mode: CancelMode = "after_model|after_tools".parse().unwrap();
/// assert_eq!(mode, CancelMode::AFTER_MODEL | CancelMode::AFTER_TOOLS);
/// assert!(mode.recursive().is_recursive());
/// assert_eq!(mode.to_string(), "after_model|after_tools");
/// assert!("sometime".parse::<CancelMode>().is_err());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CancelMode(u8);

const IMMEDIATE: u8 = 1;
const AFTER_MODEL: u8 = 2;
const AFTER_TOOLS: u8 = 4;
const RECURSIVE: u8 = 8;

impl CancelMode {
    /// Stop now: whatever is running is dropped.
    pub const IMMEDIATE: CancelMode = CancelMode(IMMEDIATE);
    /// Stop at the end of a model call (the current one, else the next); its reply is kept.
    pub const AFTER_MODEL: CancelMode = CancelMode(AFTER_MODEL);
    /// Stop once the current tool calls have finished (their results are kept).
    pub const AFTER_TOOLS: CancelMode = CancelMode(AFTER_TOOLS);

    /// The same mode, applied to nested runs too (agent tools' runs).
    pub fn recursive(self) -> Self {
        CancelMode(self.0 | RECURSIVE)
    }

    /// Whether nested runs stop too.
    pub fn is_recursive(self) -> bool {
        self.0 & RECURSIVE != 0
    }

    /// Whether the mode stops the run immediately.
    pub fn is_immediate(self) -> bool {
        self.0 & IMMEDIATE != 0
    }

    /// Whether the mode includes every stop point of `other` (the recursive flag aside).
    pub fn contains(self, other: CancelMode) -> bool {
        let points = other.0 & !RECURSIVE;
        points != 0 && self.0 & points == points
    }

    /// Whether the mode names no stop point (what [`Default`] gives: not a usable mode).
    pub fn is_empty(self) -> bool {
        self.0 & !RECURSIVE == 0
    }
}

impl std::ops::BitOr for CancelMode {
    type Output = CancelMode;
    fn bitor(self, rhs: CancelMode) -> CancelMode {
        CancelMode(self.0 | rhs.0)
    }
}

impl fmt::Display for CancelMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if self.0 & IMMEDIATE != 0 {
            parts.push("immediate");
        }
        if self.0 & AFTER_MODEL != 0 {
            parts.push("after_model");
        }
        if self.0 & AFTER_TOOLS != 0 {
            parts.push("after_tools");
        }
        if self.0 & RECURSIVE != 0 {
            parts.push("recursive");
        }
        f.write_str(&parts.join("|"))
    }
}

impl fmt::Debug for CancelMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CancelMode({self})")
    }
}

/// A cancel mode that does not parse: it names what it did not understand.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{given}' is not a cancel mode: use immediate, after_model, after_tools, or several joined \
     by '|' (and 'recursive' to stop nested agent runs too)"
)]
pub struct UnknownCancelMode {
    /// What was given.
    pub given: String,
}

impl FromStr for CancelMode {
    type Err = UnknownCancelMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut mode = CancelMode::default();
        for part in s.split(['|', ',']).map(str::trim) {
            mode = mode
                | match part {
                    "immediate" => CancelMode::IMMEDIATE,
                    "after_model" => CancelMode::AFTER_MODEL,
                    "after_tools" => CancelMode::AFTER_TOOLS,
                    "recursive" => CancelMode(RECURSIVE),
                    _ => {
                        return Err(UnknownCancelMode {
                            given: s.chars().take(80).collect(),
                        })
                    }
                };
        }
        if mode.is_empty() {
            return Err(UnknownCancelMode {
                given: s.chars().take(80).collect(),
            });
        }
        Ok(mode)
    }
}

impl Serialize for CancelMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CancelMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A point where an agent may stop for a cancel (see [`CancelMode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SafePoint {
    /// A model call has just finished.
    AfterModel,
    /// The tool calls of a reply have just finished.
    AfterTools,
}

/// The cancel request of one run, shared by its agents (and, for recursive modes, by its
/// nested runs). Cheap to clone. Requests only add stop points: a second request combines
/// with the first.
#[derive(Clone, Default)]
pub struct CancelSignal(Arc<CancelState>);

/// What a [`CancelSignal`]'s clones share (one allocation a run).
#[derive(Default)]
struct CancelState {
    mode: AtomicU8,
    changed: event_listener::Event,
}

impl fmt::Debug for CancelSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CancelSignal")
            .field(&self.requested())
            .finish()
    }
}

impl CancelSignal {
    /// A signal with nothing requested.
    pub fn new() -> Self {
        CancelSignal::default()
    }

    /// Asks the run to stop as `mode` says (combined with any earlier request).
    pub fn request(&self, mode: CancelMode) {
        self.0.mode.fetch_or(mode.0, Ordering::SeqCst);
        self.0.changed.notify(usize::MAX);
    }

    /// What has been requested so far (`None`: nothing).
    pub fn requested(&self) -> Option<CancelMode> {
        let mode = CancelMode(self.0.mode.load(Ordering::SeqCst));
        (!mode.is_empty()).then_some(mode)
    }

    /// Whether an agent at `point` should stop; `nested` for an agent of a nested run (an
    /// agent tool's), which stops only for recursive modes. Gives the mode it stops for.
    pub fn stops_at(&self, point: SafePoint, nested: bool) -> Option<CancelMode> {
        let mode = self.requested()?;
        if nested && !mode.is_recursive() {
            return None;
        }
        let wanted = match point {
            SafePoint::AfterModel => CancelMode::AFTER_MODEL,
            SafePoint::AfterTools => CancelMode::AFTER_TOOLS,
        };
        mode.contains(wanted).then_some(mode)
    }

    /// Waits until something is requested (returns at once if something was).
    pub async fn requested_any(&self) -> CancelMode {
        loop {
            let changed = self.0.changed.listen();
            if let Some(mode) = self.requested() {
                return mode;
            }
            changed.await;
        }
    }
}

/// The `info` of the interrupt an agent emits when it stops for a cancel at `point`.
pub fn cancel_info(point: SafePoint) -> serde_json::Value {
    let mode = match point {
        SafePoint::AfterModel => "after_model",
        SafePoint::AfterTools => "after_tools",
    };
    serde_json::json!({ "cancelled": mode })
}

/// Whether `interrupt` is a stop for a cancel (see [`cancel_info`]), not a request for input.
pub fn is_cancel_interrupt(interrupt: &InterruptInfo) -> bool {
    interrupt
        .info
        .as_object()
        .is_some_and(|o| o.len() == 1 && o.get("cancelled").is_some_and(|v| v.is_string()))
}
