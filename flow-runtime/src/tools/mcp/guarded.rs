//! rmcp's reqwest held to an outbound policy: the policy's guarded resolver on every
//! connection (for the MCP requests and the OAuth ones), and errors told with their causes.

use std::sync::Arc;

/// A client of rmcp's reqwest held to `policy`: the guarded resolver on every connection, no
/// proxy, redirects only to the same origin, the policy's connect timeout (calls are bounded
/// by the server's own timeouts).
pub(super) fn guarded_client(
    policy: &crate::outbound::OutboundPolicy,
) -> Result<reqwest013::Client, reqwest013::Error> {
    guarded_builder(policy)
        .redirect(same_origin_redirects())
        .build()
}

/// Redirects followed only to the same origin, at most three.
pub(super) fn same_origin_redirects() -> reqwest013::redirect::Policy {
    reqwest013::redirect::Policy::custom(|attempt| {
        let from = attempt.previous().last().map(|u| u.origin());
        if attempt.previous().len() > 3 || from.as_ref() != Some(&attempt.url().origin()) {
            attempt.error("a redirect to another origin is not followed")
        } else {
            attempt.follow()
        }
    })
}

/// A builder of rmcp's reqwest held to `policy`'s addresses: the guarded resolver on every
/// connection, no proxy, the policy's connect timeout.
pub(super) fn guarded_builder(
    policy: &crate::outbound::OutboundPolicy,
) -> reqwest013::ClientBuilder {
    reqwest013::Client::builder()
        .dns_resolver(Arc::new(Guarded(crate::outbound::GuardedResolver::new(
            policy.clone(),
        ))))
        .no_proxy()
        .connect_timeout(policy.connect_limit())
}

/// The outbound policy's guarded resolver, for rmcp's reqwest.
struct Guarded(crate::outbound::GuardedResolver);

impl reqwest013::dns::Resolve for Guarded {
    fn resolve(&self, name: reqwest013::dns::Name) -> reqwest013::dns::Resolving {
        let resolver = self.0.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let kept = resolver.resolve_checked(&host).await?;
            let addrs: reqwest013::dns::Addrs = Box::new(kept.into_iter());
            Ok(addrs)
        })
    }
}

/// `error` and the causes under it (a refused address is a cause several levels down).
pub(super) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

/// `response`'s body, read as it comes to at most `max` bytes (more is an error saying so).
pub(super) async fn bounded_body(
    mut response: reqwest013::Response,
    max: usize,
) -> Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if chunk.len() > max - body.len() {
            return Err(format!("an answer of more than {max} bytes was cut off").into());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
