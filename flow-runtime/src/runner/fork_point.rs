//! The fork point: the interrupt a fork made in the middle of a turn stops at (see
//! `time_travel`), and how a record's end is recognised as one.

use crate::store::RecordEnd;

/// The id of the interrupt a fork made in the middle of a turn stops at (see
/// [`ThreadHandle::fork`](crate::ThreadHandle::fork)): [`TurnRequest::resume`](crate::TurnRequest::resume) goes on from the fork's step.
pub const FORK_POINT: &str = "fork_point";

/// Whether a record ending is a fork point (see [`FORK_POINT`]).
pub(super) fn is_fork_point(end: &RecordEnd) -> bool {
    matches!(end, RecordEnd::Interrupted { interrupts, .. }
        if interrupts.len() == 1 && interrupts[0].id == FORK_POINT)
}
