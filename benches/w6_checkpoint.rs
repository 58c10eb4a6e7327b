//! W6: checkpoint save + resume round trip with the durable store (`FileStore`).
//!
//! A W1-shaped tree whose `refund` agent interrupts: each iteration runs it checkpointed (the
//! Runner encodes the session and writes it atomically: temp file, fsync, rename, dir sync),
//! then resumes it from the store (read, checksum, decode, shape check, restore) to the end
//! (which writes the "resumed" record). H is the number of prior messages in the input.

use std::collections::HashMap;
use std::sync::Arc;

use agentflow::{
    set_sub_agents, FileStore, FlowAgent, FnAgent, Message, MessageRef, Runner, Session,
};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use futures::StreamExt;

fn desk() -> FlowAgent {
    let root = FnAgent::new("root", |cx, _| async move {
        cx.transfer("refund");
        Ok(())
    });
    let refund = FnAgent::new("refund", |cx, _| async move {
        cx.interrupt(serde_json::json!("approve?"));
        Ok(())
    })
    .on_resume(|cx, _, _| async move {
        cx.say("refunded");
        Ok(())
    });
    set_sub_agents(FlowAgent::new(root), [FlowAgent::new(refund)]).unwrap()
}

fn w6(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("agentflow-w6-{}", std::process::id()));
    let store = FileStore::new(&dir).unwrap();
    let runner = Runner::new(desk()).checkpoint_store(store);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("w6_checkpoint_round_trip");
    for h in [0usize, 1000] {
        let history: Vec<MessageRef> = (0..h)
            .map(|i| Arc::new(Message::user(format!("earlier message {i}"))))
            .chain([Arc::new(Message::user("refund please"))])
            .collect();
        let mut n = 0u64;
        group.bench_with_input(BenchmarkId::from_parameter(h), &history, |b, history| {
            b.iter(|| {
                n += 1;
                let id = format!("w6-{n}");
                rt.block_on(async {
                    let first: Vec<_> = runner
                        .run_checkpointed(&id, Session::new(), history.iter().cloned())
                        .collect()
                        .await;
                    assert!(first.last().unwrap().is_interrupt());
                    let done: Vec<_> = runner
                        .resume(&id, HashMap::new())
                        .await
                        .unwrap()
                        .collect()
                        .await;
                    assert_eq!(done.len(), 1);
                })
            })
        });
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, w6);
criterion_main!(benches);
