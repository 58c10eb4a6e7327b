//! Why an outbound request was refused.

/// Why the [`OutboundPolicy`](super::OutboundPolicy) refused a request, before anything was
/// sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OutboundError {
    /// The URL does not parse, is not `http(s)`, has no host, or carries userinfo.
    #[error("the URL '{url}' is refused: {reason}")]
    BadUrl {
        /// The URL, cut to 200 characters, without its userinfo.
        url: String,
        /// What is wrong with it, and what to send instead.
        reason: String,
    },
    /// The host is, or resolves only to, addresses in a refused range.
    #[error(
        "the host '{host}' is refused: {address} is a {range} address; an operator who means \
         it lets it through with OutboundPolicy::allow_host or allow_net"
    )]
    RefusedAddress {
        /// The host as named in the URL.
        host: String,
        /// One refused address it is (or resolves to).
        address: std::net::IpAddr,
        /// The range it is in (`loopback`, `private`, `link-local`, ...).
        range: &'static str,
    },
    /// The name did not resolve.
    #[error("the host '{host}' did not resolve: {reason}")]
    Unresolved {
        /// The host as named in the URL.
        host: String,
        /// The resolver's answer.
        reason: String,
    },
    /// A header not on the policy's allow-list.
    #[error(
        "the header '{name}' may not be sent to a caller's URL (not on the outbound allow-list)"
    )]
    Header {
        /// The header's name.
        name: String,
    },
    /// A caller's own credentials to a host the operator let through.
    #[error(
        "caller-chosen credentials are not sent to '{host}': it is an internal host the \
         operator allowed; send them to a public URL"
    )]
    CredentialsToInternal {
        /// The host as named in the URL.
        host: String,
    },
    /// Too many deliveries of one tenant wait already.
    #[error(
        "tenant '{tenant}' has {waiting} outbound deliveries waiting already (the most the \
         outbound policy keeps); this one is dropped"
    )]
    TooManyWaiting {
        /// The tenant.
        tenant: String,
        /// How many wait.
        waiting: usize,
    },
}
