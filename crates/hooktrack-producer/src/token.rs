//! The per-session bearer token: made from the OS's random source, compared in constant
//! time. It lives only in the environment of the collector, the agent and its hooks.

use thiserror::Error;

#[derive(Debug, Error)]
#[error("cannot read the operating system's random source")]
pub struct TokenError {
    #[source]
    source: getrandom::Error,
}

/// A fresh token: 32 random bytes as 64 lowercase hex digits.
pub fn generate() -> Result<String, TokenError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|source| TokenError { source })?;
    let mut out = String::with_capacity(64);
    for b in bytes {
        out.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        out.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    Ok(out)
}

/// Compares a presented token with the expected one in time that depends only on the
/// expected token's length, never on where the two differ.
pub fn constant_time_eq(presented: &[u8], expected: &[u8]) -> bool {
    let mut diff = u64::from(presented.len() != expected.len());
    for (i, e) in expected.iter().enumerate() {
        // Past the end of a shorter presented token, compare against a byte that differs.
        let p = presented.get(i).copied().unwrap_or(!*e);
        diff |= u64::from(p ^ *e);
    }
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_64_hex_digits_and_differ() {
        let a = generate().unwrap();
        let b = generate().unwrap();
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn comparison() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abd", b"abc"));
        assert!(!constant_time_eq(b"ab", b"abc"));
        assert!(!constant_time_eq(b"abcd", b"abc"));
        assert!(!constant_time_eq(b"", b"abc"));
        assert!(constant_time_eq(b"", b""));
    }
}
