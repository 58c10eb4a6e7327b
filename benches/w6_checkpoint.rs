//! W6: checkpoint save + resume round trip on each store: `memory`, `file` (`FileStore`),
//! `sqlite` (`SqliteStore`, WAL, synchronous=FULL) and `postgres` (`PostgresStore`, when
//! `AGENTFLOW_PG_URL` names a server).
//!
//! A W1-shaped tree whose `refund` agent interrupts: each iteration runs it checkpointed (the
//! Runner encodes the session and saves it), then resumes it from the store (claim, checksum,
//! decode, shape check, restore) to the end (which completes the claim with the final record).
//! H is the number of prior messages in the input.

use std::sync::Arc;

use agentweave::store::CheckpointStore;
use agentweave::{
    message::MessageRef, set_sub_agents, store::FileStore, store::InMemoryStore, FlowAgent,
    FnAgent, Message, Runner,
};
use agentweave::{ResumeRequest, RunRequest};
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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = std::env::temp_dir().join(format!("agentflow-w6-{}", std::process::id()));
    let mut stores: Vec<(&str, Arc<dyn CheckpointStore>)> = vec![
        ("memory", Arc::new(InMemoryStore::new())),
        ("file", Arc::new(FileStore::new(dir.join("files")).unwrap())),
    ];
    #[cfg(feature = "sqlite")]
    stores.push((
        "sqlite",
        Arc::new(
            rt.block_on(agentweave::store::SqliteStore::open(dir.join("w6.db")))
                .unwrap(),
        ),
    ));
    #[cfg(feature = "postgres")]
    if let Ok(url) = std::env::var("AGENTFLOW_PG_URL") {
        let store = rt
            .block_on(agentweave::store::PostgresStore::connect(&url))
            .unwrap();
        stores.push(("postgres", Arc::new(store)));
    }
    let mut group = c.benchmark_group("w6_checkpoint_round_trip");
    let run = std::process::id();
    for (name, store) in stores {
        let runner = Runner::builder(desk())
            .shared_checkpoint_store(store)
            .build();
        for h in [0usize, 1000] {
            let history: Vec<MessageRef> = (0..h)
                .map(|i| Arc::new(Message::user(format!("earlier message {i}"))))
                .chain([Arc::new(Message::user("refund please"))])
                .collect();
            let mut n = 0u64;
            group.bench_with_input(BenchmarkId::new(name, h), &history, |b, history| {
                b.iter(|| {
                    n += 1;
                    let id = format!("w6-{run}-{name}-{h}-{n}");
                    rt.block_on(async {
                        let first: Vec<_> = runner
                            .run(RunRequest::new(history.iter().cloned()).checkpoint(&id))
                            .collect()
                            .await;
                        assert!(first.last().unwrap().is_interrupt());
                        let done: Vec<_> = runner
                            .resume(ResumeRequest::new(&id, []))
                            .await
                            .unwrap()
                            .collect()
                            .await;
                        assert_eq!(done.len(), 1);
                    })
                })
            });
        }
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, w6);
criterion_main!(benches);
