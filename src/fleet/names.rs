//! Names on the wire: a host, an agent or a session becomes one subject token and one key
//! token, whatever characters it has.
//!
//! A session's key is also its subject (`$KV.hooktrack.<host>.<agent>.<session>`, what a
//! host's NATS user may publish on). NATS subjects split on `.` and treat `*`, `>` and white space specially; bucket keys
//! allow only `[-/_=.a-zA-Z0-9]`. A token keeps ASCII letters, digits, `-` and `_`, and
//! writes every other byte as `=` and two uppercase hex digits, so it is valid in both
//! and decodes back to the name it came from.

/// `name` as one subject and key token (see the module's doc); `=` alone for an empty one.
pub fn encode_token(name: &str) -> String {
    if name.is_empty() {
        return "=".to_owned();
    }
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("={b:02X}"));
        }
    }
    out
}

/// The name a token was made from; `None` for text that is no token.
pub fn decode_token(token: &str) -> Option<String> {
    if token == "=" {
        return Some(String::new());
    }
    let bytes = token.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'=' => {
                let hex = token.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' => {
                out.push(b);
                i += 1;
            }
            _ => return None,
        }
    }
    String::from_utf8(out).ok()
}

/// The bucket key of one session: `<host>.<agent>.<session>`, each a token.
pub fn session_key(host: &str, agent: &str, session: &str) -> String {
    format!(
        "{}.{}.{}",
        encode_token(host),
        encode_token(agent),
        encode_token(session)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_round_trips_through_a_token_valid_in_subjects_and_keys() {
        for name in [
            "",
            "dev-box_1",
            "a.b",
            "*",
            ">",
            "with space",
            "=",
            "é",
            "%3",
            "/tmp/x",
        ] {
            let token = encode_token(name);
            assert!(
                token
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_=".contains(&b)),
                "{token}"
            );
            assert_eq!(decode_token(&token).as_deref(), Some(name), "{token}");
        }
        assert_eq!(
            session_key("h.1", "claude-code", "s 1"),
            "h=2E1.claude-code.s=201"
        );
        assert_eq!(decode_token("a.b"), None);
        assert_eq!(decode_token("=4"), None);
    }
}
