//! [`trajectory!`](crate::trajectory!): an expected trajectory of a `flow!` flow written with
//! its agents' names, each checked against the flow at compile time.

/// An expected trajectory of a `flow!` flow, written with its agents' names and checked
/// against the flow at compile time: an agent the flow does not have, or a transfer it does not
/// allow, is a compile error naming it and saying what the flow has. It makes the same
/// [`TrajectorySpec`](crate::spec::expected::TrajectorySpec) as `Flow::trajectory()` (chain
/// `.in_order()`, `.args_subset()`, ... on it); `agentweave::eval` turns it into a
/// `TrajectoryExpectation`.
///
/// Steps, separated by commas:
///
/// - `agent NAME`: the agent ran;
/// - `transfer FROM -> TO`: `FROM` transferred to `TO`;
/// - `tool TOOL`, `tool TOOL(JSON)`, either followed by `by AGENT`: a tool call (with these
///   arguments, written as `serde_json::json!` takes them; by that agent).
///
/// An agent is written as its name (`refund`, or `"refund-desk"` for a name that is no
/// identifier) or as its node's identifier in `flow!` (`refund` for
/// `#[agent(name = "refund-desk")] async fn refund`). A transfer from a node filled by an agent
/// type must be one its agent declares (`#[agent(transfers = [...])]`), so neither an
/// undeclared transfer nor one to a parent the agent is barred from (`no_parent`) compiles.
///
/// ```
/// use agentweave::{flow, trajectory};
/// use agentweave::spec::expected::ExpectedStep;
///
/// flow! { Desk: dyn triage => [dyn refund, dyn complaint] }
///
/// let spec = trajectory!(Desk:
///     agent triage,
///     transfer triage -> refund,
///     tool lookup_order({"order_id": 42}) by refund,
///     tool issue_refund,
/// )
/// .in_order();
/// assert_eq!(spec.steps()[1], ExpectedStep::Transfer { from: "triage", to: "refund" });
/// // The same as the typed builder:
/// assert_eq!(
///     trajectory!(Desk: agent triage, transfer triage -> refund),
///     Desk::trajectory().agent(DeskAgent::Triage).transfer(DeskTriageTarget::Refund),
/// );
/// ```
///
/// ```compile_fail
/// # use agentweave::{flow, trajectory};
/// # flow! { Desk: dyn triage => [dyn refund, dyn complaint] }
/// // refund may transfer to triage only: "in flow `Desk`, `refund` cannot transfer to
/// // `complaint` ... `refund` may transfer to: `triage`"
/// let _ = trajectory!(Desk: transfer refund -> complaint);
/// ```
#[macro_export]
macro_rules! trajectory {
    ($flow:path : $($steps:tt)*) => {{
        let __spec = $crate::__private::TrajectorySpec::<$flow>::__new(<$flow>::NAME);
        $crate::__trajectory_steps!(__spec, $flow; $($steps)*)
    }};
}

/// The steps of [`trajectory!`], one at a time. Not a public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __trajectory_steps {
    (@args) => { ::core::option::Option::None };
    (@args $($args:tt)+) => {
        ::core::option::Option::Some($crate::__private::expected::__serde_json::json!($($args)+))
    };
    // An agent as written: an identifier or a string (a name that is no identifier).
    (@written $agent:ident) => { ::core::stringify!($agent) };
    (@written $agent:literal) => { $agent };
    // The name of the agent written `$agent` (see `expected::agent_name`), checked first.
    (@name $flow:path, $agent:tt) => {{
        const _: () = $crate::__private::expected::check_agent(
            <$flow>::NAME,
            <$flow>::AGENTS,
            <$flow>::__LABELS,
            $crate::__trajectory_steps!(@written $agent),
        )
        .assert_passed();
        $crate::__trajectory_steps!(@resolve $flow, $agent)
    }};
    // The same, unchecked (a transfer's check covers both agents).
    (@resolve $flow:path, $agent:tt) => {{
        const __NAME: &str = $crate::__private::expected::agent_name(
            <$flow>::AGENTS,
            <$flow>::__LABELS,
            $crate::__trajectory_steps!(@written $agent),
        );
        __NAME
    }};
    (@agent $flow:path,) => { ::core::option::Option::None };
    (@agent $flow:path, $agent:tt) => {
        ::core::option::Option::Some($crate::__trajectory_steps!(@name $flow, $agent))
    };
    ($spec:ident, $flow:path; ) => { $spec };
    ($spec:ident, $flow:path; agent $agent:tt $(, $($rest:tt)*)?) => {{
        let $spec = $spec.__step($crate::__private::expected::ExpectedStep::Agent {
            agent: $crate::__trajectory_steps!(@name $flow, $agent),
        });
        $crate::__trajectory_steps!($spec, $flow; $($($rest)*)?)
    }};
    ($spec:ident, $flow:path; transfer $from:tt -> $to:tt $(, $($rest:tt)*)?) => {{
        const _: () = $crate::__private::expected::check_transfer(
            &$crate::__private::expected::FlowTransfers {
                flow: <$flow>::NAME,
                agents: <$flow>::AGENTS,
                labels: <$flow>::__LABELS,
                targets: <$flow>::__TRAJECTORY_TARGETS,
                typed: <$flow>::__TRAJECTORY_TYPED,
                declared: <$flow>::__TRAJECTORY_DECLARED,
            },
            $crate::__trajectory_steps!(@written $from),
            $crate::__trajectory_steps!(@written $to),
        )
        .assert_passed();
        let $spec = $spec.__step($crate::__private::expected::ExpectedStep::Transfer {
            from: $crate::__trajectory_steps!(@resolve $flow, $from),
            to: $crate::__trajectory_steps!(@resolve $flow, $to),
        });
        $crate::__trajectory_steps!($spec, $flow; $($($rest)*)?)
    }};
    ($spec:ident, $flow:path; tool $tool:ident $(($($args:tt)*))? $(by $agent:tt)? $(, $($rest:tt)*)?) => {{
        let $spec = $spec.__step($crate::__private::expected::ExpectedStep::Tool {
            tool: ::core::convert::From::from(::core::stringify!($tool)),
            args: $crate::__trajectory_steps!(@args $($($args)*)?),
            agent: $crate::__trajectory_steps!(@agent $flow, $($agent)?),
        });
        $crate::__trajectory_steps!($spec, $flow; $($($rest)*)?)
    }};
}
