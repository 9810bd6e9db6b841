//! Links the `hooktrack` and `hooktrack-hook` binaries as position-dependent executables
//! on Linux with glibc.
//!
//! Agents run the hook command on every hook, so its start-up is paid on every event: a
//! PIE has thousands of relative relocations for the dynamic loader to apply, and its
//! code is reached through more indirection. The code stays position-independent (what
//! rustc compiles by default), so only the final link changes. On x86-64 Linux with glibc
//! the repository's `.cargo/config.toml` goes further for `hooktrack-hook`: its linker
//! (`scripts/link-hook.sh`) links it statically (`docs/benchmarks.md`).

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bin=hooktrack=-no-pie");
        println!("cargo:rustc-link-arg-bin=hooktrack-hook=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
