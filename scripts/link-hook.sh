#!/bin/sh
# The linker cargo runs on Linux with glibc (`.cargo/config.toml`): every link goes to `cc`
# unchanged, except the hook command's (`hooktrack-hook`), which is linked statically
# against glibc and libgcc's unwinder. Agents start the hook on every event: a static,
# position-dependent binary has no dynamic loader, no shared objects to map and no symbols
# to bind, and starts in about the time of a static C program (docs/benchmarks.md, "The
# hook cargo install puts beside hooktrack"). `+crt-static` in the rustflags would do the
# same for every binary, but also for the proc-macros, which then cannot be built.
# HOOKTRACK_DYNAMIC_HOOK=1 links it as the others.
out=
prev=
for arg; do
    [ "$prev" = "-o" ] && out=$arg
    prev=$arg
done
case "${out##*/}" in
hooktrack_hook-*) [ -z "$HOOKTRACK_DYNAMIC_HOOK" ] || exec "${HOOKTRACK_CC:-cc}" "$@" ;;
*) exec "${HOOKTRACK_CC:-cc}" "$@" ;;
esac
# rustc asks for a dynamic link (`-pie` or `-no-pie`, `-Bdynamic` before the system
# libraries, libgcc_s for unwinding); the same libraries, static, replace them.
static_link() {
    for arg; do
        shift
        case $arg in
        -pie | -no-pie | -Wl,-Bdynamic) ;;
        -lgcc_s) set -- "$@" -lgcc_eh -lgcc ;;
        -lc) set -- "$@" -Wl,--start-group -lc -lgcc_eh -lgcc -Wl,--end-group ;;
        *) set -- "$@" "$arg" ;;
        esac
    done
    "${HOOKTRACK_CC:-cc}" -static -no-pie "$@"
}
static_link "$@" && exit 0
# A system without static glibc (libc.a): the hook as the other binaries, slower to start.
echo "scripts/link-hook.sh: no static link for hooktrack-hook; linking it dynamically" >&2
exec "${HOOKTRACK_CC:-cc}" "$@"
