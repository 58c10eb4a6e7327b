//! One tool call: a turn of the session's thread of the flow, run through the engine to its
//! end (in a task of its own, so a client that goes away does not cut it), its agents'
//! messages as progress notifications, its approvals asked by elicitation (each answer a
//! resume through the engine), and its end as the tool result.

use std::time::Duration;

use agentweave_runtime::store::RecordEnd;
use agentweave_runtime::{
    InterruptInfo, Message, Role, TurnItem, TurnOutcome, TurnRequest, TurnStream,
};
use futures::StreamExt;
use rmcp::model::{CallToolResult, ContentBlock, ErrorData, ProgressNotificationParam};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use sha2::{Digest, Sha256};

use super::approval::{self, Asked};
use super::server::{refused, Caller};
use crate::error::ApiError;
use crate::outward::{PublicCode, PublicError};
use crate::run_slots::Admitted;
use crate::state::{AppState, ServedFlow};
use crate::thread::ThreadKey;

/// The most approval rounds one call answers (a turn that asks again after each answer ends
/// the call waiting after these).
const MAX_ROUNDS: usize = 8;

/// The most characters of an agent's message a progress notification carries.
const PROGRESS_CHARS: usize = 500;

/// How a turn (or a resume) ended, in public form.
enum Ended {
    Completed(Option<String>),
    Interrupted(Vec<InterruptInfo>),
    Failed(PublicError),
}

/// The thread of an MCP session: `mcp-` and 32 hex digits of the session id's SHA-256 (a
/// session id is the transport's; the thread id keeps to the server's rules whatever it is).
pub(super) fn thread_of(session: &str) -> String {
    let digest = Sha256::digest(session.as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("mcp-{hex}")
}

/// Runs the call: the turn, then each approval round, to the tool result.
pub(super) async fn call(
    state: &AppState,
    served: &ServedFlow,
    caller: &Caller,
    message: String,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let session = caller.session.as_deref().ok_or_else(|| {
        refused(ApiError::BadRequest(
            "the call has no Mcp-Session-Id: initialize a session first".into(),
        ))
    })?;
    let thread = thread_of(session);
    let key = ThreadKey::new(served.name(), &caller.tenant, &thread).map_err(refused)?;
    let store_id = key.store_id();
    let head = state
        .threads()
        .head(&store_id)
        .await
        .map_err(|e| refused(e.into()))?;
    if let Some(RecordEnd::Interrupted { interrupts, .. }) = head.map(|h| h.last.end) {
        return Ok(approval::waiting(
            served.name(),
            &thread,
            &interrupts,
            "Your message was not sent: the thread takes new messages once this is answered.",
        ));
    }
    let progress = Progress::of(context);
    let mut request = TurnRequest::new(&store_id, Message::user(message)).by(&caller.principal);
    for _ in 0..=MAX_ROUNDS {
        let permit = state.admit_run(&key.tenant, &store_id).map_err(refused)?;
        let ended = run(state, served, request, permit, progress.clone()).await?;
        let interrupts = match ended {
            Ended::Completed(answer) => {
                let text = answer
                    .filter(|a| !a.is_empty())
                    .unwrap_or_else(|| "(the flow ended its turn without an answer)".into());
                return Ok(CallToolResult::success(vec![ContentBlock::text(text)]));
            }
            Ended::Failed(error) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(
                    error.to_string(),
                )]))
            }
            Ended::Interrupted(interrupts) => interrupts,
        };
        match approval::ask(served, caller, &interrupts, context).await {
            Asked::Answered(targets) => {
                request = TurnRequest::resume(&store_id, targets).by(&caller.principal);
            }
            Asked::Waiting(why) => {
                return Ok(approval::waiting(served.name(), &thread, &interrupts, &why))
            }
        }
    }
    let interrupts = match state
        .threads()
        .head(&store_id)
        .await
        .map_err(|e| refused(e.into()))?
        .map(|h| h.last.end)
    {
        Some(RecordEnd::Interrupted { interrupts, .. }) => interrupts,
        _ => Vec::new(),
    };
    Ok(approval::waiting(
        served.name(),
        &thread,
        &interrupts,
        &format!("This call answered {MAX_ROUNDS} approvals and stops asking."),
    ))
}

/// Where progress goes: the call's progress token and the session's peer.
#[derive(Clone)]
struct Progress(Option<(rmcp::Peer<RoleServer>, rmcp::model::ProgressToken)>);

impl Progress {
    fn of(context: &RequestContext<RoleServer>) -> Self {
        Progress(
            context
                .meta
                .get_progress_token()
                .map(|token| (context.peer.clone(), token)),
        )
    }

    async fn said(&self, count: u32, agent: &str, text: &str) {
        if let Some((peer, token)) = &self.0 {
            let text: String = text.chars().take(PROGRESS_CHARS).collect();
            let note = ProgressNotificationParam::new(token.clone(), f64::from(count))
                .with_message(format!("{agent}: {text}"));
            // A client that went away misses its progress; the turn goes on.
            let _ = peer.notify_progress(note).await;
        }
    }
}

/// Starts `request` through the engine and reads the turn to its end in a task of its own
/// (holding `permit`, within the server's turn time limit).
async fn run(
    state: &AppState,
    served: &ServedFlow,
    request: TurnRequest,
    permit: Admitted,
    progress: Progress,
) -> Result<Ended, ErrorData> {
    let turn = served
        .runner()
        .turn(request)
        .await
        .map_err(|e| refused(e.into()))?;
    let limit = state.limits().max_turn_duration;
    let (done, ended) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let _permit = permit;
        let read = async {
            let mut turn = TurnStream::new(turn);
            let mut said = 0u32;
            while let Some(item) = turn.next().await {
                match item {
                    TurnItem::Event(e) => {
                        if let Some(m) = &e.message {
                            if m.role == Role::Assistant && !m.content.is_empty() {
                                said += 1;
                                progress.said(said, e.event.agent_name(), &m.content).await;
                            }
                        }
                    }
                    TurnItem::End(outcome) => return Some(outcome),
                    _ => {}
                }
            }
            None
        };
        let ended = match tokio::time::timeout(limit, read).await {
            Ok(Some(TurnOutcome::Completed { answer, .. })) => {
                Ended::Completed(answer.map(|m| m.content))
            }
            Ok(Some(TurnOutcome::Interrupted { interrupts, .. })) => Ended::Interrupted(interrupts),
            Ok(Some(TurnOutcome::Failed(e))) => Ended::Failed(PublicError::of_turn_failure(&e)),
            Ok(None) => Ended::Failed(PublicError::internal(
                &"an MCP call's turn stream ended without its outcome",
            )),
            Err(_) => Ended::Failed(overtime(limit)),
        };
        let _ = done.send(ended);
    });
    ended.await.map_err(|_| {
        refused(ApiError::Incident(PublicError::internal(
            &"an MCP call's turn task ended without a word",
        )))
    })
}

fn overtime(limit: Duration) -> PublicError {
    let internal = format!(
        "an MCP call's turn ran longer than {} s (Limits::max_turn_duration) and was cancelled; \
         nothing of it was recorded",
        limit.as_secs_f64()
    );
    PublicError::new(PublicCode::Timeout, &internal, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_has_one_valid_thread_id() {
        let t = thread_of("0b8f6a8e-3c1e-4b53-9a4e-2f1d8c7b6a5e");
        assert_eq!(t, thread_of("0b8f6a8e-3c1e-4b53-9a4e-2f1d8c7b6a5e"));
        assert_ne!(t, thread_of("another"));
        assert!(crate::valid_thread_id(&t), "{t}");
        assert!(crate::valid_thread_id(&thread_of(&"x.y/z".repeat(100))));
    }
}
