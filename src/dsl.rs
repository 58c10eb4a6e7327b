//! The documented front ends of the macros.

/// Turns an async fn, or a struct and its impl block, into an agent type.
///
/// # On an async fn
///
/// The fn becomes a unit struct of the same name (as actix-web's `#[get] async fn index` does),
/// with the fn's visibility, implementing [`Agent`](crate::Agent),
/// [`AgentSpec`](crate::AgentSpec) (its static facts) and [`FlowBuilt`](crate::spec::FlowBuilt) (a
/// flow can build it on its own). Its doc comment is the agent's description, its name the
/// fn's name.
///
/// ```
/// use agentweave::prelude::*;
///
/// /// Decides which desk owns the request.
/// #[agent(transfers = [refund, complaint])]
/// async fn triage(cx: &AgentContext, input: AgentInput) -> AgentResult<TriageTransfer> {
///     let text = &input.messages.last().expect("a user message").content;
///     if text.contains("refund") {
///         cx.say("Sending you to refunds.");
///         Ok(TriageTransfer::Refund)
///     } else {
///         Ok(TriageTransfer::Complaint)
///     }
/// }
///
/// assert_eq!(triage.name(), "triage");
/// assert_eq!(triage.description(), "Decides which desk owns the request.");
/// assert_eq!(<triage as AgentSpec>::TRANSFERS, ["refund", "complaint"]);
/// assert_eq!(TriageTransfer::Refund.to_string(), "refund");
/// ```
///
/// The fn takes the context, then optionally the input:
/// `async fn NAME(cx: &AgentContext[, input: AgentInput]) -> R`. The
/// [`AgentContext`](crate::AgentContext) emits (`say`, `send`, `send_stream`, `emit`,
/// `custom`, `interrupt`, `break_loop`) and derefs to the [`RunContext`](crate::RunContext) (session, run path, root
/// input). It has no transfer by name: an agent transfers by **returning** a variant of its
/// transfer enum, so it can only make the transfers it declared. What the body may return
/// ([`IntoOutcome`](crate::spec::IntoOutcome)):
///
/// | `R` | effect when the body returns |
/// | --- | --- |
/// | `()` | nothing more: the run ends after this agent unless its last own event transfers |
/// | [`Exit`](crate::Exit) | an event carrying `Action::Exit` |
/// | `TriageTransfer` (its own enum) | the `transfer_to_agent` messages, the second carrying the transfer |
/// | `Option<R>` | `None`: nothing; `Some(r)`: as `r` |
/// | `AgentResult<R>` | `Err(e)`: an error event; `Ok(r)`: as `r` |
///
/// # Interrupt and resume
///
/// A body stops the run for outside input with
/// [`cx.interrupt(info)`](crate::AgentContext::interrupt) (or `interrupt_with_state`). When the
/// run is resumed (`Runner::resume`), the same body runs again, at the same run path, with
/// [`cx.is_resuming()`](crate::AgentContext::is_resuming) true, the caller's answer in
/// `cx.resume_data()` and the saved state in `cx.saved_state()`; its input includes what it
/// said before the interrupt.
///
/// ```
/// use agentweave::prelude::*;
/// use serde_json::json;
///
/// /// Refunds once a human approves.
/// #[agent]
/// async fn refund(cx: &AgentContext) {
///     match cx.resume_data() {
///         None => cx.interrupt_with_state(json!("approve a refund of $40?"), json!(40)),
///         Some(answer) if answer == "yes" => {
///             cx.say(format!("Refunded ${}.", cx.saved_state().unwrap()))
///         }
///         Some(_) => cx.say("The refund was declined."),
///     }
/// }
/// # let _ = refund;
/// ```
///
/// In a [`Loop`](crate::workflow::Loop) workflow, `cx.break_loop()` ends the loop after this agent.
///
/// # On a struct and its impl
///
/// An agent that holds state (a client, a configuration) is a struct: `#[agent(...)]` on the
/// struct declares its facts, `#[agent]` on its impl block makes its `async fn run(&self, cx,
/// [input])` the agent's body. A flow cannot build such an agent itself: its node is marked
/// `runtime` and the flow's builder is given the value.
///
/// ```
/// use agentweave::prelude::*;
///
/// /// Looks orders up.
/// #[agent(name = "lookup", transfers = [triage])]
/// struct Lookup {
///     endpoint: String,
/// }
///
/// #[agent]
/// impl Lookup {
///     async fn run(&self, cx: &AgentContext, _input: AgentInput) -> LookupTransfer {
///         cx.say(format!("looked up at {}", self.endpoint));
///         LookupTransfer::Triage
///     }
/// }
///
/// let agent = Lookup { endpoint: "orders".into() };
/// assert_eq!(agent.name(), "lookup");
/// ```
///
/// # Options
///
/// | option | meaning |
/// | --- | --- |
/// | `name = "..."` | the agent's name (default: the fn's or struct's identifier) |
/// | `description = "..."` | the description (default: the doc comment) |
/// | `transfers = [a, "b-c"]` | the agents it may transfer to, by name; generates the enum `{Ident}Transfer` with one variant per target (`A`, `BC`) |
/// | `no_parent` | it never transfers to its parent: every node it fills is barred from its parent |
/// | `returns = T` | the result type of a delegated agent (a `task` or `single_turn` node): it finishes with `Finish(T)` (see the guide's "Delegation" chapter) |
/// | `accepts = T` | the payload a transfer to it carries; senders declare `transfers = [name(T)]`, the body reads `cx.payload::<name>()` |
/// | `skills = ["skills/pdf-forms"]` | skill folders (relative to the crate's `Cargo.toml`), read and checked when the crate compiles by the run-time loader's rules and embedded in the binary: `AgentSpec::SKILLS`, made the agent's skills by [`Skills::of`](crate::kit::Skills::of) (the guide's "Skills and the agent kit") |
/// | `tools = [read_file, write_file]` | the names of the tools the agent will have: each skill's `allowed-tools` must name only these (or the skill tools), or the crate does not compile |
/// | `crate = path` | the path of the `agentweave` crate, if the dependency is renamed (`#[agent(crate = af)]` for `af = { package = "agentweave", ... }`; without it, `#[agent]` reads the new name from Cargo.toml and fails once, saying what to write). `flow!` needs none: it passes its own path |
///
/// Each skill folder is checked where its path is written; every problem is a compile error at
/// the path's literal naming the skill, the agent, the file and the fix (each a case of
/// `tests/ui/fail/skill_*`), for example:
///
/// | problem | the error says |
/// | --- | --- |
/// | no such folder | there is no folder `skills/releese-notes` (paths in `skills = [...]` are relative to the crate's Cargo.toml): create it with a `SKILL.md`, or correct the path |
/// | no `SKILL.md` | the folder `skills/no-skill-md` has no `SKILL.md`: add one that opens with its front matter ... |
/// | malformed front matter | `skills/bad-front-matter/SKILL.md`: the front matter is not valid: unknown field `author` ... |
/// | a name that is not the folder's | `name` is `right-name` but the skill's folder is `wrong-name`: a skill is named by its folder; rename one of the two |
/// | a linked resource that is missing | the instructions link to `references/checklist.md`, which is not in the skill's folder: add the file there or remove the link |
/// | an `allowed-tools` entry the agent lacks | `allowed-tools` names `fetch_url` that the agent does not have; its tools are: read_file, write_file ... |
/// | `tools` without `skills` | `tools = [...]` lists the tools the skills of agent `reader` may allow, but it has no `skills = [...]` ... |
///
/// A link is a Markdown link target or a code span whose path starts with `scripts/`,
/// `references/` or `assets/`; the run-time loader refuses a missing one too. An embedded
/// skill's resources are read from the binary; its scripts, which run in the skill's folder,
/// run (with `Skills::with_scripts`) only where that folder exists, relative to the program's
/// working directory.
///
/// The generated unit struct implements `Agent` and no other trait of yours (name it again for
/// another value, as in `FlowAgent::new(triage)`); its transfer enum implements `Debug`,
/// `Clone`, `Copy`, `PartialEq`, `Eq` and `Display`. Each impl costs compile time per agent
/// (W7 in BENCHMARKS.md). The context may also be taken as `&mut AgentContext` or by value.
///
/// Declared targets are checked against every flow the agent is placed in (see [`flow!`](crate::flow!)).
///
/// A body cannot return another agent's transfer enum:
///
/// ```compile_fail
/// use agentweave::prelude::*;
/// #[agent(transfers = [refund])]
/// async fn triage(_cx: &AgentContext) -> TriageTransfer { TriageTransfer::Refund }
/// #[agent]
/// async fn refund(_cx: &AgentContext) -> TriageTransfer { TriageTransfer::Refund }
/// ```
pub use agentweave_macros::agent;

/// Declares a tree of agents that the compiler checks, and generates its types.
///
/// ```
/// use agentweave::prelude::*;
/// # /// Routes.
/// # #[agent(transfers = [refund, complaint])]
/// # async fn triage(_cx: &AgentContext) -> TriageTransfer { TriageTransfer::Refund }
/// # #[agent]
/// # async fn refund(_cx: &AgentContext) {}
/// # #[agent(transfers = [escalation])]
/// # async fn complaint(_cx: &AgentContext) {}
/// # #[agent]
/// # async fn escalation(_cx: &AgentContext) {}
///
/// flow! {
///     /// The customer-service desk.
///     pub CustomerService: triage => [refund, complaint => [escalation(no_parent)]]
/// }
///
/// let desk = CustomerService::new().unwrap();
/// assert_eq!(desk.flow().shape(), "triage(refund,complaint(escalation^))");
/// assert_eq!(CustomerService::FINGERPRINT, desk.flow().fingerprint());
/// assert_eq!(CustomerService::path_of("escalation"), Some(&["triage", "complaint", "escalation"][..]));
/// assert_eq!("refund".parse::<CustomerServiceAgent>(), Ok(CustomerServiceAgent::Refund));
/// let runner = desk.runner();
/// # let _ = runner;
/// ```
///
/// # Syntax
///
/// ```text
/// flow! { DOCS VIS NAME: NODE }
/// NODE := AGENT ( '(' OPTION, ... ')' )? ( '=>' '[' NODE, ... ']' )?
///       | name ( '(' OPTION, ... ')' )? '=' WORKFLOW '[' NODE, ... ']'
/// AGENT := path::to::agent_type | 'dyn' name | 'remote' name
/// WORKFLOW := 'sequential' | 'parallel' | 'loop' '(' ( 'max' '=' N | 'unbounded' ) ')'
///           | 'map' '(' MAP_ARG, ... ')'
/// MAP_ARG := 'last_output' | 'value' '=' "key" | 'concurrency' '=' N
///          | 'on_failure' '=' ( 'fail_fast' | 'collect_errors' | 'at_least' '(' N ')' )
/// ```
///
/// A node names an `#[agent]` type (by path), or is `dyn name`: an agent built at run time
/// (a model agent holding a client), named `name`, made by a closure given to the builder.
/// Children follow `=>` in brackets. A workflow node, `name = sequential [...]` (or
/// `parallel`, `loop(max = N)`), runs its children as the workflow agent of that kind does;
/// `map(...)` runs its one child once per item of a JSON array (the previous agent's answer,
/// `last_output`, or a session value), `concurrency` at a time, the failures handled as
/// `on_failure` says (`fail_fast` by default).
///
/// # Agents built at run time
///
/// The flow is the single source of a `dyn` node's name and legal targets: its builder setter
/// calls your closure with a [`FlowNode`](crate::spec::FlowNode), which carries the node's name and
/// its targets as the node's target enum, and converts into the name wherever a name goes
/// (`ChatModelAgent::builder(node, model)`, `FnAgent::new(node, body)`):
///
/// ```
/// use agentweave::prelude::*;
/// use agentweave::model::{ScriptStep, ScriptedModel};
///
/// flow! { Desk: dyn triage => [dyn refund] }
///
/// let desk = Desk::builder()
///     .triage(|node| {
///         assert_eq!(node.name(), "triage");
///         assert_eq!(node.targets(), [DeskTriageTarget::Refund]);
///         let model = ScriptedModel::rules()
///             .otherwise(ScriptStep::transfer(DeskTriageTarget::Refund.as_str()));
///         ChatModelAgent::builder(node, model).build().unwrap()
///     })
///     .refund(|node| {
///         FnAgent::new(node, |cx, _| async move {
///             cx.say("refunded");
///             Ok(())
///         })
///     })
///     .build()
///     .unwrap();
/// assert_eq!(desk.flow().shape(), "triage(refund)");
/// ```
///
/// A target the node does not have is not a variant of its enum, so it does not compile:
///
/// ```compile_fail
/// use agentweave::prelude::*;
/// flow! { Desk: dyn triage => [dyn refund] }
/// let _ = DeskTriageTarget::Complaint;
/// ```
///
/// # Node options
///
/// | option | meaning |
/// | --- | --- |
/// | `no_parent` | the node may not transfer to its parent (enforced at run time too) |
/// | `skip_transfer_messages` | transfer messages are left out of the node's input |
/// | `context = rewrite` | the default: other agents' messages become `For context:` user messages |
/// | `context = user_input_only` | the node sees only the user's input |
/// | `context = last(N)` | the user's input and the last `N` entries |
/// | `context = custom(path)` | a [`HistoryRewriter`](crate::history::HistoryRewriter) (a fn or a value) |
/// | `runtime` | the agent type holds state: the builder is given its value |
/// | `task` | a delegated agent that talks with the user over turns, then returns a result to its parent (its agent declares `returns`) |
/// | `single_turn` | a delegated agent that runs once and returns to its parent |
/// | `skills = ["skills/pdf-forms"]` | on a `dyn` node: skill folders checked when the crate compiles and embedded; the closure reads them with [`node.skills()`](crate::spec::FlowNode::skills) (an agent type declares its own with `#[agent(skills = [...])]`) |
/// | `tools = [read_file, write_file]` | on a `dyn` node with `skills`: the tools its agent will have, which the skills' `allowed-tools` are checked against |
///
/// A node written `remote name` is a remote A2A agent given to the builder as a `dyn` node is
/// (feature `a2a`); it takes no URL in `flow!`.
///
/// # What it generates
///
/// For `pub Desk: triage => [refund(runtime), dyn billing]`:
///
/// - `struct Desk`: the built flow. `Desk::builder()` returns `DeskBuilder`, with one required
///   setter per `runtime` or `dyn` node (`.refund(value)`, `.billing(|node| agent)`) and `build()`,
///   which does not compile until every setter was called; `Desk::new()` when there are none.
///   `flow()`, `into_flow()`, `runner()`, and `From<Desk> for FlowAgent`.
/// - consts `Desk::NAME`, `Desk::AGENTS` (names, depth first), `Desk::PATHS` (agent -> names
///   from the root: the resume dispatch table, also `Desk::path_of`), `Desk::FINGERPRINT`
///   (equal to [`FlowAgent::fingerprint`](crate::FlowAgent::fingerprint) of the built tree).
/// - `Desk::svg()`, `Desk::mermaid()` and `Desk::to_dot()`, and rustdoc on `Desk` with the
///   tree, a picture of it (an inline SVG laid out at compile time: no script, no network) and
///   the table of who may transfer to whom. A built tree draws itself with
///   [`FlowAgent::to_svg`](crate::FlowAgent::to_svg). A `dyn` node named `build` gets the setter
///   `build_agent`.
/// - `enum DeskAgent` (one variant per agent; `Display`/`FromStr` by name, `parent()`,
///   `children()`, `path()`), and per node with targets `Desk{Node}Target`: for a node filled
///   by an agent type, an alias of that agent's own transfer enum (`TriageTransfer`; a transfer
///   the agent makes is one it declared, and the flow checks each against the node's
///   neighbours; `NoTarget` if it declares none), for a `dyn` or `runtime` node an `enum` of
///   its sub-agents, then its parent unless the node is `no_parent`.
///
/// The tree is built bottom-up with [`set_sub_agents`](crate::set_sub_agents), exactly as
/// written by hand: same shape, options and events.
///
/// These types are defined in a module of the flow's own, `desk_flow` (the flow's name in snake
/// case), and re-exported where the flow is written, with its visibility; rustc names that
/// module in some messages (`desk_flow::DeskAgent`). A second flow of the same name in one
/// module, or another item named like the flow, is one error at the flow's name ("the name
/// `Desk` is defined multiple times"); an item of yours named like one of the other generated
/// types takes precedence over it where both are in scope.
///
/// # Checked at compile time
///
/// Each error points at the offending node and names the agents: a cycle, an agent under two
/// parents, an agent listed twice, two agents with one name, an empty child list, a node that
/// is not an agent type, a declared transfer to an agent that is neither a sub-agent nor the
/// parent in this flow, a declared transfer to a parent the node is barred from, an unknown
/// option, malformed syntax. Every error the macro finds in a flow is reported in one compile;
/// the checks that need the agents' facts (names, declared transfers, `no_parent`) then run as
/// `const` evaluation, one error per offending node.
///
/// ```compile_fail
/// use agentweave::prelude::*;
/// #[agent(transfers = [refund, billing])] // `billing` is not a neighbour of `triage` below
/// async fn triage(_cx: &AgentContext) -> TriageTransfer { TriageTransfer::Refund }
/// #[agent]
/// async fn refund(_cx: &AgentContext) {}
/// flow! { Desk: triage => [refund] }
/// ```
///
/// ```compile_fail
/// use agentweave::prelude::*;
/// #[agent]
/// async fn triage(_cx: &AgentContext) {}
/// #[agent]
/// async fn complaint(_cx: &AgentContext) {}
/// flow! { Desk: triage => [complaint => [triage]] } // a cycle
/// ```
///
/// # Compile errors, one example each
///
/// Every error points at the offending token, names the agents, and says what to do. Every error
/// the macro finds in a flow is reported in one compile; the checks that need the agents' facts then
/// run as `const` evaluation, one error per offending node. One example of each (full list in
/// `tests/ui/fail`):
///
/// A cycle, `triage => [complaint => [triage]]`:
/// ```text
/// error: cycle in flow `Desk`: agent `triage` is its own ancestor (triage => complaint => triage);
///        a flow is a tree. To let `complaint` hand control back to `triage`, remove this node: a
///        sub-agent may always transfer to its parent (declare `#[agent(transfers = [triage])]` on it)
/// ```
///
/// An agent under two parents, `triage => [refund, complaint => [refund]]`:
/// ```text
/// error: agent `refund` is placed under two parents in flow `Desk`: `triage` and `complaint`; an
///        agent has one place in a tree. Keep one, or define a second agent with its own name for
///        the other place
/// ```
///
/// Two agents with one name (`#[agent(name = "refund")] async fn refund_v2`):
/// ```text
/// error[E0080]: evaluation panicked: two agents of flow `Desk` are named `refund`: node
///        `refund_v2` has the name of node `refund`. Transfers and resumes find agents by name, so
///        names must be unique within a flow: give one of them another name with
///        `#[agent(name = "...")]`, or remove one node
/// ```
///
/// An empty child list, `triage => []`:
/// ```text
/// error: agent `triage` has an empty list of sub-agents; list them, as in `triage => [refund]`,
///        or remove `=> []` to make `triage` a leaf
/// ```
///
/// A node that is not an agent type (a plain struct, or a standard type such as `String`):
/// ```text
/// error[E0277]: `Refund` is not an agent type, so it cannot be a node of a `flow!`
///    = note: a node of `flow!` names a type made with `#[agent]` (on an async fn or a struct), or
///            one that implements `AgentSpec`
///    = note: for an agent built at run time (a model agent holding a client), write the node as
///            `dyn NAME` and give the agent to the flow's builder
/// ```
/// and, at the same node, "a flow cannot build `Refund` on its own", whose note says: "if `Refund`
/// is not an agent type at all, put #[agent] on it (see the error about `AgentSpec`)". Two errors:
/// the flow both reads the node's facts and builds its agent, and rustc checks the two in separate
/// items; merging them would take a new associated type on the public `AgentSpec` trait.
///
/// A declared transfer to an agent that is not a neighbour in this flow:
/// ```text
/// error[E0080]: evaluation panicked: agent `triage` declares a transfer to `billing`, but in flow
///        `Desk` `billing` is neither a sub-agent nor the parent of `triage`, so the transfer could
///        never succeed. Its sub-agents here: `refund`; its parent: none (it is the root). Place
///        `billing` under `triage` in this flow, or remove it from the agent's
///        `#[agent(transfers = [...])]`
/// ```
///
/// A declared transfer to a parent the node is barred from, `complaint => [escalation(no_parent)]`
/// with `#[agent(transfers = [complaint])] async fn escalation`:
/// ```text
/// error[E0080]: evaluation panicked: agent `escalation` declares a transfer to `complaint`, its
///        parent in flow `Desk`, but its node is marked `no_parent`, so that transfer would be
///        refused: remove `no_parent` from the node, or remove the target from the agent's
///        `#[agent(transfers = [...])]`
/// ```
///
/// An unknown option, `refund(no_parents)`:
/// ```text
/// error: unknown option `no_parents` on node `refund` of flow `Desk`; the node options are:
///        `no_parent`, `skip_transfer_messages`, `context = rewrite`, `context = user_input_only`,
///        `context = last(N)`, `context = custom(path::to::rewriter)`, `runtime`
/// ```
///
/// Malformed syntax, `triage [refund]`:
/// ```text
/// error: expected `=>` between `triage` and its sub-agents: write `triage => [...]`
/// ```
///
/// A struct agent placed where the flow would have to build it, `triage => [Lookup]`:
/// ```text
/// error[E0277]: a flow cannot build `Lookup` on its own
///    = note: if `Lookup` is an #[agent] struct that holds state, mark the node `runtime`, as in
///            `Lookup(runtime)`, and give the value to the flow's builder; or implement
///            `FlowBuilt` for `Lookup` if it has one obvious value
/// ```
///
/// `Desk::new()` on a flow with a `dyn` or `runtime` node:
/// ```text
/// error[E0277]: flow `Desk` has nodes whose agents are given at run time, so it has no `new()`
///    = note: build it with `Desk::builder()`: call its setter for every `dyn` and `runtime` node
///            (named after the node), then `build()`
/// ```
///
/// An agent body cannot transfer anywhere it did not declare: `AgentContext` has no transfer
/// method, and the function a returned variant goes through (`__private::transfer`) takes a typed
/// target and refuses, at run time, any name outside the agent's declared transfers.
///
/// A builder missing an agent, `Desk::builder().build()` with a `dyn refund` node (one error per
/// node not given; a `runtime` node's note names its agent type):
/// ```text
/// error[E0277]: flow `Desk`: node `refund` (a `dyn` node) was not given: call `.refund(...)`
///               before `.build()`
///    = note: `.refund(|node| ...)` calls the closure with the node (its name and its legal
///            transfer targets) and keeps the agent it returns
/// ```
///
/// The builder's other misuses name the node and say what to write (one example each, from
/// `tests/ui/fail/builder_*.rs`):
///
/// A setter called twice, `.refund(..).refund(..)`:
/// ```text
/// error[E0277]: flow `Desk`: node `refund` was already given: call `.refund(...)` once
///    = note: each `dyn` and `runtime` node takes one agent; remove one of the two `.refund(...)` calls
/// ```
///
/// A setter for a node the flow builds itself (`lookup`, an `#[agent]` fn):
/// ```text
/// error[E0277]: flow `Desk`: node `lookup` is built by the flow itself, so the builder has no setter for it
///    = note: only `dyn` and `runtime` nodes are given their agents at run time; to give this node
///            its agent here, declare it `dyn name` (any agent, made by a closure) or
///            `Type(runtime)` (a struct agent's value) in `flow!`; otherwise drop this call
/// ```
///
/// A closure returning the agent's builder (or, the same message, a `Result`):
/// `.refund(|node| ChatModelAgent::builder(node, model))`
/// ```text
/// error[E0277]: flow `Desk`: the closure given to `.refund(...)` must return the node's agent, not a `ChatModelAgentBuilder`
///    = note: if it returns the agent's builder, call `.build()` on it; if it returns a `Result`
///            (as `ChatModelAgentBuilder::build()` does), handle the error outside or unwrap it:
///            `.refund(|node| ChatModelAgent::builder(node, model).build().expect("valid agent"))`
/// ```
///
/// An agent value instead of a closure, `.refund(refund_agent)`:
/// ```text
/// error[E0277]: flow `Desk`: `.refund(...)` takes a closure `|node| ...` that returns the node's agent, not a `agentweave::FnAgent`
///    = note: write `.refund(|node| ...)`, building the agent with the node's name (as in
///            `FnAgent::new(node, ...)` or `ChatModelAgent::builder(node, model)`); for an agent
///            already built, `.refund(|_| agent)`
/// ```
///
/// A closure taking no argument, `.refund(|| ...)`: rustc's own error, with its fix:
/// ```text
/// error[E0593]: closure is expected to take 1 argument, but it takes 0 arguments
/// help: consider changing the closure to take and ignore the expected argument: `|_|`
/// ```
///
/// ## Payloads, results, node kinds, trajectories, remote nodes
///
/// A payload's type is compared as a type, by the trait system, not as it is spelled: the sender's
/// `transfers = [refund(types::RefundRequest)]` and the target's `accepts = Request` (an alias or
/// an import of the same type) agree; two types both named `Request` in two modules do not, one
/// error at the node naming both agents and both types:
/// ```text
/// error[E0277]: agent `triage` sends a `intake::Request` with its transfer to agent `refund`, but
///               `refund` accepts a `refunds::Request`
///   --> src/main.rs:28:22
///    |
/// 28 |     Desk: triage => [refund]
///    |                      ^^^^^^ `triage` sends `intake::Request` to `refund`, which accepts `refunds::Request`
/// ```
/// A sender that sends no payload to a target that declares one (or the other way round) is the
/// `const` check's error naming both agents and what to write. A body reads its payload typed by
/// its own declaration, `cx.payload::<refund>()` (`cx.payload::<Self>()` in a struct agent's
/// `run`): reading it as another type is rustc's type mismatch naming both types, and reading it
/// in an agent without `accepts` is "agent `refund` declares no payload, so a transfer to it
/// carries none to read". A result type is a type too: `returns = Outcome` (an alias) and
/// `Finish(types::RefundOutcome)` agree.
///
/// Node kinds that cannot work are refused, one error each:
///
/// - `returns` on an agent placed as a plain node, `triage => [refund]` with
///   `#[agent(returns = RefundOutcome)]`: "agent `refund` declares `returns = RefundOutcome` (it
///   finishes a task with that result), but node `refund` of flow `Desk` is a plain node ...
///   Mark the node `refund(task)` ... or `refund(single_turn)` ..., or remove `returns`".
/// - `task` on a workflow, `pipeline(task) = sequential [...]`: "`task` on the sequential workflow
///   `pipeline` cannot work: a workflow runs its sub-agents and ends when they do ...".
/// - `cx.task_result::<RefundOutcome>()`, a type where the agent goes: "`RefundOutcome` is not an
///   agent that declares a result type ...", with a note that the agent that finishes the task is
///   named, as in `cx.task_result::<refund>()`.
/// - A payload variant returned without its payload (`IntakeTransfer::Refund` for
///   `transfers = [refund(RefundRequest)]`): rustc's "expected `IntakeTransfer`, found enum
///   constructor" at the value, with its fix, `IntakeTransfer::Refund(/* RefundRequest */)`.
/// - Two payload types in one transfer, `refund(RefundRequest, Customer)`: "a transfer carries one
///   payload type: write `refund(RefundRequest)`; to send more than one value, send one type
///   holding them ...".
///
/// A `remote billing` node is named `remote billing` in every message (its builder's "(a `remote`
/// node) was not given", `runtime` on it), and a URL written on it (`remote billing = "http://..."`
/// or `remote billing("http://...")`) is one error at the URL: "a `remote` node takes no URL in
/// `flow!`: write `remote billing`, and give the builder its agent with its client ...".
///
/// `trajectory!` (see the evaluation chapter) holds a node filled by an agent type to the
/// transfers its agent declares, so a transfer the agent never declared, or one to the parent of an
/// agent declared `no_parent`, is an error that lists what it may transfer to; it names an agent
/// by its name (`"refund-desk"` for a name that is no identifier) or by its node's identifier.
///
/// Other misuses, one example each:
///
/// - `context = last(-1)`: "`last` takes how many of the latest history entries the agent sees, a
///   whole number of 0 or more, not `-1`: write `context = last(5)`".
/// - `#[agent]` on a method of an impl block: one error, "#[agent] on the method `run`: an agent
///   with state is a struct: put #[agent] on the struct and on its impl block (not on the
///   method)...", and the method is left as written. If the struct itself has `#[agent]`, a second
///   error says it has no body (`Lookup` is not an agent: it does not implement `Agent`), since
///   its impl block has none.
/// - A body returning a transfer enum its agent does not declare (`-> TriageTransfer` on an
///   `#[agent]` without `transfers`): rustc's "cannot find type `TriageTransfer`", once at the
///   return type (and once at each use in the body).
/// - Two nodes whose names differ only in case style (`refund_desk` and `RefundDesk`): one error,
///   "nodes `refund_desk` and `RefundDesk` of flow `Desk` would share the generated name
///   `RefundDesk`...", and nothing after it.
/// - `flow!` in a `no_std` crate compiles: the generated code reaches `std` only through
///   `agentweave`.
/// - A generic helper over a node, `fn f<T: TransferTarget>(node: FlowNode<T>)`, needs only
///   `use agentweave::spec::{FlowNode, TransferTarget}`.
///
/// The target enum of a node that may transfer nowhere (a leaf barred from its parent, a leaf under
/// a workflow, or the root of a one-node flow), `DeskRefundTarget::Triage`: the flow declares a
/// stand-in `DeskRefundTarget` with no variants, deprecated with a note, so beside rustc's "no
/// variant or associated item named `Triage` found for enum `DeskRefundTarget`" comes a warning
/// that names the node and says what to write:
/// ```text
/// warning: use of deprecated enum `desk_flow::DeskRefundTarget`: node `refund` of flow `Desk` may
///          transfer nowhere: it is a leaf barred from its parent (`no_parent`), so it has no
///          targets and its builder closure gets `FlowNode<NoTarget>`. To let it transfer, give it
///          sub-agents (`dyn refund => [...]`) or remove `no_parent`
/// ```
///
/// What rustc says in its own words, and why a macro cannot change it on stable Rust:
///
/// - A setter for a node the flow lacks, `.payments(...)`: "no method named `payments` found for
///   struct `DeskBuilder<S0>`". A method name that resolves to nothing never reaches a trait
///   bound, so neither `#[diagnostic::on_unimplemented]` nor any item the macro emits is consulted;
///   generating a stand-in for every name a user might mistype is impossible. The builder's rustdoc
///   lists its setters.
/// - A variant that is not a legal target, `DeskRefundTarget::Billing`: "no variant or associated
///   item named `Billing` found for enum `DeskRefundTarget`", for the same reason (a missing
///   associated item is a resolution error, not a trait bound); the enum's rustdoc says which
///   agents it holds (the node's sub-agents, and its parent unless barred). For a node filled by
///   an agent type the message names the agent's enum ("... found for enum `RefundTransfer`"),
///   whose variants are the transfers the agent declared. A stand-in item per
///   illegal agent would make the enum of every node carry the whole flow (quadratic in the flow's
///   size, which W7's compile-time budget in BENCHMARKS.md rules out).
/// - A node naming a type parameter of the enclosing fn (`fn make<A: Agent>() { flow! { Desk:
///   triage => [A] } }`): "can't use generic parameters from outer item", twice, with rustc's
///   suggestion pointing into the macro. Name resolution reports it before any code the macro
///   could check with runs, and the macro cannot see the enclosing fn's parameters. A flow's items
///   are items: declare the flow over concrete agent types, at module level or in a non-generic fn.
///
/// Checks that need the agents' facts (names, declared transfers, `no_parent`) run as `const`
/// evaluation: `#[agent]` exposes them as associated consts of `AgentSpec`, and `flow!` gathers
/// them, with the tree, in one const per flow and emits one `const` assertion per node, named for
/// the node (an error reads "evaluation of `desk_flow::refund_fits_this_flow` failed"; a node that
/// breaks two rules reports the first), so they hold for agents defined in other crates as well.
///
/// ## Delegation (`task`, `single_turn`, `returns`)
///
/// Checked at compile time, each error naming the agents:
///
/// | mistake | error |
/// | --- | --- |
/// | `refund(task)` on an agent with no `returns` | node `refund` of flow `Desk` is a `task`, but agent `refund` declares no result type, so it can never finish its task and give control back to `triage` ... |
/// | `returns` on the root of a flow | agent `refund` declares `returns = RefundOutcome`, but it is the root of flow `Desk`: it has no parent ... |
/// | a body finishing with another type | agent `refund` cannot finish with a `Complaint`: it is not the result type the agent declares |
/// | a parent reading an agent with no result (or naming a type, not an agent) | `refund` is not an agent that declares a result type, so it can never finish a task |
/// | `task` on the root | `task` on `refund` cannot work: it is the root of flow `Desk` ... |
///
/// ## The cases behind these errors
///
/// Each claim above is a case of `tests/ui/fail` (its `.rs` and the `.stderr` rustc gives), and
/// `tests/it/dsl_guide_errors.rs` holds this table to the `.stderr` files: the number of errors each
/// case gives. A case may hold more than one misuse (one error each: `camel_case_collision` places
/// two flows, `remote_node_with_url` two URLs); a count above the number of misuses is a cascade,
/// and the text above says which (`agent_on_method`, `body_no_transfers_enum`,
/// `flow_in_generic_fn`, and the node that is no agent type).
///
/// | case (`tests/ui/fail/`) | errors |
/// | --- | --- |
/// | `cycle` | 1 |
/// | `two_parents` | 1 |
/// | `duplicate_name` | 1 |
/// | `empty_children` | 1 |
/// | `transfer_not_neighbour` | 1 |
/// | `transfer_to_barred_parent` | 1 |
/// | `missing_arrow` | 1 |
/// | `struct_agent_without_default` | 1 |
/// | `new_with_dyn_node` | 1 |
/// | `builder_setter_twice` | 1 |
/// | `builder_setter_not_dyn` | 1 |
/// | `builder_closure_returns_builder` | 1 |
/// | `builder_closure_returns_result` | 1 |
/// | `builder_agent_not_closure` | 1 |
/// | `builder_closure_no_argument` | 1 |
/// | `context_last_negative` | 1 |
/// | `agent_on_unrelated_impl_method` | 1 |
/// | `agent_on_method` | 2 |
/// | `camel_case_collision` | 2 |
/// | `dyn_names_collide` | 1 |
/// | `target_enum_of_leaf` | 1 |
/// | `builder_setter_unknown_node` | 1 |
/// | `target_variant_illegal` | 1 |
/// | `flow_in_generic_fn` | 2 |
/// | `body_no_transfers_enum` | 2 |
/// | `not_an_agent` | 2 |
/// | `not_agent_struct` | 2 |
/// | `not_agent_std_type` | 2 |
/// | `payload_same_name_other_type` | 1 |
/// | `payload_read_other_type` | 1 |
/// | `payload_read_without_accepts` | 1 |
/// | `returns_on_chat_node` | 1 |
/// | `task_on_workflow` | 1 |
/// | `task_result_of_a_type` | 1 |
/// | `transfer_two_payload_types` | 1 |
/// | `payload_variant_without_value` | 1 |
/// | `remote_node_messages` | 2 |
/// | `remote_node_with_url` | 2 |
/// | `trajectory_undeclared_transfer` | 2 |
///
#[macro_export]
macro_rules! flow {
    ($($flow:tt)*) => {
        $crate::__private::__flow! { $crate; $($flow)* }
    };
}

/// An example of what `flow!` generates, built from the customer-service desk of the guide.
/// Only part of the documentation.
#[cfg(doc)]
pub mod example {
    use crate::prelude::*;

    /// Decides which desk owns the request.
    #[agent(transfers = [refund, complaint])]
    pub async fn triage(_cx: &AgentContext) -> TriageTransfer {
        TriageTransfer::Refund
    }

    /// Issues refunds.
    #[agent]
    pub async fn refund(_cx: &AgentContext) -> Exit {
        Exit
    }

    /// Handles complaints; escalates the serious ones.
    #[agent(transfers = [escalation])]
    pub async fn complaint(_cx: &AgentContext) -> ComplaintTransfer {
        ComplaintTransfer::Escalation
    }

    /// Takes over serious complaints.
    #[agent]
    pub async fn escalation(_cx: &AgentContext) {}

    flow! {
        /// The customer-service desk.
        pub CustomerService: triage => [
            refund(context = user_input_only),
            complaint => [escalation(no_parent)],
            dyn billing,
        ]
    }
}
