//! The fork point: the interrupt a fork made in the middle of a turn stops at (see
//! `time_travel`), and how a record's end is recognised as one.

use crate::store::RecordEnd;

/// The id of the interrupt a fork made in the middle of a turn stops at (see
/// [`ThreadHandle::fork`](crate::ThreadHandle::fork)): [`TurnRequest::resume`](crate::TurnRequest::resume) goes on from the fork's step.
pub const FORK_POINT: &str = "fork_point";

/// The step a record ending waits at, if it is a fork point (see [`FORK_POINT`]): the end of a
/// fork made in the middle of a turn, which asks nobody anything (its info is
/// `{"fork_point": {"step": N}}`; 0 if a stored one lacks the step). `None` for any other end.
pub fn fork_point_step(end: &RecordEnd) -> Option<u64> {
    match end {
        RecordEnd::Interrupted { interrupts, .. }
            if interrupts.len() == 1 && interrupts[0].id == FORK_POINT =>
        {
            Some(
                interrupts[0].info["fork_point"]["step"]
                    .as_u64()
                    .unwrap_or_default(),
            )
        }
        _ => None,
    }
}

/// Whether a record ending is a fork point (see [`FORK_POINT`]).
pub(super) fn is_fork_point(end: &RecordEnd) -> bool {
    fork_point_step(end).is_some()
}
