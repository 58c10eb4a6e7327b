//! A long conversation sent to a model call by parts: each message under the large-payload
//! threshold stays in history as it is, but a model activity's input is the whole
//! conversation, and many medium messages pass Temporal's 2 MB payload limit in sum. Once a
//! call's conversation passes [`PART_BYTES`], the workflow cuts it into parts of about that
//! size ([`split`]), has each part it has not stored yet written to the workers' blob store
//! (a local activity: the part's text never enters the history), and gives the model activity
//! the parts' keys ([`ModelCall::earlier`](crate::ModelCall::earlier)) and only the last,
//! open part's messages; the activity reads the parts back ([`load`]) before it calls the model.
//!
//! The cut is greedy from the conversation's start, so a conversation that grows at its end
//! keeps its earlier parts: each is stored once, and each call's input stays under about two
//! parts whatever the conversation's length. Needs the workers' blob store
//! ([`Flows::store_large_payloads`](crate::Flows::store_large_payloads)); without one, a
//! conversation is sent whole, as before.

use agentweave_core::Message;
use serde::{Deserialize, Serialize};

use crate::blobs::{key_of, BlobError, BlobStore};

/// The size (in bytes of JSON) past which a model call's conversation is sent by parts, and
/// the size of each part: half of the 512 KB from which Temporal warns of a payload.
pub const PART_BYTES: usize = 256 * 1024;

/// A part to read back from the store: the load activity's input (its result is the part's
/// JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadPart {
    /// The flow whose thread it is (for the error of a worker without a store).
    pub flow: String,
    /// The part's key.
    pub key: String,
}

/// A part of a conversation to store: the store activity's input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StorePart {
    /// The flow whose call it is (for the error of a worker without a store).
    pub flow: String,
    /// The part's messages, as a JSON array (stored as these bytes: their key is
    /// [`key_of`] them).
    pub json: String,
}

impl StorePart {
    /// The key the part is stored under.
    pub fn key(&self) -> String {
        key_of(self.json.as_bytes())
    }
}

/// `messages` cut for a model call when their JSON passes `part` bytes: the closed parts
/// (each a JSON array of messages, about `part` bytes, a lone larger message a part of its
/// own) and the messages after them, sent as they are. `None` when they fit in one part.
/// Any serialisable items are cut alike (a thread's turns, carried by continue-as-new).
///
/// ```
/// use agentweave_core::Message;
/// use agentweave_temporal::parts::split;
///
/// let messages: Vec<Message> = (0..10).map(|i| Message::user("x".repeat(100 + i))).collect();
/// assert!(split(&messages, 10_000).is_none());
/// let (parts, rest) = split(&messages, 500).unwrap();
/// let back: usize = parts
///     .iter()
///     .map(|p| serde_json::from_str::<Vec<Message>>(p).unwrap().len())
///     .sum();
/// assert_eq!(back + rest.len(), 10);
/// ```
pub fn split<T: Serialize + Clone>(messages: &[T], part: usize) -> Option<(Vec<String>, Vec<T>)> {
    let sizes: Vec<usize> = messages
        .iter()
        .map(|m| serde_json::to_vec(m).map_or(0, |v| v.len()))
        .collect();
    if sizes.iter().sum::<usize>() <= part {
        return None;
    }
    let mut parts = Vec::new();
    let (mut start, mut size) = (0, 0);
    for (i, s) in sizes.iter().enumerate() {
        if size > 0 && size + s > part {
            parts.push(serde_json::to_string(&messages[start..i]).unwrap_or_default());
            (start, size) = (i, 0);
        }
        size += s;
    }
    Some((parts, messages[start..].to_vec()))
}

/// Stores `part` in `store`; gives its key.
pub async fn store(store: &dyn BlobStore, part: &StorePart) -> Result<String, BlobError> {
    store.put(part.json.as_bytes()).await
}

/// The messages of the parts stored under `keys`, in order.
pub async fn load(store: &dyn BlobStore, keys: &[String]) -> Result<Vec<Message>, BlobError> {
    let mut messages = Vec::new();
    for key in keys {
        let bytes = store.get(key).await?;
        messages.extend(decode::<Message>(&bytes, key, store)?);
    }
    Ok(messages)
}

/// The items of a part, from its JSON `bytes` (stored under `key` in `store`).
pub fn decode<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    key: &str,
    store: &dyn BlobStore,
) -> Result<Vec<T>, BlobError> {
    serde_json::from_slice(bytes).map_err(|e| BlobError::Io {
        store: format!("{store:?}"),
        action: "decode",
        key: key.to_owned(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversation(n: usize) -> Vec<Message> {
        (0..n)
            .map(|i| Message::user(format!("{i}:{}", "y".repeat(1000))))
            .collect()
    }

    #[test]
    fn a_growing_conversation_keeps_its_closed_parts() {
        let (before, _) = split(&conversation(20), 5_000).unwrap();
        let (after, rest) = split(&conversation(40), 5_000).unwrap();
        assert!(!before.is_empty());
        assert_eq!(
            &after[..before.len()],
            &before[..],
            "the earlier parts are the same"
        );
        assert!(
            after.iter().all(|p| p.len() <= 5_000),
            "each part within its size"
        );
        let rest_size: usize = rest
            .iter()
            .map(|m| serde_json::to_vec(m).unwrap().len())
            .sum();
        assert!(
            rest_size <= 5_000,
            "the open part within its size: {rest_size}"
        );
    }

    #[test]
    fn a_lone_large_message_is_a_part_of_its_own() {
        let mut messages = conversation(2);
        messages.insert(1, Message::user("z".repeat(20_000)));
        let (parts, rest) = split(&messages, 5_000).unwrap();
        assert_eq!(parts.len(), 2, "the first message, then the large one");
        assert_eq!(rest.len(), 1);
    }

    #[tokio::test]
    async fn stored_parts_load_back_in_order() {
        let dir = std::env::temp_dir().join(format!("parts-{}", std::process::id()));
        let blobs = crate::FileBlobStore::new(&dir).unwrap();
        let messages = conversation(30);
        let (parts, rest) = split(&messages, 4_000).unwrap();
        let mut keys = Vec::new();
        for json in parts {
            let part = StorePart {
                flow: "f".into(),
                json,
            };
            let key = store(&blobs, &part).await.unwrap();
            assert_eq!(key, part.key(), "the workflow knows the key ahead");
            keys.push(key);
        }
        let mut back = load(&blobs, &keys).await.unwrap();
        back.extend(rest);
        assert_eq!(back, messages);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
