//! [`serve`] and [`serve_until`]: the accept loop. Each connection is served by hyper's HTTP/1.1
//! server with the limits of [`Limits`](crate::Limits) that only the connection can enforce:
//! how long a client may take to send a request's head (slowloris, and idle keep-alive
//! connections), how large the head may be, and how many connections may be open at once (the
//! connections over it get one JSON 503 and are closed).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tower_service::Service;

use crate::error::ApiError;
use crate::state::AppState;
use crate::{app, ServeError};

/// Serves `state` on `listener` until the process ends.
pub async fn serve(listener: TcpListener, state: AppState) -> Result<(), ServeError> {
    serve_until(listener, state, std::future::pending()).await
}

/// Serves `state` on `listener` until `shutdown` completes, then lets open requests finish.
/// With a run queue ([`ServerBuilder::run_queue`](crate::ServerBuilder::run_queue)) it also
/// runs the queue's workers; at shutdown they stop claiming and finish (or hand back) their
/// runs.
///
/// Each connection gets [`Limits::header_read_timeout`](crate::Limits::header_read_timeout) to
/// send each request's head (a connection that idles longer between requests is closed too),
/// and at most [`Limits::max_header_bytes`](crate::Limits::max_header_bytes) of head (431
/// otherwise, from the HTTP layer, without a body). Beyond
/// [`Limits::max_connections`](crate::Limits::max_connections) open connections, a new
/// connection's request is answered `503 overloaded` (JSON, `Retry-After: 1`) and the
/// connection closed.
pub async fn serve_until(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let addr = listener.local_addr()?;
    if state.auth().is_dev_mode() && !addr.ip().is_loopback() {
        return Err(ServeError::DevModeNotLoopback { addr });
    }
    let limits = state.limits().clone();
    // With a run queue, this process also runs queued runs (stopped gracefully below).
    let workers = crate::queue::Workers::start(&state);
    // The turns whose process died are finished in the background (see `recovery`).
    let recovering = {
        let state = state.clone();
        tokio::spawn(async move { crate::recovery::recover_dead_turns(&state).await })
    };
    let router = app(state);
    let connections = Arc::new(Semaphore::new(limits.max_connections));
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_header_size(limits.max_header_bytes);
    let mut refusing = http.clone();
    refusing.keep_alive(false);

    // Connections hold a receiver; shutdown waits until every one is gone.
    let (stop_tx, stop_rx) = watch::channel(());
    let (open_tx, open_rx) = watch::channel(());
    drop(open_rx);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors or a connection reset before accept: wait a
                    // little rather than spin, as hyper's and axum's servers do.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let io = TokioIo::new(stream);
        let mut stop = stop_rx.clone();
        let open = open_tx.subscribe();
        match Arc::clone(&connections).try_acquire_owned() {
            Ok(permit) => {
                let service = Connection {
                    router: router.clone(),
                    peer,
                };
                let conn = http.serve_connection(io, service);
                tokio::spawn(async move {
                    let _permit = permit;
                    let _open = open;
                    let mut conn = std::pin::pin!(conn);
                    tokio::select! {
                        result = conn.as_mut() => log_end(result),
                        _ = stop.changed() => {
                            conn.as_mut().graceful_shutdown();
                            log_end(conn.await);
                        }
                    }
                });
            }
            Err(_) => {
                let limit = limits.max_connections;
                let service = hyper::service::service_fn(move |_: Request<Incoming>| async move {
                    Ok::<_, Infallible>(
                        ApiError::Overloaded {
                            what: "open connections",
                            limit,
                        }
                        .into_response(),
                    )
                });
                let conn = refusing.serve_connection(io, service);
                tokio::spawn(async move {
                    let _open = open;
                    log_end(conn.await);
                });
            }
        }
    }
    drop(listener);
    // A recovery still running is left to finish (cancelling a recovered turn would close
    // its mark and lose it); the process ending stops it, and the next start finishes it.
    drop(recovering);
    if let Some(workers) = workers {
        workers.stop().await;
    }
    drop(stop_tx);
    open_tx.closed().await;
    Ok(())
}

fn log_end(result: Result<(), hyper::Error>) {
    if let Err(e) = result {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}

/// The router, with the peer's address in each request's extensions (axum's [`ConnectInfo`]).
#[derive(Clone)]
struct Connection {
    router: Router,
    peer: SocketAddr,
}

impl hyper::service::Service<Request<Incoming>> for Connection {
    type Response = Response;
    type Error = Infallible;
    type Future = axum::routing::future::RouteFuture<Infallible>;

    fn call(&self, mut request: Request<Incoming>) -> Self::Future {
        request.extensions_mut().insert(ConnectInfo(self.peer));
        self.router.clone().call(request.map(Body::new))
    }
}
