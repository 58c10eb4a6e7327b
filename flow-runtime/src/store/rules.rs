//! The checks every checkpoint, thread and journal store makes before it writes, written
//! once: the key-value front calls them (for every store under it: in memory, files, SQL,
//! your backend; each returns the contract's typed error, naming the id and the fix).

use super::journal::check_kind;
use super::records::check_size;
use super::thread::validate_thread_id;
use super::{validate_id, JournalError, StoreError, StoredStep, ThreadError, ThreadRecord};

/// A checkpoint of `size` bytes may be written under `id`: a valid id, within `max` bytes.
pub(crate) fn checkpoint_write(id: &str, size: usize, max: u64) -> Result<(), StoreError> {
    validate_id(id)?;
    check_size(id, size as u64, max)
}

/// The bytes of `record`, appended to thread `id` at position `expected` (its `seq`): a
/// valid thread id, within `max` bytes.
pub(crate) fn thread_append(
    id: &str,
    expected: u64,
    record: &mut ThreadRecord,
    max: u64,
) -> Result<Vec<u8>, ThreadError> {
    validate_thread_id(id)?;
    record.seq = expected;
    let bytes = record.encode();
    check_size(id, bytes.len() as u64, max)?;
    Ok(bytes)
}

/// `steps` may be appended to run `run`'s journal: a valid run id, each step's kind valid and
/// its bytes within `max`.
pub(crate) fn journal_append(
    run: &str,
    steps: &[StoredStep],
    max: u64,
) -> Result<(), JournalError> {
    validate_id(run)?;
    for step in steps {
        check_kind(&step.kind)?;
        check_size(run, step.bytes.len() as u64, max)?;
    }
    Ok(())
}

/// The journal of `run` holds `found` steps: an append that expected `expected` is refused
/// ([`JournalError::Conflict`]: its writer was taken over).
pub(crate) fn journal_expected(run: &str, expected: u64, found: u64) -> Result<(), JournalError> {
    if found != expected {
        return Err(JournalError::Conflict {
            run: run.to_owned(),
            expected,
            found,
        });
    }
    Ok(())
}
