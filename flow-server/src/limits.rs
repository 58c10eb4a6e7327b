//! [`Limits`]: how much a request or a streamed event may weigh, how long a client may take,
//! and how many connections and turns the server takes at once.

use std::time::Duration;

/// What the server accepts and sends. Each has a safe default; a request over a limit gets a
/// JSON error naming it (the status is given with each field).
///
/// The limits at a glance (each field below says more):
///
/// | limit | default | when met |
/// | --- | --- | --- |
/// | request body / user message / one SSE event | 64 KiB / 16 KiB / 1 MiB | 413 (at once when `Content-Length` announces more, on every endpoint that reads a body: `/v1`, A2A, AG-UI, the Agent Protocol) / 400 / an `error` event in place of the event |
/// | time to send a request's head (and idle time between requests) | 10 s | connection closed (slowloris) |
/// | time to send a request's body | 10 s | 408 `request_timeout` |
/// | request head size | 32 KiB | 431 from the HTTP layer (no body) |
/// | open connections | 4,096 | 503 `overloaded`, `Retry-After: 1`, connection closed |
/// | turns and resumes running at once | 1,024 | 503 `overloaded`, `Retry-After: 1`, nothing runs |
/// | how long one turn streams | 10 min | an `error` event, the turn is cancelled and not recorded |
///
/// Against floods and unbounded reads (per tenant, and what other parts of the server bound):
///
/// | what | limit (default) | past it |
/// | --- | --- | --- |
/// | threads of one tenant with a background run going | `Limits::max_running_threads_per_tenant` (256) | `429 too_many_runs`, `Retry-After: 5` |
/// | runs of one tenant waiting behind another run of their thread (`enqueue`, ...) | `Limits::max_waiting_runs_per_tenant` (256); a waiting run holds no turn place: its thread's one place passes down the line | `429 too_many_runs` |
/// | runs of one tenant and flow in the run queue | `Limits::max_queued_runs_per_tenant` (1,000; counted and queued in one step of the store, so it is exact across every server on one queue: SQLite's write lock, a PostgreSQL advisory lock on the tenant's prefix); workers claim the tenant with the fewest runs running first | `429 too_many_runs` |
/// | turns and runs in the process | `Limits::max_concurrent_turns` (1,024): a streamed turn (`/turns`, `/resume`, A2A, AG-UI) takes a place for as long as it runs; the per-tenant limits above are for background runs | `503 overloaded`, `Retry-After: 1` |
/// | a cancel of a run not started (waiting in line, or not begun) | ends it at once, whatever its mode: cancelled before start (`before_start: true`, the mode asked), nothing of it run | |
/// | a thread's ended runs | kept by its runner (`RunRetention`: 1,000 ended runs, their events 10 minutes) and forgotten when the thread is deleted (their events hold its messages); a thread with runs waiting or running is not deleted | `409 busy` naming how many runs go and the oldest |
/// | Agent Protocol thread `metadata` | 16 KiB of JSON, kept in the store (never in the process's memory), removed with the thread | 400 |
/// | `POST /threads/{t}/history` | 20 states and 4 MiB a page (`limit` is cut to it; `before` for the next page) | the page ends |
/// | lists (`GET .../threads`, `GET .../runs`, a thread's `timeline`, a thread's and a flow's `interrupts`, the Agent Protocol's runs) | 100 a page (`?limit=N&offset=M`, `next_offset`) | the page ends |
/// | a request head, a long URL included | `Limits::max_header_bytes` (32 KiB) | 431, no body |
/// | a refused request with a body | the body is never read | `Connection: close` |
/// | an MCP call | its `call_timeout` bounds all of it: the connection's lock, a reconnect, the tool list read before and after | `CallTimedOut` (after an error answer, the answer stands) |
/// | an MCP stdio server's message | `McpLimits::max_message_bytes` (16 MiB) and `max_result_blocks` (1,024), counted as it is read, before parsing | `LimitExceeded` |
/// | outbound deliveries of one tenant | 8 in flight, 1,000 waiting (see the outbound policy) | dropped, logged |
///
/// ```
/// use std::time::Duration;
/// use agentweave_server::Limits;
///
/// let limits = Limits {
///     max_concurrent_turns: 64,
///     header_read_timeout: Duration::from_secs(5),
///     ..Limits::default()
/// };
/// # let _ = limits;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body, in bytes (default 64 KiB): 413 `payload_too_large`.
    pub max_body_bytes: usize,
    /// Largest user message of a turn, in bytes (default 16 KiB): 400 `bad_request`.
    pub max_message_bytes: usize,
    /// Largest `data:` payload of one Server-Sent Event, in bytes (default 1 MiB); an event
    /// over it is replaced on the wire by an `error` event naming the limit (the thread still
    /// records it whole).
    pub max_event_bytes: usize,
    /// How often an idle event stream sends an SSE comment, so proxies keep it open and a
    /// client that went away is noticed (default 15 s).
    pub sse_keep_alive: Duration,
    /// How long a client may take to send a request's head, from the moment the server waits
    /// for it (default 10 s). A connection that trickles its headers (slowloris), or stays idle
    /// longer than this between two requests, is closed.
    pub header_read_timeout: Duration,
    /// How long a client may take to send a request's body once its head arrived (default
    /// 10 s): 408 `request_timeout`.
    pub body_read_timeout: Duration,
    /// Largest request head (request line and headers), in bytes (default 32 KiB). The HTTP
    /// layer answers a larger one with 431, without a body, a long URL included (its head
    /// meets this limit first): it is refused before any route sees it.
    pub max_header_bytes: usize,
    /// Open connections at once (default 4,096). A connection over it gets `503 overloaded`
    /// (`Retry-After: 1`) for its first request and is closed.
    pub max_connections: usize,
    /// Turns and resumes running at once in this process (default 1,024). One more gets
    /// `503 overloaded` (`Retry-After: 1`) and runs nothing.
    pub max_concurrent_turns: usize,
    /// Threads of one tenant with a run going at once, through any door: a streamed turn or
    /// resume (`/turns`, `/resume`, A2A, AG-UI) or a background run (default 256, a quarter
    /// of [`max_concurrent_turns`](Self::max_concurrent_turns), so one tenant cannot take
    /// every place). One more gets `429 too_many_runs` with `Retry-After` and runs nothing.
    pub max_running_threads_per_tenant: usize,
    /// Background runs of one tenant waiting behind another run of their thread
    /// (`multitask_strategy: enqueue`, ...) at once (default 256). A waiting run holds no
    /// place among the concurrent turns: its thread's place passes to it when the run before
    /// it ends. One more gets `429 too_many_runs` with `Retry-After` and runs nothing.
    pub max_waiting_runs_per_tenant: usize,
    /// Runs of one tenant and flow waiting or running in the run queue (a server with
    /// [`ServerBuilder::run_queue`](crate::ServerBuilder::run_queue)) at once (default 1,000). One
    /// more gets `429 too_many_runs` with `Retry-After` and is not queued. Counted and queued
    /// in one step of the store ([`RunQueue::enqueue_within`](agentweave_runtime::store::RunQueue::enqueue_within)),
    /// so the limit is exact across every process on one queue. Workers claim
    /// fairly across tenants: a tenant's thousand queued runs do not hold another's back.
    pub max_queued_runs_per_tenant: usize,
    /// How long one turn or resume may stream (default 10 min). A turn still running then
    /// gets an `error` event naming this limit and is cancelled: nothing of it is recorded,
    /// as when its client goes away.
    pub max_turn_duration: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 64 * 1024,
            max_message_bytes: 16 * 1024,
            max_event_bytes: 1024 * 1024,
            sse_keep_alive: Duration::from_secs(15),
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(10),
            max_header_bytes: 32 * 1024,
            max_connections: 4096,
            max_concurrent_turns: 1024,
            max_running_threads_per_tenant: 256,
            max_waiting_runs_per_tenant: 256,
            max_queued_runs_per_tenant: 1_000,
            max_turn_duration: Duration::from_secs(600),
        }
    }
}
