//! The web console: three static files compiled into the binary, served at `/`.
//!
//! Plain HTML, CSS and JavaScript with no external resource (no CDN, no build step): the
//! flow's tree drawn as SVG from `GET /v1/flows/{flow}`, a chat panel streaming each turn's
//! answer, a timeline of the turn's events labelled by run path with the tokens each turn used,
//! the caller's threads and the current thread's runs, a Stop button with the cancel modes, and
//! the approvals queue with approve and deny buttons: each card says the question the tool or
//! the application wrote, the call's arguments as the application lets approvers see them
//! ([`ToolApprovals::redact`](agentweave_runtime::ToolApprovals::redact)), who asked and which agent.
//! A tool's progress shows on its call's timeline row. The history lists each step with what it
//! said and when, and forks at it; a fork inside a turn waits until its owner continues it. When
//! the server keeps long-term memory ([`ServerBuilder::memory`](crate::ServerBuilder::memory)),
//! "Remembered about you" lists the signed-in principal's `user` memory, each item with Delete.
//!
//! Each turn is a background run (`POST .../runs`, `on_disconnect: continue`); the page's
//! address names the flow and thread (`#flow=..&thread=..`), so a reload rebuilds the thread
//! from `GET .../timeline` and re-attaches to a run still going (`GET .../runs/{run}/stream`,
//! with `Last-Event-ID` after a dropped connection), and a link naming another thread opens it.

use axum::http::header;
use axum::response::{Html, IntoResponse, Response};

const INDEX: &str = include_str!("console/index.html");
const SCRIPT: &str = include_str!("console/console.js");
const STYLE: &str = include_str!("console/console.css");

/// `GET /`: the console's page.
pub async fn index() -> Response {
    (
        [(
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; \
             connect-src 'self'; frame-ancestors 'none'",
        )],
        Html(INDEX),
    )
        .into_response()
}

/// `GET /console.js`.
pub async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
        .into_response()
}

/// `GET /console.css`.
pub async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response()
}
