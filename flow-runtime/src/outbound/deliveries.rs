//! The per-tenant bound on deliveries: so many in flight, so many waiting, the rest dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::OutboundError;

/// Per tenant: a semaphore of places in flight and a count of deliveries waiting for one.
pub(super) struct Deliveries {
    concurrent: usize,
    waiting: usize,
    tenants: Mutex<HashMap<String, Arc<Tenant>>>,
}

struct Tenant {
    places: Arc<Semaphore>,
    /// Deliveries holding a place or waiting for one.
    held: std::sync::atomic::AtomicUsize,
}

/// One delivery's place among its tenant's (see
/// [`OutboundPolicy::delivery`](super::OutboundPolicy::delivery)); given back when dropped.
pub struct DeliveryPermit {
    _place: OwnedSemaphorePermit,
    _count: Counted,
}

impl std::fmt::Debug for DeliveryPermit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeliveryPermit")
    }
}

/// One count in a tenant's `held`, taken back when dropped (a waiting delivery dropped
/// before it had a place too).
struct Counted(Arc<Tenant>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0
            .held
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Deliveries {
    pub(super) fn new(concurrent: usize, waiting: usize) -> Self {
        Deliveries {
            concurrent,
            waiting,
            tenants: Mutex::default(),
        }
    }

    pub(super) fn concurrent(&self) -> usize {
        self.concurrent
    }

    pub(super) fn waiting(&self) -> usize {
        self.waiting
    }

    pub(super) async fn acquire(&self, tenant: &str) -> Result<DeliveryPermit, OutboundError> {
        use std::sync::atomic::Ordering;
        let entry = {
            let mut tenants = self.tenants.lock().expect("deliveries lock");
            // Forget the tenants with nothing in flight or waiting, so the map stays as small
            // as the set of busy tenants.
            if tenants.len() > 64 {
                tenants.retain(|_, t| t.held.load(Ordering::SeqCst) > 0);
            }
            let entry = tenants.entry(tenant.to_owned()).or_insert_with(|| {
                Arc::new(Tenant {
                    places: Arc::new(Semaphore::new(self.concurrent)),
                    held: 0.into(),
                })
            });
            let held = entry.held.fetch_add(1, Ordering::SeqCst);
            let counted = Counted(Arc::clone(entry));
            if held >= self.concurrent + self.waiting {
                return Err(OutboundError::TooManyWaiting {
                    tenant: tenant.chars().take(100).collect(),
                    waiting: self.waiting,
                });
            }
            counted
        };
        let place = Arc::clone(&entry.0.places)
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        Ok(DeliveryPermit {
            _place: place,
            _count: entry,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_tenant_has_so_many_in_flight_and_waiting_and_others_are_apart() {
        let d = Arc::new(Deliveries::new(2, 1));
        let a1 = d.acquire("a").await.unwrap();
        let _a2 = d.acquire("a").await.unwrap();
        // The third waits (its place is not free yet) ...
        let waiting = {
            let d = Arc::clone(&d);
            tokio::spawn(async move { d.acquire("a").await.map(|_| ()) })
        };
        tokio::task::yield_now().await;
        while d.tenants.lock().unwrap()["a"]
            .held
            .load(std::sync::atomic::Ordering::SeqCst)
            < 3
        {
            tokio::task::yield_now().await;
        }
        // ... and the fourth finds the line full.
        assert!(matches!(
            d.acquire("a").await,
            Err(OutboundError::TooManyWaiting { .. })
        ));
        // Another tenant is not held up by this one.
        let _b = d.acquire("b").await.unwrap();
        drop(a1);
        waiting.await.unwrap().unwrap();
    }
}
