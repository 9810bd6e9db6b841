//! Text from agents is data, never terminal control: the one place every output makes
//! strings from payloads, paths and transcripts safe to show.
//!
//! A character is *unsafe* when a terminal, a desktop notifier or a reader could act on it
//! instead of showing it: the C0 controls (U+0000–U+001F), DEL (U+007F), the C1 controls
//! (U+0080–U+009F, U+009B being a one-byte CSI) and the bidi controls (U+061C, U+200E,
//! U+200F, U+202A–U+202E, U+2066–U+2069), which reorder what is shown.
//!
//! The notation, one for every text output (timeline, watch, tmux options, notifications,
//! HTML, `session`, `check`): an unsafe character is written as `\u{hex}`, lowercase,
//! without leading zeros, as Rust writes it: ESC is `\u{1b}`, the one-byte CSI `\u{9b}`,
//! RIGHT-TO-LEFT OVERRIDE `\u{202e}`. JSON outputs (replay's json and ndjson, watch's
//! ndjson) write the JSON escape instead (`\u001b`, `\u009b`, `\u202e`), so a document
//! still parses to the original string. A byte that is not UTF-8 is written as U+FFFD.
//!
//! Two ways in: [`visible`] for one field, and [`SafeWriter`] wrapped around a whole
//! output whose own layout has no control but its newlines (and tabs), so nothing a
//! writer forgets can slip through.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, Write};

/// True for a character a terminal or notifier may interpret rather than show.
pub fn is_unsafe(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{61c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// `s` with every unsafe character (newlines and tabs included) written as `\u{hex}`;
/// borrowed when there is none.
pub fn visible(s: &str) -> Cow<'_, str> {
    escape(s, |_| false)
}

/// [`visible`], keeping newlines and tabs: for text that is several lines by design.
pub fn visible_lines(s: &str) -> Cow<'_, str> {
    escape(s, |c| c == '\n' || c == '\t')
}

fn escape(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let bad = |c: char| is_unsafe(c) && !keep(c);
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    let mut shown = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if bad(c) {
            let _ = write!(shown, "\\u{{{:x}}}", u32::from(c));
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}

/// `s` for a notification daemon that reads markup (`notify-send`'s body): `&`, `<`
/// and `>` as entities, so `<a href=…>` or `<img src=…>` is shown as text.
pub fn markup(s: &str) -> Cow<'_, str> {
    if !s.contains(['&', '<', '>']) {
        return Cow::Borrowed(s);
    }
    let mut shown = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => shown.push_str("&amp;"),
            '<' => shown.push_str("&lt;"),
            '>' => shown.push_str("&gt;"),
            c => shown.push(c),
        }
    }
    Cow::Owned(shown)
}

/// What a [`SafeWriter`] writes in place of an unsafe character.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notation {
    /// `\u{1b}`: a text output; newlines and tabs (the writer's own layout) pass.
    Text,
    /// `\u001b`: a JSON output. Only DEL, C1 and bidi controls are rewritten (serde_json
    /// already escapes C0 in strings, and outside strings JSON has no such character), so
    /// the document keeps its value.
    Json,
}

/// An `io::Write` that writes through to `inner` with every unsafe character in the
/// [`Notation`] given. A character split across two writes is held until it is whole.
#[derive(Debug)]
pub struct SafeWriter<W: Write> {
    inner: W,
    notation: Notation,
    /// The start of a character a write ended in the middle of (at most 3 bytes).
    pending: Vec<u8>,
}

impl<W: Write> SafeWriter<W> {
    pub fn new(inner: W, notation: Notation) -> Self {
        SafeWriter {
            inner,
            notation,
            pending: Vec::new(),
        }
    }

    /// The writer inside (what was held of a split character is not written).
    pub fn into_inner(self) -> W {
        self.inner
    }

    fn put(&mut self, mut rest: &[u8]) -> io::Result<()> {
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => return self.put_str(s),
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    self.put_str(std::str::from_utf8(valid).unwrap_or_default())?;
                    match e.error_len() {
                        None => {
                            self.pending.extend_from_slice(after);
                            return Ok(());
                        }
                        Some(n) => {
                            self.inner.write_all("\u{fffd}".as_bytes())?;
                            rest = &after[n..];
                        }
                    }
                }
            }
        }
    }

    /// Writes `s` with its unsafe characters rewritten. The scan is over bytes: in UTF-8
    /// every unsafe character is an ASCII byte or starts with 0xC2 (C1), 0xD8 (U+061C) or
    /// 0xE2 (the bidi controls), and only those are decoded.
    fn put_str(&mut self, s: &str) -> io::Result<()> {
        let bytes = s.as_bytes();
        let (mut start, mut i) = (0, 0);
        while i < bytes.len() {
            // Eight printable ASCII bytes at a time: the bulk of every output.
            while let Some(word) = bytes.get(i..i + 8) {
                if !all_printable_ascii(word) {
                    break;
                }
                i += 8;
            }
            let Some(&byte) = bytes.get(i) else { break };
            let unsafe_char = match byte {
                b'\n' | b'\t' => None,
                0x00..=0x1f if self.notation == Notation::Json => None,
                0x00..=0x1f | 0x7f => Some(char::from(byte)),
                0xc2 | 0xd8 | 0xe2 => s
                    .get(i..)
                    .and_then(|rest| rest.chars().next())
                    .filter(|&c| is_unsafe(c)),
                _ => None,
            };
            let Some(c) = unsafe_char else {
                i += 1;
                continue;
            };
            self.inner.write_all(&bytes[start..i])?;
            match self.notation {
                Notation::Text => write!(self.inner, "\\u{{{:x}}}", u32::from(c))?,
                Notation::Json => write!(self.inner, "\\u{:04x}", u32::from(c))?,
            }
            i += c.len_utf8();
            start = i;
        }
        self.inner.write_all(&bytes[start..])
    }
}

impl<W: Write> Write for SafeWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        if self.pending.is_empty() {
            return self.put(buf);
        }
        let mut joined = std::mem::take(&mut self.pending);
        joined.extend_from_slice(buf);
        self.put(&joined)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// True when all 8 bytes of `word` are in 0x20..=0x7E. A false "no" only costs the byte
/// by byte path; a "yes" is exact: a byte at or above 0x7F sets its top bit in
/// `x | (x + 0x01…)` (a carry only ever leaves a byte that is itself flagged), and with
/// every top bit clear, `(x - 0x20…) & !x` sets a top bit only where a byte is below 0x20.
fn all_printable_ascii(word: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const TOPS: u64 = 0x8080_8080_8080_8080;
    let Ok(word) = <[u8; 8]>::try_from(word) else {
        return false;
    };
    let x = u64::from_le_bytes(word);
    let high = (x | x.wrapping_add(ONES)) & TOPS;
    let low = x.wrapping_sub(ONES * 0x20) & !x & TOPS;
    high == 0 && low == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through(notation: Notation, pieces: &[&[u8]]) -> String {
        let mut w = SafeWriter::new(Vec::new(), notation);
        for p in pieces {
            w.write_all(p).unwrap();
        }
        String::from_utf8(w.into_inner()).unwrap()
    }

    #[test]
    fn visible_names_every_control_and_borrows_clean_text() {
        assert!(matches!(visible("plain · text"), Cow::Borrowed(_)));
        assert_eq!(
            visible("a\x1b]52;c;eA==\x07b\u{9b}6n\u{202e}\n\t\u{7f}"),
            "a\\u{1b}]52;c;eA==\\u{7}b\\u{9b}6n\\u{202e}\\u{a}\\u{9}\\u{7f}"
        );
        assert_eq!(visible_lines("a\nb\t\x1b"), "a\nb\t\\u{1b}");
        assert_eq!(markup("<a href=x>&</a>"), "&lt;a href=x&gt;&amp;&lt;/a&gt;");
        for c in [
            '\u{61c}', '\u{200e}', '\u{200f}', '\u{2066}', '\u{2069}', '\u{80}',
        ] {
            assert!(is_unsafe(c), "{c:?}");
        }
        for c in [' ', '~', '\u{a0}', '\u{2028}', 'é', '\u{2070}'] {
            assert!(!is_unsafe(c), "{c:?}");
        }
    }

    #[test]
    fn the_writer_byte_scan_agrees_with_is_unsafe_on_every_character_up_to_u_3000() {
        for c in (0..0x3000).filter_map(char::from_u32) {
            let text = c.to_string();
            let written = through(Notation::Text, &[text.as_bytes()]);
            let expected = if c == '\n' || c == '\t' {
                text.clone()
            } else {
                visible(&text).into_owned()
            };
            assert_eq!(written, expected, "{c:?}");
            let json = through(Notation::Json, &[text.as_bytes()]);
            let expected = if is_unsafe(c) && c > '\u{1f}' {
                format!("\\u{:04x}", u32::from(c))
            } else {
                text
            };
            assert_eq!(json, expected, "{c:?}");
        }
    }

    #[test]
    fn the_word_check_passes_printable_ascii_only() {
        for b in 0..=255u8 {
            for at in 0..8 {
                let mut word = *b"abcdefgh";
                word[at] = b;
                assert_eq!(
                    all_printable_ascii(&word),
                    (0x20..0x7f).contains(&b),
                    "{b:#x} at {at}"
                );
            }
        }
        // A long line: the unsafe characters found at every offset from a word's start.
        for pad in 0..16 {
            let text = format!(
                "{}\u{9b}x{}\x1b\u{202e}{}",
                "a".repeat(pad),
                "b".repeat(pad),
                "c".repeat(20)
            );
            let written = through(Notation::Text, &[text.as_bytes()]);
            assert_eq!(written, visible(&text), "{pad}");
        }
    }

    #[test]
    fn a_character_split_across_writes_is_rewritten_whole() {
        let csi = "\u{9b}".as_bytes();
        let rlo = "\u{202e}".as_bytes();
        assert_eq!(
            through(
                Notation::Text,
                &[b"x", &csi[..1], &csi[1..], &rlo[..2], &rlo[2..], b"\n"]
            ),
            "x\\u{9b}\\u{202e}\n"
        );
        assert_eq!(
            through(Notation::Json, &[b"\"", &csi[..1], &csi[1..], b"\x7f\"\n"]),
            "\"\\u009b\\u007f\"\n"
        );
    }

    #[test]
    fn json_notation_keeps_the_value_and_text_notation_keeps_the_layout() {
        let original = "id\x1b[6n\u{9b}31m\u{202e}\u{7f}\x1bP1$r\x1b\\";
        let json = through(
            Notation::Json,
            &[serde_json::to_string(original).unwrap().as_bytes()],
        );
        assert!(!json.chars().any(is_unsafe), "{json:?}");
        assert_eq!(serde_json::from_str::<String>(&json).unwrap(), original);
        assert_eq!(
            through(Notation::Text, &[b"a\tb\r\n\xff"]),
            "a\tb\\u{d}\n\u{fffd}"
        );
    }
}
