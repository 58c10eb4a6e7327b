//! Sealing what a store keeps: [`SealingKeys`] (AES-256-GCM keys by key id: the current one
//! seals, every one opens) and [`SealError`], what goes wrong opening sealed bytes.
//!
//! Sealed bytes are
//!
//! ```text
//! agentflow-sealed 1 <key id>\n
//! <nonce: 12 random bytes><ciphertext and its 16-byte tag>
//! ```
//!
//! Each seal binds the bytes to where they are kept (a thread's record, a checkpoint id, a
//! journal step: the *associated data*), so sealed bytes copied to another place do not open.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};

/// The first bytes of sealed data.
const MAGIC: &[u8] = b"agentflow-sealed 1 ";
const NONCE_LEN: usize = 12;

/// Why sealed bytes could not be opened, or keys not made. Nothing stored is changed when one
/// is returned: the sealed bytes stay as they were, for the right key to open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// The bytes were sealed with a key these keys do not hold (a key rotated out, or the
    /// store of another deployment).
    #[error(
        "{what} is sealed with key '{key_id}', which these sealing keys do not hold (they hold \
         {known}); add that key (SealingKeys::with_old_key) to read it"
    )]
    UnknownKey {
        /// What was read (a thread's record, a checkpoint, a journal step).
        what: String,
        /// The key id the bytes name.
        key_id: String,
        /// The key ids held, comma-separated.
        known: String,
    },
    /// The key of that id does not open the bytes: it is not the key they were sealed with
    /// (same id, other bytes), or the stored bytes were altered or moved to another place.
    #[error(
        "{what} does not open with key '{key_id}': either that key is not the one it was \
         sealed with, or the stored bytes were altered (or copied from another place); check \
         the key's bytes for that id"
    )]
    Tampered {
        /// What was read.
        what: String,
        /// The key id the bytes name.
        key_id: String,
    },
    /// The bytes are not sealed data (a damaged header).
    #[error("{what} is not sealed data: {reason}")]
    Malformed {
        /// What was read.
        what: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Sealed bytes were read by something that has no sealing keys.
    #[error(
        "{what} is sealed (encrypted at rest with key '{key_id}'); read the store through \
         SealedStore with its keys"
    )]
    NoKeys {
        /// What was read.
        what: String,
        /// The key id the bytes name.
        key_id: String,
    },
    /// A key id is not 1 to 32 characters of `A-Z a-z 0-9 . _ -`, or is given twice.
    #[error("sealing key id '{key_id}' is not valid: {reason}")]
    InvalidKeyId {
        /// The id given (cut to 40 characters).
        key_id: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// AES-256-GCM keys by key id: [`seal`](SealingKeys::seal) uses the current key and names it
/// in the sealed bytes; [`open`](SealingKeys::open) uses the key the bytes name, so keys
/// rotate: make the new key current, keep the old ones ([`with_old_key`](Self::with_old_key))
/// until nothing sealed with them is left.
///
/// ```
/// use agentweave_runtime::store::SealingKeys;
/// let old = SealingKeys::new("2026-01", [7u8; 32]).unwrap();
/// let sealed = old.seal("thread t1 record 0", b"hello");
/// let keys = SealingKeys::new("2026-06", [9u8; 32]).unwrap().with_old_key("2026-01", [7u8; 32]).unwrap();
/// assert_eq!(keys.open("thread t1 record 0", &sealed).unwrap(), b"hello");
/// assert_eq!(keys.current_key_id(), "2026-06");
/// ```
#[derive(Clone)]
pub struct SealingKeys {
    current: Arc<str>,
    keys: Arc<BTreeMap<String, Aes256Gcm>>,
}

impl fmt::Debug for SealingKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealingKeys")
            .field("current", &self.current)
            .field("ids", &self.keys.keys().collect::<Vec<_>>())
            .finish()
    }
}

fn check_key_id(id: &str) -> Result<(), SealError> {
    let ok = (1..=32).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(SealError::InvalidKeyId {
            key_id: id.chars().take(40).collect(),
            reason: "use 1 to 32 characters of A-Z, a-z, 0-9, '.', '_' or '-'".into(),
        })
    }
}

impl SealingKeys {
    /// Keys whose current key, `key` (32 bytes: AES-256), is called `id` (1 to 32 characters
    /// of `A-Z a-z 0-9 . _ -`; it is written in every sealed record, never the key).
    pub fn new(id: &str, key: [u8; 32]) -> Result<Self, SealError> {
        check_key_id(id)?;
        let mut keys = BTreeMap::new();
        keys.insert(
            id.to_owned(),
            Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&key)),
        );
        Ok(SealingKeys {
            current: id.into(),
            keys: Arc::new(keys),
        })
    }

    /// These keys, also opening what key `id` sealed (a key rotated out).
    pub fn with_old_key(self, id: &str, key: [u8; 32]) -> Result<Self, SealError> {
        check_key_id(id)?;
        if self.keys.contains_key(id) {
            return Err(SealError::InvalidKeyId {
                key_id: id.to_owned(),
                reason: "these keys already hold a key of that id".into(),
            });
        }
        let mut keys = (*self.keys).clone();
        keys.insert(
            id.to_owned(),
            Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&key)),
        );
        Ok(SealingKeys {
            current: self.current,
            keys: Arc::new(keys),
        })
    }

    /// The id of the key new seals use.
    pub fn current_key_id(&self) -> &str {
        &self.current
    }

    /// `plaintext` sealed with the current key, bound to `place` (where it is kept: opening
    /// it needs the same `place`).
    pub fn seal(&self, place: &str, plaintext: &[u8]) -> Vec<u8> {
        let cipher = &self.keys[&*self.current];
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let sealed = cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: plaintext,
                    aad: place.as_bytes(),
                },
            )
            .expect("AES-GCM seals any message under 64 GiB");
        let mut out = Vec::with_capacity(MAGIC.len() + self.current.len() + 1 + 12 + sealed.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(self.current.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        out
    }

    /// The plaintext of `sealed`, which was sealed for `place`; `what` names it in errors.
    pub fn open(&self, place: &str, sealed: &[u8]) -> Result<Vec<u8>, SealError> {
        self.open_named(place, place, sealed)
    }

    /// [`open`](Self::open), naming what was read `what` in errors.
    pub(crate) fn open_named(
        &self,
        what: &str,
        place: &str,
        sealed: &[u8],
    ) -> Result<Vec<u8>, SealError> {
        let (key_id, body) = split(what, sealed)?;
        let cipher = self.keys.get(key_id).ok_or_else(|| SealError::UnknownKey {
            what: what.to_owned(),
            key_id: key_id.to_owned(),
            known: self
                .keys
                .keys()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(", "),
        })?;
        if body.len() < NONCE_LEN + 16 {
            return Err(SealError::Malformed {
                what: what.to_owned(),
                reason: format!("it has {} bytes after its header, too few", body.len()),
            });
        }
        let (nonce, ciphertext) = body.split_at(NONCE_LEN);
        cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: place.as_bytes(),
                },
            )
            .map_err(|_| SealError::Tampered {
                what: what.to_owned(),
                key_id: key_id.to_owned(),
            })
    }

    /// Whether `bytes` are sealed data (they start with the sealed header).
    pub fn is_sealed(bytes: &[u8]) -> bool {
        bytes.starts_with(MAGIC)
    }

    /// The key id sealed `bytes` name, if they are sealed.
    pub fn key_id_of(bytes: &[u8]) -> Option<&str> {
        split("", bytes).ok().map(|(id, _)| id)
    }
}

/// The key id and the body (nonce and ciphertext) of sealed bytes.
fn split<'a>(what: &str, sealed: &'a [u8]) -> Result<(&'a str, &'a [u8]), SealError> {
    let malformed = |reason: &str| SealError::Malformed {
        what: what.to_owned(),
        reason: reason.to_owned(),
    };
    let rest = sealed
        .strip_prefix(MAGIC)
        .ok_or_else(|| malformed("it does not start with the sealed header"))?;
    let end = rest
        .iter()
        .take(33)
        .position(|b| *b == b'\n')
        .ok_or_else(|| malformed("its key id does not end"))?;
    let key_id = std::str::from_utf8(&rest[..end])
        .ok()
        .filter(|id| check_key_id(id).is_ok())
        .ok_or_else(|| malformed("its key id is not valid"))?;
    Ok((key_id, &rest[end + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_then_open_gives_the_plaintext_and_hides_it() {
        let keys = SealingKeys::new("k1", [1; 32]).unwrap();
        let sealed = keys.seal("here", b"secret words");
        assert!(!sealed.windows(6).any(|w| w == b"secret"));
        assert_eq!(keys.open("here", &sealed).unwrap(), b"secret words");
        // A fresh nonce each time.
        assert_ne!(keys.seal("here", b"secret words"), sealed);
    }

    #[test]
    fn another_place_a_flipped_bit_or_another_key_do_not_open() {
        let keys = SealingKeys::new("k1", [1; 32]).unwrap();
        let sealed = keys.seal("here", b"secret");
        assert!(matches!(
            keys.open("there", &sealed),
            Err(SealError::Tampered { .. })
        ));
        let mut bad = sealed.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert!(matches!(
            keys.open("here", &bad),
            Err(SealError::Tampered { .. })
        ));
        let other = SealingKeys::new("k1", [2; 32]).unwrap();
        assert!(matches!(
            other.open("here", &sealed),
            Err(SealError::Tampered { .. })
        ));
        let rotated = SealingKeys::new("k2", [2; 32]).unwrap();
        let err = rotated.open("here", &sealed).unwrap_err();
        assert!(matches!(&err, SealError::UnknownKey { key_id, .. } if key_id == "k1"));
        assert!(err.to_string().contains("with_old_key"), "{err}");
        assert!(matches!(
            keys.open("here", b"plain"),
            Err(SealError::Malformed { .. })
        ));
    }

    #[test]
    fn key_ids_are_checked() {
        assert!(SealingKeys::new("", [0; 32]).is_err());
        assert!(SealingKeys::new("a b", [0; 32]).is_err());
        let keys = SealingKeys::new("a", [0; 32]).unwrap();
        assert!(keys.with_old_key("a", [1; 32]).is_err());
    }
}
