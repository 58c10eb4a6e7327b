//! What a worker process needs: its flows, a connection, and the worker's options (the thread
//! workflow and the activities on one task queue).

use std::sync::OnceLock;

use temporalio_client::{Client, ClientOptions, Connection, ConnectionOptions, Url};
use temporalio_sdk::workflow_replayer::{WorkflowReplayer, WorkflowReplayerOptions};
use temporalio_sdk::{Runtime, Worker, WorkerOptions};

use super::activities::AgentflowActivities;
use super::client::TemporalError;
use super::workflow::ThreadWorkflow;
use crate::flows::Flows;

/// The dev server's address (`temporal server start-dev`).
pub const DEFAULT_ADDRESS: &str = "http://127.0.0.1:7233";

/// The flows of this process: the workflow builds its turns from them and the activities find
/// their agents in them. Register every flow (under the same name) on every worker of a task
/// queue before the worker starts.
pub fn worker_flows() -> &'static Flows {
    static FLOWS: OnceLock<Flows> = OnceLock::new();
    FLOWS.get_or_init(Flows::new)
}

/// A client of the Temporal service at `address` (`http://host:port`), namespace `default`.
pub async fn connect(address: &str) -> Result<Client, TemporalError> {
    let unreachable = |reason: String| TemporalError::Unreachable {
        address: address.to_owned(),
        reason,
    };
    let url = Url::parse(address).map_err(|e| unreachable(format!("not a URL: {e}")))?;
    let options = ConnectionOptions::new(url)
        .identity(format!("agentflow-{}", std::process::id()))
        .build();
    let connection = Connection::connect(options)
        .await
        .map_err(|e| unreachable(e.to_string()))?;
    Client::new(connection, ClientOptions::new("default").build())
        .map_err(|e| unreachable(e.to_string()))
}

/// A worker's options: the thread workflow and the model and tool activities (over
/// [`worker_flows`]) on `task_queue`.
///
/// The runtime's detector of non-SDK wake-ups is off: the engine runs inside the workflow and
/// wakes its own futures (an effect answered wakes the engine's future that asked it), within
/// the workflow task's poll and in a fixed order, which the detector cannot tell from a wake-up
/// by a foreign timer or channel. The orchestration reaches no clock, timer or randomness but
/// the workflow's (through its host), so the replayer is the check that holds (see the tests).
pub fn worker_options(task_queue: &str) -> WorkerOptions {
    WorkerOptions::new(task_queue)
        .register_activities(AgentflowActivities::new(worker_flows().clone()))
        .register_workflow::<ThreadWorkflow>()
        .expect("the thread workflow registers once")
        .detect_nondeterministic_futures(false)
        .build()
}

/// Runs a worker of `task_queue` on `client` (the thread workflow and the activities over
/// [`worker_flows`]) until it fails or the process ends; must run inside a tokio runtime.
pub async fn run_worker(
    client: Client,
    task_queue: &str,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let runtime = Runtime::from_current_tokio(Default::default())?;
    let mut worker = Worker::new(&runtime, client, worker_options(task_queue))?;
    worker.run().await?;
    Ok(())
}

/// Temporal's replayer for thread workflows (over [`worker_flows`]): replays a recorded history
/// through the workflow's code and fails on any non-determinism (a command the history does
/// not have, in the order it has them). The wake-up detector is off, as on the workers.
pub fn replayer() -> Result<WorkflowReplayer, Box<dyn std::error::Error + Send + Sync>> {
    Ok(WorkflowReplayer::new(
        WorkflowReplayerOptions::new()
            .register_workflow::<ThreadWorkflow>()?
            .detect_nondeterministic_futures(false)
            .build(),
    )?)
}

/// Replays one recorded history in its JSON form (as [`Thread::history_json`](super::Thread::history_json)
/// gives it) with the [`replayer`]; fails, with the replayer's words, when the workflow's code
/// (the thread workflow and the flows of [`worker_flows`]) no longer gives the commands the
/// history holds.
pub async fn replay_history(json: &[u8]) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let history = temporalio_client::WorkflowHistory::from_json(json)?;
    replayer()?.replay_workflow(history).await?;
    Ok(())
}
