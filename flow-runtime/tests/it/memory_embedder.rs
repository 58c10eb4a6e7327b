//! `OpenAiEmbedder` against a local server playing an OpenAI-compatible `/embeddings`
//! endpoint: the request it sends, vectors put back in the order of the texts, and typed
//! errors for an error status, a body that is not an embeddings list, or a vector missing or
//! given twice. Then a `Memory` searching by meaning with it.
#![cfg(feature = "http")]

use crate::support;

use agentweave_runtime::memory::{
    EmbedError, Embedder, ItemKey, Memory, MemoryError, Namespace, OpenAiEmbedder, Partition,
    PutItem, Scope, SearchMode, SearchQuery, Tenant, TransientMemoryStore,
};
use serde_json::json;
use support::model_server::{response, serve};

fn ok(body: serde_json::Value) -> Vec<String> {
    vec![response(
        "200 OK",
        &[("Content-Type", "application/json")],
        &body.to_string(),
    )]
}

#[tokio::test]
async fn sends_the_texts_and_orders_the_vectors_by_index() {
    let answer = ok(json!({"object": "list", "data": [
        {"object": "embedding", "index": 1, "embedding": [0.0, 1.0]},
        {"object": "embedding", "index": 0, "embedding": [1.0, 0.0]},
    ]}));
    let server = serve("/v1", vec![answer], String::new()).await;
    let embedder = OpenAiEmbedder::new(&server.base_url, "text-embedding-3-small")
        .unwrap()
        .api_key("sk-test");
    let vectors = embedder
        .embed(&["first".into(), "second".into()])
        .await
        .unwrap();
    assert_eq!(vectors, [vec![1.0, 0.0], vec![0.0, 1.0]]);
    let received = server.received.lock().unwrap().clone();
    assert_eq!(received[0].request_line, "POST /v1/embeddings HTTP/1.1");
    assert_eq!(
        received[0].body,
        json!({"model": "text-embedding-3-small", "input": ["first", "second"]})
    );
    assert_eq!(
        received[0].header("authorization").as_deref(),
        Some("Bearer sk-test")
    );
    assert!(
        !format!("{embedder:?}").contains("sk-test"),
        "the key is redacted"
    );
}

#[tokio::test]
async fn bad_answers_are_typed_errors() {
    let cases = [
        (
            vec![response("401 Unauthorized", &[], "{\"error\":\"bad key\"}")],
            "HTTP 401",
        ),
        (ok(json!({"data": "nope"})), "not an embeddings list"),
        (
            ok(json!({"data": [{"index": 0, "embedding": [1.0]}]})),
            "fewer vectors",
        ),
        (
            ok(json!({"data": [
                {"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}
            ]})),
            "out of range or twice",
        ),
        (
            ok(json!({"data": [{"index": 7, "embedding": [1.0]}]})),
            "out of range or twice",
        ),
    ];
    for (answer, said) in cases {
        let server = serve("/v1", vec![answer], String::new()).await;
        let embedder = OpenAiEmbedder::new(&server.base_url, "m").unwrap();
        let err = embedder.embed(&["a".into(), "b".into()]).await.unwrap_err();
        assert!(
            matches!(
                err,
                EmbedError::Failed { .. } | EmbedError::BadAnswer { .. }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains(said), "{err} should say {said}");
    }
}

#[tokio::test]
async fn memory_searches_by_meaning_with_the_vectors_it_was_given() {
    // Two items embedded on write, then the query: the query's vector is the second item's.
    let answers = vec![
        ok(json!({"data": [{"index": 0, "embedding": [1.0, 0.0, 0.0]}]})),
        ok(json!({"data": [{"index": 0, "embedding": [0.0, 1.0, 0.0]}]})),
        ok(json!({"data": [{"index": 0, "embedding": [0.1, 0.9, 0.0]}]})),
        ok(json!({"data": [{"index": 0, "embedding": [1.0, 0.0]}]})),
    ];
    let server = serve("/v1", answers, String::new()).await;
    let embedder = OpenAiEmbedder::new(&server.base_url, "m").unwrap();
    let memory = Memory::new(TransientMemoryStore::new()).with_embedder(embedder);
    let at = Partition::new(Tenant::new("acme").unwrap(), Scope::user("alice").unwrap());
    let n = Namespace::parse("facts").unwrap();
    for (k, text) in [("a", "owns a bicycle"), ("b", "likes green tea")] {
        let put = PutItem::new(json!(k)).text(text);
        memory
            .put(&at, &n, &ItemKey::new(k).unwrap(), put)
            .await
            .unwrap();
    }
    let hits = memory
        .search(&at, SearchQuery::new("a warm drink").limit(1))
        .await
        .unwrap();
    assert_eq!(hits[0].item.value, json!("b"));
    // A query vector of another size than the stored ones: the items came from another model.
    let err = memory
        .search(&at, SearchQuery::new("x").mode(SearchMode::Meaning))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            MemoryError::Embedding(EmbedError::Dimensions {
                stored: 3,
                query: 2
            })
        ),
        "{err:?}"
    );
}
