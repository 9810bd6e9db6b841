//! Splits a byte stream into lines with a hard length limit.
//!
//! [`LineSplitter`] holds the rules, push-based: it is fed chunks of the stream as they
//! come (from a file read by offset, a reader's buffer, a pipe) and hands out each line
//! once its newline arrives. [`LineReader`] pulls from an [`io::BufRead`] through it.
//!
//! A line over [`MAX_LINE_BYTES`] is skipped while it is read: its bytes are never held,
//! and the lines after it are not lost.
//!
//! A splitter made with [`LineSplitter::skimming`] (a transcript's follower) holds much
//! less: a line that grows past [`SKIM_WINDOW`] is skipped from there on, searched for the
//! needles while it passes (across chunk boundaries), and handed out as
//! [`ReadLine::Long`], which says whether it held one. Its reader may then read it again
//! from the file by its offset (the live tailer does, up to [`MAX_LINE_BYTES`]): a marker
//! line is rare and small, an `api-request-shape` line of tens of KB is in every request.

use std::io::{self, BufRead};

use crate::row::MAX_LINE_BYTES;

/// A partial-line buffer grown past this is released after its line, so one long line
/// does not pin memory for the life of the splitter.
const KEEP_BUFFER: usize = 256 * 1024;

/// The most of one line a skimming splitter holds across chunks (see the module's doc).
pub const SKIM_WINDOW: usize = 64 * 1024;

/// One line read from the stream. `number` is 1-based.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadLine<'a> {
    /// A whole line, without its newline.
    Line { number: u64, bytes: &'a [u8] },
    /// A line over the limit; `len` is its full length in bytes.
    Oversized { number: u64, len: u64 },
    /// The stream ended in the middle of a line (no final newline).
    Truncated { number: u64, bytes: &'a [u8] },
    /// Only from a [skimming](LineSplitter::skimming) splitter: a line longer than
    /// [`SKIM_WINDOW`] (at most [`MAX_LINE_BYTES`]) that was skipped while read; `needle`
    /// says whether it holds one of the needles (then read it again to classify it).
    Long { number: u64, len: u64, needle: bool },
}

impl ReadLine<'_> {
    pub fn number(&self) -> u64 {
        match self {
            ReadLine::Line { number, .. }
            | ReadLine::Oversized { number, .. }
            | ReadLine::Truncated { number, .. }
            | ReadLine::Long { number, .. } => *number,
        }
    }
}

/// Splits a stream fed in chunks into numbered lines, holding at most one partial line
/// (none while in a line over the limit).
///
/// A line that ends in the chunk it started in is handed out borrowed from that chunk:
/// bytes are copied only for a line split across chunks.
#[derive(Debug, Default)]
pub struct LineSplitter {
    /// The bytes of the current line received in earlier chunks.
    partial: Vec<u8>,
    /// `partial` still holds the line last handed out: clear it before use.
    stale: bool,
    /// In a line over the limit: its length so far (its bytes are not held).
    skipping: Option<u64>,
    /// Lines handed out so far: the next line's number is this + 1.
    lines: u64,
    /// Set by [`LineSplitter::skimming`]: the window rule and its needles.
    skim: Option<Skim>,
}

/// The state of a skimming splitter (see the module's doc).
#[derive(Debug, Default)]
struct Skim {
    needles: &'static [&'static str],
    /// The longest needle's length less one: what a needle split across two pieces can
    /// have on either side of the cut.
    reach: usize,
    /// The current line, skipped, held a needle so far.
    found: bool,
    /// The last `reach` bytes of the skipped line so far (never more).
    carry: Vec<u8>,
}

impl Skim {
    /// Searches `bytes`, the next bytes of a skipped line, and the cut between them and
    /// the bytes before; keeps the new carry.
    fn pass(&mut self, bytes: &[u8]) {
        if !self.found {
            // A needle cut between the carry and `bytes` lies within `reach` bytes on
            // either side; one wholly within `bytes` is found by the second search.
            let mut joint = std::mem::take(&mut self.carry);
            let cut = !joint.is_empty() && {
                joint.extend_from_slice(&bytes[..bytes.len().min(self.reach)]);
                holds_needle(self.needles, &joint)
            };
            self.found = cut || holds_needle(self.needles, bytes);
            joint.clear();
            self.carry = joint;
        }
        if bytes.len() >= self.reach {
            self.carry.clear();
            self.carry
                .extend_from_slice(&bytes[bytes.len() - self.reach..]);
        } else {
            self.carry.extend_from_slice(bytes);
            let extra = self.carry.len().saturating_sub(self.reach);
            self.carry.drain(..extra);
        }
    }

    fn reset(&mut self) {
        self.found = false;
        self.carry.clear();
    }
}

/// `bytes` holds one of `needles`.
fn holds_needle(needles: &[&str], bytes: &[u8]) -> bool {
    needles
        .iter()
        .any(|n| memchr::memmem::find(bytes, n.as_bytes()).is_some())
}

impl LineSplitter {
    pub fn new() -> Self {
        Self::default()
    }

    /// A splitter whose numbering goes on after `lines` lines (a stream resumed, or the
    /// next file of a sequence).
    pub fn after(lines: u64) -> Self {
        Self {
            lines,
            ..Self::default()
        }
    }

    /// A splitter for a transcript whose interesting lines each hold one of `needles`: a
    /// line is held up to [`SKIM_WINDOW`] bytes; past that it is skipped while read and
    /// comes out as [`ReadLine::Long`], saying whether it held a needle. A line within one
    /// fed chunk is still handed out whole (it is borrowed, not held). Without needles,
    /// every line matters: the splitter is a plain one.
    pub fn skimming(needles: &'static [&'static str]) -> Self {
        Self {
            skim: (!needles.is_empty()).then(|| Skim {
                needles,
                reach: needles
                    .iter()
                    .map(|n| n.len())
                    .max()
                    .unwrap_or(1)
                    .saturating_sub(1),
                ..Skim::default()
            }),
            ..Self::default()
        }
    }

    /// The same rules, numbering going on after `lines` lines.
    pub fn skimming_after(needles: &'static [&'static str], lines: u64) -> Self {
        Self {
            lines,
            ..Self::skimming(needles)
        }
    }

    /// Bytes of memory held for lines now: the partial line's buffer and a skimming
    /// splitter's carry (what [`skimming`](Self::skimming) bounds by [`SKIM_WINDOW`]
    /// plus the longest needle).
    pub fn held(&self) -> usize {
        self.partial.capacity() + self.skim.as_ref().map_or(0, |s| s.carry.capacity())
    }

    /// Lines handed out so far, by [`feed`](Self::feed) and [`finish`](Self::finish).
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Feeds `chunk` up to its first newline. Returns the bytes consumed and the line that
    /// newline ends ([`ReadLine::Line`] or [`ReadLine::Oversized`]). Without a newline
    /// the whole chunk is consumed (held, or only counted in a line over the limit) and no
    /// line comes out. Feed the rest of the chunk again for its next line.
    #[inline]
    pub fn feed<'a>(&'a mut self, chunk: &'a [u8]) -> (usize, Option<ReadLine<'a>>) {
        match memchr::memchr(b'\n', chunk) {
            Some(i) => (i + 1, Some(self.end_line(&chunk[..i]))),
            None => {
                self.hold(chunk);
                (chunk.len(), None)
            }
        }
    }

    /// The stream ends: a partial line left is handed out as [`ReadLine::Truncated`]
    /// ([`ReadLine::Oversized`] when over the limit), and the next byte fed starts a new
    /// line. `None` when the stream ended after a newline (or held nothing).
    pub fn finish(&mut self) -> Option<ReadLine<'_>> {
        self.clear_stale();
        let number = self.lines + 1;
        if let Some(skim) = &mut self.skim {
            skim.reset();
        }
        // A line cut off by the end of the stream is never read again, long or not.
        if let Some(len) = self.skipping.take() {
            self.lines = number;
            return Some(ReadLine::Oversized { number, len });
        }
        if self.partial.is_empty() {
            return None;
        }
        self.lines = number;
        self.stale = true;
        Some(ReadLine::Truncated {
            number,
            bytes: &self.partial,
        })
    }

    /// Keeps `bytes`, the next bytes of the current line (no newline among them).
    fn hold(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.clear_stale();
        if let Some(skim) = &mut self.skim {
            match &mut self.skipping {
                Some(len) => {
                    *len += bytes.len() as u64;
                    skim.pass(bytes);
                }
                None if self.partial.len() + bytes.len() > SKIM_WINDOW => {
                    self.skipping = Some((self.partial.len() + bytes.len()) as u64);
                    skim.pass(&self.partial);
                    skim.pass(bytes);
                    self.partial = Vec::new();
                }
                None => {
                    // Grown by doubling, but never past the window: the bound is memory.
                    let needed = self.partial.len() + bytes.len();
                    if needed > self.partial.capacity() {
                        let to = (self.partial.capacity() * 2).clamp(needed, SKIM_WINDOW);
                        self.partial.reserve_exact(to - self.partial.len());
                    }
                    self.partial.extend_from_slice(bytes);
                }
            }
            return;
        }
        match &mut self.skipping {
            Some(len) => *len += bytes.len() as u64,
            None if self.partial.len() + bytes.len() > MAX_LINE_BYTES => {
                self.skipping = Some((self.partial.len() + bytes.len()) as u64);
                self.partial = Vec::new();
            }
            None => self.partial.extend_from_slice(bytes),
        }
    }

    /// The newline of the current line arrived; `tail` is the line's bytes before it, in
    /// the chunk that holds the newline.
    #[inline]
    fn end_line<'a>(&'a mut self, tail: &'a [u8]) -> ReadLine<'a> {
        self.clear_stale();
        self.lines += 1;
        let number = self.lines;
        if let Some(skipped) = self.skipping.take() {
            let len = skipped + tail.len() as u64;
            if let Some(skim) = &mut self.skim {
                skim.pass(tail);
                let needle = skim.found;
                skim.reset();
                if len <= MAX_LINE_BYTES as u64 {
                    return ReadLine::Long {
                        number,
                        len,
                        needle,
                    };
                }
            }
            return ReadLine::Oversized { number, len };
        }
        if self.partial.is_empty() {
            return if tail.len() > MAX_LINE_BYTES {
                ReadLine::Oversized {
                    number,
                    len: tail.len() as u64,
                }
            } else {
                ReadLine::Line {
                    number,
                    bytes: tail,
                }
            };
        }
        let len = self.partial.len() + tail.len();
        if let Some(skim) = &mut self.skim
            && len > SKIM_WINDOW
        {
            // Held up to the window, over it with the last piece: not copied whole.
            skim.pass(&self.partial);
            skim.pass(tail);
            let needle = skim.found;
            skim.reset();
            self.stale = true;
            return ReadLine::Long {
                number,
                len: len as u64,
                needle,
            };
        }
        if len > MAX_LINE_BYTES {
            self.stale = true;
            return ReadLine::Oversized {
                number,
                len: len as u64,
            };
        }
        self.partial.extend_from_slice(tail);
        self.stale = true;
        ReadLine::Line {
            number,
            bytes: &self.partial,
        }
    }

    /// Forgets the bytes of the current line fed so far.
    fn drop_partial(&mut self) {
        if let Some(skim) = &mut self.skim {
            skim.reset();
        }
        self.skipping = None;
        self.partial.clear();
        self.stale = false;
    }

    #[inline]
    fn clear_stale(&mut self) {
        if self.stale {
            self.stale = false;
            self.partial.clear();
            if self.partial.capacity() > KEEP_BUFFER {
                self.partial = Vec::new();
            }
        }
    }
}

/// Reads lines from an [`io::BufRead`] with [`LineSplitter`]'s rules. A line inside the
/// reader's buffer is handed out borrowed from it.
pub struct LineReader<R: BufRead> {
    inner: R,
    lines: LineSplitter,
    /// Bytes of the line last handed out still to `consume` from `inner` (its bytes were
    /// borrowed from `inner`'s buffer).
    pending: usize,
    bytes_read: u64,
}

impl<R: BufRead> LineReader<R> {
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            lines: LineSplitter::new(),
            pending: 0,
            bytes_read: 0,
        }
    }

    /// Bytes consumed so far, including newlines.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// The next line, `None` at the end of the stream.
    pub fn next_line(&mut self) -> io::Result<Option<ReadLine<'_>>> {
        self.inner.consume(std::mem::take(&mut self.pending));
        // Until the buffer holds the newline, its bytes go to the splitter. The line is
        // taken from a second `fill_buf` (the same bytes, no read) so that no borrow of
        // the buffer outlives a turn of the loop.
        let end = loop {
            let available = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // A line cut by an error is not resumed: the next call starts afresh.
                    self.lines.drop_partial();
                    return Err(e);
                }
            };
            if available.is_empty() {
                return Ok(self.lines.finish());
            }
            match memchr::memchr(b'\n', available) {
                Some(i) => break i,
                None => {
                    let n = available.len();
                    self.lines.hold(available);
                    self.inner.consume(n);
                    self.bytes_read += n as u64;
                }
            }
        };
        let available = self.inner.fill_buf()?;
        self.pending = end + 1;
        self.bytes_read += self.pending as u64;
        Ok(Some(self.lines.end_line(&available[..end])))
    }
}

impl<R: BufRead> Drop for LineReader<R> {
    /// Leaves `inner` just after the last line handed out, as if consumed at once.
    fn drop(&mut self) {
        self.inner.consume(self.pending);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    fn show(line: ReadLine<'_>) -> String {
        match line {
            ReadLine::Line { number, bytes } => {
                format!("{number}:{}", String::from_utf8_lossy(bytes))
            }
            ReadLine::Oversized { number, len } => format!("{number}:oversized {len}"),
            ReadLine::Truncated { number, bytes } => {
                format!("{number}:truncated {}", String::from_utf8_lossy(bytes))
            }
            ReadLine::Long {
                number,
                len,
                needle,
            } => format!("{number}:long {len} needle={needle}"),
        }
    }

    fn collect(data: &[u8]) -> Vec<String> {
        let mut r = LineReader::new(BufReader::with_capacity(7, data));
        let mut out = Vec::new();
        while let Some(line) = r.next_line().unwrap() {
            out.push(show(line));
        }
        out
    }

    /// Feeds `data` to a splitter in chunks of `size` bytes, then finishes the stream.
    fn split_in_chunks(data: &[u8], size: usize) -> Vec<String> {
        let mut s = LineSplitter::new();
        let mut out = Vec::new();
        for mut chunk in data.chunks(size) {
            while !chunk.is_empty() {
                let (used, line) = s.feed(chunk);
                assert!(used > 0 && used <= chunk.len());
                if let Some(line) = line {
                    assert_eq!(chunk[used - 1], b'\n', "a line ends at its newline");
                    out.push(show(line));
                }
                chunk = &chunk[used..];
            }
        }
        if let Some(line) = s.finish() {
            out.push(show(line));
        }
        assert_eq!(s.lines() as usize, out.len());
        out
    }

    #[test]
    fn splits_lines_across_small_buffers() {
        assert_eq!(
            collect(b"abc\n\ndefghijkl\nx"),
            ["1:abc", "2:", "3:defghijkl", "4:truncated x"]
        );
    }

    #[test]
    fn skips_oversized_lines_and_keeps_the_next() {
        let mut data = vec![b'a'; MAX_LINE_BYTES + 5];
        data.extend_from_slice(b"\nok\n");
        let lines = collect(&data);
        assert_eq!(
            lines,
            [
                format!("1:oversized {}", MAX_LINE_BYTES + 5),
                "2:ok".to_string()
            ]
        );
    }

    #[test]
    fn lines_come_out_the_same_for_every_chunk_size() {
        let data = b"abc\n\ndefghijkl\nx\n\n\nlonger line here\nend";
        let expected = [
            "1:abc",
            "2:",
            "3:defghijkl",
            "4:x",
            "5:",
            "6:",
            "7:longer line here",
            "8:truncated end",
        ];
        for size in 1..=8 {
            assert_eq!(split_in_chunks(data, size), expected, "chunks of {size}");
        }
        assert_eq!(split_in_chunks(data, data.len()), expected);
    }

    #[test]
    fn a_line_within_one_chunk_is_borrowed_from_it() {
        let mut s = LineSplitter::new();
        let chunk = b"one\ntwo\n";
        let (used, line) = s.feed(chunk);
        assert_eq!(used, 4);
        let Some(ReadLine::Line { number: 1, bytes }) = line else {
            panic!("{line:?}")
        };
        assert_eq!(bytes.as_ptr(), chunk.as_ptr());
    }

    #[test]
    fn oversized_lines_across_chunks_are_counted_not_held() {
        let mut data = b"a\n".to_vec();
        data.extend(vec![b'x'; MAX_LINE_BYTES + 1]);
        data.extend_from_slice(b"\n");
        data.extend(vec![b'y'; MAX_LINE_BYTES]);
        data.extend_from_slice(b"\nb\n");
        let expected = [
            "1:a".to_string(),
            format!("2:oversized {}", MAX_LINE_BYTES + 1),
            format!("3:{}", "y".repeat(MAX_LINE_BYTES)),
            "4:b".to_string(),
        ];
        for size in [1000, 4096, 64 * 1024, MAX_LINE_BYTES, data.len()] {
            assert_eq!(split_in_chunks(&data, size), expected, "chunks of {size}");
        }
        // Past the limit, nothing of the line is held.
        let mut s = LineSplitter::new();
        s.feed(&vec![b'x'; MAX_LINE_BYTES]);
        assert!(s.partial.len() == MAX_LINE_BYTES);
        s.feed(b"xx");
        assert_eq!(s.partial.capacity(), 0);
        assert_eq!(s.skipping, Some(MAX_LINE_BYTES as u64 + 2));
    }

    #[test]
    fn finish_hands_out_a_partial_line_as_truncated() {
        let mut s = LineSplitter::new();
        assert_eq!(
            s.feed(b"one\ntw"),
            (
                4,
                Some(ReadLine::Line {
                    number: 1,
                    bytes: b"one"
                })
            )
        );
        assert_eq!(s.feed(b"tw"), (2, None));
        assert_eq!(s.feed(b"o"), (1, None));
        assert_eq!(
            s.finish(),
            Some(ReadLine::Truncated {
                number: 2,
                bytes: b"two"
            })
        );
        assert_eq!(s.finish(), None);
        assert_eq!(s.lines(), 2);
        // The next bytes start a new line.
        assert_eq!(
            s.feed(b"three\n"),
            (
                6,
                Some(ReadLine::Line {
                    number: 3,
                    bytes: b"three"
                })
            )
        );
        assert_eq!(s.finish(), None);
    }

    #[test]
    fn finish_hands_out_an_oversized_partial_line_with_its_length() {
        let mut s = LineSplitter::after(10);
        let big = vec![b'z'; MAX_LINE_BYTES / 2 + 1];
        assert_eq!(s.feed(&big), (big.len(), None));
        assert_eq!(s.feed(&big), (big.len(), None));
        assert_eq!(
            s.finish(),
            Some(ReadLine::Oversized {
                number: 11,
                len: 2 * big.len() as u64
            })
        );
        assert_eq!(s.finish(), None);
        assert_eq!(s.lines(), 11);
    }

    #[test]
    fn a_long_held_line_does_not_pin_its_buffer() {
        let mut s = LineSplitter::new();
        s.feed(&vec![b'a'; KEEP_BUFFER + 1]);
        let (_, line) = s.feed(b"\n");
        assert!(matches!(line, Some(ReadLine::Line { number: 1, .. })));
        s.feed(b"b");
        assert!(s.partial.capacity() <= KEEP_BUFFER);
        assert_eq!(
            s.finish(),
            Some(ReadLine::Truncated {
                number: 2,
                bytes: b"b"
            })
        );
    }

    const NEEDLES: &[&str] = &["[Request interrupted by user", "\"isApiErrorMessage\""];

    /// Feeds `data` to a skimming splitter in chunks of `size`; also returns the most
    /// memory it held at any point.
    fn skim_in_chunks(data: &[u8], size: usize) -> (Vec<String>, usize) {
        let mut s = LineSplitter::skimming(NEEDLES);
        let (mut out, mut peak) = (Vec::new(), 0);
        for mut chunk in data.chunks(size) {
            while !chunk.is_empty() {
                let (used, line) = s.feed(chunk);
                if let Some(line) = line {
                    out.push(show(line));
                }
                chunk = &chunk[used..];
                peak = peak.max(s.held());
            }
        }
        if let Some(line) = s.finish() {
            out.push(show(line));
        }
        (out, peak)
    }

    /// A JSON-ish line of `len` bytes with `needle` at byte `at`.
    fn long_line(len: usize, needle: Option<(&str, usize)>) -> Vec<u8> {
        let mut line = vec![b'x'; len];
        line[0] = b'{';
        line[len - 1] = b'}';
        if let Some((n, at)) = needle {
            line[at..at + n.len()].copy_from_slice(n.as_bytes());
        }
        line
    }

    #[test]
    fn skimming_holds_at_most_the_window_while_a_900_kib_line_passes() {
        let mut data = long_line(900 * 1024, None);
        data.extend_from_slice(b"\n{\"a\":1}\n");
        for size in [4096, 64 * 1024, 300 * 1024] {
            let (lines, peak) = skim_in_chunks(&data, size);
            assert_eq!(
                lines,
                [
                    format!("1:long {} needle=false", 900 * 1024),
                    "2:{\"a\":1}".to_string()
                ],
                "chunks of {size}"
            );
            // A chunk larger than the window is the caller's memory, not held.
            assert!(peak <= SKIM_WINDOW + 256, "chunks of {size}: held {peak}");
        }
        // A plain splitter holds the line whole (the rule before skimming).
        let mut plain = LineSplitter::new();
        for chunk in data[..900 * 1024].chunks(4096) {
            plain.feed(chunk);
        }
        assert!(plain.held() >= 900 * 1024);
    }

    #[test]
    fn skimming_finds_a_needle_split_across_two_reads() {
        let needle = NEEDLES[0];
        let len = 200 * 1024;
        let size = 4096;
        // The needle starts a little before a chunk boundary, past the window, cut at
        // every place.
        let boundary = 20 * size;
        for cut in 1..needle.len() {
            let mut data = long_line(len, Some((needle, boundary - cut)));
            data.push(b'\n');
            let (lines, _) = skim_in_chunks(&data, size);
            assert_eq!(lines, [format!("1:long {len} needle=true")], "cut at {cut}");
        }
        // The needle inside the window held before the line turned long.
        let mut data = long_line(len, Some((needle, 100)));
        data.push(b'\n');
        assert_eq!(
            skim_in_chunks(&data, size).0,
            [format!("1:long {len} needle=true")]
        );
        // Split between the last held piece and the one that makes the line long.
        let mut data = long_line(SKIM_WINDOW + 100, Some((needle, SKIM_WINDOW - 5)));
        data.push(b'\n');
        let expected = format!("1:long {} needle=true", SKIM_WINDOW + 100);
        assert_eq!(skim_in_chunks(&data, SKIM_WINDOW).0, [expected]);
    }

    #[test]
    fn skimming_hands_out_a_marker_after_a_long_line() {
        let marker = r#"{"type":"user","message":{"content":"[Request interrupted by user]"}}"#;
        let mut data = long_line(300 * 1024, None);
        data.push(b'\n');
        data.extend_from_slice(marker.as_bytes());
        data.extend_from_slice(b"\nshort\n");
        for size in [1, 977, 4096, 64 * 1024, data.len()] {
            // One chunk of everything: the long line is borrowed whole, so it comes out.
            if size == data.len() {
                continue;
            }
            let (lines, _) = skim_in_chunks(&data, size);
            assert_eq!(
                lines,
                [
                    format!("1:long {} needle=false", 300 * 1024),
                    format!("2:{marker}"),
                    "3:short".to_string()
                ],
                "chunks of {size}"
            );
        }
    }

    #[test]
    fn skimming_finds_a_one_byte_needle() {
        let mut data = vec![b'x'; 100 * 1024];
        data[90 * 1024] = b'!';
        data.push(b'\n');
        let mut s = LineSplitter::skimming(&["!"]);
        let mut out = Vec::new();
        for mut chunk in data.chunks(4096) {
            while !chunk.is_empty() {
                let (used, line) = s.feed(chunk);
                if let Some(line) = line {
                    out.push(show(line));
                }
                chunk = &chunk[used..];
            }
        }
        assert_eq!(out, [format!("1:long {} needle=true", 100 * 1024)]);
    }

    #[test]
    fn skimming_without_needles_is_a_plain_splitter() {
        let mut data = long_line(100 * 1024, None);
        data.push(b'\n');
        let mut s = LineSplitter::skimming(&[]);
        let mut out = Vec::new();
        for mut chunk in data.chunks(4096) {
            while !chunk.is_empty() {
                let (used, line) = s.feed(chunk);
                if let Some(line) = line {
                    out.push(show(line));
                }
                chunk = &chunk[used..];
            }
        }
        assert_eq!(out.len(), 1);
        assert!(out[0].starts_with("1:{x"), "handed out whole");
    }

    #[test]
    fn the_reader_leaves_its_inner_reader_after_the_last_line() {
        let mut data: &[u8] = b"one\ntwo\nthree\n";
        {
            let mut r = LineReader::new(&mut data);
            assert!(matches!(
                r.next_line().unwrap(),
                Some(ReadLine::Line { number: 1, .. })
            ));
            assert!(matches!(
                r.next_line().unwrap(),
                Some(ReadLine::Line { number: 2, .. })
            ));
            assert_eq!(r.bytes_read(), 8);
        }
        assert_eq!(data, b"three\n");
    }
}
