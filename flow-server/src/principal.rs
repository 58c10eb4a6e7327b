//! Who is calling: a [`Principal`] (an id, a tenant, [`Scopes`]), what each [`Scope`] allows,
//! and the extractor a handler (or a protocol router) takes it with.
//!
//! The auth layer in front of `/v1` authenticates every request into a principal and puts it
//! in the request's extensions; a handler takes it as an argument (`principal: Principal`) and
//! checks the scope its endpoint needs with [`Principal::require`], which answers 403 with the
//! scope's name. A router mounted beside the native API (runs, A2A, AG-UI, the Agent
//! Protocol) reuses both: put its routes behind the same layer
//! ([`crate::authenticate`]) and call `require` in its handlers.

use std::fmt;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::Serialize;

use crate::error::ApiError;

/// What a principal may do. Every endpoint documents the scope it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Scope {
    /// Start turns and delete the caller's threads.
    Chat,
    /// Resume interrupts: answer approvals.
    Approve,
    /// Read flows, threads and the approvals queue.
    Read,
    /// Everything, and the operator's endpoints.
    Admin,
}

impl Scope {
    /// Every scope.
    pub const ALL: [Scope; 4] = [Scope::Chat, Scope::Approve, Scope::Read, Scope::Admin];

    /// The scope's name: `chat`, `approve`, `read`, `admin`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Chat => "chat",
            Scope::Approve => "approve",
            Scope::Read => "read",
            Scope::Admin => "admin",
        }
    }

    /// The scope named `name` (as [`as_str`](Self::as_str) writes it).
    pub fn parse(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == name)
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of [`Scope`]s. `admin` implies every other scope.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Scopes(u8);

impl Scopes {
    /// No scope.
    pub const NONE: Scopes = Scopes(0);

    /// Every scope.
    pub fn all() -> Scopes {
        Scopes::from_iter(Scope::ALL)
    }

    /// Whether the set allows `scope` (`admin` allows everything).
    pub fn allows(self, scope: Scope) -> bool {
        self.0 & (scope.bit() | Scope::Admin.bit()) != 0
    }

    /// The scopes named in a space-separated list (`"chat read"`, the OAuth `scope` claim's
    /// form); unknown names are ignored.
    pub fn parse(list: &str) -> Scopes {
        list.split_whitespace().filter_map(Scope::parse).collect()
    }

    /// The scopes in the set.
    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL
            .into_iter()
            .filter(move |s| self.0 & s.bit() != 0)
    }
}

impl FromIterator<Scope> for Scopes {
    fn from_iter<I: IntoIterator<Item = Scope>>(iter: I) -> Self {
        Scopes(iter.into_iter().fold(0, |bits, s| bits | s.bit()))
    }
}

impl fmt::Debug for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

/// Who is calling: an id (recorded in the turns and approvals it makes), the tenant its
/// threads live in (`None`: the tenant function's answer, or the shared tenant), and its
/// scopes.
#[derive(Clone, PartialEq, Eq)]
pub struct Principal {
    id: Arc<str>,
    tenant: Option<Arc<str>>,
    scopes: Scopes,
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Principal")
            .field("id", &self.id)
            .field("tenant", &self.tenant)
            .field("scopes", &self.scopes)
            .finish()
    }
}

impl Principal {
    /// A principal named `id` with no tenant of its own and no scope.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Principal {
            id: id.into(),
            tenant: None,
            scopes: Scopes::NONE,
        }
    }

    /// The same principal in `tenant` (1 to 32 characters of `A-Z a-z 0-9 _ -`).
    pub fn tenant(mut self, tenant: impl Into<Arc<str>>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }

    /// The same principal with these scopes.
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = Scope>) -> Self {
        self.scopes = scopes.into_iter().collect();
        self
    }

    /// The principal's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Its tenant, if it has one of its own.
    pub fn tenant_name(&self) -> Option<&str> {
        self.tenant.as_deref()
    }

    /// Its scopes.
    pub fn scope_set(&self) -> Scopes {
        self.scopes
    }

    /// Whether it has `scope`.
    pub fn allows(&self, scope: Scope) -> bool {
        self.scopes.allows(scope)
    }

    /// `Ok(())` if it has `scope`, else [`ApiError::Forbidden`] naming the scope.
    pub fn require(&self, scope: Scope) -> Result<(), ApiError> {
        if self.allows(scope) {
            Ok(())
        } else {
            Err(ApiError::Forbidden(format!(
                "this needs the `{scope}` scope, which your credentials do not have"
            )))
        }
    }

    /// `Ok(())` if it has one of `scopes`, else [`ApiError::Forbidden`] naming them.
    pub fn require_any(&self, scopes: &[Scope]) -> Result<(), ApiError> {
        if scopes.iter().any(|s| self.allows(*s)) {
            return Ok(());
        }
        let names: Vec<String> = scopes.iter().map(|s| format!("`{s}`")).collect();
        Err(ApiError::Forbidden(format!(
            "this needs one of the scopes {}, which your credentials do not have",
            names.join(", ")
        )))
    }
}

/// The principal as the engine's [`Caller`](agentweave_runtime::Caller): its id, and its scopes'
/// names as grants (`admin` gives every scope), which the flow's approvals rule checks.
impl From<&Principal> for agentweave_runtime::Caller {
    fn from(principal: &Principal) -> Self {
        let grants = Scope::ALL
            .into_iter()
            .filter(|s| principal.allows(*s))
            .map(Scope::as_str);
        agentweave_runtime::Caller::new(principal.id()).grants(grants)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<Principal>().cloned().ok_or_else(|| {
            tracing::error!(
                "a handler asked for the principal of a route the auth layer does not cover"
            );
            ApiError::Unauthorized
        })
    }
}
