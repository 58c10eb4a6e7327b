//! The schedules of an [`InMemoryRunQueue`](crate::store::InMemoryRunQueue): a map under one
//! lock.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;

use super::{check_schedule, Schedule, ScheduleFilter, ScheduleStore};
use crate::store::QueueError;

/// Schedules in memory, by id; clones share them.
#[derive(Debug, Clone, Default)]
pub(crate) struct InMemorySchedules {
    rows: Arc<Mutex<BTreeMap<String, Schedule>>>,
}

impl InMemorySchedules {
    fn rows(&self) -> MutexGuard<'_, BTreeMap<String, Schedule>> {
        self.rows.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Oldest first, then by id.
fn by_age(a: &&Schedule, b: &&Schedule) -> std::cmp::Ordering {
    (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id))
}

#[async_trait]
impl ScheduleStore for InMemorySchedules {
    async fn create_schedule(&self, schedule: &Schedule) -> Result<(), QueueError> {
        check_schedule(schedule)?;
        let mut rows = self.rows();
        if rows.contains_key(&schedule.id) {
            return Err(QueueError::Duplicate {
                run_id: schedule.id.clone(),
            });
        }
        rows.insert(schedule.id.clone(), schedule.clone());
        Ok(())
    }

    async fn schedule(&self, id: &str) -> Result<Option<Schedule>, QueueError> {
        Ok(self.rows().get(id).cloned())
    }

    async fn list_schedules(
        &self,
        filter: &ScheduleFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<Schedule>, QueueError> {
        let rows = self.rows();
        let mut found: Vec<&Schedule> = rows.values().filter(|s| filter.matches(s)).collect();
        found.sort_by(by_age);
        Ok(found
            .into_iter()
            .skip(offset)
            .take(limit)
            .cloned()
            .collect())
    }

    async fn count_schedules(&self, filter: &ScheduleFilter) -> Result<u64, QueueError> {
        Ok(self.rows().values().filter(|s| filter.matches(s)).count() as u64)
    }

    async fn update_schedule(&self, schedule: &Schedule) -> Result<bool, QueueError> {
        let mut rows = self.rows();
        let Some(row) = rows.get_mut(&schedule.id) else {
            return Ok(false);
        };
        row.cron.clone_from(&schedule.cron);
        row.input.clone_from(&schedule.input);
        row.missed = schedule.missed;
        row.paused = schedule.paused;
        row.next_due_ms = schedule.next_due_ms;
        row.metadata.clone_from(&schedule.metadata);
        row.updated_ms = schedule.updated_ms;
        Ok(true)
    }

    async fn delete_schedule(&self, id: &str) -> Result<bool, QueueError> {
        Ok(self.rows().remove(id).is_some())
    }

    async fn due_schedules(&self, now_ms: u64, limit: usize) -> Result<Vec<Schedule>, QueueError> {
        let rows = self.rows();
        let mut due: Vec<&Schedule> = rows
            .values()
            .filter(|s| !s.paused && s.next_due_ms <= now_ms)
            .collect();
        due.sort_by_key(|s| (s.next_due_ms, s.id.clone()));
        Ok(due.into_iter().take(limit).cloned().collect())
    }

    async fn advance_schedule(
        &self,
        id: &str,
        from_due_ms: u64,
        next_due_ms: u64,
        fired_due_ms: Option<u64>,
    ) -> Result<bool, QueueError> {
        let mut rows = self.rows();
        match rows.get_mut(id) {
            Some(row) if row.next_due_ms == from_due_ms => {
                row.next_due_ms = next_due_ms;
                if fired_due_ms.is_some() {
                    row.last_due_ms = fired_due_ms;
                }
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}
