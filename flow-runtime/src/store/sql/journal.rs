//! The [`JournalStore`](crate::store::JournalStore) contract as SQL statements, and the macro
//! that implements it for a SQL store type: one row per step, keyed by `(run, seq)`.

/// A journal's length: its number of steps.
pub(crate) const JOURNAL_LEN: &str =
    "SELECT COALESCE(MAX(seq) + 1, 0) AS len FROM agentflow_journal WHERE run = $1";

pub(crate) const JOURNAL_INSERT: &str =
    "INSERT INTO agentflow_journal (run, seq, at_ms, kind, size, bytes)
    VALUES ($1, $2, $3, $4, $5, $6)";

/// The steps from `$2` on (bytes only if at most `$3` bytes).
pub(crate) const JOURNAL_READ: &str =
    "SELECT seq, at_ms, kind, size, CASE WHEN size <= $3 THEN bytes END AS bytes
    FROM agentflow_journal WHERE run = $1 AND seq >= $2 ORDER BY seq";

pub(crate) const JOURNAL_TRUNCATE: &str =
    "DELETE FROM agentflow_journal WHERE run = $1 AND seq >= $2";

pub(crate) const JOURNAL_DELETE: &str = "DELETE FROM agentflow_journal WHERE run = $1";

/// The journals whose last step was appended at or before `$1`, with their lengths.
pub(crate) const JOURNAL_IDLE: &str = "SELECT run, MAX(seq) + 1 AS len, MAX(at_ms) AS last_at_ms
    FROM agentflow_journal GROUP BY run HAVING MAX(at_ms) <= $1 ORDER BY run";

/// Implements [`JournalStore`](crate::store::JournalStore) for a SQL store type with the fields
/// and `begin` of `sql_checkpoint_store` and an `append_journal` of its own: PostgreSQL's is
/// `append_in_tx`, one transaction holding the journal's lock (`begin("journal:RUN")`) that
/// checks the length and inserts its steps (one commit for any number of steps); SQLite's
/// commits the appends waiting at once in one transaction (`sqlite_journal.rs`). The `(run, seq)`
/// key refuses a second step at one position even without the lock.
macro_rules! sql_journal_store {
    ($store:ty, $row:ty) => {
        impl $store {
            fn journal_db_error<'a>(
                operation: &'static str,
                run: &'a str,
            ) -> impl Fn(sqlx::Error) -> $crate::store::JournalError + 'a {
                move |e| $crate::store::JournalError::Store(Self::db_error(operation, run)(e))
            }

            /// What every append checks before it writes: the run id, each step's kind and
            /// size.
            fn check_steps(
                &self,
                run: &str,
                steps: &[$crate::store::StoredStep],
            ) -> Result<(), $crate::store::JournalError> {
                validate_id(run)?;
                for step in steps {
                    $crate::store::journal_check_kind(&step.kind)?;
                    check_size(run, step.bytes.len() as u64, self.max_bytes)?;
                }
                Ok(())
            }
        }

        impl $store {
            /// Appends in one transaction holding the journal's lock (what
            /// `append_journal` does where the store has no writer of its own).
            #[allow(dead_code)]
            async fn append_in_tx(
                &self,
                run: &str,
                expected: u64,
                steps: Vec<$crate::store::StoredStep>,
            ) -> Result<u64, $crate::store::JournalError> {
                use sqlx::Row;
                let err = Self::journal_db_error("append to the journal of", run);
                let mut tx = self.begin(&format!("journal:{run}")).await?;
                let found: i64 = sqlx::query(&self.sql.journal_len)
                    .bind(run)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(&err)?
                    .try_get("len")
                    .map_err(&err)?;
                if found as u64 != expected {
                    return Err($crate::store::JournalError::Conflict {
                        run: run.to_owned(),
                        expected,
                        found: found as u64,
                    });
                }
                let n = steps.len() as u64;
                for (k, step) in steps.iter().enumerate() {
                    let inserted = sqlx::query(&self.sql.journal_insert)
                        .bind(run)
                        .bind((expected + k as u64) as i64)
                        .bind(step.at_ms.min(i64::MAX as u64) as i64)
                        .bind(&step.kind)
                        .bind(step.bytes.len() as i64)
                        .bind(&step.bytes[..])
                        .execute(&mut *tx)
                        .await;
                    match inserted {
                        Ok(_) => {}
                        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                            return Err($crate::store::JournalError::Conflict {
                                run: run.to_owned(),
                                expected,
                                found: expected + k as u64 + 1,
                            })
                        }
                        Err(e) => return Err(err(e)),
                    }
                }
                tx.commit().await.map_err(&err)?;
                Ok(expected + n)
            }
        }

        #[async_trait::async_trait]
        impl $crate::store::JournalStore for $store {
            async fn append_steps(
                &self,
                run: &str,
                expected: u64,
                steps: Vec<$crate::store::StoredStep>,
            ) -> Result<u64, $crate::store::JournalError> {
                self.check_steps(run, &steps)?;
                self.append_journal(run, expected, steps).await
            }

            async fn append_steps_unsynced(
                &self,
                run: &str,
                expected: u64,
                steps: Vec<$crate::store::StoredStep>,
            ) -> Result<u64, $crate::store::JournalError> {
                self.check_steps(run, &steps)?;
                self.append_journal_unsynced(run, expected, steps).await
            }

            async fn read_steps(
                &self,
                run: &str,
                from: u64,
            ) -> Result<Vec<$crate::store::StoredStep>, $crate::store::JournalError> {
                use sqlx::Row;
                validate_id(run)?;
                let err = Self::journal_db_error("read the journal of", run);
                let rows = sqlx::query(&self.sql.journal_read)
                    .bind(run)
                    .bind(from.min(i64::MAX as u64) as i64)
                    .bind(self.max_bytes as i64)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(&err)?;
                let mut out = Vec::with_capacity(rows.len());
                for row in rows {
                    let size: i64 = row.try_get("size").map_err(&err)?;
                    check_size(run, size as u64, self.max_bytes)?;
                    let bytes: Option<Vec<u8>> = row.try_get("bytes").map_err(&err)?;
                    out.push($crate::store::StoredStep {
                        seq: row.try_get::<i64, _>("seq").map_err(&err)? as u64,
                        at_ms: row.try_get::<i64, _>("at_ms").map_err(&err)? as u64,
                        kind: row.try_get("kind").map_err(&err)?,
                        bytes: bytes.unwrap_or_default(),
                    });
                }
                Ok(out)
            }

            async fn journal_len(&self, run: &str) -> Result<u64, $crate::store::JournalError> {
                use sqlx::Row;
                validate_id(run)?;
                let err = Self::journal_db_error("read the journal of", run);
                let len: i64 = sqlx::query(&self.sql.journal_len)
                    .bind(run)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(&err)?
                    .try_get("len")
                    .map_err(&err)?;
                Ok(len as u64)
            }

            async fn truncate_steps(
                &self,
                run: &str,
                len: u64,
            ) -> Result<(), $crate::store::JournalError> {
                validate_id(run)?;
                sqlx::query(&self.sql.journal_truncate)
                    .bind(run)
                    .bind(len.min(i64::MAX as u64) as i64)
                    .execute(&self.pool)
                    .await
                    .map_err(Self::journal_db_error("truncate the journal of", run))?;
                Ok(())
            }

            async fn delete_journal(&self, run: &str) -> Result<bool, $crate::store::JournalError> {
                validate_id(run)?;
                let done = sqlx::query(&self.sql.journal_delete)
                    .bind(run)
                    .execute(&self.pool)
                    .await
                    .map_err(Self::journal_db_error("delete the journal of", run))?;
                Ok(done.rows_affected() > 0)
            }

            async fn idle_journals(
                &self,
                at_ms: u64,
            ) -> Result<Vec<$crate::store::JournalSummary>, $crate::store::JournalError> {
                use sqlx::Row;
                let err = Self::journal_db_error("list the journals of", "*");
                let rows = sqlx::query(&self.sql.journal_idle)
                    .bind(at_ms.min(i64::MAX as u64) as i64)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(&err)?;
                let mut out = Vec::with_capacity(rows.len());
                for row in rows {
                    out.push($crate::store::JournalSummary {
                        run: row.try_get("run").map_err(&err)?,
                        steps: row.try_get::<i64, _>("len").map_err(&err)? as u64,
                        last_at_ms: row.try_get::<i64, _>("last_at_ms").map_err(&err)? as u64,
                    });
                }
                Ok(out)
            }
        }
    };
}

pub(crate) use sql_journal_store;
