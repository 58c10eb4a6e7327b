//! A served flow's A2A agent card: its name, the flow's description (the `flow!` doc comment,
//! else its root agent's), one skill per agent of its tree, the server's authentication, and
//! the endpoint's URL.

use agentweave_a2a::wire::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, HttpAuthSecurityScheme,
    SecurityRequirement, SecurityScheme, StringList,
};
use agentweave_runtime::FlowAgent;
use axum::http::{header, HeaderMap};

use crate::auth::Auth;
use crate::state::ServedFlow;

/// The name of the bearer scheme in a card's `securitySchemes`.
pub(crate) const BEARER_SCHEME: &str = "bearer";

/// The card of `flow`, reached at `endpoint` (the absolute URL of its JSON-RPC endpoint).
pub(crate) fn card(flow: &ServedFlow, auth: &Auth, endpoint: String) -> AgentCard {
    let root = flow.agent();
    let mut skills = Vec::new();
    skills_of(root, flow.name(), &mut skills);
    let mut card = AgentCard {
        name: flow.name().to_owned(),
        // The flow's description (`flow!`: its doc comment), else its root agent's.
        description: if root.flow_description().is_empty() {
            format!("The agentflow flow '{}'.", flow.name())
        } else {
            root.flow_description().to_owned()
        },
        supported_interfaces: vec![AgentInterface {
            url: endpoint,
            protocol_binding: "JSONRPC".into(),
            tenant: String::new(),
            protocol_version: agentweave_a2a::PROTOCOL_VERSION.into(),
        }],
        version: env!("CARGO_PKG_VERSION").into(),
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            // No `GetExtendedAgentCard`: every caller sees this card.
            extended_agent_card: Some(false),
        },
        default_input_modes: vec!["text/plain".into(), "application/json".into()],
        default_output_modes: vec!["text/plain".into(), "application/json".into()],
        skills,
        ..AgentCard::default()
    };
    // Tokens mapped to principals and JWTs are bearer schemes; a custom authenticator is
    // described as bearer too (the card cannot say more about a check it does not know); dev
    // mode takes no credentials.
    if matches!(auth, Auth::Bearer(_) | Auth::Tokens(_) | Auth::Custom(_)) {
        card.security_schemes.insert(
            BEARER_SCHEME.into(),
            SecurityScheme {
                http_auth_security_scheme: Some(HttpAuthSecurityScheme {
                    description: "Authorization: Bearer <token>".into(),
                    scheme: "Bearer".into(),
                    bearer_format: String::new(),
                }),
                api_key_security_scheme: None,
            },
        );
        card.security_requirements.push(SecurityRequirement {
            schemes: [(BEARER_SCHEME.to_owned(), StringList::default())].into(),
        });
    }
    card
}

/// One skill per agent of the tree `agent` heads, depth first.
fn skills_of(agent: &FlowAgent, flow: &str, out: &mut Vec<AgentSkill>) {
    out.push(AgentSkill {
        id: agent.name().to_owned(),
        name: agent.name().to_owned(),
        description: agent.description().to_owned(),
        tags: vec![flow.to_owned(), "agentflow".into()],
        examples: Vec::new(),
    });
    for child in agent.sub_agents().iter() {
        skills_of(child, flow, out);
    }
}

/// The base URL a request reached this server at: `http://HOST` from its `Host` header
/// (`https` when a proxy says so in `X-Forwarded-Proto`).
pub(crate) fn base_url(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
        })
        .unwrap_or("localhost");
    let scheme = match headers
        .get("x-forwarded-proto")
        .and_then(|h| h.to_str().ok())
    {
        Some("https") => "https",
        _ => "http",
    };
    format!("{scheme}://{host}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentweave_runtime::InMemoryStore;

    #[test]
    fn the_desk_card_has_a_skill_per_agent_and_the_bearer_scheme() {
        let state = crate::AppState::builder(InMemoryStore::new())
            .flow("desk", crate::demo::desk())
            .auth(Auth::bearer("a-long-random-token-0123456789"))
            .build()
            .unwrap();
        let flow = state.flow("desk").unwrap();
        let card = card(flow, state.auth(), "http://h/a2a/desk".into());
        let skills: Vec<&str> = card.skills.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(skills, ["triage", "refund", "complaint"]);
        assert_eq!(
            card.skills[1].description,
            "Refunds orders once a human approves."
        );
        assert_eq!(
            card.description,
            "The front desk: finds out what the customer needs."
        );
        let json = serde_json::to_value(&card).unwrap();
        assert_eq!(
            json["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
            "Bearer"
        );
        assert_eq!(
            json["securityRequirements"][0]["schemes"]["bearer"],
            serde_json::json!({})
        );
        assert_eq!(json["capabilities"]["streaming"], true);
        assert_eq!(json["supportedInterfaces"][0]["protocolVersion"], "1.0");
    }
}
