//! Ids and hashes: random tokens for run ids and temporary names ([`unique_token`]), and the
//! FNV-1a hash of a flow's shape ([`fingerprint_of`]) and of checkpoint bodies.

use std::time::SystemTime;

/// FNV-1a, 64-bit, of `shape` (see [`FlowAgent::fingerprint`](crate::FlowAgent::fingerprint)).
pub const fn fingerprint_of(shape: &str) -> u64 {
    fnv1a_extend(FNV_OFFSET, shape.as_bytes())
}

/// The FNV-1a (64-bit) offset basis: the hash of nothing.
#[doc(hidden)]
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// Extends an FNV-1a (64-bit) hash by `bytes`.
///
/// The product is taken in `u128` and truncated: the same wrapping product, compiled to the
/// same instructions as `u64::wrapping_mul`, but without that method's nested calls, which cost
/// more than the arithmetic when the compiler evaluates the hash at compile time (`flow!`'s
/// checks hash every agent name of a flow).
#[doc(hidden)]
pub const fn fnv1a_extend(mut hash: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        hash = ((hash ^ bytes[i] as u64) as u128 * 0x0000_0100_0000_01b3) as u64;
        i += 1;
    }
    hash
}

/// A fresh random token (32 hex digits): for temporary file names and run ids. Not a secret;
/// unique with overwhelming probability across processes and machines.
#[doc(hidden)]
pub fn unique_token() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // Drawn once per process: two hash keys from the OS's randomness (each `RandomState` is
    // seeded from it), the start time and the process id; each token hashes them with a
    // counter.
    struct Seed {
        keys: [std::collections::hash_map::RandomState; 2],
        start: u128,
        pid: u32,
    }
    static SEED: OnceLock<Seed> = OnceLock::new();
    let seed = SEED.get_or_init(|| Seed {
        keys: Default::default(),
        start: SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
        pid: std::process::id(),
    });
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut halves = [0u64; 2];
    for (half, key) in halves.iter_mut().zip(&seed.keys) {
        let mut h = key.build_hasher();
        h.write_u64(n);
        h.write_u128(seed.start);
        h.write_u32(seed.pid);
        *half = h.finish();
    }
    format!("{:016x}{:016x}", halves[0], halves[1])
}
