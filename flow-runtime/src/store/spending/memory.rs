//! The spending of an [`InMemoryRunQueue`](crate::store::InMemoryRunQueue): the scopes' rows
//! and the usage report, two maps under one lock (the lock makes a reservation atomic).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;

use super::{crossed, Crossed, Spending, SpendingScope, SpendingStore, UsageFilter, UsageRow};
use crate::store::QueueError;

/// The report's key: day, tenant, flow, agent, model.
type UsageKey = (String, String, String, String, String);

#[derive(Debug, Default)]
struct Rows {
    /// Per scope key: the thread it belongs to, and what it spent.
    scopes: BTreeMap<String, (Option<String>, Spending)>,
    usage: BTreeMap<UsageKey, Spending>,
    /// Per charge key: its day, and whether its reservation was settled.
    charges: BTreeMap<String, (String, bool)>,
}

impl Rows {
    fn crossed(&self, scopes: &[SpendingScope], charge: &Spending) -> Option<Crossed> {
        scopes.iter().enumerate().find_map(|(k, scope)| {
            let spent = self
                .scopes
                .get(&scope.key)
                .map(|(_, s)| *s)
                .unwrap_or_default();
            crossed(&spent, charge, &scope.limits).map(|(budget, limit, would_reach)| Crossed {
                scope: k,
                budget,
                limit,
                would_reach,
            })
        })
    }

    fn add(&mut self, keys: impl Iterator<Item = (String, Option<String>)>, change: &Spending) {
        for (key, thread) in keys {
            self.scopes
                .entry(key)
                .or_insert_with(|| (thread, Spending::default()))
                .1
                .add(change);
        }
    }

    fn report(&mut self, row: &UsageRow) {
        let key = (
            row.day.clone(),
            row.tenant.clone(),
            row.flow.clone(),
            row.agent.clone(),
            row.model.clone(),
        );
        self.usage.entry(key).or_default().add(&row.spent);
    }
}

/// Spending in memory; clones share it.
#[derive(Debug, Clone, Default)]
pub(crate) struct InMemorySpending {
    rows: Arc<Mutex<Rows>>,
}

impl InMemorySpending {
    fn rows(&self) -> MutexGuard<'_, Rows> {
        self.rows.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl SpendingStore for InMemorySpending {
    async fn reserve(
        &self,
        scopes: &[SpendingScope],
        charge: &Spending,
    ) -> Result<Result<(), Crossed>, QueueError> {
        let mut rows = self.rows();
        if let Some(crossed) = rows.crossed(scopes, charge) {
            return Ok(Err(crossed));
        }
        rows.add(
            scopes.iter().map(|s| (s.key.clone(), s.thread.clone())),
            charge,
        );
        Ok(Ok(()))
    }

    async fn settle(
        &self,
        keys: &[(String, Option<String>)],
        correction: &Spending,
        usage: Option<&UsageRow>,
    ) -> Result<(), QueueError> {
        let mut rows = self.rows();
        rows.add(keys.iter().cloned(), correction);
        if let Some(row) = usage {
            rows.report(row);
        }
        Ok(())
    }

    async fn reserve_once(
        &self,
        charge: &str,
        day: &str,
        scopes: &[SpendingScope],
        spending: &Spending,
    ) -> Result<Result<bool, Crossed>, QueueError> {
        let mut rows = self.rows();
        if rows.charges.contains_key(charge) {
            return Ok(Ok(false));
        }
        if let Some(crossed) = rows.crossed(scopes, spending) {
            return Ok(Err(crossed));
        }
        rows.add(
            scopes.iter().map(|s| (s.key.clone(), s.thread.clone())),
            spending,
        );
        rows.charges
            .insert(charge.to_owned(), (day.to_owned(), false));
        Ok(Ok(true))
    }

    async fn settle_once(
        &self,
        charge: &str,
        keys: &[(String, Option<String>)],
        correction: &Spending,
        usage: Option<&UsageRow>,
    ) -> Result<bool, QueueError> {
        let mut rows = self.rows();
        if !matches!(rows.charges.get(charge), Some((_, false))) {
            return Ok(false);
        }
        rows.add(keys.iter().cloned(), correction);
        match usage {
            Some(row) => {
                rows.report(row);
                if let Some(open) = rows.charges.get_mut(charge) {
                    open.1 = true;
                }
            }
            None => {
                rows.charges.remove(charge);
            }
        }
        Ok(true)
    }

    async fn spent(&self, key: &str) -> Result<Spending, QueueError> {
        Ok(self
            .rows()
            .scopes
            .get(key)
            .map(|(_, s)| *s)
            .unwrap_or_default())
    }

    async fn delete_thread(&self, thread: &str) -> Result<u64, QueueError> {
        let mut rows = self.rows();
        let before = rows.scopes.len();
        rows.scopes.retain(|_, (t, _)| t.as_deref() != Some(thread));
        Ok((before - rows.scopes.len()) as u64)
    }

    async fn usage(
        &self,
        filter: &UsageFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<UsageRow>, QueueError> {
        Ok(self
            .rows()
            .usage
            .iter()
            .map(|((day, tenant, flow, agent, model), spent)| UsageRow {
                tenant: tenant.clone(),
                day: day.clone(),
                flow: flow.clone(),
                agent: agent.clone(),
                model: model.clone(),
                spent: *spent,
            })
            .filter(|row| filter.matches(row))
            .skip(offset)
            .take(limit)
            .collect())
    }

    async fn count_usage(&self, filter: &UsageFilter) -> Result<u64, QueueError> {
        let rows = self.rows();
        let found = rows
            .usage
            .iter()
            .filter(|((day, tenant, flow, agent, model), spent)| {
                filter.matches(&UsageRow {
                    tenant: tenant.clone(),
                    day: day.clone(),
                    flow: flow.clone(),
                    agent: agent.clone(),
                    model: model.clone(),
                    spent: **spent,
                })
            });
        Ok(found.count() as u64)
    }

    async fn trim_usage(&self, first_kept: &str) -> Result<u64, QueueError> {
        let mut rows = self.rows();
        let before = rows.usage.len();
        rows.usage.retain(|(day, ..), _| day.as_str() >= first_kept);
        rows.charges
            .retain(|_, (day, _)| day.as_str() >= first_kept);
        Ok((before - rows.usage.len()) as u64)
    }
}

/// The in-memory queue is its own spending store (its [`RunQueue::spending`]), so a runner
/// can share it as an `Arc<dyn SpendingStore>`.
///
/// [`RunQueue::spending`]: crate::store::RunQueue::spending
#[async_trait]
impl SpendingStore for crate::store::InMemoryRunQueue {
    async fn reserve(
        &self,
        scopes: &[SpendingScope],
        charge: &Spending,
    ) -> Result<Result<(), Crossed>, QueueError> {
        self.spending_rows().reserve(scopes, charge).await
    }

    async fn settle(
        &self,
        keys: &[(String, Option<String>)],
        correction: &Spending,
        usage: Option<&UsageRow>,
    ) -> Result<(), QueueError> {
        self.spending_rows().settle(keys, correction, usage).await
    }

    async fn reserve_once(
        &self,
        charge: &str,
        day: &str,
        scopes: &[SpendingScope],
        spending: &Spending,
    ) -> Result<Result<bool, Crossed>, QueueError> {
        self.spending_rows()
            .reserve_once(charge, day, scopes, spending)
            .await
    }

    async fn settle_once(
        &self,
        charge: &str,
        keys: &[(String, Option<String>)],
        correction: &Spending,
        usage: Option<&UsageRow>,
    ) -> Result<bool, QueueError> {
        self.spending_rows()
            .settle_once(charge, keys, correction, usage)
            .await
    }

    async fn spent(&self, key: &str) -> Result<Spending, QueueError> {
        self.spending_rows().spent(key).await
    }

    async fn delete_thread(&self, thread: &str) -> Result<u64, QueueError> {
        self.spending_rows().delete_thread(thread).await
    }

    async fn usage(
        &self,
        filter: &UsageFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<UsageRow>, QueueError> {
        self.spending_rows().usage(filter, limit, offset).await
    }

    async fn count_usage(&self, filter: &UsageFilter) -> Result<u64, QueueError> {
        self.spending_rows().count_usage(filter).await
    }

    async fn trim_usage(&self, first_kept: &str) -> Result<u64, QueueError> {
        self.spending_rows().trim_usage(first_kept).await
    }
}
