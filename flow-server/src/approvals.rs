//! Approvals with authority and a record: [`Approvals`] says which scope answering a flow's
//! interrupts needs (per flow, per tool) and whether the approver may be the principal who
//! started the turn; [`ApprovalRecord`] is what the thread endpoints show of each answer: who
//! answered, when, what was asked and what was answered. The record lives in the thread
//! itself (each resume's record names who made it: `ThreadRecord::by`).

use std::sync::Arc;

use agentweave_runtime::store::{RecordEnd, RecordStart, ThreadRecord};
use agentweave_runtime::{AnswerRule, InterruptInfo, ThreadError};
use serde::Serialize;

use crate::error::ApiError;
use crate::principal::{Principal, Scope};

/// Who may answer a flow's interrupts. By default: any principal with the `approve` scope,
/// including the one who started the turn.
///
/// ```
/// use agentweave_server::{Approvals, Scope};
/// let approvals = Approvals::new()
///     .tool_scope("issue_refund", Scope::Admin) // refunds need an admin
///     .approver_not_requester(true); // nobody approves their own request
/// # let _ = approvals;
/// ```
#[derive(Debug, Clone)]
pub struct Approvals {
    scope: Scope,
    tools: Vec<(String, Scope)>,
    distinct: bool,
}

impl Default for Approvals {
    fn default() -> Self {
        Approvals::new()
    }
}

impl Approvals {
    /// Answering needs [`Scope::Approve`]; anyone with it may answer.
    pub fn new() -> Self {
        Approvals {
            scope: Scope::Approve,
            tools: Vec::new(),
            distinct: false,
        }
    }

    /// The scope answering an interrupt of this flow needs (default [`Scope::Approve`]).
    pub fn scope(mut self, scope: Scope) -> Self {
        self.scope = scope;
        self
    }

    /// The scope answering an interrupt raised inside tool `tool` needs; `tool` is a tool's
    /// name, or a prefix ending in `*` (`billing_*`). The first matching rule wins.
    pub fn tool_scope(mut self, tool: impl Into<String>, scope: Scope) -> Self {
        self.tools.push((tool.into(), scope));
        self
    }

    /// Whether the approver must be another principal than the one who started the turn
    /// (default: no).
    pub fn approver_not_requester(mut self, distinct: bool) -> Self {
        self.distinct = distinct;
        self
    }

    /// These approvals as the engine's rule, which the flow's runner checks for every request
    /// that answers its interrupts, whichever door it came through (scopes as grants).
    pub fn rule(&self) -> AnswerRule {
        self.tools.iter().fold(
            AnswerRule::new(self.scope.as_str()).approver_not_requester(self.distinct),
            |rule, (tool, scope)| rule.tool_grant(tool.clone(), scope.as_str()),
        )
    }

    /// `Ok(())` if `principal` holds a scope that answers some interrupt of this flow (the
    /// flow's, or one of its tools'); a 403 otherwise. A door that answers interrupts asks it
    /// before looking the thread up, so a caller who may answer nothing cannot tell which
    /// threads exist from the answer (the engine still checks each answer).
    pub(crate) fn require_some_answer(&self, principal: &Principal) -> Result<(), ApiError> {
        let scopes: Vec<Scope> = std::iter::once(self.scope)
            .chain(self.tools.iter().map(|(_, s)| *s))
            .collect();
        principal.require_any(&scopes)
    }

    /// `Ok(())` if `principal` may send a resume with `targets` to the thread stored as
    /// `store_id`: with no answer, the continuation of a fork point (a fork made in the middle
    /// of a turn asks nobody anything) needs `chat`, as the fork did; anything else needs a
    /// scope that answers some interrupt ([`require_some_answer`](Self::require_some_answer)).
    /// The engine then checks each answer.
    pub(crate) async fn require_resume(
        &self,
        state: &crate::AppState,
        store_id: &str,
        principal: &Principal,
        targets: &std::collections::HashMap<String, serde_json::Value>,
    ) -> Result<(), ApiError> {
        if targets.is_empty() && principal.allows(Scope::Chat) {
            if let Some(head) = state.threads().head(store_id).await? {
                if agentweave_runtime::fork_point_step(&head.last.end).is_some() {
                    return Ok(());
                }
            }
        }
        self.require_some_answer(principal)
    }

    /// `Ok(())` if `principal` may send a cancelled run of the thread stored as `store_id`
    /// again (`POST .../runs/{run}/resume`): continuing a turn stopped at a safe point answers
    /// nobody's question, so `chat` is enough (as for the run it continues); a run that was
    /// answering an interrupt answers it again and needs a scope that answers some interrupt.
    pub(crate) async fn require_continue(
        &self,
        state: &crate::AppState,
        store_id: &str,
        principal: &Principal,
    ) -> Result<(), ApiError> {
        if principal.allows(Scope::Chat) {
            if let Some(head) = state.threads().head(store_id).await? {
                if let agentweave_runtime::store::RecordEnd::Interrupted { interrupts, .. } =
                    &head.last.end
                {
                    if interrupts
                        .iter()
                        .all(agentweave_runtime::cancel::is_cancel_interrupt)
                    {
                        return Ok(());
                    }
                }
            }
        }
        self.require_some_answer(principal)
    }

    /// `Ok(())` if `principal` may give `answers` to a turn that `requester` started and that
    /// waits on `pending` (the engine's check, for what answers outside a turn request: a
    /// withdrawal).
    pub(crate) fn check(
        &self,
        principal: &Principal,
        pending: &[InterruptInfo],
        answers: &std::collections::HashMap<String, serde_json::Value>,
        requester: Option<&str>,
    ) -> Result<(), ApiError> {
        self.rule()
            .check(Some(&principal.into()), pending, answers, requester)
            .map_err(|refusal| {
                ApiError::from(ThreadError::Forbidden {
                    id: String::new(),
                    refusal,
                })
            })
    }
}

/// One answered interrupt, as the thread endpoints show it.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalRecord {
    /// The turn it belongs to.
    pub turn: u64,
    /// The interrupt's id.
    pub interrupt_id: String,
    /// What was asked (the interrupt's public info).
    pub asked: serde_json::Value,
    /// What was answered (the resume data).
    pub answered: serde_json::Value,
    /// Who answered (a principal id), if the server knew.
    pub by: Option<Arc<str>>,
    /// Who started the turn, if the server knew.
    pub requested_by: Option<Arc<str>>,
    /// When the answer was recorded, in milliseconds since the Unix epoch.
    pub at_ms: u64,
}

/// The approvals recorded in a thread's `records`, oldest first.
pub(crate) fn approvals_of(records: &[ThreadRecord]) -> Vec<ApprovalRecord> {
    let mut out = Vec::new();
    let mut requested_by = None;
    let mut asked: Vec<&InterruptInfo> = Vec::new();
    for record in records {
        match &record.start {
            RecordStart::Turn { .. } => requested_by = record.by.clone(),
            RecordStart::Resume { targets, .. } => {
                for (id, answer) in targets {
                    let question = asked.iter().find(|i| i.id == *id);
                    out.push(ApprovalRecord {
                        turn: record.turn,
                        interrupt_id: id.clone(),
                        asked: question.map(|i| i.info.clone()).unwrap_or_default(),
                        answered: answer.clone(),
                        by: record.by.clone(),
                        requested_by: requested_by.clone(),
                        at_ms: record.at_ms,
                    });
                }
            }
            RecordStart::Values { .. } => {}
        }
        asked = match &record.end {
            RecordEnd::Interrupted { interrupts, .. } => interrupts.iter().collect(),
            _ => Vec::new(),
        };
    }
    out
}

/// Who started turn `turn` of a thread whose records are `records`.
pub(crate) fn requester_of(records: &[ThreadRecord], turn: u64) -> Option<Arc<str>> {
    records
        .iter()
        .find(|r| r.turn == turn && matches!(r.start, RecordStart::Turn { .. }))
        .and_then(|r| r.by.clone())
}
