//! Serves the offline demo desk ([`flow_server::demo`]) from a store directory: the process the
//! scale-out test starts twice on one store, and a quick way to try the server.
//!
//! ```text
//! flow-server-demo STORE_DIR [ADDR]        # ADDR defaults to 127.0.0.1:0 (a free port)
//! ```
//!
//! With `AGENTFLOW_TOKEN` set it requires that bearer token; without, it runs in dev mode
//! (loopback only). It prints `listening on http://ADDR/` once it accepts connections, and
//! stops when its standard input closes.

use flow_runtime::{FileStore, TurnRouting};
use flow_server::{AppState, Auth};
use tokio::io::AsyncReadExt;

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .ok_or("usage: flow-server-demo STORE_DIR [ADDR]")?;
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let builder = AppState::builder(FileStore::new(&dir)?)
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
