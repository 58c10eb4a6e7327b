// Its own test binary, not a module of tests/it: a counting `#[global_allocator]`, which counts
// every allocation of the process: other tests' allocations would count in its measures.
//! Runs outlive their connections without leaking: 200 cycles of a background run whose reader
//! disconnects after its first events and reconnects with `Last-Event-ID`. Each cycle's
//! reader gets every event exactly once, in order; after the cycles no task of the server is
//! left behind and the heap has not grown (a counting allocator measures it: no timing).
//!
//! The server runs in this process without the suite's recording proxy (which keeps every
//! byte sent), so the allocator sees the server's own memory.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use agentweave_runtime::{InMemoryStore, RunRetention};
use agentweave_server::{AppState, Auth};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{json, Value};

/// Counts the bytes the process holds on the heap.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const TOKEN: &str = "run-cycles-token-0123456789";

/// One SSE event: (id, name, data).
type Frame = (u64, String, Value);

async fn read(
    client: &reqwest::Client,
    url: &str,
    last: Option<u64>,
    take: Option<usize>,
) -> Vec<Frame> {
    let mut request = client.get(url).bearer_auth(TOKEN);
    if let Some(last) = last {
        request = request.header("last-event-id", last.to_string());
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    let mut events = response.bytes_stream().eventsource();
    let mut out = Vec::new();
    while let Some(event) = events.next().await {
        let event = event.unwrap();
        out.push((
            event.id.parse().unwrap(),
            event.event,
            serde_json::from_str(&event.data).unwrap(),
        ));
        if take == Some(out.len()) {
            break;
        }
    }
    out
}

/// The frames without what differs between runs of the same message.
fn comparable(frames: &[Frame]) -> Vec<(String, Value)> {
    frames
        .iter()
        .map(|(_, name, data)| {
            let mut data = data.clone();
            if let Some(o) = data.as_object_mut() {
                o.remove("run_id");
                o.remove("thread");
            }
            (name.clone(), data)
        })
        .collect()
}

/// Starts a background run on `thread`, reads its first `first` events on one connection,
/// drops it, reads the rest on another from the last id seen; deletes the thread after.
async fn cycle(client: &reqwest::Client, base: &str, thread: &str, first: usize) -> Vec<Frame> {
    let started: Value = client
        .post(format!("{base}/v1/flows/desk/threads/{thread}/runs"))
        .bearer_auth(TOKEN)
        .json(&json!({"message": "my kettle arrived broken"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let run = started["run_id"].as_str().unwrap().to_owned();
    let url = format!("{base}/v1/flows/desk/threads/{thread}/runs/{run}/stream");
    let mut seen = read(client, &url, None, Some(first)).await;
    let last = seen.last().map(|f| f.0);
    seen.extend(read(client, &url, last, None).await);
    let deleted = client
        .delete(format!("{base}/v1/flows/desk/threads/{thread}"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_disconnect_reconnect_cycles_leave_no_task_and_no_growth() {
    let state = AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::bearer(TOKEN))
        // Ended runs are forgotten beyond the last four.
        .runners(|_, runner| {
            runner.run_retention(RunRetention {
                keep_events_for: Duration::from_secs(3600),
                max_events: 10_000,
                max_ended_runs: 4,
            })
        })
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        agentweave_server::serve_until(listener, state, async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    // No idle connections kept: every request's connection (and its tasks on both sides)
    // ends with the request, so the task count measures the server's runs alone.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();

    // The undisturbed run every cycle must match.
    let reference = cycle(&client, &base, "calm", usize::MAX).await;
    assert_eq!(reference.first().unwrap().1, "turn");
    assert_eq!(reference.last().unwrap().1, "done");
    let events = reference.len();
    assert!(events >= 4, "{reference:?}");

    let metrics = tokio::runtime::Handle::current().metrics();
    let mut warm = (0, 0);
    for i in 0..250 {
        // Disconnect after 1 to events-1 events, in turn.
        let first = 1 + i % (events - 1);
        let seen = cycle(&client, &base, "jumpy", first).await;
        let ids: Vec<u64> = seen.iter().map(|f| f.0).collect();
        assert_eq!(ids, (1..=events as u64).collect::<Vec<_>>(), "cycle {i}");
        assert_eq!(comparable(&seen), comparable(&reference), "cycle {i}");
        if i == 49 {
            warm = (
                settled_tasks(&metrics, 0).await,
                LIVE.load(Ordering::Relaxed),
            );
        }
    }
    let tasks = settled_tasks(&metrics, warm.0).await;
    let live = LIVE.load(Ordering::Relaxed);
    let growth = live - warm.1;
    println!(
        "after 50 cycles: {} tasks, {} bytes; after 250: {tasks} tasks, {live} bytes ({growth:+})",
        warm.0, warm.1
    );
    // A task left behind per cycle would leave 200; a closing connection's task may still be
    // counted once.
    assert!(
        tasks <= warm.0 + 2,
        "tasks left behind: {} after 50 cycles, {tasks} after 250",
        warm.0
    );
    // 200 cycles of about 10 events each: a leak of one event or one run per cycle would be
    // far more than this.
    assert!(
        growth < 256 * 1024,
        "the heap grew by {growth} bytes over 200 cycles"
    );

    let _ = stop.send(());
    server.await.unwrap();
}

/// The runtime's live tasks once the ended runs' tasks and closed connections have finished:
/// waits (bounded, nothing timed is asserted) until the count is at most `target` or has not
/// changed for a while.
async fn settled_tasks(metrics: &tokio::runtime::RuntimeMetrics, target: usize) -> usize {
    let mut last = metrics.num_alive_tasks();
    let mut still = 0;
    for _ in 0..500 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let now = metrics.num_alive_tasks();
        if now <= target {
            return now;
        }
        still = if now == last { still + 1 } else { 0 };
        if still >= 50 {
            break;
        }
        last = now;
    }
    last
}
