//! The outbound policy: what this process may connect to when a URL comes from someone else.
//!
//! A webhook, an A2A push configuration, an A2A remote node or an MCP server reached over HTTP
//! names a URL that a caller chose. Followed blindly, such a URL reaches what the caller could
//! not reach themselves: the server's own ports, the cloud's metadata service
//! (`169.254.169.254`), a database on the private network. One [`OutboundPolicy`] decides, for
//! every such request:
//!
//! - `address`: the policy's [`check_url`](OutboundPolicy::check_url) refuses a URL that is not
//!   `http(s)`, has no host, or carries userinfo (`user:pass@`), and an address literal in a
//!   refused range; the client it builds ([`OutboundPolicy::client`]) resolves names through a
//!   [`GuardedResolver`], which drops every refused address **after** DNS, on every new
//!   connection, so a name that answers a public address first and `127.0.0.1` later (DNS
//!   rebinding) still never reaches loopback. The refused ranges (see [`refused_range`]):
//!   unspecified, loopback, private (RFC 1918, unique-local `fc00::/7`), shared (`100.64/10`),
//!   link-local, multicast, broadcast and reserved, in every spelling a URL parser accepts
//!   (`127.1`, `2130706433`, `0x7f000001`, `[::ffff:127.0.0.1]`, `[::1]`, NAT64 and 6to4
//!   addresses that embed one of them) and the names `localhost` and `*.localhost`;
//! - `redirects`: followed only to the same origin (scheme, host and port), a few at most;
//! - `headers`: only names on the policy's allow-list ([`OutboundPolicy::check_header`]), and
//!   a caller's own credentials never to an address the operator let through
//!   ([`OutboundPolicy::without_exceptions`]);
//! - `time`: a connect timeout and a total timeout on every request;
//! - `load`: at most [`max_concurrent_per_tenant`](OutboundPolicy::max_concurrent_per_tenant)
//!   deliveries at once for one tenant, and a bounded line of them waiting
//!   ([`OutboundPolicy::delivery`]).
//!
//! Operators let chosen internal hosts and ranges through, explicitly:
//! [`allow_host`](OutboundPolicy::allow_host) and [`allow_net`](OutboundPolicy::allow_net) (a
//! test's receiver on loopback needs `allow_net("127.0.0.0/8")`). A model client the operator
//! configures is not held to the policy unless it opts in.
//!
//! Files: `policy` (the policy and its checks), `ranges` (which addresses are refused),
//! `resolve` (the guarded resolver and the name lookup it wraps), `deliveries` (the per-tenant
//! bound), `error` (why a request was refused).

mod deliveries;
mod error;
mod policy;
mod ranges;
mod resolve;

pub use deliveries::DeliveryPermit;
pub use error::OutboundError;
pub use policy::{OutboundPolicy, DEFAULT_HEADERS};
pub use ranges::refused_range;
pub use resolve::{GuardedResolver, Lookup, SystemLookup};
