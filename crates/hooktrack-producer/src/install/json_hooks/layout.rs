//! A JSON file's layout, found when it is read and kept when it is written back, so an
//! install changes only the lines of hooktrack's entries.

use serde::Serialize;
use serde_json::ser::{PrettyFormatter, Serializer};
use serde_json::{Map, Value};

use crate::install::Refusal;

/// How the file was laid out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    /// One indentation step; `None` for a one-line (compact) file.
    indent: Option<String>,
    crlf: bool,
    final_newline: bool,
}

impl Layout {
    /// The indent step of the first indented line (two spaces for `{}`, an empty file or
    /// a file whose lines are not indented), CRLF if the file uses it, a final newline if
    /// it has one (or is new).
    pub(super) fn of(text: &str) -> Self {
        let body = text.trim();
        let indent = if body.is_empty() || body == "{}" {
            Some("  ".to_owned())
        } else if !body.contains('\n') {
            None
        } else {
            let step = body.lines().skip(1).find_map(|line| {
                let ws: String = line
                    .chars()
                    .take_while(|c| *c == ' ' || *c == '\t')
                    .collect();
                (!ws.is_empty() && ws.len() < line.trim_end().len()).then_some(ws)
            });
            Some(step.unwrap_or_else(|| "  ".to_owned()))
        };
        Self {
            indent,
            crlf: text.contains("\r\n"),
            final_newline: body.is_empty() || text.ends_with('\n'),
        }
    }

    /// `root` as text in this layout.
    pub(super) fn render(&self, root: &Map<String, Value>) -> Result<String, Refusal> {
        let mut out = Vec::new();
        let written = match &self.indent {
            None => serde_json::to_writer(&mut out, root),
            Some(step) => {
                let formatter = PrettyFormatter::with_indent(step.as_bytes());
                root.serialize(&mut Serializer::with_formatter(&mut out, formatter))
            }
        };
        written.map_err(|cause| Refusal::Render { cause })?;
        let mut text = String::from_utf8(out).map_err(|_| Refusal::RenderUtf8)?;
        if self.final_newline {
            text.push('\n');
        }
        if self.crlf {
            // JSON strings cannot hold a raw newline: every one is layout.
            text = text.replace('\n', "\r\n");
        }
        Ok(text)
    }
}
