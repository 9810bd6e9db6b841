//! The installers' errors. Every message is lowercase and names the file; what went wrong
//! inside the file is a typed cause ([`MarkerError`], [`Refusal`], [`Violation`]) so the
//! format code never builds an `InstallError` from a bare string.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

use crate::http::UrlError;
use crate::store::StoreError;

#[derive(Debug, Error)]
#[non_exhaustive]
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
    /// The Kimi block's markers are broken; a human must look (nothing was changed).
    #[error("{path}: {problem}; fix the hooktrack markers by hand")]
    Markers { path: PathBuf, problem: MarkerError },
    /// A JSON hooks file hooktrack will not edit (nothing was changed).
    #[error("{path} {refusal}; nothing was changed")]
    Refused { path: PathBuf, refusal: Refusal },
    /// The user made the file read-only; it is rewritten only when asked (nothing was
    /// changed).
    #[error(
        "{path} is read-only (mode {mode:o}); nothing was changed: make it writable (chmod u+w) or pass --force to rewrite it anyway"
    )]
    ReadOnly { path: PathBuf, mode: u32 },
    /// A file at hooktrack's plugin path that hooktrack did not write (nothing was
    /// changed, and it is never deleted).
    #[error(
        "{path} is not hooktrack's (no hooktrack marker at its start); nothing was changed: rename it or move it out of that folder, then run again"
    )]
    NotOurs { path: PathBuf },
    /// Another writer kept saving the file while it was edited (nothing of theirs lost).
    #[error(
        "{path} changed under every one of {attempts} edits; left as the other writer saved it"
    )]
    Contended { path: PathBuf, attempts: u32 },
    #[error("cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: StoreError,
    },
    #[error("{path} failed the read-back check, previous text restored")]
    Rejected {
        path: PathBuf,
        #[source]
        violation: Violation,
    },
    #[error(
        "{path} failed the read-back check ({violation}) and the previous text could not be restored"
    )]
    Restore {
        path: PathBuf,
        violation: Violation,
        #[source]
        source: io::Error,
    },
    #[error("cannot record the verdict in channel.json")]
    Channel {
        #[source]
        source: StoreError,
    },
    #[error("{path} is invalid")]
    Invalid {
        path: PathBuf,
        #[source]
        violation: Violation,
    },
    /// `install` is the command that installs it, as [`super::own_side::install_command`]
    /// names it.
    #[error("hooktrack is not installed in {path}: {reason}; run {install}")]
    NotInstalled {
        path: PathBuf,
        reason: &'static str,
        install: String,
    },
    #[error("cannot tell which {family} is installed ({reason}); name {names}")]
    Detect {
        family: &'static str,
        names: String,
        reason: String,
    },
}

/// What is wrong with the Kimi block's markers (lines are 1-based).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum MarkerError {
    #[error("a second hooktrack begin marker at line {line}")]
    SecondBegin { line: usize },
    #[error("a hooktrack end marker at line {line} without a begin marker")]
    EndWithoutBegin { line: usize },
    #[error("the hooktrack begin marker at line {line} has no end marker")]
    NoEnd { line: usize },
}

/// Why a JSON hooks file cannot be edited. The words follow the file's name.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Refusal {
    #[error("is not valid JSON ({cause})")]
    NotJson { cause: serde_json::Error },
    #[error("holds {kind}, not a JSON object")]
    NotObject { kind: &'static str },
    #[error("has a `hooks` that is {kind}, not an object")]
    HooksNotObject { kind: &'static str },
    #[error("has a `hooks.{event}` that is {kind}, not a list of matcher groups")]
    EventNotList { event: String, kind: &'static str },
    /// serde_json read it, but hooktrack cannot find where its values sit in the text.
    #[error("cannot be edited in place")]
    Unplaced,
}

/// A rule the file breaks, as the agent CLI (or the read-back) sees it: one sentence,
/// written into `channel.json` as it is. The rules are many and only ever shown to
/// people, so the sentence is the whole of the error.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{0}")]
pub struct Violation(pub String);

impl Violation {
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// Whether the sentence contains `part` (for tests and callers that look for a rule).
    pub fn contains(&self, part: &str) -> bool {
        self.0.contains(part)
    }
}

impl From<MarkerError> for Violation {
    fn from(e: MarkerError) -> Self {
        Self(e.to_string())
    }
}

impl From<Refusal> for Violation {
    fn from(e: Refusal) -> Self {
        Self(e.to_string())
    }
}
