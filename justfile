# Each recipe is one cargo command; `just` is a convenience, never a requirement.

# Every crate's tests and doc-tests, hermetic (no network; tmux where present).
test:
    cargo test

# The end-to-end tests with the real agent CLIs and Chromium (npm and PyPI installs cached
# under target/tmp/, about 3.9 GB the first time): `just e2e`, or one agent:
# `just e2e kimi_code::`. A test that cannot run here is reported ignored, with why.
e2e *filter:
    cargo test --test e2e {{filter}}

# Replay a campaign: `just replay corpus/kimi-code/escape-interrupt.ndjson`.
replay file *args:
    cargo run --release -- replay {{file}} {{args}}

# Benchmarks: replay throughput against a parse-only baseline, and peak memory; emit latency
# against a minimal Python emitter, and collector rows/s (docs/producer.md); live tracking
# latency, throughput and idle CPU with 1 and 500 watched sessions (docs/live.md); keystroke
# → tmux option with the real Claude Code and Kimi Code in tmux (the e2e installs; skipped,
# saying so, where they are not installed; HOOKTRACK_BENCH_TRIES=N for fewer than 20).
bench: hook-static
    cargo bench --bench replay
    HOOKTRACK_BENCH_STATIC_BIN=target/static/release/hooktrack-hook cargo bench --bench producer
    cargo bench --bench live
    cargo bench --bench fleet
    cargo bench --bench keystroke

# Statically linked, position-dependent `hooktrack` and `hooktrack-hook` (the hook command
# alone) in target/static/release/ (docs/benchmarks.md: the hook starts in about the time
# of a static C program; the default build loads libc and libgcc_s on every hook run).
# Hooks installed by that `hooktrack` run the `hooktrack-hook` beside it.
hook-static:
    cargo rustc --release --bin hooktrack --target-dir target/static -- -C target-feature=+crt-static -C relocation-model=static
    cargo rustc --release --bin hooktrack-hook --target-dir target/static -- -C target-feature=+crt-static -C relocation-model=static

# Re-run the snapshot tests, writing `.snap.new` files to review (then rename to accept).
snapshots:
    INSTA_UPDATE=new cargo test --test integration timeline

# Everything CI checks.
ci:
    bash .ci/run
