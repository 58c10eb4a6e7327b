//! What the tests that run worker processes share: stores named by a string, log files that
//! several processes append to, and a barrier.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use flow_runtime::{FileStore, FlowAgent, Runner};

/// A runner of `agent` whose threads and checkpoints live in `backend`: `file:DIR`,
/// `sqlite:PATH` (feature `sqlite`) or `postgres:URL` (feature `postgres`).
pub async fn runner_on(backend: &str, agent: FlowAgent) -> Runner {
    let (kind, at) = backend.split_once(':').expect("KIND:WHERE");
    let runner = Runner::new(agent);
    match kind {
        "file" => runner.stores(FileStore::new(at).unwrap()),
        #[cfg(feature = "sqlite")]
        "sqlite" => runner.stores(flow_runtime::store::SqliteStore::open(at).await.unwrap()),
        #[cfg(feature = "postgres")]
        "postgres" => runner.stores(
            flow_runtime::store::PostgresStore::connect(at)
                .await
                .unwrap(),
        ),
        other => panic!("unknown backend {other}"),
    }
}

/// Appends one line to `path` (one `write` on a file opened for appending: lines of
/// concurrent processes never mix).
pub fn append(path: &Path, line: &str) {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(format!("{line}\n").as_bytes()).unwrap();
}

/// The lines of `path` (none if it does not exist).
pub fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Waits until `n` workers (numbered from 0; this one is `me`) have reached barrier `name`
/// in the directory `work`.
pub fn barrier(work: &Path, name: &str, me: usize, n: usize) {
    std::fs::write(work.join(format!("{name}.{me}")), b"").unwrap();
    while (0..n).any(|w| !work.join(format!("{name}.{w}")).exists()) {
        std::thread::sleep(Duration::from_millis(1));
    }
}
