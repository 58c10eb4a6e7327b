//! OAuth 2.1 for HTTP MCP servers, as the MCP authorization specification has it, on the SDK's
//! implementation (`rmcp`'s `auth`): protected resource metadata discovery (the
//! `resource_metadata` of the server's `WWW-Authenticate` challenge, then the well-known paths),
//! authorization server metadata (OAuth and OpenID Connect discovery), client registration
//! (a pre-registered client, a client ID metadata document, or dynamic registration), the
//! authorization code grant with PKCE, the client credentials grant, token refresh, and scope
//! step-up on `403 insufficient_scope`.

use std::fmt;
use std::sync::Arc;

use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationMetadata,
    AuthorizationRequest, AuthorizationSession, ClientCredentialsConfig, OAuthHttpClient,
    WWWAuthenticateParams,
};
pub use rmcp::transport::auth::{CredentialStore, InMemoryCredentialStore, StoredCredentials};

use super::oauth_http::PolicyOAuthHttp;
use super::McpError;
use crate::outbound::OutboundPolicy;

/// Sends the user to the authorization server and brings back where it redirected to: the
/// application's part of the authorization code grant. A desktop application opens `url` in
/// the browser and listens on its redirect URI; a server application sends its user there
/// and receives the redirect on one of its routes.
///
/// ```
/// use agentweave_runtime::mcp::AuthorizationRedirect;
///
/// struct Browser;
///
/// #[async_trait::async_trait]
/// impl AuthorizationRedirect for Browser {
///     async fn authorize(&self, url: &str) -> Result<String, String> {
///         // Open `url`, wait for the request to the redirect URI, return its full URL.
///         Err(format!("open {url} in a browser (not done in this example)"))
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait AuthorizationRedirect: Send + Sync {
    /// Has the user open `url` (the authorization server's page, with the PKCE challenge and
    /// a `state`) and returns the URL the authorization server redirected the user's browser
    /// to (the redirect URI with `code`, `state` and perhaps `iss`), or why not.
    async fn authorize(&self, url: &str) -> Result<String, String>;
}

/// How this client authorizes with an HTTP MCP server that requires OAuth
/// ([`McpServerConfig::auth`](super::McpServerConfig::auth)).
///
/// Nothing is asked until the server answers `401` with a `WWW-Authenticate` challenge: then
/// its metadata is discovered and the grant below runs; the tokens go to the
/// [token store](Self::token_store) and are sent on every request, refreshed when they
/// expire (or when the server rejects one), and a `403 insufficient_scope` asks for the
/// missing scope (the authorization code grant again, at most three times).
#[derive(Clone)]
pub struct McpAuth {
    grant: Grant,
    scopes: Vec<String>,
    store: Arc<dyn CredentialStore>,
}

#[derive(Clone)]
enum Grant {
    AuthorizationCode {
        redirect_uri: String,
        redirect: Arc<dyn AuthorizationRedirect>,
        client_name: String,
        client_id: Option<String>,
        client_secret: Option<String>,
        client_metadata_url: Option<String>,
    },
    ClientCredentials {
        client_id: String,
        proof: ClientProof,
    },
    EnterpriseManaged {
        idp: EnterpriseIdp,
        id_token: String,
        client_id: String,
        client_secret: String,
    },
}

/// How a client of the client credentials grant proves who it is at the token endpoint.
#[derive(Clone)]
enum ClientProof {
    /// Its secret, in the request's body (`client_secret_post`).
    Secret(String),
    /// A JWT it signs with its private key (`private_key_jwt`, RFC 7523).
    #[cfg(feature = "mcp-jwt")]
    PrivateKeyJwt {
        key_pem: Vec<u8>,
        algorithm: JwtAlgorithm,
    },
}

/// The algorithm a client signs its `private_key_jwt` assertion with
/// ([`McpAuth::client_credentials_jwt`]): the one its key is for, and one the authorization
/// server lists in `token_endpoint_auth_signing_alg_values_supported`.
#[cfg(feature = "mcp-jwt")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwtAlgorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (an RSA key).
    Rs256,
    /// RSASSA-PKCS1-v1_5 with SHA-384 (an RSA key).
    Rs384,
    /// RSASSA-PKCS1-v1_5 with SHA-512 (an RSA key).
    Rs512,
    /// ECDSA on P-256 with SHA-256 (an EC key).
    Es256,
    /// ECDSA on P-384 with SHA-384 (an EC key).
    Es384,
}

#[cfg(feature = "mcp-jwt")]
impl JwtAlgorithm {
    fn sdk(self) -> rmcp::transport::auth::JwtSigningAlgorithm {
        use rmcp::transport::auth::JwtSigningAlgorithm as Sdk;
        match self {
            JwtAlgorithm::Rs256 => Sdk::RS256,
            JwtAlgorithm::Rs384 => Sdk::RS384,
            JwtAlgorithm::Rs512 => Sdk::RS512,
            JwtAlgorithm::Es256 => Sdk::ES256,
            JwtAlgorithm::Es384 => Sdk::ES384,
        }
    }
}

/// The enterprise identity provider of [`McpAuth::enterprise_managed`]: the one the MCP
/// server's authorization server trusts, and this client's registration with it.
#[derive(Clone)]
pub struct EnterpriseIdp {
    issuer: String,
    token_endpoint: String,
    client_id: String,
    client_secret: Option<String>,
}

impl EnterpriseIdp {
    /// The identity provider `issuer` (its exact issuer identifier), its token endpoint, and
    /// this client's ID there (a public client; see [`client_secret`](Self::client_secret)).
    pub fn new(
        issuer: impl Into<String>,
        token_endpoint: impl Into<String>,
        client_id: impl Into<String>,
    ) -> Self {
        EnterpriseIdp {
            issuer: issuer.into(),
            token_endpoint: token_endpoint.into(),
            client_id: client_id.into(),
            client_secret: None,
        }
    }

    /// The client's secret at the identity provider (sent with HTTP Basic).
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }
}

impl fmt::Debug for McpAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let grant = match &self.grant {
            Grant::AuthorizationCode { redirect_uri, .. } => {
                format!("authorization_code (redirect {redirect_uri})")
            }
            Grant::ClientCredentials { client_id, .. } => {
                format!("client_credentials (client {client_id})")
            }
            Grant::EnterpriseManaged { idp, client_id, .. } => {
                format!(
                    "enterprise_managed (identity provider {}, client {client_id})",
                    idp.issuer
                )
            }
        };
        f.debug_struct("McpAuth")
            .field("grant", &grant)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl McpAuth {
    /// The authorization code grant with PKCE: the user is sent to the authorization server
    /// through `redirect`, which comes back to `redirect_uri`. The client registers itself
    /// dynamically unless [`preregistered_client`](Self::preregistered_client) or
    /// [`client_metadata_url`](Self::client_metadata_url) says otherwise.
    pub fn authorization_code(
        redirect_uri: impl Into<String>,
        redirect: impl AuthorizationRedirect + 'static,
    ) -> Self {
        McpAuth {
            grant: Grant::AuthorizationCode {
                redirect_uri: redirect_uri.into(),
                redirect: Arc::new(redirect),
                client_name: "agentflow".into(),
                client_id: None,
                client_secret: None,
                client_metadata_url: None,
            },
            scopes: Vec::new(),
            store: Arc::new(InMemoryCredentialStore::new()),
        }
    }

    /// The client credentials grant (no user): for a service acting as itself, with a client
    /// registered with the authorization server beforehand.
    pub fn client_credentials(
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        McpAuth {
            grant: Grant::ClientCredentials {
                client_id: client_id.into(),
                proof: ClientProof::Secret(client_secret.into()),
            },
            scopes: Vec::new(),
            store: Arc::new(InMemoryCredentialStore::new()),
        }
    }

    /// The client credentials grant with `private_key_jwt` client authentication (RFC 7523,
    /// the MCP extension SEP-1046): instead of a shared secret, the client signs a short-lived
    /// JWT (issuer and subject `client_id`, audience the authorization server's issuer, five
    /// minutes, a fresh `jti`) with its private key, given as PEM (PKCS#8 or the key's own
    /// form, RSA or EC); the authorization server holds the public key. The key is read when
    /// the grant runs: a key that does not parse fails the connection with [`McpError::Auth`]
    /// saying so. Needs the feature `mcp-jwt` (it builds `jsonwebtoken` on `aws-lc-rs`).
    ///
    /// ```no_run
    /// # fn key() -> Vec<u8> { Vec::new() }
    /// use agentweave_runtime::mcp::{JwtAlgorithm, McpAuth, McpServerConfig};
    ///
    /// let auth = McpAuth::client_credentials_jwt("billing-agent", key(), JwtAlgorithm::Es256);
    /// let config = McpServerConfig::http("ledger", "https://ledger.example.com/mcp").auth(auth);
    /// ```
    #[cfg(feature = "mcp-jwt")]
    pub fn client_credentials_jwt(
        client_id: impl Into<String>,
        private_key_pem: impl Into<Vec<u8>>,
        algorithm: JwtAlgorithm,
    ) -> Self {
        McpAuth {
            grant: Grant::ClientCredentials {
                client_id: client_id.into(),
                proof: ClientProof::PrivateKeyJwt {
                    key_pem: private_key_pem.into(),
                    algorithm,
                },
            },
            scopes: Vec::new(),
            store: Arc::new(InMemoryCredentialStore::new()),
        }
    }

    /// Enterprise-managed authorization (the MCP "cross-app access" extension): the user's ID
    /// token from the enterprise identity provider `idp` is exchanged there for an identity
    /// assertion grant (ID-JAG) for the MCP server, which the server's authorization server
    /// redeems (`jwt-bearer` grant) for an access token; `client_id` and `client_secret` are
    /// this client's registration with that authorization server (sent with HTTP Basic). No
    /// user interaction; when the token is refused later, the exchange runs again with the
    /// same ID token (renew it with a new `McpAuth` when it expires).
    pub fn enterprise_managed(
        idp: EnterpriseIdp,
        id_token: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        McpAuth {
            grant: Grant::EnterpriseManaged {
                idp,
                id_token: id_token.into(),
                client_id: client_id.into(),
                client_secret: client_secret.into(),
            },
            scopes: Vec::new(),
            store: Arc::new(InMemoryCredentialStore::new()),
        }
    }

    /// Uses a client registered with the authorization server beforehand (a confidential
    /// client gives its secret) instead of registering one (authorization code grant only).
    pub fn preregistered_client(
        mut self,
        client_id: impl Into<String>,
        client_secret: Option<String>,
    ) -> Self {
        if let Grant::AuthorizationCode {
            client_id: id,
            client_secret: secret,
            ..
        } = &mut self.grant
        {
            *id = Some(client_id.into());
            *secret = client_secret;
        }
        self
    }

    /// The HTTPS URL of this client's metadata document, used as its client ID where the
    /// authorization server supports client ID metadata documents (authorization code grant
    /// only; otherwise the client registers dynamically).
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        if let Grant::AuthorizationCode {
            client_metadata_url,
            ..
        } = &mut self.grant
        {
            *client_metadata_url = Some(url.into());
        }
        self
    }

    /// The name this client registers under (default `agentweave`).
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        if let Grant::AuthorizationCode { client_name, .. } = &mut self.grant {
            *client_name = name.into();
        }
        self
    }

    /// The scopes to ask for. By default the server's challenge says which (its `scope`),
    /// else its protected resource metadata (`scopes_supported`), else none are named.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Where the client registration and the tokens are kept (default: in memory, for the
    /// life of the process). Give a store of your own to keep them across restarts (it holds
    /// secrets: encrypt it at rest).
    pub fn token_store(mut self, store: impl CredentialStore + 'static) -> Self {
        self.store = Arc::new(store);
        self
    }
}

/// Runs the SDK's client credentials exchange on a thread of its own: with `private_key_jwt`
/// its future holds a value that is not `Send` across the token request (rmcp 3.11's
/// `exchange_client_credentials_jwt`), so it cannot run inside a tool call's future. The
/// manager comes back with the result (`None`: the thread panicked).
#[cfg(feature = "mcp-jwt")]
async fn exchange_apart(
    manager: AuthorizationManager,
    config: ClientCredentialsConfig,
) -> (Option<AuthorizationManager>, Result<(), AuthError>) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("mcp-client-jwt".into())
        .spawn(move || {
            let result = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime
                    .block_on(manager.exchange_client_credentials(&config))
                    .map(drop),
                Err(e) => Err(AuthError::InternalError(format!(
                    "no runtime to sign the client's JWT on: {e}"
                ))),
            };
            let _ = tx.send((manager, result));
        });
    if let Err(e) = spawned {
        return (
            None,
            Err(AuthError::InternalError(format!(
                "no thread to sign the client's JWT on: {e}"
            ))),
        );
    }
    match rx.await {
        Ok((manager, result)) => (Some(manager), result),
        Err(_) => (
            None,
            Err(AuthError::InternalError(
                "the thread signing the client's JWT stopped".into(),
            )),
        ),
    }
}

/// The SDK's manager for the server at `url`: its OAuth requests through `held` (the server's
/// outbound policy), else through the SDK's own client (see the module documentation).
async fn new_manager(
    url: &str,
    held: Option<&Arc<PolicyOAuthHttp>>,
) -> Result<AuthorizationManager, AuthError> {
    match held {
        Some(held) => {
            let http = Arc::clone(held) as Arc<dyn OAuthHttpClient>;
            AuthorizationManager::new_with_oauth_http_client(url, http).await
        }
        None => AuthorizationManager::new(url).await,
    }
}

/// The store given to the SDK's manager: the application's, shared.
struct SharedStore(Arc<dyn CredentialStore>);

#[async_trait::async_trait]
impl CredentialStore for SharedStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.0.load().await
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.0.save(credentials).await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.0.clear().await
    }
}

/// One server's OAuth state: the SDK's authorization manager inside the HTTP client that adds
/// the bearer token to every request (shared by every connection to the server).
pub(super) struct Authorizer {
    auth: McpAuth,
    server: Arc<str>,
    url: url::Url,
    client: AuthClient<reqwest013::Client>,
    /// The OAuth requests' client when the server has an outbound policy.
    oauth_http: Option<Arc<PolicyOAuthHttp>>,
}

impl Authorizer {
    pub(super) async fn new(
        auth: McpAuth,
        server: Arc<str>,
        url: &str,
        http: reqwest013::Client,
        outbound: Option<&OutboundPolicy>,
    ) -> Result<Self, McpError> {
        let fail = |e: AuthError| auth_failed(&server, &e);
        let parsed = url::Url::parse(url).map_err(|e| McpError::Config {
            server: Arc::clone(&server),
            message: format!("the URL '{url}' does not parse: {e}").into(),
        })?;
        let oauth_http = match outbound {
            None => None,
            Some(policy) => Some(Arc::new(PolicyOAuthHttp::new(policy).map_err(|e| {
                McpError::Config {
                    server: Arc::clone(&server),
                    message: format!("the OAuth HTTP client: {e}").into(),
                }
            })?)),
        };
        let mut manager = new_manager(url, oauth_http.as_ref()).await.map_err(fail)?;
        manager.set_credential_store(SharedStore(Arc::clone(&auth.store)));
        // Tokens kept from before are used as they are; the server's first 401 says if not.
        if auth.store.load().await.map_err(fail)?.is_some() {
            manager.initialize_from_store().await.map_err(fail)?;
        }
        Ok(Authorizer {
            auth,
            server,
            url: parsed,
            client: AuthClient::new(http, manager),
            oauth_http,
        })
    }

    /// The error for a failed authorization: the SDK's, and why the last OAuth request that
    /// failed failed when the server's outbound policy holds them (a refused address, say).
    fn failed(&self, e: &AuthError) -> McpError {
        let why = self
            .oauth_http
            .as_ref()
            .and_then(|held| held.take_failure());
        match why {
            None => auth_failed(&self.server, e),
            Some(why) => McpError::Auth {
                server: Arc::clone(&self.server),
                message: format!("{e}; the request to {why}").into(),
            },
        }
    }

    /// The authorization server's metadata, discovered from the server's `challenge` by the
    /// SDK (protected resource metadata, then the well-known paths), its issuer checked.
    ///
    /// One exception to the issuer check (RFC 8414 section 3.3): a server of the 2025-03-26
    /// revision may publish its metadata at its origin's root with an issuer that adds a path
    /// on that same origin (`https://mcp.example.com/oauth`). The metadata then comes from the
    /// MCP server's own origin and names an issuer on it: whoever answers for the server also
    /// answers for that issuer, so no other authorization server can be mixed up with it, and
    /// the metadata is taken. An issuer on another origin is refused, as is any mismatch
    /// outside the root metadata of the server's own origin.
    async fn discover(
        &self,
        manager: &AuthorizationManager,
        challenge: &str,
    ) -> Result<AuthorizationMetadata, AuthError> {
        match manager
            .resolve_metadata_from_challenge(Some(challenge))
            .await
        {
            Ok(resolved) => Ok(resolved.metadata),
            Err(AuthError::AuthorizationServerMismatch {
                expected_issuer,
                received_issuer,
            }) => {
                let refused = || AuthError::AuthorizationServerMismatch {
                    expected_issuer: expected_issuer.clone(),
                    received_issuer: received_issuer.clone(),
                };
                let origin = self.url.origin();
                let same_origin =
                    |issuer: &str| url::Url::parse(issuer).is_ok_and(|u| u.origin() == origin);
                let root =
                    url::Url::parse(&expected_issuer).is_ok_and(|u| matches!(u.path(), "" | "/"));
                if !(root && same_origin(&expected_issuer) && same_origin(&received_issuer)) {
                    return Err(refused());
                }
                let metadata = self.root_metadata().await.ok_or_else(refused)?;
                // The same document the SDK refused, naming the same issuer.
                if metadata.issuer.as_deref() != Some(received_issuer.as_str()) {
                    return Err(refused());
                }
                Ok(metadata)
            }
            Err(e) => Err(e),
        }
    }

    /// The authorization server metadata at the root of the server's origin
    /// (`/.well-known/oauth-authorization-server`), read through the server's HTTP client (held
    /// to its outbound policy if it has one), at most 1 MiB; `None` if there is none.
    async fn root_metadata(&self) -> Option<AuthorizationMetadata> {
        let mut url = self.url.clone();
        url.set_path("/.well-known/oauth-authorization-server");
        url.set_query(None);
        url.set_fragment(None);
        let response = self.client.http_client.get(url).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let body = super::guarded::bounded_body(response, 1024 * 1024)
            .await
            .ok()?;
        serde_json::from_slice(&body).ok()
    }

    /// A manager for this server (held to its outbound policy if it has one).
    async fn new_manager(&self) -> Result<AuthorizationManager, AuthError> {
        new_manager(self.url.as_str(), self.oauth_http.as_ref()).await
    }

    /// The HTTP client that sends the tokens.
    pub(super) fn client(&self) -> AuthClient<reqwest013::Client> {
        self.client.clone()
    }

    /// Runs the grant after the server answered with `challenge` (its `WWW-Authenticate`).
    pub(super) async fn authorize(&self, challenge: &str) -> Result<(), McpError> {
        let fail = |e: AuthError| self.failed(&e);
        let params = WWWAuthenticateParams::parse(challenge, &self.url);
        let mut manager = self.client.auth_manager.lock().await;
        match &self.auth.grant {
            Grant::ClientCredentials { client_id, proof } => {
                let metadata = self.discover(&manager, challenge).await.map_err(fail)?;
                manager.set_metadata(metadata);
                let mut scopes = self.auth.scopes.clone();
                if scopes.is_empty() {
                    scopes = params
                        .scope
                        .iter()
                        .flat_map(|s| s.split_whitespace())
                        .map(str::to_owned)
                        .collect();
                }
                let resource = Some(self.url.to_string());
                let config = match proof {
                    ClientProof::Secret(secret) => ClientCredentialsConfig::ClientSecret {
                        client_id: client_id.clone(),
                        client_secret: secret.clone(),
                        scopes,
                        resource,
                    },
                    #[cfg(feature = "mcp-jwt")]
                    ClientProof::PrivateKeyJwt { key_pem, algorithm } => {
                        ClientCredentialsConfig::PrivateKeyJwt {
                            client_id: client_id.clone(),
                            signing_key: key_pem.clone(),
                            signing_algorithm: algorithm.sdk(),
                            token_endpoint_audience: None,
                            scopes,
                            resource,
                        }
                    }
                };
                manager
                    .validate_client_credentials_metadata(&config)
                    .map_err(fail)?;
                manager
                    .configure_client_credentials(&config)
                    .map_err(fail)?;
                // With `mcp-jwt` the SDK's exchange is not `Send` (whichever proof is used).
                #[cfg(feature = "mcp-jwt")]
                {
                    let placeholder = self.new_manager().await.map_err(fail)?;
                    let taken = std::mem::replace(&mut *manager, placeholder);
                    let (back, result) = exchange_apart(taken, config).await;
                    // Without it (the thread stopped) the result says why.
                    if let Some(back) = back {
                        *manager = back;
                    }
                    result.map_err(fail)?;
                }
                #[cfg(not(feature = "mcp-jwt"))]
                manager
                    .exchange_client_credentials(&config)
                    .await
                    .map_err(fail)?;
                Ok(())
            }
            Grant::EnterpriseManaged {
                idp,
                id_token,
                client_id,
                client_secret,
            } => {
                self.enterprise_managed(
                    &mut manager,
                    challenge,
                    idp,
                    id_token,
                    client_id,
                    client_secret,
                )
                .await
            }
            Grant::AuthorizationCode {
                redirect_uri,
                redirect,
                client_name,
                client_id,
                client_secret,
                client_metadata_url,
            } => {
                let authorized = manager.get_credentials().await.is_ok_and(|c| c.1.is_some());
                if params.is_insufficient_scope() && authorized {
                    // Step-up: the same client asks for the scopes it has and the missing one.
                    let metadata = self.discover(&manager, challenge).await.map_err(fail)?;
                    manager.set_metadata(metadata);
                    let required = params.scope.clone().unwrap_or_default();
                    let url = manager
                        .request_scope_upgrade(&required)
                        .await
                        .map_err(fail)?;
                    let back = self.redirect(redirect.as_ref(), &url).await?;
                    let callback = AuthorizationCallback::from_redirect_url(&back).map_err(fail)?;
                    manager
                        .exchange_code_for_token_with_issuer(
                            &callback.code,
                            &callback.csrf_token,
                            callback.issuer.as_deref(),
                        )
                        .await
                        .map_err(fail)?;
                    return Ok(());
                }
                // A new authorization: discovery, registration, the user's consent, tokens.
                let placeholder = self.new_manager().await.map_err(fail)?;
                let mut taken = std::mem::replace(&mut *manager, placeholder);
                let metadata = match self.discover(&taken, challenge).await {
                    Ok(metadata) => metadata,
                    Err(e) => {
                        *manager = taken;
                        return Err(fail(e));
                    }
                };
                taken.set_metadata(metadata);
                let mut request = AuthorizationRequest::new(redirect_uri.clone())
                    .with_client_name(client_name.clone())
                    .with_challenge(challenge);
                if self.auth.scopes.is_empty() {
                    request = request.with_initial_scope_selection();
                } else {
                    request = request.with_scopes(self.auth.scopes.iter().cloned());
                }
                if let Some(id) = client_id {
                    request = request.with_preregistered_client(id.clone());
                    if let Some(secret) = client_secret {
                        request = request.with_client_secret(secret.clone());
                    }
                }
                if let Some(url) = client_metadata_url {
                    request = request.with_client_metadata_url(url.clone());
                }
                let session = match AuthorizationSession::new(taken, request).await {
                    Ok(session) => session,
                    Err((taken, e)) => {
                        *manager = taken;
                        return Err(fail(e));
                    }
                };
                let back = self
                    .redirect(redirect.as_ref(), session.get_authorization_url())
                    .await;
                let exchanged = match back {
                    Ok(back) => session.handle_callback_url(&back).await.map_err(fail),
                    Err(e) => Err(e),
                };
                *manager = session.auth_manager;
                exchanged.map(|_| ())
            }
        }
    }

    /// The enterprise-managed exchange (see [`McpAuth::enterprise_managed`]), its token put in
    /// the store for the manager to send.
    async fn enterprise_managed(
        &self,
        manager: &mut AuthorizationManager,
        challenge: &str,
        idp: &EnterpriseIdp,
        id_token: &str,
        client_id: &str,
        client_secret: &str,
    ) -> Result<(), McpError> {
        use oauth2::{ClientSecret, Scope, TokenResponse};
        use rmcp::transport::auth::enterprise::{
            EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest,
        };
        let fail = |e: AuthError| self.failed(&e);
        let metadata = self.discover(manager, challenge).await.map_err(fail)?;
        manager.set_metadata(metadata.clone());
        let issuer = metadata.issuer.clone().ok_or_else(|| McpError::Auth {
            server: Arc::clone(&self.server),
            message: "the authorization server's metadata names no issuer, which the \
                      identity assertion must be bound to"
                .into(),
        })?;
        let mut at_idp = EmaAuthorizationServer::new(
            idp.issuer.clone(),
            idp.token_endpoint.clone(),
            idp.client_id.clone(),
        );
        if let Some(secret) = &idp.client_secret {
            at_idp = at_idp.with_client_authentication(EmaClientAuthentication::ClientSecretBasic(
                ClientSecret::new(secret.clone()),
            ));
        }
        let at_server = EmaAuthorizationServer::new(
            issuer.clone(),
            metadata.token_endpoint.clone(),
            client_id.to_owned(),
        )
        .with_client_authentication(EmaClientAuthentication::ClientSecretBasic(
            ClientSecret::new(client_secret.to_owned()),
        ));
        let http: Arc<dyn OAuthHttpClient> = match &self.oauth_http {
            Some(held) => Arc::clone(held) as Arc<dyn OAuthHttpClient>,
            None => Arc::new(rmcp::transport::auth::default_oauth_http_client().map_err(fail)?),
        };
        let resource = self.url.to_string();
        let mut request =
            EmaExchangeRequest::new_with_id_token(at_idp, at_server, &resource, id_token);
        if !self.auth.scopes.is_empty() {
            request = request.with_scopes(self.auth.scopes.iter().cloned());
        }
        let token = request
            .exchange(http.as_ref(), http.as_ref())
            .await
            .map_err(|e| McpError::Auth {
                server: Arc::clone(&self.server),
                message: format!("the enterprise-managed token exchange failed: {e}").into(),
            })?;
        let scopes: Vec<String> = token.scopes.iter().cloned().collect();
        let mut response = rmcp::transport::auth::OAuthTokenResponse::new(
            token.access_token.clone(),
            oauth2::basic::BasicTokenType::Bearer,
            Default::default(),
        );
        response.set_expires_in(token.expires_in.as_ref());
        response.set_scopes(Some(scopes.iter().cloned().map(Scope::new).collect()));
        debug_assert!(response.refresh_token().is_none());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let stored =
            StoredCredentials::new(client_id.to_owned(), Some(response), scopes, Some(now))
                .with_issuer(Some(issuer));
        self.auth.store.save(stored).await.map_err(fail)?;
        manager.configure_client_id(client_id).map_err(fail)
    }

    async fn redirect(
        &self,
        redirect: &dyn AuthorizationRedirect,
        url: &str,
    ) -> Result<String, McpError> {
        redirect
            .authorize(url)
            .await
            .map_err(|message| McpError::Auth {
                server: Arc::clone(&self.server),
                message: format!("the user's authorization did not come back: {message}").into(),
            })
    }
}

fn auth_failed(server: &Arc<str>, e: &AuthError) -> McpError {
    McpError::Auth {
        server: Arc::clone(server),
        message: e.to_string().into(),
    }
}
