//! Recall before a model call: [`MemoryRecall`], a middleware that searches long-term memory
//! for what the turn's user message is about, in scopes the application fixes, and adds what it
//! found to the agent's system message under a token bound the application sets.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use async_trait::async_trait;
use serde_json::json;

use crate::agent::middleware::{HookContext, HookError, Middleware};
use crate::event::AgentEvent;
use crate::history::{EstimatedTokens, TokenCounter};
use crate::message::{Message, Role};
use crate::model::ChatRequest;
use crate::run_path::RunPath;
use crate::session::Session;
use crate::store::memory_items::{
    Hit, Memory, MemoryError, Namespace, Partition, Scope, SearchMode, SearchQuery, Tenant,
};

/// The key of the custom event a recall surfaces.
pub const MEMORY_RECALL_EVENT: &str = "memory_recall";

/// The first line of the block a recall adds to the system message.
pub const RECALL_HEADER: &str =
    "What you remember from earlier conversations (it may be out of date):";

/// How many runs' recalls a [`MemoryRecall`] keeps for their later model calls.
const KEPT_RUNS: usize = 256;

/// Recalls from long-term memory before an agent's model calls: attach it to a [`ChatModelAgent`](crate::ChatModelAgent) with
/// [`middleware`](crate::ChatModelAgentBuilder::middleware), made where the application knows
/// the tenant and the user. The tenant is given once and every scope is searched inside it: no
/// search reaches another tenant's items.
///
/// # Once per turn
///
/// The search runs at the first model call of an agent's run in a turn (the turn's user
/// message is the query, not another agent's words before it), and the later model calls of the same run (after tool calls, after a structured
/// output's correction) get the same block: the query has not changed, the prompt stays the
/// same from call to call (a provider's prompt cache keeps working), and a fact the model
/// itself keeps with `remember` during the turn is in the conversation already. A new turn, or
/// another agent of the tree, searches again.
///
/// # What the caller sees
///
/// Each search surfaces one display-only custom event (not recorded, not journaled) at the
/// agent's run path, before the model's reply:
///
/// ```json
/// {"memory_recall": {"query": "…", "max_tokens": 200, "tokens": 57,
///   "items": [{"scope": "res:user:alice", "namespace": "desk/devices", "key": "printer",
///              "version": 2, "score": 0.82, "line": "…"}],
///   "left_out": 1}}
/// ```
///
/// `left_out` counts the hits that did not fit under the bound. A turn recovered from its
/// journal answers its journaled model calls without running this hook, so it surfaces and
/// searches nothing for them.
///
/// ```
/// # futures::executor::block_on(async {
/// use agentweave_runtime::memory::{
///     ItemKey, Memory, MemoryRecall, Namespace, Partition, PutItem, Scope, Tenant,
///     TransientMemoryStore,
/// };
/// use agentweave_runtime::model::ScriptedModel;
/// use agentweave_runtime::{ChatModelAgent, EventOutput, FlowAgent, Runner};
/// use futures::StreamExt;
///
/// let memory = Memory::new(TransientMemoryStore::new());
/// let acme = Tenant::new("acme").unwrap();
/// let alice = Partition::new(acme.clone(), Scope::user("alice").unwrap());
/// let put = PutItem::new(serde_json::json!({"model": "X200"}))
///     .text("Alice's printer is an X200 laser printer");
/// let (devices, printer) = (Namespace::parse("devices").unwrap(), ItemKey::new("printer").unwrap());
/// memory.put(&alice, &devices, &printer, put).await.unwrap();
///
/// let recall = MemoryRecall::new(memory, acme, [Scope::user("alice").unwrap()], 200);
/// let model = ScriptedModel::new(["Your X200 again?"]);
/// let desk = ChatModelAgent::builder("desk", model.clone())
///     .instruction("You are a support desk.")
///     .middleware(recall)
///     .build()
///     .unwrap();
/// let events: Vec<_> = Runner::new(FlowAgent::new(desk)).run("my printer jams").collect().await;
/// let asked = &model.requests()[0];
/// assert!(asked.messages[0].content.contains("Alice's printer is an X200"));
/// let shown = events.iter().any(|e| {
///     matches!(&e.output, Some(EventOutput::Custom(c)) if c.get("memory_recall").is_some())
/// });
/// assert!(shown);
/// # });
/// ```
#[derive(Clone)]
pub struct MemoryRecall {
    shared: Arc<Shared>,
}

struct Shared {
    memory: Memory,
    partitions: Vec<Partition>,
    under: Option<Namespace>,
    max_tokens: usize,
    per_scope: usize,
    mode: SearchMode,
    counter: Arc<dyn TokenCounter>,
    /// The blocks of the runs in progress: (session, run path, turn) -> the recall.
    kept: Mutex<VecDeque<Kept>>,
}

struct Kept {
    session: Weak<Session>,
    run_path: RunPath,
    turn: u64,
    block: Option<Arc<str>>,
}

impl fmt::Debug for MemoryRecall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryRecall")
            .field("partitions", &self.shared.partitions)
            .field("under", &self.shared.under)
            .field("max_tokens", &self.shared.max_tokens)
            .field("per_scope", &self.shared.per_scope)
            .field("mode", &self.shared.mode)
            .finish_non_exhaustive()
    }
}

/// What one recall found and kept under the bound: [`MemoryRecall::recall`]'s answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Recalled {
    /// The hits kept, each with the partition searched and the line it adds to the block.
    pub items: Vec<RecalledItem>,
    /// The block added to the system message (none when nothing was kept).
    pub block: Option<String>,
    /// The tokens the block takes, as the recall's [`TokenCounter`] counts it.
    pub tokens: usize,
    /// How many hits did not fit under the bound.
    pub left_out: usize,
}

/// One hit a recall kept.
#[derive(Debug, Clone, PartialEq)]
pub struct RecalledItem {
    /// The partition it was found in.
    pub at: Partition,
    /// The hit.
    pub hit: Hit,
    /// The line it adds to the block.
    pub line: String,
}

impl MemoryRecall {
    /// Recall from `memory` in each of `scopes` of `tenant`, keeping what fits in `max_tokens`
    /// tokens (the block's header included; a bound too small for the header keeps nothing).
    pub fn new(
        memory: Memory,
        tenant: Tenant,
        scopes: impl IntoIterator<Item = Scope>,
        max_tokens: usize,
    ) -> Self {
        let partitions = scopes
            .into_iter()
            .map(|scope| Partition::new(tenant.clone(), scope))
            .collect();
        MemoryRecall {
            shared: Arc::new(Shared {
                memory,
                partitions,
                under: None,
                max_tokens,
                per_scope: 5,
                mode: SearchMode::Auto,
                counter: Arc::new(EstimatedTokens),
                kept: Mutex::new(VecDeque::new()),
            }),
        }
    }

    /// Only items in `namespace` or below it (default: the whole partition).
    pub fn under(self, namespace: Namespace) -> Self {
        self.with(|s| s.under = Some(namespace))
    }

    /// At most `hits` hits from each scope (default 5), before the token bound.
    pub fn per_scope(self, hits: usize) -> Self {
        self.with(|s| s.per_scope = hits)
    }

    /// How the searches rank (default [`SearchMode::Auto`]: by meaning when the memory has an
    /// embedder).
    pub fn mode(self, mode: SearchMode) -> Self {
        self.with(|s| s.mode = mode)
    }

    /// Counts the block's tokens with `counter` (default [`EstimatedTokens`]).
    pub fn counter(self, counter: impl TokenCounter) -> Self {
        self.with(|s| s.counter = Arc::new(counter))
    }

    fn with(self, f: impl FnOnce(&mut Shared)) -> Self {
        let s = &self.shared;
        let mut shared = Shared {
            memory: s.memory.clone(),
            partitions: s.partitions.clone(),
            under: s.under.clone(),
            max_tokens: s.max_tokens,
            per_scope: s.per_scope,
            mode: s.mode,
            counter: Arc::clone(&s.counter),
            kept: Mutex::new(VecDeque::new()),
        };
        f(&mut shared);
        MemoryRecall {
            shared: Arc::new(shared),
        }
    }

    /// Searches every scope for `query` and keeps the best hits that fit under the bound:
    /// the scopes' hits taken in turn, best first (a hit that does not fit is left out and the
    /// next is tried).
    pub async fn recall(&self, query: &str) -> Result<Recalled, MemoryError> {
        let s = &self.shared;
        let mut found: Vec<VecDeque<Hit>> = Vec::with_capacity(s.partitions.len());
        for at in &s.partitions {
            let mut search = SearchQuery::new(query).limit(s.per_scope).mode(s.mode);
            if let Some(under) = &s.under {
                search = search.under(under.clone());
            }
            found.push(s.memory.search(at, search).await?.into());
        }
        let mut items = Vec::new();
        let mut block = RECALL_HEADER.to_owned();
        let mut tokens = s.counter.count(&Message::system(block.as_str()));
        let mut left_out = 0;
        if tokens > s.max_tokens {
            let left_out = found.iter().map(VecDeque::len).sum();
            return Ok(Recalled {
                items,
                block: None,
                tokens: 0,
                left_out,
            });
        }
        loop {
            let mut any = false;
            for (at, hits) in s.partitions.iter().zip(found.iter_mut()) {
                let Some(hit) = hits.pop_front() else {
                    continue;
                };
                any = true;
                let line = line_of(&hit);
                let candidate = format!("{block}\n- {line}");
                let counted = s.counter.count(&Message::system(candidate.as_str()));
                if counted > s.max_tokens {
                    left_out += 1;
                    continue;
                }
                (block, tokens) = (candidate, counted);
                items.push(RecalledItem {
                    at: at.clone(),
                    hit,
                    line,
                });
            }
            if !any {
                break;
            }
        }
        let block = (!items.is_empty()).then_some(block);
        let tokens = if block.is_some() { tokens } else { 0 };
        Ok(Recalled {
            items,
            block,
            tokens,
            left_out,
        })
    }

    /// The block already recalled for this run and turn, if any.
    fn kept(
        &self,
        session: &Arc<Session>,
        run_path: &RunPath,
        turn: u64,
    ) -> Option<Option<Arc<str>>> {
        let kept = self.shared.kept.lock().expect("recall cache lock");
        kept.iter()
            .find(|k| {
                k.turn == turn
                    && k.run_path == *run_path
                    && k.session
                        .upgrade()
                        .is_some_and(|s| Arc::ptr_eq(&s, session))
            })
            .map(|k| k.block.clone())
    }

    fn keep(&self, session: &Arc<Session>, run_path: &RunPath, turn: u64, block: Option<Arc<str>>) {
        let mut kept = self.shared.kept.lock().expect("recall cache lock");
        kept.retain(|k| k.session.strong_count() > 0);
        if kept.len() >= KEPT_RUNS {
            kept.pop_front();
        }
        kept.push_back(Kept {
            session: Arc::downgrade(session),
            run_path: run_path.clone(),
            turn,
            block,
        });
    }
}

/// The line a hit adds: its text, or its value's JSON when it has none.
fn line_of(hit: &Hit) -> String {
    let item = &hit.item;
    let what = match &item.text {
        Some(text) => text.replace('\n', " "),
        None => item.value.to_string(),
    };
    format!("[{}/{}] {what}", item.namespace, item.key)
}

/// Adds `block` to the request's leading system message (or as one, first, when it has none).
fn inject(request: &mut ChatRequest, block: &str) {
    match request.messages.first() {
        Some(first) if first.role == Role::System => {
            let mut system = (**first).clone();
            system.content = format!("{}\n\n{block}", system.content);
            request.messages[0] = Arc::new(system);
        }
        _ => request.messages.insert(0, Arc::new(Message::system(block))),
    }
}

#[async_trait]
impl Middleware for MemoryRecall {
    async fn before_model(
        &self,
        cx: &HookContext,
        request: &mut ChatRequest,
    ) -> Result<Option<Message>, HookError> {
        let (session, run_path, turn) = (cx.session(), cx.run_path(), cx.run_context().turn());
        if let Some(block) = self.kept(session, run_path, turn) {
            if let Some(block) = block {
                inject(request, &block);
            }
            return Ok(None);
        }
        // The turn's user message: the run's input (never another agent's words rewritten as
        // context), else the request's last user message.
        let query = cx
            .run_context()
            .root_input()
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.clone())
            .or_else(|| request.last_user_message().map(|m| m.content.clone()))
            .unwrap_or_default();
        let recalled = self.recall(&query).await.map_err(|e| {
            HookError::failed(format!(
                "recall from long-term memory for agent '{}' failed: {e}",
                cx.agent_name()
            ))
        })?;
        let items: Vec<_> = recalled
            .items
            .iter()
            .map(|i| {
                json!({
                    "scope": i.at.scope.encode(),
                    "namespace": i.hit.item.namespace.as_str(),
                    "key": i.hit.item.key.as_str(),
                    "version": i.hit.item.version,
                    "score": i.hit.score,
                    "line": i.line,
                })
            })
            .collect();
        cx.surface(AgentEvent::custom(json!({
            MEMORY_RECALL_EVENT: {
                "query": query,
                "max_tokens": self.shared.max_tokens,
                "tokens": recalled.tokens,
                "items": items,
                "left_out": recalled.left_out,
            }
        })));
        let block: Option<Arc<str>> = recalled.block.map(Into::into);
        if let Some(block) = &block {
            inject(request, block);
        }
        self.keep(session, run_path, turn, block);
        Ok(None)
    }
}
