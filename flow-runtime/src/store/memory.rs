//! [`InMemoryStore`]: checkpoints in a map, for tests and runs that need not survive the process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::{validate_id, CheckpointStore, StoreError};

/// A store in memory: for tests, and for runs that need not survive the process.
#[derive(Debug, Default, Clone)]
pub struct InMemoryStore {
    map: Arc<Mutex<HashMap<String, Vec<u8>>>>,
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl CheckpointStore for InMemoryStore {
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.map.lock().expect("store lock").get(id).cloned())
    }

    async fn set(&self, id: &str, bytes: Vec<u8>) -> Result<(), StoreError> {
        validate_id(id)?;
        self.map
            .lock()
            .expect("store lock")
            .insert(id.to_owned(), bytes);
        Ok(())
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        self.map.lock().expect("store lock").remove(id);
        Ok(())
    }
}
