//! What a model cannot make the framework do: transfer outside its legal targets (a node deeper
//! in the tree, an agent of another tree, a parent it is barred from), call a tool it was not
//! given (even one another agent of the tree has), read another run's session values, or reach
//! a tool's code with arguments that do not fit the tool's typed schema.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::RunRequest;
use agentweave_runtime::{
    set_sub_agents, tool_fn, tool_fn_with_context, AgentEvent, ChatModelAgent, FlowAgent, FnAgent,
    IllegalTransfer, Message, Runner, Session, Tool, ToolContext, ToolError,
};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

async fn contents(runner: &Runner, session: &Arc<Session>) -> Vec<String> {
    let events: Vec<AgentEvent> = runner
        .run(RunRequest::new([Message::user("go")]).session(Arc::clone(session)))
        .collect()
        .await;
    events
        .iter()
        .map(|e| match (&e.error, e.message_output()) {
            (Some(err), _) => format!("{} error: {err}", e.run_path()),
            (None, Some(m)) => format!("{} {}: {}", e.run_path(), m.role, m.content),
            (None, None) => format!("{} {:?}", e.run_path(), e.action),
        })
        .collect()
}

/// root -> mid -> deep; `root` answers with `root_steps`; `mid` and `deep` must never be asked
/// unless a legal transfer reaches them.
fn tree(root_steps: Vec<ScriptStep>, policy: IllegalTransfer) -> (FlowAgent, ScriptedModel) {
    let deep_model = ScriptedModel::new(["deep speaking"]);
    let root = ChatModelAgent::builder("root", ScriptedModel::new(root_steps))
        .on_illegal_transfer(policy)
        .build()
        .unwrap();
    let mid = ChatModelAgent::builder("mid", ScriptedModel::new(["mid speaking"]))
        .build()
        .unwrap();
    let deep = ChatModelAgent::builder("deep", deep_model.clone())
        .build()
        .unwrap();
    let mid = set_sub_agents(FlowAgent::new(mid), [FlowAgent::new(deep)]).unwrap();
    (
        set_sub_agents(FlowAgent::new(root), [mid]).unwrap(),
        deep_model,
    )
}

#[tokio::test]
async fn a_model_cannot_transfer_past_its_neighbours_or_out_of_the_tree() {
    for target in ["deep", "stranger"] {
        // Answered to the model, which gets another turn.
        let (root, deep_model) = tree(
            vec![ScriptStep::transfer(target), ScriptStep::text("staying")],
            IllegalTransfer::ReturnToModel,
        );
        let shown = contents(&Runner::new(root), &Session::new()).await;
        assert_eq!(
            shown,
            [
                "root assistant: ".to_owned(),
                format!(
                    "root tool: error: cannot transfer to agent '{target}': it is not one of the \
                     agents you can transfer to (mid); call transfer_to_agent again with one of \
                     them"
                ),
                "root assistant: staying".to_owned(),
            ]
        );
        assert_eq!(deep_model.calls(), 0);

        // Even when the agent passes the transfer on, the flow refuses it.
        let (root, deep_model) = tree(vec![ScriptStep::transfer(target)], IllegalTransfer::FailRun);
        let shown = contents(&Runner::new(root), &Session::new()).await;
        assert_eq!(
            shown.last().unwrap(),
            &format!(
                "root error: transfer failed: agent '{target}' not found when transferring from \
                 'root'"
            )
        );
        assert_eq!(shown.len(), 3);
        assert_eq!(deep_model.calls(), 0);
    }
}

#[tokio::test]
async fn a_model_cannot_transfer_to_a_parent_it_is_barred_from() {
    // The barred child's model is not given the transfer tool at all ...
    let root_model = ScriptedModel::new([ScriptStep::transfer("child")]);
    let root = ChatModelAgent::builder("root", root_model.clone())
        .build()
        .unwrap();
    let child = ChatModelAgent::builder(
        "child",
        ScriptedModel::new([ScriptStep::transfer("root"), ScriptStep::text("staying")]),
    )
    .build()
    .unwrap();
    let tree = set_sub_agents(
        FlowAgent::new(root),
        [FlowAgent::new(child).disallow_transfer_to_parent(true)],
    )
    .unwrap();
    let shown = contents(&Runner::new(tree), &Session::new()).await;
    assert_eq!(
        shown[2..],
        [
            "root/child assistant: ",
            "root/child tool: error: unknown tool 'transfer_to_agent'; this agent has no tools: \
             answer without calling any",
            "root/child assistant: staying",
        ]
    );
    assert_eq!(root_model.calls(), 1);

    // ... and an agent that transfers anyway is refused by the flow.
    let root_model = ScriptedModel::new([ScriptStep::transfer("child")]);
    let root = ChatModelAgent::builder("root", root_model.clone())
        .build()
        .unwrap();
    let child = FnAgent::new("child", |cx, _| async move {
        cx.transfer("root");
        Ok(())
    });
    let tree = set_sub_agents(
        FlowAgent::new(root),
        [FlowAgent::new(child).disallow_transfer_to_parent(true)],
    )
    .unwrap();
    let shown = contents(&Runner::new(tree), &Session::new()).await;
    assert_eq!(
        shown.last().unwrap(),
        "root/child error: transfer refused: agent 'child' may not transfer to its parent \
         'root' (it was built with disallow_transfer_to_parent)"
    );
    assert_eq!(root_model.calls(), 1);
}

#[tokio::test]
async fn a_model_cannot_call_a_tool_it_was_not_given() {
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ran);
    let refund_tool = tool_fn("issue_refund", "Refunds.", move |_: serde_json::Value| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, ToolError>("refunded") }
    });
    // `triage` has no tools; `refund` (its child) has issue_refund.
    let triage = ChatModelAgent::builder(
        "triage",
        ScriptedModel::new([
            ScriptStep::tool_call("issue_refund", json!({})),
            ScriptStep::text("I cannot do that"),
        ]),
    )
    .build()
    .unwrap();
    let refund = ChatModelAgent::builder("refund", ScriptedModel::new(["x"]))
        .tool(refund_tool)
        .build()
        .unwrap();
    let tree = set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refund)]).unwrap();
    let shown = contents(&Runner::new(tree), &Session::new()).await;
    assert_eq!(
        shown,
        [
            "triage assistant: ",
            "triage tool: error: unknown tool 'issue_refund'; the available tools are: \
             transfer_to_agent; call one of them or answer without tools",
            "triage assistant: I cannot do that",
        ]
    );
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_tool_sees_only_its_own_run_session() {
    // The tool reads a key the model names; another run's value under it is never visible.
    #[derive(Deserialize, JsonSchema)]
    struct Read {
        key: String,
    }
    let read = tool_fn_with_context(
        "read",
        "Reads a session value.",
        |cx: ToolContext, r: Read| async move {
            Ok::<_, ToolError>(format!(
                "{:?}",
                cx.run_context().session().raw_value(&r.key)
            ))
        },
    );
    let model = ScriptedModel::rules()
        .after_tool("read", "done")
        .otherwise(ScriptStep::tool_call("read", json!({"key": "secret"})));
    let agent = ChatModelAgent::builder("bot", model)
        .tool(read)
        .build()
        .unwrap();
    let runner = Runner::new(FlowAgent::new(agent));
    let alice = Session::new();
    alice.set_value("secret", "alice's").unwrap();
    let bob = Session::new();
    let (a, b) = futures::join!(contents(&runner, &alice), contents(&runner, &bob));
    assert_eq!(a[1], "bot tool: Some(String(\"alice's\"))");
    assert_eq!(b[1], "bot tool: None");
    assert_eq!(bob.values(), HashMap::new());
}

/// Arguments of `transfer_money`: unknown fields are refused, as the schema says.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Transfer {
    /// Cents, at most what fits in 32 bits.
    amount_cents: u32,
    /// The account.
    to: String,
}

#[tokio::test]
async fn arguments_that_do_not_fit_the_schema_never_reach_the_tool() {
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ran);
    let tool = tool_fn("transfer_money", "Moves money.", move |t: Transfer| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, ToolError>(format!("{} to {}", t.amount_cents, t.to)) }
    });
    assert_eq!(tool.parameters()["additionalProperties"], json!(false));
    let cx = ToolContext::new(
        agentweave_runtime::RunContext::new_run(Session::new(), [], false, "bank"),
        "c1",
    );
    for bad in [
        r#"{"amount_cents":-5,"to":"x"}"#,
        r#"{"amount_cents":4294967296,"to":"x"}"#,
        r#"{"amount_cents":5}"#,
        r#"{"amount_cents":5,"to":"x","admin":true}"#,
        r#"{"amount_cents":"5","to":"x"}"#,
        r#"[5,"x"]"#,
    ] {
        let e = tool.call(&cx, bad).await.unwrap_err();
        assert!(
            matches!(e, ToolError::InvalidArguments { .. }),
            "{bad}: {e}"
        );
    }
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(
        tool.call(&cx, r#"{"amount_cents":5,"to":"x"}"#)
            .await
            .unwrap(),
        "5 to x"
    );
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}
