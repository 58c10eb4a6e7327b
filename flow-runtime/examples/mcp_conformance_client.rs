//! The client the MCP conformance suite drives (`@modelcontextprotocol/conformance client`):
//! it runs this program with the scenario server's URL as its last argument, the scenario's
//! name in `MCP_CONFORMANCE_SCENARIO` and, for some, client credentials in
//! `MCP_CONFORMANCE_CONTEXT` (JSON), then checks what its servers saw.
//!
//! ```text
//! cargo build -p agentweave-runtime --features mcp-jwt --example mcp_conformance_client
//! npx @modelcontextprotocol/conformance client --suite all \
//!     --command "target/debug/examples/mcp_conformance_client"
//! ```
//!
//! It connects with [`McpServer`] as an application would: OAuth through [`McpAuth`] (the
//! user's consent is headless here: the suite's authorization server redirects at once, so
//! the redirect is read from its answer), elicitation answered by accepting the server's
//! defaults; then it lists the tools and calls each one with arguments made from its input
//! schema.

use agentweave_runtime::mcp::{
    AuthorizationRedirect, ElicitationAnswer, ElicitationHandler, ElicitationRequest,
    EnterpriseIdp, JwtAlgorithm, McpAuth, McpServer, McpServerConfig,
};

/// The client ID metadata document the suite expects a client to name.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
const REDIRECT_URI: &str = "http://localhost:3000/callback";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .next_back()
        .filter(|a| a.starts_with("http"))
        .ok_or("usage: mcp_conformance_client URL")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: serde_json::Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default();
    let text = |key: &str| context[key].as_str().map(str::to_owned);

    let auth = match (text("client_id"), text("client_secret")) {
        (Some(id), Some(secret)) if text("idp_id_token").is_some() => {
            let idp = EnterpriseIdp::new(
                text("idp_issuer").unwrap_or_default(),
                text("idp_token_endpoint").unwrap_or_default(),
                text("idp_client_id").unwrap_or_default(),
            );
            McpAuth::enterprise_managed(idp, text("idp_id_token").unwrap_or_default(), id, secret)
        }
        (Some(id), Some(secret)) if scenario.contains("client-credentials") => {
            McpAuth::client_credentials(id, secret)
        }
        (Some(id), None) if text("private_key_pem").is_some() => {
            let algorithm = match text("signing_algorithm").as_deref() {
                Some("RS256") => JwtAlgorithm::Rs256,
                Some("RS384") => JwtAlgorithm::Rs384,
                Some("RS512") => JwtAlgorithm::Rs512,
                Some("ES384") => JwtAlgorithm::Es384,
                _ => JwtAlgorithm::Es256,
            };
            let key = text("private_key_pem").unwrap_or_default();
            McpAuth::client_credentials_jwt(id, key, algorithm)
        }
        (Some(id), secret) => {
            McpAuth::authorization_code(REDIRECT_URI, Headless).preregistered_client(id, secret)
        }
        _ => McpAuth::authorization_code(REDIRECT_URI, Headless)
            .client_metadata_url(CLIENT_METADATA_URL)
            .client_name("agentflow conformance client"),
    };
    let config = McpServerConfig::http("conformance", url)
        .auth(auth)
        .elicitation(AcceptDefaults);
    let server = McpServer::connect(config).await?;
    for tool in server.list_tools().await? {
        let arguments = arguments_for(&tool.input_schema);
        let result = server.call_tool(&tool.name, Some(arguments)).await?;
        println!(
            "{}: {}",
            tool.name,
            agentweave_runtime::mcp::result_text(&result)
        );
    }
    server.shutdown().await;
    Ok(())
}

/// The user's consent, headless: the authorization server answers the authorization URL
/// with a redirect to the redirect URI at once; its `Location` is the answer.
struct Headless;

#[async_trait::async_trait]
impl AuthorizationRedirect for Headless {
    async fn authorize(&self, url: &str) -> Result<String, String> {
        let client = reqwest013::Client::builder()
            .redirect(reqwest013::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string())?;
        let answer = client.get(url).send().await.map_err(|e| e.to_string())?;
        answer
            .headers()
            .get("location")
            .and_then(|l| l.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| {
                format!(
                    "no redirect from the authorization server ({})",
                    answer.status()
                )
            })
    }
}

/// Accepts every elicitation, leaving the values to the schema's defaults.
struct AcceptDefaults;

#[async_trait::async_trait]
impl ElicitationHandler for AcceptDefaults {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        eprintln!("elicitation from {}: {}", request.server, request.message);
        ElicitationAnswer::Accept(Default::default())
    }
}

/// Arguments for a tool from its input schema: a small value of each property's type.
fn arguments_for(
    schema: &serde_json::Map<String, serde_json::Value>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut out = serde_json::Map::new();
    let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) else {
        return out;
    };
    for (name, property) in properties {
        let value = match property["type"].as_str() {
            Some("number") | Some("integer") => serde_json::json!(1),
            Some("boolean") => serde_json::json!(true),
            Some("array") => serde_json::json!([]),
            Some("object") => serde_json::json!({}),
            _ => serde_json::json!("test"),
        };
        out.insert(name.clone(), value);
    }
    out
}
