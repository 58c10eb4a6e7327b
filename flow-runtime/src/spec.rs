//! Static facts of agents and what agent bodies written with `#[agent]` use.
//!
//! The `agentflow` facade's `#[agent]` and `flow!` macros build on the items here:
//!
//! - [`AgentSpec`]: an agent type's name, description, declared transfer targets and whether it
//!   is barred from its parent, as associated consts, so a tree can be checked by the compiler.
//! - [`AgentContext`]: what an `#[agent]` body emits through. It has no way to transfer by name:
//!   a body transfers by returning a variant of its generated transfer enum.
//! - [`IntoOutcome`]: what an `#[agent]` body may return: `()`, [`Exit`], its own transfer enum,
//!   or an [`Option`] or [`AgentResult`] of one of these.
//! - [`TransferTarget`]: implemented by the generated transfer enums.
//!
//! The [`check`] module holds the `const fn`s the generated code evaluates at compile time;
//! [`expected`] the expected trajectories written against a flow's generated types
//! (`Flow::trajectory()`).

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::agent::Context;
use crate::agent::{Agent, RunContext};
use crate::event::{Action, AgentError, AgentEvent};
use crate::message::Message;
use crate::resume::ResumeInfo;
use crate::stream::MessageStream;

/// What an agent body returns: `Ok(outcome)` or an error that ends the agent's run with an
/// error event.
pub type AgentResult<T = ()> = Result<T, AgentError>;

/// The static facts of an agent type, known at compile time.
///
/// It asks nothing of the type's behaviour (that is [`Agent`]'s), so a type whose `Agent`
/// impl is missing is reported once, where it is declared, not at every fact a flow reads.
/// `#[agent]` implements it; `flow!` reads it in `const` items to check a tree. Implement it by
/// hand only for an agent type whose facts are fixed; an agent whose name is chosen at run time
/// fills a `dyn` node of a flow instead.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an agent type, so it cannot be a node of a `flow!`",
    label = "not an agent",
    note = "a node of `flow!` names a type made with `#[agent]` (on an async fn or a struct), \
            or one that implements `AgentSpec`",
    note = "for an agent built at run time (a model agent holding a client), write the node as \
            `dyn NAME` and give the agent to the flow's builder"
)]
pub trait AgentSpec {
    /// The agent's name: unique within a tree, used for transfers and run paths.
    const NAME: &'static str;
    /// What the agent does (its doc comment, for `#[agent]`).
    const DESCRIPTION: &'static str;
    /// The agents it may transfer to, by name, as declared with `#[agent(transfers = [...])]`.
    const TRANSFERS: &'static [&'static str];
    /// Whether the agent never transfers to its parent (`#[agent(no_parent)]`): every node it
    /// fills is barred from its parent.
    const NO_PARENT: bool;
}

/// An agent a flow can build on its own: a node of `flow!` that names the type gets
/// [`instance`](FlowBuilt::instance).
///
/// `#[agent]` implements it for agent fns and unit structs. An agent that holds state (a
/// client, a configuration) fills a `runtime` node instead, and the flow's builder is given its
/// value; implement this trait only if the agent has one obvious value.
#[diagnostic::on_unimplemented(
    message = "a flow cannot build `{Self}` on its own",
    label = "the flow would have to make a `{Self}` itself",
    note = "if `{Self}` is an #[agent] struct that holds state, mark the node `runtime`, as in \
            `{Self}(runtime)`, and give the value to the flow's builder; or implement \
            `FlowBuilt` for `{Self}` if it has one obvious value",
    note = "if `{Self}` is not an agent type at all, put #[agent] on it (see the error about \
            `AgentSpec`)"
)]
pub trait FlowBuilt: AgentSpec + Agent + Sized {
    /// The agent's value.
    fn instance() -> Self;
}

/// A legal transfer target of one agent: implemented by the enum `#[agent(transfers = [...])]`
/// generates (`TriageTransfer::Refund`).
pub trait TransferTarget: Copy + fmt::Display + Send + Sync + 'static {
    /// Every target, in declaration order.
    const ALL: &'static [Self];

    /// The name of the agent this target transfers to.
    fn agent_name(self) -> &'static str;
}

/// The context an `#[agent]` body emits through; it derefs to the [`RunContext`] (session, run
/// path, root input).
///
/// Unlike [`Context`] it offers no transfer by name: an `#[agent]` transfers by returning a
/// variant of its transfer enum, so every transfer it makes is one it declared. An event emitted
/// here that carries a [`Action::TransferToAgent`] of this agent's own is replaced by an error
/// event saying so.
///
/// An `#[agent]` stops for outside input with [`interrupt`](AgentContext::interrupt). When the
/// run is resumed, the agent's body runs again with
/// [`is_resuming`](AgentContext::is_resuming) true, the caller's answer in
/// [`resume_data`](AgentContext::resume_data) and its state in
/// [`saved_state`](AgentContext::saved_state); its input holds what it said before the
/// interrupt, so a body that branches on `is_resuming` first does not say it twice.
#[derive(Clone)]
pub struct AgentContext {
    cx: Context,
    resume: Option<Arc<ResumeInfo>>,
    /// The targets the running agent declared: the only names [`transfer`] sends it to.
    declared: &'static [&'static str],
}

impl AgentContext {
    /// Wraps the emitting context of a run. The agent it stands for declares no transfers.
    pub fn new(cx: Context) -> Self {
        AgentContext {
            cx,
            resume: None,
            declared: &[],
        }
    }

    /// Wraps the emitting context of a run of agent `A` that resumes with `info` (an empty
    /// `info`: a plain run); `A`'s declared transfers are the only targets [`transfer`] accepts.
    /// Used by the code `#[agent]` generates.
    #[doc(hidden)]
    pub fn __start<A: AgentSpec + ?Sized>(cx: Context, info: ResumeInfo) -> Self {
        AgentContext {
            cx,
            resume: (!info.is_empty()).then(|| Arc::new(info)),
            declared: A::TRANSFERS,
        }
    }

    /// Whether this run of the agent resumes one that stopped with an interrupt.
    pub fn is_resuming(&self) -> bool {
        self.resume.is_some()
    }

    /// When resuming: the interrupt being resumed (see [`ResumeInfo`]).
    pub fn resume_info(&self) -> Option<&ResumeInfo> {
        self.resume.as_deref()
    }

    /// When resuming: the data the caller addressed to this agent's interrupt, if any
    /// (resumed without targets, an agent gets none and may interrupt again).
    pub fn resume_data(&self) -> Option<&serde_json::Value> {
        self.resume_info().and_then(ResumeInfo::data)
    }

    /// When resuming: the state this agent saved with
    /// [`interrupt_with_state`](AgentContext::interrupt_with_state).
    pub fn saved_state(&self) -> Option<&serde_json::Value> {
        self.resume_info().and_then(ResumeInfo::state)
    }

    /// Stops the run for outside input once this agent's body returns: the runner saves a
    /// checkpoint, and the caller sees `info` (a question for a human, say). The interrupt's
    /// id is this agent's run path. The run stops once the body returns, whatever it returns
    /// (a transfer it returns is not followed).
    /// See the `#[agent]` macro's documentation for an example.
    pub fn interrupt(&self, info: serde_json::Value) {
        self.cx.interrupt(info);
    }

    /// Like [`interrupt`](AgentContext::interrupt), keeping `state` for the resumed run
    /// ([`saved_state`](AgentContext::saved_state)); it is stored in the checkpoint.
    pub fn interrupt_with_state(&self, info: serde_json::Value, state: serde_json::Value) {
        self.cx.interrupt_with_state(info, state);
    }

    /// Stops the innermost [`Loop`](crate::Loop) workflow around this agent once its run
    /// ends (see [`Context::break_loop`]).
    pub fn break_loop(&self) {
        self.cx.break_loop();
    }

    /// Emits an event. An own event (no run path yet, or this agent's) carrying a transfer
    /// action is turned into an error event: return a transfer variant instead.
    pub fn emit(&self, event: AgentEvent) {
        let own = event.run_path().is_empty() || event.run_path() == self.cx.run_path();
        if let (true, Some(Action::TransferToAgent(target))) = (own, &event.action) {
            let message = format!(
                "emitted a transfer to '{target}' as an event; an #[agent] transfers by \
                 returning a variant of its transfer enum"
            );
            self.cx.emit(AgentEvent::error(AgentError::failed(
                self.cx.agent_name(),
                message,
            )));
            return;
        }
        self.cx.emit(event);
    }

    /// Emits an assistant message with the given text.
    pub fn say(&self, text: impl Into<String>) {
        self.cx.say(text);
    }

    /// Emits a message.
    pub fn send(&self, message: Message) {
        self.cx.send(message);
    }

    /// Emits a streamed message.
    pub fn send_stream(&self, stream: MessageStream) {
        self.cx.send_stream(stream);
    }

    /// Emits application data (never part of any agent's history).
    pub fn custom(&self, data: serde_json::Value) {
        self.cx.emit(AgentEvent::custom(data));
    }

    /// The run context.
    pub fn run_context(&self) -> &RunContext {
        self.cx.run_context()
    }
}

/// Transfers the running agent to `target`, one of the targets it declared with
/// `#[agent(transfers = [...])]`: what returning a variant of a transfer enum does. The
/// `IntoOutcome` impl `#[agent]` generates for the enum calls it.
///
/// The context carries the running agent's declared targets (set when the generated code
/// starts the body), and a target outside them is refused with an error, so neither this
/// function nor a hand-written [`TransferTarget`] can make an agent transfer anywhere it did not
/// declare (`flow!` checks the declared ones against the tree at compile time).
///
/// # Errors
///
/// If `target` is not one of the running agent's declared transfers; nothing is emitted then.
pub fn transfer<T: TransferTarget>(cx: &AgentContext, target: T) -> AgentResult {
    let name = target.agent_name();
    if !cx.declared.contains(&name) {
        let declared = if cx.declared.is_empty() {
            "none".to_owned()
        } else {
            cx.declared.join(", ")
        };
        return Err(AgentError::failed(
            cx.cx.agent_name(),
            format!(
                "refused a transfer to '{name}': it is not among the agent's declared \
                 transfers ({declared}); declare it with #[agent(transfers = [...])]"
            ),
        ));
    }
    cx.cx.transfer(name);
    Ok(())
}

impl Deref for AgentContext {
    type Target = RunContext;
    fn deref(&self) -> &RunContext {
        self.cx.run_context()
    }
}

impl fmt::Debug for AgentContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentContext")
            .field("run", self.cx.run_context())
            .field("resume", &self.resume)
            .finish()
    }
}

/// Ends the run here: returned by an `#[agent]` body, it emits an event carrying
/// [`Action::Exit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Exit;

/// What an `#[agent]` body returns, turned into the event that steers the run.
///
/// `A` is the agent type: an agent's transfer enum is an outcome of that agent only, so an
/// agent cannot return another agent's targets.
///
/// | returned | effect |
/// | --- | --- |
/// | `()` | nothing more is emitted: the agent's last own action (if any) decides |
/// | [`Exit`] | an event carrying [`Action::Exit`] |
/// | `TriageTransfer::Refund` | the transfer messages, the second carrying the transfer |
/// | `None` / `Some(x)` | nothing / as `x` |
/// | `Err(e)` / `Ok(x)` | an error event / as `x` |
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an outcome agent `{A}` can return",
    label = "returned by the body of agent `{A}`",
    note = "an #[agent] body returns `()`, `Exit`, the agent's own transfer enum \
            (declared with `#[agent(transfers = [...])]`), or an `Option` or `AgentResult` of one"
)]
pub trait IntoOutcome<A: ?Sized> {
    /// Emits what this outcome means through `cx`; an `Err` becomes the agent's error event.
    fn into_outcome(self, cx: &AgentContext) -> AgentResult;
}

impl<A: ?Sized> IntoOutcome<A> for () {
    fn into_outcome(self, _cx: &AgentContext) -> AgentResult {
        Ok(())
    }
}

impl<A: ?Sized> IntoOutcome<A> for Exit {
    fn into_outcome(self, cx: &AgentContext) -> AgentResult {
        cx.cx.exit();
        Ok(())
    }
}

impl<A: ?Sized, T: IntoOutcome<A>> IntoOutcome<A> for Option<T> {
    fn into_outcome(self, cx: &AgentContext) -> AgentResult {
        match self {
            Some(outcome) => outcome.into_outcome(cx),
            None => Ok(()),
        }
    }
}

impl<A: ?Sized, T: IntoOutcome<A>, E: Into<AgentError>> IntoOutcome<A> for Result<T, E> {
    fn into_outcome(self, cx: &AgentContext) -> AgentResult {
        self.map_err(Into::into)?.into_outcome(cx)
    }
}

/// A name that is not an agent of a flow: the error of the generated agent enum's `FromStr`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownAgent {
    /// The flow asked.
    pub flow: &'static str,
    /// The name that matched no agent.
    pub name: Arc<str>,
    /// The flow's agents.
    pub known: &'static [&'static str],
}

impl fmt::Display for UnknownAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "flow '{}' has no agent named '{}'; its agents are: {}",
            self.flow,
            self.name,
            self.known.join(", ")
        )
    }
}

impl std::error::Error for UnknownAgent {}

/// A builder slot of a flow whose agent has not been given yet.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unset;

/// A builder slot of a flow holding the agent given to it.
#[derive(Debug, Clone)]
pub struct Set<T>(pub T);

/// What a flow builder's `build()` asks of the slot of a `dyn` node: that it holds the node's
/// agent. `F` is the flow type; `N` a marker type the flow generates for the node, named after
/// its setter, so that calling `build()` first fails to compile naming the node.
#[diagnostic::on_unimplemented(
    message = "flow `{F}`: node `{N}` (a `dyn` node) was not given: call `.{N}(...)` before \
               `.build()`",
    label = "`{N}` was not given",
    note = "`.{N}(|node| ...)` calls the closure with the node (its name and its legal transfer \
            targets) and keeps the agent it returns"
)]
pub trait DynGiven<F, N> {
    /// The agent in the slot.
    fn into_agent(self) -> DynAgent;
}

impl<F, N> DynGiven<F, N> for Set<DynAgent> {
    fn into_agent(self) -> DynAgent {
        self.0
    }
}

/// What a flow builder's `build()` asks of the slot of a `runtime` node: that it holds the
/// node's agent, a `T`. `F` is the flow type; `N` a marker type the flow generates for the
/// node, named after its setter, so that calling `build()` first fails to compile naming the
/// node.
#[diagnostic::on_unimplemented(
    message = "flow `{F}`: node `{N}` (a `runtime` node) was not given: call `.{N}(...)` \
               before `.build()`",
    label = "`{N}` was not given",
    note = "`.{N}(value)` takes the agent the node runs, a `{T}`"
)]
pub trait RuntimeGiven<F, N, T> {
    /// The agent in the slot.
    fn into_agent(self) -> T;
}

impl<F, N, T> RuntimeGiven<F, N, T> for Set<T> {
    fn into_agent(self) -> T {
        self.0
    }
}

/// What a flow hands the agent of one of its `dyn` nodes: the node's name and its legal
/// transfer targets, typed. The builder's setter for the node calls your closure with it, so an
/// agent built at run time (a `ChatModelAgent` with its client) takes its name from the flow
/// instead of repeating it, and code that names its targets uses the node's target enum (a
/// target that is not legal there does not compile).
///
/// `T` is the node's target enum (`{Flow}{Node}Target`), or [`NoTarget`] for a node that may
/// transfer nowhere. A `FlowNode` converts into the agent's name, so it goes where a name goes
/// (`ChatModelAgent::builder(node, model)`, `FnAgent::new(node, body)`); the `flow!`
/// documentation of the `agentflow` facade has an example.
pub struct FlowNode<T: 'static> {
    flow: &'static str,
    name: &'static str,
    targets: &'static [T],
}

impl<T: TransferTarget> FlowNode<T> {
    /// The node `name` of flow `flow`, whose legal targets are `targets`. Made by the builders
    /// `flow!` generates.
    #[doc(hidden)]
    pub const fn __new(flow: &'static str, name: &'static str, targets: &'static [T]) -> Self {
        FlowNode {
            flow,
            name,
            targets,
        }
    }

    /// The node's name: the name its agent must carry.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The flow's name.
    pub fn flow(&self) -> &'static str {
        self.flow
    }

    /// The agents this node may transfer to: its sub-agents, then its parent unless it is
    /// barred from it.
    pub fn targets(&self) -> &'static [T] {
        self.targets
    }

    /// The names of [`targets`](FlowNode::targets).
    pub fn target_names(&self) -> Vec<&'static str> {
        self.targets.iter().map(|t| t.agent_name()).collect()
    }
}

impl<T> Clone for FlowNode<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for FlowNode<T> {}

impl<T: TransferTarget> fmt::Debug for FlowNode<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlowNode")
            .field("flow", &self.flow)
            .field("name", &self.name)
            .field("targets", &self.target_names())
            .finish()
    }
}

impl<T> fmt::Display for FlowNode<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl<T> From<FlowNode<T>> for Arc<str> {
    fn from(node: FlowNode<T>) -> Self {
        Arc::from(node.name)
    }
}

impl<T> From<FlowNode<T>> for String {
    fn from(node: FlowNode<T>) -> Self {
        node.name.to_owned()
    }
}

/// The target type of a node that may transfer nowhere (a leaf barred from its parent, or the
/// root of a one-node flow): it has no values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoTarget {}

impl fmt::Display for NoTarget {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {}
    }
}

impl TransferTarget for NoTarget {
    const ALL: &'static [Self] = &[];
    fn agent_name(self) -> &'static str {
        match self {}
    }
}

/// What the `new()` of a flow with `dyn` or `runtime` nodes requires, so that calling it fails
/// to compile with a message pointing to the builder. Nothing implements it.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "flow `{F}` has nodes whose agents are given at run time, so it has no `new()`",
    label = "use `{F}::builder()` instead",
    note = "build it with `{F}::builder()`: call its setter for every `dyn` and `runtime` node \
            (named after the node), then `build()`"
)]
pub trait NewNeedsNoAgents<F> {}

/// The type [`NewNeedsNoAgents`] is asked of.
#[doc(hidden)]
#[derive(Debug)]
pub struct UseTheBuilder;

/// The agent of a `dyn` node, as a flow builder holds it.
#[derive(Clone)]
pub struct DynAgent(pub Arc<dyn Agent>);

impl fmt::Debug for DynAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DynAgent").field(&self.0.name()).finish()
    }
}

pub mod expected;

/// Text renderings of a flow's tree, for the `mermaid()` and `to_dot()` of `flow!` types.
#[doc(hidden)]
pub mod render {
    use std::fmt::Write as _;

    /// A Mermaid flowchart: one node per agent, `<-->` from a parent to a sub-agent that may
    /// transfer back, `-->` to one barred from it.
    pub fn mermaid(names: &[&str], parents: &[Option<usize>], barred: &[bool]) -> String {
        let mut out = String::from("graph TD\n");
        for (i, name) in names.iter().enumerate() {
            let _ = writeln!(out, "    n{i}[\"{}\"]", name.replace('"', "#quot;"));
        }
        for (i, parent) in parents.iter().enumerate() {
            if let Some(p) = parent {
                let arrow = if barred[i] { "-->" } else { "<-->" };
                let _ = writeln!(out, "    n{p} {arrow} n{i}");
            }
        }
        out
    }

    /// A standalone SVG of the tree (see `flow-diagram`): `descriptions` and `notes` per
    /// agent, in the order of `names`.
    pub fn svg(
        flow: &str,
        names: &[&str],
        descriptions: &[&str],
        notes: &[&str],
        parents: &[Option<usize>],
        barred: &[bool],
    ) -> String {
        fn node(
            i: usize,
            names: &[&str],
            descriptions: &[&str],
            notes: &[&str],
            parents: &[Option<usize>],
            barred: &[bool],
        ) -> flow_diagram::Node {
            let mut out = flow_diagram::Node::new(names[i])
                .description(descriptions[i])
                .note(notes[i])
                .barred(barred[i]);
            for (c, parent) in parents.iter().enumerate() {
                if *parent == Some(i) {
                    out = out.child(node(c, names, descriptions, notes, parents, barred));
                }
            }
            out
        }
        if names.is_empty() {
            return flow_diagram::svg(flow, &flow_diagram::Node::new(flow));
        }
        flow_diagram::svg(flow, &node(0, names, descriptions, notes, parents, barred))
    }

    /// A Graphviz digraph: one edge per parent and sub-agent, `dir=both` where the sub-agent
    /// may transfer back.
    pub fn dot(flow: &str, names: &[&str], parents: &[Option<usize>], barred: &[bool]) -> String {
        let quote = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
        let mut out = format!("digraph \"{}\" {{\n", quote(flow));
        for (i, name) in names.iter().enumerate() {
            let _ = writeln!(out, "    n{i} [label=\"{}\"];", quote(name));
        }
        for (i, parent) in parents.iter().enumerate() {
            if let Some(p) = parent {
                let dir = if barred[i] { "" } else { " [dir=both]" };
                let _ = writeln!(out, "    n{p} -> n{i}{dir};");
            }
        }
        out.push_str("}\n");
        out
    }
}

/// Compile-time checks evaluated by the code `flow!` generates.
///
/// Each check returns a [`check::Verdict`]; the generated `const` item panics with its message
/// when it is not empty, so the compiler reports it at the offending node of the flow.
#[doc(hidden)]
pub mod check {
    /// The FNV-1a (64-bit) offset basis: the hash of nothing.
    pub const FNV_OFFSET: u64 = crate::ids::FNV_OFFSET;

    /// Extends an FNV-1a (64-bit) hash by the UTF-8 bytes of `s`; hashing the pieces of a
    /// string in order gives [`fingerprint_of`](crate::fingerprint_of) of the whole.
    pub const fn fnv1a(hash: u64, s: &str) -> u64 {
        crate::ids::fnv1a_extend(hash, s.as_bytes())
    }

    const CAP: usize = 1024;

    /// The outcome of a check: empty when it passed, else the compile error's text.
    pub struct Verdict {
        buf: [u8; CAP],
        len: usize,
    }

    impl Verdict {
        /// A passing verdict.
        pub const fn pass() -> Self {
            Verdict {
                buf: [0; CAP],
                len: 0,
            }
        }

        /// Fails the compile with the message, at the caller (the checked node), if the check
        /// failed.
        #[track_caller]
        pub const fn assert_passed(self) {
            if self.failed() {
                panic!("{}", self.as_str())
            }
        }

        /// Whether the check failed.
        pub const fn failed(&self) -> bool {
            self.len > 0
        }

        /// Appends text (cut short, on a character boundary, past the capacity).
        pub const fn push(mut self, s: &str) -> Self {
            let bytes = s.as_bytes();
            let mut i = 0;
            while i < bytes.len() {
                if self.len == CAP {
                    break;
                }
                self.buf[self.len] = bytes[i];
                self.len += 1;
                i += 1;
            }
            if i < bytes.len() {
                // Cut short: never end inside a UTF-8 sequence.
                while self.len > 0 && core::str::from_utf8(self.buf.split_at(self.len).0).is_err() {
                    self.len -= 1;
                }
            }
            self
        }

        /// Appends `` `s` ``.
        pub const fn code(self, s: &str) -> Self {
            self.push("`").push(s).push("`")
        }

        /// Appends the names as `` `a`, `b` `` (or `none` when there are none).
        pub const fn list(mut self, names: &[&str]) -> Self {
            if names.is_empty() {
                return self.push("none");
            }
            let mut i = 0;
            while i < names.len() {
                if i > 0 {
                    self = self.push(", ");
                }
                self = self.code(names[i]);
                i += 1;
            }
            self
        }

        /// The message.
        pub const fn as_str(&self) -> &str {
            match core::str::from_utf8(self.buf.split_at(self.len).0) {
                Ok(s) => s,
                Err(_) => "",
            }
        }
    }

    /// Fails the compile with the verdict's message, at the caller's node, if it failed.
    #[track_caller]
    pub const fn assert_passed(verdict: &Verdict) {
        if verdict.failed() {
            panic!("{}", verdict.as_str())
        }
    }

    const fn eq(a: &str, b: &str) -> bool {
        let (a, b) = (a.as_bytes(), b.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let mut i = 0;
        while i < a.len() {
            if a[i] != b[i] {
                return false;
            }
            i += 1;
        }
        true
    }

    const fn contains(names: &[&str], name: &str) -> bool {
        let mut i = 0;
        while i < names.len() {
            if eq(names[i], name) {
                return true;
            }
            i += 1;
        }
        false
    }

    /// For each of `names` (`N` of them), the index of the first earlier name equal to it, or
    /// `usize::MAX` if there is none. Computed once per flow, so that each node's
    /// [`unique_name`] check costs nothing when it passes: names are compared by hash first.
    pub const fn duplicates<const N: usize>(names: &[&str]) -> [usize; N] {
        let mut hashes = [0u64; N];
        let mut i = 0;
        while i < N {
            hashes[i] = fnv1a(FNV_OFFSET, names[i]);
            i += 1;
        }
        let mut out = [usize::MAX; N];
        let mut i = 1;
        while i < N {
            let mut j = 0;
            while j < i {
                if hashes[j] == hashes[i] && eq(names[j], names[i]) {
                    out[i] = j;
                    break;
                }
                j += 1;
            }
            i += 1;
        }
        out
    }

    /// Checks that the agent of node `index` of flow `flow` has a name no earlier node has;
    /// `earlier` is that node's entry of [`duplicates`]. `names` and `nodes` list the agents'
    /// names and the nodes as written in the flow, in tree order.
    pub const fn unique_name(
        flow: &str,
        names: &[&str],
        nodes: &[&str],
        index: usize,
        earlier: usize,
    ) -> Verdict {
        if earlier == usize::MAX {
            return Verdict::pass();
        }
        Verdict::pass()
            .push("two agents of flow ")
            .code(flow)
            .push(" are named ")
            .code(names[index])
            .push(": node ")
            .code(nodes[index])
            .push(" has the name of node ")
            .code(nodes[earlier])
            .push(
                ". Transfers and resumes find agents by name, so names must be unique within a \
                 flow: give one of them another name with `#[agent(name = \"...\")]`, or remove \
                 one node",
            )
    }

    /// Checks the transfers agent `agent` declares against its place in flow `flow`: each must
    /// name one of `children` or the `parent`, and not the parent when the node is barred from
    /// it (`barred_by_node`: `no_parent` on the node; `barred_by_agent`: `#[agent(no_parent)]`).
    #[allow(clippy::too_many_arguments)]
    pub const fn transfers(
        flow: &str,
        agent: &str,
        declared: &[&str],
        children: &[&str],
        parent: Option<&str>,
        barred_by_node: bool,
        barred_by_agent: bool,
    ) -> Verdict {
        let mut i = 0;
        while i < declared.len() {
            let target = declared[i];
            i += 1;
            if contains(children, target) {
                continue;
            }
            if eq(target, agent) {
                return Verdict::pass()
                    .push("agent ")
                    .code(agent)
                    .push(" declares a transfer to itself (in flow ")
                    .code(flow)
                    .push(
                        "); an agent transfers to a sub-agent or its parent: remove it from the \
                         agent's declared transfers",
                    );
            }
            if let Some(parent) = parent {
                if eq(parent, target) {
                    if barred_by_node || barred_by_agent {
                        let v = Verdict::pass()
                            .push("agent ")
                            .code(agent)
                            .push(" declares a transfer to ")
                            .code(target)
                            .push(", its parent in flow ")
                            .code(flow);
                        if barred_by_node {
                            return v.push(
                                ", but its node is marked `no_parent`, so that transfer would \
                                 be refused: remove `no_parent` from the node, or remove the \
                                 target from the agent's `#[agent(transfers = [...])]`",
                            );
                        }
                        return v.push(
                            ", but the agent is declared `#[agent(no_parent)]`, so that \
                             transfer would be refused: remove `no_parent` or the target \
                             from its `#[agent(...)]`",
                        );
                    }
                    continue;
                }
            }
            let v = Verdict::pass()
                .push("agent ")
                .code(agent)
                .push(" declares a transfer to ")
                .code(target)
                .push(", but in flow ")
                .code(flow)
                .push(" ")
                .code(target)
                .push(" is neither a sub-agent nor the parent of ")
                .code(agent)
                .push(", so the transfer could never succeed. Its sub-agents here: ")
                .list(children)
                .push("; its parent: ");
            let v = match parent {
                Some(p) => v.code(p),
                None => v.push("none (it is the root)"),
            };
            return v
                .push(". Place ")
                .code(target)
                .push(" under ")
                .code(agent)
                .push(
                    " in this flow, or remove it from the agent's `#[agent(transfers = [...])]`",
                );
        }
        Verdict::pass()
    }

    /// Checks that agent `agent`, a sub-agent of the workflow `workflow` (a `kind` workflow:
    /// `sequential`, `parallel` or `loop`) in flow `flow`, declares no transfer to it: a
    /// workflow runs its sub-agents itself and bars them from transferring to it.
    pub const fn workflow_child(
        flow: &str,
        agent: &str,
        declared: &[&str],
        workflow: &str,
        kind: &str,
    ) -> Verdict {
        if !contains(declared, workflow) {
            return Verdict::pass();
        }
        Verdict::pass()
            .push("agent ")
            .code(agent)
            .push(" declares a transfer to ")
            .code(workflow)
            .push(", its parent in flow ")
            .code(flow)
            .push(", but ")
            .code(workflow)
            .push(" is a ")
            .code(kind)
            .push(
                " workflow: it runs its sub-agents itself and bars them from transferring to \
                 it, so that transfer would be refused. Remove the target from the agent's \
                 `#[agent(transfers = [...])]`; the workflow goes on by itself when the agent \
                 ends",
            )
    }
}

#[cfg(test)]
mod tests {
    use super::check::*;

    #[test]
    fn fnv_pieces_equal_the_whole() {
        let whole = crate::fingerprint_of("triage(refund,complaint(escalation^))");
        let mut h = FNV_OFFSET;
        for piece in [
            "triage",
            "(",
            "refund",
            ",",
            "complaint",
            "(",
            "escalation",
            "^",
            "))",
        ] {
            h = fnv1a(h, piece);
        }
        assert_eq!(h, whole);
    }

    #[test]
    fn verdict_messages() {
        let v = transfers(
            "Desk",
            "triage",
            &["refund", "billing"],
            &["refund"],
            None,
            false,
            false,
        );
        assert_eq!(
            v.as_str(),
            "agent `triage` declares a transfer to `billing`, but in flow `Desk` `billing` is \
             neither a sub-agent nor the parent of `triage`, so the transfer could never \
             succeed. Its sub-agents here: `refund`; its parent: none (it is the root). Place \
             `billing` under `triage` in this flow, or remove it from the agent's \
             `#[agent(transfers = [...])]`"
        );
        let ok = transfers(
            "Desk",
            "refund",
            &["triage"],
            &[],
            Some("triage"),
            false,
            false,
        );
        assert!(!ok.failed());
        let barred = transfers(
            "Desk",
            "refund",
            &["triage"],
            &[],
            Some("triage"),
            true,
            false,
        );
        assert!(barred.as_str().contains("marked `no_parent`"));
        let names = ["a", "b", "a", "b", "c"];
        let nodes = ["a", "b", "c", "d", "e"];
        let earlier = duplicates::<5>(&names);
        assert_eq!(earlier, [usize::MAX, usize::MAX, 0, 1, usize::MAX]);
        let dup = unique_name("Desk", &names, &nodes, 2, earlier[2]);
        assert!(dup.as_str().starts_with(
            "two agents of flow `Desk` are named `a`: node `c` has the name of node `a`"
        ));
        assert!(!unique_name("Desk", &names, &nodes, 1, earlier[1]).failed());
    }

    #[test]
    fn renders() {
        let names = ["triage", "refund", "complaint", "escalation"];
        let parents = [None, Some(0), Some(0), Some(2)];
        let barred = [false, false, false, true];
        assert_eq!(
            super::render::mermaid(&names, &parents, &barred),
            "graph TD\n    n0[\"triage\"]\n    n1[\"refund\"]\n    n2[\"complaint\"]\n    \
             n3[\"escalation\"]\n    n0 <--> n1\n    n0 <--> n2\n    n2 --> n3\n"
        );
        assert_eq!(
            super::render::dot("Desk", &names, &parents, &barred),
            "digraph \"Desk\" {\n    n0 [label=\"triage\"];\n    n1 [label=\"refund\"];\n    \
             n2 [label=\"complaint\"];\n    n3 [label=\"escalation\"];\n    \
             n0 -> n1 [dir=both];\n    n0 -> n2 [dir=both];\n    n2 -> n3;\n}\n"
        );
    }

    #[test]
    fn verdict_cuts_on_char_boundary() {
        let long = "é".repeat(600);
        let v = Verdict::pass().push("x").push(&long);
        assert!(v.as_str().len() <= 1024);
        assert!(v.as_str().ends_with('é'));
    }
}
