//! The pages of `hooktrack replay --format html` loaded in a real headless Chromium: no
//! console error, the page's script drew what the file holds (counted as
//! `tests/html.rs` counts them), and a screenshot of each under
//! `target/tmp/html-screenshots/`. `HOOKTRACK_CHROMIUM` names another binary than
//! `/usr/bin/chromium`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::html::{
    KINDS, all_campaigns, count_kind, expected, replay, replay_store, two_session_store,
};
use crate::util::PATIENCE;

/// Where Chromium is, or why the browser half is skipped.
pub(crate) fn chromium() -> Result<PathBuf, String> {
    let candidate = std::env::var_os("HOOKTRACK_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    if candidate.is_file() {
        Ok(candidate)
    } else {
        Err(format!(
            "no Chromium at {} (apt-get install chromium)",
            candidate.display()
        ))
    }
}

/// Runs headless Chromium on `page` with `args`, killed (its whole process group) if it
/// takes longer than [`PATIENCE`] (a bound for a loaded machine). Returns stdout.
fn run_chromium(chromium: &Path, page: &Path, args: &[String]) -> Vec<u8> {
    use std::os::unix::process::CommandExt;
    let profile = tempfile::tempdir().expect("a profile directory");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--no-first-run",
            "--no-default-browser-check",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("start chromium");
    let pid = child.id();
    // Read the pipes on threads, so a full pipe cannot stall the browser.
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut buf);
        buf
    });
    let err = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stderr, &mut buf);
        buf
    });
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for chromium") {
            break status;
        }
        if Instant::now() > deadline {
            // SAFETY: signals the process group of the browser this test started.
            unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
            let _ = child.wait();
            panic!(
                "chromium did not finish within {PATIENCE:?} on {}",
                page.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = out.join().expect("stdout reader");
    let stderr = err.join().expect("stderr reader");
    assert!(
        status.success(),
        "chromium failed ({status}) on {}: {}",
        page.display(),
        String::from_utf8_lossy(&stderr)
    );
    stdout
}

/// The value of `name="..."` in the first tag that starts with `tag`.
fn attribute(dom: &str, tag: &str, name: &str) -> Option<String> {
    let start = dom.find(tag)?;
    let end = start + dom[start..].find('>')?;
    let element = &dom[start..end];
    let key = format!(" {name}=\"");
    let at = element.find(&key)? + key.len();
    let len = element[at..].find('"')?;
    Some(element[at..at + len].to_owned())
}

fn chromium_loads_every_page_without_errors_and_sees_every_mark() {
    let chromium = match chromium() {
        Ok(path) => path,
        Err(reason) => panic!("Chromium, found before the test, is gone: {reason}"),
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-screenshots");
    std::fs::create_dir_all(&shots).expect("the screenshot directory");
    for path in all_campaigns(dir.path()) {
        let want = expected(&path);
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("a file name")
            .to_owned();
        let page = dir.path().join(format!("{stem}.html"));
        std::fs::write(&page, replay(&path, "html")).expect("write the page");

        let dom = String::from_utf8(run_chromium(&chromium, &page, &["--dump-dom".to_owned()]))
            .expect("the DOM is UTF-8");
        let check = "<output id=\"hooktrack-check\"";
        assert_eq!(
            attribute(&dom, check, "data-script").as_deref(),
            Some("ok"),
            "the page's script did not finish on {stem}"
        );
        let errors_at = dom
            .find("<pre id=\"hooktrack-errors\">")
            .expect("the error list");
        let errors = &dom[errors_at
            ..dom[errors_at..]
                .find("</pre>")
                .map_or(dom.len(), |e| errors_at + e)];
        assert_eq!(
            attribute(&dom, check, "data-errors").as_deref(),
            Some("0"),
            "errors in the page of {stem}: {errors}"
        );
        for kind in KINDS {
            let drawn: usize = attribute(&dom, check, &format!("data-{kind}"))
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no {kind} count on {stem}"));
            assert_eq!(
                drawn,
                want.get(kind),
                "{kind} marks the browser found on {stem}"
            );
            assert_eq!(
                count_kind(&dom, kind),
                want.get(kind),
                "{kind} in the DOM of {stem}"
            );
        }
        // The markup-looking payload text stayed text in the live DOM too.
        assert!(
            !dom.contains("<img") && !dom.contains("<b>"),
            "markup from a payload on {stem}"
        );

        let shot = shots.join(format!("{stem}.png"));
        let _ = std::fs::remove_file(&shot);
        run_chromium(
            &chromium,
            &page,
            &[
                format!("--screenshot={}", shot.display()),
                "--window-size=1400,900".to_owned(),
                "--hide-scrollbars".to_owned(),
            ],
        );
        let png = std::fs::read(&shot).expect("the screenshot was written");
        assert!(
            png.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{} is a PNG",
            shot.display()
        );
    }
    // A store of two sessions: a group of lanes each, every turn drawn, the script ran
    // clean, and the ids and panes that look like markup stayed text.
    let (store, transcripts) = two_session_store(dir.path());
    let html = replay_store(&store, &transcripts, "html");
    let turns = count_kind(&String::from_utf8_lossy(&html), "turn");
    let page = dir.path().join("two-sessions.html");
    std::fs::write(&page, html).expect("write the page");
    let dom = String::from_utf8(run_chromium(&chromium, &page, &["--dump-dom".to_owned()]))
        .expect("the DOM is UTF-8");
    let check = "<output id=\"hooktrack-check\"";
    assert_eq!(
        attribute(&dom, check, "data-script").as_deref(),
        Some("ok"),
        "the page's script did not finish on the two-session store"
    );
    assert_eq!(
        attribute(&dom, check, "data-errors").as_deref(),
        Some("0"),
        "errors in the page of the two-session store"
    );
    assert_eq!(
        attribute(&dom, check, "data-turn").and_then(|n| n.parse::<usize>().ok()),
        Some(turns),
        "turns the browser found on the two-session store"
    );
    assert_eq!(dom.matches("<g class=\"session\"").count(), 2);
    assert!(
        !dom.contains("<b>A</b>") && !dom.contains("<svg onload"),
        "markup from a session id or a pane"
    );
    let shot = shots.join("two-sessions.png");
    let _ = std::fs::remove_file(&shot);
    run_chromium(
        &chromium,
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,900".to_owned(),
            "--hide-scrollbars".to_owned(),
        ],
    );
    assert!(
        std::fs::read(&shot)
            .expect("the screenshot was written")
            .starts_with(b"\x89PNG\r\n\x1a\n"),
        "{} is a PNG",
        shot.display()
    );
    println!("html screenshots in {}", shots.display());
}

/// This module's tests, with what each needs (`main.rs`).
pub(crate) fn tests() -> Vec<crate::E2e> {
    vec![e2e!(
        chromium_loads_every_page_without_errors_and_sees_every_mark,
        [Chromium]
    )]
}
