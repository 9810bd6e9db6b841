//! Peak memory of the running process, for the benches that measure it in a child
//! process of their own (one figure per run, never shared with the parent's).

use std::fs;

/// `VmHWM` (peak resident set size) of this process, in KiB.
pub fn vm_hwm_kib() -> Result<u64, String> {
    let status = fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("cannot read /proc/self/status: {e}"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .ok_or("no VmHWM in /proc/self/status")?;
    line.trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .map_err(|e| format!("bad VmHWM line {line:?}: {e}"))
}
