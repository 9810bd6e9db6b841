//! Splits a byte stream into lines with a hard length limit.
//!
//! [`LineSplitter`] holds the rules, push-based: it is fed chunks of the stream as they
//! come (from a file read by offset, a reader's buffer, a pipe) and hands out each line
//! once its newline arrives. [`LineReader`] pulls from an [`io::BufRead`] through it.
//!
//! A line over [`MAX_LINE_BYTES`] is skipped while it is read: its bytes are never held,
//! and the lines after it are not lost.

use std::io::{self, BufRead};

use crate::row::MAX_LINE_BYTES;

/// A partial-line buffer grown past this is released after its line, so one long line
/// does not pin memory for the life of the splitter.
const KEEP_BUFFER: usize = 256 * 1024;

/// One line read from the stream. `number` is 1-based.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadLine<'a> {
    /// A whole line, without its newline.
    Line { number: u64, bytes: &'a [u8] },
    /// A line over the limit; `len` is its full length in bytes.
    Oversized { number: u64, len: u64 },
    /// The stream ended in the middle of a line (no final newline).
    Truncated { number: u64, bytes: &'a [u8] },
}

impl ReadLine<'_> {
    pub fn number(&self) -> u64 {
        match self {
            ReadLine::Line { number, .. }
            | ReadLine::Oversized { number, .. }
            | ReadLine::Truncated { number, .. } => *number,
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
