//! Who may answer a thread's interrupts, checked by the engine for every request that
//! continues an interrupted turn, whichever door it came through (a library call, an HTTP
//! route, a protocol router, a queue worker): [`Caller`] is who asks, with the grants a service
//! gave them ([`TurnRequest::by`](crate::TurnRequest::by)); [`AnswerRule`] is the runner's rule
//! ([`RunnerBuilder::answer_rule`](crate::RunnerBuilder::answer_rule)): the grant answering
//! needs, per flow and per tool, and whether the approver may be the one who started the turn.
//!
//! A runner with a rule refuses ([`ThreadError::Forbidden`], with its [`Refusal`]) answers
//! given by nobody, by a caller without the grant, or (if the rule says so) by the turn's own
//! requester, before anything runs; so does a cancelled run's answers sent again
//! ([`TurnRequest::again`](crate::TurnRequest::again)): they are checked as the new caller's.
//! The continuation of a turn stopped by a cancel (its only interrupts are cancel stops) is no
//! answer and needs no grant.

use std::collections::HashMap;
use std::sync::Arc;

pub use super::caller::Caller;
use super::fork_point::is_fork_point;
use crate::agent::cancel::is_cancel_interrupt;
use crate::event::InterruptInfo;
use crate::store::{RecordEnd, RecordStart, Refusal, ThreadError, ThreadHead, ThreadStore};

/// Who may answer a thread's interrupts: the grant answering needs (per flow, and per tool for
/// an interrupt raised inside one), and whether the approver must be another caller than the
/// one who started the turn.
///
/// A runner with a rule ([`RunnerBuilder::answer_rule`](crate::RunnerBuilder::answer_rule))
/// checks it in its one turn pipeline, for every request that continues an interrupted turn
/// whichever door it came through, as the request's [`Caller`]'s
/// ([`TurnRequest::by`](crate::TurnRequest::by)), before anything runs: answers given by
/// nobody, by a caller without the grant, or (if the rule says so) by the turn's requester are
/// refused ([`ThreadError::Forbidden`] with its [`Refusal`]). A cancelled run sent again
/// ([`TurnRequest::again`](crate::TurnRequest::again)) answers as its new caller. Continuing a
/// turn stopped by a cancel answers no question and needs no grant.
///
/// ```
/// use agentweave_runtime::AnswerRule;
/// let rule = AnswerRule::new("approve")
///     .tool_grant("issue_*", "admin") // refunds need an admin
///     .approver_not_requester(true); // nobody approves their own request
/// # let _ = rule;
/// ```
#[derive(Debug, Clone)]
pub struct AnswerRule {
    grant: Arc<str>,
    tools: Vec<(String, Arc<str>)>,
    distinct: bool,
}

impl AnswerRule {
    /// Answering needs `grant`; anyone with it may answer.
    pub fn new(grant: impl Into<Arc<str>>) -> Self {
        AnswerRule {
            grant: grant.into(),
            tools: Vec::new(),
            distinct: false,
        }
    }

    /// Answering an interrupt raised inside tool `tool` needs `grant`; `tool` is a tool's name,
    /// or a prefix ending in `*` (`billing_*`). The first matching rule wins.
    pub fn tool_grant(mut self, tool: impl Into<String>, grant: impl Into<Arc<str>>) -> Self {
        self.tools.push((tool.into(), grant.into()));
        self
    }

    /// Whether the approver must be another caller than the one who started the turn
    /// (default: no).
    pub fn approver_not_requester(mut self, distinct: bool) -> Self {
        self.distinct = distinct;
        self
    }

    /// The grant answering `interrupt` needs: its innermost tool's rule, else the flow's.
    pub fn grant_for(&self, interrupt: &InterruptInfo) -> &str {
        let tool = interrupt
            .address
            .iter()
            .rev()
            .find_map(|frame| frame.tool.as_ref());
        tool.and_then(|tool| {
            self.tools.iter().find_map(|(pattern, grant)| {
                let hit = match pattern.strip_suffix('*') {
                    Some(prefix) => tool.name.starts_with(prefix),
                    None => tool.name == *pattern,
                };
                hit.then_some(&**grant)
            })
        })
        .unwrap_or(&self.grant)
    }

    /// `Ok(())` if `caller` may give `answers` (interrupt id -> data) to a turn that
    /// `requester` started and that waits on `pending`. Answers that name none of the pending
    /// interrupts still need the flow's grant (the refusal that follows names the ids the
    /// thread knows). Cancel stops are no question: continuing them needs no grant.
    pub fn check(
        &self,
        caller: Option<&Caller>,
        pending: &[InterruptInfo],
        answers: &HashMap<String, serde_json::Value>,
        requester: Option<&str>,
    ) -> Result<(), Refusal> {
        let asked: Vec<&InterruptInfo> =
            pending.iter().filter(|i| !is_cancel_interrupt(i)).collect();
        if asked.is_empty() {
            return Ok(());
        }
        let Some(caller) = caller else {
            return Err(Refusal::Nobody);
        };
        let require = |grant: &str| {
            if caller.has(grant) {
                Ok(())
            } else {
                Err(Refusal::MissingGrant {
                    caller: Arc::clone(caller.id_arc()),
                    grant: Arc::from(grant),
                })
            }
        };
        let answered: Vec<&&InterruptInfo> = asked
            .iter()
            .filter(|i| answers.contains_key(&i.id))
            .collect();
        if answered.is_empty() {
            require(&self.grant)?;
        }
        for interrupt in answered {
            require(self.grant_for(interrupt))?;
        }
        if self.distinct && requester == Some(caller.id()) {
            return Err(Refusal::OwnRequest {
                caller: Arc::clone(caller.id_arc()),
            });
        }
        Ok(())
    }
}

impl AnswerRule {
    /// Checks under this rule that `caller` may give `answers` to the turn thread `thread_id`
    /// waits on, and logs each answer in an `approval` span. The thread is held (its lease
    /// taken) while this reads it; `known_head` is its head when the pipeline read it already.
    pub(super) async fn authorize(
        &self,
        store: &Arc<dyn ThreadStore>,
        thread_id: &str,
        known_head: Option<&Option<ThreadHead>>,
        answers: &HashMap<String, serde_json::Value>,
        caller: Option<&Caller>,
    ) -> Result<(), ThreadError> {
        let read;
        let head = match known_head {
            Some(head) => head,
            None => {
                read = store.head(thread_id).await?;
                &read
            }
        };
        let Some(head) = head else {
            return Ok(());
        };
        let RecordEnd::Interrupted { interrupts, .. } = &head.last.end else {
            // Nothing waits: the pipeline answers `NotInterrupted`.
            return Ok(());
        };
        if is_fork_point(&head.last.end) {
            // A fork's continuation answers no question (see `time_travel`).
            return Ok(());
        }
        let turn = head.last.turn;
        let records = store.read(thread_id, turn..turn + 1).await?;
        let requester = records
            .iter()
            .find(|r| matches!(r.start, RecordStart::Turn { .. }))
            .and_then(|r| r.by.clone());
        self.check(caller, interrupts, answers, requester.as_deref())
            .map_err(|refusal| ThreadError::Forbidden {
                id: thread_id.to_owned(),
                refusal,
            })?;
        let span = tracing::info_span!(
            "approval",
            thread = %thread_id,
            turn,
            principal = caller.map_or("", Caller::id),
            requested_by = requester.as_deref().unwrap_or(""),
        );
        span.in_scope(|| {
            for interrupt in interrupts.iter().filter(|i| answers.contains_key(&i.id)) {
                tracing::info!(
                    interrupt = %interrupt.id,
                    asked = %interrupt.info,
                    answered = %answers.get(&interrupt.id).unwrap_or(&serde_json::Value::Null),
                    "interrupt answered"
                );
            }
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn asked(id: &str) -> InterruptInfo {
        let mut i = InterruptInfo::new(json!({"question": "Approve?"}));
        i.id = id.into();
        i
    }

    fn answer(id: &str) -> HashMap<String, serde_json::Value> {
        HashMap::from([(id.to_owned(), json!(true))])
    }

    #[test]
    fn answering_needs_the_grant_a_caller_and_another_approver_if_asked() {
        let rule = AnswerRule::new("approve").approver_not_requester(true);
        let pending = [asked("a/refund")];
        let ben = Caller::new("ben").grants(["approve"]);
        let ana = Caller::new("ana").grants(["chat"]);
        assert_eq!(
            rule.check(Some(&ben), &pending, &answer("a/refund"), Some("ana")),
            Ok(())
        );
        assert_eq!(
            rule.check(Some(&ana), &pending, &answer("a/refund"), Some("cara")),
            Err(Refusal::MissingGrant {
                caller: "ana".into(),
                grant: "approve".into()
            })
        );
        assert_eq!(
            rule.check(None, &pending, &answer("a/refund"), Some("ana")),
            Err(Refusal::Nobody)
        );
        assert_eq!(
            rule.check(Some(&ben), &pending, &answer("a/refund"), Some("ben")),
            Err(Refusal::OwnRequest {
                caller: "ben".into()
            })
        );
        // Answers naming nothing pending still need the grant.
        assert!(rule
            .check(Some(&ana), &pending, &answer("other"), None)
            .is_err());
    }

    #[test]
    fn a_cancel_stop_is_no_question() {
        let rule = AnswerRule::new("approve");
        let mut stop = asked("a");
        stop.info = json!({"cancelled": "after_model"});
        assert_eq!(rule.check(None, &[stop], &HashMap::new(), None), Ok(()));
    }
}
