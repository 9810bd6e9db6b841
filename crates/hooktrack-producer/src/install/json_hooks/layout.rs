//! A JSON file's layout, found when it is read, so what an install adds is laid out as
//! the file around it.

/// How the file is laid out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    /// One indentation step; `None` for a one-line (compact) file.
    indent: Option<String>,
    crlf: bool,
}

impl Layout {
    /// The indent step of the first indented line (two spaces for `{}`, an empty file or
    /// a file whose lines are not indented), and CRLF if the file uses it.
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
        }
    }

    /// One indentation step; `None`: the file is one line.
    pub(super) fn step(&self) -> Option<&str> {
        self.indent.as_deref()
    }

    /// The file's line break.
    pub(super) fn newline(&self) -> &'static str {
        if self.crlf { "\r\n" } else { "\n" }
    }
}
