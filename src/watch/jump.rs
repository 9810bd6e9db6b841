//! `hooktrack jump`: a tmux menu of the panes whose agent waits for the person (blocked,
//! or a turn ended they have not seen), newest first; choosing one switches the client
//! to it. The list is read from the pane options a `watch --tmux` publishes
//! (`@hooktrack_waits`, `@hooktrack_waits_since`, `@hooktrack_agent`,
//! `@hooktrack_summary`), so the menu needs nothing but the tmux server.

use thiserror::Error;

use hooktrack_core::store::is_tmux_pane_id;

use super::facts::shown_again;
use super::tmux::{TmuxError, TmuxTarget};

/// What `list-panes -a -F` prints per pane for [`waiting_panes`], tab-separated.
const LISTING: &str = "#{pane_id}\t#{session_name}:#{window_index}\t#{@hooktrack_agent}\t#{@hooktrack_waits}\t#{@hooktrack_waits_since}\t#{@hooktrack_summary}";
/// Items in the menu, each with its key (`1`…`9`, `0`).
const MAX_ITEMS: usize = 10;
const KEYS: [&str; MAX_ITEMS] = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "0"];
/// Longest part of a menu line.
const MAX_PART_CHARS: usize = 40;
/// Longest summary in a menu line: a tool and its argument (`waits on Bash: cargo
/// build --rel…`) fit whole.
const MAX_SUMMARY_CHARS: usize = 120;

/// One pane that waits, as the menu shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiting {
    /// The pane id (`%3`).
    pub pane: String,
    /// `session:window`.
    pub window: String,
    pub agent: String,
    /// `blocked` or `done`.
    pub waits: String,
    /// Since when, in milliseconds since the epoch.
    pub since: i64,
    /// What it does or waits on (`@hooktrack_summary`).
    pub summary: String,
}

/// Why the menu could not be shown.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum JumpError {
    #[error("cannot read the panes")]
    List {
        #[source]
        source: TmuxError,
    },
    #[error("cannot show the menu")]
    Show {
        #[source]
        source: TmuxError,
    },
}

/// The panes of a `list-panes -a -F` listing ([`LISTING`]) that wait, newest first.
/// Text is made safe for a menu line (cut, no `#` for tmux to read as a format); a summary
/// the watch already made safe reads as the pane's option does.
pub fn waiting_panes(listing: &str) -> Vec<Waiting> {
    let mut waiting: Vec<Waiting> = listing
        .lines()
        .filter_map(|line| {
            let mut f = line.split('\t');
            let pane = f.next()?;
            let window = f.next()?;
            let agent = f.next()?;
            let waits = f.next()?;
            let since = f.next()?.parse().ok()?;
            let summary = f.next().unwrap_or("");
            (is_tmux_pane_id(pane) && matches!(waits, "blocked" | "done")).then(|| Waiting {
                pane: pane.to_owned(),
                window: shown_again(window, MAX_PART_CHARS, '#'),
                agent: shown_again(agent, MAX_PART_CHARS, '#'),
                waits: waits.to_owned(),
                since,
                summary: shown_again(summary, MAX_SUMMARY_CHARS, '#'),
            })
        })
        .collect();
    // Newest first; a blocked pane before a finished one of the same moment.
    waiting.sort_by(|a, b| {
        b.since
            .cmp(&a.since)
            .then_with(|| (a.waits != "blocked").cmp(&(b.waits != "blocked")))
    });
    waiting
}

/// The `display-menu` arguments for `waiting` (none: there is no menu to show): a
/// line per pane, `claude-code  work:2 %3  waits on Bash`, its key, and the command
/// that switches the client to the pane.
pub fn menu_args(waiting: &[Waiting], client: Option<&str>) -> Vec<String> {
    if waiting.is_empty() {
        return Vec::new();
    }
    let mut args: Vec<String> = vec!["display-menu".into()];
    if let Some(client) = client {
        args.extend(["-c".into(), client.to_owned()]);
    }
    args.extend([
        "-T".into(),
        format!("#[align=centre] {} waiting ", waiting.len()),
        "-x".into(),
        "C".into(),
        "-y".into(),
        "C".into(),
    ]);
    for (w, key) in waiting.iter().zip(KEYS) {
        args.push(format!(
            "{}  {} {}  {}",
            w.agent, w.window, w.pane, w.summary
        ));
        args.push(key.to_owned());
        args.push(format!("switch-client -t {}", w.pane));
    }
    if waiting.len() > MAX_ITEMS {
        // A leading `-` makes the line one that cannot be chosen.
        args.extend([
            format!("-… {} more", waiting.len() - MAX_ITEMS),
            String::new(),
            String::new(),
        ]);
    }
    args
}

/// Shows the menu on `client` (else the client tmux picks), or says that nothing
/// waits. The number of panes listed.
///
/// tmux answers `display-menu` only once the menu is closed, so that command is started
/// and not waited for: it ends when the person chooses or closes the menu.
pub fn jump(target: &TmuxTarget, client: Option<&str>) -> Result<usize, JumpError> {
    let listing = target
        .query(&["list-panes", "-a", "-F", LISTING])
        .map_err(|source| JumpError::List { source })?;
    let waiting = waiting_panes(&listing);
    let args = menu_args(&waiting, client);
    if args.is_empty() {
        let mut say = vec!["display-message"];
        if let Some(client) = client {
            say.extend(["-c", client]);
        }
        say.push("hooktrack: no agent waits for you");
        target
            .query(&say)
            .map_err(|source| JumpError::Show { source })?;
    } else {
        target
            .start(&args)
            .map_err(|source| JumpError::Show { source })?;
    }
    Ok(waiting.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_menu_lists_what_waits_newest_first_and_switches_to_it() {
        let listing = "%1\tw:0\tclaude-code\tdone\t1000\tturn ended: success\n\
                       %2\tw:1\tcodex\t\t\tworks, 5s\n\
                       %3\tw:2\tkimi-code\tblocked\t2000\twaits on Bash\n\
                       %4\tw:#[bg=red]\tpi\tblocked\t1500\twaits on #{E:x}\n\
                       $1\tw:3\tpi\tblocked\t3000\twaits on Bash\n";
        let waiting = waiting_panes(listing);
        let panes: Vec<&str> = waiting.iter().map(|w| w.pane.as_str()).collect();
        assert_eq!(panes, ["%3", "%4", "%1"]);
        assert_eq!(waiting[1].window, "w:_[bg=red]");
        assert_eq!(waiting[1].summary, "waits on _{E:x}");
        let args = menu_args(&waiting, Some("/dev/pts/3"));
        assert_eq!(
            args[..9],
            [
                "display-menu",
                "-c",
                "/dev/pts/3",
                "-T",
                "#[align=centre] 3 waiting ",
                "-x",
                "C",
                "-y",
                "C"
            ]
        );
        assert_eq!(
            args[9..12],
            [
                "kimi-code  w:2 %3  waits on Bash",
                "1",
                "switch-client -t %3"
            ]
        );
        assert_eq!(args.len(), 9 + 3 * 3);
        assert!(menu_args(&[], None).is_empty());
    }

    /// The pane's summary option holds `\u{1b}` where the agent's argument had an ESC (the
    /// watch made it safe): the menu shows it as the option does, not `\u_1b_`.
    #[test]
    fn a_summary_made_safe_by_the_watch_is_not_mangled_a_second_time() {
        let listing = "%1\tw:0\tcodex\tblocked\t1\twaits on shell: printf '\\u{1b}[31m'\n\
                       %2\tw:1\tpi\tblocked\t2\twaits on \u{1b}]0;x\u{7}\n";
        let waiting = waiting_panes(listing);
        assert_eq!(waiting[1].summary, "waits on shell: printf '\\u{1b}[31m'");
        assert_eq!(waiting[0].summary, "waits on \\u{1b}]0;x\\u{7}");
    }

    #[test]
    fn more_than_ten_panes_end_with_a_line_that_counts_the_rest() {
        let listing: String = (0..12)
            .map(|i| format!("%{i}\tw:{i}\tpi\tdone\t{i}\tturn ended: success\n"))
            .collect();
        let args = menu_args(&waiting_panes(&listing), None);
        assert_eq!(args.len(), 7 + 3 * 10 + 3);
        assert_eq!(args[args.len() - 3], "-… 2 more");
        assert_eq!(args[7 + 9 * 3 + 1], "0", "the tenth item's key");
    }
}
