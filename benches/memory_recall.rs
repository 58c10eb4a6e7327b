//! W13: long-term memory (issue 42): recall latency and store size for 10,000 items per
//! tenant, by full text and by meaning (the deterministic `HashEmbedder`, 256 dimensions), on
//! SQLite and, when `AGENTFLOW_PG_URL` names a server (feature `postgres`), on PostgreSQL;
//! the in-memory store as a reference. Figures in BENCHMARKS.md.
//!
//! ```text
//! cargo bench --bench memory_recall
//! AGENTFLOW_PG_URL=postgres://... cargo bench --features postgres --bench memory_recall
//! ```
//!
//! Two tenants of `W13_ITEMS` items each (10,000 by default) are written through
//! `Memory::put`, one write a transaction (the load time is printed); each item's text is 12
//! words drawn from a vocabulary of 1,000 made-up words with a skewed (Zipf-like) frequency.
//! A recall is one `Memory::search` of a three-word query in one tenant's user, five hits.
//! The store's size is printed after the load (`size_bytes`: SQLite's `dbstat` pages of the
//! memory tables, their indexes and the FTS5 index; PostgreSQL's `pg_total_relation_size` of
//! the items table, its indexes and TOAST).
//!
//! `w13_turn` measures what a `MemoryRecall` adds to a turn (see `turn_cost`).

use std::sync::Arc;
use std::time::Instant;

use agentweave::memory::{
    HashEmbedder, ItemKey, Memory, MemoryStore, Namespace, Partition, PutItem, Scope, SearchMode,
    SearchQuery, SqliteMemoryStore, Tenant, TransientMemoryStore,
};
use criterion::{criterion_group, criterion_main, Criterion};

const DIMENSIONS: usize = 256;

fn items_per_tenant() -> usize {
    std::env::var("W13_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// A made-up word: two or three syllables from a fixed table.
fn word(i: usize) -> String {
    const SYL: [&str; 16] = [
        "ka", "lo", "mi", "ne", "pu", "ra", "si", "to", "ve", "zu", "ba", "de", "fo", "gi", "ho",
        "ju",
    ];
    let mut w = String::new();
    let mut n = i + 16;
    while n > 0 {
        w.push_str(SYL[n % 16]);
        n /= 16;
    }
    w
}

/// A deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A word index in 0..1000, small ones far more often (the square of a uniform draw).
    fn zipfish(&mut self) -> usize {
        let u = (self.next() % 10_000) as f64 / 10_000.0;
        (u * u * 1000.0) as usize
    }
}

fn text(rng: &mut Rng) -> String {
    (0..12)
        .map(|_| word(rng.zipfish()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn partition(tenant: &str) -> Partition {
    Partition::new(Tenant::new(tenant).unwrap(), Scope::user("alice").unwrap())
}

/// Writes `n` items into each of two tenants; returns the seconds it took.
async fn load(memory: &Memory, n: usize) -> f64 {
    let started = Instant::now();
    let namespaces = [
        Namespace::parse("facts").unwrap(),
        Namespace::parse("facts/devices").unwrap(),
        Namespace::parse("notes").unwrap(),
    ];
    for tenant in ["acme", "globex"] {
        let at = partition(tenant);
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ tenant.len() as u64);
        for i in 0..n {
            let text = text(&mut rng);
            let put = PutItem::new(serde_json::json!({ "fact": text, "n": i })).text(text);
            let key = ItemKey::new(format!("item-{i}")).unwrap();
            memory
                .put(&at, &namespaces[i % 3], &key, put)
                .await
                .expect("put");
        }
    }
    started.elapsed().as_secs_f64()
}

fn bench_store(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    name: &str,
    store: Arc<dyn MemoryStore>,
    size: impl Fn() -> Option<u64>,
) {
    let n = items_per_tenant();
    let memory = Memory::from_arc(store).with_embedder(HashEmbedder::new(DIMENSIONS));
    let seconds = rt.block_on(load(&memory, n));
    let total = 2 * n;
    println!(
        "W13 {name}: loaded {total} items (2 tenants x {n}) in {seconds:.1} s ({:.0} puts/s)",
        total as f64 / seconds
    );
    if let Some(bytes) = size() {
        println!(
            "W13 {name}: store size {:.1} MiB, {:.0} bytes per item (text, value, {DIMENSIONS}-dim vector, indexes)",
            bytes as f64 / (1024.0 * 1024.0),
            bytes as f64 / total as f64
        );
    }
    let at = partition("acme");
    let query = format!("{} {} {}", word(3), word(40), word(200));
    let mut group = c.benchmark_group(format!("w13_recall/{name}"));
    group.sample_size(20);
    for (mode_name, mode) in [("text", SearchMode::Text), ("meaning", SearchMode::Meaning)] {
        let hits = rt
            .block_on(memory.search(&at, SearchQuery::new(&query).limit(5).mode(mode)))
            .unwrap();
        assert_eq!(
            hits.len(),
            5,
            "{name} {mode_name}: a recall finds five items"
        );
        group.bench_function(mode_name, |b| {
            b.iter(|| {
                rt.block_on(memory.search(&at, SearchQuery::new(&query).limit(5).mode(mode)))
                    .unwrap()
            })
        });
    }
    group.finish();
}

fn w13(c: &mut Criterion) {
    let rt = runtime();
    bench_store(
        c,
        &rt,
        "in-memory",
        Arc::new(TransientMemoryStore::new()),
        || None,
    );

    let dir = std::env::temp_dir().join(format!("agentflow-w13-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let sqlite = rt
        .block_on(SqliteMemoryStore::open(dir.join("memory.db")))
        .expect("sqlite");
    let sized = sqlite.clone();
    bench_store(c, &rt, "sqlite", Arc::new(sqlite), || {
        rt.block_on(sized.size_bytes()).ok()
    });
    let _ = std::fs::remove_dir_all(&dir);

    #[cfg(feature = "postgres")]
    postgres(c, &rt);
}

#[cfg(feature = "postgres")]
fn postgres(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    use agentweave::memory::PostgresMemoryStore;
    let Some(url) = rt.block_on(agentweave::testing::fresh_postgres_database("w13")) else {
        return;
    };
    let store = rt
        .block_on(PostgresMemoryStore::connect(&url))
        .expect("postgres");
    let sized = store.clone();
    bench_store(c, rt, "postgres", Arc::new(store), || {
        rt.block_on(sized.size_bytes()).ok()
    });
}

/// The cost recall adds to a turn: one turn of a `ChatModelAgent` (a scripted model, no
/// network) without recall, and with a `MemoryRecall` (full text, one user scope, 300 tokens)
/// over `W13_TURN_ITEMS` items per tenant (1,000 by default) in memory and on SQLite. The
/// user's message is the query (three words of the vocabulary).
fn turn_cost(c: &mut Criterion) {
    use agentweave::memory::MemoryRecall;
    use agentweave::model::ScriptedModel;
    use agentweave::{ChatModelAgent, FlowAgent, Runner};
    use futures::StreamExt;

    let rt = runtime();
    let n = std::env::var("W13_TURN_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    let message = format!("{} {} {}", word(3), word(40), word(200));
    let runner = |recall: Option<MemoryRecall>| {
        let model = ScriptedModel::rules().otherwise("ok").keep_requests(false);
        let mut agent = ChatModelAgent::builder("desk", model).instruction("You are a desk.");
        if let Some(recall) = recall {
            agent = agent.middleware(recall);
        }
        Runner::new(FlowAgent::new(agent.build().unwrap()))
    };
    let recall = |memory: Memory| {
        MemoryRecall::new(
            memory,
            Tenant::new("acme").unwrap(),
            [Scope::user("alice").unwrap()],
            300,
        )
        .mode(SearchMode::Text)
    };
    let dir = std::env::temp_dir().join(format!("agentflow-w13-turn-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let sqlite = rt
        .block_on(SqliteMemoryStore::open(dir.join("memory.db")))
        .expect("sqlite");
    let in_memory = Memory::new(TransientMemoryStore::new());
    let on_sqlite = Memory::new(sqlite);
    for memory in [&in_memory, &on_sqlite] {
        rt.block_on(load(memory, n));
    }
    let mut group = c.benchmark_group("w13_turn");
    group.sample_size(30);
    for (name, runner) in [
        ("no_recall", runner(None)),
        ("recall_in_memory", runner(Some(recall(in_memory.clone())))),
        ("recall_sqlite", runner(Some(recall(on_sqlite.clone())))),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| rt.block_on(runner.run(message.as_str()).collect::<Vec<_>>()))
        });
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, w13, turn_cost);
criterion_main!(benches);
