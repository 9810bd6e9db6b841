//! Which stores `watch` follows: only this user's, in modes no one else can write. A
//! store in a shared folder (`agents/` left open, a session root in `/tmp`) may be
//! another user's plant: its rows would show a session of theirs as one of ours (a
//! session blocked on a tool it names). Such a store is named in a notice and not
//! followed. What a collector killed without its cleanup left in a followed store is
//! cleaned, saying so.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use hooktrack_core::diagnostics::error_chain;
use hooktrack_core::store::StorePaths;
use hooktrack_producer::store::leftover::clean_dead_collector;

/// Why `paths` is not followed, or `None` when it may be (also when it is not there yet:
/// it is judged when it appears).
pub(super) fn refusal(paths: &StorePaths) -> Option<String> {
    let me = rustix::process::geteuid().as_raw();
    for path in [&paths.dir, &paths.events] {
        if let Some(why) = unsafe_path(path, me) {
            return Some(format!("not followed: {} {why}", path.display()));
        }
    }
    None
}

fn unsafe_path(path: &Path, me: u32) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.file_type().is_symlink() {
        return Some("is a symbolic link".to_owned());
    }
    if meta.uid() != me {
        return Some(format!("is owned by uid {}, not {me}", meta.uid()));
    }
    let mode = meta.mode() & 0o7777;
    (mode & 0o022 != 0).then(|| format!("is writable by others (mode {mode:04o})"))
}

/// Cleans a dead collector's leftovers in `paths`: the sentence to say, if any.
pub(super) fn clean(paths: &StorePaths) -> Option<String> {
    match clean_dead_collector(paths) {
        Ok(Some(dead)) => Some(format!("cleaned up: {dead}")),
        Ok(None) => None,
        Err(e) => Some(format!(
            "{}: a dead collector's leftovers could not be cleaned: {}",
            paths.dir.display(),
            error_chain(&e)
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_store_writable_by_others_is_refused_and_a_private_one_followed() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let paths = StorePaths::in_dir(tmp.path().join("s"));
        assert_eq!(
            refusal(&paths),
            None,
            "not there yet: judged when it appears"
        );
        std::fs::create_dir(&paths.dir).expect("mkdir");
        std::fs::set_permissions(&paths.dir, std::fs::Permissions::from_mode(0o700))
            .expect("chmod");
        std::fs::write(&paths.events, "").expect("events");
        std::fs::set_permissions(&paths.events, std::fs::Permissions::from_mode(0o600))
            .expect("chmod");
        assert_eq!(refusal(&paths), None);
        std::fs::set_permissions(&paths.events, std::fs::Permissions::from_mode(0o666))
            .expect("chmod");
        let said = refusal(&paths).expect("refused");
        assert!(said.contains("writable by others (mode 0666)"), "{said}");
        std::fs::remove_file(&paths.events).expect("rm");
        std::os::unix::fs::symlink("/etc/hostname", &paths.events).expect("symlink");
        let said = refusal(&paths).expect("refused");
        assert!(said.contains("is a symbolic link"), "{said}");
    }
}
