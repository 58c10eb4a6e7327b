//! Where a caller's thread lives in the store: the runtime's threads
//! ([`Runner::turn`](agentweave_runtime::Runner::turn)) under an id that carries the flow and the
//! caller's tenant, `FLOW.TENANT.THREAD`. None of the three parts may contain `.`, so one
//! tenant's thread id never names another tenant's thread.

use crate::error::ApiError;

/// A valid thread id as callers write it: 1 to 40 characters of `A-Z a-z 0-9 _ -`.
pub fn valid_thread_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 40
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// The runtime thread id under which a server stores the thread `thread` of `tenant` on the
/// served flow `flow`: `FLOW.TENANT.THREAD` (the tenant is [`SHARED_TENANT`](crate::SHARED_TENANT),
/// `_`, on a server without tenants). Another process on the same store reaches the server's
/// threads with it (through its own [`Runner`](agentweave_runtime::Runner) of the same flow).
/// `None` if one of the parts breaks the server's rules (flow 1 to 24, tenant 1 to 32, thread 1
/// to 40 characters of `A-Z a-z 0-9 _ -`).
///
/// ```
/// assert_eq!(
///     agentweave_server::store_thread_id("desk", agentweave_server::SHARED_TENANT, "bob-1").as_deref(),
///     Some("desk._.bob-1"),
/// );
/// assert_eq!(agentweave_server::store_thread_id("desk", "acme", "a.b"), None);
/// ```
pub fn store_thread_id(flow: &str, tenant: &str, thread: &str) -> Option<String> {
    (valid_flow_name(flow) && crate::auth::valid_tenant(tenant) && valid_thread_id(thread)).then(
        || {
            ThreadKey {
                flow: flow.to_owned(),
                tenant: tenant.to_owned(),
                id: thread.to_owned(),
            }
            .store_id()
        },
    )
}

/// The tenant part of a server's store thread id (`FLOW.TENANT.THREAD`), if it is one. Neither
/// a flow's name nor a tenant's has a `.`, so the second part is the tenant.
pub(crate) fn tenant_of_store_id(id: &str) -> Option<&str> {
    let mut parts = id.splitn(3, '.');
    let (_, tenant, _) = (parts.next()?, parts.next()?, parts.next()?);
    Some(tenant)
}

/// A valid name of a served flow: 1 to 24 characters of `A-Z a-z 0-9 _ -` (no `.`, which
/// separates the parts of store keys).
pub(crate) fn valid_flow_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 24
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// A caller's thread: its flow, its tenant and the id the caller chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ThreadKey {
    /// The flow's name.
    pub flow: String,
    /// The tenant.
    pub tenant: String,
    /// The thread id the caller chose.
    pub id: String,
}

impl ThreadKey {
    /// A key, after checking the thread id.
    pub fn new(flow: &str, tenant: &str, id: &str) -> Result<Self, ApiError> {
        if !valid_thread_id(id) {
            return Err(ApiError::BadRequest(
                "a thread id is 1 to 40 characters of A-Z, a-z, 0-9, '_' or '-'".into(),
            ));
        }
        Ok(ThreadKey {
            flow: flow.to_owned(),
            tenant: tenant.to_owned(),
            id: id.to_owned(),
        })
    }

    /// The runtime's thread id: `FLOW.TENANT.THREAD` (at most 24 + 32 + 40 + 2 characters).
    pub fn store_id(&self) -> String {
        format!("{}.{}.{}", self.flow, self.tenant, self.id)
    }

    /// The prefix of the store ids of every thread of `flow` and `tenant`.
    pub fn prefix(flow: &str, tenant: &str) -> String {
        format!("{flow}.{tenant}.")
    }
}
