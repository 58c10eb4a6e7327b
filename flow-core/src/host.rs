//! The host: what the engine needs of the world, given to it rather than reached for.
//!
//! The orchestration in this crate (transfers, the ReAct loop, workflows, approvals, limits)
//! touches no async runtime, no wall clock and no randomness. A run's waits (a retry's
//! backoff, a tool's time limit), its reading of the clock and its fresh ids go through the
//! [`Host`] of its [`RunContext`](crate::RunContext), set with
//! [`RunContext::with_host`](crate::RunContext::with_host). Model calls and tool calls go
//! through the [`ChatModel`](crate::ChatModel) and [`Tool`](crate::Tool) the agents were given,
//! and a thread's earlier turns through [`EarlierTurns`](crate::history::EarlierTurns).
//!
//! - [`StdHost`], the default: the system clock, random ids, and a runtime-agnostic timer
//!   (one helper thread), so a run works under any executor;
//! - the in-process runtime (`agentweave-runtime`) gives every run it starts its tokio host;
//! - [`ManualHost`] is the deterministic host for tests: its clock stands still until the test
//!   moves it, its ids count from 1, and a wait ends only when the clock passes it, so a run is
//!   stepped by hand and two runs of the same flow give the same events, bit for bit.
//!
//! ```
//! use std::time::Duration;
//! use agentweave_core::host::{Host, ManualHost};
//! use futures::FutureExt;
//!
//! let host = ManualHost::new();
//! assert_eq!(host.new_id(), "00000000000000000000000000000001");
//! let mut wait = host.sleep(Duration::from_secs(2));
//! assert!((&mut wait).now_or_never().is_none(), "the clock has not moved");
//! host.advance(Duration::from_secs(2));
//! assert!(wait.now_or_never().is_some());
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;

/// What a run needs of the world: waits, the clock and fresh ids. Shared by every agent of a
/// run (and of its nested runs); cheap to call.
///
/// Implement it to run the engine somewhere new (a workflow engine whose timers are durable, a
/// simulation); see [`ManualHost`] for a complete one.
pub trait Host: Send + Sync + 'static {
    /// A future that finishes once `wait` has passed on this host's clock.
    fn sleep(&self, wait: Duration) -> BoxFuture<'static, ()>;

    /// The time now, on this host's clock.
    fn now(&self) -> SystemTime;

    /// A fresh id (32 lowercase hex digits), unique within the host: a run's idempotency scope,
    /// a run id. Not a secret.
    fn new_id(&self) -> String;
}

/// The default host: the system clock, fresh random ids and a runtime-agnostic timer
/// (`futures-timer`, one helper thread), so a run works under any executor. The in-process
/// runtime gives its runs tokio's timer instead.
#[derive(Debug, Clone, Copy, Default)]
pub struct StdHost;

impl Host for StdHost {
    fn sleep(&self, wait: Duration) -> BoxFuture<'static, ()> {
        Box::pin(futures_timer::Delay::new(wait))
    }

    fn now(&self) -> SystemTime {
        SystemTime::now()
    }

    fn new_id(&self) -> String {
        crate::ids::unique_token()
    }
}

/// A deterministic host for tests: a clock that moves only when told ([`advance`]), ids that
/// count from 1, and waits that end when the clock passes them. Nothing happens by itself, so
/// a test steps a run by hand and the same flow gives the same events every time.
///
/// Clones share the clock, the waits and the id counter.
///
/// [`advance`]: ManualHost::advance
#[derive(Clone)]
pub struct ManualHost(Arc<ManualState>);

struct ManualState {
    start: SystemTime,
    clock: Mutex<ManualClock>,
    ids: AtomicU64,
}

#[derive(Default)]
struct ManualClock {
    /// Time since `start`.
    elapsed: Duration,
    /// The waits not yet due, by deadline then by order of asking.
    waits: BTreeMap<(Duration, u64), Arc<Mutex<WaitState>>>,
    next_wait: u64,
}

#[derive(Default)]
struct WaitState {
    due: bool,
    waker: Option<Waker>,
}

impl Default for ManualHost {
    fn default() -> Self {
        ManualHost::new()
    }
}

impl fmt::Debug for ManualHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let clock = self.0.clock.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("ManualHost")
            .field("elapsed", &clock.elapsed)
            .field("waiting", &clock.waits.len())
            .finish()
    }
}

impl ManualHost {
    /// A host whose clock stands at the Unix epoch plus 1,700,000,000 s (a fixed, plausible
    /// date) and whose first id is `...0001`.
    pub fn new() -> Self {
        ManualHost::starting_at(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000))
    }

    /// A host whose clock stands at `start`.
    pub fn starting_at(start: SystemTime) -> Self {
        ManualHost(Arc::new(ManualState {
            start,
            clock: Mutex::new(ManualClock::default()),
            ids: AtomicU64::new(0),
        }))
    }

    /// Moves the clock on by `by`, ending (waking) every wait that is then due, earliest
    /// first.
    pub fn advance(&self, by: Duration) {
        let due: Vec<_> = {
            let mut clock = self.0.clock.lock().unwrap_or_else(|e| e.into_inner());
            clock.elapsed += by;
            let now = clock.elapsed;
            let later = clock.waits.split_off(&(now, u64::MAX));
            std::mem::replace(&mut clock.waits, later)
                .into_values()
                .collect()
        };
        for wait in due {
            let waker = {
                let mut state = wait.lock().unwrap_or_else(|e| e.into_inner());
                state.due = true;
                state.waker.take()
            };
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }

    /// Moves the clock to the earliest wait not yet due and ends it (and any other due then);
    /// `false` when nothing waits.
    pub fn advance_to_next(&self) -> bool {
        let next = {
            let clock = self.0.clock.lock().unwrap_or_else(|e| e.into_inner());
            clock
                .waits
                .keys()
                .next()
                .map(|(at, _)| at.saturating_sub(clock.elapsed))
        };
        match next {
            Some(by) => {
                self.advance(by);
                true
            }
            None => false,
        }
    }

    /// How many waits are not yet due.
    pub fn waiting(&self) -> usize {
        let clock = self.0.clock.lock().unwrap_or_else(|e| e.into_inner());
        clock.waits.len()
    }

    /// How far the clock has moved since the host was made.
    pub fn elapsed(&self) -> Duration {
        let clock = self.0.clock.lock().unwrap_or_else(|e| e.into_inner());
        clock.elapsed
    }
}

impl Host for ManualHost {
    fn sleep(&self, wait: Duration) -> BoxFuture<'static, ()> {
        let state = Arc::new(Mutex::new(WaitState::default()));
        {
            let mut clock = self.0.clock.lock().unwrap_or_else(|e| e.into_inner());
            if wait.is_zero() {
                state.lock().unwrap_or_else(|e| e.into_inner()).due = true;
            } else {
                let at = clock.elapsed + wait;
                let n = clock.next_wait;
                clock.next_wait += 1;
                clock.waits.insert((at, n), Arc::clone(&state));
            }
        }
        Box::pin(ManualWait(state))
    }

    fn now(&self) -> SystemTime {
        self.0.start + self.elapsed()
    }

    fn new_id(&self) -> String {
        format!("{:032x}", self.0.ids.fetch_add(1, Ordering::Relaxed) + 1)
    }
}

/// A wait of a [`ManualHost`]: ready once the clock has passed its deadline.
struct ManualWait(Arc<Mutex<WaitState>>);

impl Future for ManualWait {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if state.due {
            Poll::Ready(())
        } else {
            state.waker = Some(cx.waker().clone());
            Poll::Pending
        }
    }
}

/// Runs `work` with a time limit on `host`'s clock: `None` if the limit ran out first (the work
/// is dropped then).
pub async fn within<F: Future>(host: &dyn Host, limit: Duration, work: F) -> Option<F::Output> {
    use futures::future::{select, Either};
    let work = std::pin::pin!(work);
    match select(work, host.sleep(limit)).await {
        Either::Left((done, _)) => Some(done),
        Either::Right(((), _)) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    #[test]
    fn manual_waits_end_in_order_of_their_deadlines() {
        let host = ManualHost::new();
        let mut late = host.sleep(Duration::from_secs(5));
        let mut early = host.sleep(Duration::from_secs(1));
        assert_eq!(host.waiting(), 2);
        assert!(host.advance_to_next());
        assert!((&mut early).now_or_never().is_some());
        assert!((&mut late).now_or_never().is_none());
        assert_eq!(host.elapsed(), Duration::from_secs(1));
        assert!(host.advance_to_next());
        assert!(late.now_or_never().is_some());
        assert!(!host.advance_to_next());
    }

    #[test]
    fn within_gives_none_when_the_limit_runs_out() {
        let host = ManualHost::new();
        let mut limited = Box::pin(within(
            &host,
            Duration::from_secs(1),
            futures::future::pending::<()>(),
        ));
        assert!((&mut limited).now_or_never().is_none());
        host.advance(Duration::from_secs(1));
        assert_eq!(limited.now_or_never(), Some(None));
        let done = within(&host, Duration::from_secs(1), async { 7 }).now_or_never();
        assert_eq!(done, Some(Some(7)));
    }

    #[test]
    fn manual_ids_and_clock_are_deterministic() {
        let a = ManualHost::new();
        let b = ManualHost::new();
        assert_eq!(a.new_id(), b.new_id());
        assert_eq!(a.now(), b.now());
        a.advance(Duration::from_millis(30));
        assert_eq!(a.now(), b.now() + Duration::from_millis(30));
    }
}
