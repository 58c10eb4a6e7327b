//! Extraction after a turn: [`MemoryExtraction`] runs a model the application picks after an
//! agent's turn, to keep what the turn taught about the user as facts, consolidated against
//! what is kept already (a changed fact replaces the old one under its key, a fact no longer
//! true is removed; the list does not only grow).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::agent::middleware::{HookContext, HookError, Middleware};
use crate::agent::FlowAgent;
use crate::error::FlowError;
use crate::event::AgentError;
use crate::history::{ContextPolicy, HistoryEntry};
use crate::llm::tool::{parse_arguments, schema_for, Tool, ToolContext, ToolError};
use crate::llm::{ChatAgentError, ChatModelAgent};
use crate::message::{Message, MessageRef, Role};
use crate::model::{ChatModel, ChatRequest};
use crate::store::memory_items::{
    ItemKey, ListQuery, Memory, MemoryError, Namespace, Partition, PutItem,
};
use crate::workflow::Sequential;

/// The name of the tool the extractor applies its changes with.
pub const UPDATE_MEMORY_TOOL_NAME: &str = "update_memory";

/// The default name of the extractor agent.
pub const MEMORY_EXTRACTOR_NAME: &str = "memory_extractor";

/// The most changes one `update_memory` call applies.
pub const MAX_CHANGES_PER_CALL: usize = 50;

/// The extractor's instruction (the kept facts are added after it at each model call).
pub const EXTRACTION_INSTRUCTION: &str = "You keep long-term memory about the user of a \
conversation. Read the latest turn (the user's message and the answers to it) and the facts \
kept already, listed below with their keys. If the turn taught something worth keeping for \
later conversations (a device, a preference, a decision, a fact about the user), call \
update_memory once with the changes: 'add' a new fact under a new short key (letters, digits, \
'.', '_' or '-'); 'update' a kept fact that changed, under its existing key (never add a second \
fact about the same thing); 'remove' a kept fact the turn shows is no longer true. Keep each \
fact to one sentence. If nothing is worth keeping, call no tool. Then answer with one word: \
done.";

/// Extraction after a turn: made where the application knows the tenant and the user (the
/// partition), with the model it picks.
///
/// # A journaled step
///
/// The extractor is an agent of the tree ([`MemoryExtraction::after`] puts it after the agent,
/// in a [`Sequential`]): its model's reply (the changes it decided, as one `update_memory` tool
/// call) and the tool's result are steps of the turn's journal like any other. So a turn whose
/// worker died is recovered with its extraction: a journaled decision is not asked of the model
/// again, a journaled result is not applied again, and a call that was in flight is applied
/// again idempotently (a fact already as decided is left alone, a removed one stays removed),
/// so nothing is skipped or written twice.
///
/// # What each side sees
///
/// The extractor sees the running turn only (the user's input and the agent's messages, as
/// `For context:` lines) and, in its system message, the facts kept under its root with their
/// keys. The agent it follows does not see the extractor's messages in later turns (its context
/// policy leaves them out; [`MemoryExtraction::hiding`] makes that policy for other nodes).
///
/// ```
/// # futures::executor::block_on(async {
/// use agentweave_runtime::memory::{
///     ListQuery, Memory, MemoryExtraction, Namespace, Partition, Scope, Tenant,
///     TransientMemoryStore,
/// };
/// use agentweave_runtime::model::{ScriptStep, ScriptedModel};
/// use agentweave_runtime::{ChatModelAgent, FlowAgent, Runner};
/// use futures::StreamExt;
///
/// let memory = Memory::new(TransientMemoryStore::new());
/// let alice = Partition::new(Tenant::new("acme").unwrap(), Scope::user("alice").unwrap());
/// let desk = ChatModelAgent::builder("desk", ScriptedModel::new(["Noted, the X200."]))
///     .build()
///     .unwrap();
/// let extractor_model = ScriptedModel::new([
///     ScriptStep::tool_call("update_memory", serde_json::json!({"changes": [
///         {"op": "add", "key": "printer", "fact": "Alice's printer is an X200"}]})),
///     ScriptStep::text("done"),
/// ]);
/// let extraction = MemoryExtraction::new(
///     extractor_model, memory.clone(), alice.clone(), Namespace::parse("facts").unwrap());
/// let tree = extraction.after(FlowAgent::new(desk)).unwrap();
/// let _: Vec<_> = Runner::new(tree).run("I have an X200 printer").collect().await;
/// let kept = memory.list(&alice, &ListQuery::all()).await.unwrap();
/// assert_eq!(kept[0].text.as_deref(), Some("Alice's printer is an X200"));
/// # });
/// ```
#[derive(Clone)]
pub struct MemoryExtraction {
    shared: Arc<Shared>,
    model: Arc<dyn ChatModel>,
    name: Arc<str>,
}

#[derive(Debug)]
struct Shared {
    memory: Memory,
    at: Partition,
    root: Namespace,
    ttl: Option<Duration>,
    max_facts: usize,
}

impl std::fmt::Debug for MemoryExtraction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryExtraction")
            .field("name", &self.name)
            .field("at", &self.shared.at)
            .field("root", &self.shared.root)
            .field("ttl", &self.shared.ttl)
            .field("max_facts", &self.shared.max_facts)
            .finish_non_exhaustive()
    }
}

impl MemoryExtraction {
    /// Extraction by `model` into `memory`, partition `at`, namespace `root` (the facts are
    /// items directly in `root`, keyed by the keys the model gives).
    pub fn new(model: impl ChatModel, memory: Memory, at: Partition, root: Namespace) -> Self {
        MemoryExtraction {
            shared: Arc::new(Shared {
                memory,
                at,
                root,
                ttl: None,
                max_facts: 100,
            }),
            model: Arc::new(model),
            name: MEMORY_EXTRACTOR_NAME.into(),
        }
    }

    /// The extractor agent's name (default [`MEMORY_EXTRACTOR_NAME`]).
    pub fn name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = name.into();
        self
    }

    /// Facts live `ttl` after each write (default: until removed).
    pub fn ttl(self, ttl: Duration) -> Self {
        self.with(|s| s.ttl = Some(ttl))
    }

    /// At most `facts` kept facts are shown to the extractor (default 100, in key order).
    pub fn max_facts(self, facts: usize) -> Self {
        self.with(|s| s.max_facts = facts)
    }

    fn with(mut self, f: impl FnOnce(&mut Shared)) -> Self {
        let s = &self.shared;
        let mut shared = Shared {
            memory: s.memory.clone(),
            at: s.at.clone(),
            root: s.root.clone(),
            ttl: s.ttl,
            max_facts: s.max_facts,
        };
        f(&mut shared);
        self.shared = Arc::new(shared);
        self
    }

    /// The `update_memory` tool: applies a list of changes (`add`, `update`, `remove`) to the
    /// facts under the root, idempotently.
    pub fn update_tool(&self) -> Arc<dyn Tool> {
        Arc::new(UpdateMemory {
            shared: Arc::clone(&self.shared),
        })
    }

    /// The extractor agent: the model, [`EXTRACTION_INSTRUCTION`] with the kept facts, and
    /// the `update_memory` tool.
    pub fn agent(&self) -> Result<ChatModelAgent, ChatAgentError> {
        ChatModelAgent::builder_with_arc(Arc::clone(&self.name), Arc::clone(&self.model))
            .description("Keeps what the turn taught about the user in long-term memory.")
            .instruction(EXTRACTION_INSTRUCTION)
            .tool_arc(self.update_tool())
            .middleware(KeptFacts {
                shared: Arc::clone(&self.shared),
            })
            .exit_tool(false)
            .transfer_instructions(false)
            .max_iterations(3)
            .build()
    }

    /// A context policy for the other agents of the tree: the default rewrite, without the
    /// extractor's messages.
    pub fn hiding(&self) -> ContextPolicy {
        let name = Arc::clone(&self.name);
        ContextPolicy::custom(
            move |agent: &str, entries: &[HistoryEntry]| -> Result<Vec<MessageRef>, AgentError> {
                let kept: Vec<HistoryEntry> = entries
                    .iter()
                    .filter(|e| e.agent_name != name)
                    .cloned()
                    .collect();
                ContextPolicy::Rewrite.apply(agent, &kept)
            },
        )
    }

    /// `agent` followed by the extractor, in a [`Sequential`] named after `agent`
    /// (`AGENT_with_memory`): `agent`'s node gets the [`hiding`](Self::hiding) policy (replace
    /// it with [`FlowAgent::context`] for another), the extractor's sees the running turn
    /// only.
    pub fn after(&self, agent: FlowAgent) -> Result<FlowAgent, ExtractionError> {
        let extractor = self.agent()?;
        let name = format!("{}_with_memory", agent.name());
        let agent = agent.context(self.hiding());
        let extractor = FlowAgent::new(extractor).context(ContextPolicy::LastTurns(1));
        Ok(Sequential::new(name).with_sub_agents([agent, extractor])?)
    }
}

/// Why [`MemoryExtraction::after`] could not make the tree.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExtractionError {
    /// The extractor agent could not be built (its name, most likely).
    #[error("the memory extractor could not be built: {0}")]
    Agent(#[from] ChatAgentError),
    /// The tree could not be made (the agent already has a parent, or holds an agent named
    /// like the extractor).
    #[error("the agent and its memory extractor could not be put in one tree: {0}")]
    Tree(#[from] FlowError),
}

/// Adds the kept facts to the extractor's system message.
struct KeptFacts {
    shared: Arc<Shared>,
}

#[async_trait]
impl Middleware for KeptFacts {
    async fn before_model(
        &self,
        cx: &HookContext,
        request: &mut ChatRequest,
    ) -> Result<Option<Message>, HookError> {
        let s = &self.shared;
        let query = ListQuery::under(s.root.clone()).page(0, s.max_facts);
        let kept = s.memory.list(&s.at, &query).await.map_err(|e| {
            HookError::failed(format!(
                "the memory extractor '{}' could not read the kept facts: {e}",
                cx.agent_name()
            ))
        })?;
        let mut block = String::from("Facts kept now (key: fact):");
        let mut any = false;
        for item in kept.iter().filter(|i| i.namespace == s.root) {
            let fact = item
                .text
                .clone()
                .unwrap_or_else(|| item.value.to_string())
                .replace('\n', " ");
            block.push_str(&format!("\n- {}: {fact}", item.key));
            any = true;
        }
        if !any {
            block.push_str("\n(none yet)");
        }
        match request.messages.first() {
            Some(first) if first.role == Role::System => {
                let mut system = (**first).clone();
                system.content = format!("{}\n\n{block}", system.content);
                request.messages[0] = Arc::new(system);
            }
            _ => request.messages.insert(0, Arc::new(Message::system(block))),
        }
        Ok(None)
    }
}

/// What to do to one fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Op {
    /// Keep a new fact.
    Add,
    /// Replace a kept fact.
    Update,
    /// Delete a kept fact.
    Remove,
}

/// One change.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Change {
    /// `add`, `update` or `remove`.
    op: Op,
    /// The fact's key: letters, digits, '.', '_' or '-'.
    key: String,
    /// The fact, in one sentence (for `add` and `update`).
    #[serde(default)]
    fact: Option<String>,
}

/// The arguments of `update_memory`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UpdateArgs {
    /// The changes, applied in order.
    changes: Vec<Change>,
}

#[derive(Debug)]
struct UpdateMemory {
    shared: Arc<Shared>,
}

impl UpdateMemory {
    fn refused(&self, e: MemoryError) -> ToolError {
        match e {
            MemoryError::Invalid { .. } | MemoryError::TooLarge { .. } => {
                ToolError::invalid_arguments(UPDATE_MEMORY_TOOL_NAME, e)
            }
            other => {
                tracing::warn!(tool = UPDATE_MEMORY_TOOL_NAME, error = %other, "memory update failed");
                ToolError::failed(
                    UPDATE_MEMORY_TOOL_NAME,
                    "the memory store is unavailable right now; nothing more was kept",
                )
            }
        }
    }
}

#[async_trait]
impl Tool for UpdateMemory {
    fn name(&self) -> &str {
        UPDATE_MEMORY_TOOL_NAME
    }

    fn description(&self) -> &str {
        "Applies changes to the facts kept about the user: add a new fact, update a kept fact \
         under its key, remove a fact no longer true."
    }

    fn parameters(&self) -> Value {
        schema_for::<UpdateArgs>()
    }

    /// Applying the same changes again leaves the facts as they are.
    fn idempotent(&self) -> bool {
        true
    }

    async fn call(&self, _cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
        let args: UpdateArgs = parse_arguments(UPDATE_MEMORY_TOOL_NAME, arguments)?;
        if args.changes.len() > MAX_CHANGES_PER_CALL {
            return Err(ToolError::invalid_arguments(
                UPDATE_MEMORY_TOOL_NAME,
                format!(
                    "{} changes in one call; at most {MAX_CHANGES_PER_CALL}",
                    args.changes.len()
                ),
            ));
        }
        // Every change is checked before any is applied.
        let mut checked = Vec::with_capacity(args.changes.len());
        for change in args.changes {
            let key = ItemKey::new(change.key).map_err(|e| self.refused(e))?;
            let fact = match (change.op, change.fact) {
                (Op::Remove, _) => None,
                (_, Some(fact)) if !fact.trim().is_empty() => Some(fact),
                _ => {
                    return Err(ToolError::invalid_arguments(
                        UPDATE_MEMORY_TOOL_NAME,
                        format!("the change of '{key}' has no fact; 'add' and 'update' need one"),
                    ))
                }
            };
            checked.push((key, fact));
        }
        let s = &self.shared;
        let (mut added, mut updated, mut removed, mut unchanged) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (key, fact) in checked {
            let kept = s
                .memory
                .get(&s.at, &s.root, &key)
                .await
                .map_err(|e| self.refused(e))?;
            match fact {
                None => {
                    if kept.is_none() {
                        unchanged.push(key.to_string());
                        continue;
                    }
                    s.memory
                        .delete(&s.at, &s.root, &key, None)
                        .await
                        .map_err(|e| self.refused(e))?;
                    removed.push(key.to_string());
                }
                Some(fact) => {
                    if kept.as_ref().and_then(|k| k.text.as_deref()) == Some(fact.as_str()) {
                        unchanged.push(key.to_string());
                        continue;
                    }
                    let mut put = PutItem::new(json!({ "fact": fact })).text(fact);
                    put.ttl = s.ttl;
                    s.memory
                        .put(&s.at, &s.root, &key, put)
                        .await
                        .map_err(|e| self.refused(e))?;
                    match kept {
                        Some(_) => updated.push(key.to_string()),
                        None => added.push(key.to_string()),
                    }
                }
            }
        }
        Ok(json!({
            "added": added,
            "updated": updated,
            "removed": removed,
            "unchanged": unchanged,
        })
        .to_string())
    }
}
