#!/usr/bin/env python3
"""The fault matrix: every audited fault, run against the real `hooktrack` binary.

    cargo build --release && python3 scripts/fault-matrix.py target/release/hooktrack

Producer cases send N deliveries through `hooktrack emit` (one process each, a distinct
`tool_call_id` per delivery), inject the fault half-way, and count what is on disk in
`events.ndjson` and any rotated file:

- written: rows on disk that carry one of the deliveries;
- delivered: distinct deliveries found on disk;
- lost: deliveries sent but on disk nowhere;
- duplicated: rows the reader keeps twice (on-disk copies minus what `replay` drops as
  `duplicate_delivery`);
- via http: rows the collector wrote (the rest are the emitter's fallback rows);
- events replayed: what `hooktrack replay` makes events of, over every events file;
- events a live watch saw: the `events` count of a `hooktrack watch --ndjson` that
  followed the store through the fault (what a supervisor would have seen).

Reader cases write rows while `hooktrack watch --ndjson` follows the store, inject the
fault, and count the events the reader reported (written = rows written; delivered =
events reported; lost / duplicated = rows not reported / reported twice).

Loopback only; every process started here is stopped here, by pid; every wait is
bounded. Prints a Markdown table.
"""

import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/debug/hooktrack")
N = int(os.environ.get("MATRIX_DELIVERIES", "200"))
TOKEN = "matrix-token-" + "0" * 51
SID = "495571c6-adb5-491a-99ad-7e10e4e3d92e"
PATIENCE = 30.0


def payload(n, command="ls", tool="Shell"):
    return json.dumps({
        "hook_event_name": "PreToolUse", "session_id": SID, "cwd": "/p",
        "tool_name": tool, "tool_input": {"command": command},
        "tool_call_id": f"d{n}",
    })


def env(**extra):
    e = dict(os.environ, HOOKTRACK_TOKEN=TOKEN)
    e.update(extra)
    return e


class Collector:
    def __init__(self, store, port=0):
        self.store = store
        self.proc = subprocess.Popen(
            [BIN, "collect", "--provider", "kimi-cli", "--generation", "1",
             "--dir", store, "--port", str(port)],
            env=env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            try:
                with open(os.path.join(store, "collector.json")) as f:
                    rec = json.load(f)
                if rec.get("pid") == self.proc.pid and rec.get("status") == "running":
                    self.port = rec["port"]
                    return
            except (OSError, ValueError):
                pass
            time.sleep(0.01)
        self.kill()
        raise RuntimeError("collector did not start")

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/events"

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=PATIENCE)

    def kill(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=PATIENCE)


def emit(store, url, n, text=None, close_stdin=True):
    args = [BIN, "emit", "--dir", store, "--provider", "kimi-cli", "--generation", "1",
            "--event", "PreToolUse"]
    if url:
        args[2:2] = ["--url", url]
    p = subprocess.Popen(args, env=env(), stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if close_stdin:
        p.communicate((text or payload(n)).encode(), timeout=PATIENCE)
    else:
        p.wait(timeout=PATIENCE)
    return p


def events_files(store):
    """The store's events files, rotated ones included (none when there is no store)."""
    if not os.path.isdir(store):
        return []
    return sorted(n for n in os.listdir(store) if n.startswith("events"))


def on_disk(store):
    """Rows of every events file in the store: (rows with a delivery id, ids)."""
    rows, ids = 0, set()
    for name in events_files(store):
        if not name.startswith("events"):
            continue
        with open(os.path.join(store, name), "rb") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                tid = (row.get("payload") or {}).get("tool_call_id")
                if tid:
                    rows += 1
                    ids.add(tid)
    return rows, ids


def replayed(store):
    """(rows `replay` drops as duplicates, events it keeps), over every events file."""
    dropped = kept = 0
    for name in events_files(store):
        out = subprocess.run([BIN, "replay", "--format", "json", os.path.join(store, name)],
                             capture_output=True, timeout=PATIENCE, check=True)
        report = json.loads(out.stdout)
        dropped += report["diagnostics"]["counters"]["duplicate_delivery"]
        kept += report["events"]
    return dropped, kept


def via_http(store):
    n = 0
    for name in events_files(store):
        with open(os.path.join(store, name), "rb") as f:
            n += sum(1 for line in f if b'"via":"http"' in line)
    return n


def producer_case(name, fault, sent=N, with_collector=True):
    tmp = tempfile.mkdtemp(prefix="matrix-")
    store = os.path.join(tmp, "store")
    if not with_collector:
        os.makedirs(store, mode=0o700)  # the store exists, only the collector is down
    collector = Collector(store) if with_collector else None
    state = {"collector": collector, "store": store, "tmp": tmp}
    # The events file, not the directory: a directory without events.ndjson yet would be
    # taken for a session root.
    watch = Watch(os.path.join(store, "events.ndjson"))
    try:
        for n in range(sent):
            if n == sent // 2:
                fault(state)
            c = state["collector"]
            emit(store, c.url if c else None, n)
        if state.get("after"):
            state["after"](state)
        watch.settle(sent + state.get("extra", 0))
    finally:
        try:
            watch.stop()
        finally:
            if state["collector"]:
                state["collector"].stop()
    rows, ids = on_disk(store)
    dropped, kept = replayed(store)
    dups = max(0, rows - len(ids) - dropped)
    http = via_http(store)
    shutil.rmtree(tmp, ignore_errors=True)
    return name, rows, len(ids), sent - len(ids), dups, http, kept, watch.events


def no_fault(_state):
    pass


def kill_and_restart(state):
    c = state["collector"]
    port = c.port
    c.kill()
    for n in range(N, N + N // 4):  # deliveries while it is down: all fall back
        emit(state["store"], c.url, n)
    state["extra"] = N // 4
    state["collector"] = Collector(state["store"], port)


def rename_rotation(state):
    s = state["store"]
    os.rename(os.path.join(s, "events.ndjson"), os.path.join(s, "events.1"))


def delete_after_copy(state):
    s = state["store"]
    shutil.copy(os.path.join(s, "events.ndjson"), os.path.join(s, "events.1"))
    os.remove(os.path.join(s, "events.ndjson"))


def copy_truncate(state):
    s = state["store"]
    shutil.copy(os.path.join(s, "events.ndjson"), os.path.join(s, "events.1"))
    os.truncate(os.path.join(s, "events.ndjson"), 0)


def stuck_lock(state):
    # This process takes the append lock and keeps it for 20 deliveries.
    f = open(os.path.join(state["store"], "emitter.seq"), "r+")
    fcntl.flock(f, fcntl.LOCK_EX)
    state["lock"] = f
    base = N + 1000
    for n in range(base, base + 20):
        emit(state["store"], state["collector"].url, n)
    state["extra"] = 20
    fcntl.flock(f, fcntl.LOCK_UN)
    f.close()


def idle_connections(state):
    socks = []
    for _ in range(500):
        s = socket.create_connection(("127.0.0.1", state["collector"].port))
        s.sendall(b"POST /events HTTP/1.1\r\nHost: x\r\n")
        socks.append(s)
    state["socks"] = socks
    state["after"] = lambda st: [s.close() for s in st["socks"]]


def hostile_generation(state):
    body = json.dumps({"v": 1, "generation": 1 << 60, "event": "PreToolUse",
                       "payload": json.loads(payload(-1))}).encode()
    s = socket.create_connection(("127.0.0.1", state["collector"].port))
    s.sendall(b"POST /events HTTP/1.1\r\nAuthorization: Bearer " + TOKEN.encode()
              + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    s.recv(4096)
    s.close()
    state["extra"] = 1


def lone_surrogates(state):
    for n in range(N + 2000, N + 2020):
        emit(state["store"], state["collector"].url, n,
             text=payload(n, command="echo \ud800", tool="Shell\udc00"))
    state["extra"] = 20


def run_producer():
    results = []
    for name, fault in [
        ("baseline (collector up)", no_fault),
        ("collector SIGKILL, down for N/4, restarted", kill_and_restart),
        ("rotation: mv events.ndjson events.1", rename_rotation),
        ("rotation: cp + rm events.ndjson", delete_after_copy),
        ("rotation: copy-truncate", copy_truncate),
        ("store lock held by another process (20 deliveries)", stuck_lock),
        ("500 idle connections without the token", idle_connections),
        ("a row posted with generation 2^60", hostile_generation),
        ("20 payloads with a lone surrogate", lone_surrogates),
    ]:
        state_extra = {}

        def wrapped(state, fault=fault):
            fault(state)
            state_extra.update(state)

        name, rows, delivered, lost, dups, http, kept, seen = producer_case(name, wrapped)
        sent = N + state_extra.get("extra", 0)
        results.append((name, rows, delivered, sent - delivered, dups, http, kept, seen))
    # Collector never started: every delivery falls back.
    results.append(producer_case(
        "no collector (every delivery falls back)", no_fault, with_collector=False))
    # The store directory does not exist yet.
    tmp = tempfile.mkdtemp(prefix="matrix-")
    store = os.path.join(tmp, "missing", "store")
    for n in range(20):
        emit(store, None, n)
    rows, ids = on_disk(store)
    kept = replayed(store)[1]
    results.append(("store directory missing (20 deliveries)", rows, len(ids), 20 - len(ids),
                    0, 0, kept, "-"))
    shutil.rmtree(tmp, ignore_errors=True)
    # The watchdog: stdin never closed.
    tmp = tempfile.mkdtemp(prefix="matrix-")
    store = os.path.join(tmp, "store")
    for _ in range(3):
        emit(store, None, 0, close_stdin=False)
    try:
        with open(os.path.join(store, "events.ndjson")) as f:
            recorded = [json.loads(line) for line in f]
    except OSError:
        recorded = []
    named = sum(1 for r in recorded if r.get("event") == "PreToolUse"
                and "gave up" in (r.get("payload_error") or ""))
    kept = replayed(store)[1] if recorded else 0
    results.append(("stdin never closed: watchdog (3 hooks)", len(recorded), named, 3 - named,
                    0, 0, kept, "-"))
    shutil.rmtree(tmp, ignore_errors=True)
    return results


# The reader side: `hooktrack watch --ndjson` following a store.

def kimi_row(event, fields):
    base = {"hook_event_name": event, "session_id": "session_t", "cwd": "/p",
            "client_type": "kimi_code_cli"}
    base.update(fields)
    return json.dumps(base, separators=(",", ":"))


def turn(n):
    return [
        kimi_row("UserPromptSubmit", {"prompt": f"task {n}"}),
        kimi_row("PreToolUse", {"tool_name": "Shell", "tool_call_id": f"c{n}",
                                "tool_input": {"command": "ls"}}),
        kimi_row("PostToolUse", {"tool_name": "Shell", "tool_call_id": f"c{n}",
                                 "tool_output": "ok"}),
        kimi_row("Stop", {"stop_hook_active": False}),
    ]


class Watch:
    def __init__(self, root, checkpoint=None):
        args = [BIN, "watch", "--ndjson", "--recheck-ms", "20"]
        if checkpoint:
            args += ["--checkpoint", checkpoint]
        self.proc = subprocess.Popen(args + [root], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.fd = self.proc.stdout.fileno()
        os.set_blocking(self.fd, False)
        self.closed = 0
        self.events = 0
        self.buf = b""

    def take(self, chunk):
        self.buf += chunk
        *lines, self.buf = self.buf.split(b"\n")
        for line in lines:
            if line.strip():
                update = json.loads(line)
                self.closed += len(update.get("closed") or [])
                self.events = max(self.events, update.get("events") or 0)

    def pump(self):
        try:
            chunk = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return
        self.take(chunk)

    def until(self, closed):
        deadline = time.monotonic() + PATIENCE
        while self.closed < closed and time.monotonic() < deadline:
            self.pump()
            time.sleep(0.01)
        # A little longer: anything reported twice shows up too.
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            self.pump()
            time.sleep(0.01)

    def settle(self, want):
        """Pumps until `want` events were seen, or nothing new came for a second."""
        deadline = time.monotonic() + PATIENCE
        quiet_since, seen = time.monotonic(), self.events
        while self.events < want and time.monotonic() < deadline:
            self.pump()
            if self.events != seen:
                quiet_since, seen = time.monotonic(), self.events
            elif time.monotonic() - quiet_since > 1.0:
                break
            time.sleep(0.01)

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGINT)
        # Keep reading while it exits: a full pipe would block it.
        deadline = time.monotonic() + PATIENCE
        while self.proc.poll() is None and time.monotonic() < deadline:
            self.pump()
            time.sleep(0.01)
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=PATIENCE)
        os.set_blocking(self.fd, True)
        self.take(self.proc.stdout.read() + b"\n")


def append(path, rows):
    with open(path, "a") as f:
        for r in rows:
            f.write(r + "\n")


def reader_case(name, fault, turns_before=5, turns_after=5):
    tmp = tempfile.mkdtemp(prefix="matrix-")
    store = os.path.join(tmp, "hook-observation", "kimi")
    os.makedirs(store)
    events = os.path.join(store, "events.ndjson")
    append(events, [kimi_row("SessionStart", {"source": "startup"})])
    for n in range(turns_before):
        append(events, turn(n))
    state = {"tmp": tmp, "store": store, "events": events, "name": name}
    state["checkpoint"] = os.path.join(tmp, "watch.checkpoint")
    watch = Watch(tmp, state["checkpoint"] if fault is r_restart else None)
    watch.until(turns_before)
    watch = fault(state, watch) or watch
    for n in range(turns_before, turns_before + turns_after):
        append(events, turn(n))
    total = state.get("total", turns_before + turns_after)
    earlier = state.get("earlier", 0)
    watch.until(total - earlier)
    watch.stop()
    closed = watch.closed + earlier
    shutil.rmtree(tmp, ignore_errors=True)
    return name, total, min(closed, total), max(0, total - closed), max(0, closed - total)


def r_none(state, watch):
    return watch


def r_rename(state, watch):
    os.rename(state["events"], state["events"] + ".1")


def r_delete(state, watch):
    os.remove(state["events"])


def r_copy_truncate_regrow(state, watch):
    # Stop the follower from looking, truncate, and regrow past the old offset at once.
    os.kill(watch.proc.pid, signal.SIGSTOP)
    wait_stopped(watch.proc.pid)
    size = os.path.getsize(state["events"])
    os.truncate(state["events"], 0)
    n = 100
    while os.path.getsize(state["events"]) <= size:
        append(state["events"], turn(n))
        n += 1
        state.setdefault("regrown", 0)
        state["regrown"] += 1
    state["total"] = 10 + state["regrown"]
    os.kill(watch.proc.pid, signal.SIGCONT)


def wait_stopped(pid):
    """SIGSTOP is asynchronous: wait until the kernel says the process is stopped."""
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] in ("T", "t"):
                return
        time.sleep(0.005)
    raise RuntimeError("the follower did not stop")


def r_rewrite(state, watch):
    with open(state["events"]) as f:
        text = f.read()
    os.truncate(state["events"], 0)
    time.sleep(0.2)  # the follower sees the truncation
    with open(state["events"], "w") as f:
        f.write(text)


def r_restart(state, watch):
    watch.stop()
    state["earlier"] = watch.closed
    return Watch(state["tmp"], state["checkpoint"])


def run_reader():
    return [reader_case(name, fault) for name, fault in [
        ("follower, no fault", r_none),
        ("rotation: mv events.ndjson events.1", r_rename),
        ("rotation: rm events.ndjson, recreated", r_delete),
        ("copy-truncate, regrown past the offset before a poll", r_copy_truncate_regrow),
        ("truncate and rewrite (rows without delivery keys)", r_rewrite),
        ("watch restarted with --checkpoint", r_restart),
    ]]


def table(title, head, rows):
    print(f"\n{title}\n")
    print("| case | " + " | ".join(head) + " |")
    print("|---|" + "---:|" * len(head))
    for name, *cells in rows:
        print(f"| {name} | " + " | ".join(str(c) for c in cells) + " |")


if __name__ == "__main__":
    table(f"Producer ({N} deliveries per case unless said)",
          ["rows written", "delivered", "lost", "duplicated", "via http", "events replayed",
           "events a live watch saw"],
          run_producer())
    table("Reader (`hooktrack watch --ndjson`, counted in closed turns)",
          ["turns written", "delivered", "lost", "duplicated"], run_reader())
