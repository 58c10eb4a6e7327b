//! The MCP client's OAuth 2.1 (`McpAuth`) and protocol version negotiation, against a fake
//! authorization server and MCP resource server in this file (axum, on a loopback port):
//! protected resource metadata from the `WWW-Authenticate` challenge, authorization server
//! metadata, dynamic client registration, the authorization code grant with PKCE (S256
//! checked by the fake), client credentials, a silent refresh when the server rejects a
//! token, scope step-up on `403 insufficient_scope`, the token store, and plain errors.
//! The official conformance suite covers the same ground against servers nobody here wrote
//! (`.ci/mcp_conformance.sh`).
//!
//! Run with `cargo test -p agentweave-runtime --features mcp --test it -- mcp_auth::`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use agentweave_runtime::mcp::{
    AuthorizationRedirect, CredentialStore, InMemoryCredentialStore, McpAuth, McpError, McpServer,
    McpServerConfig,
};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use serde_json::{json, Value};
use sha2::Digest;

/// What the fake servers saw and how they behave.
#[derive(Default)]
struct Fake {
    base: String,
    /// The authorization server's base URL, when not `base` (another name for the same port).
    auth_base: Option<String>,
    /// How many times the authorization server's metadata was read.
    metadata_reads: u32,
    /// The `issuer` the metadata states, when not its base URL.
    issuer: Option<String>,
    /// A server of the 2025-03-26 revision: no protected resource metadata.
    legacy: bool,
    /// The scope `tools/call` requires (`None`: any token will do).
    call_scope: Option<String>,
    /// The protocol version `initialize` answers (`None`: the client's).
    answer_version: Option<String>,
    registrations: u32,
    /// The `scope` of each authorization request.
    authorizations: Vec<String>,
    /// The `grant_type` of each token request.
    grants: Vec<String>,
    /// The PKCE challenge of each code.
    challenges: HashMap<String, String>,
    /// Scopes by code, then by access token.
    code_scopes: HashMap<String, String>,
    tokens: HashMap<String, String>,
    refresh: HashMap<String, String>,
    revoked: HashSet<String>,
    /// The `protocolVersion` of each `initialize`.
    offered: Vec<String>,
    /// The access token of each MCP request that carried one.
    bearer: Vec<String>,
    issued: u32,
}

type Shared = Arc<Mutex<Fake>>;

impl Fake {
    fn issue(&mut self, scope: &str) -> Value {
        self.issued += 1;
        let access = format!("at-{}", self.issued);
        let refresh = format!("rt-{}", self.issued);
        self.tokens.insert(access.clone(), scope.to_owned());
        self.refresh.insert(refresh.clone(), scope.to_owned());
        json!({"access_token": access, "token_type": "Bearer", "expires_in": 3600,
               "refresh_token": refresh, "scope": scope})
    }

    fn challenge(&self, extra: &str) -> String {
        if self.legacy {
            return format!("Bearer scope=\"tools:read\"{extra}");
        }
        format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", \
             scope=\"tools:read\"{extra}",
            self.base
        )
    }
}

async fn resource_metadata(State(fake): State<Shared>) -> Response {
    let fake = fake.lock().unwrap();
    if fake.legacy {
        return StatusCode::NOT_FOUND.into_response();
    }
    let base = fake.base.clone();
    let auth_base = fake.auth_base.clone().unwrap_or_else(|| base.clone());
    Json(
        json!({"resource": format!("{base}/mcp"), "authorization_servers": [auth_base],
                "scopes_supported": ["tools:read", "tools:write"]}),
    )
    .into_response()
}

async fn server_metadata(State(fake): State<Shared>) -> Json<Value> {
    let mut fake = fake.lock().unwrap();
    fake.metadata_reads += 1;
    let base = fake.auth_base.clone().unwrap_or_else(|| fake.base.clone());
    Json(json!({
        "issuer": fake.issuer.clone().unwrap_or_else(|| base.clone()),
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"]
    }))
}

async fn register(State(fake): State<Shared>, Json(body): Json<Value>) -> Response {
    fake.lock().unwrap().registrations += 1;
    let answer = json!({"client_id": "registered-client", "redirect_uris": body["redirect_uris"],
                        "token_endpoint_auth_method": "none"});
    (StatusCode::CREATED, Json(answer)).into_response()
}

async fn authorize(
    State(fake): State<Shared>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let mut fake = fake.lock().unwrap();
    let code = format!("code-{}", fake.authorizations.len() + 1);
    let scope = q.get("scope").cloned().unwrap_or_default();
    fake.authorizations.push(scope.clone());
    assert_eq!(
        q.get("code_challenge_method").map(String::as_str),
        Some("S256")
    );
    fake.challenges.insert(
        code.clone(),
        q.get("code_challenge").cloned().unwrap_or_default(),
    );
    fake.code_scopes.insert(code.clone(), scope);
    let location = format!(
        "{}?code={code}&state={}",
        q["redirect_uri"],
        q.get("state").cloned().unwrap_or_default()
    );
    (StatusCode::FOUND, [("location", location)]).into_response()
}

async fn token(State(fake): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let form: HashMap<String, String> = url::form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    let mut fake = fake.lock().unwrap();
    let grant = form.get("grant_type").cloned().unwrap_or_default();
    fake.grants.push(grant.clone());
    let refuse = |why: &str| {
        (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "invalid_grant", "error_description": why})),
        )
            .into_response()
    };
    match grant.as_str() {
        "authorization_code" => {
            let code = form.get("code").cloned().unwrap_or_default();
            let Some(challenge) = fake.challenges.remove(&code) else {
                return refuse("unknown code");
            };
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(sha2::Sha256::digest(verifier.as_bytes()));
            if computed != challenge {
                return refuse("the PKCE verifier does not match the challenge");
            }
            let scope = fake.code_scopes.remove(&code).unwrap_or_default();
            Json(fake.issue(&scope)).into_response()
        }
        "refresh_token" => {
            let given = form.get("refresh_token").cloned().unwrap_or_default();
            let Some(scope) = fake.refresh.remove(&given) else {
                return refuse("unknown refresh token");
            };
            Json(fake.issue(&scope)).into_response()
        }
        "client_credentials" => {
            let basic = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Basic "))
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                .and_then(|b| String::from_utf8(b).ok());
            let posted = form
                .get("client_id")
                .zip(form.get("client_secret"))
                .map(|(i, s)| format!("{i}:{s}"));
            let given = basic.or(posted).unwrap_or_default();
            // Basic encodes the form-urlencoded id and secret.
            if given != "service:s3cret" {
                return refuse("bad client credentials");
            }
            let scope = form.get("scope").cloned().unwrap_or_default();
            Json(fake.issue(&scope)).into_response()
        }
        _ => refuse("unsupported grant"),
    }
}

async fn mcp(State(fake): State<Shared>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let mut fake = fake.lock().unwrap();
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let scopes = match &token {
        Some(t) if fake.tokens.contains_key(t) && !fake.revoked.contains(t) => {
            fake.tokens[t].clone()
        }
        Some(t) => {
            let revoked = fake.revoked.contains(t);
            let extra = if revoked {
                ", error=\"invalid_token\""
            } else {
                ""
            };
            let challenge = fake.challenge(extra);
            return (StatusCode::UNAUTHORIZED, [("www-authenticate", challenge)]).into_response();
        }
        None => {
            let challenge = fake.challenge("");
            return (StatusCode::UNAUTHORIZED, [("www-authenticate", challenge)]).into_response();
        }
    };
    fake.bearer.push(token.unwrap_or_default());
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let Some(id) = body.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match method.as_str() {
        "initialize" => {
            let offered = body["params"]["protocolVersion"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            fake.offered.push(offered.clone());
            let version = fake.answer_version.clone().unwrap_or(offered);
            json!({"protocolVersion": version, "capabilities": {"tools": {}},
                   "serverInfo": {"name": "fake", "version": "1"}})
        }
        "tools/list" => json!({"tools": [{"name": "whoami", "description": "Who calls.",
                                           "inputSchema": {"type": "object"}}]}),
        "tools/call" => {
            if let Some(required) = fake.call_scope.clone() {
                if !scopes.split(' ').any(|s| s == required) {
                    let challenge = format!(
                        "Bearer error=\"insufficient_scope\", scope=\"{required}\", \
                         resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
                        fake.base
                    );
                    return (StatusCode::FORBIDDEN, [("www-authenticate", challenge)])
                        .into_response();
                }
            }
            json!({"content": [{"type": "text", "text": format!("scopes: {scopes}")}]})
        }
        _ => json!({}),
    };
    Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

/// Starts the fake servers; their state and the MCP endpoint's URL.
async fn start(configure: impl FnOnce(&mut Fake)) -> (Shared, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://localhost:{}", listener.local_addr().unwrap().port());
    let mut fake = Fake {
        base: base.clone(),
        ..Fake::default()
    };
    configure(&mut fake);
    let fake: Shared = Arc::new(Mutex::new(fake));
    let app = Router::new()
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(server_metadata),
        )
        .route("/register", post(register))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .route("/mcp", post(mcp))
        .with_state(Arc::clone(&fake));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (fake, format!("{base}/mcp"))
}

/// The user's consent without a browser: the fake authorization server redirects at once.
#[derive(Clone, Default)]
struct Consent {
    urls: Arc<Mutex<Vec<String>>>,
}

#[async_trait::async_trait]
impl AuthorizationRedirect for Consent {
    async fn authorize(&self, url: &str) -> Result<String, String> {
        self.urls.lock().unwrap().push(url.to_owned());
        let client = reqwest013::Client::builder()
            .redirect(reqwest013::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string())?;
        let answer = client.get(url).send().await.map_err(|e| e.to_string())?;
        let location = answer.headers().get("location").ok_or("no redirect")?;
        Ok(location.to_str().map_err(|e| e.to_string())?.to_owned())
    }
}

/// The user closes the browser.
struct Refuse;

#[async_trait::async_trait]
impl AuthorizationRedirect for Refuse {
    async fn authorize(&self, _url: &str) -> Result<String, String> {
        Err("the user closed the window".into())
    }
}

const REDIRECT: &str = "http://localhost:7777/callback";

#[tokio::test]
async fn the_authorization_code_grant_discovers_registers_and_proves_pkce() {
    let (fake, url) = start(|_| {}).await;
    let consent = Consent::default();
    let store = InMemoryCredentialStore::new();
    let auth = McpAuth::authorization_code(REDIRECT, consent.clone()).token_store(store.clone());
    let server = McpServer::connect(McpServerConfig::http("secured", url).auth(auth))
        .await
        .unwrap();
    let result = server.call_tool("whoami", None).await.unwrap();
    assert_eq!(
        agentweave_runtime::mcp::result_text(&result),
        "scopes: tools:read"
    );

    {
        let fake = fake.lock().unwrap();
        assert_eq!(fake.registrations, 1, "the client registered dynamically");
        assert_eq!(fake.grants, ["authorization_code"]);
        // The scope came from the challenge; the PKCE verifier matched (else no token).
        assert_eq!(fake.authorizations, ["tools:read"]);
        assert!(fake.bearer.iter().all(|t| t == "at-1"), "{:?}", fake.bearer);
        let urls = consent.urls.lock().unwrap();
        assert_eq!(urls.len(), 1);
        assert!(
            urls[0].contains("client_id=registered-client"),
            "{}",
            urls[0]
        );
        assert!(
            urls[0].contains("resource="),
            "the resource indicator is sent: {}",
            urls[0]
        );
    }
    let kept = store
        .load()
        .await
        .unwrap()
        .expect("the tokens are in the store");
    assert_eq!(kept.client_id, "registered-client");
    assert!(kept.token_response.is_some());
}

#[tokio::test]
async fn tokens_in_the_store_are_used_without_asking_the_user_again() {
    let (fake, url) = start(|_| {}).await;
    let store = InMemoryCredentialStore::new();
    let first =
        McpAuth::authorization_code(REDIRECT, Consent::default()).token_store(store.clone());
    let server = McpServer::connect(McpServerConfig::http("secured", url.clone()).auth(first))
        .await
        .unwrap();
    server.shutdown().await;
    // A second client (a restarted process) with the same store and a user who would refuse.
    let again = McpAuth::authorization_code(REDIRECT, Refuse).token_store(store);
    let server = McpServer::connect(McpServerConfig::http("secured", url).auth(again))
        .await
        .unwrap();
    server.call_tool("whoami", None).await.unwrap();
    let fake = fake.lock().unwrap();
    assert_eq!(fake.authorizations.len(), 1, "the user was asked once");
    assert_eq!(fake.registrations, 1);
}

#[tokio::test]
async fn a_rejected_token_is_refreshed_silently() {
    let (fake, url) = start(|_| {}).await;
    let consent = Consent::default();
    let auth = McpAuth::authorization_code(REDIRECT, consent.clone());
    let server = McpServer::connect(McpServerConfig::http("secured", url).auth(auth))
        .await
        .unwrap();
    fake.lock().unwrap().revoked.insert("at-1".into());
    let result = server.call_tool("whoami", None).await.unwrap();
    assert_eq!(
        agentweave_runtime::mcp::result_text(&result),
        "scopes: tools:read"
    );
    let fake = fake.lock().unwrap();
    assert_eq!(fake.grants, ["authorization_code", "refresh_token"]);
    assert_eq!(fake.bearer.last().map(String::as_str), Some("at-2"));
    assert_eq!(
        consent.urls.lock().unwrap().len(),
        1,
        "no new consent for a refresh"
    );
}

#[tokio::test]
async fn a_403_insufficient_scope_steps_up_and_the_call_goes_through() {
    let (fake, url) = start(|f| f.call_scope = Some("tools:write".into())).await;
    let consent = Consent::default();
    let auth = McpAuth::authorization_code(REDIRECT, consent.clone());
    let server = McpServer::connect(McpServerConfig::http("secured", url).auth(auth))
        .await
        .unwrap();
    let result = server.call_tool("whoami", None).await.unwrap();
    let text = agentweave_runtime::mcp::result_text(&result);
    assert!(
        text.contains("tools:write") && text.contains("tools:read"),
        "{text}"
    );
    let fake = fake.lock().unwrap();
    assert_eq!(fake.authorizations.len(), 2, "{:?}", fake.authorizations);
    let upgraded: HashSet<&str> = fake.authorizations[1].split(' ').collect();
    assert!(upgraded.contains("tools:read") && upgraded.contains("tools:write"));
    assert_eq!(
        fake.registrations, 1,
        "the step-up keeps the registered client"
    );
}

#[tokio::test]
async fn the_client_credentials_grant_needs_no_user() {
    let (fake, url) = start(|_| {}).await;
    let auth = McpAuth::client_credentials("service", "s3cret");
    let server = McpServer::connect(McpServerConfig::http("secured", url).auth(auth))
        .await
        .unwrap();
    server.call_tool("whoami", None).await.unwrap();
    let fake = fake.lock().unwrap();
    assert_eq!(fake.grants, ["client_credentials"]);
    assert_eq!(fake.registrations, 0);
    assert!(fake.authorizations.is_empty());
}

#[tokio::test]
async fn wrong_client_credentials_fail_as_an_auth_error() {
    let (_fake, url) = start(|_| {}).await;
    let auth = McpAuth::client_credentials("service", "wrong");
    let e = McpServer::connect(McpServerConfig::http("secured", url).auth(auth))
        .await
        .unwrap_err();
    assert!(matches!(e, McpError::Auth { .. }), "{e:?}");
    let text = e.to_string();
    assert!(text.contains("OAuth authorization failed"), "{text}");
    assert!(!text.contains("speaks MCP"), "{text}");
}

/// Every name is 127.0.0.1 (the fake servers' port under the names the test gives them).
struct Loopback;

impl agentweave_runtime::outbound::Lookup for Loopback {
    fn lookup(
        &self,
        _host: String,
    ) -> futures::future::BoxFuture<'static, std::io::Result<Vec<std::net::IpAddr>>> {
        Box::pin(async { Ok(vec![std::net::IpAddr::from([127, 0, 0, 1])]) })
    }
}

#[tokio::test]
async fn the_oauth_requests_are_held_to_the_servers_outbound_policy() {
    use agentweave_runtime::outbound::OutboundPolicy;
    // The MCP server is `mcp.test`, let through by the operator; its metadata names an
    // authorization server `auth.test`, which resolves to loopback.
    let named = || async {
        let (fake, url) = start(|_| {}).await;
        {
            let mut f = fake.lock().unwrap();
            f.base = f.base.replace("localhost", "mcp.test");
            f.auth_base = Some(f.base.replace("mcp.test", "auth.test"));
        }
        (fake, url.replace("localhost", "mcp.test"))
    };
    let policy = OutboundPolicy::default()
        .lookup(Loopback)
        .allow_host("mcp.test");

    let (fake, url) = named().await;
    let config = McpServerConfig::http("secured", url)
        .outbound(policy.clone())
        .auth(McpAuth::client_credentials("service", "s3cret"));
    let e = McpServer::connect(config).await.unwrap_err();
    assert!(matches!(e, McpError::Auth { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.contains("loopback"),
        "the refusal names the range: {text}"
    );
    {
        let f = fake.lock().unwrap();
        assert_eq!(f.metadata_reads, 0, "the refused host was never reached");
        assert!(f.grants.is_empty());
    }

    // The authorization server let through too: the same grant goes through.
    let (fake, url) = named().await;
    let config = McpServerConfig::http("secured", url)
        .outbound(policy.allow_host("auth.test"))
        .auth(McpAuth::client_credentials("service", "s3cret"));
    let server = McpServer::connect(config).await.unwrap();
    server.call_tool("whoami", None).await.unwrap();
    let f = fake.lock().unwrap();
    assert_eq!(f.metadata_reads, 1);
    assert_eq!(f.grants, ["client_credentials"]);
}

#[tokio::test]
async fn a_2025_03_26_servers_root_metadata_naming_an_issuer_on_its_own_origin_is_taken() {
    // No protected resource metadata; the metadata at the origin's root states the issuer
    // `<origin>/oauth` (RFC 8414 would have it at `/.well-known/oauth-authorization-server/oauth`).
    let (fake, url) = start(|f| f.legacy = true).await;
    {
        let mut f = fake.lock().unwrap();
        f.issuer = Some(format!("{}/oauth", f.base));
    }
    let auth = McpAuth::client_credentials("service", "s3cret");
    let server = McpServer::connect(McpServerConfig::http("legacy", url).auth(auth))
        .await
        .unwrap();
    server.call_tool("whoami", None).await.unwrap();
    assert_eq!(fake.lock().unwrap().grants, ["client_credentials"]);
}

#[tokio::test]
async fn metadata_naming_an_issuer_on_another_origin_is_refused() {
    let (fake, url) = start(|f| f.legacy = true).await;
    fake.lock().unwrap().issuer = Some("https://elsewhere.example.com".into());
    let auth = McpAuth::client_credentials("service", "s3cret");
    let e = McpServer::connect(McpServerConfig::http("legacy", url).auth(auth))
        .await
        .unwrap_err();
    assert!(matches!(e, McpError::Auth { .. }), "{e:?}");
    assert!(e.to_string().contains("issuer"), "{e}");
    assert!(
        fake.lock().unwrap().grants.is_empty(),
        "no token was asked for"
    );
}

#[tokio::test]
async fn a_user_who_does_not_consent_gets_a_plain_error() {
    let (_fake, url) = start(|_| {}).await;
    let auth = McpAuth::authorization_code(REDIRECT, Refuse);
    let e = McpServer::connect(McpServerConfig::http("secured", url).auth(auth))
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, McpError::Auth { .. }), "{e:?}");
    assert!(text.contains("the user closed the window"), "{text}");
}

#[tokio::test]
async fn without_auth_a_401_says_the_server_requires_authorization() {
    let (_fake, url) = start(|_| {}).await;
    let e = McpServer::connect(McpServerConfig::http("secured", url))
        .await
        .unwrap_err();
    let McpError::AuthRequired { challenge, .. } = &e else {
        panic!("expected AuthRequired, got {e:?}");
    };
    assert!(challenge.contains("resource_metadata"), "{challenge}");
    let text = e.to_string();
    assert!(
        text.contains("requires authorization") && text.contains("McpAuth"),
        "{text}"
    );
    assert!(!text.contains("speaks MCP"), "{text}");
}

#[tokio::test]
async fn the_client_offers_the_latest_specified_version() {
    let (fake, url) = start(|_| {}).await;
    let auth = McpAuth::client_credentials("service", "s3cret");
    McpServer::connect(McpServerConfig::http("secured", url).auth(auth))
        .await
        .unwrap();
    assert_eq!(
        fake.lock().unwrap().offered,
        [agentweave_runtime::mcp::PROTOCOL_VERSION]
    );
    assert_eq!(agentweave_runtime::mcp::PROTOCOL_VERSION, "2025-11-25");
}

#[tokio::test]
async fn an_older_supported_version_is_accepted() {
    let (_fake, url) = start(|f| f.answer_version = Some("2025-03-26".into())).await;
    let auth = McpAuth::client_credentials("service", "s3cret");
    let server = McpServer::connect(McpServerConfig::http("secured", url).auth(auth))
        .await
        .unwrap();
    server.call_tool("whoami", None).await.unwrap();
}

#[tokio::test]
async fn a_version_the_client_does_not_speak_is_a_typed_error() {
    let (_fake, url) = start(|f| f.answer_version = Some("2099-01-01".into())).await;
    let auth = McpAuth::client_credentials("service", "s3cret");
    let e = McpServer::connect(McpServerConfig::http("secured", url).auth(auth))
        .await
        .unwrap_err();
    let McpError::UnsupportedProtocolVersion {
        answered, offered, ..
    } = &e
    else {
        panic!("expected UnsupportedProtocolVersion, got {e:?}");
    };
    assert_eq!((&**answered, &**offered), ("2099-01-01", "2025-11-25"));
    assert!(e.to_string().contains("2025-06-18"), "{e}");
}
