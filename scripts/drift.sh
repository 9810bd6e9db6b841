#!/usr/bin/env bash
# Judge a new release of an agent CLI in minutes: `scripts/drift.sh AGENT VERSION`.
#
# Installs AGENT at VERSION from npm (cached in target/tmp/drift/AGENT-VERSION), builds
# hooktrack, drives the recorded scenarios against it (scripts/drift.py: the mock model of
# tests/e2e/mock_model.py, a scratch HOME, the TUI in tmux on a private socket) and prints,
# per scenario, whether its ledger and hook events differ from the recording in corpus/.
# Exit 0 when nothing changed. Needs npm, python3 >= 3.11 and tmux; loopback and the npm
# registry only. Example: scripts/drift.sh claude-code 2.1.332
#
# kimi-code: its recorded scenarios are the end-to-end tests of tests/e2e/kimi_code.rs
# (headless turns, the TUI in tmux, `check` against `kimi doctor`), run
# against VERSION (HOOKTRACK_DRIFT_VERSION; Node 22 from npm, as the tests take it). Each
# test's assertions are the expectations written from the screen: a failing test is an
# expectation that changed. Example: scripts/drift.sh kimi-code 2.0.2
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 2 ]; then
    echo "usage: scripts/drift.sh AGENT VERSION (AGENT: claude-code, kimi-code)" >&2
    exit 2
fi
agent=$1
version=$2
case "$agent" in
    claude-code | claude) agent=claude-code package=@anthropic-ai/claude-code program=claude ;;
    kimi-code | kimi)
        for tool in npm tmux; do
            command -v "$tool" >/dev/null || { echo "drift: $tool is needed" >&2; exit 2; }
        done
        mkdir -p target/tmp/drift
        log=target/tmp/drift/kimi-code-$version.log
        echo "drift: kimi-code $version through tests/e2e/kimi_code.rs (log: $log)" >&2
        status=0
        HOOKTRACK_DRIFT_VERSION=$version HOOKTRACK_E2E_REQUIRE=1 \
            cargo test --test e2e -- kimi_code:: --test-threads 1 \
            >"$log" 2>&1 || status=$?
        { grep -E '^test kimi_code::' "$log" || true; } |
            sed -E 's/^test kimi_code::([^ ]+) +\.\.\. ok$/same     \1/; s/^test kimi_code::([^ ]+) +\.\.\. FAILED$/CHANGED  \1/'
        if [ "$status" -ne 0 ]; then
            # What each changed test saw against what it expected.
            { grep -E "panicked|left:|right:|HOOKTRACK_E2E_REQUIRE" "$log" || true; } | head -40
            echo "drift: kimi-code $version differs from the recording (cargo test exit $status)"
            exit 1
        fi
        echo "drift: kimi-code $version: every scenario as recorded"
        exit 0
        ;;
    *)
        echo "drift: no recorded scenarios are driven for $agent yet (docs/providers.md)" >&2
        exit 2
        ;;
esac
for tool in npm python3 tmux; do
    command -v "$tool" >/dev/null || { echo "drift: $tool is needed" >&2; exit 2; }
done

prefix=target/tmp/drift/$agent-$version
if [ "$(cat "$prefix/ready" 2>/dev/null)" != "$package@$version" ]; then
    mkdir -p "$prefix"
    timeout 900 npm install --no-audit --no-fund --prefix "$prefix" "$package@$version" >&2
    echo "$package@$version" >"$prefix/ready"
fi
# The symlink, not its target: hooktrack knows the agent by its program name.
bin="$PWD/$prefix/node_modules/.bin/$program"
echo "drift: $("$bin" --version) from $bin" >&2

cargo build --quiet --bin hooktrack
hooktrack=$(realpath target/debug/hooktrack)
base=$(realpath -m "target/tmp/drift/runs/$agent-$version")
mkdir -p "$base"
exec python3 scripts/drift.py "$agent" "$version" "$bin" "$hooktrack" "$base"
