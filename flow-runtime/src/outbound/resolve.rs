//! The guarded resolver: names resolved, then every refused address dropped, on every
//! connection.

use std::net::{IpAddr, SocketAddr};

use futures::future::BoxFuture;
use futures::FutureExt;

use super::{OutboundError, OutboundPolicy};

/// A name lookup: the addresses `host` resolves to. [`SystemLookup`] asks the system's
/// resolver; a test gives one that answers what it likes.
pub trait Lookup: Send + Sync + 'static {
    /// The addresses of `host`.
    fn lookup(&self, host: String) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>>;
}

/// The system's resolver (`getaddrinfo`, through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup(&self, host: String) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        async move {
            let found = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(found.map(|a| a.ip()).collect())
        }
        .boxed()
    }
}

/// A `reqwest` resolver that resolves through the policy's [`Lookup`] and keeps only the
/// addresses the [`OutboundPolicy`] permits; a name left with none fails to resolve, with
/// [`OutboundError::RefusedAddress`] as the cause. `reqwest` asks it for every new
/// connection, so an answer that changes between two connections (DNS rebinding) is checked
/// each time.
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    policy: OutboundPolicy,
}

impl GuardedResolver {
    /// A resolver held to `policy`.
    pub fn new(policy: OutboundPolicy) -> Self {
        GuardedResolver { policy }
    }

    /// The addresses of `host` the policy permits (port 0), or why there are none.
    pub async fn resolve_checked(&self, host: &str) -> Result<Vec<SocketAddr>, OutboundError> {
        let found = self
            .policy
            .name_lookup()
            .lookup(host.to_owned())
            .await
            .map_err(|e| OutboundError::Unresolved {
                host: host.to_owned(),
                reason: e.to_string(),
            })?;
        let mut kept = Vec::new();
        let mut refused = None;
        for address in found {
            match self.policy.check_address(host, address) {
                Ok(()) => kept.push(SocketAddr::new(address, 0)),
                Err(e) => refused = Some(e),
            }
        }
        match (kept.is_empty(), refused) {
            (false, _) => Ok(kept),
            (true, Some(e)) => {
                tracing::warn!(host, error = %e, "an outbound request was refused after DNS");
                Err(e)
            }
            (true, None) => Err(OutboundError::Unresolved {
                host: host.to_owned(),
                reason: "no address".into(),
            }),
        }
    }
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let this = self.clone();
        let host = name.as_str().to_owned();
        async move {
            let kept = this.resolve_checked(&host).await?;
            let addrs: reqwest::dns::Addrs = Box::new(kept.into_iter());
            Ok(addrs)
        }
        .boxed()
    }
}
