//! Names for files and checks: a content hash for cached files, and a nonce no other process can
//! guess.

/// A stable 64-bit hash (FNV-1a), to name cached files by their content.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A name no other process can guess in advance (for [`ServerCommand::expect_model`]): 128 bits
/// from the standard library's per-process random keys, the process id and the time.
pub(crate) fn nonce() -> String {
    use std::hash::{BuildHasher, Hasher};
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut digits = String::with_capacity(32);
    for part in 0..2u8 {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u8(part);
        hasher.write_u32(std::process::id());
        hasher.write_u128(nanos);
        digits.push_str(&format!("{:016x}", hasher.finish()));
    }
    digits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_differ() {
        let (a, b) = (nonce(), nonce());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
