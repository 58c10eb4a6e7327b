//! Long-term memory served under the principals: the native `/v1/memory/...` routes and the
//! Agent Protocol's `/v1/store/...` routes. A principal reads and writes its own tenant's items
//! only, in the memory scopes its scopes allow; every refusal has its code, and another tenant's
//! principal of the same id, naming the same addresses, reaches nothing.

use crate::common;

use agentweave_runtime::memory::{Memory, TransientMemoryStore};
use agentweave_runtime::InMemoryStore;
use agentweave_server::{AppState, Auth, Principal, Scope};
use common::{client, error_code, spawn};
use reqwest::Method;
use serde_json::{json, Value};

/// acme's alice: chat and read.
const ALICE: &str = "alice-acme-token-0123456789";
/// globex's alice: the same id in another tenant, chat and read.
const GLOBEX_ALICE: &str = "alice-globex-token-0123456789";
/// acme's anna: read only.
const ANNA: &str = "anna-reader-token-0123456789";
/// acme's ray: approve only (no read, no chat).
const RAY: &str = "ray-approver-token-0123456789";
/// acme's operator: admin.
const OPS: &str = "ops-admin-token-0123456789abc";

fn state(memory: Option<Memory>) -> AppState {
    let auth = Auth::tokens([
        (
            ALICE,
            Principal::new("alice")
                .tenant("acme")
                .scopes([Scope::Chat, Scope::Read]),
        ),
        (
            GLOBEX_ALICE,
            Principal::new("alice")
                .tenant("globex")
                .scopes([Scope::Chat, Scope::Read]),
        ),
        (
            ANNA,
            Principal::new("anna").tenant("acme").scopes([Scope::Read]),
        ),
        (
            RAY,
            Principal::new("ray")
                .tenant("acme")
                .scopes([Scope::Approve]),
        ),
        (
            OPS,
            Principal::new("ops").tenant("acme").scopes([Scope::Admin]),
        ),
    ]);
    let mut builder = AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(auth);
    if let Some(memory) = memory {
        builder = builder.memory(memory);
    }
    builder.build().unwrap()
}

async fn call(
    base: &str,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> reqwest::Response {
    let mut request = client()
        .request(method, format!("{base}/v1{path}"))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    request.send().await.unwrap()
}

async fn ok(response: reqwest::Response) -> Value {
    let status = response.status();
    let text = response.text().await.unwrap();
    assert!(status.is_success(), "{status}: {text}");
    if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap()
    }
}

async fn refused(response: reqwest::Response) -> (u16, String) {
    let (status, code, _) = error_code(response).await;
    (status, code)
}

fn put(namespace: &str, key: &str, value: Value) -> Value {
    json!({"namespace": namespace, "key": key, "value": value, "text": value.to_string()})
}

#[tokio::test]
async fn a_principal_reaches_its_own_tenant_and_scopes_only() {
    let server = spawn(state(Some(Memory::new(TransientMemoryStore::new())))).await;
    let base = &server.base;
    let secret = json!({"device": "acme alice's X200 printer"});
    let written = ok(call(
        base,
        ALICE,
        Method::PUT,
        "/memory/item",
        Some(put("profile", "printer", secret.clone())),
    )
    .await)
    .await;
    assert_eq!(written["version"], 1);
    let item = "/memory/item?namespace=profile&key=printer";
    let read = ok(call(base, ALICE, Method::GET, item, None).await).await;
    assert_eq!(read["value"], secret);
    assert_eq!(read["scope"], "user:alice");
    assert_eq!(read["version"], 1);
    let listed = ok(call(
        base,
        ALICE,
        Method::GET,
        "/memory/items?prefix=profile",
        None,
    )
    .await)
    .await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
    let found = ok(call(
        base,
        ALICE,
        Method::POST,
        "/memory/search",
        Some(json!({"query": "printer"})),
    )
    .await)
    .await;
    assert_eq!(found["items"][0]["key"], "printer");

    // globex's alice, naming the same addresses, reaches nothing; her writes stay hers.
    assert_eq!(
        refused(call(base, GLOBEX_ALICE, Method::GET, item, None).await).await,
        (404, "unknown_item".into())
    );
    let listed = ok(call(base, GLOBEX_ALICE, Method::GET, "/memory/items", None).await).await;
    assert_eq!(listed["items"], json!([]));
    let found = ok(call(
        base,
        GLOBEX_ALICE,
        Method::POST,
        "/memory/search",
        Some(json!({"query": "acme alice printer"})),
    )
    .await)
    .await;
    assert_eq!(found["items"], json!([]));
    for scope in ["app", "user:alice", "thread:t1"] {
        let path = format!("{item}&scope={scope}");
        let (status, _) = refused(call(base, GLOBEX_ALICE, Method::GET, &path, None).await).await;
        assert!(status == 404 || status == 403, "{scope}: {status}");
    }
    let body = json!({"namespace": "profile", "key": "printer", "value": "overwritten", "expect_version": 1});
    assert_eq!(
        refused(call(base, GLOBEX_ALICE, Method::PUT, "/memory/item", Some(body)).await).await,
        (409, "conflict".into())
    );
    let deleted = ok(call(base, GLOBEX_ALICE, Method::DELETE, item, None).await).await;
    assert_eq!(deleted["deleted"], false);
    let read = ok(call(base, ALICE, Method::GET, item, None).await).await;
    assert_eq!(
        (read["value"].clone(), read["version"].clone()),
        (secret.clone(), json!(1))
    );

    // Scopes: a reader cannot write; a principal without read or chat cannot read.
    let (status, code) = refused(
        call(
            base,
            ANNA,
            Method::PUT,
            "/memory/item",
            Some(put("profile", "x", json!(1))),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (403, "forbidden"));
    assert_eq!(
        ok(call(base, ANNA, Method::GET, "/memory/items", None).await).await["items"],
        json!([])
    );
    assert_eq!(
        refused(call(base, RAY, Method::GET, item, None).await)
            .await
            .0,
        403
    );
    assert_eq!(
        refused(call(base, RAY, Method::DELETE, item, None).await)
            .await
            .0,
        403
    );

    // The application's memory: everyone of the tenant reads it, only an admin writes it.
    let app_put = json!({"scope": "app", "namespace": "policy", "key": "returns", "value": "30 days", "text": "returns within 30 days"});
    assert_eq!(
        refused(
            call(
                base,
                ALICE,
                Method::PUT,
                "/memory/item",
                Some(app_put.clone())
            )
            .await
        )
        .await
        .0,
        403
    );
    ok(call(base, OPS, Method::PUT, "/memory/item", Some(app_put)).await).await;
    let app_item = "/memory/item?scope=app&namespace=policy&key=returns";
    assert_eq!(
        ok(call(base, ALICE, Method::GET, app_item, None).await).await["value"],
        "30 days"
    );
    assert_eq!(
        ok(call(base, ANNA, Method::GET, app_item, None).await).await["value"],
        "30 days"
    );
    assert_eq!(
        refused(call(base, GLOBEX_ALICE, Method::GET, app_item, None).await)
            .await
            .0,
        404
    );

    // Another user's memory: only an admin of the tenant.
    let annas = format!("{item}&scope=user:alice");
    assert_eq!(
        refused(call(base, ANNA, Method::GET, &annas, None).await)
            .await
            .0,
        403
    );
    assert_eq!(
        ok(call(base, OPS, Method::GET, &annas, None).await).await["value"],
        secret
    );
}

#[tokio::test]
async fn hostile_addresses_are_refused_and_write_nothing() {
    let server = spawn(state(Some(Memory::new(TransientMemoryStore::new())))).await;
    let base = &server.base;
    for (namespace, key) in [
        ("../profile", "printer"),
        ("profile/..", "printer"),
        ("profile", ".."),
        ("profile", "../printer"),
        ("prоfile", "printer"), // a Cyrillic 'о'
        ("profile", "printer\u{200b}"),
        ("", "printer"),
    ] {
        let body = json!({"namespace": namespace, "key": key, "value": 1});
        let (status, code) =
            refused(call(base, ALICE, Method::PUT, "/memory/item", Some(body)).await).await;
        assert_eq!(
            (status, code.as_str()),
            (400, "bad_request"),
            "{namespace:?} {key:?}"
        );
    }
    for scope in ["user:../alice", "thread:", "weird", "user:аlice"] {
        let body = json!({"scope": scope, "namespace": "n", "key": "k", "value": 1});
        let (status, _) =
            refused(call(base, OPS, Method::PUT, "/memory/item", Some(body)).await).await;
        assert_eq!(status, 400, "{scope}");
    }
    for token in [ALICE, OPS] {
        assert_eq!(
            ok(call(base, token, Method::GET, "/memory/items", None).await).await["items"],
            json!([])
        );
    }
    // Without memory served, the routes say so.
    let bare = spawn(state(None)).await;
    let (status, code) =
        refused(call(&bare.base, ALICE, Method::GET, "/memory/items", None).await).await;
    assert_eq!((status, code.as_str()), (404, "unknown_item"));
}

#[tokio::test]
async fn the_agent_protocol_store_routes_keep_each_principal_apart() {
    let server = spawn(state(Some(Memory::new(TransientMemoryStore::new())))).await;
    let base = &server.base;
    let put_item =
        |ns: Value, key: &str, value: Value| json!({"namespace": ns, "key": key, "value": value});
    let status = call(
        base,
        ALICE,
        Method::PUT,
        "/store/items",
        Some(put_item(
            json!(["memories", "devices"]),
            "printer",
            json!({"model": "X200", "note": "laser printer"}),
        )),
    )
    .await;
    assert_eq!(status.status().as_u16(), 204);
    ok(call(
        base,
        ALICE,
        Method::PUT,
        "/store/items",
        Some(put_item(
            json!(["memories", "prefs"]),
            "tone",
            json!({"text": "short answers"}),
        )),
    )
    .await)
    .await;
    let got = ok(call(
        base,
        ALICE,
        Method::GET,
        "/store/items?namespace=memories.devices&key=printer",
        None,
    )
    .await)
    .await;
    assert_eq!(got["namespace"], json!(["memories", "devices"]));
    assert_eq!(got["value"]["model"], "X200");
    assert!(got["created_at"].as_str().unwrap().ends_with('Z'));
    let found = ok(call(
        base,
        ALICE,
        Method::POST,
        "/store/items/search",
        Some(json!({"namespace_prefix": ["memories"], "query": "laser printer"})),
    )
    .await)
    .await;
    assert_eq!(found["items"][0]["key"], "printer");
    assert!(found["items"][0]["score"].is_number());
    let filtered = ok(call(
        base,
        ALICE,
        Method::POST,
        "/store/items/search",
        Some(json!({"namespace_prefix": ["memories"], "filter": {"model": "X200"}})),
    )
    .await)
    .await;
    assert_eq!(filtered["items"].as_array().unwrap().len(), 1);
    let namespaces = ok(call(
        base,
        ALICE,
        Method::POST,
        "/store/namespaces",
        Some(json!({})),
    )
    .await)
    .await;
    assert_eq!(
        namespaces["namespaces"],
        json!([["memories", "devices"], ["memories", "prefs"]])
    );
    let shallow = ok(call(
        base,
        ALICE,
        Method::POST,
        "/store/namespaces",
        Some(json!({"max_depth": 1})),
    )
    .await)
    .await;
    assert_eq!(shallow["namespaces"], json!([["memories"]]));

    // The same namespaces and key from globex's alice, and from acme's anna: nothing.
    for token in [GLOBEX_ALICE, ANNA] {
        let (status, _) = refused(
            call(
                base,
                token,
                Method::GET,
                "/store/items?namespace=memories.devices&key=printer",
                None,
            )
            .await,
        )
        .await;
        assert_eq!(status, 404);
        let found = ok(call(
            base,
            token,
            Method::POST,
            "/store/items/search",
            Some(json!({"namespace_prefix": [], "query": "printer"})),
        )
        .await)
        .await;
        assert_eq!(found["items"], json!([]));
        let namespaces = ok(call(
            base,
            token,
            Method::POST,
            "/store/namespaces",
            Some(json!({})),
        )
        .await)
        .await;
        assert_eq!(namespaces["namespaces"], json!([]));
    }
    // A delete from another tenant removes nothing of alice's; a reader cannot write.
    call(
        base,
        GLOBEX_ALICE,
        Method::DELETE,
        "/store/items",
        Some(json!({"namespace": ["memories", "devices"], "key": "printer"})),
    )
    .await;
    ok(call(
        base,
        ALICE,
        Method::GET,
        "/store/items?namespace=memories.devices&key=printer",
        None,
    )
    .await)
    .await;
    let (status, _) = refused(
        call(
            base,
            ANNA,
            Method::PUT,
            "/store/items",
            Some(put_item(json!(["m"]), "k", json!({}))),
        )
        .await,
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(
        refused(
            call(
                base,
                RAY,
                Method::POST,
                "/store/namespaces",
                Some(json!({}))
            )
            .await
        )
        .await
        .0,
        403
    );
    // Hostile namespaces and keys.
    for (ns, key) in [
        (json!(["..", "x"]), "k"),
        (json!(["a.b"]), "k"),
        (json!(["a/b"]), "k"),
        (json!([]), "k"),
        (json!(["memories"]), "../printer"),
        (json!(["mеmories"]), "k"), // a Cyrillic 'е'
    ] {
        let (status, _) = refused(
            call(
                base,
                ALICE,
                Method::PUT,
                "/store/items",
                Some(put_item(ns.clone(), key, json!({}))),
            )
            .await,
        )
        .await;
        assert_eq!(status, 400, "{ns} {key}");
    }
    let (status, _) = refused(
        call(
            base,
            ALICE,
            Method::GET,
            "/store/items?namespace=..&key=k",
            None,
        )
        .await,
    )
    .await;
    assert_eq!(status, 400);
    // Deleted by its owner, it is gone.
    let gone = call(
        base,
        ALICE,
        Method::DELETE,
        "/store/items",
        Some(json!({"namespace": ["memories", "devices"], "key": "printer"})),
    )
    .await;
    assert_eq!(gone.status().as_u16(), 204);
    assert_eq!(
        refused(
            call(
                base,
                ALICE,
                Method::GET,
                "/store/items?namespace=memories.devices&key=printer",
                None
            )
            .await
        )
        .await
        .0,
        404
    );
}
