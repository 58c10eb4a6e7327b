//! [`Front`]: the stores whose contracts are the front's alone ([`KeyValueStore`],
//! [`InMemoryStore`](crate::store::InMemoryStore), [`FileStore`](crate::store::FileStore) and
//! the SQL stores), so the contracts are implemented once, for every such store.

use super::keep::Keep;
use super::KeyValueStore;

/// A store that is the key-value front over a [`Keep`]: [`KeyValueStore`] itself,
/// [`InMemoryStore`](crate::store::InMemoryStore), [`FileStore`](crate::store::FileStore) and
/// the SQL stores (`SqliteStore`, `PostgresStore`).
/// Each is a
/// [`CheckpointStore`](crate::store::CheckpointStore), a
/// [`ThreadStore`](crate::store::ThreadStore) and a
/// [`JournalStore`](crate::store::JournalStore) by the front's rules alone.
pub trait Front: Send + Sync + 'static + FrontOnly {
    /// What it keeps its data in.
    type Keep: Keep;

    /// The front.
    fn front(&self) -> &KeyValueStore<Self::Keep>;
}

impl<B: Keep> Front for KeyValueStore<B> {
    type Keep = B;

    #[inline]
    fn front(&self) -> &KeyValueStore<B> {
        self
    }
}

mod only {
    /// What keeps [`Front`](super::Front) to this crate's stores.
    pub trait FrontOnly {}
    impl<B> FrontOnly for super::KeyValueStore<B> {}
    impl FrontOnly for crate::store::InMemoryStore {}
    impl FrontOnly for crate::store::FileStore {}
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    impl<DB: crate::store::SqlDatabase> FrontOnly for crate::store::SqlStore<DB> {}
}
use only::FrontOnly;
