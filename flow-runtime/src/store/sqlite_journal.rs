//! The journal appends of a [`SqliteStore`](super::SqliteStore), committed in groups: one
//! writer per store (its clones share it) takes every append waiting when it starts a write
//! and commits them in one transaction, so the runs that share a database file share its
//! commits (one `fsync` of the WAL for all of them, `synchronous=FULL`). An append returns only
//! once the transaction holding its steps is committed; each append keeps its own condition
//! (the journal holds exactly `expected` steps: else [`JournalError::Conflict`] for it alone,
//! and the others are written). SQLite has one writer per file anyway: the group makes the
//! waiting writers one. After a commit the writer yields once, so the runs it released queue
//! their next steps into the next group (runs that step together commit together), and a
//! group's round trips to the database do not grow with its appends (see `write_group`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::store::sql::db_error;
use crate::store::{JournalError, StoreError, StoredStep};

/// Rows per `INSERT` statement (6 parameters a row, under SQLite's 999-parameter floor).
const ROWS_PER_INSERT: usize = 128;

/// Runs whose lengths one `SELECT` reads (one parameter each).
const RUNS_PER_SELECT: usize = 500;

/// One waiting append.
pub(crate) struct Append {
    pub(crate) run: String,
    pub(crate) expected: u64,
    pub(crate) steps: Vec<StoredStep>,
    pub(crate) done: oneshot::Sender<Result<u64, JournalError>>,
}

/// The appends waiting for the writer, and whether it runs.
#[derive(Default)]
pub(crate) struct GroupCommit {
    queue: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    waiting: Vec<Append>,
    writing: bool,
}

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

impl GroupCommit {
    /// Queues `append`; `true` if the caller must start the writer (none runs).
    pub(crate) fn push(&self, append: Append) -> bool {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        queue.waiting.push(append);
        !std::mem::replace(&mut queue.writing, true)
    }

    /// The appends waiting now, or `None` (and the writer stops) if there are none.
    fn take(&self) -> Option<Vec<Append>> {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        if queue.waiting.is_empty() {
            queue.writing = false;
            return None;
        }
        Some(std::mem::take(&mut queue.waiting))
    }
}

/// Stops the writer if its task ends early (a panic): the waiting appends get an error, and
/// the next append starts a new writer.
struct WriterGuard(Arc<GroupCommit>, bool);

impl Drop for WriterGuard {
    fn drop(&mut self) {
        if !self.1 {
            return;
        }
        let waiting = {
            let mut queue = self.0.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.writing = false;
            std::mem::take(&mut queue.waiting)
        };
        for append in waiting {
            let _ = append.done.send(Err(stopped(&append.run)));
        }
    }
}

fn stopped(run: &str) -> JournalError {
    JournalError::Store(StoreError::Other {
        id: run.to_owned(),
        message: "the store's journal writer stopped before this append was committed; \
                  nothing of it was written"
            .into(),
    })
}

impl crate::store::sql::SqlRows<sqlx::Sqlite> {
    /// Appends `steps` to `run`'s journal through the store's group writer.
    pub(crate) async fn append_grouped(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<StoredStep>,
    ) -> Result<u64, JournalError> {
        let (done, result) = oneshot::channel();
        let append = Append {
            run: run.to_owned(),
            expected,
            steps,
            done,
        };
        if self.extra.group.push(append) {
            tokio::spawn(self.clone().write_groups());
        }
        result.await.unwrap_or_else(|_| Err(stopped(run)))
    }

    /// The writer: commits the waiting appends, a group per transaction, until none wait.
    async fn write_groups(self) {
        let mut guard = WriterGuard(Arc::clone(&self.extra.group), true);
        while let Some(group) = self.extra.group.take() {
            let results = self.write_group(&group).await;
            for (append, result) in group.into_iter().zip(results) {
                let _ = append.done.send(result);
            }
            // The runs just released make their next step now: let them queue it before
            // the next group is taken, so it joins that group's commit instead of waiting
            // for the one after (without this, runs fall into two alternating groups).
            tokio::task::yield_now().await;
        }
        guard.1 = false;
    }

    /// Writes `group` in one transaction; each append's result. The round trips to the
    /// database do not grow with the group: an append alone is one conditional `INSERT`;
    /// a group reads the lengths of every journal it appends to in one query, then the steps of the appends whose condition holds in multi-row
    /// `INSERT`s (one per [`ROWS_PER_INSERT`] rows), then the commit. The transaction holds
    /// the file's write lock, so the lengths read stay true until it commits; the appends are
    /// checked in order, as if each ran alone.
    async fn write_group(&self, group: &[Append]) -> Vec<Result<u64, JournalError>> {
        let everyone = |e: &StoreError| -> Vec<Result<u64, JournalError>> {
            group
                .iter()
                .map(|_| Err(JournalError::Store(e.clone())))
                .collect()
        };
        let first = group.first().map_or("journal", |a| a.run.as_str());
        let mut tx = match self.begin(first, false).await {
            Ok(tx) => tx,
            Err(e) => return everyone(&e),
        };
        if let [append] = group {
            // Alone: its condition is part of its `INSERT` (no read of the length first).
            let result = match self
                .insert_steps(&mut tx, &append.run, append.expected, &append.steps)
                .await
            {
                Ok(result) => result,
                Err(e) => return everyone(&e),
            };
            if result.is_ok() {
                if let Err(e) = tx.commit().await {
                    let e = db_error("append to the journal of", first)(e);
                    return everyone(&e);
                }
            }
            return vec![result];
        }
        let mut lens = match journal_lens(&mut tx, group).await {
            Ok(lens) => lens,
            Err(e) => return everyone(&db_error("append to the journal of", first)(e)),
        };
        let mut results = Vec::with_capacity(group.len());
        // The rows to insert: each accepted append's steps, numbered from its `expected`.
        let mut rows: Vec<(&str, u64, &StoredStep)> = Vec::new();
        for append in group {
            let len = lens.entry(append.run.as_str()).or_insert(0);
            if *len != append.expected {
                results.push(Err(JournalError::Conflict {
                    run: append.run.clone(),
                    expected: append.expected,
                    found: *len,
                }));
                continue;
            }
            for (k, step) in append.steps.iter().enumerate() {
                rows.push((append.run.as_str(), append.expected + k as u64, step));
            }
            *len += append.steps.len() as u64;
            results.push(Ok(*len));
        }
        for chunk in rows.chunks(ROWS_PER_INSERT) {
            if let Err(e) = insert_rows(&mut tx, chunk).await {
                // The transaction is in an unknown state: nobody's steps are committed.
                return everyone(&db_error("append to the journal of", chunk[0].0)(e));
            }
        }
        if let Err(e) = tx.commit().await {
            let e = db_error("append to the journal of", first)(e);
            return everyone(&e);
        }
        results
    }

    /// Appends without an `fsync` of its own: one transaction on the lease connections
    /// (`synchronous=NORMAL`), which the write-ahead log makes durable with the next synced
    /// commit of the file; a crash of the process loses nothing committed, a power loss may
    /// lose these steps ([`Durability::Async`](crate::Durability::Async) appends this way).
    pub(crate) async fn append_unsynced(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<StoredStep>,
    ) -> Result<u64, JournalError> {
        let err = db_error("append to the journal of", run);
        let mut tx = self
            .leases
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(&err)?;
        let done = self.insert_steps(&mut tx, run, expected, &steps).await?;
        if done.is_ok() {
            tx.commit().await.map_err(&err)?;
        }
        done
    }

    /// Inserts `steps` in `tx` at `expected` on, if `run`'s journal holds `expected` steps:
    /// the condition is part of each `INSERT` (one statement per 128 steps, no separate
    /// read); else the conflict, nothing inserted.
    async fn insert_steps(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
        run: &str,
        expected: u64,
        steps: &[StoredStep],
    ) -> Result<Result<u64, JournalError>, StoreError> {
        use sqlx::Row;
        let err = db_error("append to the journal of", run);
        let mut seq = expected;
        for rows in steps.chunks(ROWS_PER_INSERT) {
            // `$1` the run, `$2` the first row's seq: the journal's length it must have.
            let mut sql = String::from(
                "INSERT INTO agentflow_journal (run, seq, at_ms, kind, size, bytes) \
                 SELECT * FROM (VALUES ",
            );
            push_rows(&mut sql, rows.len(), "$1, ", 2, 5);
            sql.push_str(
                ") WHERE (SELECT COALESCE(MAX(seq) + 1, 0) FROM agentflow_journal \
                 WHERE run = $1) = $2",
            );
            let mut query = sqlx::query(&sql).bind(run);
            for (k, step) in rows.iter().enumerate() {
                query = query
                    .bind((seq + k as u64) as i64)
                    .bind(step.at_ms.min(i64::MAX as u64) as i64)
                    .bind(&step.kind)
                    .bind(step.bytes.len() as i64)
                    .bind(&step.bytes[..]);
            }
            let done = query.execute(&mut **tx).await.map_err(&err)?;
            if done.rows_affected() != rows.len() as u64 {
                // The condition holds for the whole statement, so nothing was inserted; and
                // only the first chunk can fail it (the transaction holds the write lock).
                let found: i64 = sqlx::query(&self.sql.journal_len)
                    .bind(run)
                    .fetch_one(&mut **tx)
                    .await
                    .map_err(&err)?
                    .try_get("len")
                    .map_err(&err)?;
                return Ok(Err(JournalError::Conflict {
                    run: run.to_owned(),
                    expected,
                    found: found as u64,
                }));
            }
            seq += rows.len() as u64;
        }
        Ok(Ok(seq))
    }
}

/// The length of the journal of every run `group` appends to (a run with no steps is absent),
/// in one query.
async fn journal_lens<'g>(
    tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
    group: &'g [Append],
) -> Result<HashMap<&'g str, u64>, sqlx::Error> {
    use sqlx::Row;
    let mut runs: Vec<&str> = group.iter().map(|a| a.run.as_str()).collect();
    runs.sort_unstable();
    runs.dedup();
    let mut lens = HashMap::with_capacity(runs.len());
    for chunk in runs.chunks(RUNS_PER_SELECT) {
        let mut sql =
            String::from("SELECT run, MAX(seq) + 1 AS len FROM agentflow_journal WHERE run IN (");
        for k in 1..=chunk.len() {
            if k > 1 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("${k}"));
        }
        sql.push_str(") GROUP BY run");
        let mut query = sqlx::query(&sql);
        for run in chunk {
            query = query.bind(*run);
        }
        for row in query.fetch_all(&mut **tx).await? {
            let run: String = row.try_get("run")?;
            let len: i64 = row.try_get("len")?;
            if let Some(run) = chunk.iter().find(|r| **r == run) {
                lens.insert(*run, len as u64);
            }
        }
    }
    Ok(lens)
}

/// Appends the row tuples of a multi-row `VALUES`: `rows` tuples, each `lead` (placeholders
/// every row shares, e.g. `$1, `) then `width` numbered placeholders, numbered on from
/// `$first`: `($1, $2, ..., $6), ($1, $7, ...)` for `lead` `$1, `, `first` 2, `width` 5.
fn push_rows(sql: &mut String, rows: usize, lead: &str, first: usize, width: usize) {
    use std::fmt::Write;
    for k in 0..rows {
        if k > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        sql.push_str(lead);
        for c in 0..width {
            if c > 0 {
                sql.push_str(", ");
            }
            let _ = write!(sql, "${}", first + width * k + c);
        }
        sql.push(')');
    }
}

/// Inserts `rows` (run, seq, step) in one statement.
async fn insert_rows(
    tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
    rows: &[(&str, u64, &StoredStep)],
) -> Result<(), sqlx::Error> {
    let mut sql =
        String::from("INSERT INTO agentflow_journal (run, seq, at_ms, kind, size, bytes) VALUES ");
    push_rows(&mut sql, rows.len(), "", 1, 6);
    let mut query = sqlx::query(&sql);
    for (run, seq, step) in rows {
        query = query
            .bind(*run)
            .bind((*seq).min(i64::MAX as u64) as i64)
            .bind(step.at_ms.min(i64::MAX as u64) as i64)
            .bind(&step.kind)
            .bind(step.bytes.len() as i64)
            .bind(&step.bytes[..]);
    }
    query.execute(&mut **tx).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::push_rows;

    #[test]
    fn row_tuples_number_their_placeholders_on_from_the_first() {
        let mut shared_run = String::new();
        push_rows(&mut shared_run, 2, "$1, ", 2, 5);
        assert_eq!(
            shared_run,
            "($1, $2, $3, $4, $5, $6), ($1, $7, $8, $9, $10, $11)"
        );
        let mut own = String::new();
        push_rows(&mut own, 2, "", 1, 6);
        assert_eq!(own, "($1, $2, $3, $4, $5, $6), ($7, $8, $9, $10, $11, $12)");
        let mut none = String::new();
        push_rows(&mut none, 0, "", 1, 6);
        assert!(none.is_empty());
    }
}
