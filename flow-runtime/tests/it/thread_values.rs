//! A thread's values: session values carry across the turns of a thread (the framework's own
//! `agentflow.` keys do not), `ThreadHandle::update_state` appends a values step the next turn
//! starts with, history lists it, forks carry it, a resumed turn inherits it; bad input is a
//! typed error with nothing written. On InMemory and File.

use agentweave_runtime::TurnRequest;
use agentweave_runtime::{
    FileStore, FlowAgent, FnAgent, ForkEnd, InMemoryStore, Message, Runner, ThreadStepKind,
    TimeTravelError,
};
use serde_json::{json, Map, Value};

/// "visit N; tier T": counts its visits in the thread's values, reads the tier; "approve"
/// asks for an answer first, and says the tier it resumed with.
fn counter() -> FlowAgent {
    let agent = FnAgent::new("counter", |cx, input| async move {
        let visits: u64 = cx.session().value("visits").unwrap().unwrap_or(0);
        cx.session().set_value("visits", visits + 1).unwrap();
        // A framework key belongs to this run only.
        cx.session().set_value("agentflow.scratch", 1).unwrap();
        let said = input.messages.last().map(|m| m.content.clone());
        if said.as_deref() == Some("approve") {
            cx.interrupt(json!("approve?"));
            return Ok(());
        }
        let tier: String = cx.session().value("tier").unwrap().unwrap_or_default();
        cx.say(format!("visit {}; tier {tier}", visits + 1));
        Ok(())
    })
    .on_resume(|cx, _input, _info| async move {
        let tier: String = cx.session().value("tier").unwrap().unwrap_or_default();
        cx.say(format!("approved; tier {tier}"));
        Ok(())
    });
    FlowAgent::new(agent)
}

fn values(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

async fn say(runner: &Runner, thread: &str, text: &str) -> String {
    let turn = runner
        .turn(TurnRequest::new(thread, Message::user(text)))
        .await
        .unwrap();
    turn.final_output().await.unwrap().unwrap().content
}

async fn each_store(name: &str, test: impl AsyncFn(Runner)) {
    test(
        Runner::builder(counter())
            .stores(InMemoryStore::new())
            .build(),
    )
    .await;
    let dir = std::env::temp_dir().join(format!("agentflow-values-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let file = FileStore::new(&dir).unwrap();
    test(Runner::builder(counter()).stores(file).build()).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn values_carry_across_turns_and_update_state_changes_them() {
    each_store("carry", async |runner: Runner| {
        assert_eq!(say(&runner, "t", "hi").await, "visit 1; tier ");
        assert_eq!(say(&runner, "t", "hi").await, "visit 2; tier ");
        // The framework's own keys stay in their run.
        assert_eq!(
            runner.thread("t").values().await.unwrap(),
            values(json!({"visits": 2}))
        );

        let state = runner
            .thread("t")
            .update_state(values(json!({"visits": 10, "tier": "gold"})))
            .await
            .unwrap();
        assert_eq!(state.values, values(json!({"tier": "gold", "visits": 10})));
        assert_eq!(state.version, 3);
        let history = runner.thread("t").history().await.unwrap();
        let last = history.last().unwrap();
        assert_eq!(last.kind, ThreadStepKind::Values);
        assert_eq!(last.kind.label(), "values");
        assert_eq!(last.turn, 1, "a values step belongs to the turn before it");

        // The next turn starts with the updated values, at the agent that answered.
        let turn = runner
            .turn(TurnRequest::new("t", Message::user("hi")))
            .await
            .unwrap();
        assert_eq!(turn.number(), 2);
        assert_eq!(
            turn.final_output().await.unwrap().unwrap().content,
            "visit 11; tier gold"
        );
        // A null removes a key.
        let state = runner
            .thread("t")
            .update_state(values(json!({"tier": null})))
            .await
            .unwrap();
        assert_eq!(state.values, values(json!({"visits": 11})));
        assert_eq!(say(&runner, "t", "hi").await, "visit 12; tier ");
    })
    .await;
}

#[tokio::test]
async fn forks_carry_the_values_of_their_step() {
    each_store("forks", async |runner: Runner| {
        say(&runner, "t", "hi").await;
        runner
            .thread("t")
            .update_state(values(json!({"tier": "gold"})))
            .await
            .unwrap();
        say(&runner, "t", "hi").await;
        let history = runner.thread("t").history().await.unwrap();
        let update = history
            .iter()
            .find(|s| s.kind == ThreadStepKind::Values)
            .unwrap();

        // A fork at the update has its values; one before it has not.
        let fork = runner
            .thread("t")
            .fork(update.id, "at-update")
            .await
            .unwrap();
        assert_eq!(fork.end, ForkEnd::TurnEnd);
        assert_eq!(
            runner.thread("at-update").values().await.unwrap(),
            values(json!({"tier": "gold", "visits": 1}))
        );
        assert_eq!(say(&runner, "at-update", "hi").await, "visit 2; tier gold");
        runner
            .thread("t")
            .fork(update.id - 1, "before")
            .await
            .unwrap();
        assert_eq!(
            runner.thread("before").values().await.unwrap(),
            values(json!({"visits": 1}))
        );
        assert!(matches!(
            runner.thread("t").run_from(update.id, "rerun", []).await,
            Err(TimeTravelError::NothingToRerun { .. })
        ));

        // A fork inside the turn after the update goes on with the values before that turn.
        let input = history
            .iter()
            .rfind(|s| s.kind == ThreadStepKind::Input)
            .unwrap();
        let fork = runner.thread("t").fork(input.id, "inside").await.unwrap();
        assert_eq!(fork.end, ForkEnd::ForkPoint);
        let turn = runner
            .turn(TurnRequest::resume("inside", []))
            .await
            .unwrap();
        assert_eq!(
            turn.final_output().await.unwrap().unwrap().content,
            "visit 2; tier gold"
        );
        // The original is untouched.
        assert_eq!(
            runner.thread("t").values().await.unwrap(),
            values(json!({"tier": "gold", "visits": 2}))
        );
        assert_eq!(runner.thread("t").history().await.unwrap(), history);
    })
    .await;
}

#[tokio::test]
async fn a_resumed_turn_inherits_the_values_and_bad_updates_write_nothing() {
    each_store("resumed", async |runner: Runner| {
        say(&runner, "t", "hi").await;
        runner
            .thread("t")
            .update_state(values(json!({"tier": "silver"})))
            .await
            .unwrap();
        let turn = runner
            .turn(TurnRequest::new("t", Message::user("approve")))
            .await
            .unwrap();
        turn.finish().await;
        let records = runner.thread("t").records().await.unwrap();

        // A paused turn keeps the values it stopped with.
        let refused = runner
            .thread("t")
            .update_state(values(json!({"tier": "gold"})))
            .await;
        assert!(
            matches!(
                refused,
                Err(TimeTravelError::AwaitingResume { turn: 1, .. })
            ),
            "{refused:?}"
        );
        let refused = runner
            .thread("t")
            .update_state(values(json!({"agentflow.usage": 1})))
            .await
            .unwrap_err();
        assert!(matches!(refused, TimeTravelError::ReservedKey { .. }));
        assert!(refused.to_string().contains("agentflow.usage"), "{refused}");
        assert!(matches!(
            runner.thread("nobody").update_state(Map::new()).await,
            Err(TimeTravelError::UnknownThread { .. })
        ));
        assert!(matches!(
            runner.thread("../x").update_state(Map::new()).await,
            Err(TimeTravelError::Thread(_))
        ));
        assert_eq!(runner.thread("t").records().await.unwrap(), records);

        let agentweave_runtime::store::RecordEnd::Interrupted { interrupts, .. } =
            &records.last().unwrap().end
        else {
            panic!("the turn waits for its answer");
        };
        let answer = runner
            .turn(TurnRequest::resume(
                "t",
                [(interrupts[0].id.clone(), json!(true))],
            ))
            .await
            .unwrap();
        assert_eq!(
            answer.final_output().await.unwrap().unwrap().content,
            "approved; tier silver"
        );
        assert_eq!(
            runner.thread("t").values().await.unwrap(),
            values(json!({"tier": "silver", "visits": 2}))
        );
    })
    .await;
}
