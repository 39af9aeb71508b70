//! A throwaway bearer token for the MCP examples' one-shot demos.

/// 128 bits from the standard library's randomly seeded hasher, as hex: enough for a demo that
/// serves one loopback session, not a secret to deploy (make one with `openssl rand -hex 32`).
pub fn throwaway_token() -> String {
    use std::hash::{BuildHasher, RandomState};
    let state = RandomState::new();
    let bits = (u128::from(state.hash_one(1u8)) << 64) | u128::from(state.hash_one(2u8));
    format!("{bits:032x}")
}
