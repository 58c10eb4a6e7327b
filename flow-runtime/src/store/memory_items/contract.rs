//! The conformance suite of the [`MemoryStore`] contract: [`run`] checks a store (ours in
//! `tests/it/memory_store.rs`, or one of your own) for versions, scopes, time to live, prefixes,
//! filters, search ranking by text and by meaning, and tenant isolation under attack.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::json;

use super::{
    AddressPart, EmbedError, Expect, Filter, HashEmbedder, ItemKey, ListQuery, Memory, MemoryError,
    MemoryStore, Namespace, Partition, PutItem, Scope, SearchMode, SearchQuery, Tenant,
};

fn ns(path: &str) -> Namespace {
    Namespace::parse(path).unwrap()
}

fn key(k: &str) -> ItemKey {
    ItemKey::new(k).unwrap()
}

fn user(tenant: &str, id: &str) -> Partition {
    Partition::new(Tenant::new(tenant).unwrap(), Scope::user(id).unwrap())
}

/// Runs every check on `store`, which may hold items already (each check uses tenants of its
/// own, named with `run`'s `tag`, so several runs can share a store).
///
/// # Panics
///
/// When the store breaks the contract: the message says which rule.
pub async fn run(store: Arc<dyn MemoryStore>, tag: &str) {
    versions(&store, &format!("{tag}-v")).await;
    one_writer_wins(&store, &format!("{tag}-w")).await;
    scopes(&store, &format!("{tag}-s")).await;
    prefixes_and_filters(&store, &format!("{tag}-p")).await;
    text_ranking(&store, &format!("{tag}-t")).await;
    meaning_ranking(&store, &format!("{tag}-m")).await;
    let crossings = tenant_isolation(&store, &format!("{tag}-i")).await;
    assert_eq!(crossings, 0, "items crossed tenants");
    time_to_live(&store, &format!("{tag}-l")).await;
}

/// Writes with versions: create, replace, compare-and-swap, delete.
pub async fn versions(store: &Arc<dyn MemoryStore>, tenant: &str) {
    let memory = Memory::from_arc(store.clone());
    let at = user(tenant, "alice");
    let (n, k) = (ns("notes"), key("tone"));
    let put = |v: serde_json::Value| PutItem::new(v).text("prefers a formal tone");
    assert_eq!(memory.put(&at, &n, &k, put(json!(1))).await.unwrap(), 1);
    let first = memory.get(&at, &n, &k).await.unwrap().expect("written");
    assert_eq!((first.version, &first.value), (1, &json!(1)));
    assert_eq!(first.text.as_deref(), Some("prefers a formal tone"));
    assert_eq!(first.expires_at, None);
    assert_eq!(memory.put(&at, &n, &k, put(json!(2))).await.unwrap(), 2);
    let second = memory.get(&at, &n, &k).await.unwrap().unwrap();
    assert_eq!(
        second.created_at, first.created_at,
        "a replace keeps created_at"
    );
    assert!(second.updated_at >= first.updated_at);

    // A stale version, or "absent", is refused and changes nothing.
    let stale = memory
        .put(&at, &n, &k, put(json!("stale")).expect(Expect::Version(1)))
        .await;
    assert!(
        matches!(
            stale,
            Err(MemoryError::VersionConflict { found: Some(2), .. })
        ),
        "{stale:?}"
    );
    let absent = memory
        .put(&at, &n, &k, put(json!("again")).expect(Expect::Absent))
        .await;
    assert!(matches!(
        absent,
        Err(MemoryError::VersionConflict { found: Some(2), .. })
    ));
    assert_eq!(
        memory.get(&at, &n, &k).await.unwrap().unwrap().value,
        json!(2)
    );
    let swapped = memory.put(&at, &n, &k, put(json!(3)).expect(Expect::Version(2)));
    assert_eq!(swapped.await.unwrap(), 3);
    // A version expected of an item that does not exist is a conflict, not a create.
    let missing = memory
        .put(
            &at,
            &n,
            &key("none"),
            put(json!(0)).expect(Expect::Version(1)),
        )
        .await;
    assert!(matches!(
        missing,
        Err(MemoryError::VersionConflict { found: None, .. })
    ));
    assert!(memory.get(&at, &n, &key("none")).await.unwrap().is_none());
    let created = put(json!(0)).expect(Expect::Absent);
    assert_eq!(memory.put(&at, &n, &key("new"), created).await.unwrap(), 1);

    // Deletes, with and without a version.
    let wrong = memory.delete(&at, &n, &k, Some(2)).await;
    assert!(matches!(
        wrong,
        Err(MemoryError::VersionConflict { found: Some(3), .. })
    ));
    assert!(memory.delete(&at, &n, &k, Some(3)).await.unwrap());
    assert!(memory.get(&at, &n, &k).await.unwrap().is_none());
    assert!(!memory.delete(&at, &n, &k, None).await.unwrap());
    assert!(memory.delete(&at, &n, &key("new"), None).await.unwrap());
    assert!(memory
        .list(&at, &ListQuery::all())
        .await
        .unwrap()
        .is_empty());
}

/// Of concurrent writes expecting the same version (or absence), exactly one succeeds; the
/// others get a conflict.
pub async fn one_writer_wins(store: &Arc<dyn MemoryStore>, tenant: &str) {
    let memory = Memory::from_arc(store.clone());
    let at = user(tenant, "alice");
    let n = ns("race");
    for expect in [Expect::Absent, Expect::Version(1)] {
        let writes = (0..8).map(|i| {
            let (memory, at, n) = (memory.clone(), at.clone(), n.clone());
            async move {
                let put = PutItem::new(json!(i)).expect(expect);
                memory.put(&at, &n, &key("item"), put).await
            }
        });
        let results = futures::future::join_all(writes).await;
        let won: Vec<_> = results.iter().filter(|r| r.is_ok()).collect();
        assert_eq!(won.len(), 1, "{expect:?}: {results:?}");
        for r in &results {
            assert!(
                matches!(r, Ok(_) | Err(MemoryError::VersionConflict { .. })),
                "{r:?}"
            );
        }
    }
    let item = memory.get(&at, &n, &key("item")).await.unwrap().unwrap();
    assert_eq!(item.version, 2);
}

/// The same namespace and key in each scope of a tenant are distinct items.
pub async fn scopes(store: &Arc<dyn MemoryStore>, tenant: &str) {
    let memory = Memory::from_arc(store.clone());
    let t = Tenant::new(tenant).unwrap();
    let partitions = [
        Partition::new(t.clone(), Scope::Application),
        Partition::new(t.clone(), Scope::user("alice").unwrap()),
        Partition::new(t.clone(), Scope::user("bob").unwrap()),
        Partition::new(t.clone(), Scope::thread("alice").unwrap()),
        Partition::new(t.clone(), Scope::resource("device", "alice").unwrap()),
    ];
    let (n, k) = (ns("profile"), key("name"));
    for (i, at) in partitions.iter().enumerate() {
        let put = PutItem::new(json!(i)).text(format!("scope number {i}"));
        assert_eq!(memory.put(at, &n, &k, put).await.unwrap(), 1, "{at}");
    }
    for (i, at) in partitions.iter().enumerate() {
        let item = memory.get(at, &n, &k).await.unwrap().unwrap();
        assert_eq!(item.value, json!(i), "{at} read another scope's item");
        let listed = memory.list(at, &ListQuery::all()).await.unwrap();
        assert_eq!(listed.len(), 1, "{at} lists another scope's items");
        let hits = memory
            .search(at, SearchQuery::new("scope number").mode(SearchMode::Text))
            .await
            .unwrap();
        assert_eq!(hits.len(), 1, "{at} finds another scope's items");
        assert_eq!(hits[0].item.value, json!(i));
    }
}

/// Namespace prefixes are whole segments; filters and pages apply after them.
pub async fn prefixes_and_filters(store: &Arc<dyn MemoryStore>, tenant: &str) {
    let memory = Memory::from_arc(store.clone());
    let at = user(tenant, "alice");
    let items = [
        ("prof", "a", json!({"kind": "other"})),
        (
            "profile",
            "a",
            json!({"kind": "printer", "brand": {"name": "acme"}}),
        ),
        ("profile", "b", json!({"kind": "laptop"})),
        (
            "profile/devices",
            "a",
            json!({"kind": "printer", "brand": {"name": "globex"}}),
        ),
        ("profile/devices/old", "a", json!({"kind": "printer"})),
        ("profile-x", "a", json!({"kind": "printer"})),
        ("profiles", "a", json!({"kind": "printer"})),
    ];
    for (n, k, v) in &items {
        memory
            .put(&at, &ns(n), &key(k), PutItem::new(v.clone()))
            .await
            .unwrap();
    }
    let names = |items: Vec<super::MemoryItem>| {
        items
            .into_iter()
            .map(|i| format!("{}:{}", i.namespace, i.key))
            .collect::<Vec<_>>()
    };
    let under = memory
        .list(&at, &ListQuery::under(ns("profile")))
        .await
        .unwrap();
    assert_eq!(
        names(under),
        [
            "profile:a",
            "profile:b",
            "profile/devices:a",
            "profile/devices/old:a"
        ],
        "a prefix is whole segments, in (namespace, key) order"
    );
    let all = memory.list(&at, &ListQuery::all()).await.unwrap();
    assert_eq!(all.len(), items.len());
    let printers = ListQuery::under(ns("profile")).filter(Filter::eq(["kind"], "printer"));
    let found = names(memory.list(&at, &printers).await.unwrap());
    assert_eq!(
        found,
        ["profile:a", "profile/devices:a", "profile/devices/old:a"]
    );
    let nested = ListQuery::all().filter(Filter::eq(["brand", "name"], "globex"));
    assert_eq!(
        names(memory.list(&at, &nested).await.unwrap()),
        ["profile/devices:a"]
    );
    let page = memory
        .list(&at, &printers.clone().page(1, 1))
        .await
        .unwrap();
    assert_eq!(names(page), ["profile/devices:a"]);
    let past = memory.list(&at, &printers.page(5, 10)).await.unwrap();
    assert!(past.is_empty());
}

/// Full text search: items holding more of the query's words rank first; items without a
/// text, outside the prefix or failing a filter are never found; query syntax is inert.
pub async fn text_ranking(store: &Arc<dyn MemoryStore>, tenant: &str) {
    let memory = Memory::from_arc(store.clone());
    let at = user(tenant, "alice");
    let docs = [
        (
            "support",
            "jam",
            "the printer has a paper jam in tray two",
            "printer",
        ),
        ("support", "toner", "the printer toner is low", "printer"),
        (
            "support",
            "coffee",
            "the coffee machine needs descaling",
            "kitchen",
        ),
        ("archive", "jam", "an old printer jam report", "printer"),
    ];
    for (n, k, text, kind) in docs {
        let put = PutItem::new(json!({ "kind": kind })).text(text);
        memory.put(&at, &ns(n), &key(k), put).await.unwrap();
    }
    memory
        .put(
            &at,
            &ns("support"),
            &key("silent"),
            PutItem::new(json!("printer jam")),
        )
        .await
        .unwrap();
    let search = |q: &str| SearchQuery::new(q).mode(SearchMode::Text);
    let keys = |hits: &[super::Hit]| {
        hits.iter()
            .map(|h| format!("{}:{}", h.item.namespace, h.item.key))
            .collect::<Vec<_>>()
    };
    let hits = memory
        .search(&at, search("printer jam").under(ns("support")))
        .await
        .unwrap();
    assert_eq!(keys(&hits), ["support:jam", "support:toner"], "{hits:?}");
    assert!(hits[0].score > hits[1].score, "{hits:?}");
    let one = memory
        .search(&at, search("printer jam").limit(1))
        .await
        .unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(
        one[0].item.text.as_deref().map(|t| t.contains("jam")),
        Some(true)
    );
    let everywhere = memory.search(&at, search("jam")).await.unwrap();
    let mut found = keys(&everywhere);
    found.sort();
    assert_eq!(found, ["archive:jam", "support:jam"]);
    let kitchen = search("the").filter(Filter::eq(["kind"], "kitchen"));
    assert_eq!(
        keys(&memory.search(&at, kitchen).await.unwrap()),
        ["support:coffee"]
    );
    assert!(memory
        .search(&at, search("nothing-matches-this"))
        .await
        .unwrap()
        .is_empty());
    // Query syntax of FTS5 and tsquery is only words here.
    for hostile in [
        "\"",
        "printer\" OR \"",
        "NEAR(printer jam)",
        "*",
        "jam:*",
        "!printer & (",
        "'",
        "",
    ] {
        let r = memory.search(&at, search(hostile)).await;
        assert!(r.is_ok(), "query {hostile:?} failed: {r:?}");
    }
}

/// Search by meaning with the deterministic embedder; a memory without one refuses it.
pub async fn meaning_ranking(store: &Arc<dyn MemoryStore>, tenant: &str) {
    let memory = Memory::from_arc(store.clone()).with_embedder(HashEmbedder::new(512));
    let at = user(tenant, "alice");
    let docs = [
        ("jam", "printer paper jam tray"),
        ("toner", "printer toner low"),
        ("coffee", "coffee machine descaling"),
    ];
    for (k, text) in docs {
        let put = PutItem::new(json!(k)).text(text);
        memory.put(&at, &ns("support"), &key(k), put).await.unwrap();
    }
    let hits = memory
        .search(&at, SearchQuery::new("paper jam in the printer").limit(2))
        .await
        .unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0].item.value, json!("jam"), "{hits:?}");
    assert_eq!(hits[1].item.value, json!("toner"), "{hits:?}");
    assert!(hits[0].score > hits[1].score);
    // Filters apply to the best items read whole: the closest that passes comes first.
    let coffee =
        SearchQuery::new("paper jam in the printer").filter(Filter::eq([] as [&str; 0], "coffee"));
    let hits = memory.search(&at, coffee).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].item.value, json!("coffee"));
    let plain = Memory::from_arc(store.clone());
    let refused = plain
        .search(&at, SearchQuery::new("jam").mode(SearchMode::Meaning))
        .await;
    assert!(matches!(
        refused,
        Err(MemoryError::Embedding(EmbedError::NoEmbedder))
    ));
}

/// Another tenant, look-alike tenants, scopes and namespaces, and hostile names, against one
/// tenant's item: returns how many reads, lists, searches or writes reached it (0 passes).
pub async fn tenant_isolation(store: &Arc<dyn MemoryStore>, tag: &str) -> usize {
    let memory = Memory::from_arc(store.clone()).with_embedder(HashEmbedder::new(256));
    let victim = user(&format!("{tag}-acme"), "alice");
    let (n, k) = (ns("profile"), key("device"));
    let secret = json!({"device": "victim's secret printer"});
    let put = PutItem::new(secret.clone()).text("victim's secret printer model");
    memory.put(&victim, &n, &k, put.clone()).await.unwrap();

    let t = |s: &str| Tenant::new(s).unwrap();
    let attackers = [
        user(&format!("{tag}-globex"), "alice"),
        user(&format!("{tag}-acme-eu"), "alice"), // a tenant whose id extends the victim's
        user(&format!("{tag}-ACME"), "alice"),    // case is part of the id
        user(&format!("{tag}-acm"), "alice"),
        Partition::new(t(&format!("{tag}-acme")), Scope::user("alice2").unwrap()),
        Partition::new(t(&format!("{tag}-acme")), Scope::thread("alice").unwrap()),
        Partition::new(t(&format!("{tag}-acme")), Scope::Application),
        Partition::new(
            t(&format!("{tag}-acme")),
            Scope::resource("account", "alice").unwrap(),
        ),
    ];
    let mut crossings = 0;
    let shows_secret = |v: &serde_json::Value| *v == secret;
    for at in &attackers {
        if memory.get(at, &n, &k).await.unwrap().is_some() {
            crossings += 1;
        }
        let listed = memory.list(at, &ListQuery::all()).await.unwrap();
        crossings += listed.iter().filter(|i| shows_secret(&i.value)).count();
        let under = memory
            .list(at, &ListQuery::under(ns("profile")))
            .await
            .unwrap();
        crossings += under.iter().filter(|i| shows_secret(&i.value)).count();
        for mode in [SearchMode::Text, SearchMode::Meaning] {
            let q = SearchQuery::new("secret printer model").mode(mode);
            let hits = memory.search(at, q).await.unwrap();
            crossings += hits.iter().filter(|h| shows_secret(&h.item.value)).count();
        }
        // A compare-and-swap on the victim's version, and a delete, reach nothing.
        let cas = PutItem::new(json!("overwritten")).expect(Expect::Version(1));
        if memory.put(at, &n, &k, cas).await.is_ok() {
            crossings += 1;
        }
        if memory.delete(at, &n, &k, None).await.unwrap() {
            crossings += 1;
        }
    }
    // Blind writes by every attacker land in their own partitions.
    for at in &attackers {
        let put = PutItem::new(json!("attacker")).text("secret printer model");
        assert_eq!(memory.put(at, &n, &k, put).await.unwrap(), 1, "{at}");
    }
    let kept = memory.get(&victim, &n, &k).await.unwrap();
    match kept {
        Some(item) if item.value == secret && item.version == 1 => {}
        other => {
            crossings += 1;
            eprintln!("the victim's item changed: {other:?}");
        }
    }
    let listed = memory.list(&victim, &ListQuery::all()).await.unwrap();
    crossings += listed.len().saturating_sub(1);
    let hits = memory
        .search(
            &victim,
            SearchQuery::new("secret printer model").mode(SearchMode::Text),
        )
        .await
        .unwrap();
    crossings += hits
        .iter()
        .filter(|h| h.item.value == json!("attacker"))
        .count();

    // Hostile names are refused before any store sees them.
    let acme = format!("{tag}-acme");
    let hostile_tenants = [
        format!("../{acme}"),
        format!("{acme}/.."),
        format!("{acme}\0"),
        format!("{acme} "),
        format!("{tag}-аcme"),        // Cyrillic а
        format!("{tag}-ａcme"),       // full-width a
        format!("{tag}-acme\u{301}"), // a combining accent
        String::new(),
        "..".into(),
    ];
    for s in &hostile_tenants {
        match Tenant::new(s.clone()) {
            Err(MemoryError::Invalid {
                part: AddressPart::Tenant,
                ..
            }) => {}
            other => panic!("tenant {s:?} was not refused: {other:?}"),
        }
    }
    for s in [
        "../profile",
        "profile/..",
        "profile/../..",
        "./profile",
        "/profile",
        "profile/",
        "profile//x",
        "pro\\file",
        "profile\0",
        "prоfile",
        "%2e%2e",
    ] {
        assert!(
            matches!(
                Namespace::parse(s),
                Err(MemoryError::Invalid {
                    part: AddressPart::Namespace,
                    ..
                })
            ),
            "namespace {s:?} was not refused"
        );
    }
    for s in [
        "..",
        ".",
        "../device",
        "device/x",
        "dev\u{200b}ice",
        "devicе",
        "",
    ] {
        assert!(
            matches!(
                ItemKey::new(s),
                Err(MemoryError::Invalid {
                    part: AddressPart::Key,
                    ..
                })
            ),
            "key {s:?} was not refused"
        );
    }
    for s in ["alice:x", "../alice", "alice/bob", "ａlice"] {
        assert!(Scope::user(s).is_err(), "scope id {s:?} was not refused");
    }
    assert!(Scope::resource("user:x", "alice").is_err());
    crossings
}

/// Items past their time to live are gone for every read, may be written again as new, and
/// are purged.
pub async fn time_to_live(store: &Arc<dyn MemoryStore>, tenant: &str) {
    let memory = Memory::from_arc(store.clone()).with_embedder(HashEmbedder::new(64));
    let at = user(tenant, "alice");
    let n = ns("session");
    let short = Duration::from_millis(300);
    let put = |v: &str| PutItem::new(json!(v)).text("short lived note").ttl(short);
    let before = SystemTime::now();
    assert_eq!(memory.put(&at, &n, &key("a"), put("a")).await.unwrap(), 1);
    memory.put(&at, &n, &key("b"), put("b")).await.unwrap();
    let kept = PutItem::new(json!("kept")).text("long lived note");
    memory.put(&at, &n, &key("c"), kept).await.unwrap();
    let a = memory.get(&at, &n, &key("a")).await.unwrap().unwrap();
    let expires = a.expires_at.expect("an expiry");
    // Times are kept in whole milliseconds.
    let ms = Duration::from_millis(1);
    assert!(expires + ms >= before + short && expires <= SystemTime::now() + short);
    assert_eq!(memory.list(&at, &ListQuery::all()).await.unwrap().len(), 3);

    tokio::time::sleep(short + Duration::from_millis(200)).await;
    assert!(memory.get(&at, &n, &key("a")).await.unwrap().is_none());
    let listed = memory.list(&at, &ListQuery::all()).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].value, json!("kept"));
    for mode in [SearchMode::Text, SearchMode::Meaning] {
        let hits = memory
            .search(&at, SearchQuery::new("note").mode(mode))
            .await
            .unwrap();
        assert_eq!(hits.len(), 1, "{mode:?}: {hits:?}");
    }
    assert!(!memory.delete(&at, &n, &key("b"), None).await.unwrap());
    // An expired item is absent: a create succeeds, with a new created_at.
    let again = PutItem::new(json!("again")).expect(Expect::Absent);
    assert!(memory.put(&at, &n, &key("a"), again).await.unwrap() >= 1);
    let renewed = memory.get(&at, &n, &key("a")).await.unwrap().unwrap();
    assert!(renewed.created_at > a.created_at);
    assert_eq!(renewed.expires_at, None);
    assert!(memory.purge_expired().await.unwrap() >= 1);
    assert!(memory.get(&at, &n, &key("b")).await.unwrap().is_none());
    let listed = memory.list(&at, &ListQuery::all()).await.unwrap();
    assert_eq!(listed.len(), 2);
}
