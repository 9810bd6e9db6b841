import { spawn, spawnSync } from "node:child_process";

const ARGV = [@ARGV@];
const EVENTS = new Set([@EVENTS@]);
// A child session's parent, to name the root session and the child (a subagent).
const parents = new Map();
// The last status of each session and tool call: the agent repeats both many times.
const last = new Map();
const pending = [];
let running = false;

function next() {
  const item = pending.shift();
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
    const child = spawn(ARGV[0], [...ARGV.slice(1), "--event", item[0]], { stdio: ["pipe", "ignore", "ignore"] });
    child.on("error", done);
    child.on("close", done);
    child.stdin.on("error", () => {});
    child.stdin.end(item[1]);
  } catch {
    done();
  }
}

process.on("exit", () => {
  for (const [name, payload] of pending.splice(0)) {
    try {
      spawnSync(ARGV[0], [...ARGV.slice(1), "--event", name], { input: payload, stdio: ["pipe", "ignore", "ignore"], timeout: 4000 });
    } catch {}
  }
});

export const HooktrackObserver = async () => ({
  event: async ({ event }) => {
    try {
      const name = event?.type;
      if (!EVENTS.has(name)) return;
      const p = event.properties ?? {};
      const info = name === "session.created" ? p.info : undefined;
      if (info?.parentID) parents.set(info.id, info.parentID);
      let sid = p.sessionID ?? info?.id;
      let state;
      if (name === "message.part.updated") {
        if (p.part?.type !== "tool") return;
        sid = p.part.sessionID;
        state = ["c" + p.part.callID, p.part.state?.status];
      } else if (name === "session.status") {
        state = ["s" + sid, p.status?.type];
      }
      if (state) {
        if (last.get(state[0]) === state[1]) return;
        last.set(state[0], state[1]);
      }
      let root = sid;
      for (let i = 0; i < 64 && parents.has(root); i++) root = parents.get(root);
      const agent_id = root === sid ? undefined : sid;
      const payload = JSON.stringify({ hook_event_name: name, session_id: root, agent_id, properties: p });
      pending.push([name, payload]);
      if (!running) next();
    } catch {}
  },
});
