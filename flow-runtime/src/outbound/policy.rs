//! The policy: which URLs, addresses and headers a request to a caller's URL may use, and
//! within which times.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use ipnet::IpNet;
use reqwest::Url;

use super::deliveries::Deliveries;
use super::resolve::{GuardedResolver, Lookup, SystemLookup};
use super::{refused_range, OutboundError};

/// The headers a request to a caller's URL may carry unless the policy says otherwise: the
/// body's type, the webhook signature's two headers, A2A's notification token, and
/// `authorization` (sent only where [`OutboundPolicy::without_exceptions`] allows).
pub const DEFAULT_HEADERS: &[&str] = &[
    "content-type",
    "accept",
    "user-agent",
    "authorization",
    "x-agentflow-timestamp",
    "x-agentflow-signature",
    "x-a2a-notification-token",
];

/// The rules for requests to URLs that callers chose (see the [module](super)): on by
/// default, strict ([`OutboundPolicy::default`]); an operator lets chosen hosts and ranges
/// through.
///
/// ```
/// use agentweave_runtime::outbound::{OutboundError, OutboundPolicy};
///
/// let strict = OutboundPolicy::default();
/// for url in ["http://localhost/", "http://127.1/", "http://2130706433/", "http://0x7f000001/",
///             "http://0.0.0.0/", "http://[::ffff:127.0.0.1]/", "http://[::1]/",
///             "http://169.254.169.254/latest/meta-data/", "http://user:pw@example.com/"] {
///     assert!(strict.check_url(url).is_err(), "{url}");
/// }
/// assert!(strict.check_url("https://hooks.example.com/agentflow").is_ok());
///
/// // An operator lets its own receiver on loopback through.
/// let tests = OutboundPolicy::default().allow_net("127.0.0.0/8").unwrap();
/// assert!(tests.check_url("http://127.0.0.1:8080/hook").is_ok());
/// ```
#[derive(Clone)]
pub struct OutboundPolicy {
    hosts: Vec<String>,
    nets: Vec<IpNet>,
    headers: Vec<String>,
    connect_timeout: Duration,
    total_timeout: Duration,
    max_redirects: usize,
    lookup: Arc<dyn Lookup>,
    deliveries: Arc<Deliveries>,
}

impl std::fmt::Debug for OutboundPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboundPolicy")
            .field("hosts", &self.hosts)
            .field("nets", &self.nets)
            .field("headers", &self.headers)
            .field("connect_timeout", &self.connect_timeout)
            .field("total_timeout", &self.total_timeout)
            .field("max_redirects", &self.max_redirects)
            .field("max_concurrent_per_tenant", &self.deliveries.concurrent())
            .field("max_waiting_per_tenant", &self.deliveries.waiting())
            .finish()
    }
}

impl Default for OutboundPolicy {
    /// Strict: no internal host or range let through, [`DEFAULT_HEADERS`], a 5 s connect and
    /// 10 s total timeout, 3 same-origin redirects, 8 concurrent deliveries per tenant and
    /// 1,000 waiting.
    fn default() -> Self {
        OutboundPolicy {
            hosts: Vec::new(),
            nets: Vec::new(),
            headers: DEFAULT_HEADERS.iter().map(|h| (*h).to_owned()).collect(),
            connect_timeout: Duration::from_secs(5),
            total_timeout: Duration::from_secs(10),
            max_redirects: 3,
            lookup: Arc::new(SystemLookup),
            deliveries: Arc::new(Deliveries::new(8, 1_000)),
        }
    }
}

impl OutboundPolicy {
    /// Lets the host `name` through whatever it resolves to (an operator's own receiver on
    /// the private network, say). Exact names, compared without case.
    pub fn allow_host(mut self, name: impl Into<String>) -> Self {
        let name = name.into().trim_end_matches('.').to_ascii_lowercase();
        self.hosts.push(name);
        self
    }

    /// Lets the addresses of `net` (CIDR: `"127.0.0.0/8"`, `"10.20.0.0/16"`, `"::1/128"`)
    /// through. An error if `net` is not a CIDR range.
    pub fn allow_net(mut self, net: &str) -> Result<Self, OutboundError> {
        let parsed: IpNet = net.parse().map_err(|e| OutboundError::BadUrl {
            url: net.chars().take(200).collect(),
            reason: format!("not a CIDR range ({e}); write it as 10.20.0.0/16 or fd00::/8"),
        })?;
        self.nets.push(parsed);
        Ok(self)
    }

    /// Adds `name` to the headers a request may carry.
    pub fn allow_header(mut self, name: &str) -> Self {
        self.headers.push(name.to_ascii_lowercase());
        self
    }

    /// The longest wait to open a connection. Default 5 s.
    pub fn connect_timeout(mut self, limit: Duration) -> Self {
        self.connect_timeout = limit;
        self
    }

    /// The longest a whole request may take, from connecting to the last byte. Default 10 s.
    pub fn total_timeout(mut self, limit: Duration) -> Self {
        self.total_timeout = limit;
        self
    }

    /// How many same-origin redirects are followed (a redirect to another origin never is).
    /// Default 3.
    pub fn max_redirects(mut self, count: usize) -> Self {
        self.max_redirects = count;
        self
    }

    /// The deliveries one tenant may have in flight at once (default 8) and waiting for a
    /// place (default 1,000; past it a delivery is dropped and logged). A new policy's
    /// counts: clones made before share the old ones.
    pub fn max_concurrent_per_tenant(mut self, concurrent: usize, waiting: usize) -> Self {
        self.deliveries = Arc::new(Deliveries::new(concurrent.max(1), waiting));
        self
    }

    /// Resolves names with `lookup` instead of the system's resolver (a test's resolver that
    /// changes its answer, to show that DNS rebinding fails).
    pub fn lookup(mut self, lookup: impl Lookup) -> Self {
        self.lookup = Arc::new(lookup);
        self
    }

    /// This policy without the hosts and ranges the operator let through: what a request
    /// carrying a caller's own credentials (an A2A push configuration's `Authorization`) is
    /// held to, so those credentials never reach an internal host.
    pub fn without_exceptions(&self) -> Self {
        OutboundPolicy {
            hosts: Vec::new(),
            nets: Vec::new(),
            ..self.clone()
        }
    }

    /// The connect timeout.
    pub fn connect_limit(&self) -> Duration {
        self.connect_timeout
    }

    /// The total timeout.
    pub fn total_limit(&self) -> Duration {
        self.total_timeout
    }

    /// Checks `url`: `http(s)` with a host, no userinfo, and not an address literal (or the
    /// name `localhost`) in a refused range. Names are checked again, after DNS, on every
    /// connection the policy's [`client`](Self::client) opens.
    pub fn check_url(&self, url: &str) -> Result<Url, OutboundError> {
        let bad = |reason: String| OutboundError::BadUrl {
            url: shown(url),
            reason,
        };
        let parsed =
            Url::parse(url).map_err(|e| bad(format!("not a URL ({e}); send an http(s) URL")))?;
        self.check_parsed(&parsed).map_err(|e| match e {
            OutboundError::BadUrl { reason, .. } => bad(reason),
            other => other,
        })?;
        Ok(parsed)
    }

    fn check_parsed(&self, url: &Url) -> Result<(), OutboundError> {
        let bad = |reason: &str| OutboundError::BadUrl {
            url: shown(url.as_str()),
            reason: reason.to_owned(),
        };
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad("only http and https URLs are sent to"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(bad(
                "a URL with userinfo (user:password@) is not sent to; a receiver that needs \
                 credentials checks the request's signature instead",
            ));
        }
        match url.host() {
            None => Err(bad("the URL has no host")),
            Some(url::Host::Ipv4(v4)) => self.check_address(&v4.to_string(), IpAddr::V4(v4)),
            Some(url::Host::Ipv6(v6)) => self.check_address(&v6.to_string(), IpAddr::V6(v6)),
            Some(url::Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                if self.host_allowed(&name) {
                    return Ok(());
                }
                if name == "localhost" || name.ends_with(".localhost") {
                    return Err(OutboundError::RefusedAddress {
                        host: name,
                        address: IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
                        range: "loopback",
                    });
                }
                Ok(())
            }
        }
    }

    /// Whether requests may go to `address`, reached as `host`.
    pub fn check_address(&self, host: &str, address: IpAddr) -> Result<(), OutboundError> {
        if self.host_allowed(host) || self.nets.iter().any(|n| n.contains(&address)) {
            return Ok(());
        }
        match refused_range(address) {
            None => Ok(()),
            Some(range) => Err(OutboundError::RefusedAddress {
                host: host.to_owned(),
                address,
                range,
            }),
        }
    }

    /// Whether `host` (a name) is one the operator let through.
    pub(super) fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.');
        self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
    }

    /// Whether `url` reaches only through the operator's exceptions (an allowed host, or an
    /// address literal in an allowed range that the strict policy refuses): where a caller's
    /// own credentials may not go.
    pub fn check_credentials_to(&self, url: &Url) -> Result<(), OutboundError> {
        let host = url.host_str().unwrap_or_default().to_owned();
        if self.host_allowed(&host) || self.without_exceptions().check_parsed(url).is_err() {
            return Err(OutboundError::CredentialsToInternal { host });
        }
        Ok(())
    }

    /// Whether header `name` may be sent.
    pub fn check_header(&self, name: &str) -> Result<(), OutboundError> {
        if self.headers.iter().any(|h| h.eq_ignore_ascii_case(name)) {
            Ok(())
        } else {
            Err(OutboundError::Header {
                name: name.chars().take(100).collect(),
            })
        }
    }

    /// A `reqwest` client builder held to this policy: names resolved through a
    /// [`GuardedResolver`] (every connection), no proxy, redirects only to the same origin,
    /// the connect and total timeouts. Add what else a client needs and build it.
    pub fn client_builder(&self) -> reqwest::ClientBuilder {
        let max = self.max_redirects;
        let redirects = reqwest::redirect::Policy::custom(move |attempt| {
            let from = attempt.previous().last().map(Url::origin);
            if attempt.previous().len() > max {
                attempt.error(format!("more than {max} redirects"))
            } else if from.as_ref() != Some(&attempt.url().origin()) {
                attempt.error("a redirect to another origin is not followed")
            } else {
                attempt.follow()
            }
        });
        reqwest::Client::builder()
            .dns_resolver(Arc::new(GuardedResolver::new(self.clone())))
            .no_proxy()
            .redirect(redirects)
            .connect_timeout(self.connect_timeout)
            .timeout(self.total_timeout)
    }

    /// A `reqwest` client held to this policy (see [`client_builder`](Self::client_builder)).
    pub fn client(&self) -> Result<reqwest::Client, OutboundError> {
        self.client_builder()
            .build()
            .map_err(|e| OutboundError::BadUrl {
                url: String::new(),
                reason: format!("the HTTP client could not be built: {e}"),
            })
    }

    /// A place for one delivery of `tenant` (see
    /// [`max_concurrent_per_tenant`](Self::max_concurrent_per_tenant)): waits while the tenant
    /// has its most in flight; [`OutboundError::TooManyWaiting`] at once when its line is full.
    /// Hold the permit until the delivery ends (retries included).
    pub async fn delivery(&self, tenant: &str) -> Result<super::DeliveryPermit, OutboundError> {
        self.deliveries.acquire(tenant).await
    }

    pub(super) fn name_lookup(&self) -> Arc<dyn Lookup> {
        Arc::clone(&self.lookup)
    }
}

/// `url` cut to 200 characters, without userinfo.
fn shown(url: &str) -> String {
    let cut = match (url.find("://"), url.find('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://***{}", &url[..scheme], &url[at..])
        }
        _ => url.to_owned(),
    };
    cut.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_in_every_spelling_is_refused() {
        let strict = OutboundPolicy::default();
        for url in [
            "http://localhost:8080/",
            "http://LOCALHOST./",
            "http://api.localhost/",
            "http://127.0.0.1/",
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0177.0.0.1/",
            "http://0.0.0.0/",
            "http://0/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://[::1]/",
            "http://[::]/",
            "http://169.254.169.254/latest/meta-data/",
            "http://10.0.0.1/",
            "http://192.168.0.1/",
            "http://224.0.0.1/",
        ] {
            let err = strict.check_url(url).unwrap_err();
            assert!(
                matches!(err, OutboundError::RefusedAddress { .. }),
                "{url}: {err}"
            );
        }
    }

    #[test]
    fn userinfo_and_other_schemes_are_refused_and_not_echoed() {
        let strict = OutboundPolicy::default();
        let err = strict
            .check_url("https://alice:s3cret@example.com/")
            .unwrap_err();
        assert!(matches!(err, OutboundError::BadUrl { .. }), "{err}");
        assert!(!err.to_string().contains("s3cret"), "{err}");
        for url in ["file:///etc/passwd", "gopher://example.com/", "not a url"] {
            assert!(strict.check_url(url).is_err(), "{url}");
        }
    }

    #[test]
    fn operators_let_hosts_and_ranges_through_and_credentials_stay_out() {
        let policy = OutboundPolicy::default()
            .allow_net("127.0.0.0/8")
            .unwrap()
            .allow_host("hooks.internal");
        assert!(policy.check_url("http://127.0.0.1:9/").is_ok());
        assert!(
            policy.check_url("http://[::1]/").is_err(),
            "only the range allowed"
        );
        assert!(policy.check_url("http://169.254.169.254/").is_err());
        assert!(policy
            .check_address("hooks.internal", "10.0.0.7".parse().unwrap())
            .is_ok());
        for url in ["http://127.0.0.1:9/", "http://hooks.internal/"] {
            let url = Url::parse(url).unwrap();
            assert!(matches!(
                policy.check_credentials_to(&url),
                Err(OutboundError::CredentialsToInternal { .. })
            ));
        }
        assert!(policy
            .check_credentials_to(&Url::parse("https://example.com/").unwrap())
            .is_ok());
        assert!(OutboundPolicy::default().allow_net("127.0.0.1").is_err());
    }

    #[test]
    fn headers_come_from_the_allow_list() {
        let policy = OutboundPolicy::default();
        assert!(policy.check_header("Authorization").is_ok());
        assert!(policy.check_header("X-Agentflow-Signature").is_ok());
        assert!(policy.check_header("host").is_err());
        assert!(policy.check_header("x-forwarded-for").is_err());
        assert!(policy
            .allow_header("x-tenant")
            .check_header("X-Tenant")
            .is_ok());
    }
}
