//! The spending of the SQL queues ([`SqliteRunQueue`](crate::store::SqliteRunQueue),
//! [`PostgresRunQueue`](crate::store::PostgresRunQueue)): the tables `agentflow_spending` and
//! `agentflow_usage` beside the queue's, created with it, and the macro that implements
//! [`SpendingStore`](super::SpendingStore) with their statements (`$n` parameters, which both
//! drivers take), and `agentflow_spending_charges`, the charge keys of calls reserved once per
//! key. A reservation is one transaction holding the scopes' rows locked
//! (`BEGIN IMMEDIATE` on SQLite: the database's one write lock; `SELECT ... FOR UPDATE`, in key
//! order, on PostgreSQL): it reads them, applies [`crossed`](super::crossed), and charges all
//! or none.

/// What each scope (a thread, a tenant's day or month) has spent.
pub(crate) const SPENDING_TABLE: &str = "CREATE TABLE IF NOT EXISTS agentflow_spending (
    scope TEXT PRIMARY KEY,
    thread TEXT,
    input_tokens BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    cost_micro_usd BIGINT NOT NULL DEFAULT 0,
    model_calls BIGINT NOT NULL DEFAULT 0)";

/// The index a thread's deletion reads by.
pub(crate) const SPENDING_INDEX: &str = "CREATE INDEX IF NOT EXISTS agentflow_spending_thread \
    ON agentflow_spending (thread)";

/// The usage report: one row per day, tenant, flow, agent and model.
pub(crate) const USAGE_TABLE: &str = "CREATE TABLE IF NOT EXISTS agentflow_usage (
    day TEXT NOT NULL,
    tenant TEXT NOT NULL,
    flow TEXT NOT NULL,
    agent TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    cost_micro_usd BIGINT NOT NULL DEFAULT 0,
    model_calls BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (day, tenant, flow, agent, model))";

/// The charge keys of calls reserved once per key (`SpendingStore::reserve_once`): a key is
/// inserted in the transaction that charges, `settled` set by the one settlement applied, and
/// the row deleted when a failed call gives its reservation back.
pub(crate) const CHARGES_TABLE: &str = "CREATE TABLE IF NOT EXISTS agentflow_spending_charges (
    charge TEXT PRIMARY KEY,
    day TEXT NOT NULL,
    settled BIGINT NOT NULL DEFAULT 0)";

/// The tables and index, in the order they are made.
pub(crate) const SPENDING_SCHEMA: [&str; 4] =
    [SPENDING_TABLE, SPENDING_INDEX, USAGE_TABLE, CHARGES_TABLE];

/// Records a charge key; affects no row when the key was recorded before.
pub(crate) const CHARGE_NEW: &str = "INSERT INTO agentflow_spending_charges (charge, day) \
    VALUES ($1, $2) ON CONFLICT (charge) DO NOTHING";

/// Marks an open reservation settled; affects no row when it is not open.
pub(crate) const CHARGE_SETTLED: &str =
    "UPDATE agentflow_spending_charges SET settled = 1 WHERE charge = $1 AND settled = 0";

/// Forgets an open reservation given back; affects no row when it is not open.
pub(crate) const CHARGE_RELEASED: &str =
    "DELETE FROM agentflow_spending_charges WHERE charge = $1 AND settled = 0";

/// The charge keys of the days before `$1`.
pub(crate) const TRIM_CHARGES: &str = "DELETE FROM agentflow_spending_charges WHERE day < $1";

pub(crate) const ENSURE: &str = "INSERT INTO agentflow_spending (scope, thread) VALUES ($1, $2) \
    ON CONFLICT (scope) DO NOTHING";

pub(crate) const READ: &str = "SELECT input_tokens, output_tokens, cost_micro_usd, model_calls \
    FROM agentflow_spending WHERE scope = $1";

pub(crate) const ADD: &str = "UPDATE agentflow_spending SET input_tokens = input_tokens + $2, \
    output_tokens = output_tokens + $3, cost_micro_usd = cost_micro_usd + $4, \
    model_calls = model_calls + $5 WHERE scope = $1";

pub(crate) const DELETE_THREAD: &str = "DELETE FROM agentflow_spending WHERE thread = $1";

/// The usage rows of the days before `$1` (the table's key starts with the day).
pub(crate) const TRIM_USAGE: &str = "DELETE FROM agentflow_usage WHERE day < $1";

pub(crate) const USAGE_ADD: &str = "INSERT INTO agentflow_usage (day, tenant, flow, agent, \
    model, input_tokens, output_tokens, cost_micro_usd, model_calls) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
    ON CONFLICT (day, tenant, flow, agent, model) DO UPDATE SET \
    input_tokens = agentflow_usage.input_tokens + excluded.input_tokens, \
    output_tokens = agentflow_usage.output_tokens + excluded.output_tokens, \
    cost_micro_usd = agentflow_usage.cost_micro_usd + excluded.cost_micro_usd, \
    model_calls = agentflow_usage.model_calls + excluded.model_calls";

const USAGE_WHERE: &str = "($1 IS NULL OR tenant = $1) AND ($2 IS NULL OR day >= $2) \
    AND ($3 IS NULL OR day <= $3) AND ($4 IS NULL OR flow = $4) AND ($5 IS NULL OR agent = $5)";

/// `$1` tenant, `$2` from, `$3` to, `$4` flow, `$5` agent (each NULL for any), `$6` limit,
/// `$7` offset.
pub(crate) fn usage_list() -> String {
    format!(
        "SELECT day, tenant, flow, agent, model, input_tokens, output_tokens, cost_micro_usd, \
         model_calls FROM agentflow_usage WHERE {USAGE_WHERE} \
         ORDER BY day, tenant, flow, agent, model LIMIT $6 OFFSET $7"
    )
}

pub(crate) fn usage_count() -> String {
    format!("SELECT COUNT(*) FROM agentflow_usage WHERE {USAGE_WHERE}")
}

/// Implements [`SpendingStore`](super::SpendingStore) for a SQL queue type with a field
/// `pool`: `$begin` opens a write transaction, `$lock` ends the statement that reads a scope's
/// row under it.
macro_rules! sql_spending {
    ($queue:ty, $begin:literal, $lock:literal) => {
        fn spending_of(row: (i64, i64, i64, i64)) -> $crate::store::Spending {
            $crate::store::Spending {
                input_tokens: row.0,
                output_tokens: row.1,
                cost_micro_usd: row.2,
                model_calls: row.3,
            }
        }

        impl $queue {
            /// Reserves `charge` in `scopes` in one transaction; with `once` (a charge key and
            /// its day), only when the key was not recorded before (`Ok(false)` then), the key
            /// recorded in the same transaction.
            async fn reserve_in_tx(
                &self,
                once: Option<(&str, &str)>,
                scopes: &[$crate::store::SpendingScope],
                charge: &$crate::store::Spending,
            ) -> Result<Result<bool, $crate::store::Crossed>, $crate::store::QueueError> {
                use $crate::store::spending::sql::{ADD, CHARGE_NEW, ENSURE, READ};
                let err = $crate::store::queue::sql::db("reserve a model call's spending");
                // Rows are locked in key order, so two reservations never wait on each other.
                let mut order: Vec<usize> = (0..scopes.len()).collect();
                order.sort_by(|a, b| scopes[*a].key.cmp(&scopes[*b].key));
                let mut tx = self.pool.begin_with($begin).await.map_err(&err)?;
                if let Some((key, day)) = once {
                    // The key's row is written first: another attempt under the same key waits
                    // for this transaction, then finds it.
                    let new = sqlx::query(CHARGE_NEW)
                        .bind(key)
                        .bind(day)
                        .execute(&mut *tx)
                        .await
                        .map_err(&err)?;
                    if new.rows_affected() == 0 {
                        tx.rollback().await.map_err(&err)?;
                        return Ok(Ok(false));
                    }
                }
                let mut spent = vec![$crate::store::Spending::default(); scopes.len()];
                for &k in &order {
                    sqlx::query(ENSURE)
                        .bind(&scopes[k].key)
                        .bind(&scopes[k].thread)
                        .execute(&mut *tx)
                        .await
                        .map_err(&err)?;
                    let row: (i64, i64, i64, i64) = sqlx::query_as(&format!("{READ}{}", $lock))
                        .bind(&scopes[k].key)
                        .fetch_one(&mut *tx)
                        .await
                        .map_err(&err)?;
                    spent[k] = spending_of(row);
                }
                for (k, scope) in scopes.iter().enumerate() {
                    if let Some((budget, limit, would_reach)) =
                        $crate::store::spending::crossed(&spent[k], charge, &scope.limits)
                    {
                        tx.rollback().await.map_err(&err)?;
                        return Ok(Err($crate::store::Crossed {
                            scope: k,
                            budget,
                            limit,
                            would_reach,
                        }));
                    }
                }
                for &k in &order {
                    sqlx::query(ADD)
                        .bind(&scopes[k].key)
                        .bind(charge.input_tokens)
                        .bind(charge.output_tokens)
                        .bind(charge.cost_micro_usd)
                        .bind(charge.model_calls)
                        .execute(&mut *tx)
                        .await
                        .map_err(&err)?;
                }
                tx.commit().await.map_err(&err)?;
                Ok(Ok(true))
            }

            /// Adds `correction` to the rows `keys` and `usage` to the report in one
            /// transaction; with `once` (a charge key), only while its reservation is open,
            /// which the same transaction closes (settled with `usage`, forgotten without).
            async fn settle_in_tx(
                &self,
                once: Option<&str>,
                keys: &[(String, Option<String>)],
                correction: &$crate::store::Spending,
                usage: Option<&$crate::store::UsageRow>,
            ) -> Result<bool, $crate::store::QueueError> {
                use $crate::store::spending::sql::{
                    ADD, CHARGE_RELEASED, CHARGE_SETTLED, ENSURE, USAGE_ADD,
                };
                let err = $crate::store::queue::sql::db("settle a model call's spending");
                let mut sorted: Vec<&(String, Option<String>)> = keys.iter().collect();
                sorted.sort();
                let mut tx = self.pool.begin_with($begin).await.map_err(&err)?;
                if let Some(key) = once {
                    let close = if usage.is_some() {
                        CHARGE_SETTLED
                    } else {
                        CHARGE_RELEASED
                    };
                    let open = sqlx::query(close)
                        .bind(key)
                        .execute(&mut *tx)
                        .await
                        .map_err(&err)?;
                    if open.rows_affected() == 0 {
                        tx.rollback().await.map_err(&err)?;
                        return Ok(false);
                    }
                }
                for (key, thread) in sorted {
                    sqlx::query(ENSURE)
                        .bind(key)
                        .bind(thread)
                        .execute(&mut *tx)
                        .await
                        .map_err(&err)?;
                    sqlx::query(ADD)
                        .bind(key)
                        .bind(correction.input_tokens)
                        .bind(correction.output_tokens)
                        .bind(correction.cost_micro_usd)
                        .bind(correction.model_calls)
                        .execute(&mut *tx)
                        .await
                        .map_err(&err)?;
                }
                if let Some(row) = usage {
                    sqlx::query(USAGE_ADD)
                        .bind(&row.day)
                        .bind(&row.tenant)
                        .bind(&row.flow)
                        .bind(&row.agent)
                        .bind(&row.model)
                        .bind(row.spent.input_tokens)
                        .bind(row.spent.output_tokens)
                        .bind(row.spent.cost_micro_usd)
                        .bind(row.spent.model_calls)
                        .execute(&mut *tx)
                        .await
                        .map_err(&err)?;
                }
                tx.commit().await.map_err(&err)?;
                Ok(true)
            }
        }

        #[async_trait::async_trait]
        impl $crate::store::SpendingStore for $queue {
            async fn reserve(
                &self,
                scopes: &[$crate::store::SpendingScope],
                charge: &$crate::store::Spending,
            ) -> Result<Result<(), $crate::store::Crossed>, $crate::store::QueueError> {
                Ok(self.reserve_in_tx(None, scopes, charge).await?.map(|_| ()))
            }

            async fn settle(
                &self,
                keys: &[(String, Option<String>)],
                correction: &$crate::store::Spending,
                usage: Option<&$crate::store::UsageRow>,
            ) -> Result<(), $crate::store::QueueError> {
                self.settle_in_tx(None, keys, correction, usage)
                    .await
                    .map(|_| ())
            }

            async fn reserve_once(
                &self,
                charge: &str,
                day: &str,
                scopes: &[$crate::store::SpendingScope],
                spending: &$crate::store::Spending,
            ) -> Result<Result<bool, $crate::store::Crossed>, $crate::store::QueueError> {
                self.reserve_in_tx(Some((charge, day)), scopes, spending)
                    .await
            }

            async fn settle_once(
                &self,
                charge: &str,
                keys: &[(String, Option<String>)],
                correction: &$crate::store::Spending,
                usage: Option<&$crate::store::UsageRow>,
            ) -> Result<bool, $crate::store::QueueError> {
                self.settle_in_tx(Some(charge), keys, correction, usage)
                    .await
            }

            async fn spent(
                &self,
                key: &str,
            ) -> Result<$crate::store::Spending, $crate::store::QueueError> {
                let row: Option<(i64, i64, i64, i64)> =
                    sqlx::query_as($crate::store::spending::sql::READ)
                        .bind(key)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err($crate::store::queue::sql::db("read a scope's spending"))?;
                Ok(row.map(spending_of).unwrap_or_default())
            }

            async fn delete_thread(&self, thread: &str) -> Result<u64, $crate::store::QueueError> {
                let done = sqlx::query($crate::store::spending::sql::DELETE_THREAD)
                    .bind(thread)
                    .execute(&self.pool)
                    .await
                    .map_err($crate::store::queue::sql::db("delete a thread's spending"))?;
                Ok(done.rows_affected())
            }

            async fn usage(
                &self,
                filter: &$crate::store::UsageFilter,
                limit: usize,
                offset: usize,
            ) -> Result<Vec<$crate::store::UsageRow>, $crate::store::QueueError> {
                use $crate::store::schedule::sql::i;
                #[allow(clippy::type_complexity)]
                let rows: Vec<(
                    String,
                    String,
                    String,
                    String,
                    String,
                    i64,
                    i64,
                    i64,
                    i64,
                )> = sqlx::query_as(&$crate::store::spending::sql::usage_list())
                    .bind(&filter.tenant)
                    .bind(&filter.from)
                    .bind(&filter.to)
                    .bind(&filter.flow)
                    .bind(&filter.agent)
                    .bind(i(limit as u64))
                    .bind(i(offset as u64))
                    .fetch_all(&self.pool)
                    .await
                    .map_err($crate::store::queue::sql::db("read the usage report"))?;
                Ok(rows
                    .into_iter()
                    .map(|r| $crate::store::UsageRow {
                        day: r.0,
                        tenant: r.1,
                        flow: r.2,
                        agent: r.3,
                        model: r.4,
                        spent: spending_of((r.5, r.6, r.7, r.8)),
                    })
                    .collect())
            }

            async fn count_usage(
                &self,
                filter: &$crate::store::UsageFilter,
            ) -> Result<u64, $crate::store::QueueError> {
                let (n,): (i64,) = sqlx::query_as(&$crate::store::spending::sql::usage_count())
                    .bind(&filter.tenant)
                    .bind(&filter.from)
                    .bind(&filter.to)
                    .bind(&filter.flow)
                    .bind(&filter.agent)
                    .fetch_one(&self.pool)
                    .await
                    .map_err($crate::store::queue::sql::db("count the usage report"))?;
                Ok($crate::store::schedule::sql::u(n))
            }

            async fn trim_usage(&self, first_kept: &str) -> Result<u64, $crate::store::QueueError> {
                let err = $crate::store::queue::sql::db("trim the usage report");
                let done = sqlx::query($crate::store::spending::sql::TRIM_USAGE)
                    .bind(first_kept)
                    .execute(&self.pool)
                    .await
                    .map_err(&err)?;
                sqlx::query($crate::store::spending::sql::TRIM_CHARGES)
                    .bind(first_kept)
                    .execute(&self.pool)
                    .await
                    .map_err(&err)?;
                Ok(done.rows_affected())
            }
        }
    };
}

#[cfg(feature = "sqlite")]
mod sqlite {
    sql_spending!(crate::store::SqliteRunQueue, "BEGIN IMMEDIATE", "");
}
#[cfg(feature = "postgres")]
mod postgres {
    sql_spending!(crate::store::PostgresRunQueue, "BEGIN", " FOR UPDATE");
}
