//! [`Caller`]: who asks for a turn, with the grants a service gave them. A word of the
//! requests (`request`), checked by the runner's answer rule (`authority`).

use std::sync::Arc;

/// Who asks for a turn: an id (recorded as the requester of a new turn, or as the one who
/// answered an interrupt) and the grants a service gave them (its scopes' names), which an
/// [`AnswerRule`](crate::AnswerRule) checks.
///
/// ```
/// use agentweave_runtime::Caller;
/// let ben = Caller::new("ben").grants(["approve", "read"]);
/// assert!(ben.has("approve") && !ben.has("admin"));
/// // An id alone is a caller with no grant.
/// let ana: Caller = "ana".into();
/// assert!(!ana.has("approve"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    id: Arc<str>,
    grants: Vec<Arc<str>>,
}

impl Caller {
    /// A caller with id `id` and no grant.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Caller {
            id: id.into(),
            grants: Vec::new(),
        }
    }

    /// Adds `grants` (names, as the service's scopes are named).
    pub fn grants<S: Into<Arc<str>>>(mut self, grants: impl IntoIterator<Item = S>) -> Self {
        self.grants.extend(grants.into_iter().map(Into::into));
        self
    }

    /// The caller's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The caller's id, shared.
    pub(crate) fn id_arc(&self) -> &Arc<str> {
        &self.id
    }

    /// Whether the caller has grant `grant`.
    pub fn has(&self, grant: &str) -> bool {
        self.grants.iter().any(|g| &**g == grant)
    }
}

impl From<&str> for Caller {
    fn from(id: &str) -> Self {
        Caller::new(id)
    }
}

impl From<String> for Caller {
    fn from(id: String) -> Self {
        Caller::new(id)
    }
}

impl From<Arc<str>> for Caller {
    fn from(id: Arc<str>) -> Self {
        Caller::new(id)
    }
}
