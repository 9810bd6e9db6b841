//! `unsafe` in production code stays rare and argued: at most [`MAX_UNSAFE`] uses of the
//! keyword in the crates' sources (tests and benches aside), each right under a
//! `// SAFETY:` comment that says why it is sound. Everything with a safe equivalent goes
//! through rustix (`docs/ARCHITECTURE.md`, "Unsafe code").
//!
//! Every `unsafe` keyword counts once, whatever it opens: a block, an `unsafe fn`, `impl`,
//! `trait` or `extern`, or an unsafe attribute (`#[unsafe(no_mangle)]`). Comments, string
//! and character literals are left out, and so is what `#[cfg(test)]` gates (an inline
//! test module, or the file a `#[cfg(test)] mod name;` names).

use std::path::{Path, PathBuf};

/// The most `unsafe` production code may hold.
const MAX_UNSAFE: usize = 10;

/// One use of the keyword: where, and whether a `SAFETY:` comment argues it.
#[derive(Debug, PartialEq, Eq)]
struct Use {
    line: usize,
    argued: bool,
}

/// Production sources: `build.rs`, `src/` and each member crate's `src/`, sorted.
fn production_files(root: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![root.join("src")];
    let crates = std::fs::read_dir(root.join("crates")).expect("crates/");
    for entry in crates {
        dirs.push(entry.expect("an entry of crates/").path().join("src"));
    }
    let mut files = vec![root.join("build.rs")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.retain(|f| f.is_file());
    files.sort();
    files
}

/// `src` with comments and the insides of string and character literals blanked (spaces;
/// newlines kept, so byte offsets and line numbers stay those of `src`).
fn code_only(src: &str) -> Vec<u8> {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for byte in &mut out[from..to.min(b.len())] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
    };
    let ident = |i: usize| i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (1, i + 2);
            while j < b.len() && depth > 0 {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if (b[i] == b'r' || rest.starts_with(b"br")) && !ident(i) {
            // A raw string `r#"…"#` (or `br`), else an identifier starting with r.
            let start = if b[i] == b'r' { i + 1 } else { i + 2 };
            let hashes = b[start..].iter().take_while(|&&c| c == b'#').count();
            if b.get(start + hashes) == Some(&b'"') {
                let mut close = vec![b'"'];
                close.extend(std::iter::repeat_n(b'#', hashes));
                let body = start + hashes + 1;
                let end = b[body..]
                    .windows(close.len())
                    .position(|w| w == close.as_slice())
                    .map_or(b.len(), |n| body + n + close.len());
                blank(&mut out, body, end);
                i = end;
            } else {
                i += 1;
            }
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '\u{…}', 'é'), else a lifetime or label.
            let end = if b.get(i + 1) == Some(&b'\\') {
                // Past the escaped character, which may be a quote itself.
                b.get(i + 3..)
                    .and_then(|r| r.iter().position(|&c| c == b'\''))
                    .map(|n| i + 3 + n)
            } else {
                let width = src
                    .get(i + 1..)
                    .and_then(|s| s.chars().next())
                    .map_or(1, char::len_utf8);
                (b.get(i + 1 + width) == Some(&b'\'')).then_some(i + 1 + width)
            };
            match end {
                Some(end) => {
                    blank(&mut out, i + 1, end);
                    i = end + 1;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The byte ranges `#[cfg(test)]` gates in `code` (blanked source), and the modules
/// declared out of line there (`#[cfg(test)] mod name;`).
fn test_only(code: &[u8]) -> (Vec<std::ops::Range<usize>>, Vec<String>) {
    const ATTR: &[u8] = b"#[cfg(test)]";
    let (mut ranges, mut modules) = (Vec::new(), Vec::new());
    let mut from = 0;
    while let Some(at) = code[from..].windows(ATTR.len()).position(|w| w == ATTR) {
        let start = from + at;
        let mut i = start + ATTR.len();
        // The item: up to its `;`, or through its braced body.
        let mut depth = 0usize;
        while i < code.len() {
            match code[i] {
                b';' if depth == 0 => break,
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        let item = String::from_utf8_lossy(&code[start + ATTR.len()..i.min(code.len())]);
        let words: Vec<&str> = item.split_whitespace().collect();
        if let [.., "mod", name] = words.as_slice() {
            modules.push((*name).to_owned());
        }
        ranges.push(start..i + 1);
        from = i.min(code.len());
    }
    (ranges, modules)
}

/// The uses of `unsafe` in one production file's source (`src`), test-gated code aside.
fn unsafe_uses(src: &str) -> Vec<Use> {
    let code = code_only(src);
    let (tests, _) = test_only(&code);
    let lines: Vec<&str> = src.lines().collect();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut uses = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].windows(6).position(|w| w == b"unsafe") {
        let i = from + at;
        from = i + 6;
        let whole = (i == 0 || !word(code[i - 1])) && code.get(i + 6).is_none_or(|&c| !word(c));
        if !whole || tests.iter().any(|r| r.contains(&i)) {
            continue;
        }
        let line = code[..i].iter().filter(|&&c| c == b'\n').count() + 1;
        // The comment and attribute lines right above the use.
        let argued = lines[..line - 1]
            .iter()
            .rev()
            .map(|l| l.trim_start())
            .take_while(|l| l.starts_with("//") || l.starts_with("#["))
            .any(|l| l.starts_with("// SAFETY: "));
        uses.push(Use { line, argued });
    }
    uses
}

#[test]
fn production_code_has_few_unsafe_blocks_and_each_is_argued() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = production_files(root);
    assert!(files.len() > 50, "found only {} source files", files.len());
    // Files only a `#[cfg(test)] mod name;` declares are tests.
    let mut test_files = Vec::new();
    for file in &files {
        let src = std::fs::read_to_string(file).expect("a source file");
        let (_, modules) = test_only(&code_only(&src));
        let dir = match file.file_stem().and_then(|s| s.to_str()) {
            Some("mod" | "lib" | "main") => file.parent().map(Path::to_path_buf),
            _ => Some(file.with_extension("")),
        };
        for name in modules {
            if let Some(dir) = &dir {
                test_files.push(dir.join(format!("{name}.rs")));
                test_files.push(dir.join(&name).join("mod.rs"));
            }
        }
    }
    let mut all = Vec::new();
    let mut unargued = Vec::new();
    for file in files.iter().filter(|f| !test_files.contains(f)) {
        let src = std::fs::read_to_string(file).expect("a source file");
        let shown = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        for u in unsafe_uses(&src) {
            let place = format!("{shown}:{}", u.line);
            if !u.argued {
                unargued.push(place.clone());
            }
            all.push(place);
        }
    }
    assert!(
        all.len() <= MAX_UNSAFE,
        "{} uses of `unsafe` in production code, at most {MAX_UNSAFE}: use rustix's safe call \
         where there is one (docs/ARCHITECTURE.md, \"Unsafe code\"):\n{}",
        all.len(),
        all.join("\n")
    );
    assert!(
        unargued.is_empty(),
        "`unsafe` without a `// SAFETY:` comment right above it (why it is sound):\n{}",
        unargued.join("\n")
    );
}

/// The count sees what it must and nothing else: literals, comments, lifetimes and test
/// code are not uses; a use without its comment is reported by line.
#[test]
fn the_count_skips_literals_comments_and_test_code() {
    let src = r##"//! Mentions `unsafe { }` in a doc comment.
fn f<'a>(s: &'a str) -> char {
    let _ = "unsafe { in a string }";
    let _ = r#"unsafe " { raw"#;
    let _ = ('"', '\'', b'\\'); /* unsafe { nested /* unsafe */ } */
    // SAFETY: argued.
    let x = unsafe { g() };
    let y = unsafe { h() };
    not_unsafe_ident();
    'x'
}

// SAFETY: an attribute counts too, argued above the attributes before it.
#[cfg(not(test))]
#[unsafe(no_mangle)]
pub extern "C" fn main() {}

#[cfg(test)]
mod tests {
    fn t() { let _ = unsafe { k() }; }
}

#[cfg(test)]
mod more;

unsafe fn last() {}
"##;
    assert_eq!(
        unsafe_uses(src),
        vec![
            Use {
                line: 7,
                argued: true
            },
            Use {
                line: 8,
                argued: false
            },
            Use {
                line: 15,
                argued: true
            },
            Use {
                line: 26,
                argued: false
            },
        ]
    );
    let (_, modules) = test_only(&code_only(src));
    assert_eq!(modules, ["more"]);
}
