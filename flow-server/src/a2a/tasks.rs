//! A2A tasks: a task is one turn of a thread (its id is `CONTEXT.TURN`, the context being the
//! thread), run by a task of its own so it outlives the request that started it.
//!
//! [`Tasks`] holds the tasks of this process: each running one's state and a channel of its
//! updates (so `SubscribeToTask` can join it, and `CancelTask` can stop it), and the last
//! state of the most recent ended ones. An ended task this process no longer holds is rebuilt
//! from the thread's records in the store ([`map::task_from_records`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentweave_a2a::wire::{
    Message as A2aMessage, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use agentweave_runtime::kit::PLAN_KEY;
use agentweave_runtime::{Turn, TurnEvent, TurnItem, TurnOutcome, TurnStream};
use futures::StreamExt;
use tokio::sync::{broadcast, oneshot, Notify};

use super::map;
use super::push::PushConfigs;
use crate::outward::{PublicCode, PublicError};
use agentweave_runtime::outbound::OutboundPolicy;

/// How many ended tasks a process keeps in memory (older ones are rebuilt from the store; a
/// cancelled or failed one, which the store does not record, is then unknown).
const ENDED_KEPT: usize = 1024;

/// How many updates a subscriber may fall behind before it is cut off.
const UPDATES_BUFFER: usize = 1024;

/// The task id of turn `turn` of context (thread) `context`.
pub(crate) fn task_id(context: &str, turn: u64) -> String {
    format!("{context}.{turn}")
}

/// The context and turn a task id names, if it is one of ours.
pub(crate) fn parse_task_id(id: &str) -> Option<(&str, u64)> {
    let (context, turn) = id.rsplit_once('.')?;
    if context.is_empty() || turn.is_empty() || !turn.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((context, turn.parse().ok()?))
}

/// A task running in this process.
pub(crate) struct RunningTask {
    state: Mutex<Task>,
    updates: broadcast::Sender<Arc<StreamResponse>>,
    cancel: Notify,
}

impl RunningTask {
    /// The task as it is now, and its updates from now on (taken together, so none is missed
    /// or seen twice).
    pub(crate) fn subscribe(&self) -> (Task, broadcast::Receiver<Arc<StreamResponse>>) {
        let task = self.state.lock().expect("task state lock");
        (task.clone(), self.updates.subscribe())
    }

    /// The task as it is now.
    pub(crate) fn snapshot(&self) -> Task {
        self.state.lock().expect("task state lock").clone()
    }

    /// Asks the task to stop.
    pub(crate) fn cancel(&self) {
        self.cancel.notify_one();
    }

    /// Applies `update` to the task's state and sends it to the subscribers.
    fn publish(&self, update: StreamResponse) {
        let mut task = self.state.lock().expect("task state lock");
        if let Some(s) = &update.status_update {
            task.status = s.status.clone();
            if let Some(m) = &s.status.message {
                task.history.push(m.clone());
            }
        }
        if let Some(a) = &update.artifact_update {
            // A new version of an artifact (the plan, rewritten) replaces the old one; an
            // `append` adds to it.
            match task
                .artifacts
                .iter_mut()
                .find(|old| old.artifact_id == a.artifact.artifact_id)
            {
                Some(old) if a.append => old.parts.extend(a.artifact.parts.iter().cloned()),
                Some(old) => *old = a.artifact.clone(),
                None => task.artifacts.push(a.artifact.clone()),
            }
        }
        // No subscriber is fine: the state keeps what they would have seen.
        let _ = self.updates.send(Arc::new(update));
    }

    fn status(&self, state: TaskState, message: Option<A2aMessage>) {
        let (task_id, context_id) = {
            let t = self.state.lock().expect("task state lock");
            (t.id.clone(), t.context_id.clone())
        };
        self.publish(StreamResponse::status(TaskStatusUpdateEvent {
            task_id,
            context_id,
            status: TaskStatus::now(state, message),
            metadata: None,
        }));
    }
}

/// A task's state when it started (or resumed) and every update of it from then on: what a
/// subscriber to a task waiting for input is handed when an answer resumes it.
pub(crate) type Started = (Task, broadcast::Receiver<Arc<StreamResponse>>);

/// The tasks of this process (see the module documentation).
pub(crate) struct Tasks {
    running: Mutex<HashMap<String, Arc<RunningTask>>>,
    /// Per key, the subscribers waiting for that task to start (or resume): each is handed
    /// the task's subscription before the task runs, so none of its updates is missed, however
    /// fast it ends.
    waiting: Mutex<HashMap<String, Vec<oneshot::Sender<Started>>>>,
    ended: Mutex<VecDeque<(String, Task)>>,
    /// Where each task's push notifications go.
    pub(crate) push: PushConfigs,
}

impl Tasks {
    /// No tasks yet; push notifications signed under `secret` (none: not sent), within
    /// `outbound`.
    pub(crate) fn new(secret: Option<Vec<u8>>, outbound: OutboundPolicy) -> Self {
        Tasks {
            running: Mutex::default(),
            waiting: Mutex::default(),
            ended: Mutex::default(),
            push: PushConfigs::new(secret, outbound),
        }
    }

    /// The running task under `key` (the thread's store id and the turn).
    pub(crate) fn running(&self, key: &str) -> Option<Arc<RunningTask>> {
        self.running.lock().expect("tasks lock").get(key).cloned()
    }

    /// The subscription of the task under `key` when it next starts (or resumes): its state
    /// then and all its updates. Waiters whose subscriber has gone are dropped here.
    pub(crate) fn next_start(&self, key: &str) -> oneshot::Receiver<Started> {
        let (tx, rx) = oneshot::channel();
        let mut waiting = self.waiting.lock().expect("tasks lock");
        waiting.retain(|_, senders| {
            senders.retain(|s| !s.is_closed());
            !senders.is_empty()
        });
        waiting.entry(key.to_owned()).or_default().push(tx);
        rx
    }

    /// The last state of an ended task this process still holds.
    pub(crate) fn ended(&self, key: &str) -> Option<Task> {
        let ended = self.ended.lock().expect("tasks lock");
        ended
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, t)| t.clone())
    }

    /// Every task this process holds (running, or ended and kept) whose key starts with
    /// `prefix`, as it is now.
    pub(crate) fn held(&self, prefix: &str) -> Vec<Task> {
        let mut out: Vec<Task> = self
            .running
            .lock()
            .expect("tasks lock")
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(_, t)| t.snapshot())
            .collect();
        let ended = self.ended.lock().expect("tasks lock");
        for (k, t) in ended.iter().rev() {
            if k.starts_with(prefix) && out.iter().all(|o| o.id != t.id) {
                out.push(t.clone());
            }
        }
        out
    }

    /// Starts running `turn` as the task `task` (its history so far, the user's message
    /// included) under `key`: the turn runs to its end, to `max_duration`, or until cancelled,
    /// whoever reads it. Returns the running task.
    pub(crate) fn start(
        self: &Arc<Self>,
        key: String,
        mut task: Task,
        turn: Turn,
        max_duration: Duration,
        permit: crate::run_slots::Admitted,
    ) -> Arc<RunningTask> {
        task.status = TaskStatus::now(TaskState::Working, None);
        let running = Arc::new(RunningTask {
            state: Mutex::new(task),
            updates: broadcast::channel(UPDATES_BUFFER).0,
            cancel: Notify::new(),
        });
        self.running
            .lock()
            .expect("tasks lock")
            .insert(key.clone(), Arc::clone(&running));
        // Each waiting subscriber gets the task before it runs: nothing it does is missed.
        let waiters = self.waiting.lock().expect("tasks lock").remove(&key);
        for waiter in waiters.into_iter().flatten() {
            // A subscriber gone meanwhile is fine.
            let _ = waiter.send(running.subscribe());
        }
        let tasks = Arc::clone(self);
        let task = Arc::clone(&running);
        tokio::spawn(async move {
            let _permit = permit;
            drive(turn, &task, max_duration).await;
            tasks.end(&key, task.snapshot());
        });
        running
    }

    /// Records `last` as the state of the ended task under `key` (a task that waited for
    /// input and was cancelled).
    pub(crate) fn ended_as(&self, key: &str, last: Task) {
        self.end(key, last);
    }

    /// Moves the task under `key` from the running to the ended ones.
    fn end(&self, key: &str, last: Task) {
        let mut ended = self.ended.lock().expect("tasks lock");
        ended.retain(|(k, _)| k != key);
        if ended.len() >= ENDED_KEPT {
            ended.pop_front();
        }
        ended.push_back((key.to_owned(), last.clone()));
        drop(ended);
        self.running.lock().expect("tasks lock").remove(key);
        // Ended, or waiting for input: the task's webhooks are told.
        self.push.notify(key, &last);
    }
}

/// Runs `turn` to its end, publishing its items as updates of `task` (a thin mapping of the
/// turn's [`TurnStream`]); stops it (dropping the turn cancels the run and records nothing)
/// when cancelled or past `max_duration`.
async fn drive(turn: Turn, task: &RunningTask, max_duration: Duration) {
    let (task_id, context_id) = {
        let t = task.snapshot();
        (t.id, t.context_id)
    };
    task.status(TaskState::Working, None);
    let run = async {
        let mut items = TurnStream::new(turn);
        let session = Arc::clone(items.session());
        // The plan as the turn started: a change of it is sent as the `plan` artifact.
        let mut plan = session.raw_value(PLAN_KEY);
        while let Some(item) = items.next().await {
            let now = session.raw_value(PLAN_KEY);
            if now != plan {
                if let Some(p) = &now {
                    publish_plan(task, p, &context_id, &task_id);
                }
                plan = now;
            }
            match item {
                TurnItem::Event(e) => publish_event(task, &e, &context_id, &task_id),
                TurnItem::End(outcome) => return Some(outcome),
                // A2A sends whole messages: chunks are not sent; a broken stream's message is
                // not either (the agent retries, or its failure ends the task).
                _ => {}
            }
        }
        None
    };
    let outcome = tokio::select! {
        outcome = run => outcome,
        () = task.cancel.notified() => {
            task.status(TaskState::Canceled, None);
            return;
        }
        () = tokio::time::sleep(max_duration) => {
            let internal = format!(
                "task {task_id} ran longer than {} s (Limits::max_turn_duration) and was \
                 stopped; nothing of it was recorded",
                max_duration.as_secs_f64()
            );
            let error = PublicError::new(PublicCode::Timeout, &internal, None);
            task.status(TaskState::Failed, Some(map::failed(&error, &context_id, &task_id)));
            return;
        }
    };
    let Some(outcome) = outcome else {
        // A turn stream always ends with its outcome; a stream cut short is a failed task.
        let error = PublicError::internal(&format_args!(
            "task {task_id} ended without an outcome; nothing of it was recorded"
        ));
        task.status(
            TaskState::Failed,
            Some(map::failed(&error, &context_id, &task_id)),
        );
        return;
    };
    match outcome {
        TurnOutcome::Completed {
            answer,
            answered_by,
            ..
        } => {
            if let Some(answer) = answer {
                task.publish(StreamResponse::artifact(TaskArtifactUpdateEvent {
                    task_id: task_id.clone(),
                    context_id: context_id.clone(),
                    artifact: map::answer_artifact(&answer, &answered_by),
                    append: false,
                    last_chunk: true,
                    metadata: None,
                }));
            }
            task.status(TaskState::Completed, None);
        }
        TurnOutcome::Interrupted { interrupts, .. } => {
            let question = map::input_required(&interrupts, &context_id, &task_id);
            task.status(TaskState::InputRequired, Some(question));
        }
        TurnOutcome::Failed(e) => {
            let error = PublicError::of_turn_failure(&e);
            task.status(
                TaskState::Failed,
                Some(map::failed(&error, &context_id, &task_id)),
            );
        }
    }
}

/// The agent's plan, rewritten, as the task's `plan` artifact (replacing the one before).
fn publish_plan(task: &RunningTask, plan: &serde_json::Value, context_id: &str, task_id: &str) {
    task.publish(StreamResponse::artifact(TaskArtifactUpdateEvent {
        task_id: task_id.to_owned(),
        context_id: context_id.to_owned(),
        artifact: map::plan_artifact(plan),
        append: false,
        last_chunk: true,
        metadata: None,
    }));
}

/// One event of the turn as the task's updates: its message, and its action as metadata.
fn publish_event(task: &RunningTask, e: &TurnEvent, context_id: &str, task_id: &str) {
    let event = &e.event;
    let agent = event.agent_name();
    if let Some(m) = e
        .message
        .as_ref()
        .and_then(|m| map::agent_message(m, agent, event.run_path(), context_id, task_id))
    {
        task.status(TaskState::Working, Some(m));
    }
    if let Some(metadata) = event
        .action
        .as_ref()
        .and_then(|a| map::action_metadata(a, agent, event.run_path()))
    {
        task.publish(StreamResponse::status(TaskStatusUpdateEvent {
            task_id: task_id.to_owned(),
            context_id: context_id.to_owned(),
            status: TaskStatus::now(TaskState::Working, None),
            metadata: Some(metadata),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_id_is_the_context_and_the_turn() {
        let id = task_id("0b6c-ctx_1", 7);
        assert_eq!(id, "0b6c-ctx_1.7");
        assert_eq!(parse_task_id(&id), Some(("0b6c-ctx_1", 7)));
        for bad in ["", "ctx", ".3", "ctx.", "ctx.x1", "ctx.-1"] {
            assert_eq!(parse_task_id(bad), None, "{bad}");
        }
    }
}
