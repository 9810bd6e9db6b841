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

    /// Writes `bytes` with their unsafe characters rewritten, a byte that is not UTF-8 as
    /// U+FFFD, and holds a character the bytes end in the middle of. The scan is over
    /// bytes: in UTF-8 every unsafe character is an ASCII byte or starts with 0xC2 (C1),
    /// 0xD8 (U+061C) or 0xE2 (the bidi controls); runs of ASCII that cannot hold one are
    /// skipped a word at a time, and only what is not ASCII is decoded, a character at a
    /// time (so the bulk, ASCII, is read once).
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        let json = self.notation == Notation::Json;
        let (mut start, mut i) = (0, 0);
        while i < bytes.len() {
            i = skip_plain(bytes, i, json);
            let Some(&byte) = bytes.get(i) else { break };
            let unsafe_char = match byte {
                b'\n' | b'\t' => None,
                0x00..=0x1f if json => None,
                0x00..=0x1f | 0x7f => Some(char::from(byte)),
                0x20..=0x7e => None,
                _ => match first_char(&bytes[i..]) {
                    Decoded::Char(c) if is_unsafe(c) => Some(c),
                    Decoded::Char(c) => {
                        i += c.len_utf8();
                        continue;
                    }
                    Decoded::Cut => {
                        self.inner.write_all(&bytes[start..i])?;
                        self.pending.extend_from_slice(&bytes[i..]);
                        return Ok(());
                    }
                    Decoded::Invalid(n) => {
                        self.inner.write_all(&bytes[start..i])?;
                        self.inner.write_all("\u{fffd}".as_bytes())?;
                        i += n;
                        start = i;
                        continue;
                    }
                },
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

/// The character `bytes` start with, as UTF-8.
enum Decoded {
    Char(char),
    /// `bytes` end before the character does.
    Cut,
    /// The first `n` bytes are not UTF-8 (written as one U+FFFD, as `from_utf8_lossy` does).
    Invalid(usize),
}

fn first_char(bytes: &[u8]) -> Decoded {
    // A character is at most 4 bytes: the decoder looks no further.
    let window = &bytes[..bytes.len().min(4)];
    let valid = match std::str::from_utf8(window) {
        Ok(s) => s,
        Err(e) if e.valid_up_to() > 0 => {
            std::str::from_utf8(&window[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(e) => {
            return match e.error_len() {
                Some(n) => Decoded::Invalid(n),
                None => Decoded::Cut,
            };
        }
    };
    match valid.chars().next() {
        Some(c) => Decoded::Char(c),
        None => Decoded::Invalid(1),
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

/// The first index from `from` on that may hold an unsafe character: the bytes before it
/// are printable ASCII (`json`: any ASCII below DEL, serde_json having escaped the C0
/// controls in strings). Four words are tested at once, the bulk of every output being
/// long runs of ASCII; the first flagged byte of a word is exact (see [`flagged`]). The
/// last bytes short of a word are left to the caller.
fn skip_plain(bytes: &[u8], from: usize, json: bool) -> usize {
    let mut i = from;
    for block in bytes.get(from..).unwrap_or_default().chunks_exact(32) {
        if block
            .chunks_exact(8)
            .fold(0, |flags, w| flags | flagged(w, json))
            != 0
        {
            break;
        }
        i += 32;
    }
    for word in bytes.get(i..).unwrap_or_default().chunks_exact(8) {
        let flags = flagged(word, json);
        if flags != 0 {
            return i + flags.trailing_zeros() as usize / 8;
        }
        i += 8;
    }
    i
}

/// The top bit of each byte of `word` (little-endian: the first byte lowest) that is at
/// or above DEL, or (unless `json`) below a space; zero when there is none. The lowest
/// flag is exact: a byte at or above 0x7F sets its top bit in `x | (x + 0x01…)`, a byte
/// below 0x20 in `(x - 0x20…) & !x`, and the carries and borrows that may flag a byte
/// besides only ever start at a byte that is itself flagged, and go up.
fn flagged(word: &[u8], json: bool) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const TOPS: u64 = 0x8080_8080_8080_8080;
    let Ok(word) = <[u8; 8]>::try_from(word) else {
        return TOPS;
    };
    let x = u64::from_le_bytes(word);
    let high = (x | x.wrapping_add(ONES)) & TOPS;
    if json {
        return high;
    }
    high | (x.wrapping_sub(ONES * 0x20) & !x & TOPS)
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
    fn the_word_check_flags_the_first_byte_that_is_not_printable_ascii() {
        for b in 0..=255u8 {
            for at in 0..8 {
                let mut word = *b"abcdefgh";
                word[at] = b;
                assert_eq!(
                    flagged(&word, false) == 0,
                    (0x20..0x7f).contains(&b),
                    "{b:#x} at {at}"
                );
                assert_eq!(flagged(&word, true) == 0, b < 0x7f, "{b:#x} at {at}");
                // The first flag is the byte's own, whatever the bytes after it are.
                for after in [0x00, 0x1f, 0x7e, 0x7f, 0xff] {
                    word[at + 1..].fill(after);
                    for json in [false, true] {
                        if b >= 0x7f || (b < 0x20 && !json) {
                            let first = flagged(&word, json).trailing_zeros() / 8;
                            assert_eq!(first, at as u32, "{b:#x} at {at}, then {after:#x}");
                        }
                    }
                }
            }
        }
        // A long line: the unsafe characters found at every offset from a word's start.
        for pad in 0..72 {
            let text = format!(
                "{}\u{9b}x{}\x1b\u{202e}{}\u{7f}",
                "a".repeat(pad),
                "b".repeat(pad),
                "c".repeat(pad / 3)
            );
            let written = through(Notation::Text, &[text.as_bytes()]);
            assert_eq!(written, visible(&text), "{pad}");
            let json = through(Notation::Json, &[text.as_bytes()]);
            let expected = text
                .replace('\u{9b}', "\\u009b")
                .replace('\u{202e}', "\\u202e")
                .replace('\u{7f}', "\\u007f");
            assert_eq!(json, expected, "{pad}");
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
    fn two_writes_cut_anywhere_give_what_one_write_gives() {
        let mut text = b"plain \xe2\x86\x92 arrow \xc2\x9b csi \xd8\x9c alm \xe2\x80\xae rlo \xf0\x9f\x98\x80 \
            emoji \xc3\xa9 e \xff bad \xe2\x82 cut \xed\xa0\x80 surrogate \x1b esc \x7f del\n"
            .to_vec();
        text.extend_from_slice(&b"0123456789abcdef".repeat(5));
        for notation in [Notation::Text, Notation::Json] {
            let whole = through(notation, &[&text]);
            assert_eq!(whole, through_lossy(notation, &text), "{notation:?}");
            for cut in 0..=text.len() {
                let (a, b) = text.split_at(cut);
                assert_eq!(
                    through(notation, &[a, b]),
                    whole,
                    "{notation:?} cut at {cut}"
                );
            }
        }
    }

    /// What the writer gives, made another way: `from_utf8_lossy`, then `visible` (text,
    /// keeping newlines and tabs) or the JSON escape of DEL, C1 and bidi controls.
    fn through_lossy(notation: Notation, bytes: &[u8]) -> String {
        let lossy = String::from_utf8_lossy(bytes);
        match notation {
            Notation::Text => visible_lines(&lossy).into_owned(),
            Notation::Json => lossy
                .chars()
                .map(|c| {
                    if is_unsafe(c) && c > '\u{1f}' {
                        format!("\\u{:04x}", u32::from(c))
                    } else {
                        c.to_string()
                    }
                })
                .collect(),
        }
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
