//! Serves the offline demo desk ([`flow_server::demo`]) from a store: the process the
//! scale-out test starts twice on one store, and a quick way to try the server.
//!
//! ```text
//! flow-server-demo STORE_DIR [ADDR]          # a FileStore directory
//! flow-server-demo --postgres URL [ADDR]     # a PostgreSQL database (feature `postgres`)
//! ```
//!
//! ADDR defaults to 127.0.0.1:0 (a free port). With `AGENTFLOW_TOKEN` set it requires that
//! bearer token; without, it runs in dev mode (loopback only). It prints
//! `listening on http://ADDR/` once it accepts connections, and stops when its standard input
//! closes.

use flow_runtime::{CheckpointStore, FileStore, ThreadStore, TurnRouting};
use flow_server::{AppState, Auth};
use tokio::io::AsyncReadExt;

const USAGE: &str =
    "usage: flow-server-demo STORE_DIR [ADDR] | flow-server-demo --postgres URL [ADDR]";

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let store = args.next().ok_or(USAGE)?;
    if store == "--postgres" {
        let url = args.next().ok_or(USAGE)?;
        let addr = args.next();
        return serve(postgres(&url).await?, addr).await;
    }
    serve(FileStore::new(&store)?, args.next()).await
}

#[cfg(feature = "postgres")]
async fn postgres(
    url: &str,
) -> Result<flow_runtime::store::PostgresStore, Box<dyn std::error::Error>> {
    Ok(flow_runtime::store::PostgresStore::connect(url).await?)
}

#[cfg(not(feature = "postgres"))]
async fn postgres(_url: &str) -> Result<FileStore, Box<dyn std::error::Error>> {
    Err(
        "this flow-server-demo was built without PostgreSQL: build it with `--features postgres`"
            .into(),
    )
}

/// Serves the demo desk from `store` on `addr` until standard input closes.
async fn serve<S: ThreadStore + CheckpointStore + Clone>(
    store: S,
    addr: Option<String>,
) -> Result<(), Box<dyn std::error::Error>> {
    let addr = addr.unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let builder = AppState::builder(store)
        .flow("desk", flow_server::demo::desk())
        .turn_routing(TurnRouting::Root);
    let state = match std::env::var("AGENTFLOW_TOKEN") {
        Ok(token) => builder.auth(Auth::bearer(token)),
        Err(_) => builder.dev_mode(),
    }
    .build()?;
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}/", listener.local_addr()?);
    flow_server::serve_until(listener, state, async {
        let mut sink = Vec::new();
        let _ = tokio::io::stdin().read_to_end(&mut sink).await;
    })
    .await?;
    Ok(())
}
