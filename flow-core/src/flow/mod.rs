//! Running a tree: the orchestration of one run through a [`FlowAgent`]'s nodes.
//!
//! - this file: [`FlowAgent`] as an [`Agent`] (run and resume), and each node's input, built
//!   incrementally from the run's record through the session's input caches;
//! - `run`: the run loop, a stream written by hand: one node at a time, its middleware, its
//!   events stamped and recorded, transfers followed, interrupts addressed.
//!
//! The tree itself (nodes, options, neighbours, shape) is data, in [`crate::agent`].

use std::sync::Arc;

mod run;

use crate::agent::{Agent, AgentInput, Delegation, EventStream, FlowAgent, RunContext};
use crate::event::{Action, AgentError};
use crate::history::{CompactionRecord, ContextPolicy, HistoryEntry};
use crate::resume::ResumeInfo;
use crate::session::{InputCache, InputKey};

impl Agent for FlowAgent {
    fn name(&self) -> &str {
        &self.this().name
    }

    fn description(&self) -> &str {
        &self.this().description
    }

    /// Runs this node at `cx.run_path()`, following transfers through the tree. Its agents'
    /// inputs are built from the run's root input and session; `input` is not consulted.
    fn run(self: Arc<Self>, cx: RunContext, _input: AgentInput) -> EventStream {
        run::run_flow(FlowAgent::clone(&self), cx, None)
    }

    /// Resumes the node the interrupt points name (anywhere in this tree), at the run path it
    /// had, then carries on as [`run`](Agent::run) does: agents that finished before the
    /// interrupt are not run again.
    fn resume(
        self: Arc<Self>,
        cx: RunContext,
        _input: AgentInput,
        info: ResumeInfo,
    ) -> EventStream {
        run::run_flow(FlowAgent::clone(&self), cx, Some(info))
    }

    fn as_flow(&self) -> Option<&FlowAgent> {
        Some(self)
    }
}

/// The input of `node`: in a thread, the earlier turns the node's policy looks at; then the
/// run's root input, then one entry per recorded event with a message, shaped by the node's
/// options. Built incrementally from what the node's input was last time in this session (see
/// [`InputCache`]), except in a parallel lane, whose view of the session hides its siblings.
async fn build_input(run: &RunContext, flow: &FlowAgent) -> Result<AgentInput, AgentError> {
    let node = flow.this();
    let skip = node.options.skip_transfer_messages;
    let incremental = run.sees_everything();
    let streaming = run.streaming();
    let scope = Scope::of(flow);
    if let Some(scope) = &scope {
        // A parent of delegated sub-agents sees only their results.
        let key = (Some(Arc::clone(&node.name)), skip);
        let window = node.options.context.thread_window();
        let cache = filled_cache(run, &key, skip, window).await?;
        let messages = cache.input_scoped(
            &node.name,
            &node.options.context,
            &scope.hidden,
            &scope.returning,
            &scope.single_turn,
        )?;
        if incremental {
            run.session().put_input_cache(key, cache);
        }
        return Ok(AgentInput {
            messages,
            streaming,
        });
    }
    // Under the default policy, every node that has not spoken yet gets the same input (all
    // messages in their context form): one cache for all of them, so a chain of agents each
    // running once costs O(1) per hop, not O(chain).
    if incremental && matches!(node.options.context, ContextPolicy::Rewrite) {
        let key = (None, skip);
        let mut shared = filled_cache(run, &key, skip, None).await?;
        let newcomer = !shared.has_spoken(&node.name);
        let messages = newcomer.then(|| shared.input_for_newcomer());
        run.session().put_input_cache(key, shared);
        if let Some(messages) = messages {
            return Ok(AgentInput {
                messages,
                streaming,
            });
        }
    }
    let key = (Some(Arc::clone(&node.name)), skip);
    let window = node.options.context.thread_window();
    let mut cache = filled_cache(run, &key, skip, window).await?;
    let messages = cache.input(&node.name, &node.options.context)?;
    if incremental {
        run.session().put_input_cache(key, cache);
    }
    Ok(AgentInput {
        messages,
        streaming,
    })
}

/// What a parent of delegated sub-agents may not see: their messages and those of every agent
/// below them, their results aside (see [`Delegation`]); a single-turn node's results are the
/// answers given in its subtree.
struct Scope {
    hidden: Vec<Arc<str>>,
    returning: Vec<Arc<str>>,
    single_turn: Vec<Arc<str>>,
}

impl Scope {
    /// The scope of `node`'s input, if it has delegated sub-agents.
    fn of(flow: &FlowAgent) -> Option<Scope> {
        let node = flow.this();
        if !node.gets_results {
            // No sub-agent gives control back to it (decided when the tree was built).
            return None;
        }
        let tree = &flow.tree.nodes;
        let delegated = node
            .children
            .iter()
            .filter(|&&c| tree[c].options.delegation.returns());
        let mut scope = Scope {
            hidden: Vec::new(),
            returning: Vec::new(),
            single_turn: Vec::new(),
        };
        let mut below: Vec<usize> = Vec::new();
        for &c in delegated {
            scope.returning.push(Arc::clone(&tree[c].name));
            if tree[c].options.delegation == Delegation::SingleTurn {
                // A single-turn node answers through its subtree too (a workflow's lanes).
                let mut under = vec![c];
                while let Some(n) = under.pop() {
                    scope.single_turn.push(Arc::clone(&tree[n].name));
                    if n != c {
                        scope.returning.push(Arc::clone(&tree[n].name));
                    }
                    under.extend(tree[n].children.iter().copied());
                }
            }
            below.push(c);
        }
        if below.is_empty() {
            return None;
        }
        while let Some(n) = below.pop() {
            scope.hidden.push(Arc::clone(&tree[n].name));
            below.extend(tree[n].children.iter().copied());
        }
        Some(scope)
    }
}

/// The input cache under `key`, brought up to date with the session: taken from the session
/// (outside a parallel lane) or started afresh from the thread's earlier turns (as far back as
/// `window`) and the run's root input; then one entry per recorded event with a message.
async fn filled_cache(
    run: &RunContext,
    key: &InputKey,
    skip: bool,
    window: Option<u64>,
) -> Result<Box<InputCache>, AgentError> {
    let incremental = run.sees_everything();
    let turn = run.turn();
    let cached = incremental
        .then(|| run.session().take_input_cache(key))
        .flatten()
        .filter(|c| c.starts_with(run.root_input()));
    let mut cache = match cached {
        Some(cache) => cache,
        None => {
            let root = run.root_input();
            // Boxed: it moves in and out of the session on every hop.
            let mut cache = Box::new(InputCache::new(root));
            if let Some(thread) = run.thread() {
                // Boxed, as below: this future stays sized for its common path.
                for e in Box::pin(thread.entries(window)).await? {
                    match e.compaction {
                        Some(c) => {
                            cache.push_compaction(&e.entry.agent_name, c.kept, e.entry.message)
                        }
                        None => cache.push(e.entry, None, e.is_transfer, e.is_result, skip),
                    }
                }
            }
            let user = crate::event::empty_name();
            for m in root {
                let entry = HistoryEntry {
                    is_user_input: true,
                    agent_name: Arc::clone(&user),
                    message: Arc::clone(m),
                    turn,
                };
                cache.push(entry, None, false, false, skip);
            }
            cache
        }
    };
    // A run whose budgets read the prompt's size keeps its estimate as the input grows.
    if run.run_budgets().is_some_and(|b| b.caps.reads_prompt) {
        cache.count_tokens();
    }
    // Outside a parallel lane, the session's events from the first one not seen yet, read
    // one at a time (no snapshot); in a lane, the events it may see.
    let visible = (!incremental).then(|| run.visible_events());
    if let Some(visible) = &visible {
        cache.reserve(visible.len());
    }
    let mut next = 0;
    loop {
        let event = match &visible {
            Some(visible) => visible.get(next).cloned(),
            None => run.session().event_at(cache.seen),
        };
        let Some(event) = event else { break };
        next += 1;
        cache.seen += 1;
        let is_transfer = matches!(event.action(), Some(Action::TransferToAgent(_)));
        let is_result = matches!(event.action(), Some(Action::Finish(_)));
        let message = match event.message_without_stream() {
            Some(message) => message,
            None => Box::pin(event.message()).await?,
        };
        let message = match (message, event.action()) {
            (Some(message), _) => message,
            // A code agent's result carries no message: its parent reads it as one.
            (None, Some(Action::Finish(result))) => {
                Arc::new(crate::context_form::result_message(result))
            }
            (None, _) => continue,
        };
        if let Some(c) = event.action().and_then(CompactionRecord::of) {
            cache.push_compaction(event.agent_name_arc(), c.kept, message);
            continue;
        }
        let entry = HistoryEntry {
            is_user_input: false,
            agent_name: Arc::clone(event.agent_name_arc()),
            message,
            turn,
        };
        cache.push(entry, Some(event), is_transfer, is_result, skip);
    }
    Ok(cache)
}
