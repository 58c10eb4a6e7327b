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
/// use agentflow::prelude::*;
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
/// use agentflow::prelude::*;
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
/// use agentflow::prelude::*;
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
/// | `crate = path` | the path of the `agentflow` crate, if renamed |
///
/// Declared targets are checked against every flow the agent is placed in (see [`flow!`](crate::flow!)).
///
/// A body cannot return another agent's transfer enum:
///
/// ```compile_fail
/// use agentflow::prelude::*;
/// #[agent(transfers = [refund])]
/// async fn triage(_cx: &AgentContext) -> TriageTransfer { TriageTransfer::Refund }
/// #[agent]
/// async fn refund(_cx: &AgentContext) -> TriageTransfer { TriageTransfer::Refund }
/// ```
pub use flow_macros::agent;

/// Declares a tree of agents that the compiler checks, and generates its types.
///
/// ```
/// use agentflow::prelude::*;
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
/// AGENT := path::to::agent_type | 'dyn' name
/// ```
///
/// A node names an `#[agent]` type (by path), or is `dyn name`: an agent built at run time
/// (a model agent holding a client), named `name`, made by a closure given to the builder.
/// Children follow `=>` in brackets.
///
/// # Agents built at run time
///
/// The flow is the single source of a `dyn` node's name and legal targets: its builder setter
/// calls your closure with a [`FlowNode`](crate::spec::FlowNode), which carries the node's name and
/// its targets as the node's target enum, and converts into the name wherever a name goes
/// (`ChatModelAgent::builder(node, model)`, `FnAgent::new(node, body)`):
///
/// ```
/// use agentflow::prelude::*;
/// use agentflow::model::{ScriptStep, ScriptedModel};
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
/// use agentflow::prelude::*;
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
/// use agentflow::prelude::*;
/// #[agent(transfers = [refund, billing])] // `billing` is not a neighbour of `triage` below
/// async fn triage(_cx: &AgentContext) -> TriageTransfer { TriageTransfer::Refund }
/// #[agent]
/// async fn refund(_cx: &AgentContext) {}
/// flow! { Desk: triage => [refund] }
/// ```
///
/// ```compile_fail
/// use agentflow::prelude::*;
/// #[agent]
/// async fn triage(_cx: &AgentContext) {}
/// #[agent]
/// async fn complaint(_cx: &AgentContext) {}
/// flow! { Desk: triage => [complaint => [triage]] } // a cycle
/// ```
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
