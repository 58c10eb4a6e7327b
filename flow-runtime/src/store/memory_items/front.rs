//! [`Memory`]: the front of a [`MemoryStore`], where the rules every store shares live once
//! (embedding on write, search by meaning, filters, paging), and [`TypedNamespace`], a serde
//! type per namespace.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::text::{cosine, query_terms};
use super::{
    EmbedError, Embedder, Expect, Hit, ItemKey, ListQuery, MemoryError, MemoryItem, MemoryStore,
    Namespace, Partition, PutItem, SearchMode, SearchQuery,
};

/// Long-term memory: a [`MemoryStore`] and, optionally, an [`Embedder`] to search by meaning.
/// Cheap to clone (shared).
///
/// ```
/// use agentweave_runtime::store::memory_items::{
///     HashEmbedder, Memory, Namespace, Partition, PutItem, Scope, SearchQuery, Tenant,
///     TransientMemoryStore, ItemKey,
/// };
/// # futures::executor::block_on(async {
/// let memory = Memory::new(TransientMemoryStore::new()).with_embedder(HashEmbedder::new(256));
/// let alice = Partition::new(Tenant::new("acme").unwrap(), Scope::user("alice").unwrap());
/// let devices = Namespace::parse("devices").unwrap();
/// let value = serde_json::json!({"model": "X200"});
/// let put = PutItem::new(value).text("alice's printer is an X200 laser printer");
/// memory.put(&alice, &devices, &ItemKey::new("printer").unwrap(), put).await.unwrap();
/// let hits = memory.search(&alice, SearchQuery::new("which printer")).await.unwrap();
/// assert_eq!(hits[0].item.value["model"], "X200");
///
/// // Another tenant's user of the same name sees nothing.
/// let other = Partition::new(Tenant::new("globex").unwrap(), Scope::user("alice").unwrap());
/// assert!(memory.search(&other, SearchQuery::new("printer")).await.unwrap().is_empty());
/// # });
/// ```
#[derive(Clone)]
pub struct Memory {
    store: Arc<dyn MemoryStore>,
    embedder: Option<Arc<dyn Embedder>>,
}

impl fmt::Debug for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Memory")
            .field(
                "embedder",
                &self.embedder.as_ref().map(|e| e.name().to_owned()),
            )
            .finish_non_exhaustive()
    }
}

impl Memory {
    /// Memory kept in `store`, searched by full text.
    pub fn new(store: impl MemoryStore) -> Self {
        Self::from_arc(Arc::new(store))
    }

    /// Memory kept in a shared store.
    pub fn from_arc(store: Arc<dyn MemoryStore>) -> Self {
        Memory {
            store,
            embedder: None,
        }
    }

    /// The same memory, embedding items' texts with `embedder` when they are written and
    /// searching by meaning by default ([`SearchMode::Auto`]).
    pub fn with_embedder(mut self, embedder: impl Embedder) -> Self {
        self.embedder = Some(Arc::new(embedder));
        self
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn MemoryStore> {
        &self.store
    }

    /// The live item at `key` in `namespace` of partition `at`.
    pub async fn get(
        &self,
        at: &Partition,
        namespace: &Namespace,
        key: &ItemKey,
    ) -> Result<Option<MemoryItem>, MemoryError> {
        self.store.get(at, namespace, key).await
    }

    /// Writes an item (embedding its text when the memory has an embedder); its new version.
    pub async fn put(
        &self,
        at: &Partition,
        namespace: &Namespace,
        key: &ItemKey,
        mut item: PutItem,
    ) -> Result<u64, MemoryError> {
        item.checked_json()?;
        item.embedding = match (&self.embedder, &item.text) {
            (Some(embedder), Some(text)) => Some(embed_one(&**embedder, text).await?),
            _ => None,
        };
        self.store.put(at, namespace, key, item).await
    }

    /// Deletes the live item at `key` (at version `expect`, if given); whether there was one.
    pub async fn delete(
        &self,
        at: &Partition,
        namespace: &Namespace,
        key: &ItemKey,
        expect: Option<u64>,
    ) -> Result<bool, MemoryError> {
        self.store.delete(at, namespace, key, expect).await
    }

    /// The items of `at` the query selects, in (namespace, key) order.
    pub async fn list(
        &self,
        at: &Partition,
        query: &ListQuery,
    ) -> Result<Vec<MemoryItem>, MemoryError> {
        let items = self.store.scan(at, query.prefix.as_ref()).await?;
        Ok(items
            .into_iter()
            .filter(|item| query.filters.iter().all(|f| f.matches(&item.value)))
            .skip(query.offset)
            .take(query.limit.unwrap_or(usize::MAX))
            .collect())
    }

    /// The items of `at` that best match the query, best first.
    pub async fn search(
        &self,
        at: &Partition,
        query: SearchQuery,
    ) -> Result<Vec<Hit>, MemoryError> {
        let meaning = match query.mode {
            SearchMode::Auto => self.embedder.is_some(),
            SearchMode::Text => false,
            SearchMode::Meaning => true,
        };
        let keep = |hit: &Hit| query.filters.iter().all(|f| f.matches(&hit.item.value));
        if !meaning {
            let terms = query_terms(&query.query);
            if terms.is_empty() || query.limit == 0 {
                return Ok(Vec::new());
            }
            // Filters are applied here, so the store returns every hit when there are some.
            let limit = query.filters.is_empty().then_some(query.limit);
            let hits = self
                .store
                .search_text(at, query.prefix.as_ref(), &terms, limit)
                .await?;
            return Ok(hits.into_iter().filter(keep).take(query.limit).collect());
        }
        let embedder = self.embedder.as_ref().ok_or(EmbedError::NoEmbedder)?;
        let wanted = embed_one(&**embedder, &query.query).await?;
        let mut scored = Vec::new();
        for (namespace, key, vector) in self.store.scan_vectors(at, query.prefix.as_ref()).await? {
            if vector.len() != wanted.len() {
                return Err(EmbedError::Dimensions {
                    stored: vector.len(),
                    query: wanted.len(),
                }
                .into());
            }
            scored.push((cosine(&wanted, &vector), namespace, key));
        }
        // Best first; ties in (namespace, key) order (the scan's, kept by a stable sort). The
        // best are then read whole, until `limit` pass the filters (an item deleted meanwhile
        // is passed over).
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut hits = Vec::new();
        for (score, namespace, key) in scored {
            if hits.len() == query.limit {
                break;
            }
            if let Some(item) = self.store.get(at, &namespace, &key).await? {
                let hit = Hit { item, score };
                if keep(&hit) {
                    hits.push(hit);
                }
            }
        }
        Ok(hits)
    }

    /// Deletes every expired item; how many.
    pub async fn purge_expired(&self) -> Result<usize, MemoryError> {
        self.store.purge_expired().await
    }

    /// The namespace `namespace` as one holding values of type `T`.
    pub fn typed<T>(&self, namespace: Namespace) -> TypedNamespace<T> {
        TypedNamespace {
            memory: self.clone(),
            namespace,
            _type: PhantomData,
        }
    }
}

async fn embed_one(embedder: &dyn Embedder, text: &str) -> Result<Vec<f32>, MemoryError> {
    let mut vectors = embedder.embed(&[text.to_owned()]).await?;
    if vectors.len() != 1 {
        return Err(EmbedError::BadAnswer {
            embedder: embedder.name().to_owned(),
            message: format!("{} vectors for one text", vectors.len()),
        }
        .into());
    }
    Ok(vectors.remove(0))
}

/// A namespace whose values are of one serde type `T`: written from a `T`, read back as a
/// `T` (a value of another shape is a [`MemoryError::WrongType`], never a panic or a default).
///
/// ```
/// use agentweave_runtime::store::memory_items::{
///     ItemKey, Memory, MemoryError, Namespace, Partition, Scope, Tenant, TransientMemoryStore,
/// };
/// #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// struct Device { model: String, year: u16 }
/// # futures::executor::block_on(async {
/// let memory = Memory::new(TransientMemoryStore::new());
/// let at = Partition::new(Tenant::new("acme").unwrap(), Scope::user("alice").unwrap());
/// let devices = memory.typed::<Device>(Namespace::parse("devices").unwrap());
/// let key = ItemKey::new("printer").unwrap();
/// let x200 = Device { model: "X200".into(), year: 2021 };
/// devices.put(&at, &key, &x200, Some("printer X200")).await.unwrap();
/// assert_eq!(devices.get(&at, &key).await.unwrap().unwrap().0, x200);
///
/// // Something else written there by hand is refused when read as a Device.
/// let notes = memory.typed::<String>(Namespace::parse("devices").unwrap());
/// notes.put(&at, &key, &"not a device".to_owned(), None).await.unwrap();
/// assert!(matches!(devices.get(&at, &key).await, Err(MemoryError::WrongType { .. })));
/// # });
/// ```
pub struct TypedNamespace<T> {
    memory: Memory,
    namespace: Namespace,
    _type: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for TypedNamespace<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedNamespace")
            .field("namespace", &self.namespace)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T> Clone for TypedNamespace<T> {
    fn clone(&self) -> Self {
        TypedNamespace {
            memory: self.memory.clone(),
            namespace: self.namespace.clone(),
            _type: PhantomData,
        }
    }
}

impl<T: Serialize + DeserializeOwned> TypedNamespace<T> {
    /// The namespace.
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// Writes `value` at `key`, searchable by `text` if given; its new version.
    pub async fn put(
        &self,
        at: &Partition,
        key: &ItemKey,
        value: &T,
        text: Option<&str>,
    ) -> Result<u64, MemoryError> {
        self.put_expecting(at, key, value, text, Expect::Any).await
    }

    /// Like [`put`](TypedNamespace::put), expecting what is there (compare-and-swap).
    pub async fn put_expecting(
        &self,
        at: &Partition,
        key: &ItemKey,
        value: &T,
        text: Option<&str>,
        expect: Expect,
    ) -> Result<u64, MemoryError> {
        let json = serde_json::to_value(value).map_err(|e| MemoryError::Other {
            message: format!(
                "a {} cannot be written as JSON: {e}",
                std::any::type_name::<T>()
            ),
        })?;
        let mut put = PutItem::new(json).expect(expect);
        put.text = text.map(str::to_owned);
        self.memory.put(at, &self.namespace, key, put).await
    }

    /// The value at `key` and its version, read as a `T`.
    pub async fn get(
        &self,
        at: &Partition,
        key: &ItemKey,
    ) -> Result<Option<(T, u64)>, MemoryError> {
        match self.memory.get(at, &self.namespace, key).await? {
            Some(item) => Ok(Some((self.decode(&item)?, item.version))),
            None => Ok(None),
        }
    }

    /// Every value of the namespace (and none below it), by key, each read as a `T`.
    pub async fn list(&self, at: &Partition) -> Result<Vec<(ItemKey, T)>, MemoryError> {
        let items = self
            .memory
            .list(at, &ListQuery::under(self.namespace.clone()))
            .await?;
        items
            .into_iter()
            .filter(|item| item.namespace == self.namespace)
            .map(|item| Ok((item.key.clone(), self.decode(&item)?)))
            .collect()
    }

    /// Deletes the value at `key`; whether there was one.
    pub async fn delete(&self, at: &Partition, key: &ItemKey) -> Result<bool, MemoryError> {
        self.memory.delete(at, &self.namespace, key, None).await
    }

    fn decode(&self, item: &MemoryItem) -> Result<T, MemoryError> {
        T::deserialize(&item.value).map_err(|e| MemoryError::WrongType {
            namespace: item.namespace.to_string(),
            key: item.key.to_string(),
            type_name: std::any::type_name::<T>(),
            message: e.to_string(),
        })
    }
}
