//! Observer injection: wiring an agent CLI's hooks to `hooktrack emit`.
//!
//! One module per config format: [`kimi`] edits Kimi's `config.toml` as text around a
//! marker-delimited block; [`claude_style`] edits the Claude-style JSON hooks table that
//! Claude Code, Codex CLI and Gemini CLI share. What they share lives here: the hook
//! command, its POSIX shell quoting, the errors, the read-back-or-restore step around an
//! atomic write, and the installer's verdict in `channel.json`.

pub mod claude_style;
pub mod kimi;

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::http::{Url, UrlError};
use crate::store::{self, StoreError, StorePaths};
use hooktrack_core::diagnostics::error_chain;
use hooktrack_core::store::{InstallRecord, parse_channel};

/// What the hook command points at.
#[derive(Clone, Debug)]
pub struct Observer {
    /// The `hooktrack` binary (absolute).
    pub emitter: PathBuf,
    /// The collector URL.
    pub url: String,
    /// The store's artifact directory (absolute).
    pub dir: PathBuf,
    pub generation: u64,
}

#[derive(Debug, Error)]
pub enum InstallError {
    #[error("{what} {path} is not an absolute path")]
    NotAbsolute { what: &'static str, path: PathBuf },
    #[error("bad collector URL")]
    Url {
        #[source]
        source: UrlError,
    },
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} is not UTF-8 text")]
    NotUtf8 { path: PathBuf },
    #[error("{path}: {detail}; fix the hooktrack markers by hand")]
    Markers { path: PathBuf, detail: String },
    #[error("{path} {detail}; nothing was changed")]
    Refused { path: PathBuf, detail: String },
    #[error("cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: StoreError,
    },
    #[error("{path} failed the read-back check, previous text restored: {detail}")]
    Rejected { path: PathBuf, detail: String },
    #[error(
        "{path} failed the read-back check ({detail}) and the previous text could not be restored"
    )]
    Restore {
        path: PathBuf,
        detail: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot record the verdict in channel.json")]
    Channel {
        #[source]
        source: StoreError,
    },
    #[error("{path} is invalid: {detail}")]
    Invalid { path: PathBuf, detail: String },
    #[error("hooktrack is not installed in {path}: {detail}")]
    NotInstalled { path: PathBuf, detail: String },
    #[error("cannot tell which Kimi is installed ({detail}); pass --variant code or --variant cli")]
    Detect { detail: String },
}

/// What an install did.
#[derive(Clone, Debug)]
pub struct InstallReport {
    pub config: PathBuf,
    /// Every hook entry in the file after the install (the user's and hooktrack's).
    pub entries: usize,
    pub ours: usize,
    /// The generation of the hooktrack entries that were replaced, if there were any
    /// (`Some(None)`: replaced, generation unreadable).
    pub replaced: Option<Option<u64>>,
    pub created: bool,
}

/// What an uninstall did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Uninstalled {
    Removed {
        generation: Option<u64>,
    },
    /// The file holds no hooktrack block / entries: it was not rewritten.
    NoBlock,
    NoFile,
    /// The hooktrack entries belong to another generation (a newer session): left in place.
    KeptOther {
        generation: Option<u64>,
    },
}

/// The `hooktrack emit` command for one event: absolute, every value POSIX shell-quoted,
/// no secret (the token comes from `$HOOKTRACK_TOKEN`). `label`, when given, is written as
/// `--observer LABEL` right after `emit`.
pub fn emit_command(
    observer: &Observer,
    provider: &str,
    event: &str,
    label: Option<&str>,
) -> String {
    format!(
        "{} emit {}--url {} --dir {} --provider {} --generation {} --event {}",
        shell_quote(&observer.emitter.to_string_lossy()),
        label.map_or_else(String::new, |l| format!("--observer {l} ")),
        shell_quote(&observer.url),
        shell_quote(&observer.dir.to_string_lossy()),
        shell_quote(provider),
        observer.generation,
        shell_quote(event),
    )
}

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

/// Records the installer's verdict in `<dir>/channel.json` (0600, atomic).
pub fn write_channel(
    dir: &Path,
    provider: &str,
    generation: u64,
    install: InstallRecord,
) -> Result<(), StoreError> {
    let store = StorePaths::in_dir(dir);
    store::create_dir(&store)?;
    // What others published (a policy `state`, ...) is kept; an unreadable file is replaced.
    let mut channel = fs::read(&store.channel)
        .ok()
        .and_then(|bytes| parse_channel(&bytes).ok())
        .unwrap_or_default();
    channel.provider = Some(provider.to_owned());
    channel.generation = Some(generation);
    channel.install = Some(install);
    store::write_json_atomic(&store.channel, &channel)
}

/// Runs an install's outcome through to `<observer.dir>/channel.json`: `ok` with "N
/// hooktrack entries for LABEL in FILE (generation G)", or not ok with the error chain.
/// The install's own error wins over a failure to record.
pub(crate) fn install_recorded(
    observer: &Observer,
    provider: &str,
    label: &str,
    result: Result<InstallReport, InstallError>,
) -> Result<InstallReport, InstallError> {
    let state = match &result {
        Ok(r) => InstallRecord {
            ok: true,
            detail: Some(format!(
                "{} hooktrack entries for {label} in {} (generation {})",
                r.ours,
                r.config.display(),
                observer.generation
            )),
        },
        Err(e) => InstallRecord {
            ok: false,
            detail: Some(error_chain(e)),
        },
    };
    let recorded = write_channel(&observer.dir, provider, observer.generation, state);
    let report = result?;
    recorded.map_err(|source| InstallError::Channel { source })?;
    Ok(report)
}

/// The emitter and the store must be absolute, the URL one the emitter accepts.
pub(crate) fn check_observer(observer: &Observer) -> Result<(), InstallError> {
    for (what, path) in [
        ("the emitter", &observer.emitter),
        ("the store", &observer.dir),
    ] {
        if !path.is_absolute() {
            return Err(InstallError::NotAbsolute {
                what,
                path: path.clone(),
            });
        }
    }
    Url::parse(&observer.url).map_err(|source| InstallError::Url { source })?;
    Ok(())
}

/// Follows a symlinked config file, so the link survives the atomic replace.
pub(crate) fn resolve(config: &Path) -> PathBuf {
    match fs::symlink_metadata(config) {
        Ok(m) if m.file_type().is_symlink() => {
            fs::canonicalize(config).unwrap_or_else(|_| config.to_owned())
        }
        _ => config.to_owned(),
    }
}

/// `Ok(None)` when the file does not exist.
pub(crate) fn read_text(path: &Path) -> Result<Option<String>, InstallError> {
    match fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| InstallError::NotUtf8 {
                path: path.to_owned(),
            }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(InstallError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// The file's permission bits, 0600 for a file that does not exist yet.
pub(crate) fn file_mode(path: &Path) -> u32 {
    fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o600)
}

/// Replaces `config` atomically (temporary file in the same directory, fsync, rename),
/// creating its directory if needed.
pub(crate) fn write_config(config: &Path, text: &str, mode: u32) -> Result<(), InstallError> {
    if let Some(parent) = config.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|source| InstallError::Write {
            path: config.to_owned(),
            source: StoreError::CreateDir {
                path: parent.to_owned(),
                source,
            },
        })?;
    }
    store::write_atomic(config, text.as_bytes(), mode).map_err(|source| InstallError::Write {
        path: config.to_owned(),
        source,
    })
}

/// Writes `text`, reads the file back from disk and runs `verdict` on what is there; on
/// any violation puts `original` back byte for byte (or removes the file it created).
pub(crate) fn write_checked<T>(
    config: &Path,
    original: Option<&str>,
    text: &str,
    verdict: impl FnOnce(&str) -> Result<T, String>,
) -> Result<T, InstallError> {
    let mode = file_mode(config);
    write_config(config, text, mode)?;
    let verdict = match read_text(config) {
        Ok(back) => verdict(back.as_deref().unwrap_or_default()),
        Err(e) => Err(format!("cannot read it back: {}", error_chain(&e))),
    };
    verdict.or_else(|detail| {
        restore(config, original, mode).map_err(|source| InstallError::Restore {
            path: config.to_owned(),
            detail: detail.clone(),
            source,
        })?;
        Err(InstallError::Rejected {
            path: config.to_owned(),
            detail,
        })
    })
}

fn restore(config: &Path, original: Option<&str>, mode: u32) -> io::Result<()> {
    match original {
        Some(text) => store::write_atomic(config, text.as_bytes(), mode)
            .map_err(|e| io::Error::other(error_chain(&e))),
        None => fs::remove_file(config),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_emit_command_quotes_every_value() {
        let observer = Observer {
            emitter: PathBuf::from("/opt/it's here/hooktrack"),
            url: "http://127.0.0.1:1/e".to_owned(),
            dir: PathBuf::from("/s"),
            generation: 4,
        };
        assert_eq!(
            emit_command(&observer, "claude", "Stop", Some("hooktrack")),
            "'/opt/it'\\''s here/hooktrack' emit --observer hooktrack --url 'http://127.0.0.1:1/e' --dir '/s' --provider 'claude' --generation 4 --event 'Stop'"
        );
        assert!(emit_command(&observer, "kimi", "Stop", None).contains("' emit --url '"));
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("plain"), "'plain'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$HOME `x` \"y\""), "'$HOME `x` \"y\"'");
    }
}
