//! The nested steps of a journaled turn: the model replies and tool results of runs nested in
//! the turn's tool calls (an [`AgentTool`](crate::AgentTool)'s agent runs in a session of its
//! own, so its steps are not events of the turn's record). They are journaled beside the
//! turn's journal, one journal per part of the turn (`THREAD.turn-N.nested-V`, V the thread's
//! version the part started at: see `turn_mark::nested_journal_id`), with their run paths
//! (`desk/clerk`), so that a recovery replays them: an agent tool that was in flight (or whose
//! result is journaled) runs again with its model replies and tool results answered from the
//! journal, and its surfaced events reach the caller again with their original run paths.
//!
//! In `Sync` a nested reply is stored before its tools run (and the journal gate is told of
//! it, so a nested tool call does not wait for a reply the turn's own journal never holds); in
//! `Async` the steps are appended by a background task, in order.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::{mpsc, Mutex};

use super::durability::Durability;
use super::journal::{encode_step, turn_journal_id};
use super::journal_gate::StoredCalls;
use super::runs::Runner;
use super::turn_mark::nested_journal_id;
use crate::agent::middleware::{HookContext, HookError, Middleware};
use crate::event::RecordedEvent;
use crate::message::Message;
use crate::run_path::RunPath;
use crate::session::Session;
use crate::store::{JournalError, JournalStore};

/// What is stored of the nested journal, and where the next step goes.
#[derive(Default)]
struct Stored {
    next: u64,
    /// Run path -> how many of its replies are stored.
    replies: HashMap<RunPath, usize>,
    /// Run path -> how many of its replies this run produced (replayed ones included).
    produced: HashMap<RunPath, usize>,
    /// The tool results stored: run path and call id.
    results: HashSet<(RunPath, String)>,
}

/// The middleware that journals the steps of nested runs (first in a journaled turn's chain).
pub(crate) struct NestedSteps {
    store: Arc<dyn JournalStore>,
    id: String,
    flow: String,
    scope: String,
    /// The turn's own session: a hook in any other runs nested in a tool call.
    top: Arc<Session>,
    stored: Mutex<Stored>,
    gate: Option<Arc<StoredCalls>>,
    /// `Async`: the background appender's queue.
    background: Option<mpsc::UnboundedSender<RecordedEvent>>,
}

impl NestedSteps {
    /// Journals in `id` the nested steps of the turn whose session is `top`, in `mode`;
    /// `journaled` are the nested steps stored already (a recovery's), which the run
    /// regenerates and which are not stored again.
    #[allow(clippy::too_many_arguments)]
    fn new(
        store: Arc<dyn JournalStore>,
        id: String,
        flow: String,
        scope: String,
        mode: Durability,
        top: Arc<Session>,
        journaled: &[RecordedEvent],
        gate: Option<Arc<StoredCalls>>,
    ) -> NestedSteps {
        let mut stored = Stored {
            next: journaled.len() as u64,
            ..Stored::default()
        };
        for step in journaled {
            match step.message.as_ref() {
                Some(m) if m.tool_call_id.is_some() => {
                    let call = m.tool_call_id.clone().unwrap_or_default();
                    stored.results.insert((step.run_path.clone(), call));
                }
                Some(_) => *stored.replies.entry(step.run_path.clone()).or_default() += 1,
                None => {}
            }
        }
        let background = (mode == Durability::Async).then(|| {
            let (tx, mut rx) = mpsc::unbounded_channel::<RecordedEvent>();
            let (store, id, flow, scope) =
                (Arc::clone(&store), id.clone(), flow.clone(), scope.clone());
            let mut next = stored.next;
            tokio::spawn(async move {
                while let Some(first) = rx.recv().await {
                    let mut events = vec![first];
                    while let Ok(more) = rx.try_recv() {
                        events.push(more);
                    }
                    let now = crate::store::now_ms();
                    let steps = events
                        .into_iter()
                        .map(|e| encode_step(&flow, &scope, e, now))
                        .collect();
                    match store.append_steps(&id, next, steps).await {
                        Ok(n) => next = n,
                        Err(e) => {
                            tracing::warn!(journal = %id, error = %e, "nested steps were not journaled");
                            return;
                        }
                    }
                }
            });
            tx
        });
        NestedSteps {
            store,
            id,
            flow,
            scope,
            top,
            stored: Mutex::new(stored),
            gate,
            background,
        }
    }

    fn nested(&self, cx: &HookContext) -> bool {
        !Arc::ptr_eq(cx.session(), &self.top)
    }

    /// Stores `step` (Sync: now; Async: queued).
    async fn store(&self, stored: &mut Stored, step: RecordedEvent) -> Result<(), JournalError> {
        if let Some(tx) = &self.background {
            let _ = tx.send(step);
            return Ok(());
        }
        let encoded = encode_step(&self.flow, &self.scope, step, crate::store::now_ms());
        stored.next = self
            .store
            .append_steps(&self.id, stored.next, vec![encoded])
            .await?;
        Ok(())
    }
}

fn hook_error(e: JournalError) -> HookError {
    HookError::failed(format!("a nested step could not be journaled: {e}"))
}

#[async_trait]
impl Middleware for NestedSteps {
    fn name(&self) -> std::borrow::Cow<'_, str> {
        "nested journal".into()
    }

    async fn after_model(&self, cx: &HookContext, reply: &mut Message) -> Result<(), HookError> {
        if !self.nested(cx) {
            return Ok(());
        }
        let step = RecordedEvent {
            agent_name: Arc::from(cx.agent_name()),
            run_path: cx.run_path().clone(),
            message: Some(reply.clone()),
            action: None,
        };
        let mut stored = self.stored.lock().await;
        let path = cx.run_path().clone();
        let produced = {
            let n = stored.produced.entry(path.clone()).or_default();
            *n += 1;
            *n
        };
        if produced > stored.replies.get(&path).copied().unwrap_or(0) {
            self.store(&mut stored, step.clone())
                .await
                .map_err(hook_error)?;
            *stored.replies.entry(path).or_default() += 1;
        }
        drop(stored);
        if let Some(gate) = &self.gate {
            gate.add(std::slice::from_ref(&step));
        }
        Ok(())
    }

    async fn after_tool(&self, cx: &HookContext, result: &mut String) -> Result<(), HookError> {
        if !self.nested(cx) {
            return Ok(());
        }
        let (Some(call), Some(tool)) = (cx.tool_call_id(), cx.tool_name()) else {
            return Ok(());
        };
        let key = (cx.run_path().clone(), call.to_owned());
        let mut stored = self.stored.lock().await;
        if stored.results.contains(&key) {
            return Ok(());
        }
        let step = RecordedEvent {
            agent_name: Arc::from(cx.agent_name()),
            run_path: cx.run_path().clone(),
            message: Some(Message::tool(result.clone(), call, tool)),
            action: None,
        };
        self.store(&mut stored, step).await.map_err(hook_error)?;
        stored.results.insert(key);
        Ok(())
    }
}

impl Runner {
    /// The middleware journaling the nested steps of part `version` of turn `turn` of
    /// `thread` (whose session is `top`), if the turn is journaled, with the nested steps
    /// journaled already when `recovering` (else an earlier attempt's are dropped).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn nested_steps(
        &self,
        thread: &str,
        turn: u64,
        version: u64,
        top: &Arc<Session>,
        scope: &str,
        gate: Option<Arc<StoredCalls>>,
        recovering: bool,
    ) -> Result<(Option<Arc<dyn Middleware>>, Vec<RecordedEvent>), JournalError> {
        let mode = match (self.durability, recovering) {
            (Durability::Exit, false) => return Ok((None, Vec::new())),
            (Durability::Exit, true) => Durability::Sync,
            (mode, _) => mode,
        };
        let Some(store) = &self.journal else {
            return Ok((None, Vec::new()));
        };
        let id = nested_journal_id(&turn_journal_id(thread, turn), version);
        let journaled: Vec<RecordedEvent> = if recovering {
            self.journal(&id)
                .await?
                .into_iter()
                .map(|s| s.event)
                .collect()
        } else {
            if store.journal_len(&id).await? > 0 {
                store.truncate_steps(&id, 0).await?;
            }
            Vec::new()
        };
        let nested = NestedSteps::new(
            Arc::clone(store),
            id,
            self.flow_fingerprint(),
            scope.to_owned(),
            mode,
            Arc::clone(top),
            &journaled,
            gate,
        );
        Ok((Some(Arc::new(nested)), journaled))
    }
}
