//! The tailer on real files, woken by a real `notify` watcher, in temporary directories.
//!
//! Every test asserts that each valid row is handed out exactly once and in order. Waits
//! are bounded by a deadline for robustness (a slow machine), never timed.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use hooktrack_core::read::ReadLine;
use hooktrack_core::row::{MAX_LINE_BYTES, parse_line};
use hooktrack_live::tail::{Checkpoint, Notice, Prefix, TailError, TailLine, Tailer};

use crate::support::{Wake, envelope_row};

/// What the follower got, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Got {
    Line(Vec<u8>),
    Oversized(u64),
    Cut(Vec<u8>),
}

/// A tailer polled whenever the watcher says something changed in its directory.
struct Follow {
    tailer: Tailer,
    wake: Wake,
    got: Vec<Got>,
    replayed: Vec<Vec<u8>>,
    notices: Vec<Notice>,
    errors: Vec<String>,
}

impl Follow {
    fn new(dir: &Path, tailer: Tailer) -> Self {
        Self {
            tailer,
            wake: Wake::watching(dir),
            got: Vec::new(),
            replayed: Vec::new(),
            notices: Vec::new(),
            errors: Vec::new(),
        }
    }

    fn poll(&mut self) -> Result<(), TailError> {
        let (got, replayed) = (&mut self.got, &mut self.replayed);
        let progress = self.tailer.poll(&mut |l: TailLine<'_>| {
            if l.replay {
                if let ReadLine::Line { bytes, .. } = l.line {
                    replayed.push(bytes.to_vec());
                }
                return;
            }
            got.push(match l.line {
                ReadLine::Line { bytes, .. } => Got::Line(bytes.to_vec()),
                ReadLine::Oversized { len, .. } | ReadLine::Long { len, .. } => Got::Oversized(len),
                ReadLine::Truncated { bytes, .. } => Got::Cut(bytes.to_vec()),
            })
        })?;
        self.notices.extend(progress.notices);
        Ok(())
    }

    /// Polls on every wake-up until `done`, failing after a generous time without
    /// progress (a loaded machine slows the writers down, it does not stop them).
    fn until(&mut self, what: &str, done: impl Fn(&Self) -> bool) {
        let mut deadline = Wake::deadline();
        let mut seen = self.got.len();
        loop {
            if let Err(e) = self.poll() {
                self.errors.push(e.to_string());
            }
            if done(self) {
                return;
            }
            if self.got.len() > seen {
                seen = self.got.len();
                deadline = Wake::deadline();
            }
            assert!(
                self.wake.wait(deadline),
                "no progress towards {what}; got {:?} lines, notices {:?}, errors {:?}",
                self.got.len(),
                self.notices,
                self.errors
            );
        }
    }

    /// The lines that parse as rows, in the order handed out.
    fn rows(&self) -> Vec<String> {
        self.got
            .iter()
            .filter_map(|g| match g {
                Got::Line(b) if parse_line(b).is_ok() => {
                    Some(String::from_utf8_lossy(b).into_owned())
                }
                _ => None,
            })
            .collect()
    }

    fn has_rows(&self, n: usize) -> bool {
        self.rows().len() >= n
    }
}

fn rows(range: std::ops::Range<u64>) -> Vec<String> {
    range.map(envelope_row).collect()
}

fn append(path: &Path, rows: &[String]) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open for append");
    for r in rows {
        writeln!(f, "{r}").expect("append");
    }
}

fn store(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("events.ndjson")
}

#[test]
fn a_writer_appending_one_byte_at_a_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = store(&dir);
    let expected = rows(1..41);
    let mut follow = Follow::new(dir.path(), Tailer::new(&path));
    let writer = {
        let path = path.clone();
        let expected = expected.clone();
        std::thread::spawn(move || {
            let mut f = File::create(&path).expect("create");
            for row in &expected {
                for byte in row.bytes().chain([b'\n']) {
                    f.write_all(&[byte]).expect("write one byte");
                    std::thread::yield_now();
                }
            }
        })
    };
    follow.until("40 rows", |f| f.got.len() >= expected.len());
    writer.join().expect("writer thread");
    follow.poll().expect("final poll");
    // Whole lines only, once each, in order: a partial line is never handed out.
    assert_eq!(follow.rows(), expected);
    assert_eq!(follow.got.len(), expected.len());
    assert_eq!(
        follow.tailer.offset(),
        fs::metadata(&path).expect("stat").len()
    );
}

#[test]
fn truncation_restarts_at_zero() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = store(&dir);
    append(&path, &rows(1..6));
    let mut follow = Follow::new(dir.path(), Tailer::new(&path));
    follow.until("the first rows", |f| f.has_rows(5));
    // Truncated and rewritten shorter before the tailer looks again.
    let after = rows(100..102);
    fs::write(
        &path,
        after.iter().map(|r| format!("{r}\n")).collect::<String>(),
    )
    .expect("rewrite");
    follow.until("the rows after truncation", |f| f.has_rows(7));
    let mut expected = rows(1..6);
    expected.extend(after);
    assert_eq!(follow.rows(), expected);
    assert!(
        follow
            .notices
            .iter()
            .any(|n| matches!(n, Notice::Truncated { .. })),
        "{:?}",
        follow.notices
    );
}

#[test]
fn rotation_by_rename_drains_the_old_file_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = store(&dir);
    let mut writer = File::create(&path).expect("create");
    for r in rows(1..4) {
        writeln!(writer, "{r}").expect("write");
    }
    let mut follow = Follow::new(dir.path(), Tailer::new(&path));
    follow.until("the first rows", |f| f.has_rows(3));
    // Rotate: the writer still holds the old file and writes a little more to it (plus
    // half a line it never finishes) before the new file appears.
    fs::rename(&path, dir.path().join("events.ndjson.1")).expect("rename");
    for r in rows(4..6) {
        writeln!(writer, "{r}").expect("write to the rotated file");
    }
    write!(writer, "{{\"half\":").expect("write half a line");
    append(&path, &rows(6..9));
    follow.until("the rows of both files", |f| f.has_rows(8));
    assert_eq!(follow.rows(), rows(1..9));
    assert!(follow.got.contains(&Got::Cut(b"{\"half\":".to_vec())));
    assert!(
        follow
            .notices
            .iter()
            .any(|n| matches!(n, Notice::Replaced { drained } if *drained > 0)),
        "{:?}",
        follow.notices
    );
}

#[test]
fn delete_and_recreate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = store(&dir);
    let mut writer = File::create(&path).expect("create");
    for r in rows(1..3) {
        writeln!(writer, "{r}").expect("write");
    }
    let mut follow = Follow::new(dir.path(), Tailer::new(&path));
    follow.until("the first rows", |f| f.has_rows(2));
    // Deleted while the writer still appends to it: those rows are drained.
    fs::remove_file(&path).expect("remove");
    writeln!(writer, "{}", envelope_row(3)).expect("write to the deleted file");
    drop(writer);
    follow.until("the removal", |f| {
        f.notices
            .iter()
            .any(|n| matches!(n, Notice::Removed { .. }))
    });
    assert_eq!(follow.rows(), rows(1..4));
    // Missing is "no events yet", not an error.
    follow.poll().expect("a missing file is not an error");
    append(&path, &rows(4..6));
    follow.until("the recreated file's rows", |f| f.has_rows(5));
    // Deleted and recreated between two polls: a replacement.
    fs::remove_file(&path).expect("remove again");
    append(&path, &rows(6..8));
    follow.until("the second recreation", |f| f.has_rows(7));
    assert_eq!(follow.rows(), rows(1..8));
    assert!(follow.errors.is_empty(), "{:?}", follow.errors);
}

#[test]
fn a_ten_mib_garbage_line_is_skipped_and_the_rows_after_it_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = store(&dir);
    append(&path, &rows(1..4));
    let mut follow = Follow::new(dir.path(), Tailer::new(&path));
    follow.until("the first rows", |f| f.has_rows(3));
    let garbage_len: u64 = 10 * 1024 * 1024;
    let mut f = OpenOptions::new().append(true).open(&path).expect("open");
    // Written in pieces, polled in between: the line grows past the limit while held.
    let piece = vec![b'x'; 512 * 1024];
    for _ in 0..(garbage_len / piece.len() as u64) {
        f.write_all(&piece).expect("garbage");
        follow.poll().expect("poll during the garbage");
    }
    f.write_all(b"\n").expect("newline");
    for r in rows(4..7) {
        writeln!(f, "{r}").expect("write");
    }
    follow.until("the rows after the garbage", |f| f.has_rows(6));
    assert_eq!(follow.rows(), rows(1..7));
    let oversized: Vec<_> = follow
        .got
        .iter()
        .filter(|g| matches!(g, Got::Oversized(_)))
        .collect();
    assert_eq!(oversized, [&Got::Oversized(garbage_len)]);
    assert!(garbage_len > MAX_LINE_BYTES as u64);
}

#[test]
fn invalid_utf8_and_nul_bytes_are_lines_like_any_other() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = store(&dir);
    let mut f = File::create(&path).expect("create");
    let mut bytes = Vec::new();
    for (i, bad) in [
        &b"\xff\xfe\xfd"[..],
        b"\0\0\0\0",
        b"{\"hook_event_name\":\"Stop\0\"}",
        b"{\"event\":\"Stop\",\"x\":\"\xc3\x28\"}",
    ]
    .iter()
    .enumerate()
    {
        bytes.extend_from_slice(envelope_row(i as u64 + 1).as_bytes());
        bytes.push(b'\n');
        bytes.extend_from_slice(bad);
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(envelope_row(5).as_bytes());
    bytes.push(b'\n');
    f.write_all(&bytes).expect("write");
    let mut follow = Follow::new(dir.path(), Tailer::new(&path));
    follow.until("every line", |f| f.got.len() >= 9);
    assert_eq!(follow.rows(), rows(1..6));
    assert_eq!(follow.got.len(), 9);
}

#[test]
fn an_unreadable_store_is_an_error_until_it_is_readable_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = store(&dir);
    append(&path, &rows(1..3));
    let mut follow = Follow::new(dir.path(), Tailer::new(&path));
    if deny_reading(&path) {
        // Not opened yet, and unreadable: an error, at every poll, until restored.
        let e = follow.poll().expect_err("an unreadable file is an error");
        assert!(matches!(e, TailError::Open { .. }), "{e}");
        assert!(follow.poll().is_err());
        allow_reading(&path);
        follow.until("the rows once readable", |f| f.has_rows(2));
        assert_eq!(follow.rows(), rows(1..3));
        return;
    }
    // Running with privileges that read whatever the mode says (root): make the path
    // unreadable another way, by putting a directory where the file was.
    eprintln!("file modes do not deny reading here (root?): replacing the file with a directory");
    follow.until("the first rows", |f| f.has_rows(2));
    fs::remove_file(&path).expect("remove");
    fs::create_dir(&path).expect("a directory in its place");
    let e = loop {
        match follow.poll() {
            Err(e) => break e,
            // The old file is drained first (a removal), then the directory is found.
            Ok(()) => assert!(follow.wake.wait(Wake::deadline()), "no error reported"),
        }
    };
    assert!(matches!(e, TailError::NotAFile { .. }), "{e}");
    assert!(
        follow.poll().is_err(),
        "the error persists while the cause does"
    );
    fs::remove_dir(&path).expect("remove the directory");
    append(&path, &rows(3..5));
    follow.until("the rows once readable", |f| f.has_rows(4));
    assert_eq!(follow.rows(), rows(1..5));
}

/// Makes the file unreadable by mode; `false` if the process reads it anyway.
fn deny_reading(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o000)).expect("chmod 000");
    if File::open(path).is_ok() {
        allow_reading(path);
        return false;
    }
    true
}

fn allow_reading(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o600)).expect("chmod 600");
}

#[test]
fn a_restart_in_the_middle_of_a_line_resumes_without_loss_or_repeat() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = store(&dir);
    let cp_path = dir.path().join("state").join("tail.checkpoint");
    fs::create_dir_all(cp_path.parent().expect("parent")).expect("mkdir");
    let all = rows(1..8);
    append(&path, &all[..4]);
    let half = all[4].len() / 2;
    let mut f = OpenOptions::new().append(true).open(&path).expect("open");
    f.write_all(&all[4].as_bytes()[..half])
        .expect("half a line");

    let mut before = Follow::new(dir.path(), Tailer::new(&path));
    before.until("the whole lines", |f| f.has_rows(4));
    let cp = before.tailer.checkpoint().expect("a checkpoint");
    let whole: u64 = all[..4].iter().map(|r| r.len() as u64 + 1).sum();
    assert_eq!(
        cp.offset, whole,
        "the checkpoint stops before the partial line"
    );
    cp.save(&cp_path).expect("save");
    let delivered_before = before.rows();
    drop(before);

    // The line is finished and more rows arrive while nobody is reading.
    f.write_all(&all[4].as_bytes()[half..])
        .expect("rest of the line");
    f.write_all(b"\n").expect("newline");
    drop(f);
    append(&path, &all[5..]);

    let cp = Checkpoint::load(&cp_path).expect("load").expect("present");
    let mut after = Follow::new(dir.path(), Tailer::resume(&path, cp, Prefix::Skip));
    after.until("the rows after the checkpoint", |f| f.has_rows(3));
    assert!(after.notices.contains(&Notice::Resumed { offset: whole }));
    let mut delivered = delivered_before.clone();
    delivered.extend(after.rows());
    assert_eq!(delivered, all);

    // Replaying the prefix flags it, and still hands out only the new lines as new.
    let cp = Checkpoint::load(&cp_path).expect("load").expect("present");
    let mut replay = Follow::new(dir.path(), Tailer::resume(&path, cp, Prefix::Replay));
    replay.until("the rows after the checkpoint", |f| f.has_rows(3));
    assert_eq!(replay.replayed.len(), 4);
    assert_eq!(replay.rows(), all[4..]);
}

#[test]
fn a_checkpoint_of_another_file_is_not_trusted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = store(&dir);
    append(&path, &rows(1..4));
    let mut first = Follow::new(dir.path(), Tailer::new(&path));
    first.until("the rows", |f| f.has_rows(3));
    let cp = first.tailer.checkpoint().expect("checkpoint");
    drop(first);

    // Rewritten in place (same inode), longer, with another first line.
    let other = rows(50..60);
    fs::write(
        &path,
        other.iter().map(|r| format!("{r}\n")).collect::<String>(),
    )
    .expect("rewrite");
    let mut again = Follow::new(dir.path(), Tailer::resume(&path, cp, Prefix::Skip));
    again.until("the new rows", |f| f.has_rows(10));
    assert_eq!(again.rows(), other);
    assert!(
        again.notices.iter().any(
            |n| matches!(n, Notice::CheckpointRejected { reason } if reason.contains("first line"))
        ),
        "{:?}",
        again.notices
    );

    // Replaced by another file: another inode.
    let cp = again.tailer.checkpoint().expect("checkpoint");
    drop(again);
    fs::remove_file(&path).expect("remove");
    append(&path, &rows(70..90));
    let mut third = Follow::new(dir.path(), Tailer::resume(&path, cp, Prefix::Skip));
    third.until("the new rows", |f| f.has_rows(20));
    assert_eq!(third.rows(), rows(70..90));
    assert!(
        third
            .notices
            .iter()
            .any(|n| matches!(n, Notice::CheckpointRejected { .. })),
        "{:?}",
        third.notices
    );
}

#[test]
fn a_missing_file_is_no_events_yet() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = store(&dir);
    let mut follow = Follow::new(dir.path(), Tailer::new(&path));
    follow.poll().expect("missing is not an error");
    assert!(follow.got.is_empty());
    assert_eq!(follow.tailer.checkpoint(), None);
    append(&path, &rows(1..3));
    follow.until("the rows", |f| f.has_rows(2));
    assert_eq!(follow.rows(), rows(1..3));
}
