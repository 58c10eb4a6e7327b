//! Serve agentflow flows over HTTP: a JSON API under `/v1`, each conversation turn streamed as
//! Server-Sent Events, and an embedded web console at `/`.
//!
//! [`app`] builds the [`Router`] from an [`AppState`] (the flows, the store, the auth); [`serve`]
//! runs it on a listener. Keeping the two apart lets a test bind the same router to port 0 and
//! talk to it with a real HTTP client.
//!
//! ```no_run
//! use agentweave_runtime::{FileStore, FlowAgent, FnAgent};
//! use agentweave_server::{AppState, Auth};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let bot = FnAgent::new("bot", |cx, input| async move {
//!     cx.say(format!("you said: {}", input.messages.last().unwrap().content));
//!     Ok(())
//! });
//! let state = AppState::builder(FileStore::open_default()?)
//!     .flow("echo", FlowAgent::new(bot))
//!     .auth(Auth::bearer(std::env::var("AGENTFLOW_TOKEN")?))
//!     .build()?;
//! let listener = tokio::net::TcpListener::bind("0.0.0.0:8080").await?;
//! agentweave_server::serve(listener, state).await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Endpoints
//!
//! | method and path | scope | what it does |
//! | --- | --- | --- |
//! | `GET /v1/health` | none | `{"status":"ok"}` while the process runs (no auth) |
//! | `GET /v1/ready` | none | `{"status":"ready"}` when the store answers, else 503 (no auth) |
//! | `GET /v1/me` | any | who the caller is: `{"id", "tenant", "scopes"}` (the console shows Approve buttons to `approve` only) |
//! | `GET /v1/flows` | `read`, `chat` or `approve` | the served flows: name, root agent, description |
//! | `GET /v1/flows/{flow}` | `read`, `chat` or `approve` | one flow: its tree (`tree`, nested `{name, description, no_parent, transfers, children}`) and `mermaid` |
//! | `GET /v1/flows/{flow}/mermaid` | `read`, `chat` or `approve` | the tree as a Mermaid flowchart (`text/vnd.mermaid`) |
//! | `GET /v1/flows/{flow}/svg` | `read`, `chat` or `approve` | the tree as a standalone SVG picture (`image/svg+xml`) |
//! | `POST /v1/flows/{flow}/threads/{thread}/turns` | `chat` | body `{"message": TEXT}`: runs one turn, answers `text/event-stream` (see [`wire`]); 409 while the thread waits for an approval |
//! | `GET /v1/flows/{flow}/threads/{thread}` | `read` | the thread: `turns`, `messages` (`{turn, agent, run_path, message}`, the user's and every agent's), `pending` interrupts, `approvals` ([`ApprovalRecord`]: who answered what, when, for whom) |
//! | `GET /v1/flows/{flow}/threads` | `read` | the caller's threads of the flow, newest first: `{thread, turns, updated_at_ms, waiting, running}` |
//! | `GET /v1/flows/{flow}/threads/{thread}/timeline` | `read` | a page (`?limit=N&offset=M`, at most 100; `next_offset`) of the thread's records (turns and resumes) with their outward events, the user's input and the tokens used: what the console rebuilds a reloaded page from |
//! | `DELETE /v1/flows/{flow}/threads/{thread}` | `chat` | deletes the thread and the checkpoint it waits on (204) |
//! | `GET /v1/flows/{flow}/threads/{thread}/history` | `read` | the thread's steps (`{id, parent, turn, agent, run_path, kind, at_ms}`: inputs, model replies, tool results, transfers, interrupts), the ids a fork takes |
//! | `POST /v1/flows/{flow}/threads/{thread}/fork` | `chat` | body `{"at_step": N, "thread": NEW}`: copies the thread up to step N into the new thread (201, `end`: `turn_end`, `interrupt` or `fork_point`); the original is untouched; 409 if NEW exists |
//! | `GET /v1/flows/{flow}/threads/{thread}/interrupts` | `read` or `approve` | the interrupts the thread waits on: `{thread, turn, id, info, address}`, paged as the timeline |
//! | `GET /v1/flows/{flow}/interrupts` | `read` or `approve` | every interrupt the caller's tenant's threads of the flow wait on (the approvals queue), paged as the timeline |
//! | `POST /v1/flows/{flow}/threads/{thread}/resume` | `approve` (or the flow's [`Approvals`]) | body `{"interrupt_id": ID, "data": VALUE}` or `{"targets": {ID: VALUE}}`: resumes, streamed like a turn; a second resume gets 409; the answer is recorded with who gave it |
//! | `GET /v1/flows/{flow}/threads/{thread}/state` | `read` | the thread's values: `{"values": {...}}` |
//! | `POST /v1/flows/{flow}/threads/{thread}/state` | `chat` | body `{"values": {...}}`: merges into the thread's values (a `null` removes a key) as a values step, answers the values after it; 409 while the thread waits for an answer, 400 for a reserved `agentflow.` key |
//! | `POST /v1/flows/{flow}/threads/{thread}/runs` | `chat` (`approve` to resume) | body `{"message"}` or `{"resume": {ID: DATA}}`, with `multitask_strategy`, `stream`, `on_disconnect`, `webhook`: a background run answers `202 {"run_id", "status", ...}` at once; with `"stream": true` the answer is the run's SSE stream (see "Background runs" below) |
//! | `GET /v1/flows/{flow}/threads/{thread}/runs`, `.../runs/{run}` | `read` | the thread's runs, or one, with their status |
//! | `GET .../runs/{run}/stream` | `read` | the run's events as SSE, each with `id:`; `Last-Event-ID` gives only what came after |
//! | `GET .../runs/{run}/wait` | `read` | waits for the end: the outcome (`status`: `success`, `interrupted`, `cancelled`, `error`) |
//! | `POST .../runs/{run}/cancel` | `chat` | body `{"mode": "after_tools", "timeout_ms": 5000}` (default `immediate`; `after_model\|after_tools\|recursive` combine) |
//! | `POST .../runs/{run}/steer` | `chat` | body `{"message": "..."}`: taken in by the running turn at its next safe point (after its tool calls, before the model is asked again); 409 `run_ended` once it has ended; a run of this process |
//! | `POST .../runs/{run}/resume` | `chat` (`approve` if it answers) | continues a run cancelled at a safe point as a new run |
//! | `POST`, `GET /v1/flows/{flow}/schedules`; `GET`, `PATCH`, `DELETE .../schedules/{id}` | `chat` to create, change and delete; `read` or `chat` to read | cron schedules of the caller's tenant that start runs of the flow (a new thread each firing, or one thread's turns), kept in the run queue's store and fired once across processes (see [`schedules`]) |
//! | `/v1/runs/crons...`, `/v1/threads/{thread}/runs/crons` | as the schedules | the Agent Protocol's crons over the same schedules |
//! | `GET /v1/usage?from=&to=&flow=&agent=&tenant=&limit=&offset=` | `read` (every tenant's, or `tenant=`, with `admin`) | the usage report of the caller's tenant: model calls, tokens and cost per UTC day, flow, agent and model, as the flows' runners charged them (on a server with [`ServerBuilder::spending`]; see `usage`) |
//! | `/v1/assistants/...`, `/v1/threads/...` | as their native twins | the Agent Protocol that LangGraph's clients speak (see "The Agent Protocol" below) |
//! | `/v1/memory/...` | `read` or `chat` to read, `chat` to write (`admin` for the application's and others' memory) | long-term memory ([`ServerBuilder::memory`]): items of the caller's tenant, listed, read, written, deleted, searched (see [`memory`]) |
//! | `/v1/store/...` | `read` or `chat` to read, `chat` to write | the Agent Protocol's store (`langgraph-sdk`'s `client.store`) over the caller's own user memory |
//! | `GET /a2a/{flow}/.well-known/agent-card.json`, `POST /a2a/{flow}` | card: none; JSON-RPC: `chat` (`approve` to answer an input-required) | the flow as an A2A 1.0 agent: its card (no auth), JSON-RPC `SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`, `SubscribeToTask` (a context is a thread, a task a turn, an interrupt `input-required`) |
//! | `POST /agui/{flow}` | `chat` (`approve` to resume) | the flow as an AG-UI agent: AG-UI's `RunAgentInput` in, the turn (or the resume) as AG-UI events out; front-end tools through [`FrontendTool`] |
//! | `POST`, `GET`, `DELETE /v1/mcp` (the `mcp` feature) | `read`, `chat` or `approve` to list the tools, `chat` to call one (`approve` to answer an approval) | every flow as a tool of an MCP server (streamable HTTP): a thread per MCP session, a call a turn, approvals asked by elicitation (see "MCP" below) |
//! | `GET /` | none | the web console |
//!
//! `admin` allows everything. A missing scope is 403 naming it; nothing runs.
//!
//! Every route that starts a turn or a run takes an `Idempotency-Key` header (A2A: the
//! message's `messageId`; AG-UI: the input's `runId`): a request sent again with its key gets
//! the run it started, never a second one; the same key with another request is 422
//! `idempotency_key_reused`. Turns are journaled ([`ServerBuilder::durability`], `Sync` by
//! default), and [`serve_until`] finishes the turns whose process died
//! ([`recover_dead_turns`]).
//!
//! # Idempotency keys and runs after a restart
//!
//! **Idempotency keys.** A client that lost its connection cannot tell whether its request ran.
//! It sends the request again with the same key, and never gets a second run:
//!
//! | door | the key |
//! | --- | --- |
//! | `POST .../turns`, `POST .../resume`, `POST .../runs` (background and `"stream": true`), `POST .../runs/{run}/resume`, the Agent Protocol's `runs`, `runs/wait` and `runs/stream` | the `Idempotency-Key` header (the IETF draft's; a quoted string or a bare token of 1 to 255 visible ASCII characters) |
//! | A2A `SendMessage`, `SendStreamingMessage` | the message's `messageId` |
//! | AG-UI `POST /agui/{flow}` | the input's `runId` |
//!
//! The key becomes the run's id (`TurnRequest::run_id`), scoped to the caller: a hash of the
//! principal, the thread (with its flow and tenant) and the key, so one caller's key never
//! reaches another's run. A resend with the same key:
//!
//! - while its turn runs: `409 busy` (the draft's answer for a request still being processed);
//!   a background run's resend answers the running run (`202`, or its stream);
//! - after its process died: the engine gives the request its dead turn back, recovered from the
//!   journal (its events from the start), or the turn the server's recovery already recorded;
//! - after its turn was recorded: the recorded turn, run again nowhere. `/turns`, `/resume` and
//!   streamed runs answer its events from the record; background runs (native and the Agent
//!   Protocol's) answer the recorded run; the Agent Protocol's `runs/wait` answers the thread's
//!   values; A2A `SendMessage` answers the recorded task. Where the protocol has no way to
//!   stream a recorded run again, the answer is an error that names it and says nothing ran
//!   again: the Agent Protocol's `runs/stream` (`409`), A2A `SendStreamingMessage` (`-32600`,
//!   naming the task for `GetTask`) and AG-UI (`409`).
//!
//! An A2A `messageId` is scoped to its context: send it again with the `contextId` the first
//! send gave (or got back), as A2A clients do.
//!
//! The server keeps each key's first request (its route and a fingerprint of its body) in the
//! journal store: the same key with another request is refused with `422 idempotency_key_reused`
//! and nothing runs. Keys are kept as long as the store keeps run journals: forever by default,
//! or until `Runner::purge` with a `Retention::max_age` removes journals idle that long (the key is
//! then new again; the turn it started stays in its thread).
//!
//! **Run ids after a restart.** A turn started as a run records its run id in its thread
//! (`ThreadRecord::run_id`), so `GET .../runs/{run}` and `.../wait` answer for a run of an earlier
//! process from its record (`"recorded": true`), as do the Agent Protocol's
//! `GET /v1/threads/{thread}/runs/{run}` and `.../join`; a wait or join on a run whose process
//! died waits for the server's recovery to record it. Agent Protocol threads and A2A tasks are
//! read from the thread store (a thread's Agent Protocol `metadata` is kept in the process and is
//! not restored).
//!
//! Errors are `{"error": {"code", "message"}}` with the status of their [`ApiError`]; a failure
//! inside the server adds `correlation_id` (see [`outward`]).
//!
//! # Safety
//!
//! - Every `/v1` endpoint but health and readiness needs `Authorization: Bearer <token>`
//!   ([`Auth::bearer`]) or passes your [`Authenticator`]. Without auth ([`ServerBuilder::dev_mode`])
//!   [`serve`] listens on loopback addresses only and the API answers loopback peers only.
//! - [`Limits`]: request body size (413) and the time to send it (408), user message size,
//!   SSE event size; the time to send a request's head and its size (slow or idle connections
//!   are closed, a head over the limit gets 431); open connections and concurrent turns (503
//!   `overloaded` with `Retry-After`); how long one turn may stream.
//! - Every refusal is a JSON error with a stable code, malformed paths, bodies, content types
//!   and methods included (400, 415, 405); 401 says `WWW-Authenticate: Bearer`.
//! - No CORS headers unless you list origins ([`ServerBuilder::cors_origins`]): browsers on other
//!   sites cannot call the API.
//! - Errors carry no stack trace, file path or I/O error text; a panic in a handler is a JSON 500.
//! - With a tenant function ([`ServerBuilder::tenant`]), threads are stored per tenant: one
//!   tenant's thread id never reaches another tenant's thread (404).
//! - The server keeps nothing in memory between requests: threads and checkpoints live in the
//!   store, so several server processes on one store are one service.
//!
//! # What is logged
//!
//! - One access-log line per request at INFO (target `agentweave_server::access`): request id (also
//!   the `x-request-id` response header), method, path without query, status, milliseconds,
//!   principal id. Never a body, a header or a token.
//! - Internal errors at ERROR (WARN for refusals and limits), target `agentweave_server::outward`, with
//!   their correlation id.
//! - A `turn` span (flow, thread, turn, resumed, run id, request id, principal) is the root of
//!   every served run: every agent, model and tool span is its child. The run id is
//!   `Turn::run_id`: a resume keeps the id of the turn it continues (the id its checkpoints
//!   carry), and a background run of the runs API has its run handle's id (its task runs in the
//!   span of the request that started it).
//! - Refused JWTs at DEBUG (target `agentweave_server::jwt`), with the reason.
//! - The HTTP layer's `request` span (DEBUG) names the method and the path, never the query
//!   string (a client may have put a token there).
//! - The MCP SDK (`rmcp`) logs a server's instructions at INFO: filter it in production
//!   (`RUST_LOG=info,rmcp=warn`).
//!
//! # Background runs
//!
//! SSE events: `turn` (`run_id`, `turn`, `started_at`, `resumed`), `chunk`, `event`, `done` (the
//! outcome). `on_disconnect`: `continue` (the default of a background run: the run goes on and a
//! client attaches again) or `cancel` (the default of a streamed run: the run stops immediately
//! when its client goes away).
//!
//! Errors are JSON like every other `/v1` error: a run of another tenant or thread is
//! `404 unknown_run`; a `Last-Event-ID` the run never gave `400 unknown_event`, one whose events
//! are no longer kept `410 event_expired`; a cancel of a run that ended `409 run_ended`; an unknown
//! strategy, cancel mode or `on_disconnect` `400 bad_request` naming the accepted values; a run
//! refused by `reject` `409 busy` with `Retry-After: 1`.
//!
//! A run's events are `RunEvent { id, item }`, ids from 1 in order: `Started` first, then
//! `Chunk`s of streamed messages as they come and each `Event` (its message whole, in the
//! documented `EventJson` form, without saved state), and `Ended(outcome)` last. They are kept
//! while the run runs and for `RunRetention::keep_events_for` after it ends (default 10 minutes),
//! at most `max_events` per run (older ones are dropped first); attaching after an id the run never
//! gave is `AttachError::UnknownEvent`, after one no longer kept `AttachError::Expired`.
//!
//! Without a run queue, runs live in the memory of the server process that started them (the
//! thread they record lives in the store). Runs started through the Agent Protocol
//! (`/threads/{id}/runs`) and streamed runs (`"stream": true`) are not queued.
//!
//! Webhooks: see [`webhooks`].
//!
//! # The run queue
//!
//! - `POST .../runs` (without `"stream": true`) enqueues the run and answers `202` with its
//!   `run_id` and `"queued": true` at once. `GET .../runs/{run}`, `.../wait` and `GET .../runs`
//!   read the queue, so any process answers for any run: `status` is `pending`, `running`, then
//!   the outcome's (`success`, `interrupted`, `cancelled`, `error`); `attempt` counts claims and
//!   `worker` names the process that ran it.
//! - A thread's queued runs run one at a time, in order. `multitask_strategy` `reject` (the
//!   default) refuses a run while the thread has one waiting or running (`409 busy`); `enqueue`
//!   queues it behind; `interrupt` and `rollback` are refused (`400`) for queued runs.
//! - A worker holds a run under a lease (`QueueOptions::lease`, renewed every third of it). If its
//!   process dies, the lease runs out and another process takes the run over: when the turn was
//!   journaled (`Durability::Async` or `Sync` with a journal store) it is recovered from its
//!   journal (`Runner::recover`: model replies and tool results it holds are not asked again);
//!   when the turn had been recorded already, the run is only reported; otherwise the turn runs
//!   again from its start. The outcome says which in `recovery` (`journal`, `recorded`, `rerun`,
//!   with a `note`). A queued run's turn has the run id as its idempotency scope, so its tool
//!   calls keep their idempotency keys whichever process runs them: a paying tool deduplicates
//!   on `ToolContext::idempotency_key`. A worker that loses its lease stops its run.
//! - A worker claims only runs of the flows its process serves (`RunQueue::claim_among`): a run
//!   of another flow waits for a process that serves it (and holds its thread's later runs back
//!   meanwhile), so processes may serve different flows from one queue.
//! - The queues: `InMemoryRunQueue` (one process, tests), `FileRunQueue` (a directory, `flock`),
//!   `SqliteRunQueue` (one `BEGIN IMMEDIATE` `UPDATE` per claim; the processes of one machine),
//!   `PostgresRunQueue` (`FOR UPDATE SKIP LOCKED`; many machines). They keep the `RunQueue`
//!   contract (enqueue, claim with a lease, renew, note, release, complete, get, a thread's
//!   runs, claims among flows, events, cancel), checked on all four by
//!   `flow-runtime/tests/it/run_queue.rs`.
//! - A process that serves no API runs the workers with `agentweave_server::run_workers(state,
//!   shutdown)`; `agentweave-server-demo --worker` does so and answers only `GET /v1/health`.
//!
//! A queued run's events are kept in the queue, so **any** process streams it, not only the one
//! running it:
//!
//! - The worker running the run stores its events as they come (`RunQueue::append_events`, in
//!   batches, only while its claim holds), numbered 1, 2, ... per run; its outcome is stored
//!   last, as the `done` event. `GET .../runs/{run}/stream` on any process reads them
//!   (`RunQueue::events_after`) with those numbers as SSE ids: from the start, or after
//!   `Last-Event-ID`, each event once and in order, while the run goes on (the reader looks at
//!   the queue every `QueueOptions::poll`, and at once when a worker of its own process stored
//!   something) and after it ended. The frames are those of an unqueued run (`turn`, `chunk`,
//!   `event`, `done`); `done` carries the queue's outcome (with `worker`, and `recovery` after a
//!   takeover). A run taken over after its worker died goes on numbering after what the first
//!   worker stored: a second `turn` event, then the new attempt's events.
//! - Bounded: at most `QueueOptions::max_events` (10,000) events a run; past them an `error`
//!   event (`events_over_limit`) says so and only `done` follows. Each process with workers
//!   removes the events of runs that ended more than `QueueOptions::event_retention` (1 hour)
//!   ago (`RunQueue::trim_events`); the run's row and outcome stay. With
//!   `QueueOptions::usage_retention_days`, the same sweep deletes the usage report's rows of
//!   older days (`SpendingStore::trim_usage`).
//! - `POST .../runs/{run}/cancel` on any process goes through the queue (`RunQueue::cancel`): a
//!   run still waiting is cancelled at once (`202`, `"status": "cancelled"`; its outcome is its
//!   one `done` event, `attempt` stays 0, it never runs); a running run gets the request recorded
//!   (`202`, `"status": "cancelling"`) and its worker, which looks every `QueueOptions::poll`
//!   (at least 100 ms), applies the mode (`immediate`, `after_model`, `after_tools`, `recursive`,
//!   `timeout_ms`) as for an unqueued run; a run claimed but not started yet does not start.
//! - A queued run may name a `webhook` like a background run: the URL is stored with the run and
//!   the process that ends it sends the same signed, retried, bounded request (the worker's
//!   process; for a run cancelled while waiting, the process that cancelled it). Give every
//!   process of the queue the same `ServerBuilder::webhook_secret`.
//!
//! Bad input, each a JSON error with nothing run and nothing lost:
//!
//! | request | answer |
//! | --- | --- |
//! | another tenant's or thread's queued run (stream, cancel, status) | `404 unknown_run` |
//! | `Last-Event-ID` the run never gave, or not a number | `400 unknown_event` (says its last event) |
//! | stream of a run whose events were trimmed | `410 event_expired` (its status and outcome stay) |
//! | cancel of a run that ended | `409 run_ended` |
//! | a cancel mode that does not exist | `400 bad_request` (nothing recorded) |
//! | a webhook that is not http(s), or a server without a webhook secret | `400 bad_request` (nothing queued) |
//!
//! # The Agent Protocol (LangGraph clients)
//!
//! Served under `/v1` beside the native API: point `langgraph-sdk` at `http://HOST/v1`.
//!
//! | Agent Protocol | native `/v1` |
//! | --- | --- |
//! | assistant (`assistant_id`) | a served flow (`/v1/flows/{flow}`) |
//! | `POST /threads`, `GET /threads/{id}` | threads are created by their first turn; `GET /v1/flows/{flow}/threads/{id}` |
//! | `GET /threads/{id}/state`, `POST /threads/{id}/history` (one state per checkpoint) | `GET /v1/flows/{flow}/threads/{id}` (messages, pending interrupts) |
//! | `POST /threads/{id}/state` (`update_state`: the thread's values) | `POST /v1/flows/{flow}/threads/{id}/state` |
//! | `POST /threads/search` (`metadata`, `values`, `status`, `ids`) | `GET /v1/flows/{flow}/threads` |
//! | `POST /threads/{id}/copy` | `POST /v1/flows/{flow}/threads/{id}/fork` at the last step |
//! | `GET /assistants/{id}/graph`, `GET /assistants/{id}/schemas` | `GET /v1/flows/{flow}` (the tree) |
//! | `POST /threads/{id}/runs` | `POST .../runs` |
//! | `POST /threads/{id}/runs/stream` (every `stream_mode` of the SDK but `tools` and `lifecycle`; `stream_subgraphs`) | `POST .../runs` with `"stream": true` |
//! | `POST /threads/{id}/runs/wait`, `GET .../runs/{run}/join` | `GET .../runs/{run}/wait` |
//! | `GET .../runs/{run}/stream` (`Last-Event-ID`) | `GET .../runs/{run}/stream` (`Last-Event-ID`) |
//! | `POST .../runs/{run}/cancel?action=interrupt\|rollback` (or `mode=after_tools`...) | `POST .../runs/{run}/cancel` `{"mode"}` |
//! | `command: {"resume": VALUE}` (or `{INTERRUPT_ID: VALUE}`) | `{"resume": {INTERRUPT_ID: VALUE}}` |
//! | `multitask_strategy` (reported by `GET .../runs/{run}`; `rollback` deletes the run it rolls back) | `multitask_strategy` |
//! | `webhook` (called when the run ends, signed; refused with 400 on a server without a webhook secret) | `webhook` |
//! | run status `interrupted` (waiting, or cancelled) | `interrupted` / `cancelled` |
//!
//! Streamed events: `metadata` (`run_id`) first, then per mode: `messages` as the reference sends
//! it (`messages/metadata` once per message, `messages/partial` with the message so far per
//! chunk, `messages/complete`), `messages-tuple` (`messages`: `[message or chunk,
//! {"langgraph_node": AGENT}]`), `updates` (`{AGENT: {"messages": [...]}}`, and
//! `{"__interrupt__": [{"value", "id"}]}` when the run stops for an approval), `events`
//! (LangChain's event dicts), `debug`, `custom` (an event's application data), `tasks` (each
//! agent's start and results), `checkpoints` and `values` (the thread's state at the end), `error`,
//! and `end` last; with `stream_subgraphs`, the events of agents below the root are named
//! `MODE|NAMESPACE` (`updates|refund`). An unknown mode is a 422 and runs nothing. Messages are
//! LangChain message dicts (`human`, `ai` with `tool_calls`, `tool`). New input on a thread waiting
//! at an interrupt starts a new run, as LangGraph does: the interrupt is dropped (the caller needs
//! what answering it needs). `action=interrupt` stops at the next safe point
//! (after the model call or the tool calls, escalating to immediate after ten seconds);
//! `rollback` stops at once and records nothing.
//!
//! How close it is to LangGraph (`langgraph-sdk` 0.4), checked with the official client
//! (`flow-server/tests/langgraph`):
//!
//! | | implemented | not implemented | differs from the reference |
//! | --- | --- | --- | --- |
//! | assistants | `search`, `get` (a served flow is an assistant), `get_graph` (a node per agent, conditional edges both ways between an agent and its sub-agents: the transfers), `get_schemas` (input, output and state: the messages) | `create`/`update`/versions, `xray` | one version per flow, no config or context schema |
//! | threads | `create` (with metadata), `get`, `delete`, `search` (`metadata`, `values`, `status`, `ids`, `limit`/`offset`), `get_state`, `update_state` (the thread's values), `get_history` (one state per checkpoint: each turn, the part before an interrupt, its resume, each state update), `copy` (a fork at the last step, with the metadata) | `patch`, `update_state` with `as_node` or at an earlier checkpoint (422, saying to fork), `messages` in `update_state` (422: runs write the conversation) | `search` lists threads that have had a run; checkpoint ids are the server's (`THREAD-tSEQ` in the history, `THREAD-vVERSION` for the state) |
//! | runs | `create`, `stream`, `wait`, `join`, `join_stream` (`Last-Event-ID`), `cancel` (`interrupt`, `rollback`), `list`, `get`; `command.resume`; `on_disconnect`; `webhook` (called when the run ends, signed; a 400 on a server without a webhook secret) | `checkpoint` to start from, `interrupt_before/after`, `config`/`context` | a run of another process reports the strategy `reject` (a process remembers the strategies of its own runs) |
//! | stream modes | `values`, `updates`, `messages` (`messages/metadata`, `messages/partial`, `messages/complete`), `messages-tuple`, `events`, `debug`, `custom`, `tasks`, `checkpoints`; `stream_subgraphs` | `tools`, `lifecycle` (422, naming the modes served) | a "task" is an agent at a run path; `events` are LangChain's event names for the run's events (no callbacks inside tools); with subgraphs, the namespace is the run path below the root (`updates|refund`), not `node:task_id` |
//! | double texting | `reject`, `enqueue`, `interrupt` (also while the thread waits at an approval), `rollback` (the rolled-back run is deleted); new input on a thread waiting at an interrupt starts a new run | | giving up the waiting interrupt needs what answering it needs (the flow's approvals) |
//! | crons | `create` (a new thread each firing), `create_for_thread`, `search` (`assistant_id`, `thread_id`, `enabled`, `limit`/`offset`), `count`, `update` (`schedule`, `input`, `metadata`, `enabled`: pause and resume), `delete`; on a server with a run queue (schedules live in its store, [`schedules`]) | `end_time`, `on_run_completed`, a `config`/`context` per cron, `sort_by`, `select` | UTC only (another `timezone` is a 400); the cron's runs run as the principal that created it; `missed` (`catch_up`, the default, or `skip`) says what a firing missed during downtime does |
//! | store | | `store.*` (long-term memory is the runtime's `MemoryStore`, not served here yet) | |
//!
//! # A2A
//!
//! Every served flow is an A2A 1.0 agent (JSON-RPC binding) at `/a2a/{flow}`, its card at
//! `/a2a/{flow}/.well-known/agent-card.json` (public).
//!
//! How agentflow's concepts map to A2A's:
//!
//! | agentflow | A2A |
//! | --- | --- |
//! | a thread | a `contextId` (1 to 40 characters of `A-Z a-z 0-9 _ -`; a new one is made when the message names none) |
//! | a turn of the thread | a task, id `CONTEXT.TURN` (`ctx-1.0`, `ctx-1.1`, ...) |
//! | an agent's message | a `TASK_STATE_WORKING` status update whose message's metadata is `{"agentflow": {"agent", "runPath"}}` |
//! | a transfer | a status update with `{"agentflow": {"transfer": TARGET}}` in its metadata |
//! | an interrupt (the refund's approval) | `TASK_STATE_INPUT_REQUIRED`, the question as the status message's text, `{"interrupts": [{"id", "info", "address", "answer"?}]}` as its data part (never the agent's saved state); an approval's `answer` states what it takes: `{"schema": JSON Schema of {"approve": bool, "reason"?}, "text": {"approve": [...], "deny": [...]}}` |
//! | the resume data | the client's next message in the context: a data part (keyed by interrupt id to answer several apart), or its text as a JSON string; an approval (an interrupt whose info has `approval`) takes the text `approve` or `deny` (also `yes`/`no`, `approved`/`denied`, any case, a final full stop allowed), and any other text is refused (`-32602`, naming the answers taken; the task still waits): a client that answers in prose, often an LLM agent, is told the rule instead of being asked again |
//! | the turn's answer | the artifact `answer`, then `TASK_STATE_COMPLETED` |
//! | the agent's plan (the kit's `write_plan`, thread value `kit.plan`) | the artifact `plan`, sent each time the agent rewrites it (each version replaces the one before in the task): a data part `{"steps": [{"step", "status"}]}` and a text checklist (`[x]` done, `[>]` in progress, `[ ]` pending) |
//! | a failed turn | `TASK_STATE_FAILED`; the status message's text is the public message and its correlation id (`The assistant is unavailable right now; try again. (ref 2df4b7bc25b44110)`), its metadata `{"agentflow": {"error": {"code", "message", "correlation_id"}}}` (the outward form, `agentweave_server::outward`: the internal error is only in the server's log, under the same id) |
//! | a cancelled turn | `TASK_STATE_CANCELED` (nothing of it is recorded) |
//! | a turn given up while it waits for input (`ThreadHandle::withdraw`) | `CancelTask` of an `input-required` task: `TASK_STATE_CANCELED`; the interrupts are dropped, the checkpoint released, and the context's next message starts a new task |
//! | the server's errors | JSON-RPC errors with A2A's codes (a failure inside the server, of its store or a model, says only the public message and correlation id; invalid parameters say what is wrong): `-32700` parse, `-32600` invalid request (a busy thread; a scope or an approval refused is sent with HTTP `403` and `data.code` `"forbidden"`, the native API's public code), `-32601` method, `-32602` params (also a message without `messageId` or with a role other than `ROLE_USER`), `-32001` task not found, `-32002` not cancelable, `-32003` push notifications, `-32004` unsupported (a message to an ended task, `SubscribeToTask` of an ended task), `-32009` version |
//!
//! A task runs on its own once started: a client that disconnects does not stop it, and
//! `SubscribeToTask` joins it again; `CancelTask` stops it. `SubscribeToTask` of a task waiting
//! for input (not a final state) streams the task as it is, then, once an answer resumes it, its
//! states to the next that ends a stream (completed, failed, or input required again). `CancelTask` of a task that waits for
//! input gives it up: the caller needs what answering it needs (the flow's approvals: giving up
//! refuses the question), the thread's turn is recorded as withdrawn (what it did so far stays in
//! the thread), its checkpoint is deleted, the task is `TASK_STATE_CANCELED` (also for `GetTask`
//! and `ListTasks`), a late answer to it is refused, and the context's next message starts a new
//! task.
//!
//! `ListTasks` lists the caller's tasks of the flow: one context's (`contextId`), or those of its
//! threads (at most 200 threads looked at), most recently updated first, filtered by `status` and
//! `statusTimestampAfter` (RFC 3339: only tasks whose status changed after it), by pages
//! (`pageSize` 1 to 100, 50 by default; `pageToken` is the `nextPageToken` of the previous page;
//! `totalSize` counts them all); histories are trimmed to `historyLength`, artifacts only with
//! `includeArtifacts`. A `pageSize` outside 1-100, a negative `historyLength`, a `status` that is
//! not a task state and a timestamp that is not RFC 3339 are refused (`-32602`).
//!
//! **Push notifications.** On a server with a webhook secret
//! (`ServerBuilder::webhook_secret`), a client sets webhooks per task with
//! `CreateTaskPushNotificationConfig` (`taskId`, `url`, optional `id`, `token`, `authentication`),
//! or with `SendMessage`'s `configuration.taskPushNotificationConfig`; reads them with
//! `GetTaskPushNotificationConfig`/`ListTaskPushNotificationConfigs`, removes them with
//! `DeleteTaskPushNotificationConfig`. When the task ends or waits for input, each webhook is
//! POSTed the task as a `StreamResponse` (`{"task": {...}}`) by the server's webhook sender (the
//! one of background runs): `http(s)` URLs only (checked when the config is set), at most 8 per
//! task, signed (`X-Agentflow-Timestamp`, `X-Agentflow-Signature: sha256=HMAC(secret,
//! "TIMESTAMP.BODY")`), with `X-A2A-Notification-Token: TOKEN` and `Authorization: SCHEME
//! CREDENTIALS` when the config has them, five attempts with backoff, redirects only to the same
//! host. Without a webhook secret these methods answer `-32003` (push notifications not
//! supported). Configs live in the serving process (a restart forgets them).
//!
//! How close it is to A2A 1.0, checked with the official client (`a2a-sdk` 1.3):
//!
//! | | implemented | not implemented | differs from the reference |
//! | --- | --- | --- | --- |
//! | methods | `SendMessage`, `SendStreamingMessage`, `GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask` (a running task, or one waiting for input and its later states), the four push-notification config methods (with a webhook secret) | `GetExtendedAgentCard` (the card says `extendedAgentCard: false`), the gRPC and HTTP+JSON bindings | |
//! | validation | `messageId` and `role` required; `ListTasks` `pageSize` 1-100 (default 50), `historyLength` >= 0, known states, `statusTimestampAfter`; a message to an ended task `-32004` | | |
//! | parts | text and data parts | file parts (refused as a message without text or data) | a data part answers an interrupt; an approval's text answer follows the rule above |
//! | states | `submitted`, `working`, `input-required`, `completed`, `failed`, `canceled` | `auth-required`, `rejected` (never sent) | a task is a turn of the context's thread |
//!
//! # AG-UI
//!
//! `POST /agui/{flow}` takes AG-UI's `RunAgentInput` and answers the run as AG-UI events.
//!
//! | AG-UI | agentflow |
//! | --- | --- |
//! | `threadId` | the thread (1 to 40 characters of `A-Z a-z 0-9 _ -`; a UUID is fine) |
//! | `state` (an object) | session values of the run, set before its first agent starts; the member `agentweave` (the server's own) is ignored, a key `agentflow.*` (the framework's values) or more than `Limits::max_message_bytes` is refused (400) |
//! | `tools` | front-end tools: added to every LLM agent of the run (see below) |
//! | the input's last `user` message | the turn's message (earlier messages are in the thread already) |
//! | `resume` entries (`resolved` with a `payload`, or `cancelled` = `null`) | the resume data of every interrupt the thread waits on |
//! | `RUN_STARTED`, `RUN_FINISHED` (`result` = the answer) | the turn |
//! | `STATE_SNAPSHOT`: the session values, and `agentflow: {"agent", "runPath", "turn"}` | the run's session values in their outward form (`agentweave_server::outward::OutwardValues`: the application's values, never the framework's `agentflow.*` ones such as token usage, nor any agent's saved state), and the agent in charge |
//! | `STATE_DELTA` (JSON Patch: `add`/`replace`/`remove` of `/KEY`, `replace` of `/agentflow/agent` and `/agentflow/runPath`) | a session value an agent set, changed or removed (sent before the next event), or another agent taking over |
//! | `TEXT_MESSAGE_START/CONTENT/END` | what an agent says (one `CONTENT` per streamed chunk) |
//! | `TOOL_CALL_START/ARGS/END`, `TOOL_CALL_RESULT` | an agent's tool calls and their results (transfers included); a `toolCallId` is unique within the run whatever the models send (a model id seen before in the run goes out as `ID~2`, `ID~3`...), and a front-end tool's result is matched back under the id its call went out with |
//! | `CUSTOM` `agentflow.transfer` `{"from", "to", "runPath"}` | a transfer |
//! | `CUSTOM` `agentflow.interrupt` `{"id", "info", "address"}`, and `RUN_FINISHED` with outcome `interrupt` (each interrupt's question as its `message`) | an interrupt (never the agent's saved state) |
//! | `RUN_ERROR` `{"message", "code"}`, the message the public one with its correlation id, the code stable (`model_unavailable`, `store_unavailable`, `timeout`, ...), `metadata.agentflow.error` the public error | a failed turn (nothing recorded), or one past its time limit; the internal error is only in the server's log, under the same correlation id |
//!
//! Every event's `metadata` names its agent and run path (`{"agentflow": {"agent", "runPath"}}`).
//!
//! **The shared state.** AG-UI's state is the run's session values: the agents read the ones
//! the client's `state` gives (instruction templates `{name}`, `cx.session().value("name")`), and
//! what they write reaches the client as `STATE_DELTA`. A client that sends back the state it got
//! (`HttpAgent` does) carries the values from one run to the next.
//!
//! **Front-end tools.** The tools the client lists in the input's `tools` (`name`, `description`,
//! `parameters` as JSON Schema) are added, for that run, to every LLM agent of the flow
//! (`RunOptions::frontend_tools`): the model sees them after the agent's own tools (a tool named
//! like one of the agent's own is left out for that agent). Names are 1 to 64 of `a-z A-Z 0-9 _
//! -`, at most 64 tools. An agent can also be given a `FrontendTool` at build time, like any tool.
//! When the model calls a front-end tool, the client sees `TOOL_CALL_START/ARGS/END` and the run
//! finishes with outcome `success` and the call in `pendingToolCallIds`; the client runs the tool
//! and starts the next run with a `tool` message for that call id, whose content becomes the
//! tool's result (the next run need not list the tool again). Inside agentflow the call is an
//! interrupt (`{"frontendTool": NAME, "toolCallId", "arguments"}`), so the thread waits durably, in
//! the store, for as long as the front end takes.
//!
//! How close it is to AG-UI 1.0, checked with the official client (`@ag-ui/client` 1.0):
//!
//! | | implemented | not implemented | differs from the reference |
//! | --- | --- | --- | --- |
//! | events | `RUN_STARTED`/`FINISHED`/`ERROR`, `TEXT_MESSAGE_*`, `TOOL_CALL_*` (ids unique within a run), `TOOL_CALL_RESULT`, `STATE_SNAPSHOT`, `STATE_DELTA`, `CUSTOM` (`agentflow.transfer`, `agentflow.interrupt`) | `STEP_*`, `MESSAGES_SNAPSHOT`, `REASONING_*`, `RAW` | an agent's change is a `STATE_DELTA` of `/agentflow/agent`, not a step |
//! | input | `threadId`, `runId` (idempotent), `messages` (the last user message, or tool results), `state`, `tools`, `resume` | `context`, `forwardedProps` (ignored) | earlier messages are read from the thread, not from the input |
//! | shared state | both ways: the input's `state` becomes session values, the agents' changes come back as deltas | predictive state updates (`PredictState` custom events) | the server's own member `agentweave` is ignored on input |
//! | front-end tools | declared per run in `tools` or per agent (`FrontendTool`); the call pauses the thread durably; a `tool` message answers it under the id it went out with | | the run finishes with `success` and `pendingToolCallIds`, then the next run resumes |
//!
//! # MCP
//!
//! With the `mcp` feature, `/v1/mcp` is an MCP server (streamable HTTP, rmcp's session
//! handling) under the server's auth and tenants: every served flow is a tool (its name, its
//! docs as the description, `{"message": TEXT}` as its input), an MCP session is a thread of
//! each flow (`mcp-HASH` under the caller's tenant; a session belongs to the principal that
//! opened it), a `tools/call` is a turn through the engine, and an approval the caller may
//! give is asked with `elicitation/create` (`{"approve": boolean, "reason"?: string}`), the
//! answer resuming the turn. Checked with the official Python SDK's client
//! (`flow-server/tests/mcp_client`).
//!
//! | | implemented | not implemented | differs from the reference |
//! | --- | --- | --- | --- |
//! | transport | streamable HTTP (`POST`, `GET` stream, `DELETE` session), protocol versions 2024-11-05 to 2025-11-25, sessions | `2026-07-28` (sessionless, no server requests), stdio, the old HTTP+SSE transport, resumption of a broken stream | sessions live in the process that opened them (the threads in the store) |
//! | tools | `tools/list` (a tool per flow), `tools/call` (text result; a failed turn `isError`; a thread left waiting `structuredContent` `{"status": "waiting", ...}`), progress notifications of the agents' messages | typed inputs (a flow takes a user message), `outputSchema`, resources, prompts, completions, tasks | |
//! | elicitation | form mode, for approvals the caller may answer | URL mode; questions other than approvals (reported in the result) | a declined or cancelled form leaves the thread waiting (answered through `/v1`) |
#![warn(missing_docs)]

// Layout (one concept per file):
// - `lib.rs`: `app()` (the router) and the auth layer in front of its `/v1` routes.
// - `auth`: who may call the API (`Auth`, `Authenticator`, bearer tokens) and the `Tenant`.
// - `access`: one access-log line per request (request id, method, path, status, principal).
// - `approvals`: who may answer a flow's interrupts (`Approvals`) and the record of answers.
// - `jwt`: JWT bearer authentication (`JwtAuth`: JWKS keys, issuer, audience, scope claim).
// - `principal`: who is calling (`Principal`: id, tenant, `Scopes`) and its extractor.
// - `state`: `AppState`, the flows, store and settings the handlers share, and its builder.
// - `limits`: `Limits`, what a request, a connection or a turn may take.
// - `error`: `ApiError`, every way a request fails as one JSON response.
// - `extract`: the request extractors (`JsonBody`, `ApiPath`) that fail as `ApiError`.
// - `routes`: the handlers of the `/v1` API.
// - `agent_protocol/`: the Agent Protocol (LangGraph clients) under /v1: threads, runs.
// - `queue/`: many servers, one queue: background runs in the store's run queue, the workers.
// - `recovery`: at start-up, the turns whose process died are recovered and recorded.
// - `idempotency`: `Idempotency-Key` (and A2A `messageId`, AG-UI `runId`) as run ids.
// - `runs/`: runs over HTTP (background runs, SSE attach with Last-Event-ID, wait, cancel).
// - `thread`: where a caller's thread lives in the store (`FLOW.TENANT.THREAD`).
// - `thread_views`: the caller's threads of a flow and one thread's timeline (for the console).
// - `turn`: a turn or resume of a thread as a stream of Server-Sent Events.
// - `sse`: the streamed response body (SSE frames, keep-alive, the streaming time limit).
// - `outward`: the one allow-listed outward form of events, messages, interrupts and errors
//   (public errors with correlation ids), used by every transport.
// - `wire`: the SSE events' table (public: clients read it), built from `outward`.
// - `webhooks`: a run's end POSTed, signed, to the URL it named.
// - `tree`: a flow's tree as JSON, Mermaid and SVG.
// - `console` (+ `console/`): the embedded web console's static files.
// - `serve`: the accept loop with the per-connection limits.
// - `a2a`: every served flow as an A2A agent (card, JSON-RPC endpoint, tasks).
// - `agui`: every served flow as an AG-UI agent (a run streamed as AG-UI events).
// - `mcp` (feature `mcp`): every served flow as a tool of an MCP server at /v1/mcp.
// - `demo`: the offline customer-service desk the example, tests and bench serve.
// - `bin/flow-server-demo.rs`: serves the demo.

mod a2a;
mod access;
mod agent_protocol;
mod agui;
mod approvals;
mod auth;
mod console;
pub mod demo;
mod error;
mod extract;
mod idempotency;
mod jwt;
mod limits;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod memory;
pub mod outward;
mod paging;
mod principal;
mod queue;
mod recovery;
mod routes;
mod run_slots;
mod runs;
pub mod schedules;
mod serve;
mod sse;
mod state;
#[cfg(feature = "temporal")]
pub mod temporal;
mod thread;
mod thread_views;
mod time_travel;
mod tree;
mod turn;
mod usage;
pub mod webhooks;
pub mod wire;

use std::net::SocketAddr;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::routing::post;
use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::CorsLayer;
use tower_http::trace::TraceLayer;

pub use access::RequestId;
/// The policy every request to a URL a caller chose is held to (webhooks, A2A push, MCP over
/// HTTP): [`ServerBuilder::outbound`] takes one; see `agentweave_runtime::outbound` for its rules.
pub use agentweave_runtime::outbound::OutboundPolicy;
pub use agui::FrontendTool;
pub use approvals::{ApprovalRecord, Approvals};
pub use auth::{bearer_token, Auth, Authenticator, Tenant, SHARED_TENANT};
pub use error::ApiError;
pub use jwt::{JwtAuth, JwtConfigError};
pub use limits::Limits;
pub use principal::{Principal, Scope, Scopes};
pub use queue::{run_workers, QueueOptions, Workers};
pub use recovery::{recover_dead_turns, RecoveryReport};
pub use schedules::{fire_due as fire_schedules, ScheduleClock};
pub use serve::{serve, serve_until};
pub use state::{AppState, BuildError, RunnerFn, ServedFlow, ServerBuilder, TenantFn};
pub use thread::{store_thread_id, valid_thread_id};
pub use tree::{mermaid, svg, TreeNode};

/// The router serving `state`: the `/v1` API and the console.
pub fn app(state: AppState) -> Router {
    let api = Router::new()
        .route("/me", get(routes::me))
        .route("/flows", get(routes::list_flows))
        .route("/flows/{flow}", get(routes::get_flow))
        .route("/flows/{flow}/mermaid", get(routes::get_mermaid))
        .route("/flows/{flow}/svg", get(routes::get_svg))
        .route(
            "/flows/{flow}/threads/{thread}",
            get(routes::get_thread).delete(routes::delete_thread),
        )
        .route(
            "/flows/{flow}/threads/{thread}/turns",
            post(routes::post_turn),
        )
        .route(
            "/flows/{flow}/threads/{thread}/resume",
            post(routes::post_resume),
        )
        .route("/flows/{flow}/interrupts", get(routes::flow_interrupts))
        .route(
            "/flows/{flow}/threads/{thread}/interrupts",
            get(routes::thread_interrupts),
        )
        .merge(runs::routes())
        .merge(thread_views::routes())
        .merge(time_travel::routes())
        .merge(agent_protocol::routes())
        .merge(memory::routes())
        .merge(schedules::routes())
        .merge(usage::routes());
    #[cfg(feature = "mcp")]
    let api = api.merge(mcp::routes(&state));
    let api = api
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            authenticate,
        ))
        .route("/health", get(routes::health))
        .route("/ready", get(routes::ready))
        .method_not_allowed_fallback(routes::method_not_allowed);

    let router = Router::new()
        .route("/", get(console::index))
        .route("/console.js", get(console::script))
        .route("/console.css", get(console::style))
        .nest("/v1", api)
        .merge(a2a::router(&state))
        .merge(agui::router(&state));
    // The sink of streamed model output from Temporal workers (its token is its credential).
    #[cfg(feature = "temporal")]
    let router = router.merge(temporal::routes());
    let mut router = router
        .method_not_allowed_fallback(routes::method_not_allowed)
        .fallback(routes::no_route)
        .layer(DefaultBodyLimit::max(state.limits().max_body_bytes))
        .layer(CatchPanicLayer::custom(|_panic| {
            ApiError::Incident(outward::PublicError::internal(
                &"a request handler panicked",
            ))
            .into_response()
        }))
        // The request's span names its path, never its query string (where a client may have
        // put a token).
        .layer(TraceLayer::new_for_http().make_span_with(
            |request: &axum::http::Request<axum::body::Body>| {
                tracing::debug_span!(
                    "request",
                    method = %request.method(),
                    path = %request.uri().path(),
                    version = ?request.version(),
                )
            },
        ))
        .layer(axum::middleware::from_fn(access::access_log));
    if !state.cors_origins().is_empty() {
        router = router.layer(
            CorsLayer::new()
                .allow_origin(state.cors_origins().to_vec())
                .allow_methods([Method::GET, Method::POST, Method::PUT, Method::DELETE])
                .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE]),
        );
    }
    router.with_state(state)
}

/// The middleware in front of the authenticated routes: authenticates the request into a
/// [`Principal`], resolves its [`Tenant`], and puts both in the request's extensions (handlers
/// take them as `Principal` and `Extension<Tenant>`, and check their scope with
/// [`Principal::require`]). A router of another protocol mounted beside `/v1` puts its routes
/// behind it with `route_layer(axum::middleware::from_fn_with_state(state, authenticate))`.
pub async fn authenticate(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let principal = match state.auth().check(&parts) {
        Ok(p) => p,
        Err(e) => return refused(&parts, e),
    };
    let tenant = match state.tenant_for(&principal, &parts) {
        Ok(t) => t,
        Err(e) => return refused(&parts, e),
    };
    if let Some(slot) = parts.extensions.get::<access::PrincipalSlot>() {
        *slot.0.lock().expect("principal slot") = Some(principal.id().into());
    }
    parts.extensions.insert(Tenant(tenant));
    parts.extensions.insert(principal);
    next.run(Request::from_parts(parts, body)).await
}

/// A refused request's answer. Its body is never read, so the connection cannot carry another
/// request after it: a request that has a body is told `Connection: close` (and the
/// connection is closed), rather than finding it closed without a word.
fn refused(parts: &axum::http::request::Parts, error: ApiError) -> Response {
    let mut response = error.into_response();
    let has_body = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() != "0")
        || parts.headers.contains_key(header::TRANSFER_ENCODING);
    if has_body {
        response.headers_mut().insert(
            header::CONNECTION,
            axum::http::HeaderValue::from_static("close"),
        );
    }
    response
}

/// Why [`serve`] stopped or did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Dev mode (no authentication) on an address others can reach.
    #[error(
        "refusing to serve without authentication on {addr}: dev mode listens on loopback \
         addresses only (127.0.0.1 or ::1); configure Auth::bearer to serve elsewhere"
    )]
    DevModeNotLoopback {
        /// The listener's address.
        addr: SocketAddr,
    },
    /// The listener failed.
    #[error("the listener failed: {0}")]
    Io(#[from] std::io::Error),
}
