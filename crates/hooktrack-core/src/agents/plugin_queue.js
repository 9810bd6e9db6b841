// The queue every hooktrack plugin hands its events to: one hook process at a time, in
// the agent's order, never awaited. The agent must not wait on hooktrack nor hold its
// events for it: the queue keeps at most MAX_QUEUED events and MAX_QUEUED_BYTES of
// payload, dropping the oldest past either, and the next row it sends says how many
// (`hooktrack.events_lost`), so the store shows the gap. At the agent's exit what is
// still queued is handed over within EXIT_BUDGET_MS in all; what is left then is counted
// in a last loss row, whose hook process the agent does not wait for.
import { spawn, spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAX_QUEUED = 128;
const MAX_QUEUED_BYTES = 2 * 1024 * 1024;
const EXIT_BUDGET_MS = 400;
const LOST = "hooktrack.events_lost";
// [event name, payload (JSON text), its size in bytes, its session id]
const pending = [];
let pendingBytes = 0;
// Dropped since the last loss row, and the session of the last one dropped.
let lost = 0;
let lostBytes = 0;
let lostSession;
let running = false;

function enqueue(name, sessionId, payload) {
  const size = Buffer.byteLength(payload);
  pending.push([name, payload, size, sessionId]);
  pendingBytes += size;
  while (pending.length > MAX_QUEUED || pendingBytes > MAX_QUEUED_BYTES) {
    const dropped = pending.shift();
    pendingBytes -= dropped[2];
    lost += 1;
    lostBytes += dropped[2];
    lostSession = dropped[3];
  }
  if (!running) next();
}

// The next row to send: the loss row first when events were dropped before the rest.
function take() {
  if (lost > 0) {
    const payload = JSON.stringify({ hook_event_name: LOST, session_id: lostSession, lost, lost_bytes: lostBytes });
    lost = 0;
    lostBytes = 0;
    return [LOST, payload];
  }
  const item = pending.shift();
  if (item !== undefined) pendingBytes -= item[2];
  return item;
}

function next() {
  const item = take();
  running = item !== undefined;
  if (!running) return;
  let settled = false;
  const done = () => {
    if (!settled) {
      settled = true;
      next();
    }
  };
  try {
    const fd = payloadFile(item[1], IN_MEMORY);
    let child;
    try {
      child = spawn(ARGV[0], [...ARGV.slice(1), "--event", item[0]], { stdio: [fd ?? "pipe", "ignore", "ignore"] });
    } finally {
      closeQuietly(fd);
    }
    child.on("error", done);
    child.on("close", done);
    if (fd === undefined) {
      child.stdin.on("error", () => {});
      child.stdin.end(item[1]);
    }
  } catch {
    done();
  }
}

// Where a payload file may go while the agent runs: memory only (tmpfs). Its syscalls run
// on the agent's event loop: in a disk's folder they took up to a second under a loaded
// disk (500 files: p99 0.04-0.15 ms in /dev/shm, 250-440 ms in /tmp at load 23).
// Without it, a pipe, as before.
const IN_MEMORY = ["/dev/shm"];

// The payload as a hook process's stdin: a file written whole, opened for reading and
// unlinked at once, in the first of `dirs` that takes it (its descriptor, for the caller
// to close once the process has it), or undefined when none did. A pipe's end is closed
// only when the agent's event loop next runs, and the hook process reads to the end: an
// agent busy right after an answer (Kilo starting the call it allowed) held the answer's
// row until then. A file needs no loop, nor an agent still there (`handOff`).
function payloadFile(payload, dirs) {
  for (const base of dirs) {
    let dir;
    let fd;
    try {
      dir = mkdtempSync(join(base, "hooktrack-"));
      const file = join(dir, "payload.json");
      writeFileSync(file, payload, { mode: 0o600 });
      fd = openSync(file, "r");
      unlinkSync(file);
      return fd;
    } catch {
      closeQuietly(fd);
    } finally {
      try {
        if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
      } catch {}
    }
  }
  return undefined;
}

function closeQuietly(fd) {
  try {
    if (fd !== undefined) closeSync(fd);
  } catch {}
}

// A hook process the exiting agent does not wait for, its payload in a file
// (`payloadFile`: no pipe can be written once the agent is gone).
function handOff(name, payload) {
  const fd = payloadFile(payload, [...IN_MEMORY, tmpdir()]);
  if (fd === undefined) return;
  try {
    spawn(ARGV[0], [...ARGV.slice(1), "--event", name], { stdio: [fd, "ignore", "ignore"], detached: true }).unref();
  } catch {
  } finally {
    closeQuietly(fd);
  }
}

process.on("exit", () => {
  const deadline = Date.now() + EXIT_BUDGET_MS;
  for (;;) {
    const left = deadline - Date.now();
    const item = left > 0 ? take() : undefined;
    if (item === undefined) break;
    try {
      spawnSync(ARGV[0], [...ARGV.slice(1), "--event", item[0]], { input: item[1], stdio: ["pipe", "ignore", "ignore"], timeout: left });
    } catch {}
  }
  // Out of time: what is still queued is counted, not handed over.
  for (const dropped of pending.splice(0)) {
    lost += 1;
    lostBytes += dropped[2];
    lostSession = dropped[3];
  }
  pendingBytes = 0;
  const last = take();
  if (last !== undefined) handOff(last[0], last[1]);
});
