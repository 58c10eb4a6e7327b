//! What the tests that run worker processes share: stores named by a string, log files that
//! several processes append to, and a barrier.

use std::fs::OpenOptions;
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::RunnerBuilder;
use agentweave_runtime::{CheckpointStore, FileStore, FlowAgent, Runner};

/// A store named by a string (a worker process gets its store this way): `file:DIR`,
/// `sqlite:PATH` (feature `sqlite`) or `postgres:URL` (feature `postgres`).
pub enum NamedStore {
    File(FileStore),
    #[cfg(feature = "sqlite")]
    Sqlite(agentweave_runtime::store::SqliteStore),
    #[cfg(feature = "postgres")]
    Postgres(agentweave_runtime::store::PostgresStore),
}

impl NamedStore {
    /// Opens the store `backend` names.
    pub async fn open(backend: &str) -> Self {
        let (kind, at) = backend.split_once(':').expect("KIND:WHERE");
        match kind {
            "file" => NamedStore::File(FileStore::new(at).unwrap()),
            #[cfg(feature = "sqlite")]
            "sqlite" => NamedStore::Sqlite(
                agentweave_runtime::store::SqliteStore::open(at)
                    .await
                    .unwrap(),
            ),
            #[cfg(feature = "postgres")]
            "postgres" => NamedStore::Postgres(
                agentweave_runtime::store::PostgresStore::connect(at)
                    .await
                    .unwrap(),
            ),
            other => panic!("unknown backend {other}"),
        }
    }

    /// A runner of `agent` whose threads and checkpoints live in this store.
    pub fn runner(self, agent: FlowAgent) -> Runner {
        let runner = Runner::new(agent);
        match self {
            NamedStore::File(store) => RunnerBuilder::from(runner).stores(store).build(),
            #[cfg(feature = "sqlite")]
            NamedStore::Sqlite(store) => RunnerBuilder::from(runner).stores(store).build(),
            #[cfg(feature = "postgres")]
            NamedStore::Postgres(store) => RunnerBuilder::from(runner).stores(store).build(),
        }
    }

    /// A runner of `agent` whose threads, checkpoints and run journals live in this store.
    pub fn journaled_runner(self, agent: FlowAgent) -> Runner {
        let runner = Runner::new(agent);
        match self {
            NamedStore::File(store) => RunnerBuilder::from(runner)
                .stores(store.clone())
                .journal_store(store)
                .build(),
            #[cfg(feature = "sqlite")]
            NamedStore::Sqlite(store) => RunnerBuilder::from(runner)
                .stores(store.clone())
                .journal_store(store)
                .build(),
            #[cfg(feature = "postgres")]
            NamedStore::Postgres(store) => RunnerBuilder::from(runner)
                .stores(store.clone())
                .journal_store(store)
                .build(),
        }
    }

    /// This store as a checkpoint store.
    pub fn checkpoints(self) -> Arc<dyn CheckpointStore> {
        match self {
            NamedStore::File(store) => Arc::new(store),
            #[cfg(feature = "sqlite")]
            NamedStore::Sqlite(store) => Arc::new(store),
            #[cfg(feature = "postgres")]
            NamedStore::Postgres(store) => Arc::new(store),
        }
    }
}

/// A runner of `agent` whose threads and checkpoints live in `backend` (see [`NamedStore`]).
pub async fn runner_on(backend: &str, agent: FlowAgent) -> Runner {
    NamedStore::open(backend).await.runner(agent)
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

const ROLE: &str = "AGENTFLOW_TEST_WORKER";
const BACKEND: &str = "AGENTFLOW_TEST_BACKEND";
const WORK_DIR: &str = "AGENTFLOW_TEST_WORK_DIR";
const WORKER: &str = "AGENTFLOW_TEST_WORKER_NO";

/// What a worker process was started to do (see [`Workers::start`]).
pub struct Orders {
    /// The part it plays.
    pub role: String,
    /// Its store (see [`runner_on`]).
    pub backend: String,
    /// The test's work directory.
    pub work: PathBuf,
    /// Its number among the workers.
    pub me: usize,
}

/// This process's orders if it is a worker; `None` in an ordinary test run.
pub fn worker_orders() -> Option<Orders> {
    let role = std::env::var(ROLE).ok()?;
    Some(Orders {
        role,
        backend: std::env::var(BACKEND).unwrap(),
        work: PathBuf::from(std::env::var(WORK_DIR).unwrap()),
        me: std::env::var(WORKER).unwrap().parse().unwrap(),
    })
}

/// The worker processes of one test, started with [`Workers::start`]. Waiting for them fails
/// the test as soon as one of them fails (a test never waits for a dead worker), and dropping
/// them kills those still running (a failed test leaves no worker spinning at a barrier).
pub struct Workers {
    children: Vec<Child>,
}

impl Workers {
    /// Starts `n` copies of this test binary as workers `0..n`, each running only the test
    /// `entry` (which reads its [`worker_orders`]), to play `role` on `backend`.
    pub fn start(entry: &str, role: &str, backend: &str, work: &Path, n: usize) -> Self {
        let children = (0..n)
            .map(|me| {
                Command::new(std::env::current_exe().unwrap())
                    .args(["--exact", entry, "--nocapture", "--test-threads=1"])
                    .env(ROLE, role)
                    .env(BACKEND, backend)
                    .env(WORK_DIR, work)
                    .env(WORKER, me.to_string())
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        Workers { children }
    }

    /// Panics if a worker has exited with a failure.
    pub fn check(&mut self) {
        for (w, child) in self.children.iter_mut().enumerate() {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(status.success(), "worker {w} failed: {status}");
            }
        }
    }

    /// Sleeps until `done()`, checking the workers between tries.
    pub fn wait_until(&mut self, mut done: impl FnMut() -> bool) {
        while !done() {
            self.check();
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Waits for every worker to exit; panics at the first that failed.
    pub fn finish(mut self) {
        while self
            .children
            .iter_mut()
            .any(|c| c.try_wait().unwrap().is_none())
        {
            self.check();
            std::thread::sleep(Duration::from_millis(5));
        }
        self.check();
    }

    /// Whether worker `w` is still running.
    pub fn running(&mut self, w: usize) -> bool {
        self.children[w].try_wait().unwrap().is_none()
    }

    /// Kills worker `w` with SIGKILL (if it still runs) and reaps it.
    pub fn kill(&mut self, w: usize) {
        self.children[w].kill().unwrap();
        self.children[w].wait().unwrap();
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &mut self.children {
            if child.try_wait().ok().flatten().is_none() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// A kind of store the worker-process tests run on.
#[derive(Clone, Copy, Debug)]
pub enum StoreKind {
    /// A `FileStore` in the work directory.
    File,
    /// A SQLite file in the work directory.
    #[cfg(feature = "sqlite")]
    Sqlite,
    /// A fresh database on the PostgreSQL server of `AGENTFLOW_PG_URL`.
    #[cfg(feature = "postgres")]
    Postgres,
}

/// Runs `scenario(backend, work)` on a fresh store of `kind` (see [`runner_on`] for `backend`)
/// with a fresh work directory named after `suite` and `name`, then removes the directory.
/// Without a PostgreSQL server, a `Postgres` run skips (or fails in CI).
pub async fn on_fresh_store<F, Fut>(suite: &str, name: &str, kind: StoreKind, scenario: F)
where
    F: FnOnce(String, PathBuf) -> Fut,
    Fut: Future<Output = ()>,
{
    let work = std::env::temp_dir().join(format!(
        "agentflow-{suite}-{name}-{kind:?}-{}",
        std::process::id()
    ));
    let backend = match kind {
        StoreKind::File => format!("file:{}", work.join("store").display()),
        #[cfg(feature = "sqlite")]
        StoreKind::Sqlite => format!("sqlite:{}", work.join("store.db").display()),
        #[cfg(feature = "postgres")]
        StoreKind::Postgres => {
            let Some(url) = agentweave_runtime::testing::fresh_postgres_database(name).await else {
                return;
            };
            format!("postgres:{url}")
        }
    };
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    scenario(backend, work.clone()).await;
    std::fs::remove_dir_all(&work).unwrap();
}

/// Declares, for each scenario `async fn NAME(backend: &str, work: &Path)` of the calling test
/// file, one test per store kind: `file::NAME`, `sqlite::NAME` (feature `sqlite`) and
/// `postgres::NAME` (feature `postgres`), each on a fresh store ([`on_fresh_store`]).
// `support` is compiled into every test file; only the process tests use this.
#[allow(unused_macros)]
macro_rules! on_every_store {
    ($suite:literal: $($scenario:ident),+ $(,)?) => {
        $crate::support::processes::on_every_store!(@kind file, File, $suite: $($scenario),+);
        #[cfg(feature = "sqlite")]
        $crate::support::processes::on_every_store!(@kind sqlite, Sqlite, $suite: $($scenario),+);
        #[cfg(feature = "postgres")]
        $crate::support::processes::on_every_store!(@kind postgres, Postgres, $suite: $($scenario),+);
    };
    (@kind $module:ident, $kind:ident, $suite:literal: $($scenario:ident),+) => {
        mod $module {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    $crate::support::processes::on_fresh_store(
                        $suite,
                        stringify!($scenario),
                        $crate::support::processes::StoreKind::$kind,
                        |backend, work| async move { super::$scenario(&backend, &work).await },
                    )
                    .await;
                }
            )+
        }
    };
}
#[allow(unused_imports)]
pub(crate) use on_every_store;

/// The dice of the kill trials (xorshift): where each trial's worker is killed.
pub struct Dice(u64);

impl Dice {
    /// The seed of a test run: `AGENTFLOW_KILL_SEED` if set (to repeat a failed run: the
    /// tests print theirs), else the clock's nanoseconds.
    pub fn seed() -> u64 {
        std::env::var("AGENTFLOW_KILL_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .subsec_nanos() as u64
            })
    }

    /// The dice of trial `trial` of the run seeded with `seed`: the same whichever lane runs it.
    pub fn for_trial(seed: u64, trial: usize) -> Self {
        let mut dice = Dice((seed ^ (trial as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1);
        dice.below(2);
        dice
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// How many kill trials run at once (`AGENTFLOW_KILL_LANES`, default 4; 1 runs them one after
/// another). A trial mostly waits (for its worker process to start, for a dead worker's lease
/// to run out), so lanes shorten the wall time of hundreds of trials on a small machine
/// without changing what any trial does: each has its own thread, ledger and worker.
pub fn lanes() -> usize {
    std::env::var("AGENTFLOW_KILL_LANES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4)
        .max(1)
}

/// Runs `trial(n)` for `n` in `0..trials`, [`lanes`] at once (trial `n` in lane `n % lanes`,
/// each lane's trials in order), and gives their results in trial order. A trial's blocking
/// waits on its worker process go inside `tokio::task::block_in_place` (the tests run on a
/// multi-thread runtime). A trial's panic fails the test with its message.
pub async fn in_lanes<T, F, Fut>(trials: usize, trial: F) -> Vec<T>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let trial = Arc::new(trial);
    let lanes = lanes().min(trials.max(1));
    let running: Vec<_> = (0..lanes)
        .map(|lane| {
            let trial = Arc::clone(&trial);
            tokio::spawn(async move {
                let mut done = Vec::new();
                for n in (lane..trials).step_by(lanes) {
                    done.push((n, trial(n).await));
                }
                done
            })
        })
        .collect();
    let mut all = Vec::with_capacity(trials);
    for lane in running {
        match lane.await {
            Ok(done) => all.extend(done),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => panic!("a lane of trials was cancelled: {e}"),
        }
    }
    all.sort_by_key(|(n, _)| *n);
    all.into_iter().map(|(_, t)| t).collect()
}
