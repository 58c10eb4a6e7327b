//! Who may call the API: [`Auth`] (bearer tokens, your own [`Authenticator`], or the loopback-only
//! dev mode) and the tenant a caller belongs to.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::ConnectInfo;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use subtle::ConstantTimeEq;

use crate::error::ApiError;

/// Checks a request's credentials; plug in your own (OAuth, mTLS headers set by a proxy, ...)
/// with [`Auth::custom`].
pub trait Authenticator: Send + Sync + 'static {
    /// `Ok(())` lets the request through; an error refuses it with that error's status (use
    /// [`ApiError::Unauthorized`] or [`ApiError::Forbidden`]).
    fn authenticate(&self, request: &Parts) -> Result<(), ApiError>;
}

/// How the API authenticates callers. The console's static files and `/v1/health`,
/// `/v1/ready` are always public; everything else under `/v1` goes through this.
#[derive(Clone)]
pub enum Auth {
    /// `Authorization: Bearer <token>` with one of these tokens (compared in constant time).
    Bearer(Arc<[String]>),
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
    /// let auth = flow_server::Auth::bearer("s3cret-token");
    /// # let _ = auth;
    /// ```
    pub fn bearer(token: impl Into<String>) -> Self {
        Auth::Bearer(Arc::from(vec![token.into()]))
    }

    /// Bearer authentication accepting any of these tokens.
    pub fn bearer_any(tokens: impl IntoIterator<Item = String>) -> Self {
        Auth::Bearer(tokens.into_iter().collect::<Vec<_>>().into())
    }

    /// Your own authenticator.
    pub fn custom(authenticator: impl Authenticator) -> Self {
        Auth::Custom(Arc::new(authenticator))
    }

    /// Whether this is the unauthenticated dev mode.
    pub fn is_dev_mode(&self) -> bool {
        matches!(self, Auth::DevModeLoopbackOnly)
    }

    /// `Ok(())` when the request's credentials pass this check.
    pub(crate) fn check(&self, parts: &Parts) -> Result<(), ApiError> {
        match self {
            Auth::Bearer(tokens) => {
                let given = bearer_token(parts).ok_or(ApiError::Unauthorized)?;
                // Compare with every token (no early exit), each in constant time.
                let mut ok = subtle::Choice::from(0u8);
                for token in tokens.iter() {
                    ok |= given.as_bytes().ct_eq(token.as_bytes());
                }
                if bool::from(ok) {
                    Ok(())
                } else {
                    Err(ApiError::Unauthorized)
                }
            }
            Auth::Custom(a) => a.authenticate(parts),
            Auth::DevModeLoopbackOnly => {
                let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>();
                match peer {
                    Some(ConnectInfo(addr)) if addr.ip().is_loopback() => Ok(()),
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
            Auth::Custom(_) => f.write_str("Custom"),
            Auth::DevModeLoopbackOnly => f.write_str("DevModeLoopbackOnly"),
        }
    }
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
