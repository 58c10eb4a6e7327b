//! Who may call the API: [`Auth`] (bearer tokens, bearer tokens mapped to principals, JWTs,
//! your own [`Authenticator`], or the loopback-only dev mode) turns a request into a
//! [`Principal`]; and the tenant a caller belongs to.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::ConnectInfo;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use subtle::ConstantTimeEq;

use crate::error::ApiError;
use crate::principal::{Principal, Scope};

/// Checks a request's credentials and says who the caller is; plug in your own (OAuth, mTLS
/// headers set by a proxy, ...) with [`Auth::custom`].
pub trait Authenticator: Send + Sync + 'static {
    /// The caller's [`Principal`] lets the request through (each endpoint then checks the
    /// scope it needs); an error refuses it with that error's status (use
    /// [`ApiError::Unauthorized`] or [`ApiError::Forbidden`]).
    fn authenticate(&self, request: &Parts) -> Result<Principal, ApiError>;
}

/// How the API authenticates callers. The console's static files and `/v1/health`,
/// `/v1/ready` are always public; everything else under `/v1` goes through this.
#[derive(Clone)]
pub enum Auth {
    /// `Authorization: Bearer <token>` with one of these tokens (compared in constant time).
    /// The caller is the principal `token-N` (N: the token's place in the list, from 1) with
    /// every scope: the simple configuration, where a token may do everything.
    Bearer(Arc<[String]>),
    /// `Authorization: Bearer <token>` with one of these tokens, each naming its principal
    /// (its id, tenant and scopes); see [`Auth::tokens`].
    Tokens(Arc<[(String, Principal)]>),
    /// Your own check.
    Custom(Arc<dyn Authenticator>),
    /// No authentication: only for development. [`serve`](crate::serve) refuses to listen on
    /// anything but a loopback address in this mode, and every request must come from a
    /// loopback peer. The peer's address is read from axum's `ConnectInfo`, which
    /// [`serve`](crate::serve) provides; a router served without it refuses every request.
    DevModeLoopbackOnly,
}

impl Auth {
    /// Bearer authentication with one token.
    ///
    /// ```
    /// let auth = agentweave_server::Auth::bearer("s3cret-token");
    /// # let _ = auth;
    /// ```
    pub fn bearer(token: impl Into<String>) -> Self {
        Auth::Bearer(Arc::from(vec![token.into()]))
    }

    /// Bearer authentication accepting any of these tokens.
    pub fn bearer_any(tokens: impl IntoIterator<Item = String>) -> Self {
        Auth::Bearer(tokens.into_iter().collect::<Vec<_>>().into())
    }

    /// Bearer authentication where each token is a principal: its id (recorded in the turns
    /// and approvals it makes), its tenant and its scopes.
    ///
    /// ```
    /// use agentweave_server::{Auth, Principal, Scope};
    /// let auth = Auth::tokens([
    ///     ("token-of-ana-0123456789", Principal::new("ana").scopes([Scope::Chat, Scope::Read])),
    ///     ("token-of-ben-0123456789", Principal::new("ben").scopes([Scope::Approve, Scope::Read])),
    /// ]);
    /// # let _ = auth;
    /// ```
    pub fn tokens<T: Into<String>>(tokens: impl IntoIterator<Item = (T, Principal)>) -> Self {
        Auth::Tokens(
            tokens
                .into_iter()
                .map(|(t, p)| (t.into(), p))
                .collect::<Vec<_>>()
                .into(),
        )
    }

    /// JWT bearer authentication (see [`JwtAuth`](crate::JwtAuth)).
    pub fn jwt(jwt: crate::JwtAuth) -> Self {
        Auth::Custom(Arc::new(jwt))
    }

    /// Your own authenticator.
    pub fn custom(authenticator: impl Authenticator) -> Self {
        Auth::Custom(Arc::new(authenticator))
    }

    /// Whether this is the unauthenticated dev mode.
    pub fn is_dev_mode(&self) -> bool {
        matches!(self, Auth::DevModeLoopbackOnly)
    }

    /// The caller's principal when the request's credentials pass this check.
    pub(crate) fn check(&self, parts: &Parts) -> Result<Principal, ApiError> {
        match self {
            Auth::Bearer(tokens) => {
                let given = bearer_token(parts).ok_or(ApiError::Unauthorized)?;
                let at = find_token(given, tokens.iter().map(String::as_str))
                    .ok_or(ApiError::Unauthorized)?;
                Ok(Principal::new(format!("token-{}", at + 1)).scopes(Scope::ALL))
            }
            Auth::Tokens(tokens) => {
                let given = bearer_token(parts).ok_or(ApiError::Unauthorized)?;
                let at = find_token(given, tokens.iter().map(|(t, _)| t.as_str()))
                    .ok_or(ApiError::Unauthorized)?;
                Ok(tokens[at].1.clone())
            }
            Auth::Custom(a) => a.authenticate(parts),
            Auth::DevModeLoopbackOnly => {
                let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>();
                match peer {
                    Some(ConnectInfo(addr)) if addr.ip().is_loopback() => {
                        Ok(Principal::new("dev").scopes(Scope::ALL))
                    }
                    _ => Err(ApiError::Forbidden(
                        "this server runs in dev mode without authentication and answers only \
                         loopback clients"
                            .into(),
                    )),
                }
            }
        }
    }
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::Bearer(tokens) => write!(f, "Bearer({} token(s))", tokens.len()),
            Auth::Tokens(tokens) => write!(f, "Tokens({} token(s))", tokens.len()),
            Auth::Custom(_) => f.write_str("Custom"),
            Auth::DevModeLoopbackOnly => f.write_str("DevModeLoopbackOnly"),
        }
    }
}

/// The place of `given` among `tokens`, comparing with every token (no early exit), each in
/// constant time.
fn find_token<'a>(given: &str, tokens: impl Iterator<Item = &'a str>) -> Option<usize> {
    let mut found = None;
    for (i, token) in tokens.enumerate() {
        if bool::from(given.as_bytes().ct_eq(token.as_bytes())) && found.is_none() {
            found = Some(i);
        }
    }
    found
}

/// The token of an `Authorization: Bearer <token>` header, if the request has one.
pub fn bearer_token(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// The caller's tenant, as the tenant function configured with
/// [`ServerBuilder::tenant`](crate::ServerBuilder::tenant) names it; stored in the request's
/// extensions by the auth layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant(pub String);

/// The tenant used when no tenant function is configured: every caller shares it.
pub const SHARED_TENANT: &str = "_";

/// A valid tenant name: 1 to 32 characters of `A-Z a-z 0-9 _ -` (no `.`, which separates the
/// parts of store keys).
pub fn valid_tenant(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 32
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}
