//! The process that ran the hook command, recorded in its row (`emitter_parent`): its pid,
//! the name it goes by and the program it runs, read from `/proc` with bounded reads. A
//! parent already gone (or a system without `/proc`) gives what could be read, or none;
//! never an error: the row goes out either way.

use std::io::Read;

use hooktrack_core::envelope::EmitterParent;

/// `/proc/<pid>/comm` is 16 bytes at most (the kernel's `TASK_COMM_LEN`, newline included).
const MAX_COMM_READ: u64 = 64;

/// This process's parent, as `/proc` tells it now.
pub fn emitter_parent() -> Option<EmitterParent> {
    let pid = rustix::process::getppid()?.as_raw_nonzero().get();
    let pid = u32::try_from(pid).ok()?;
    Some(EmitterParent {
        pid,
        comm: comm_of(pid),
        exe: exe_of(pid),
    })
}

fn comm_of(pid: u32) -> Option<String> {
    let file = std::fs::File::open(format!("/proc/{pid}/comm")).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_COMM_READ).read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let name = text.trim_end_matches('\n');
    (!name.is_empty()).then(|| name.to_owned())
}

/// The file name of the program: readlink(2) returns at most `PATH_MAX` bytes. A program
/// replaced since it started reads `NAME (deleted)`; that is what it says.
fn exe_of(pid: u32) -> Option<String> {
    let target = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let name = target.file_name()?.to_string_lossy().into_owned();
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_of_the_test_is_its_runner() {
        let parent = emitter_parent();
        let ppid = std::os::unix::process::parent_id();
        assert_eq!(parent.as_ref().map(|p| p.pid), Some(ppid));
        assert!(parent.is_some_and(|p| p.comm.is_some() && p.exe.is_some()));
    }

    #[test]
    fn a_process_gone_gives_no_names() {
        // Pid 0 is no process: nothing under /proc/0.
        assert_eq!(comm_of(0), None);
        assert_eq!(exe_of(0), None);
    }
}
