//! What `watch` sees becomes a row: an agent end it detects from the pid a session's
//! rows name (`agent_pid`; agents started without `hooktrack session`, which no launcher
//! watches) is appended to that store as the launcher's `process_ended` row, marked
//! `"seen_by":"watch"`, so a replay of the store ends what the live view ended.

use hooktrack_core::envelope::{PROCESS_ENDED, Via, process_ended_row_seen_by_watch};
use hooktrack_core::row::parse_line;
use hooktrack_core::store::StorePaths;
use hooktrack_core::time::Timestamp;
use hooktrack_producer::store::{self, StoreError};

/// Appends the end of the agent process `pid` of the store's session `session_id` at
/// `at`, unless the end of that pid in that session is among the store's last rows
/// already (another `watch`, or this one before a restart, wrote it): under the store's
/// lock, so two watchers write it once. Like the store's other rows it names the pid and
/// the session's tmux pane (`tmux_pane`, when known). The row takes the provider and generation of
/// the store's last row (a row of an older generation would be dropped by readers).
/// Returns whether a row was written.
pub fn record_process_end(
    store: &StorePaths,
    session_id: Option<&str>,
    tmux_pane: Option<&str>,
    pid: u32,
    at: Timestamp,
) -> Result<bool, StoreError> {
    store::append_row_unless(store, |tail| {
        let mut provider: Option<String> = None;
        let mut generation = 0;
        for line in tail.split(|&b| b == b'\n') {
            let Ok(row) = parse_line(line) else { continue };
            if row.meta.via == Some(Via::Launcher)
                && row.event_name == PROCESS_ENDED
                && row.payload.pid == Some(pid)
                && row.payload.session_id.as_deref() == session_id
            {
                return None;
            }
            if let Some(p) = row.provider_hint.as_deref() {
                provider = Some(p.to_owned());
            }
            if let Some(g) = row.meta.generation {
                generation = g;
            }
        }
        // A store whose rows name no provider: the store's folder is its agent's name.
        let provider = provider.or_else(|| {
            store
                .dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })?;
        Some(process_ended_row_seen_by_watch(
            &provider, generation, at, pid, session_id, tmux_pane,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn store() -> (tempfile::TempDir, StorePaths) {
        let tmp = tempfile::tempdir().unwrap();
        let paths = StorePaths::in_dir(tmp.path().join("claude"));
        store::create_dir(&paths).unwrap();
        let row = r#"{"v":1,"provider":"claude","generation":0,"via":"command_fallback","emitter_seq":1,"received_at":"2026-01-01T00:00:00.000Z","event":"UserPromptSubmit","payload":{"session_id":"s1","hook_event_name":"UserPromptSubmit","prompt":"x"},"agent_pid":4242}"#;
        fs::write(&paths.events, format!("{row}\n")).unwrap();
        (tmp, paths)
    }

    #[test]
    fn an_end_is_written_once_whoever_sees_it() {
        let (_tmp, paths) = store();
        let at = Timestamp::from_millis(1_790_000_000_000);
        assert!(record_process_end(&paths, Some("s1"), Some("%5"), 4242, at).unwrap());
        // A second watcher (or the same one again) finds it there.
        assert!(!record_process_end(&paths, Some("s1"), Some("%5"), 4242, at).unwrap());
        // Another session's end, or another pid's, is another row.
        assert!(record_process_end(&paths, Some("s2"), None, 4242, at).unwrap());
        let text = fs::read_to_string(&paths.events).unwrap();
        let rows: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len(), 3, "{text}");
        assert_eq!(rows[1]["via"], "launcher");
        assert_eq!(rows[1]["event"], "process_ended");
        assert_eq!(rows[1]["provider"], "claude");
        assert_eq!(rows[1]["received_at"], "2026-09-21T14:13:20.000Z");
        assert_eq!(rows[1]["agent_pid"], 4242);
        assert_eq!(rows[1]["tmux_pane"], "%5");
        assert_eq!(
            rows[1]["payload"],
            serde_json::json!({"pid": 4242, "session_id": "s1", "seen_by": "watch"})
        );
    }

    #[test]
    fn two_watchers_racing_write_one_row() {
        let (_tmp, paths) = store();
        let at = Timestamp::from_millis(1_790_000_000_000);
        let written: Vec<bool> = std::thread::scope(|s| {
            let racers: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        record_process_end(&paths, Some("s1"), Some("%5"), 4242, at).unwrap()
                    })
                })
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        assert_eq!(written.iter().filter(|w| **w).count(), 1, "{written:?}");
        let text = fs::read_to_string(&paths.events).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
    }
}
