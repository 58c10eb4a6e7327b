//! Where a memory item lives: the [`Partition`] (a [`Tenant`] and a [`Scope`]) no query
//! crosses, the [`Namespace`] inside it and the item's [`ItemKey`]. Each part is validated when
//! it is made, so a value of these types is always safe to store and to compare.

use std::fmt;

use super::MemoryError;

/// The longest tenant id.
pub const MAX_TENANT_LEN: usize = 128;
/// The longest id of a scope's owner (a thread, a user, a resource).
pub const MAX_SCOPE_ID_LEN: usize = 100;
/// The longest resource kind (`user`, `account`, `device`, ...).
pub const MAX_RESOURCE_KIND_LEN: usize = 32;
/// The most segments a namespace has.
pub const MAX_NAMESPACE_DEPTH: usize = 8;
/// The longest namespace segment.
pub const MAX_SEGMENT_LEN: usize = 64;
/// The longest item key.
pub const MAX_KEY_LEN: usize = 200;

/// Which part of an address a [`MemoryError::Invalid`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AddressPart {
    /// A tenant id.
    Tenant,
    /// The id of a scope's owner.
    ScopeId,
    /// A resource kind.
    ResourceKind,
    /// A namespace.
    Namespace,
    /// An item key.
    Key,
}

impl fmt::Display for AddressPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddressPart::Tenant => "tenant id",
            AddressPart::ScopeId => "scope id",
            AddressPart::ResourceKind => "resource kind",
            AddressPart::Namespace => "namespace",
            AddressPart::Key => "item key",
        })
    }
}

/// Checks one name: 1 to `max` characters of `A-Z a-z 0-9 . _ -`, not starting with `.`.
/// Anything else is refused with the reason, never rewritten: a path separator, `..`, a NUL,
/// and every non-ASCII character (look-alike letters such as Cyrillic `а` for Latin `a`, or
/// full-width and combining forms, would otherwise name a second item that reads the same).
fn check_name(part: AddressPart, given: &str, max: usize) -> Result<(), MemoryError> {
    let refuse = |reason: String| MemoryError::Invalid {
        part,
        given: shown(given),
        reason,
    };
    if given.is_empty() {
        return Err(refuse("it is empty".into()));
    }
    if given.len() > max {
        return Err(refuse(format!("it is longer than {max} bytes")));
    }
    if given.starts_with('.') {
        return Err(refuse(
            "it starts with '.' ('.' and '..' could name a parent)".into(),
        ));
    }
    for c in given.chars() {
        let ok = c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        if !ok {
            let reason = if matches!(c, '/' | '\\') {
                format!("it holds the separator {c:?}")
            } else if c.is_ascii() {
                format!("it holds the character {c:?}")
            } else {
                format!(
                    "it holds the non-ASCII character U+{:04X} (look-alikes are refused, not \
                     normalised)",
                    c as u32
                )
            };
            return Err(refuse(reason));
        }
    }
    Ok(())
}

/// `given` as an error shows it: at most 100 characters, NULs and controls escaped.
fn shown(given: &str) -> String {
    given
        .chars()
        .take(100)
        .flat_map(char::escape_debug)
        .collect()
}

/// A tenant: the outermost part of every memory address. Every call of the
/// [`MemoryStore`](super::MemoryStore) contract takes a [`Partition`], which holds one; there
/// is no call that reads or writes across tenants.
///
/// ```
/// use agentweave_runtime::store::memory_items::Tenant;
/// assert!(Tenant::new("acme").is_ok());
/// assert!(Tenant::new("../acme").is_err());
/// assert!(Tenant::new("аcme").is_err()); // a Cyrillic 'а'
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tenant(String);

impl Tenant {
    /// A tenant id: 1 to [`MAX_TENANT_LEN`] characters of `A-Z a-z 0-9 . _ -`, not starting
    /// with `.` ([`MemoryError::Invalid`] otherwise).
    pub fn new(id: impl Into<String>) -> Result<Self, MemoryError> {
        let id = id.into();
        check_name(AddressPart::Tenant, &id, MAX_TENANT_LEN)?;
        Ok(Tenant(id))
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Tenant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whose memory an item is, inside a tenant: one thread's, one resource's (a user, an
/// account, a device: any kind the application names) or the whole application's.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// Shared by every thread and user of the tenant.
    Application,
    /// One thread's (a conversation).
    Thread(String),
    /// One resource's: `kind` is what the application calls it (`user` for
    /// [`Scope::user`]), `id` which one.
    Resource {
        /// The kind of resource: 1 to [`MAX_RESOURCE_KIND_LEN`] characters of `a-z 0-9 _ -`.
        kind: String,
        /// Which one.
        id: String,
    },
}

impl Scope {
    /// The scope of thread `id` (validated like a thread id).
    pub fn thread(id: impl Into<String>) -> Result<Self, MemoryError> {
        let id = id.into();
        check_name(AddressPart::ScopeId, &id, MAX_SCOPE_ID_LEN)?;
        Ok(Scope::Thread(id))
    }

    /// The scope of user `id`: the resource of kind `user`.
    pub fn user(id: impl Into<String>) -> Result<Self, MemoryError> {
        Self::resource("user", id)
    }

    /// The scope of resource `id` of kind `kind`.
    pub fn resource(kind: impl Into<String>, id: impl Into<String>) -> Result<Self, MemoryError> {
        let (kind, id) = (kind.into(), id.into());
        let kind_ok = !kind.is_empty()
            && kind.len() <= MAX_RESOURCE_KIND_LEN
            && kind
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-'));
        if !kind_ok {
            return Err(MemoryError::Invalid {
                part: AddressPart::ResourceKind,
                given: shown(&kind),
                reason: format!("use 1 to {MAX_RESOURCE_KIND_LEN} characters of a-z, 0-9, _ or -"),
            });
        }
        check_name(AddressPart::ScopeId, &id, MAX_SCOPE_ID_LEN)?;
        Ok(Scope::Resource { kind, id })
    }

    /// The scope as stored: `app`, `thread:ID` or `res:KIND:ID` (one string per scope, and
    /// no two scopes share one: ids hold no `:`).
    pub fn encode(&self) -> String {
        match self {
            Scope::Application => "app".to_owned(),
            Scope::Thread(id) => format!("thread:{id}"),
            Scope::Resource { kind, id } => format!("res:{kind}:{id}"),
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Application => f.write_str("the application"),
            Scope::Thread(id) => write!(f, "thread '{id}'"),
            Scope::Resource { kind, id } => write!(f, "{kind} '{id}'"),
        }
    }
}

/// A tenant's scope: the unit every memory call works in. No read, list or search returns an
/// item of another partition, and no write reaches one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Partition {
    /// The tenant.
    pub tenant: Tenant,
    /// The scope inside it.
    pub scope: Scope,
}

impl Partition {
    /// The partition of `scope` in `tenant`.
    pub fn new(tenant: Tenant, scope: Scope) -> Self {
        Partition { tenant, scope }
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} of tenant '{}'", self.scope, self.tenant)
    }
}

/// A namespace: 1 to [`MAX_NAMESPACE_DEPTH`] segments, each a name of 1 to
/// [`MAX_SEGMENT_LEN`] characters of `A-Z a-z 0-9 . _ -` not starting with `.`. Written
/// `a/b/c`; a namespace is the prefix of those below it ([`Namespace::starts_with`]).
///
/// ```
/// use agentweave_runtime::store::memory_items::Namespace;
/// let devices = Namespace::parse("profile/devices").unwrap();
/// assert!(devices.starts_with(&Namespace::parse("profile").unwrap()));
/// assert!(!devices.starts_with(&Namespace::parse("prof").unwrap()));
/// for hostile in ["../profile", "profile//x", "/profile", "profile/", "a\\b", "ｐrofile"] {
///     assert!(Namespace::parse(hostile).is_err(), "{hostile}");
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Namespace(String);

impl Namespace {
    /// The namespace of these segments.
    pub fn new<I, S>(segments: I) -> Result<Self, MemoryError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut joined = String::new();
        let mut depth = 0;
        for segment in segments {
            let segment = segment.as_ref();
            depth += 1;
            if depth > MAX_NAMESPACE_DEPTH {
                return Err(MemoryError::Invalid {
                    part: AddressPart::Namespace,
                    given: shown(&joined),
                    reason: format!("it has more than {MAX_NAMESPACE_DEPTH} segments"),
                });
            }
            check_name(AddressPart::Namespace, segment, MAX_SEGMENT_LEN)?;
            if !joined.is_empty() {
                joined.push('/');
            }
            joined.push_str(segment);
        }
        if depth == 0 {
            return Err(MemoryError::Invalid {
                part: AddressPart::Namespace,
                given: String::new(),
                reason: "it has no segment".into(),
            });
        }
        Ok(Namespace(joined))
    }

    /// The namespace written `a/b/c` (an empty segment, as in `a//b` or `/a`, is refused).
    pub fn parse(path: &str) -> Result<Self, MemoryError> {
        Self::new(path.split('/')).map_err(|e| match e {
            MemoryError::Invalid { part, reason, .. } => MemoryError::Invalid {
                part,
                given: shown(path),
                reason,
            },
            other => other,
        })
    }

    /// The namespace as written: segments joined by `/`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its segments.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// Whether `prefix` is this namespace or one of its ancestors (whole segments only:
    /// `prof` is no prefix of `profile`).
    pub fn starts_with(&self, prefix: &Namespace) -> bool {
        self.0 == prefix.0
            || (self.0.starts_with(&prefix.0) && self.0.as_bytes()[prefix.0.len()] == b'/')
    }

    /// The namespace `segment` below this one.
    pub fn child(&self, segment: &str) -> Result<Self, MemoryError> {
        Self::new(self.segments().chain([segment]))
    }

    /// The strings that bound the namespaces strictly below this one, in byte order:
    /// `(self + "/", self + "0")` (`'0'` follows `'/'`): what SQL range scans use.
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub(crate) fn below_bounds(&self) -> (String, String) {
        (format!("{}/", self.0), format!("{}0", self.0))
    }

    /// A namespace read back from a store (validated again: a row written by hand fails).
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub(crate) fn from_stored(stored: &str) -> Result<Self, MemoryError> {
        Self::parse(stored)
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An item's key inside its namespace: 1 to [`MAX_KEY_LEN`] characters of
/// `A-Z a-z 0-9 . _ -`, not starting with `.`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ItemKey(String);

impl ItemKey {
    /// The key `key` ([`MemoryError::Invalid`] if it is not a valid key).
    pub fn new(key: impl Into<String>) -> Result<Self, MemoryError> {
        let key = key.into();
        check_name(AddressPart::Key, &key, MAX_KEY_LEN)?;
        Ok(ItemKey(key))
    }

    /// The key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ItemKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
