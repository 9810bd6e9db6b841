//! Splits a byte stream into lines with a hard length limit.
//!
//! A line over [`MAX_LINE_BYTES`] is skipped while it is read: its bytes are never held,
//! and the lines after it are not lost.

use std::io::{self, BufRead};

use crate::row::MAX_LINE_BYTES;

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

pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    number: u64,
    bytes_read: u64,
}

impl<R: BufRead> LineReader<R> {
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            buf: Vec::new(),
            number: 0,
            bytes_read: 0,
        }
    }

    /// Bytes consumed so far, including newlines.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// The next line, `None` at the end of the stream.
    pub fn next_line(&mut self) -> io::Result<Option<ReadLine<'_>>> {
        self.buf.clear();
        let mut len: u64 = 0;
        let mut oversized = false;
        loop {
            let available = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                if len == 0 {
                    return Ok(None);
                }
                self.number += 1;
                let number = self.number;
                return Ok(Some(if oversized {
                    ReadLine::Oversized { number, len }
                } else {
                    ReadLine::Truncated {
                        number,
                        bytes: &self.buf,
                    }
                }));
            }
            let (chunk, found_newline) = match memchr::memchr(b'\n', available) {
                Some(i) => (i, true),
                None => (available.len(), false),
            };
            if !oversized {
                if self.buf.len() + chunk > MAX_LINE_BYTES {
                    oversized = true;
                    self.buf.clear();
                } else {
                    self.buf.extend_from_slice(&available[..chunk]);
                }
            }
            len += chunk as u64;
            let consumed = chunk + usize::from(found_newline);
            self.inner.consume(consumed);
            self.bytes_read += consumed as u64;
            if found_newline {
                self.number += 1;
                let number = self.number;
                return Ok(Some(if oversized {
                    ReadLine::Oversized { number, len }
                } else {
                    ReadLine::Line {
                        number,
                        bytes: &self.buf,
                    }
                }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    fn collect(data: &[u8]) -> Vec<String> {
        let mut r = LineReader::new(BufReader::with_capacity(7, data));
        let mut out = Vec::new();
        while let Some(line) = r.next_line().unwrap() {
            out.push(match line {
                ReadLine::Line { number, bytes } => {
                    format!("{number}:{}", String::from_utf8_lossy(bytes))
                }
                ReadLine::Oversized { number, len } => format!("{number}:oversized {len}"),
                ReadLine::Truncated { number, bytes } => {
                    format!("{number}:truncated {}", String::from_utf8_lossy(bytes))
                }
            });
        }
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
}
