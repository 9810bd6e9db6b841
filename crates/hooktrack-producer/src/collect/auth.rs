//! Authentication: the session's bearer token, compared in constant time, before anything
//! about a request's body is looked at.

use crate::token::constant_time_eq;

/// The header a 401 carries.
pub(super) const CHALLENGE: &str = "WWW-Authenticate: Bearer realm=\"hooktrack\"\r\n";

/// True when an `Authorization` value is `Bearer <token>` (the scheme in any case).
pub(super) fn presents(authorization: Option<&[u8]>, token: &[u8]) -> bool {
    let presented = authorization
        .and_then(|value| {
            let space = value.iter().position(|&b| b == b' ')?;
            let (scheme, rest) = value.split_at(space);
            scheme
                .eq_ignore_ascii_case(b"bearer")
                .then(|| rest.trim_ascii())
        })
        .unwrap_or_default();
    constant_time_eq(presented, token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_bearer_token_itself_passes() {
        assert!(presents(Some(b"Bearer s3cret"), b"s3cret"));
        assert!(presents(Some(b"bearer  s3cret "), b"s3cret"));
        for wrong in [
            &b"Bearer s3cre"[..],
            b"Basic s3cret",
            b"s3cret",
            b"Bearer",
            b"",
        ] {
            assert!(!presents(Some(wrong), b"s3cret"), "{wrong:?}");
        }
        assert!(!presents(None, b"s3cret"));
    }
}
