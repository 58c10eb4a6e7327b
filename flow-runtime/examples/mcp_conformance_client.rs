//! The client the MCP conformance suite drives (`@modelcontextprotocol/conformance client`):
//! it runs this program with the scenario server's URL as its last argument and the scenario's
//! name in `MCP_CONFORMANCE_SCENARIO`, then checks what the server saw.
//!
//! ```text
//! npx @modelcontextprotocol/conformance client --suite all \
//!     --command "target/debug/examples/mcp_conformance_client"
//! ```
//!
//! It connects with [`McpServer`] as an application would, lists the tools and calls each one
//! with arguments made from its input schema.

use flow_runtime::mcp::{McpServer, McpServerConfig};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .last()
        .filter(|a| a.starts_with("http"))
        .ok_or("usage: mcp_conformance_client URL")?;
    let server = McpServer::connect(McpServerConfig::http("conformance", url)).await?;
    for tool in server.list_tools().await? {
        let arguments = arguments_for(&tool.input_schema);
        let result = server.call_tool(&tool.name, Some(arguments)).await?;
        println!("{}: {}", tool.name, flow_runtime::mcp::result_text(&result));
    }
    server.shutdown().await;
    Ok(())
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
