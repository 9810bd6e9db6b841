//! The json report's layout: serde_json's `PrettyFormatter` (two spaces a level), with
//! each line break and its indentation written in one piece instead of a write per
//! level, for a ledger of many turns is mostly line breaks (a test holds the bytes to
//! serde_json's own).

use std::io::{self, Write};

use serde_json::ser::Formatter;

/// A comma, a line break and the indentation of [`LEVELS`] levels: every break is a
/// slice of it (deeper ones add the rest a level at a time).
const BREAK: &[u8] = b",\n                                                                ";
const LEVELS: usize = (BREAK.len() - 2) / 2;

/// serde_json's `PrettyFormatter::new()`, writing the same bytes.
#[derive(Debug, Default)]
pub(super) struct Pretty {
    depth: usize,
    has_value: bool,
}

impl Pretty {
    /// A value nested `depth` levels into a document written around it.
    pub(super) fn at_depth(depth: usize) -> Self {
        Pretty {
            depth,
            has_value: false,
        }
    }

    /// A line break (after a comma unless `first`) and the indentation of the depth.
    fn line<W: ?Sized + Write>(&self, out: &mut W, first: bool) -> io::Result<()> {
        let levels = self.depth.min(LEVELS);
        out.write_all(&BREAK[usize::from(first)..2 + 2 * levels])?;
        for _ in levels..self.depth {
            out.write_all(b"  ")?;
        }
        Ok(())
    }

    fn close<W: ?Sized + Write>(&mut self, out: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            self.line(out, true)?;
        }
        out.write_all(bracket)
    }
}

impl Formatter for Pretty {
    fn begin_array<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        out.write_all(b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.close(out, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, out: &mut W, first: bool) -> io::Result<()> {
        self.line(out, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _out: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        out.write_all(b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.close(out, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, out: &mut W, first: bool) -> io::Result<()> {
        self.line(out, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        out.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _out: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn pretty(value: &Value) -> String {
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut out, Pretty::default());
        serde::Serialize::serialize(value, &mut ser).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_bytes_are_serde_jsons_pretty_ones_at_every_depth() {
        let mut deep = json!({"leaf": [1, {}, [], "s", null, {"k": true}]});
        // Past the levels one slice of `BREAK` holds.
        for level in 0..LEVELS + 4 {
            deep = if level % 2 == 0 {
                json!({ "a": deep, "b": [], "c": {}, "d": [1, {"k": 2}] })
            } else {
                json!([deep, {"x": "y\n\u{1b}"}, []])
            };
            let expected = serde_json::to_string_pretty(&deep).unwrap();
            assert_eq!(pretty(&deep), expected, "level {level}");
        }
        for scalar in [json!(1), json!("x"), json!([]), json!({}), json!(null)] {
            assert_eq!(
                pretty(&scalar),
                serde_json::to_string_pretty(&scalar).unwrap()
            );
        }
    }
}
