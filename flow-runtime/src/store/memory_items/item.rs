//! What a memory item is ([`MemoryItem`]), how one is written ([`PutItem`], [`Expect`]) and
//! how items are found ([`ListQuery`], [`SearchQuery`], [`Filter`], [`Hit`]).

use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::{ItemKey, MemoryError, Namespace};

/// The largest value (its JSON text) a store keeps: 256 KiB.
pub const MAX_VALUE_BYTES: usize = 256 * 1024;
/// The longest text to search an item keeps: 32 KiB.
pub const MAX_TEXT_BYTES: usize = 32 * 1024;

/// One item of memory, as a store returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryItem {
    /// Its namespace.
    pub namespace: Namespace,
    /// Its key in the namespace.
    pub key: ItemKey,
    /// Its value.
    pub value: Value,
    /// The text it is found by in a search, if it has one.
    pub text: Option<String>,
    /// When it was first written (or written again after it expired).
    pub created_at: SystemTime,
    /// When it was last written.
    pub updated_at: SystemTime,
    /// When it expires, if it has a time to live.
    pub expires_at: Option<SystemTime>,
    /// Its version: 1 when first written, one more on each write. A write that
    /// [expects](Expect::Version) a version fails if another write came first.
    pub version: u64,
}

/// What a write expects to find (compare-and-swap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Expect {
    /// Anything: the write creates or replaces the item.
    #[default]
    Any,
    /// No live item (none, or an expired one): the write only creates.
    Absent,
    /// The live item at this version: the write only replaces that version.
    Version(u64),
}

/// A write of one item: its value, the text to search it by, its time to live and what it
/// expects to find.
///
/// ```
/// use std::time::Duration;
/// use agentweave_runtime::store::memory_items::{Expect, PutItem};
/// let put = PutItem::new(serde_json::json!({"device": "X200"}))
///     .text("The customer's printer is an X200")
///     .ttl(Duration::from_secs(90 * 24 * 3600))
///     .expect(Expect::Version(3));
/// assert_eq!(put.expect, Expect::Version(3));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PutItem {
    /// The value.
    pub value: Value,
    /// The text to search the item by (none: the item is listed, never found by a search).
    pub text: Option<String>,
    /// How long the item lives after this write (none: until deleted).
    pub ttl: Option<Duration>,
    /// What the write expects to find.
    pub expect: Expect,
    /// The vector of `text`, when the item is searched by meaning: filled in by
    /// [`Memory::put`](super::Memory::put) from its [`Embedder`](super::Embedder).
    pub embedding: Option<Vec<f32>>,
}

impl PutItem {
    /// A write of `value` with no text, no time to live, expecting anything.
    pub fn new(value: Value) -> Self {
        PutItem {
            value,
            text: None,
            ttl: None,
            expect: Expect::Any,
            embedding: None,
        }
    }

    /// The text to search the item by.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// The item's time to live from this write.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// What the write expects to find.
    pub fn expect(mut self, expect: Expect) -> Self {
        self.expect = expect;
        self
    }

    /// Checks the sizes, and returns the value's JSON text.
    pub(crate) fn checked_json(&self) -> Result<String, MemoryError> {
        let json = serde_json::to_string(&self.value).map_err(|e| MemoryError::Other {
            message: format!("the value cannot be written as JSON: {e}"),
        })?;
        if json.len() > MAX_VALUE_BYTES {
            return Err(MemoryError::TooLarge {
                what: "value",
                size: json.len(),
                limit: MAX_VALUE_BYTES,
            });
        }
        if let Some(text) = &self.text {
            if text.len() > MAX_TEXT_BYTES {
                return Err(MemoryError::TooLarge {
                    what: "text",
                    size: text.len(),
                    limit: MAX_TEXT_BYTES,
                });
            }
        }
        Ok(json)
    }
}

/// A condition on an item's value: the JSON at `path` (top-level field names, then nested
/// ones) equals `value`.
///
/// ```
/// use agentweave_runtime::store::memory_items::Filter;
/// let f = Filter::eq(["device", "brand"], "acme");
/// assert!(f.matches(&serde_json::json!({"device": {"brand": "acme"}})));
/// assert!(!f.matches(&serde_json::json!({"device": {"brand": "other"}})));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    /// The field names leading to the compared value.
    pub path: Vec<String>,
    /// The value it must equal.
    pub value: Value,
}

impl Filter {
    /// The field at `path` equals `value`.
    pub fn eq<I, S>(path: I, value: impl Into<Value>) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Filter {
            path: path.into_iter().map(Into::into).collect(),
            value: value.into(),
        }
    }

    /// Whether `value` meets the condition.
    pub fn matches(&self, value: &Value) -> bool {
        let mut at = value;
        for field in &self.path {
            match at.get(field) {
                Some(next) => at = next,
                None => return false,
            }
        }
        *at == self.value
    }
}

/// Which items of a partition [`Memory::list`](super::Memory::list) returns: those under a
/// namespace prefix whose values meet every filter, in (namespace, key) order.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct ListQuery {
    /// Only items in this namespace or below it (none: the whole partition).
    pub prefix: Option<Namespace>,
    /// Conditions every returned value meets.
    pub filters: Vec<Filter>,
    /// Items skipped first.
    pub offset: usize,
    /// At most this many items (none: all).
    pub limit: Option<usize>,
}

impl ListQuery {
    /// Every item of the partition.
    pub fn all() -> Self {
        Self::default()
    }

    /// The items in `prefix` or below it.
    pub fn under(prefix: Namespace) -> Self {
        ListQuery {
            prefix: Some(prefix),
            ..Self::default()
        }
    }

    /// Adds a filter.
    pub fn filter(mut self, filter: Filter) -> Self {
        self.filters.push(filter);
        self
    }

    /// Skips `offset` items and returns at most `limit`.
    pub fn page(mut self, offset: usize, limit: usize) -> Self {
        self.offset = offset;
        self.limit = Some(limit);
        self
    }
}

/// How a search ranks items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SearchMode {
    /// By meaning when the [`Memory`](super::Memory) has an embedder, else by full text.
    #[default]
    Auto,
    /// By full text (the store's own index: SQLite FTS5, PostgreSQL `tsvector`).
    Text,
    /// By meaning: the cosine similarity of the query's vector and the items' vectors,
    /// computed exactly over every item of the partition under the prefix.
    Meaning,
}

/// A search of a partition's items by the text they were written with.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SearchQuery {
    /// What to look for.
    pub query: String,
    /// Only items in this namespace or below it (none: the whole partition).
    pub prefix: Option<Namespace>,
    /// Conditions every returned value meets.
    pub filters: Vec<Filter>,
    /// At most this many hits (default 10).
    pub limit: usize,
    /// How to rank.
    pub mode: SearchMode,
}

impl SearchQuery {
    /// A search for `query` in the whole partition, ten hits at most.
    pub fn new(query: impl Into<String>) -> Self {
        SearchQuery {
            query: query.into(),
            prefix: None,
            filters: Vec::new(),
            limit: 10,
            mode: SearchMode::Auto,
        }
    }

    /// Only items under `prefix`.
    pub fn under(mut self, prefix: Namespace) -> Self {
        self.prefix = Some(prefix);
        self
    }

    /// Adds a filter.
    pub fn filter(mut self, filter: Filter) -> Self {
        self.filters.push(filter);
        self
    }

    /// At most `limit` hits.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Ranks by `mode`.
    pub fn mode(mut self, mode: SearchMode) -> Self {
        self.mode = mode;
        self
    }
}

/// One item a search found, with its score (higher is closer; scores compare only within one
/// search).
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The item.
    pub item: MemoryItem,
    /// How well it matches.
    pub score: f32,
}
