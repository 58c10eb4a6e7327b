//! Long-term memory in an eval: the runner's [`EvalMemory`] (a fresh memory per run of a case,
//! in one tenant), the case's seed items ([`MemorySeed`]) and the memory criterion
//! ([`MemoryExpectation`]): what a turn's recall gave the model (its `memory_recall` events)
//! and what is kept after it.

use std::sync::Arc;

use agentweave_runtime::memory::{
    ItemKey, Memory, Namespace, Partition, PutItem, Scope, Tenant, MEMORY_RECALL_EVENT,
};
use agentweave_runtime::EventJson;

use crate::criteria::Score;
use crate::set::{MemoryExpectation, MemorySeed, StoredItem};

/// The criterion's name in reports.
const CRITERION: &str = "memory";

/// What makes a run's memory.
pub(crate) type MakeMemory = dyn Fn() -> Memory + Send + Sync;

/// The runner's memory settings: the tenant of the cases' items and what makes a fresh memory.
#[derive(Clone)]
pub(crate) struct EvalMemory {
    pub(crate) tenant: String,
    pub(crate) make: Arc<MakeMemory>,
}

/// The partition `scope` (`app`, `user:ID`, `thread:ID`, `KIND:ID`) names in `tenant`.
pub(crate) fn partition(tenant: &Tenant, scope: &str) -> Result<Partition, String> {
    let bad = |e: agentweave_runtime::memory::MemoryError| format!("memory scope '{scope}': {e}");
    let scope = match scope.split_once(':') {
        None if scope == "app" => Scope::Application,
        Some(("thread", id)) => Scope::thread(id).map_err(bad)?,
        Some((kind, id)) => Scope::resource(kind, id).map_err(bad)?,
        None => {
            return Err(format!(
                "memory scope '{scope}' is not app, user:ID, thread:ID or KIND:ID"
            ))
        }
    };
    Ok(Partition::new(tenant.clone(), scope))
}

fn address(
    tenant: &Tenant,
    scope: &str,
    namespace: &str,
    key: &str,
) -> Result<(Partition, Namespace, ItemKey), String> {
    let at = partition(tenant, scope)?;
    let ns = Namespace::parse(namespace).map_err(|e| e.to_string())?;
    let key = ItemKey::new(key).map_err(|e| e.to_string())?;
    Ok((at, ns, key))
}

/// Puts the case's seed items into `memory`.
pub(crate) async fn seed(
    memory: &Memory,
    tenant: &Tenant,
    items: &[MemorySeed],
) -> Result<(), String> {
    for item in items {
        let (at, ns, key) = address(tenant, &item.scope, &item.namespace, &item.key)?;
        let mut put = PutItem::new(item.value.clone());
        put.text = item.text.clone();
        memory
            .put(&at, &ns, &key, put)
            .await
            .map_err(|e| format!("the case's memory item '{ns}/{key}' could not be kept: {e}"))?;
    }
    Ok(())
}

/// The items (`namespace/key`) the `memory_recall` events of `events` list.
fn recalled(events: &[&EventJson]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| e.custom.as_ref()?.get(MEMORY_RECALL_EVENT))
        .filter_map(|r| r.get("items")?.as_array())
        .flatten()
        .filter_map(|i| {
            Some(format!(
                "{}/{}",
                i.get("namespace")?.as_str()?,
                i.get("key")?.as_str()?
            ))
        })
        .collect()
}

/// Scores `expect` against the turn's (or the case's) events and what `memory` keeps now.
pub(crate) async fn check(
    expect: &MemoryExpectation,
    events: &[&EventJson],
    memory: Option<(&Memory, &Tenant)>,
) -> Score {
    let Some((memory, tenant)) = memory else {
        return Score::fail(
            CRITERION,
            "the case expects memory, but the runner has none: give one with EvalRunner::memory",
        );
    };
    let got = recalled(events);
    let mut wrong = Vec::new();
    for want in &expect.recalled {
        if !got.contains(want) {
            wrong.push(format!("'{want}' was not recalled (recalled: {got:?})"));
        }
    }
    for unwanted in &expect.not_recalled {
        if got.contains(unwanted) {
            wrong.push(format!("'{unwanted}' was recalled"));
        }
    }
    for (item, must_exist) in expect
        .stored
        .iter()
        .map(|i| (i, true))
        .chain(expect.absent.iter().map(|i| (i, false)))
    {
        if let Err(e) = stored(memory, tenant, item, must_exist).await {
            wrong.push(e);
        }
    }
    let checks = expect.recalled.len()
        + expect.not_recalled.len()
        + expect.stored.len()
        + expect.absent.len();
    if wrong.is_empty() {
        Score::new(CRITERION, 1.0, true, format!("{checks} memory checks hold"))
    } else {
        let score = 1.0 - wrong.len() as f64 / checks.max(1) as f64;
        Score::new(CRITERION, score.max(0.0), false, wrong.join("; "))
    }
}

async fn stored(
    memory: &Memory,
    tenant: &Tenant,
    item: &StoredItem,
    must_exist: bool,
) -> Result<(), String> {
    let (at, ns, key) = address(tenant, &item.scope, &item.namespace, &item.key)?;
    let kept = memory
        .get(&at, &ns, &key)
        .await
        .map_err(|e| format!("'{ns}/{key}' could not be read: {e}"))?;
    let Some(kept) = kept else {
        return if must_exist {
            Err(format!("'{ns}/{key}' of {} is not kept", item.scope))
        } else {
            Ok(())
        };
    };
    let text = kept.text.clone().unwrap_or_default();
    let matches = item
        .text_contains
        .as_ref()
        .map_or(true, |t| text.to_lowercase().contains(&t.to_lowercase()))
        && item.value.as_ref().map_or(true, |v| *v == kept.value);
    match (must_exist, matches) {
        (true, true) | (false, false) => Ok(()),
        (true, false) => Err(format!(
            "'{ns}/{key}' of {} is kept as {} ({text:?}), not as expected",
            item.scope, kept.value
        )),
        (false, true) => Err(format!(
            "'{ns}/{key}' of {} is kept ({text:?}), and should not be",
            item.scope
        )),
    }
}
