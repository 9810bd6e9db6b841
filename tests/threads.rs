//! `replay_threaded`: the same bytes out as a replay on one thread, whatever the input.

use std::io::{self, BufRead, BufReader, Read};

use hooktrack::{Format, ProviderChoice, ReplayError};

use crate::support::campaigns;

const FORMATS: [Format; 4] = [Format::Text, Format::Json, Format::Ndjson, Format::Html];

fn one_thread(input: impl BufRead + Send, format: Format) -> (String, Result<u64, String>) {
    let mut out = Vec::new();
    let result = hooktrack::replay(input, "input", ProviderChoice::Auto, format, &mut out);
    (lossy(out), result.map(|r| r.events).map_err(|e| chain(&e)))
}

fn two_threads(input: impl BufRead + Send, format: Format) -> (String, Result<u64, String>) {
    let mut out = Vec::new();
    let result =
        hooktrack::replay_threaded(input, "input", ProviderChoice::Auto, format, 2, &mut out);
    (lossy(out), result.map(|r| r.events).map_err(|e| chain(&e)))
}

fn lossy(out: Vec<u8>) -> String {
    String::from_utf8(out).expect("output is UTF-8")
}

fn chain(e: &ReplayError) -> String {
    hooktrack_core::diagnostics::error_chain(e)
}

#[test]
fn two_threads_write_what_one_writes_for_every_campaign() {
    for path in campaigns() {
        let bytes = std::fs::read(&path).expect("campaign");
        for format in FORMATS {
            assert_eq!(
                two_threads(&bytes[..], format),
                one_thread(&bytes[..], format),
                "{} as {format:?}",
                path.display()
            );
        }
    }
}

/// Lines of the long input: a few read-ahead batches (8,192 lines each).
const LONG_INPUT_LINES: usize = 20_000;

/// Every campaign back to back, many times over (several read-ahead batches), with the
/// lines a replay skips in between: garbage, bad UTF-8, an oversized line, and a last
/// line without its newline.
fn long_mixed_input() -> Vec<u8> {
    let mut bytes = Vec::new();
    let newlines = |b: &[u8]| b.iter().filter(|&&c| c == b'\n').count();
    for round in 0..1_000 {
        if newlines(&bytes) > LONG_INPUT_LINES {
            break;
        }
        for path in campaigns() {
            bytes.extend(std::fs::read(&path).expect("campaign"));
            bytes.extend_from_slice(b"not json\n{\"a\":\xff}\n[1,2]\n");
            if round == 2 {
                bytes.extend(std::iter::repeat_n(b'x', 1_100_000));
                bytes.push(b'\n');
            }
        }
    }
    bytes.extend_from_slice(br#"{"hook_event_name":"Stop","session_id":"s"}"#);
    bytes
}

#[test]
fn two_threads_write_what_one_writes_across_batches_and_skipped_lines() {
    let bytes = long_mixed_input();
    assert!(bytes.iter().filter(|&&b| b == b'\n').count() > LONG_INPUT_LINES);
    for format in FORMATS {
        let (out, events) = two_threads(BufReader::with_capacity(4096, &bytes[..]), format);
        assert_eq!((out, events), one_thread(&bytes[..], format), "{format:?}");
    }
}

/// A reader that fails after `left` bytes.
struct FailsAfter<'a> {
    bytes: &'a [u8],
    left: usize,
}

impl Read for FailsAfter<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Err(io::Error::other("disk on fire"));
        }
        let n = buf.len().min(self.left).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        self.left -= n;
        Ok(n)
    }
}

#[test]
fn a_read_error_mid_stream_ends_both_after_the_same_line() {
    let bytes = long_mixed_input();
    let cut = bytes.len() / 3;
    for format in [Format::Ndjson, Format::Text] {
        let one = one_thread(
            BufReader::new(FailsAfter {
                bytes: &bytes,
                left: cut,
            }),
            format,
        );
        let two = two_threads(
            BufReader::new(FailsAfter {
                bytes: &bytes,
                left: cut,
            }),
            format,
        );
        assert!(
            one.1.as_ref().is_err_and(|e| e.contains("disk on fire")),
            "{:?}",
            one.1
        );
        assert!(!one.0.is_empty());
        assert_eq!(two, one, "{format:?}");
    }
}
