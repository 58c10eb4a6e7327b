//! The spending of the SQL queues ([`SqliteRunQueue`](crate::store::SqliteRunQueue),
//! [`PostgresRunQueue`](crate::store::PostgresRunQueue)): the tables `agentflow_spending` and
//! `agentflow_usage` beside the queue's, created with it, and [`SpendingStore`] with their
//! statements, written once for both databases (`$n` parameters, which both drivers take), and
//! `agentflow_spending_charges`, the charge keys of calls reserved once per key. A
//! reservation is one transaction holding the scopes' rows locked (`BEGIN IMMEDIATE` on
//! SQLite: the database's one write lock; `SELECT ... FOR UPDATE`, in key order, on
//! PostgreSQL): it reads them, applies [`crossed`], and charges all or none.

use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Row, Type};

use super::{crossed, Crossed, Spending, SpendingScope, SpendingStore, UsageFilter, UsageRow};
use crate::store::queue::sql::{db, u, SqlRunQueue};
use crate::store::sql::{int, write_tx, SqlDatabase};
use crate::store::QueueError;

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

/// A scope's spending (`{FOR_UPDATE}`: locked until the transaction ends, where rows lock).
pub(crate) const READ: &str = "SELECT input_tokens, output_tokens, cost_micro_usd, model_calls \
    FROM agentflow_spending WHERE scope = $1 {FOR_UPDATE}";

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

const USAGE_WHERE: &str = "(CAST($1 AS TEXT) IS NULL OR tenant = $1) \
    AND (CAST($2 AS TEXT) IS NULL OR day >= $2) AND (CAST($3 AS TEXT) IS NULL OR day <= $3) \
    AND (CAST($4 AS TEXT) IS NULL OR flow = $4) AND (CAST($5 AS TEXT) IS NULL OR agent = $5)";

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
    format!("SELECT COUNT(*) AS n FROM agentflow_usage WHERE {USAGE_WHERE}")
}

/// The spending in a row of `input_tokens`, `output_tokens`, `cost_micro_usd`, `model_calls`.
fn spending_of<R: Row>(row: &R) -> Result<Spending, sqlx::Error>
where
    for<'q> i64: Decode<'q, R::Database> + Type<R::Database>,
    for<'a> &'a str: ColumnIndex<R>,
{
    Ok(Spending {
        input_tokens: row.try_get("input_tokens")?,
        output_tokens: row.try_get("output_tokens")?,
        cost_micro_usd: row.try_get("cost_micro_usd")?,
        model_calls: row.try_get("model_calls")?,
    })
}

impl<DB: SqlDatabase> SqlRunQueue<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> Option<&'q str>: Encode<'q, DB>,
    for<'q> String: Decode<'q, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
{
    /// Adds `charge` to scope `key` in `tx` (its row made first if missing).
    async fn charge(
        &self,
        tx: &mut sqlx::Transaction<'static, DB>,
        (key, thread): (&str, Option<&str>),
        charge: &Spending,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(ENSURE)
            .bind(key)
            .bind(thread)
            .execute(&mut **tx)
            .await?;
        let add = sqlx::query(ADD).bind(key).bind(charge.input_tokens);
        let add = add.bind(charge.output_tokens).bind(charge.cost_micro_usd);
        add.bind(charge.model_calls).execute(&mut **tx).await?;
        Ok(())
    }

    /// Reserves `charge` in `scopes` in one transaction; with `once` (a charge key and its
    /// day), only when the key was not recorded before (`Ok(false)` then), the key recorded in
    /// the same transaction.
    async fn reserve_in_tx(
        &self,
        once: Option<(&str, &str)>,
        scopes: &[SpendingScope],
        charge: &Spending,
    ) -> Result<Result<bool, Crossed>, QueueError> {
        let err = db("reserve a model call's spending");
        // Rows are locked in key order, so two reservations never wait on each other.
        let mut order: Vec<usize> = (0..scopes.len()).collect();
        order.sort_by(|a, b| scopes[*a].key.cmp(&scopes[*b].key));
        let read = DB::DIALECT.fill(READ);
        let mut tx = write_tx(&self.pool, &[]).await.map_err(&err)?;
        if let Some((key, day)) = once {
            // The key's row is written first: another attempt under the same key waits for
            // this transaction, then finds it.
            let new = sqlx::query(CHARGE_NEW).bind(key).bind(day);
            let new = new.execute(&mut *tx).await.map_err(&err)?;
            if DB::rows_affected(&new) == 0 {
                tx.rollback().await.map_err(&err)?;
                return Ok(Ok(false));
            }
        }
        let mut spent = vec![Spending::default(); scopes.len()];
        for &k in &order {
            let ensure = sqlx::query(ENSURE)
                .bind(&scopes[k].key[..])
                .bind(scopes[k].thread.as_deref());
            ensure.execute(&mut *tx).await.map_err(&err)?;
            let row = sqlx::query(&read)
                .bind(&scopes[k].key[..])
                .fetch_one(&mut *tx)
                .await;
            spent[k] = spending_of(&row.map_err(&err)?).map_err(&err)?;
        }
        for (k, scope) in scopes.iter().enumerate() {
            if let Some((budget, limit, would_reach)) = crossed(&spent[k], charge, &scope.limits) {
                tx.rollback().await.map_err(&err)?;
                return Ok(Err(Crossed {
                    scope: k,
                    budget,
                    limit,
                    would_reach,
                }));
            }
        }
        for &k in &order {
            let scope = (&scopes[k].key[..], scopes[k].thread.as_deref());
            self.charge(&mut tx, scope, charge).await.map_err(&err)?;
        }
        tx.commit().await.map_err(&err)?;
        Ok(Ok(true))
    }

    /// Adds `correction` to the rows `keys` and `usage` to the report in one transaction; with
    /// `once` (a charge key), only while its reservation is open, which the same transaction
    /// closes (settled with `usage`, forgotten without).
    async fn settle_in_tx(
        &self,
        once: Option<&str>,
        keys: &[(String, Option<String>)],
        correction: &Spending,
        usage: Option<&UsageRow>,
    ) -> Result<bool, QueueError> {
        let err = db("settle a model call's spending");
        let mut sorted: Vec<&(String, Option<String>)> = keys.iter().collect();
        sorted.sort();
        let mut tx = write_tx(&self.pool, &[]).await.map_err(&err)?;
        if let Some(key) = once {
            let close = if usage.is_some() {
                CHARGE_SETTLED
            } else {
                CHARGE_RELEASED
            };
            let open = sqlx::query(close).bind(key).execute(&mut *tx).await;
            if DB::rows_affected(&open.map_err(&err)?) == 0 {
                tx.rollback().await.map_err(&err)?;
                return Ok(false);
            }
        }
        for (key, thread) in sorted {
            self.charge(&mut tx, (key, thread.as_deref()), correction)
                .await
                .map_err(&err)?;
        }
        if let Some(row) = usage {
            let add = sqlx::query(USAGE_ADD)
                .bind(&row.day[..])
                .bind(&row.tenant[..]);
            let add = add
                .bind(&row.flow[..])
                .bind(&row.agent[..])
                .bind(&row.model[..]);
            let add = add
                .bind(row.spent.input_tokens)
                .bind(row.spent.output_tokens);
            let add = add
                .bind(row.spent.cost_micro_usd)
                .bind(row.spent.model_calls);
            add.execute(&mut *tx).await.map_err(&err)?;
        }
        tx.commit().await.map_err(&err)?;
        Ok(true)
    }

    /// The usage report's filter bound as `$1` to `$5`.
    fn usage_query<'q>(
        statement: &'q str,
        filter: &'q UsageFilter,
    ) -> sqlx::query::Query<'q, DB, DB::Arguments<'q>> {
        let query = sqlx::query(statement).bind(filter.tenant.as_deref());
        let query = query
            .bind(filter.from.as_deref())
            .bind(filter.to.as_deref());
        query
            .bind(filter.flow.as_deref())
            .bind(filter.agent.as_deref())
    }
}

#[async_trait::async_trait]
impl<DB: SqlDatabase> SpendingStore for SqlRunQueue<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> Option<&'q str>: Encode<'q, DB>,
    for<'q> String: Decode<'q, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
{
    async fn reserve(
        &self,
        scopes: &[SpendingScope],
        charge: &Spending,
    ) -> Result<Result<(), Crossed>, QueueError> {
        Ok(self.reserve_in_tx(None, scopes, charge).await?.map(|_| ()))
    }

    async fn settle(
        &self,
        keys: &[(String, Option<String>)],
        correction: &Spending,
        usage: Option<&UsageRow>,
    ) -> Result<(), QueueError> {
        self.settle_in_tx(None, keys, correction, usage)
            .await
            .map(|_| ())
    }

    async fn reserve_once(
        &self,
        charge: &str,
        day: &str,
        scopes: &[SpendingScope],
        spending: &Spending,
    ) -> Result<Result<bool, Crossed>, QueueError> {
        self.reserve_in_tx(Some((charge, day)), scopes, spending)
            .await
    }

    async fn settle_once(
        &self,
        charge: &str,
        keys: &[(String, Option<String>)],
        correction: &Spending,
        usage: Option<&UsageRow>,
    ) -> Result<bool, QueueError> {
        self.settle_in_tx(Some(charge), keys, correction, usage)
            .await
    }

    async fn spent(&self, key: &str) -> Result<Spending, QueueError> {
        let err = db("read a scope's spending");
        let read = READ.replace("{FOR_UPDATE}", "");
        let row = sqlx::query(&read)
            .bind(key)
            .fetch_optional(&self.pool)
            .await
            .map_err(&err)?;
        Ok(row
            .map(|row| spending_of(&row))
            .transpose()
            .map_err(&err)?
            .unwrap_or_default())
    }

    async fn delete_thread(&self, thread: &str) -> Result<u64, QueueError> {
        let done = sqlx::query(DELETE_THREAD)
            .bind(thread)
            .execute(&self.pool)
            .await;
        Ok(DB::rows_affected(
            &done.map_err(db("delete a thread's spending"))?,
        ))
    }

    async fn usage(
        &self,
        filter: &UsageFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<UsageRow>, QueueError> {
        let err = db("read the usage report");
        let statement = usage_list();
        let list = Self::usage_query(&statement, filter)
            .bind(int(limit as u64))
            .bind(int(offset as u64));
        let rows = list.fetch_all(&self.pool).await.map_err(&err)?;
        let usage_row = |row: &DB::Row| -> Result<UsageRow, sqlx::Error> {
            Ok(UsageRow {
                day: row.try_get("day")?,
                tenant: row.try_get("tenant")?,
                flow: row.try_get("flow")?,
                agent: row.try_get("agent")?,
                model: row.try_get("model")?,
                spent: spending_of(row)?,
            })
        };
        rows.iter()
            .map(|row| usage_row(row).map_err(&err))
            .collect()
    }

    async fn count_usage(&self, filter: &UsageFilter) -> Result<u64, QueueError> {
        let statement = usage_count();
        let row = Self::usage_query(&statement, filter)
            .fetch_one(&self.pool)
            .await;
        let n: i64 = row
            .and_then(|row| row.try_get("n"))
            .map_err(db("count the usage report"))?;
        Ok(u(n))
    }

    async fn trim_usage(&self, first_kept: &str) -> Result<u64, QueueError> {
        let err = db("trim the usage report");
        let done = sqlx::query(TRIM_USAGE)
            .bind(first_kept)
            .execute(&self.pool)
            .await
            .map_err(&err)?;
        sqlx::query(TRIM_CHARGES)
            .bind(first_kept)
            .execute(&self.pool)
            .await
            .map_err(&err)?;
        Ok(DB::rows_affected(&done))
    }
}
