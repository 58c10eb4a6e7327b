//! JWT bearer authentication ([`JwtAuth`], on the `jsonwebtoken` crate): a token signed with
//! HS256, RS256 or ES256 by a key of a JWKS document, from the expected issuer, for the
//! expected audience, not expired; its `sub` is the principal's id, its scopes come from a
//! claim (`scope` by default: a space-separated string or an array), its tenant from an
//! optional claim.

use std::path::Path;
use std::sync::Arc;

use axum::http::request::Parts;
use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

use crate::auth::{bearer_token, Authenticator};
use crate::error::ApiError;
use crate::principal::{Principal, Scope, Scopes};

/// Why a [`JwtAuth`] could not be configured.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JwtConfigError {
    /// The JWKS file could not be read.
    #[error("could not read the JWKS file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The document is not a JWKS (`{"keys": [...]}`).
    #[error("the JWKS document is not valid: {0}")]
    Parse(String),
    /// A key cannot be used: an algorithm other than HS256, RS256 or ES256, or bad material.
    #[error("JWKS key {key}: {message}")]
    Key {
        /// The key's `kid`, or its place in the set.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// The set has no key.
    #[error("the JWKS document has no usable key")]
    NoKeys,
}

struct Key {
    id: Option<String>,
    algorithm: Algorithm,
    key: DecodingKey,
}

/// Authenticates `Authorization: Bearer <JWT>` against the keys of a JWKS document. Plug it
/// in with [`Auth::jwt`](crate::Auth::jwt).
///
/// ```no_run
/// use agentweave_server::{Auth, JwtAuth};
/// let jwt = JwtAuth::from_jwks_file("/etc/helpdesk/jwks.json", "https://id.example", "helpdesk")?
///     .tenant_claim("org");
/// let auth = Auth::jwt(jwt);
/// # let _ = auth;
/// # Ok::<(), agentweave_server::JwtConfigError>(())
/// ```
#[derive(Clone)]
pub struct JwtAuth {
    keys: Arc<[Key]>,
    issuer: String,
    audience: String,
    scope_claim: String,
    tenant_claim: Option<String>,
    leeway_secs: u64,
}

impl std::fmt::Debug for JwtAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtAuth")
            .field("keys", &self.keys.len())
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("scope_claim", &self.scope_claim)
            .field("tenant_claim", &self.tenant_claim)
            .finish()
    }
}

impl JwtAuth {
    /// The keys of the JWKS file at `path`; tokens must come from `issuer` (`iss`) for
    /// `audience` (`aud`) and carry an unexpired `exp`.
    pub fn from_jwks_file(
        path: impl AsRef<Path>,
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<JwtAuth, JwtConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| JwtConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        JwtAuth::from_jwks(&text, issuer, audience)
    }

    /// The keys of a JWKS document (`{"keys": [...]}`), as [`from_jwks_file`](Self::from_jwks_file).
    pub fn from_jwks(
        jwks: &str,
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<JwtAuth, JwtConfigError> {
        let set: JwkSet =
            serde_json::from_str(jwks).map_err(|e| JwtConfigError::Parse(e.to_string()))?;
        let mut keys = Vec::new();
        for (i, jwk) in set.keys.iter().enumerate() {
            let name = jwk.common.key_id.clone().unwrap_or_else(|| format!("#{i}"));
            let bad = |message: &str| JwtConfigError::Key {
                key: name.clone(),
                message: message.to_owned(),
            };
            let algorithm = match (&jwk.algorithm, jwk.common.key_algorithm) {
                (AlgorithmParameters::OctetKey(_), None | Some(KeyAlgorithm::HS256)) => {
                    Algorithm::HS256
                }
                (AlgorithmParameters::RSA(_), None | Some(KeyAlgorithm::RS256)) => Algorithm::RS256,
                (AlgorithmParameters::EllipticCurve(_), None | Some(KeyAlgorithm::ES256)) => {
                    Algorithm::ES256
                }
                _ => {
                    return Err(bad(
                        "only HS256 (oct), RS256 (RSA) and ES256 (EC P-256) keys are accepted",
                    ))
                }
            };
            let key = DecodingKey::from_jwk(jwk).map_err(|e| bad(&e.to_string()))?;
            keys.push(Key {
                id: jwk.common.key_id.clone(),
                algorithm,
                key,
            });
        }
        if keys.is_empty() {
            return Err(JwtConfigError::NoKeys);
        }
        Ok(JwtAuth {
            keys: keys.into(),
            issuer: issuer.into(),
            audience: audience.into(),
            scope_claim: "scope".into(),
            tenant_claim: None,
            leeway_secs: 30,
        })
    }

    /// The claim the scopes are read from (default `scope`): a space-separated string or an
    /// array of strings, each `chat`, `approve`, `read` or `admin` (others are ignored).
    pub fn scope_claim(mut self, claim: impl Into<String>) -> Self {
        self.scope_claim = claim.into();
        self
    }

    /// The claim naming the principal's tenant (default: none, the tenant function decides).
    pub fn tenant_claim(mut self, claim: impl Into<String>) -> Self {
        self.tenant_claim = Some(claim.into());
        self
    }

    /// The clock skew allowed on `exp`, `nbf` and `iat`, in seconds (default 30): a token is
    /// accepted until `exp + leeway`, from `nbf - leeway`, and if issued (`iat`) no later than
    /// `now + leeway`.
    pub fn leeway_secs(mut self, secs: u64) -> Self {
        self.leeway_secs = secs;
        self
    }

    /// The principal a token names, or why it is refused (logged at DEBUG, not sent).
    pub fn verify(&self, token: &str) -> Result<Principal, ApiError> {
        let refuse = |why: &dyn std::fmt::Display| {
            tracing::debug!(target: "agentweave_server::jwt", reason = %why, "JWT refused");
            ApiError::Unauthorized
        };
        let header = jsonwebtoken::decode_header(token).map_err(|e| refuse(&e))?;
        let key = self
            .keys
            .iter()
            .filter(|k| k.algorithm == header.alg)
            .find(|k| match (&header.kid, &k.id) {
                (Some(kid), Some(id)) => kid == id,
                (Some(_), None) => false,
                (None, _) => true,
            })
            .ok_or_else(|| {
                refuse(&format_args!(
                    "no key for alg {:?} kid {:?}",
                    header.alg, header.kid
                ))
            })?;
        let mut validation = Validation::new(key.algorithm);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = self.leeway_secs;
        // `nbf` is off in the library's default: a token valid only from next year would pass.
        validation.validate_exp = true;
        validation.validate_nbf = true;
        let data =
            jsonwebtoken::decode::<serde_json::Map<String, Value>>(token, &key.key, &validation)
                .map_err(|e| refuse(&e))?;
        let claims = data.claims;
        // `iat`, when present, is a number and not in the future (beyond the leeway): the
        // library does not check it.
        match claims.get("iat") {
            None => {}
            Some(Value::Number(n)) => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                let issued = n.as_f64().unwrap_or(f64::INFINITY);
                if issued > (now + self.leeway_secs) as f64 {
                    return Err(refuse(&"iat is in the future"));
                }
            }
            Some(_) => return Err(refuse(&"iat is not a number")),
        }
        let sub = claims
            .get("sub")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| refuse(&"no sub"))?;
        let scopes: Scopes = match claims.get(&self.scope_claim) {
            Some(Value::String(list)) => Scopes::parse(list),
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .filter_map(Scope::parse)
                .collect(),
            _ => Scopes::NONE,
        };
        let mut principal = Principal::new(sub).scopes(scopes.iter());
        if let Some(claim) = &self.tenant_claim {
            let tenant = claims
                .get(claim)
                .and_then(Value::as_str)
                .ok_or_else(|| refuse(&format_args!("no tenant claim '{claim}'")))?;
            principal = principal.tenant(tenant);
        }
        Ok(principal)
    }
}

impl Authenticator for JwtAuth {
    fn authenticate(&self, request: &Parts) -> Result<Principal, ApiError> {
        let token = bearer_token(request).ok_or(ApiError::Unauthorized)?;
        self.verify(token)
    }
}
