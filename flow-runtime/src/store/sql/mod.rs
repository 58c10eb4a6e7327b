//! What the SQL stores ([`SqliteStore`](super::SqliteStore),
//! [`PostgresStore`](super::PostgresStore)) share: the schema and its migrations, and the
//! store contract as SQL statements. The statements are constants (ids and bytes are always
//! bound parameters); `{NOW}` in them stands for the database's clock in milliseconds.
//!
//! # Schema
//!
//! `agentflow_schema(id = 1, version)` holds the schema version; `agentflow_checkpoints` one
//! row per record of a run's history: `(id, version)` is the key, `parent` the record it
//! continues, `state` one of `pending claimed resumed finished replaced`, `attempt` and
//! `lease_until_ms` the claim, `is_head` 1 on the run's latest record.
//! `agentflow_thread_records` and `agentflow_thread_leases` hold threads and their turn leases;
//! `agentflow_journal` one row per step of a run's journal, keyed by `(run, seq)`.
//!
//! # Claims
//!
//! A claim is one `UPDATE ... WHERE state = 'pending' OR (state = 'claimed' AND the lease ran
//! out) RETURNING ...` on the head row: the database's row lock makes exactly one of any
//! number of concurrent claimants see the row match. Renewing, releasing and completing match
//! the claim's `(version, attempt)`, so a claim that was taken over changes nothing. A batch
//! claim (`claim_pending`) is one `UPDATE ... WHERE (id, version) IN (SELECT ... ORDER BY
//! created_ms, id LIMIT n)` over the waiting rows' partial index; on PostgreSQL the select is
//! `FOR UPDATE SKIP LOCKED`, so concurrent workers take disjoint batches without waiting for
//! each other.
//! Changes that append a record run in a transaction that holds the run's lock (SQLite: the
//! database's write lock, `BEGIN IMMEDIATE`; PostgreSQL: an advisory lock on the id).
//!
//! # Files
//!
//! - `schema.rs`: the tables, their migrations, and the code that applies them on open;
//! - `checkpoint.rs`: the [`CheckpointStore`](super::CheckpointStore) contract as statements,
//!   and the macro that implements it for a store type;
//! - `journal.rs`: the [`JournalStore`](crate::store::JournalStore) contract as statements,
//!   and the macro that implements it;
//! - `thread.rs`: the [`ThreadStore`](super::ThreadStore) contract and the turn leases as
//!   statements, and the macro that implements it;
//! - this file: [`Statements`], the statements of one backend with its clock filled in.

mod checkpoint;
mod journal;
mod schema;
mod thread;

pub(crate) use checkpoint::*;
pub(crate) use journal::*;
pub(crate) use schema::*;
pub(crate) use thread::*;

/// A duration in milliseconds, as the SQL stores bind it (saturating).
pub(crate) fn millis_i64(d: std::time::Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

/// A stored state name as a state.
pub(crate) fn parse_state(name: &str) -> Option<super::records::State> {
    use super::records::State;
    Some(match name {
        "pending" => State::Pending,
        "claimed" => State::Claimed,
        "resumed" => State::Resumed,
        "finished" => State::Finished,
        "replaced" => State::Replaced,
        _ => return None,
    })
}

/// The statements of one backend: the constants above with `{NOW}` filled in.
#[derive(Debug)]
pub(crate) struct Statements {
    pub get: String,
    pub head: String,
    pub retire_head: String,
    pub insert: String,
    pub claim: String,
    pub claim_refused: String,
    pub claim_batch: String,
    /// A completion in one statement, where the backend runs one (see `COMPLETE_ONE`).
    pub complete_one: Option<String>,
    pub renew: String,
    pub release: String,
    pub end_claim: String,
    pub history: String,
    pub pending: String,
    pub purge: String,
    pub delete: String,
    pub thread_version: String,
    pub thread_head: String,
    pub thread_read: String,
    pub thread_insert: String,
    pub thread_list: String,
    pub thread_delete: String,
    pub lease_take: String,
    pub lease_renew: String,
    pub lease_release: String,
    pub journal_len: String,
    pub journal_insert: String,
    pub journal_read: String,
    pub journal_truncate: String,
    pub journal_delete: String,
    pub journal_idle: String,
}

impl Statements {
    /// The statements with `now` as the clock (an SQL expression of milliseconds).
    pub fn with_clock(now: &str) -> Self {
        let f = |s: &str| s.replace("{NOW}", now);
        Statements {
            get: f(GET),
            head: f(HEAD),
            retire_head: f(RETIRE_HEAD),
            insert: f(INSERT),
            claim: f(CLAIM),
            claim_refused: f(CLAIM_REFUSED),
            claim_batch: f(CLAIM_BATCH).replace("{SKIP_LOCKED}", ""),
            complete_one: None,
            renew: f(RENEW),
            release: f(RELEASE),
            end_claim: f(END_CLAIM),
            history: f(HISTORY),
            pending: f(PENDING),
            purge: f(PURGE),
            delete: f(DELETE),
            thread_version: f(THREAD_VERSION),
            thread_head: f(THREAD_HEAD),
            thread_read: f(THREAD_READ),
            thread_insert: f(THREAD_INSERT),
            thread_list: f(THREAD_LIST),
            thread_delete: f(THREAD_DELETE),
            lease_take: f(LEASE_TAKE),
            lease_renew: f(LEASE_RENEW),
            lease_release: f(LEASE_RELEASE),
            journal_len: f(JOURNAL_LEN),
            journal_insert: f(JOURNAL_INSERT),
            journal_read: f(JOURNAL_READ),
            journal_truncate: f(JOURNAL_TRUNCATE),
            journal_delete: f(JOURNAL_DELETE),
            journal_idle: f(JOURNAL_IDLE),
        }
    }

    /// The same statements with PostgreSQL's own: the batch claim passes over the rows other
    /// transactions hold locked (`FOR UPDATE SKIP LOCKED`) instead of waiting for them, and
    /// a completion is one statement (`COMPLETE_ONE`).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub fn for_postgres(mut self, now: &str) -> Self {
        self.claim_batch = CLAIM_BATCH
            .replace("{NOW}", now)
            .replace("{SKIP_LOCKED}", "FOR UPDATE SKIP LOCKED");
        self.complete_one = Some(COMPLETE_ONE.replace("{NOW}", now));
        self
    }
}
