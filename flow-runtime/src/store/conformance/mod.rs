//! The conformance suite of the store contracts: one call per contract that checks a store,
//! ours or one of your own, against every rule the contract's docs promise, the races
//! included (two claimers, a lease taken over, an append after a takeover), with bounded
//! counts.
//!
//! | contract | call | what it needs |
//! | --- | --- | --- |
//! | [`CheckpointStore`] (checkpoints and claims) | [`checkpoints`] | a factory of empty stores |
//! | [`ThreadStore`] | [`threads`] | a factory of empty stores |
//! | [`JournalStore`] | [`journals`] | a factory of empty stores |
//! | [`RunQueue`] | [`run_queue`] | a factory of empty queues |
//! | [`ScheduleStore`](crate::store::ScheduleStore) (a queue's schedules) | [`schedules`] | a factory of empty queues |
//! | [`SpendingStore`] (what threads and tenants spent) | [`spending`] | a factory of empty stores |
//! | [`MemoryStore`] | [`memory`] | a factory of empty stores |
//!
//! Each call takes a *factory*: a closure that opens a fresh, empty store (a new temporary
//! directory, a new database) each time it is called, so every check starts clean. A check
//! that shares one store between tasks clones an [`Arc`] of it. Run the calls from a test with
//! a multi-threaded runtime (`#[tokio::test(flavor = "multi_thread")]`), so the races race.
//!
//! A store that breaks a rule makes the call panic with a message that names the rule, says
//! what the store did, and how to fix the backend:
//!
//! ```text
//! store conformance: the rule "the resume claim is exactly-once" is broken: ...
//! how to fix the backend: take the pending head in one atomic step ...
//! ```
//!
//! ```
//! use agentweave_runtime::store::{conformance, InMemoryStore};
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
//! conformance::checkpoints(|| async { InMemoryStore::new() }).await;
//! conformance::journals(|| async { InMemoryStore::new() }).await;
//! # });
//! ```
//!
//! One module per contract: `checkpoints.rs`, `threads.rs`, `journals.rs`, `queue.rs`,
//! `schedules.rs`, `spending.rs`; the
//! memory contract's checks live beside the memory stores
//! ([`memory_items::contract`](crate::store::memory_items::contract)).

mod checkpoints;
mod journals;
mod queue;
mod schedules;
mod spending;
mod threads;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;

use crate::store::memory_items::MemoryStore;
use crate::store::{CheckpointStore, JournalStore, RunQueue, SpendingStore, ThreadStore};

pub use checkpoints::{
    batch_claims_are_disjoint, hostile_ids, lifecycle, one_claim_among_tasks, pending_and_purge,
    refuses_escaping_ids, size_limit, takeover_among_tasks,
};
pub use journals::{
    append_after_takeover, appends_reads_truncates_deletes, deferred_batches_read_back_and_cut,
    deferred_steps_are_encoded_when_read, many_runs_append_at_once, one_append_among_tasks,
    refuses_bad_ids_and_kinds, step, unsynced_appends_keep_the_condition,
};
pub use queue::{
    capped_race, counts, events_cancel_flows, fair, one_claim_each, queue_lifecycle, queue_takeover,
};
pub use schedules::{one_advance_each, schedule_contract};
pub use spending::{charge_keys_charge_once, racing_reservations, reservation_is_all_or_nothing};
pub use threads::{
    appends_reads_list_delete, leases, one_winner_among_tasks, record, refuses_bad_ids,
    size_limit as thread_size_limit,
};

/// Runs `check`; if it panics, panics again with the rule it checks and how to fix the
/// backend, after the check's own message.
async fn rule(name: &str, fix: &str, check: impl Future<Output = ()>) {
    if let Err(panic) = AssertUnwindSafe(check).catch_unwind().await {
        let what = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        panic!(
            "store conformance: the rule \"{name}\" is broken: {what}\nhow to fix the backend: \
             {fix}"
        );
    }
}

/// Checks the [`CheckpointStore`] contract (checkpoints and their claims) on stores made by
/// `fresh`, one per check: ids that could escape a store are refused by every method; a
/// waiting run is never replaced silently; the resume claim is exactly-once and a lease; a
/// lease that ran out is taken over by exactly one of many claimants, and the old holder can
/// then neither renew nor complete; batch claims of concurrent workers are disjoint; pending
/// heads are listed oldest first; retention deletes finished runs only.
///
/// # Panics
///
/// When a store breaks a rule: the message names the rule and how to fix the backend.
pub async fn checkpoints<S, F, Fut>(mut fresh: F)
where
    S: CheckpointStore,
    F: FnMut() -> Fut,
    Fut: Future<Output = S>,
{
    let store = fresh().await;
    rule(
        "every method refuses an id that could escape the store",
        "call validate_id(id)? first in every method, before any storage is touched",
        refuses_escaping_ids(&store),
    )
    .await;
    let store = fresh().await;
    rule(
        "save, claim, renew, complete, release, history and delete keep the history",
        "follow CheckpointStore's docs: Create refuses a pending head (StoreError::Pending), \
         Replace keeps the replaced record, complete checks the claim's attempt (ClaimLost)",
        lifecycle(&store, ""),
    )
    .await;
    let store = fresh().await;
    rule(
        "pending lists waiting heads oldest first; purge_finished deletes finished runs only",
        "order pending heads by creation time, and purge only runs whose head is Finished",
        pending_and_purge(&store, ""),
    )
    .await;
    let store: Arc<dyn CheckpointStore> = Arc::new(fresh().await);
    rule(
        "the resume claim is exactly-once",
        "take the pending head in one atomic step (a row update that checks the state, a \
         lock held across the read and the write), so of concurrent claimants one wins and \
         the others get StoreError::Claimed",
        one_claim_among_tasks(store, ""),
    )
    .await;
    let store: Arc<dyn CheckpointStore> = Arc::new(fresh().await);
    rule(
        "a lease that ran out is taken over once; the old holder can no longer renew or complete",
        "on a claim of an expired lease, bump the attempt atomically; renew and complete must \
         compare the claim's attempt with the stored one and answer StoreError::ClaimLost",
        takeover_among_tasks(store, ""),
    )
    .await;
    let store: Arc<dyn CheckpointStore> = Arc::new(fresh().await);
    rule(
        "concurrent batch claims (claim_pending) are disjoint and take every pending head",
        "claim each head of a batch atomically (or keep the default claim_pending, which \
         claims each pending head with claim)",
        batch_claims_are_disjoint(store, ""),
    )
    .await;
}

/// Checks the [`ThreadStore`] contract on stores made by `fresh`, one per check: bad ids are
/// refused; appends are a compare-and-swap on the thread's version (a stale or future version
/// stores nothing); reads by turn, list and delete; the turn lease (one owner, renewed and
/// released by its owner only, taken over once it runs out); of many concurrent appends at
/// one version and of many concurrent lease takers exactly one wins.
///
/// # Panics
///
/// When a store breaks a rule: the message names the rule and how to fix the backend.
pub async fn threads<S, F, Fut>(mut fresh: F)
where
    S: ThreadStore,
    F: FnMut() -> Fut,
    Fut: Future<Output = S>,
{
    let store = fresh().await;
    rule(
        "every method refuses an invalid thread id",
        "call validate_thread_id(id)? first in every method",
        refuses_bad_ids(&store),
    )
    .await;
    let store = Arc::new(fresh().await);
    rule(
        "appends are a compare-and-swap on the version; reads by turn, list and delete",
        "append only when the thread's version equals the expected one (else \
         ThreadError::Conflict, nothing stored); number the records yourself; a record's \
         continuations share its turn",
        appends_reads_list_delete(store.as_ref(), store.as_ref(), ""),
    )
    .await;
    let store = fresh().await;
    rule(
        "the turn lease: one owner, renewed and released by it only, taken over when it runs out",
        "keep the owner and the lease's end per thread; refuse another owner (ThreadError::Busy) \
         until the end passes; renew by a non-owner is ThreadError::LeaseLost",
        leases(&store, ""),
    )
    .await;
    let store: Arc<dyn ThreadStore> = Arc::new(fresh().await);
    rule(
        "of concurrent appends at one version, and of concurrent lease takers, one wins",
        "check the version (and the lease) and write in one atomic step",
        one_winner_among_tasks(vec![store.clone(), store], ""),
    )
    .await;
}

/// Checks the [`JournalStore`] contract on stores made by `fresh`, one per check: appends are
/// a compare-and-swap on the journal's length (a writer that lost the run to a takeover is
/// refused and writes nothing); reads, lengths, truncation and deletion; bad ids and kinds are
/// refused; of concurrent appends at one position exactly one succeeds; many runs appending at
/// once keep their steps apart and in order; deferred steps and batches read back encoded;
/// unsynced appends keep the compare-and-swap.
///
/// # Panics
///
/// When a store breaks a rule: the message names the rule and how to fix the backend.
pub async fn journals<S, F, Fut>(mut fresh: F)
where
    S: JournalStore,
    F: FnMut() -> Fut,
    Fut: Future<Output = S>,
{
    let store = Arc::new(fresh().await);
    rule(
        "appends are a compare-and-swap on the length; reads, truncation and deletion",
        "append only when the journal holds exactly `expected` steps (else \
         JournalError::Conflict, nothing written), numbering the steps from `expected`",
        appends_reads_truncates_deletes(store.as_ref(), store.as_ref(), ""),
    )
    .await;
    let store = fresh().await;
    rule(
        "an append after a takeover is refused",
        "compare the expected length with the stored one and append in one atomic step",
        append_after_takeover(&store, ""),
    )
    .await;
    let store = fresh().await;
    rule(
        "bad run ids and step kinds are refused before anything is written",
        "call validate_id(run)? and check each step's kind before writing",
        refuses_bad_ids_and_kinds(&store),
    )
    .await;
    let store: Arc<dyn JournalStore> = Arc::new(fresh().await);
    rule(
        "of concurrent appends at one position, exactly one succeeds",
        "check the length and write in one transaction (or under one lock)",
        one_append_among_tasks(vec![store.clone(), store], ""),
    )
    .await;
    let store: Arc<dyn JournalStore> = Arc::new(fresh().await);
    rule(
        "many runs appending at once keep their steps apart and in order",
        "key steps by (run, position); a group commit must check each run's length apart",
        many_runs_append_at_once(vec![store.clone(), store], ""),
    )
    .await;
    let store = fresh().await;
    rule(
        "deferred steps read back as the steps they encode to",
        "keep the default append_deferred, or encode each step when it is read",
        deferred_steps_are_encoded_when_read(&store),
    )
    .await;
    let store = fresh().await;
    rule(
        "deferred batches read back in order and are cut by truncation",
        "keep the default append_deferred_batch, or number a batch's steps from `expected`",
        deferred_batches_read_back_and_cut(&store),
    )
    .await;
    let store = fresh().await;
    rule(
        "unsynced appends keep the compare-and-swap",
        "append_steps_unsynced may skip the sync, never the length check",
        unsynced_appends_keep_the_condition(&store),
    )
    .await;
}

/// Checks the [`RunQueue`] contract on queues made by `fresh`, one per check: enqueue with
/// typed errors, a thread's runs in order and one at a time, claims that are leases (taken
/// over when they run out, the old holder refused), events numbered across claims, cancel,
/// counts, fair claiming among groups; of concurrent claimers each run goes to one, and a cap
/// on a group's runs holds exactly under concurrent enqueuers.
///
/// # Panics
///
/// When a queue breaks a rule: the message names the rule and how to fix the backend.
pub async fn run_queue<Q, F, Fut>(mut fresh: F)
where
    Q: RunQueue,
    F: FnMut() -> Fut,
    Fut: Future<Output = Q>,
{
    let q = fresh().await;
    rule(
        "enqueue, per-thread order, claim, complete, get and list",
        "follow RunQueue's docs: a thread's runs are claimed in order, one at a time; bad input \
         is a typed QueueError",
        queue_lifecycle(&q, ""),
    )
    .await;
    let q = fresh().await;
    rule(
        "a claim whose lease ran out is taken over; the old holder is refused",
        "bump the attempt on a takeover; renew, note and complete compare the claim's attempt \
         (QueueError::ClaimLost)",
        queue_takeover(&q, ""),
    )
    .await;
    let q = Arc::new(fresh().await);
    rule(
        "events are numbered across claims; cancel ends a waiting run or asks a running one",
        "number events after the run's last; append only while the claim is held",
        events_cancel_flows(q.as_ref(), q.as_ref(), ""),
    )
    .await;
    let q = fresh().await;
    rule(
        "unfinished runs are counted by thread prefix",
        "count the runs not ended whose thread starts with the prefix",
        counts(&q, ""),
    )
    .await;
    let q = fresh().await;
    rule(
        "claims are fair among groups",
        "claim among the groups with the fewest running runs first, the oldest run first",
        fair(&q),
    )
    .await;
    let q: Arc<dyn RunQueue> = Arc::new(fresh().await);
    rule(
        "of concurrent claimers each run goes to exactly one",
        "claim in one atomic step (a row update that checks the state, a lock)",
        one_claim_each(vec![q.clone(), q], ""),
    )
    .await;
    let q: Arc<dyn RunQueue> = Arc::new(fresh().await);
    rule(
        "a cap on a group's runs holds exactly under concurrent enqueuers",
        "count and insert in one atomic step in enqueue_within",
        capped_race(vec![q.clone(), q], ""),
    )
    .await;
}

/// Checks the [`ScheduleStore`](crate::store::ScheduleStore) contract on the schedules kept by
/// queues made by `fresh` ([`RunQueue::schedules`]): create, read, list and count one
/// tenant's, change, delete, the due ones, and the compare-and-swap that moves a schedule on,
/// raced from three tasks (exactly one wins each due time).
///
/// # Panics
///
/// When the queue keeps no schedules, or breaks a rule: the message names the rule and how
/// to fix the backend.
pub async fn schedules<Q, F, Fut>(mut fresh: F)
where
    Q: RunQueue,
    F: FnMut() -> Fut,
    Fut: Future<Output = Q>,
{
    let q = fresh().await;
    assert!(
        q.schedules().is_some(),
        "store conformance: this queue keeps no schedules (RunQueue::schedules is None); \
         return the store that keeps them, or do not run the schedules suite"
    );
    rule(
        "schedules: create, read, list, count, change, delete, due, advance",
        "follow ScheduleStore's docs: a tenant sees its own schedules only; advance_schedule \
         moves a schedule on only from the due time it read (a compare-and-swap)",
        schedule_contract(&q),
    )
    .await;
    let q: Arc<dyn RunQueue> = Arc::new(fresh().await);
    rule(
        "of concurrent advances of one due time, exactly one wins",
        "compare the stored due time and write the next one in one atomic step",
        one_advance_each(vec![q.clone(), q.clone(), q]),
    )
    .await;
}

/// Checks the [`SpendingStore`] contract on stores made by `fresh` (the run queues that keep
/// spending implement it): a reservation over several scopes is all or nothing, settlements
/// correct every row, deleting a thread removes its rows, of sixteen concurrent reservations
/// against a limit of five exactly five pass, and a call reserved under a charge key is
/// charged and settled once.
///
/// # Panics
///
/// When a store breaks a rule: the message names the rule and how to fix the backend.
pub async fn spending<S, F, Fut>(mut fresh: F)
where
    S: SpendingStore + 'static,
    F: FnMut() -> Fut,
    Fut: Future<Output = S>,
{
    let store = fresh().await;
    rule(
        "a reservation over several scopes is all or nothing",
        "check every scope's limit and charge them all in one transaction (or under one lock)",
        reservation_is_all_or_nothing(&store),
    )
    .await;
    let store: Arc<dyn SpendingStore> = Arc::new(fresh().await);
    rule(
        "of concurrent reservations against a limit, exactly the limit's number pass",
        "check the limit and charge in one atomic step",
        racing_reservations(store.clone(), store),
    )
    .await;
    let store = fresh().await;
    rule(
        "a call reserved under a charge key is charged and settled once",
        "record the key in the transaction that charges (SpendingStore::reserve_once) and \
         apply a settlement only while its reservation is open",
        charge_keys_charge_once(&store),
    )
    .await;
}

/// Checks the [`MemoryStore`] contract on a store made by `fresh`: versions and
/// compare-and-swap, scopes, prefixes and filters, ranking by text and by meaning, tenant
/// isolation under attack, time to live (see
/// [`memory_items::contract`](crate::store::memory_items::contract) for each check).
///
/// # Panics
///
/// When a store breaks a rule: the message names the rule and how to fix the backend.
pub async fn memory<S, F, Fut>(mut fresh: F)
where
    S: MemoryStore,
    F: FnMut() -> Fut,
    Fut: Future<Output = S>,
{
    let store: Arc<dyn MemoryStore> = Arc::new(fresh().await);
    rule(
        "the memory contract: versions, scopes, filters, ranking, tenant isolation, time to live",
        "follow MemoryStore's docs for the check named above; keep every query inside the \
         item's tenant and scope",
        crate::store::memory_items::contract::run(store, "conformance"),
    )
    .await;
}
