//! The flows a worker runs, by name, and what its activities do with them: call an agent's
//! model ([`call_model`]) or one of its tools ([`call_tool`]).
//!
//! A worker process holds one [`Flows`]: the workflow builds the flow's tree from it to run the
//! orchestration, and the activities find in the same tree the agent that called, and its real
//! model or tool. Every worker of a task queue must hold the same flows under the same names
//! (a workflow moves between workers when one dies).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use agentweave_core::model::{ChatRequest, ModelError};
use agentweave_core::resume::ResumeInfo;
use agentweave_core::{ChatModelAgent, FlowAgent, RunContext, Session, ToolContext, ToolError};

use crate::blobs::{BlobError, BlobStore, LargePayloads};
use crate::effects::{ModelCall, ToolCallInput, ToolOutcome};

/// Builds a flow's tree (the same tree on every call).
pub type FlowFactory = dyn Fn() -> FlowAgent + Send + Sync;

/// The flows of a worker, by name.
#[derive(Clone, Default)]
pub struct Flows {
    flows: Arc<RwLock<HashMap<String, Arc<FlowAgent>>>>,
    payloads: Arc<RwLock<Option<LargePayloads>>>,
    spending: Arc<RwLock<HashMap<String, agentweave_runtime::SpendingBudgets>>>,
}

impl std::fmt::Debug for Flows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let flows = self.flows.read().unwrap_or_else(|e| e.into_inner());
        let mut names: Vec<_> = flows.keys().collect();
        names.sort();
        f.debug_struct("Flows").field("names", &names).finish()
    }
}

/// A flow or an agent a call names is not there.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LookupError {
    /// No flow of that name on this worker.
    #[error(
        "no flow named '{0}' on this worker: register it (Flows::insert) on every worker of the \
         task queue"
    )]
    NoFlow(String),
    /// The flow has no LLM agent of that name.
    #[error("flow '{flow}' has no LLM agent named '{agent}' (a ChatModelAgent): the workers run another version of the flow than the workflow's")]
    NoAgent {
        /// The flow.
        flow: String,
        /// The agent.
        agent: String,
    },
    /// A call's conversation came by parts (see [`parts`](crate::parts)) to a worker with no
    /// blob store.
    #[error(
        "flow '{flow}': the call's conversation was sent by parts in the blob store, but this \
         worker has none: call Flows::store_large_payloads with the same store on every worker \
         of the task queue"
    )]
    NoStore {
        /// The flow.
        flow: String,
    },
    /// A stored payload could not be stored or read.
    #[error("flow '{flow}': {source}")]
    Blob {
        /// The flow.
        flow: String,
        /// What the store said.
        #[source]
        source: Arc<BlobError>,
    },
    /// The agent has no tool of that name.
    #[error("agent '{agent}' of flow '{flow}' has no tool named '{tool}'")]
    NoTool {
        /// The flow.
        flow: String,
        /// The agent.
        agent: String,
        /// The tool.
        tool: String,
    },
}

impl Flows {
    /// No flows.
    pub fn new() -> Self {
        Flows::default()
    }

    /// Adds (or replaces) flow `name`.
    pub fn insert(&self, name: impl Into<String>, flow: FlowAgent) -> &Self {
        self.flows
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.into(), Arc::new(flow));
        self
    }

    /// Stores every tool result and model reply over `threshold` bytes in `store` and puts a
    /// reference to it in the workflow's history instead (see [`blobs`](crate::blobs)); the
    /// model activity reads it back. Off until called: then a result over Temporal's 2 MB
    /// payload limit fails its activity.
    pub fn store_large_payloads(&self, store: Arc<dyn BlobStore>, threshold: usize) -> &Self {
        *self.payloads.write().unwrap_or_else(|e| e.into_inner()) =
            Some(LargePayloads { store, threshold });
        self
    }

    /// The large-payload policy, if one is set.
    pub fn large_payloads(&self) -> Option<LargePayloads> {
        self.payloads
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Reserves every model call of flow `flow` in `budgets` (per thread, per tenant per
    /// period) before the model activity calls the model, and settles it after: a call that
    /// would cross a limit is not made, and the agent's run ends with
    /// `AgentError::BudgetExceeded`, as in process (see [`spending`](crate::spending)). A
    /// retried activity charges once. The thread is the workflow's id; the usage report names
    /// the flow `flow` unless the budgets name another. Give every worker of a task queue the
    /// same budgets on the same store (a server's run queue's: SQLite, PostgreSQL). Off until
    /// called.
    pub fn spending(
        &self,
        flow: impl Into<String>,
        budgets: agentweave_runtime::SpendingBudgets,
    ) -> &Self {
        self.spending
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(flow.into(), budgets);
        self
    }

    /// The spending budgets the model activity reserves flow `flow`'s calls in, if set
    /// ([`spending`](Self::spending)).
    pub fn spending_budgets(&self, flow: &str) -> Option<agentweave_runtime::SpendingBudgets> {
        self.spending
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(flow)
            .cloned()
    }

    /// Flow `name`.
    pub fn get(&self, name: &str) -> Result<Arc<FlowAgent>, LookupError> {
        self.flows
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
            .ok_or_else(|| LookupError::NoFlow(name.to_owned()))
    }

    fn llm_agent(
        &self,
        flow: &str,
        agent: &str,
    ) -> Result<(Arc<FlowAgent>, FlowAgent), LookupError> {
        let tree = self.get(flow)?;
        let node = tree.find(agent).ok_or_else(|| LookupError::NoAgent {
            flow: flow.to_owned(),
            agent: agent.to_owned(),
        })?;
        if node.agent().as_chat_model_agent().is_none() {
            return Err(LookupError::NoAgent {
                flow: flow.to_owned(),
                agent: agent.to_owned(),
            });
        }
        Ok((tree, node))
    }
}

fn chat_agent(node: &FlowAgent) -> &ChatModelAgent {
    node.agent()
        .as_chat_model_agent()
        .expect("checked by Flows::llm_agent")
}

/// What a model activity does: the reply of the calling agent's model to the call's request.
pub async fn call_model(
    flows: &Flows,
    call: &ModelCall,
) -> Result<Result<agentweave_core::Message, ModelError>, LookupError> {
    let (_tree, node) = flows.llm_agent(&call.flow, &call.agent)?;
    let model = Arc::clone(chat_agent(&node).model());
    let request = loaded_request(flows, call).await?;
    let reply = model.generate(&request).await;
    stored_reply(flows, call, reply).await
}

/// A model's `reply` as it enters the workflow's history: its text stored by reference when it
/// is over the large-payload threshold (the next model call reads it back; see
/// [`blobs`](crate::blobs)).
async fn stored_reply(
    flows: &Flows,
    call: &ModelCall,
    reply: Result<agentweave_core::Message, ModelError>,
) -> Result<Result<agentweave_core::Message, ModelError>, LookupError> {
    let (Some(payloads), Ok(mut message)) = (flows.large_payloads(), reply.as_ref().cloned())
    else {
        return Ok(reply);
    };
    message.content = payloads
        .store(std::mem::take(&mut message.content))
        .await
        .map_err(|e| LookupError::Blob {
            flow: call.flow.clone(),
            source: Arc::new(e),
        })?;
    Ok(Ok(message))
}

/// The call's request with its conversation's stored parts read back (see
/// [`parts`](crate::parts)) and every stored payload's reference replaced by its text (see
/// [`blobs`](crate::blobs)).
pub(crate) async fn loaded_request(
    flows: &Flows,
    call: &ModelCall,
) -> Result<ChatRequest, LookupError> {
    let mut request = call.request();
    if !call.earlier.is_empty() {
        let payloads = flows.large_payloads().ok_or_else(|| LookupError::NoStore {
            flow: call.flow.clone(),
        })?;
        let earlier = crate::parts::load(payloads.store.as_ref(), &call.earlier)
            .await
            .map_err(|e| LookupError::Blob {
                flow: call.flow.clone(),
                source: Arc::new(e),
            })?;
        let mut messages: Vec<_> = earlier.into_iter().map(Arc::new).collect();
        messages.append(&mut request.messages);
        request.messages = messages;
    }
    if let Some(payloads) = flows.large_payloads() {
        for message in request.messages.iter_mut() {
            let loaded = payloads
                .load(&message.content)
                .await
                .map_err(|e| LookupError::Blob {
                    flow: call.flow.clone(),
                    source: Arc::new(e),
                })?;
            if let Some(text) = loaded {
                Arc::make_mut(message).content = text;
            }
        }
    }
    Ok(request)
}

/// What a model activity does for a call with a sink ([`ModelCall::live`]): streams the calling
/// agent's model's reply, handing each piece to `piece` as it comes (with its number), and
/// gives the reply whole (the pieces concatenated, as the engine concatenates a stream).
pub async fn stream_model<F, Fut>(
    flows: &Flows,
    call: &ModelCall,
    mut piece: F,
) -> Result<Result<agentweave_core::Message, ModelError>, LookupError>
where
    F: FnMut(u64, agentweave_core::Message) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    use futures::StreamExt;
    let (_tree, node) = flows.llm_agent(&call.flow, &call.agent)?;
    let model = Arc::clone(chat_agent(&node).model());
    let request = loaded_request(flows, call).await?;
    let mut stream = match model.stream(&request).await {
        Ok(stream) => stream,
        Err(e) => return Ok(Err(e)),
    };
    let mut pieces = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(chunk) => {
                piece(pieces.len() as u64, chunk.clone()).await;
                pieces.push(chunk);
            }
            Err(e) => return Ok(Err(e)),
        }
    }
    let reply = Ok(agentweave_core::Message::concat(pieces.iter()));
    stored_reply(flows, call, reply).await
}

/// What the store activity does: writes a part of a long conversation to the workers' blob
/// store (see [`parts`](crate::parts)); gives its key.
pub async fn store_part(
    flows: &Flows,
    part: &crate::parts::StorePart,
) -> Result<String, LookupError> {
    let payloads = flows.large_payloads().ok_or_else(|| LookupError::NoStore {
        flow: part.flow.clone(),
    })?;
    crate::parts::store(payloads.store.as_ref(), part)
        .await
        .map_err(|e| LookupError::Blob {
            flow: part.flow.clone(),
            source: Arc::new(e),
        })
}

/// What the load activity does: reads a stored part back, as its JSON (a thread's earlier
/// turns carried by continue-as-new; see [`parts`](crate::parts)).
pub async fn load_part(
    flows: &Flows,
    part: &crate::parts::LoadPart,
) -> Result<String, LookupError> {
    let payloads = flows.large_payloads().ok_or_else(|| LookupError::NoStore {
        flow: part.flow.clone(),
    })?;
    let bytes = payloads
        .store
        .get(&part.key)
        .await
        .map_err(|e| LookupError::Blob {
            flow: part.flow.clone(),
            source: Arc::new(e),
        })?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// What a tool activity does: runs the calling agent's tool with the call's arguments, under the
/// same idempotency key as in the workflow; a tool's error is the text the model gets, a tool's
/// own interrupt (an approval) is handed back to the workflow, and a call resumed after one
/// gets its answer.
pub async fn call_tool(flows: &Flows, input: &ToolCallInput) -> Result<ToolOutcome, LookupError> {
    let (_tree, node) = flows.llm_agent(&input.flow, &input.agent)?;
    let tool = chat_agent(&node)
        .tool_named(&input.call.name)
        .cloned()
        .ok_or_else(|| LookupError::NoTool {
            flow: input.flow.clone(),
            agent: input.agent.clone(),
            tool: input.call.name.clone(),
        })?;
    let run = RunContext::new_run(Session::new(), [], false, input.agent.as_str())
        .with_idempotency_scope(input.scope.as_str())
        .at(input.agent.as_str(), input.run_path.clone());
    let mut cx =
        ToolContext::new(run, input.call.id.as_str()).with_tool_name(input.call.name.as_str());
    if let Some(resume) = &input.resume {
        let targets = HashMap::from([(resume.interrupt.id.clone(), resume.answer.clone())]);
        let below = ResumeInfo::new([resume.interrupt.clone()], &targets)
            .tool_calls()
            .into_iter()
            .find(|(frame, _)| frame.call_id == input.call.id)
            .map(|(_, info)| info)
            .unwrap_or_default();
        cx = cx.with_resume(below, resume.interrupt.state.clone());
    }
    Ok(match tool.call(&cx, &input.call.arguments).await {
        Ok(text) => match flows.large_payloads() {
            Some(payloads) => {
                ToolOutcome::Done(payloads.store(text).await.map_err(|e| LookupError::Blob {
                    flow: input.flow.clone(),
                    source: Arc::new(e),
                })?)
            }
            None => ToolOutcome::Done(text),
        },
        Err(ToolError::Interrupted { interrupt, .. }) => {
            let own = interrupt
                .interrupts
                .iter()
                .find(|i| i.address.is_empty())
                .or(interrupt.interrupts.first());
            ToolOutcome::Interrupted {
                info: own.map(|i| i.info.clone()).unwrap_or_default(),
                state: interrupt.state.clone(),
            }
        }
        Err(other) => ToolOutcome::Done(other.to_model_text()),
    })
}
