//! [`SqlRows`]: the front's keeper for a SQL store. Every rule is the front's
//! ([`KeyValueStore`](crate::store::backend::KeyValueStore)); this file keeps what it decides
//! in the tables of `schema.rs`, row by row:
//!
//! - a run is its rows of `agentflow_checkpoints`, one per record. A claim, a renewal, a
//!   release and a completion are head swaps ([`HeadSwap`]: what the front's rule decided
//!   without reading the run), each written as one conditional `UPDATE` of the head row that
//!   matches only the head the swap names (a claim returns its row; a batch claim is one
//!   statement; a completion also inserts its child: in the same statement on PostgreSQL, in
//!   one `BEGIN IMMEDIATE` transaction on SQLite). Any other change (a save, a purge, a
//!   deletion) runs in a write transaction holding the run's lock (SQLite: `BEGIN
//!   IMMEDIATE`, the file's write lock; PostgreSQL: an advisory lock on the id), reads the
//!   head row, applies the front's rule, and writes the rows it changed (PostgreSQL's save:
//!   one statement after the read, swapping the head only if it is still as read). A view
//!   reads the head's row alone ([`RunPart::Head`]), every record without the head's bytes
//!   ([`RunPart::Records`]), or the head's size and bytes alone (`get`: `head_bytes`). Claims, renewals and releases commit on the lease
//!   connections (SQLite's do not sync each commit: see
//!   [`SqliteStore`](crate::store::SqliteStore));
//! - a thread's turn lease is its row of `agentflow_thread_leases`, changed the same way;
//! - a thread's records and a run's journal are logs, one row per entry (`logs.rs`);
//! - the listings of runs ([`Keep::heads`]) read the waiting and finished heads through the
//!   partial indexes of the schema, oldest first, never every run.
//!
//! The keeper is generic over the value kinds the front asks for; each table keeps one kind,
//! found by its [`Table`] and taken as the type it is with an `Any` downcast that cannot fail.

use std::any::Any;
use std::ops::Range;
use std::sync::Arc;

use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Pool, Row, Transaction, Type};

/// A statement of `DB` with its arguments.
type Query<'q, DB> = sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments<'q>>;

use super::{db_error, int, write_tx, Lock, SqlDatabase, Statements};
use crate::store::backend::{
    Changed, Head, Heads, Keep, Lease, Listed, Log, Run, RunPart, Table, Value,
};
use crate::store::records::{HeadIs, HeadSwap, Record, Records, State};
use crate::store::{Claim, StoreError};

/// Where a SQL store keeps its data: its connections, statements and read limit. The front's
/// keeper for [`SqlStore`](super::SqlStore); not for use on its own.
#[derive(Debug)]
pub struct SqlRows<DB: SqlDatabase> {
    pub(crate) pool: Pool<DB>,
    /// Where claims, renewals, releases and turn leases are written: SQLite's connections
    /// that do not sync each commit; PostgreSQL's pool.
    pub(crate) leases: Pool<DB>,
    pub(crate) sql: Arc<Statements>,
    /// The largest checkpoint, record or step read; a larger one is
    /// [`StoreError::TooLarge`].
    pub(crate) limit: u64,
    /// How errors name the database (never a URL, which may hold a password).
    pub(crate) shown: Arc<str>,
    /// How far the database's clock is ahead of this machine's, in ms (measured when a
    /// PostgreSQL store connects; 0 for SQLite, on this machine).
    pub(crate) skew_ms: i64,
    pub(crate) extra: DB::Extra,
}

impl<DB: SqlDatabase> Clone for SqlRows<DB> {
    fn clone(&self) -> Self {
        SqlRows {
            pool: self.pool.clone(),
            leases: self.leases.clone(),
            sql: Arc::clone(&self.sql),
            limit: self.limit,
            shown: Arc::clone(&self.shown),
            skew_ms: self.skew_ms,
            extra: self.extra.clone(),
        }
    }
}

/// Every record of run `$1`, oldest first, with the head's bytes if at most `$2` bytes.
pub(crate) const RUN_ROWS: &str = "SELECT version, parent, state, created_ms, ended_ms, attempt,
    lease_until_ms, size, CASE WHEN is_head = 1 AND size <= $2 THEN bytes END AS bytes
    FROM agentflow_checkpoints WHERE id = $1 ORDER BY version";

/// The head record of run `$1`, with its bytes if at most `$2` bytes.
pub(crate) const RUN_HEAD: &str = "SELECT version, parent, state, created_ms, ended_ms, attempt,
    lease_until_ms, size, CASE WHEN size <= $2 THEN bytes END AS bytes
    FROM agentflow_checkpoints WHERE id = $1 AND is_head = 1";

/// The size of run `$1`'s head, and its bytes if at most `$2` bytes.
pub(crate) const RUN_BYTES: &str = "SELECT size, CASE WHEN size <= $2 THEN bytes END AS bytes
    FROM agentflow_checkpoints WHERE id = $1 AND is_head = 1";

/// The head record of run `$1` (as [`RUN_HEAD`]), locked until the transaction ends where
/// the database locks rows.
pub(crate) const RUN_HEAD_LOCKED: &str = "SELECT version, parent, state, created_ms, ended_ms,
    attempt, lease_until_ms, size, CASE WHEN size <= $2 THEN bytes END AS bytes
    FROM agentflow_checkpoints WHERE id = $1 AND is_head = 1 {FOR_UPDATE}";

/// A claim ([`HeadSwap`]; its `SET` list `{SET}`, [`swap_sql`]) of run `$1`'s head if a
/// claim at `$3` takes it and it holds at most `$2` bytes; the head's version, attempt and
/// bytes after.
pub(crate) const HEAD_CLAIM: &str = "UPDATE agentflow_checkpoints SET {SET}
    WHERE id = $1 AND is_head = 1 AND size <= $2
      AND (state = 'pending' OR (state = 'claimed' AND lease_until_ms <= $3))
    RETURNING version, attempt, bytes";

/// A change of run `$1`'s head (set as in [`HEAD_CLAIM`]) if claim `($2, $3)` holds it.
pub(crate) const HEAD_HELD: &str = "UPDATE agentflow_checkpoints SET {SET}
    WHERE id = $1 AND is_head = 1 AND version = $2 AND attempt = $3 AND state = 'claimed'";

/// [`HEAD_HELD`] and the record it adds (its values after the `SET` list's) inserted only if it matched, in one
/// statement where the database runs data-modifying `WITH` (PostgreSQL).
pub(crate) const HEAD_HELD_APPEND: &str = "WITH swapped AS (
        UPDATE agentflow_checkpoints SET {SET}
        WHERE id = $1 AND is_head = 1 AND version = $2 AND attempt = $3 AND state = 'claimed'
        RETURNING version)
    INSERT INTO agentflow_checkpoints
    (id, version, parent, state, created_ms, ended_ms, attempt, lease_until_ms, size, is_head, bytes)
    SELECT $1, {CHILD}, 1, {CHILD_BYTES} FROM swapped";

/// A batch claim (set as in [`HEAD_CLAIM`]) of the `$1` oldest heads a claim at `$3` takes,
/// of at most `$2` bytes, in one statement: the waiting rows' partial index read in order
/// (its `WHERE` repeated so both databases use it), rows another batch is claiming passed
/// over (PostgreSQL: `SKIP LOCKED`; SQLite's statement holds the write lock); each claimed
/// head's id, version, attempt and bytes.
pub(crate) const HEADS_CLAIM: &str = "WITH picked AS (
        SELECT id, version FROM agentflow_checkpoints
        WHERE is_head = 1 AND state IN ('pending', 'claimed')
          AND (state = 'pending' OR lease_until_ms <= $3) AND size <= $2
        ORDER BY created_ms, id LIMIT $1 {SKIP_LOCKED})
    UPDATE agentflow_checkpoints SET {SET}
    WHERE is_head = 1 AND (id, version) IN (SELECT id, version FROM picked)
      AND (state = 'pending' OR (state = 'claimed' AND lease_until_ms <= $3))
    RETURNING id, version, attempt, bytes";

/// A swap's `SET` list that writes its state.
pub(crate) const SETS_STATE: usize = 1;
/// ... its end.
pub(crate) const SETS_END: usize = 2;
/// ... whether the row stays the head (a swap that adds a record).
pub(crate) const SETS_HEAD: usize = 4;
/// How many `SET` lists there are.
pub(crate) const SETS: usize = 8;

/// `template` (a head swap: [`HEAD_CLAIM`], [`HEAD_HELD`], [`HEAD_HELD_APPEND`],
/// [`HEADS_CLAIM`]) with its `SET` list for `sets`, numbered from `$4`: the lease end and
/// the attempt step always (each left as it was when null or 0), then the state, the end
/// and the head flag only where `sets` says (an indexed column written, even unchanged,
/// costs an index write on SQLite and PostgreSQL's update in place); the values of a record
/// added follow.
pub(crate) fn swap_sql(template: &str, sets: usize) -> String {
    let mut set =
        String::from("lease_until_ms = COALESCE($4, lease_until_ms), attempt = attempt + $5");
    let mut next = 6;
    for (bit, column) in [
        (SETS_STATE, "state = $"),
        (SETS_END, "ended_ms = COALESCE($"),
        (SETS_HEAD, "is_head = $"),
    ] {
        if sets & bit != 0 {
            set.push_str(&format!(", {column}{next}"));
            set.push_str(if bit == SETS_END { ", ended_ms)" } else { "" });
            next += 1;
        }
    }
    let child: Vec<String> = (next..next + 8).map(|n| format!("${n}")).collect();
    template
        .replace("{SET}", &set)
        .replace("{CHILD}", &child.join(", "))
        .replace("{CHILD_BYTES}", &format!("${}", next + 8))
}

/// Which columns `swap` writes beyond the lease end and attempt ([`swap_sql`]): its state
/// unless it keeps the claimed state a held head has, its end if it sets one, the head flag
/// if it adds a record.
fn sets(swap: &HeadSwap) -> usize {
    let keeps_state = matches!(swap.is, HeadIs::Held { .. }) && swap.state == State::Claimed;
    let mut sets = 0;
    if !keeps_state {
        sets |= SETS_STATE;
    }
    if swap.ended_ms.is_some() {
        sets |= SETS_END;
    }
    if swap.child.is_some() {
        sets |= SETS_HEAD;
    }
    sets
}

/// A change that adds a record, in one statement where the database runs data-modifying
/// `WITH` (PostgreSQL): the head (`$2` its version) rewritten and retired if it still holds
/// the values read (`$7` to `$9`), and the new head inserted (`$10` on) only then; no row
/// written means another writer was first.
pub(crate) const RUN_SWAP_APPEND: &str = "WITH swapped AS (
        UPDATE agentflow_checkpoints
        SET state = $3, ended_ms = $4, attempt = $5, lease_until_ms = $6, is_head = 0
        WHERE id = $1 AND version = $2 AND is_head = 1
          AND state = $7 AND attempt = $8 AND lease_until_ms = $9
        RETURNING version)
    INSERT INTO agentflow_checkpoints
    (id, version, parent, state, created_ms, ended_ms, attempt, lease_until_ms, size, is_head, bytes)
    SELECT $1, $10, $11, $12, $13, $14, $15, $16, $17, 1, $18 FROM swapped";

/// The `$1` oldest waiting heads (pending or claimed), with their bytes if at most `$2` bytes:
/// the waiting rows' partial index, in its order.
pub(crate) const HEADS_WAITING: &str = "SELECT id, version, parent, state, created_ms, ended_ms,
    attempt, lease_until_ms, size, CASE WHEN size <= $2 THEN bytes END AS bytes
    FROM agentflow_checkpoints WHERE is_head = 1 AND state IN ('pending', 'claimed')
    ORDER BY created_ms, id LIMIT $1";

/// The `$1` oldest heads a claim at `$3` would take, of at most `$2` bytes (the waiting rows'
/// partial index; its `WHERE` is repeated so both databases use it).
pub(crate) const HEADS_CLAIMABLE: &str = "SELECT id, version, parent, state, created_ms,
    ended_ms, attempt, lease_until_ms, size
    FROM agentflow_checkpoints WHERE is_head = 1 AND state IN ('pending', 'claimed')
      AND (state = 'pending' OR lease_until_ms <= $3) AND size <= $2
    ORDER BY created_ms, id LIMIT $1";

/// The heads finished at or before `$1` (the finished rows' partial index).
pub(crate) const HEADS_FINISHED: &str = "SELECT id, version, parent, state, created_ms,
    ended_ms, attempt, lease_until_ms, size
    FROM agentflow_checkpoints WHERE is_head = 1 AND state = 'finished' AND ended_ms <= $1";

/// Every run's head.
pub(crate) const HEADS_ALL: &str = "SELECT id, version, parent, state, created_ms, ended_ms,
    attempt, lease_until_ms, size FROM agentflow_checkpoints WHERE is_head = 1";

/// Writes what a change made of an existing record (`$1` the run, `$2` its version).
pub(crate) const RUN_UPDATE: &str = "UPDATE agentflow_checkpoints
    SET state = $3, ended_ms = $4, attempt = $5, lease_until_ms = $6, is_head = $7
    WHERE id = $1 AND version = $2";

pub(crate) const RUN_INSERT: &str = "INSERT INTO agentflow_checkpoints
    (id, version, parent, state, created_ms, ended_ms, attempt, lease_until_ms, size, is_head, bytes)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, $10)";

pub(crate) const RUN_DELETE: &str = "DELETE FROM agentflow_checkpoints WHERE id = $1";

pub(crate) const LEASE_READ: &str =
    "SELECT owner, lease_until_ms FROM agentflow_thread_leases WHERE thread = $1";

pub(crate) const LEASES_ALL: &str =
    "SELECT thread, owner, lease_until_ms FROM agentflow_thread_leases";

pub(crate) const LEASE_WRITE: &str =
    "INSERT INTO agentflow_thread_leases (thread, owner, lease_until_ms) VALUES ($1, $2, $3)
    ON CONFLICT (thread) DO UPDATE
    SET owner = excluded.owner, lease_until_ms = excluded.lease_until_ms";

pub(crate) const LEASE_DELETE: &str = "DELETE FROM agentflow_thread_leases WHERE thread = $1";

/// How many times a change is tried when other writers change the head first.
const MAX_SWAPS: usize = 1_000;

/// A stored state name as a state.
fn parse_state(name: &str) -> Option<State> {
    Some(match name {
        "pending" => State::Pending,
        "claimed" => State::Claimed,
        "resumed" => State::Resumed,
        "finished" => State::Finished,
        "replaced" => State::Replaced,
        _ => return None,
    })
}

/// A state as stored.
fn state_name(state: State) -> &'static str {
    match state {
        State::Pending => "pending",
        State::Claimed => "claimed",
        State::Resumed => "resumed",
        State::Finished => "finished",
        State::Replaced => "replaced",
    }
}

/// `value` as the type it is (the value kept in its table is of one type).
pub(super) fn cast<A: 'static, B: 'static>(value: &mut Option<A>) -> &mut Option<B> {
    (value as &mut dyn Any)
        .downcast_mut()
        .expect("each table keeps one kind of value")
}

/// `value` as the type it is.
pub(super) fn kind<A: 'static, B: 'static>(value: &A) -> &B {
    (value as &dyn Any)
        .downcast_ref()
        .expect("each table keeps one kind of value")
}

/// `value` as the type it is (a log's batch, window or error: one type per log).
pub(super) fn same<A: 'static, B: 'static>(value: A) -> B {
    *(Box::new(value) as Box<dyn Any>)
        .downcast()
        .expect("each log keeps one kind of entry and has one contract")
}

/// The error of an operation the keeper has no rows for.
pub(super) fn unkept(table: Table, key: &str) -> StoreError {
    StoreError::Other {
        id: key.to_owned(),
        message: format!(
            "the SQL stores keep {} in rows that this operation does not change",
            table.name()
        ),
    }
}

/// The error of a row that does not read back.
fn corrupt(id: &str, what: &str) -> StoreError {
    StoreError::Other {
        id: id.to_owned(),
        message: format!("the checkpoint table holds {what}"),
    }
}

impl<DB: SqlDatabase> SqlRows<DB> {
    /// The same rows, read within `limit` bytes.
    pub(crate) fn with_limit(&self, limit: u64) -> Self {
        SqlRows {
            limit,
            ..self.clone()
        }
    }
}

impl<DB: SqlDatabase> SqlRows<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB> + Decode<'q, DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> &'q [u8]: Encode<'q, DB> + Type<DB>,
    for<'q> String: Decode<'q, DB> + Type<DB>,
    for<'q> Vec<u8>: Decode<'q, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
{
    /// How far the database's clock is ahead of this machine's, in ms: its clock read once,
    /// against the middle of this machine's times before and after the read.
    #[cfg(feature = "postgres")]
    pub(crate) async fn clock_skew(&self) -> Result<i64, StoreError> {
        let err = db_error("read the clock of", &self.shown);
        let before = crate::store::now_ms() as i64;
        let now = DB::DIALECT.fill("SELECT {NOW} AS now");
        let row = sqlx::query(&now)
            .fetch_one(&self.pool)
            .await
            .map_err(&err)?;
        let after = crate::store::now_ms() as i64;
        let theirs: i64 = row.try_get("now").map_err(&err)?;
        Ok(theirs - (before + (after - before) / 2))
    }

    /// A write transaction holding the lock of `name` (SQLite: the database's write lock;
    /// PostgreSQL: an advisory lock on the name), on the lease connections if `leases`.
    pub(crate) async fn begin(
        &self,
        name: &str,
        leases: bool,
    ) -> Result<Transaction<'static, DB>, StoreError> {
        let pool = if leases { &self.leases } else { &self.pool };
        let tx = write_tx(pool, &[Lock::Name(name, 0)]).await;
        tx.map_err(db_error("lock", name))
    }

    /// The record a row of run `id` holds (`RUN_COLUMNS`), and its bytes if the row has them.
    fn record(&self, id: &str, row: &DB::Row) -> Result<(Record, Option<Vec<u8>>), StoreError> {
        let err = db_error("read", id);
        let number = |name: &str| row.try_get::<i64, _>(name).map(|n| n as u64);
        let state: String = row.try_get("state").map_err(&err)?;
        let parent: Option<i64> = row.try_get("parent").map_err(&err)?;
        let ended: Option<i64> = row.try_get("ended_ms").map_err(&err)?;
        let record = Record {
            version: number("version").map_err(&err)?,
            parent: parent.map(|p| p as u64),
            state: parse_state(&state)
                .ok_or_else(|| corrupt(id, &format!("an unknown state '{state}'")))?,
            created_ms: number("created_ms").map_err(&err)?,
            ended_ms: ended.map(|t| t as u64),
            attempt: number("attempt").map_err(&err)?,
            lease_until_ms: number("lease_until_ms").map_err(&err)?,
            size: number("size").map_err(&err)?,
        };
        let bytes = match row.try_get::<Option<Vec<u8>>, _>("bytes") {
            Ok(bytes) => bytes,
            // A listing that does not read bytes has no such column.
            Err(sqlx::Error::ColumnNotFound(_)) => None,
            Err(e) => return Err(err(e)),
        };
        Ok((record, bytes))
    }

    /// The run `id` its rows make (oldest first, the head last), if any.
    fn run(&self, id: &str, rows: &[DB::Row]) -> Result<Option<Run>, StoreError> {
        let mut records = Vec::with_capacity(rows.len());
        let mut head = Head::Unread { size: 0 };
        for row in rows {
            let (record, bytes) = self.record(id, row)?;
            head = match bytes {
                Some(bytes) => Head::Bytes(Arc::new(bytes)),
                None => Head::Unread { size: record.size },
            };
            records.push(record);
        }
        Ok((!records.is_empty()).then_some(Run {
            records: Records { records },
            head,
        }))
    }

    /// Writes what a change made of run `id`, whose head was `before` (`None`: it had no
    /// rows), in `tx`.
    async fn write_run(
        &self,
        tx: &mut Transaction<'static, DB>,
        id: &str,
        before: Option<Record>,
        run: Option<&Run>,
    ) -> Result<(), StoreError> {
        let err = db_error("write", id);
        let Some(run) = run else {
            let delete = sqlx::query(&self.sql.run_delete).bind(id);
            delete.execute(&mut **tx).await.map_err(&err)?;
            return Ok(());
        };
        let records = &run.records.records;
        let kept = usize::from(before.is_some());
        let last = records.len().saturating_sub(1);
        for (k, record) in records.iter().enumerate() {
            let new = k >= kept;
            if !new && Some(record) == before.as_ref() && k == last {
                continue;
            }
            let numbers = (int(record.version), record.ended_ms.map(int));
            if !new {
                let update = sqlx::query(&self.sql.run_update).bind(id).bind(numbers.0);
                let update = update.bind(state_name(record.state)).bind(numbers.1);
                let update = update.bind(int(record.attempt));
                let update = update.bind(int(record.lease_until_ms));
                let update = update.bind(i64::from(k == last));
                update.execute(&mut **tx).await.map_err(&err)?;
                continue;
            }
            // Only the head's bytes are in hand: a change adds one record, the new head.
            let Head::Bytes(bytes) = run.head.clone() else {
                return Err(corrupt(id, "a new record without its bytes"));
            };
            if k != last {
                return Err(corrupt(id, "a new record without its bytes"));
            }
            let insert = sqlx::query(&self.sql.run_insert).bind(id);
            let insert = Self::bind_record(insert, record, &bytes[..]);
            insert.execute(&mut **tx).await.map_err(&err)?;
        }
        Ok(())
    }

    /// Changes run `id` with `f` (a save, a purge, a deletion; the changes of a head a claim
    /// names are [`swap_head`](Keep::swap_head)'s): on PostgreSQL a save is one statement
    /// after a read of the head; any other change runs in a transaction holding the run's
    /// lock, its head row locked (`FOR UPDATE` on PostgreSQL, where a conditional `UPDATE`
    /// takes no advisory lock) and read without its bytes (no rule of these changes reads
    /// them).
    async fn update_run<T, E: From<StoreError>>(
        &self,
        operation: &'static str,
        id: &str,
        mut f: impl FnMut(&mut Option<Run>) -> Result<Changed<T>, E>,
    ) -> Result<T, E> {
        let err = db_error(operation, id);
        if let Some(swap_append) = &self.sql.run_swap_append {
            if let Some(answer) = self.swap_append(swap_append, operation, id, &mut f).await? {
                return Ok(answer);
            }
        }
        let mut tx = self.begin(id, false).await?;
        let head = sqlx::query(&self.sql.run_head_locked).bind(id).bind(0_i64);
        let head = head.fetch_optional(&mut *tx).await.map_err(&err)?;
        let mut run = self.run(id, head.as_slice())?;
        let before = run.as_ref().and_then(|r| r.records.head().cloned());
        let (answer, changed) = f(&mut run)?;
        if changed && (before.is_some() || run.is_some()) {
            self.write_run(&mut tx, id, before, run.as_ref()).await?;
            tx.commit().await.map_err(&err)?;
        }
        Ok(answer)
    }

    /// A change that adds a record after the head, where the database runs it in one
    /// statement (`RUN_SWAP_APPEND`, PostgreSQL): the head read (without its bytes), the
    /// front's rule, then the head rewritten if it still holds the values read and the new
    /// record inserted, at once (or the first record inserted, the key refusing a second);
    /// tried again when another writer was first. `None`: the change is of another shape
    /// (a removal), for the locked transaction.
    async fn swap_append<T, E: From<StoreError>>(
        &self,
        swap_append: &str,
        operation: &'static str,
        id: &str,
        f: &mut impl FnMut(&mut Option<Run>) -> Result<Changed<T>, E>,
    ) -> Result<Option<T>, E> {
        let err = db_error(operation, id);
        for _ in 0..MAX_SWAPS {
            let head = sqlx::query(&self.sql.run_head).bind(id).bind(0_i64);
            let head = head.fetch_optional(&self.pool).await.map_err(&err)?;
            let mut run = self.run(id, head.as_slice())?;
            let before = run.as_ref().and_then(|r| r.records.head().cloned());
            let (answer, changed) = f(&mut run)?;
            if !changed {
                return Ok(Some(answer));
            }
            let Some((new, Head::Bytes(bytes))) = run.as_ref().and_then(|r| {
                let records = &r.records.records;
                let kept = usize::from(before.is_some());
                (records.len() == kept + 1).then(|| (records, r.head.clone()))
            }) else {
                return Ok(None);
            };
            let child = &new[new.len() - 1];
            let (query, old) = match (&before, new.first()) {
                (Some(old), Some(head)) => {
                    let swap = sqlx::query(swap_append).bind(id).bind(int(head.version));
                    let swap = swap
                        .bind(state_name(head.state))
                        .bind(head.ended_ms.map(int));
                    let swap = swap.bind(int(head.attempt)).bind(int(head.lease_until_ms));
                    let swap = swap.bind(state_name(old.state)).bind(int(old.attempt));
                    (swap.bind(int(old.lease_until_ms)), true)
                }
                _ => (sqlx::query(&self.sql.run_insert).bind(id), false),
            };
            match Self::bind_record(query, child, &bytes[..])
                .execute(&self.pool)
                .await
            {
                Ok(done) if DB::rows_affected(&done) == 1 => return Ok(Some(answer)),
                // The head changed since it was read: read it again.
                Ok(_) if old => {}
                Ok(_) => return Err(corrupt(id, "no row after an insert").into()),
                Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {}
                Err(e) => return Err(err(e).into()),
            }
        }
        Err(StoreError::Other {
            id: id.to_owned(),
            message: format!(
                "could not {operation}: the run kept changing while it was written; try again"
            ),
        }
        .into())
    }

    /// `query` with `record`'s columns bound next (version, parent, state, created, ended,
    /// attempt, lease end, size), then `bytes`: the values of a new record's row.
    fn bind_record<'q>(query: Query<'q, DB>, record: &Record, bytes: &'q [u8]) -> Query<'q, DB> {
        let query = query.bind(int(record.version)).bind(record.parent.map(int));
        let query = query
            .bind(state_name(record.state))
            .bind(int(record.created_ms));
        let query = query
            .bind(record.ended_ms.map(int))
            .bind(int(record.attempt));
        let query = query
            .bind(int(record.lease_until_ms))
            .bind(int(record.size));
        query.bind(bytes)
    }

    /// `query` with what `swap` makes of the head bound next, as [`swap_sql`] numbers it
    /// for the columns `swap` writes ([`sets`]).
    fn bind_swap<'q>(query: Query<'q, DB>, swap: &HeadSwap) -> Query<'q, DB> {
        let sets = sets(swap);
        let mut query = query.bind(swap.lease_until_ms.map(int));
        query = query.bind(i64::from(swap.next_attempt));
        if sets & SETS_STATE != 0 {
            query = query.bind(state_name(swap.state));
        }
        if sets & SETS_END != 0 {
            query = query.bind(swap.ended_ms.map(int));
        }
        if sets & SETS_HEAD != 0 {
            query = query.bind(i64::from(swap.child.is_none()));
        }
        query
    }

    /// The claim a row a claim returned (`id` if the row does not name its run) holds.
    fn claimed(&self, id: Option<&str>, row: &DB::Row) -> Result<Claim, StoreError> {
        let err = db_error("claim", id.unwrap_or("runs"));
        let id = match id {
            Some(id) => id.to_owned(),
            None => row.try_get("id").map_err(&err)?,
        };
        let number = |name: &str| row.try_get::<i64, _>(name).map(|n| n as u64);
        Ok(Claim {
            version: number("version").map_err(&err)?,
            attempt: number("attempt").map_err(&err)?,
            bytes: row.try_get("bytes").map_err(&err)?,
            id,
        })
    }

    /// Writes `swap` to the head claim `(version, attempt)` holds of run `id`: one
    /// conditional `UPDATE` (on the lease connections), or with the record it adds: one
    /// statement where the dialect has it (PostgreSQL), else the `UPDATE` and the insert in a
    /// transaction holding the run's lock. Whether the claim held the head.
    async fn swap_held<'q>(
        &'q self,
        operation: &'static str,
        id: &'q str,
        (version, attempt): (u64, u64),
        swap: &'q HeadSwap,
    ) -> Result<bool, StoreError> {
        let err = db_error(operation, id);
        let held = |statement: &'q [String]| {
            let query = sqlx::query(&statement[sets(swap)])
                .bind(id)
                .bind(int(version));
            Self::bind_swap(query.bind(int(attempt)), swap)
        };
        let done = match (&swap.child, &self.sql.head_held_append) {
            (None, _) => held(&self.sql.head_held).execute(&self.leases).await,
            (Some((child, bytes)), Some(one)) => {
                let query = Self::bind_record(held(&one[..]), child, bytes);
                query.execute(&self.pool).await
            }
            (Some((child, bytes)), None) => {
                let mut tx = self.begin(id, false).await?;
                let done = held(&self.sql.head_held).execute(&mut *tx).await;
                if DB::rows_affected(&done.map_err(&err)?) == 0 {
                    return Ok(false);
                }
                let insert = sqlx::query(&self.sql.run_insert).bind(id);
                let insert = Self::bind_record(insert, child, bytes);
                insert.execute(&mut *tx).await.map_err(&err)?;
                tx.commit().await.map_err(&err)?;
                return Ok(true);
            }
        };
        Ok(DB::rows_affected(&done.map_err(&err)?) == 1)
    }

    /// The turn lease on thread `id`, if any, read in `db`.
    async fn lease<'c, X: Executor<'c, Database = DB>>(
        &self,
        db: X,
        id: &str,
    ) -> Result<Option<Lease>, StoreError> {
        let err = db_error("read the lease of", id);
        let read = sqlx::query(&self.sql.lease_read).bind(id);
        let Some(row) = read.fetch_optional(db).await.map_err(&err)? else {
            return Ok(None);
        };
        Self::lease_of(&row).map(Some).map_err(err)
    }

    /// A turn lease from its row (`owner`, `lease_until_ms`).
    fn lease_of(row: &DB::Row) -> Result<Lease, sqlx::Error> {
        Ok(Lease {
            owner: row.try_get("owner")?,
            until_ms: row.try_get::<i64, _>("lease_until_ms")? as u64,
        })
    }

    /// Changes the turn lease on thread `id` with `f` in a transaction holding its lock, on
    /// the lease connections.
    async fn update_lease<T, E: From<StoreError>>(
        &self,
        operation: &'static str,
        id: &str,
        f: impl FnOnce(&mut Option<Lease>) -> Result<Changed<T>, E>,
    ) -> Result<T, E> {
        let err = db_error(operation, id);
        let mut tx = self.begin(&format!("lease:{id}"), true).await?;
        let mut lease = self.lease(&mut *tx, id).await?;
        let held = lease.is_some();
        let (answer, changed) = f(&mut lease)?;
        if !changed {
            return Ok(answer);
        }
        let write = match &lease {
            Some(lease) => sqlx::query(&self.sql.lease_write)
                .bind(id)
                .bind(&lease.owner[..])
                .bind(int(lease.until_ms)),
            None if held => sqlx::query(&self.sql.lease_delete).bind(id),
            None => return Ok(answer),
        };
        write.execute(&mut *tx).await.map_err(&err)?;
        tx.commit().await.map_err(&err)?;
        Ok(answer)
    }

    /// The runs whose head `rows` are (one row each), each given to `f`.
    fn each_head<T>(
        &self,
        rows: &[DB::Row],
        mut f: impl FnMut(&str, &Run) -> Result<Option<T>, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let mut picked = Vec::new();
        for row in rows {
            let id: String = row.try_get("id").map_err(db_error("list", "runs"))?;
            if let Some(run) = self.run(&id, std::slice::from_ref(row))? {
                picked.extend(f(&id, &run)?);
            }
        }
        Ok(picked)
    }
}

impl<DB: SqlDatabase> Keep for SqlRows<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB> + Decode<'q, DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> &'q [u8]: Encode<'q, DB> + Type<DB>,
    for<'q> String: Decode<'q, DB> + Type<DB>,
    for<'q> Vec<u8>: Decode<'q, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
{
    const KEEPS_DEFERRED: bool = false;

    /// The database's clock, as this machine's corrected by the skew measured on connecting:
    /// every worker sharing the database measures claims and leases on one clock.
    fn now_ms(&self) -> u64 {
        (crate::store::now_ms() as i64)
            .saturating_add(self.skew_ms)
            .max(0) as u64
    }

    async fn view<V: Value, T: Send>(
        &self,
        key: &str,
        f: impl FnOnce(Option<&V>) -> Result<T, StoreError> + Send,
    ) -> Result<T, StoreError> {
        match V::TABLE {
            Table::Checkpoints => {
                let rows = sqlx::query(&self.sql.run_rows)
                    .bind(key)
                    .bind(int(self.limit));
                let rows = rows.fetch_all(&self.pool).await;
                let run = self.run(key, &rows.map_err(db_error("read", key))?)?;
                f(run.as_ref().map(kind))
            }
            Table::ThreadLeases => f(self.lease(&self.pool, key).await?.as_ref().map(kind)),
            t => Err(unkept(t, key)),
        }
    }

    async fn update<V: Value, T: Send, E: From<StoreError> + Send>(
        &self,
        operation: &'static str,
        key: &str,
        mut f: impl FnMut(&mut Option<V>) -> Result<Changed<T>, E> + Send,
    ) -> Result<T, E> {
        match V::TABLE {
            Table::Checkpoints => self.update_run(operation, key, |run| f(cast(run))).await,
            Table::ThreadLeases => {
                self.update_lease(operation, key, |lease| f(cast(lease)))
                    .await
            }
            t => Err(unkept(t, key).into()),
        }
    }

    async fn each<V: Value, T: Send>(
        &self,
        mut f: impl FnMut(&str, &V) -> Result<Option<T>, StoreError> + Send,
    ) -> Result<Vec<T>, StoreError> {
        let err = db_error("list", V::TABLE.name());
        match V::TABLE {
            Table::Checkpoints => {
                let rows = sqlx::query(&self.sql.heads_all).fetch_all(&self.pool).await;
                self.each_head(&rows.map_err(&err)?, |id, run| f(id, kind(run)))
            }
            Table::ThreadLeases => {
                let rows = sqlx::query(&self.sql.leases_all)
                    .fetch_all(&self.pool)
                    .await;
                let mut picked = Vec::new();
                for row in rows.map_err(&err)? {
                    let id: String = row.try_get("thread").map_err(&err)?;
                    let lease = Self::lease_of(&row).map_err(&err)?;
                    picked.extend(f(&id, kind(&lease))?);
                }
                Ok(picked)
            }
            t => Err(unkept(t, t.name())),
        }
    }

    async fn heads<V: Value, T: Send>(
        &self,
        heads: Heads,
        limit: usize,
        mut f: impl FnMut(&str, &V) -> Result<Option<T>, StoreError> + Send,
    ) -> Result<Vec<T>, StoreError> {
        if V::TABLE != Table::Checkpoints {
            return self.each(f).await;
        }
        let limit = int(limit as u64);
        let query = match heads {
            Heads::Waiting => sqlx::query(&self.sql.heads_waiting)
                .bind(limit)
                .bind(int(self.limit)),
            Heads::Claimable { now_ms, max } => sqlx::query(&self.sql.heads_claimable)
                .bind(limit)
                .bind(int(max))
                .bind(int(now_ms)),
            Heads::FinishedBy(cutoff) => sqlx::query(&self.sql.heads_finished).bind(int(cutoff)),
        };
        let rows = query.fetch_all(&self.pool).await;
        let rows = rows.map_err(db_error("list", "runs"))?;
        self.each_head(&rows, |id, run| f(id, kind(run)))
    }

    /// The head's row alone, or every row without the head's bytes.
    async fn view_run<T: Send>(
        &self,
        id: &str,
        part: RunPart,
        f: impl FnOnce(Option<&Run>) -> Result<T, StoreError> + Send,
    ) -> Result<T, StoreError> {
        let err = db_error("read", id);
        let run = match part {
            RunPart::Head => {
                let head = sqlx::query(&self.sql.run_head).bind(id);
                let head = head.bind(int(self.limit)).fetch_optional(&self.pool).await;
                self.run(id, head.map_err(&err)?.as_slice())?
            }
            RunPart::Records => {
                // No head is at most -1 bytes: none of its bytes are read.
                let rows = sqlx::query(&self.sql.run_rows).bind(id).bind(-1_i64);
                self.run(id, &rows.fetch_all(&self.pool).await.map_err(&err)?)?
            }
        };
        f(run.as_ref())
    }

    /// The head row's size and bytes alone.
    async fn head_bytes(&self, id: &str) -> Result<Option<Head>, StoreError> {
        let err = db_error("read", id);
        let read = sqlx::query(&self.sql.run_bytes)
            .bind(id)
            .bind(int(self.limit));
        let Some(row) = read.fetch_optional(&self.pool).await.map_err(&err)? else {
            return Ok(None);
        };
        let size = row.try_get::<i64, _>("size").map_err(&err)? as u64;
        Ok(Some(
            match row.try_get::<Option<Vec<u8>>, _>("bytes").map_err(&err)? {
                Some(bytes) => Head::Bytes(Arc::new(bytes)),
                None => Head::Unread { size },
            },
        ))
    }

    /// A claim in one `UPDATE ... RETURNING`; a change of a held head in one conditional
    /// `UPDATE` (a completion: and its child's insert); never a read first.
    async fn swap_head(
        &self,
        operation: &'static str,
        id: &str,
        swap: &HeadSwap,
    ) -> Result<Option<Claim>, StoreError> {
        match swap.is {
            HeadIs::Claimable { now_ms, max } => {
                let claim = sqlx::query(&self.sql.head_claim[sets(swap)]);
                let claim = claim.bind(id).bind(int(max));
                let claim = Self::bind_swap(claim.bind(int(now_ms)), swap);
                let row = claim.fetch_optional(&self.leases).await;
                let row = row.map_err(db_error(operation, id))?;
                row.map(|row| self.claimed(Some(id), &row)).transpose()
            }
            HeadIs::Held { version, attempt } => {
                let held = self.swap_held(operation, id, (version, attempt), swap);
                Ok(held.await?.then(|| Claim {
                    id: id.to_owned(),
                    version,
                    attempt,
                    bytes: Vec::new(),
                }))
            }
        }
    }

    /// A batch claim in one statement on the lease connections.
    async fn swap_heads(
        &self,
        operation: &'static str,
        swap: &HeadSwap,
        limit: usize,
    ) -> Result<Vec<Claim>, StoreError> {
        let HeadIs::Claimable { now_ms, max } = swap.is else {
            return Ok(Vec::new());
        };
        let claim = sqlx::query(&self.sql.heads_claim[sets(swap)]);
        let claim = claim.bind(int(limit as u64));
        let claim = claim.bind(int(max)).bind(int(now_ms));
        let rows = Self::bind_swap(claim, swap).fetch_all(&self.leases).await;
        let rows = rows.map_err(db_error(operation, "runs"))?;
        rows.iter().map(|row| self.claimed(None, row)).collect()
    }

    async fn append<L: Log>(
        &self,
        operation: &'static str,
        key: &str,
        expected: u64,
        _count: usize,
        batch: L::Batch,
    ) -> Result<Result<u64, u64>, L::Error> {
        self.append_log::<L>(operation, key, expected, batch, true)
            .await
    }

    async fn append_unsynced<L: Log>(
        &self,
        operation: &'static str,
        key: &str,
        expected: u64,
        _count: usize,
        batch: L::Batch,
    ) -> Result<Result<u64, u64>, L::Error> {
        self.append_log::<L>(operation, key, expected, batch, false)
            .await
    }

    async fn read<L: Log>(
        &self,
        key: &str,
        window: impl FnOnce(usize) -> Range<usize> + Send,
    ) -> Result<(usize, L::Part), L::Error> {
        self.read_log::<L>(key, window).await
    }

    async fn cut<L: Log>(
        &self,
        operation: &'static str,
        key: &str,
        len: usize,
    ) -> Result<(), L::Error> {
        self.cut_log::<L>(operation, key, len).await
    }

    async fn remove<L: Log>(&self, operation: &'static str, key: &str) -> Result<usize, L::Error> {
        self.remove_log::<L>(operation, key).await
    }

    async fn logs<L: Log>(&self) -> Result<Vec<Listed<L::Part>>, L::Error> {
        self.list_logs::<L>().await
    }
}
