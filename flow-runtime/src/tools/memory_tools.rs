//! Memory an agent can be given as tools: `remember`, `recall` and `forget` over a
//! [`Memory`], in a [`Partition`] the application fixes when it makes them (the model never
//! names a tenant or a scope: the tools' arguments have no such field, and unknown fields are
//! refused). Namespaces the model names are relative to a root the application picks, and a
//! hostile one (`../`, separators, look-alike letters) is refused with an error the model
//! sees.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::llm::tool::{parse_arguments, schema_for, Tool, ToolContext, ToolError};
use crate::store::memory_items::{
    ItemKey, Memory, MemoryError, Namespace, Partition, PutItem, SearchQuery,
};

/// The name of the tool that keeps a fact.
pub const REMEMBER_TOOL_NAME: &str = "remember";
/// The name of the tool that searches what is kept.
pub const RECALL_TOOL_NAME: &str = "recall";
/// The name of the tool that deletes a fact.
pub const FORGET_TOOL_NAME: &str = "forget";

/// The most hits `recall` returns, whatever the model asks.
pub const MAX_RECALL_HITS: usize = 20;

/// The memory tools of one partition: make them where the application knows who the user is
/// (the tenant and scope come from it, never from the model), and give them to an agent.
///
/// ```
/// use agentweave_runtime::memory::{
///     Memory, MemoryTools, Namespace, Partition, Scope, Tenant, TransientMemoryStore,
/// };
/// let memory = Memory::new(TransientMemoryStore::new());
/// let alice = Partition::new(Tenant::new("acme").unwrap(), Scope::user("alice").unwrap());
/// let tools = MemoryTools::new(memory, alice, Namespace::parse("agent").unwrap());
/// let names: Vec<_> = tools.all().iter().map(|t| t.name().to_owned()).collect();
/// assert_eq!(names, ["remember", "recall", "forget"]);
/// ```
#[derive(Debug, Clone)]
pub struct MemoryTools {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    memory: Memory,
    at: Partition,
    root: Namespace,
    ttl: Option<Duration>,
    recall_limit: usize,
}

impl MemoryTools {
    /// The tools over `memory` in partition `at`; the namespaces the model names are under
    /// `root`.
    pub fn new(memory: Memory, at: Partition, root: Namespace) -> Self {
        MemoryTools {
            shared: Arc::new(Shared {
                memory,
                at,
                root,
                ttl: None,
                recall_limit: 5,
            }),
        }
    }

    /// Facts kept by `remember` live `ttl` after each write (default: until forgotten).
    pub fn ttl(self, ttl: Duration) -> Self {
        self.with(|s| s.ttl = Some(ttl))
    }

    /// How many hits `recall` returns when the model does not say (default 5; at most
    /// [`MAX_RECALL_HITS`]).
    pub fn recall_limit(self, limit: usize) -> Self {
        self.with(|s| s.recall_limit = limit.clamp(1, MAX_RECALL_HITS))
    }

    fn with(self, f: impl FnOnce(&mut Shared)) -> Self {
        let mut shared = Arc::try_unwrap(self.shared).unwrap_or_else(|arc| Shared {
            memory: arc.memory.clone(),
            at: arc.at.clone(),
            root: arc.root.clone(),
            ttl: arc.ttl,
            recall_limit: arc.recall_limit,
        });
        f(&mut shared);
        MemoryTools {
            shared: Arc::new(shared),
        }
    }

    /// The `remember` tool.
    pub fn remember(&self) -> Arc<dyn Tool> {
        Arc::new(MemoryTool {
            kind: Kind::Remember,
            shared: self.shared.clone(),
        })
    }

    /// The `recall` tool.
    pub fn recall(&self) -> Arc<dyn Tool> {
        Arc::new(MemoryTool {
            kind: Kind::Recall,
            shared: self.shared.clone(),
        })
    }

    /// The `forget` tool.
    pub fn forget(&self) -> Arc<dyn Tool> {
        Arc::new(MemoryTool {
            kind: Kind::Forget,
            shared: self.shared.clone(),
        })
    }

    /// The three tools: `remember`, `recall`, `forget`.
    pub fn all(&self) -> Vec<Arc<dyn Tool>> {
        vec![self.remember(), self.recall(), self.forget()]
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Remember,
    Recall,
    Forget,
}

#[derive(Debug)]
struct MemoryTool {
    kind: Kind,
    shared: Arc<Shared>,
}

/// The arguments of `remember`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RememberArgs {
    /// A short name for the fact, to update or forget it later: letters, digits, '.', '_'
    /// or '-' (for example "printer-model"). Remembering under a key already used replaces
    /// the fact.
    key: String,
    /// The fact, in one or two sentences.
    fact: String,
    /// Where to file it, for example "devices" or "preferences/contact" (optional).
    #[serde(default)]
    namespace: Option<String>,
}

/// The arguments of `recall`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RecallArgs {
    /// What to look for, in words.
    query: String,
    /// Only facts filed there or below (optional).
    #[serde(default)]
    namespace: Option<String>,
    /// How many facts at most (optional).
    #[serde(default)]
    limit: Option<usize>,
}

/// The arguments of `forget`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ForgetArgs {
    /// The key the fact was remembered under.
    key: String,
    /// The namespace it was filed in (optional).
    #[serde(default)]
    namespace: Option<String>,
}

impl MemoryTool {
    fn name_str(&self) -> &'static str {
        match self.kind {
            Kind::Remember => REMEMBER_TOOL_NAME,
            Kind::Recall => RECALL_TOOL_NAME,
            Kind::Forget => FORGET_TOOL_NAME,
        }
    }

    /// The namespace the model named, under the root (the root itself when none).
    fn namespace(&self, relative: Option<&str>) -> Result<Namespace, ToolError> {
        let root = &self.shared.root;
        match relative {
            None => Ok(root.clone()),
            Some(path) => {
                let relative = Namespace::parse(path).map_err(|e| self.refused(e))?;
                Namespace::new(root.segments().chain(relative.segments()))
                    .map_err(|e| self.refused(e))
            }
        }
    }

    /// A namespace as the model sees it: relative to the root.
    fn shown(&self, namespace: &Namespace) -> String {
        let root = self.shared.root.as_str();
        namespace
            .as_str()
            .strip_prefix(root)
            .map(|rest| rest.trim_start_matches('/'))
            .unwrap_or("")
            .to_owned()
    }

    /// A memory error as the model sees it: what it can fix is said, what is internal is
    /// logged and not shown.
    fn refused(&self, e: MemoryError) -> ToolError {
        match e {
            MemoryError::Invalid { .. } | MemoryError::TooLarge { .. } => {
                ToolError::invalid_arguments(self.name_str(), e)
            }
            MemoryError::VersionConflict { .. } => ToolError::failed(
                self.name_str(),
                "the fact was changed at the same moment by another call; try again",
            ),
            other => {
                tracing::warn!(tool = self.name_str(), error = %other, "memory tool failed");
                ToolError::failed(
                    self.name_str(),
                    "the memory store is unavailable right now; go on without it",
                )
            }
        }
    }
}

#[async_trait]
impl Tool for MemoryTool {
    fn name(&self) -> &str {
        self.name_str()
    }

    fn description(&self) -> &str {
        match self.kind {
            Kind::Remember => {
                "Keeps a fact about the user or the task for later conversations (a device, a \
                 preference, a decision). Use a short key; remembering under the same key \
                 replaces the fact."
            }
            Kind::Recall => {
                "Searches the facts kept in earlier conversations and returns the closest ones, \
                 with their keys."
            }
            Kind::Forget => "Deletes a fact kept earlier, by its key.",
        }
    }

    fn parameters(&self) -> Value {
        match self.kind {
            Kind::Remember => schema_for::<RememberArgs>(),
            Kind::Recall => schema_for::<RecallArgs>(),
            Kind::Forget => schema_for::<ForgetArgs>(),
        }
    }

    async fn call(&self, _cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
        let name = self.name_str();
        let s = &self.shared;
        match self.kind {
            Kind::Remember => {
                let args: RememberArgs = parse_arguments(name, arguments)?;
                let namespace = self.namespace(args.namespace.as_deref())?;
                let key = ItemKey::new(args.key).map_err(|e| self.refused(e))?;
                let mut put = PutItem::new(json!({ "fact": args.fact })).text(args.fact);
                put.ttl = s.ttl;
                let version = s
                    .memory
                    .put(&s.at, &namespace, &key, put)
                    .await
                    .map_err(|e| self.refused(e))?;
                Ok(if version == 1 {
                    format!("remembered '{key}'")
                } else {
                    format!("remembered '{key}' (it replaces what was kept under that key)")
                })
            }
            Kind::Recall => {
                let args: RecallArgs = parse_arguments(name, arguments)?;
                let namespace = self.namespace(args.namespace.as_deref())?;
                let limit = args
                    .limit
                    .unwrap_or(s.recall_limit)
                    .clamp(1, MAX_RECALL_HITS);
                let query = SearchQuery::new(args.query).under(namespace).limit(limit);
                let hits = s
                    .memory
                    .search(&s.at, query)
                    .await
                    .map_err(|e| self.refused(e))?;
                let facts: Vec<Value> = hits
                    .iter()
                    .map(|h| {
                        let fact = h
                            .item
                            .value
                            .get("fact")
                            .cloned()
                            .unwrap_or_else(|| h.item.value.clone());
                        json!({
                            "key": h.item.key.as_str(),
                            "namespace": self.shown(&h.item.namespace),
                            "fact": fact,
                        })
                    })
                    .collect();
                Ok(json!({ "facts": facts }).to_string())
            }
            Kind::Forget => {
                let args: ForgetArgs = parse_arguments(name, arguments)?;
                let namespace = self.namespace(args.namespace.as_deref())?;
                let key = ItemKey::new(args.key).map_err(|e| self.refused(e))?;
                let deleted = s
                    .memory
                    .delete(&s.at, &namespace, &key, None)
                    .await
                    .map_err(|e| self.refused(e))?;
                Ok(if deleted {
                    format!("forgot '{key}'")
                } else {
                    format!("nothing was kept under '{key}'")
                })
            }
        }
    }
}
