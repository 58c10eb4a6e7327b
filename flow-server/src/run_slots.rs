//! Places for runs, streamed or in the background: a thread holds one of the process's turn
//! places while it has runs going, and passes it from each run to the next one waiting behind it; a tenant has so
//! many threads running and so many runs waiting (see [`Limits`](crate::Limits)).
//!
//! A run waiting behind another of its thread (`enqueue`, `interrupt`, `rollback`) holds no
//! turn place of its own: a flood of waiting runs on one thread takes one place, and a tenant
//! past its limits gets `429 too_many_runs` while the other tenants keep theirs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;
use crate::Limits;

/// The places (one per server state).
pub(crate) struct RunSlots {
    turns: Arc<Semaphore>,
    max_turns: usize,
    max_running: usize,
    max_waiting: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// By thread store id: the turn place it holds and how many of its runs are going.
    threads: HashMap<String, Thread>,
    /// By tenant: threads holding a place, runs waiting behind another.
    tenants: HashMap<String, (usize, usize)>,
}

struct Thread {
    _place: OwnedSemaphorePermit,
    runs: usize,
    tenant: String,
}

/// One admitted run's place (or place in line); given back when dropped, at the run's end.
pub(crate) struct Admitted {
    slots: Arc<RunSlots>,
    thread: String,
}

impl RunSlots {
    /// Places from `turns` (the process's concurrent turns) within `limits`.
    pub(crate) fn new(turns: Arc<Semaphore>, limits: &Limits) -> Self {
        RunSlots {
            turns,
            max_turns: limits.max_concurrent_turns,
            max_running: limits.max_running_threads_per_tenant,
            max_waiting: limits.max_waiting_runs_per_tenant,
            inner: Mutex::default(),
        }
    }

    /// Admits one run of `thread` (a store id) for `tenant`: the first of its thread takes a
    /// turn place (503 when the process has none) within the tenant's running threads (429);
    /// one behind another run of its thread waits within the tenant's waiting runs (429).
    pub(crate) fn admit(
        self: &Arc<Self>,
        tenant: &str,
        thread: &str,
    ) -> Result<Admitted, ApiError> {
        let mut inner = self.inner.lock().expect("run slots lock");
        let Inner { threads, tenants } = &mut *inner;
        let counts = tenants.entry(tenant.to_owned()).or_default();
        if let Some(going) = threads.get_mut(thread) {
            if counts.1 >= self.max_waiting {
                return Err(ApiError::TooManyRuns {
                    what: "waiting runs",
                    field: "max_waiting_runs_per_tenant",
                    limit: self.max_waiting,
                });
            }
            going.runs += 1;
            counts.1 += 1;
        } else {
            if counts.0 >= self.max_running {
                return Err(ApiError::TooManyRuns {
                    what: "running threads",
                    field: "max_running_threads_per_tenant",
                    limit: self.max_running,
                });
            }
            let place =
                Arc::clone(&self.turns)
                    .try_acquire_owned()
                    .map_err(|_| ApiError::Overloaded {
                        what: "concurrent turns",
                        limit: self.max_turns,
                    })?;
            counts.0 += 1;
            threads.insert(
                thread.to_owned(),
                Thread {
                    _place: place,
                    runs: 1,
                    tenant: tenant.to_owned(),
                },
            );
        }
        Ok(Admitted {
            slots: Arc::clone(self),
            thread: thread.to_owned(),
        })
    }

    /// The tenant's (running threads, waiting runs), for tests and metrics.
    #[cfg(test)]
    fn counts(&self, tenant: &str) -> (usize, usize) {
        let inner = self.inner.lock().expect("run slots lock");
        inner.tenants.get(tenant).copied().unwrap_or_default()
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut inner = self.slots.inner.lock().expect("run slots lock");
        let Inner { threads, tenants } = &mut *inner;
        let Some(going) = threads.get_mut(&self.thread) else {
            return;
        };
        going.runs -= 1;
        let tenant = going.tenant.clone();
        let last = going.runs == 0;
        if last {
            // The thread's last run ended: its place goes back to the process.
            threads.remove(&self.thread);
        }
        if let Some(counts) = tenants.get_mut(&tenant) {
            if last {
                counts.0 -= 1;
            } else {
                // The next run in line takes the thread's place: one fewer waits.
                counts.1 -= 1;
            }
            if *counts == (0, 0) {
                tenants.remove(&tenant);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(turns: usize, running: usize, waiting: usize) -> Arc<RunSlots> {
        let limits = Limits {
            max_concurrent_turns: turns,
            max_running_threads_per_tenant: running,
            max_waiting_runs_per_tenant: waiting,
            ..Limits::default()
        };
        Arc::new(RunSlots::new(Arc::new(Semaphore::new(turns)), &limits))
    }

    #[test]
    fn a_thread_holds_one_place_and_passes_it_down_its_line() {
        let s = slots(4, 2, 3);
        let first = s.admit("a", "f.a.t").unwrap();
        let waiting: Vec<_> = (0..3).map(|_| s.admit("a", "f.a.t").unwrap()).collect();
        assert_eq!(s.counts("a"), (1, 3));
        assert_eq!(
            s.turns.available_permits(),
            3,
            "one place for the whole line"
        );
        assert!(matches!(
            s.admit("a", "f.a.t"),
            Err(ApiError::TooManyRuns {
                field: "max_waiting_runs_per_tenant",
                ..
            })
        ));
        drop(first);
        assert_eq!(s.counts("a"), (1, 2), "the next in line took the place");
        drop(waiting);
        assert_eq!(s.counts("a"), (0, 0));
        assert_eq!(s.turns.available_permits(), 4);
    }

    #[test]
    fn a_tenant_at_its_limit_leaves_places_for_the_others() {
        let s = slots(4, 2, 1);
        let _a: Vec<_> = ["f.a.1", "f.a.2"]
            .iter()
            .map(|t| s.admit("a", t).unwrap())
            .collect();
        assert!(matches!(
            s.admit("a", "f.a.3"),
            Err(ApiError::TooManyRuns {
                field: "max_running_threads_per_tenant",
                ..
            })
        ));
        let _b: Vec<_> = ["f.b.1", "f.b.2"]
            .iter()
            .map(|t| s.admit("b", t).unwrap())
            .collect();
        // The process itself is full now: a third tenant is told so (503).
        assert!(matches!(
            s.admit("c", "f.c.1"),
            Err(ApiError::Overloaded { .. })
        ));
    }
}
