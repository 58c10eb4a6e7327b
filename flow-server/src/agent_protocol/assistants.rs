//! The assistants: each served flow is one (its `assistant_id` is the flow's name).

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::extract::ApiPath;
use crate::principal::{Principal, Scope};
use crate::state::{AppState, ServedFlow};
use agentweave_a2a::wire::rfc3339;

fn assistant_json(flow: &ServedFlow) -> Value {
    json!({
        "assistant_id": flow.name(),
        "graph_id": flow.name(),
        "name": flow.name(),
        "description": flow.agent().description(),
        "config": {},
        "context": {},
        "metadata": {},
        "version": 1,
        "created_at": rfc3339(0),
        "updated_at": rfc3339(0),
    })
}

/// `POST /v1/assistants/search`: every served flow as an assistant.
pub(crate) async fn search_assistants(
    State(state): State<AppState>,
    principal: Principal,
) -> Result<Json<Value>, ApiError> {
    principal.require(Scope::Read)?;
    Ok(Json(Value::Array(
        state.flows().map(assistant_json).collect(),
    )))
}

/// `GET /v1/assistants/{assistant}`: a served flow as an assistant.
pub(crate) async fn get_assistant(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    principal.require(Scope::Read)?;
    Ok(Json(assistant_json(state.flow(&name)?)))
}

/// `GET /v1/assistants/{assistant}/graph`: the flow's tree as LangGraph draws a graph: a node
/// per agent between `__start__` and `__end__`, an edge from `__start__` to the root, a
/// conditional edge each way between an agent and each sub-agent (a transfer), and one from
/// each agent to `__end__`.
pub(crate) async fn assistant_graph(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    principal.require(Scope::Read)?;
    let flow = state.flow(&name)?;
    let node =
        |id: &str| json!({ "id": id, "type": "runnable", "data": { "id": [id], "name": id } });
    let mut nodes = vec![node("__start__")];
    let mut edges = vec![json!({ "source": "__start__", "target": flow.agent().name() })];
    fn walk(
        agent: &agentweave_runtime::FlowAgent,
        nodes: &mut Vec<Value>,
        edges: &mut Vec<Value>,
        node: &dyn Fn(&str) -> Value,
    ) {
        nodes.push(node(agent.name()));
        edges.push(json!({ "source": agent.name(), "target": "__end__", "conditional": true }));
        for child in agent.sub_agents().iter() {
            edges.push(
                json!({ "source": agent.name(), "target": child.name(), "conditional": true }),
            );
            edges.push(
                json!({ "source": child.name(), "target": agent.name(), "conditional": true }),
            );
            walk(child, nodes, edges, node);
        }
    }
    walk(flow.agent(), &mut nodes, &mut edges, &node);
    nodes.push(node("__end__"));
    Ok(Json(json!({ "nodes": nodes, "edges": edges })))
}

/// `GET /v1/assistants/{assistant}/schemas`: a flow's input, output and state are its
/// thread's messages (LangChain message dicts); it takes no config or context.
pub(crate) async fn assistant_schemas(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    principal.require(Scope::Read)?;
    let flow = state.flow(&name)?;
    let messages = json!({
        "title": flow.name(),
        "type": "object",
        "properties": {
            "messages": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "role": { "type": "string" },
                        "type": { "type": "string" },
                        "content": {}
                    }
                }
            }
        },
        "required": ["messages"]
    });
    Ok(Json(json!({
        "graph_id": flow.name(),
        "input_schema": messages,
        "output_schema": messages,
        "state_schema": messages,
        "config_schema": { "type": "object", "properties": {} },
        "context_schema": { "type": "object", "properties": {} },
    })))
}
