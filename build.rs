//! Links the `hooktrack` and `hooktrack-hook` binaries as position-dependent executables
//! on Linux with glibc.
//!
//! Agents run the hook command on every hook, so its start-up is paid on every event: a
//! PIE has thousands of relative relocations for the dynamic loader to apply, and its
//! code is reached through more indirection. The code stays position-independent (what
//! rustc compiles by default), so only the final link changes. On x86-64 Linux with glibc
//! the repository's `.cargo/config.toml` goes further for `hooktrack-hook`: its linker
//! (`scripts/link-hook.sh`) links it statically (`docs/benchmarks.md`).
//!
//! It also sets `cfg(hooktrack_tmux)` when a `tmux` on `PATH` runs, for the integration
//! tests that drive a private tmux server: without one they are ignored, and `cargo
//! test` says so with the reason, instead of passing without running. Under
//! `HOOKTRACK_E2E_REQUIRE=1` (CI) they are never ignored, so a missing tmux fails them.
//! `cfg(hooktrack_node)` likewise, for the tests that load the plugin files in `node`.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(hooktrack_tmux)");
    println!("cargo::rustc-check-cfg=cfg(hooktrack_node)");
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-env-changed=HOOKTRACK_E2E_REQUIRE");
    let tmux_runs = std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|out| out.status.success());
    let required = std::env::var_os("HOOKTRACK_E2E_REQUIRE").is_some_and(|v| v == "1");
    if tmux_runs || required {
        println!("cargo::rustc-cfg=hooktrack_tmux");
    }
    let node_runs = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if node_runs || required {
        println!("cargo::rustc-cfg=hooktrack_node");
    }

    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo::rustc-link-arg-bin=hooktrack=-no-pie");
        println!("cargo::rustc-link-arg-bin=hooktrack-hook=-no-pie");
    }
    println!("cargo::rerun-if-changed=build.rs");
}
