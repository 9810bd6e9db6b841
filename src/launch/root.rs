//! Where a launch keeps its session when the caller names no root.

use std::ffi::OsString;
use std::path::PathBuf;

use hooktrack_core::time::Timestamp;

/// The default session root: `$XDG_STATE_HOME/hooktrack/sessions/<time>-<pid>`, else
/// `~/.local/state/hooktrack/sessions/<time>-<pid>` (`<time>` is `now` in RFC 3339 without
/// `:`, `-` and `.`, `<pid>` this process's id). `None` without either variable. `env`
/// looks a variable up (`|name| std::env::var_os(name)`).
pub fn default_session_root(
    env: impl Fn(&str) -> Option<OsString>,
    now: Timestamp,
) -> Option<PathBuf> {
    let stamp = now.to_string().replace([':', '-', '.'], "");
    Some(default_sessions_folder(env)?.join(format!("{stamp}-{}", std::process::id())))
}

/// The folder of the default session roots: `$XDG_STATE_HOME/hooktrack/sessions`, else
/// `~/.local/state/hooktrack/sessions` (what `watch` with no path follows too).
pub fn default_sessions_folder(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let set = |name: &str| env(name).filter(|v| !v.is_empty());
    let base = set("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| set("HOME").map(|h| PathBuf::from(h).join(".local").join("state")))?;
    Some(base.join("hooktrack").join("sessions"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_directory_then_home_then_none() {
        let now = Timestamp::from_millis(1_796_130_000_123);
        let pid = std::process::id();
        let at = |vars: &[(&str, &str)]| {
            default_session_root(
                |name| {
                    vars.iter()
                        .find(|(k, _)| *k == name)
                        .map(|(_, v)| OsString::from(v))
                },
                now,
            )
        };
        let name = format!("{}-{pid}", now.to_string().replace([':', '-', '.'], ""));
        assert_eq!(
            at(&[("XDG_STATE_HOME", "/s"), ("HOME", "/h")]),
            Some(PathBuf::from("/s/hooktrack/sessions").join(&name))
        );
        assert_eq!(
            at(&[("XDG_STATE_HOME", ""), ("HOME", "/h")]),
            Some(PathBuf::from("/h/.local/state/hooktrack/sessions").join(&name))
        );
        assert_eq!(at(&[]), None);
    }
}
