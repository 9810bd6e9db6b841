//! Observer injection: wiring an agent CLI's hooks to `hooktrack emit`.
//!
//! One module per agent CLI ([`kimi`]); what they share lives here: the POSIX shell
//! quoting of the hook command and the installer's verdict in `channel.json`.

pub mod kimi;

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::store::{self, StoreDir, StoreError};

/// Quotes one word for a POSIX shell: single quotes, each `'` written as `'\''`.
pub fn shell_quote(word: &str) -> String {
    let mut out = String::with_capacity(word.len() + 2);
    out.push('\'');
    for c in word.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// The installer's verdict.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct InstallState {
    pub ok: bool,
    pub detail: String,
}

/// `channel.json` (contract section 2). Fields written by others (a policy `state`) are
/// kept as they are.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChannelFile {
    pub provider: String,
    pub generation: u64,
    pub install: InstallState,
    #[serde(flatten)]
    pub rest: serde_json::Map<String, serde_json::Value>,
}

/// Records the installer's verdict in `<dir>/channel.json` (0600, atomic).
pub fn write_channel(
    dir: &Path,
    provider: &str,
    generation: u64,
    install: InstallState,
) -> Result<(), StoreError> {
    let store = StoreDir::new(dir);
    store.create()?;
    let path = store.channel_json();
    let rest = fs::read(&path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<ChannelFile>(&bytes).ok())
        .map(|c| c.rest)
        .unwrap_or_default();
    let channel = ChannelFile {
        provider: provider.to_owned(),
        generation,
        install,
        rest,
    };
    store::write_json_atomic(&path, &channel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("plain"), "'plain'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$HOME `x` \"y\""), "'$HOME `x` \"y\"'");
    }
}
