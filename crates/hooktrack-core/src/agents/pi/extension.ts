import { spawn, spawnSync } from "node:child_process";

const ARGV = [@ARGV@];
const EVENTS = [@EVENTS@];
const pending = [];
let running = false;
let prompted = false;

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

function fields(name, e) {
  switch (name) {
    case "session_start":
    case "session_shutdown":
      return { reason: e?.reason };
    case "agent_start": {
      const retry = !prompted;
      prompted = false;
      return { retry };
    }
    case "agent_end": {
      const messages = Array.isArray(e?.messages) ? e.messages : [];
      let last;
      for (let i = messages.length - 1; i >= 0 && !last; i--) if (messages[i]?.role === "assistant") last = messages[i];
      return { stopReason: last?.stopReason, errorMessage: last?.errorMessage };
    }
    case "tool_execution_start":
    case "tool_execution_end":
      return { toolCallId: e?.toolCallId, toolName: e?.toolName, isError: e?.isError };
    default:
      return {};
  }
}

export default function (pi) {
  try {
    pi.on("before_agent_start", () => {
      prompted = true;
    });
    for (const name of EVENTS) {
      pi.on(name, (event, ctx) => {
        try {
          let session_id;
          try {
            session_id = ctx?.sessionManager?.getSessionId();
          } catch {}
          const payload = JSON.stringify({ hook_event_name: name, session_id, properties: fields(name, event) });
          pending.push([name, payload]);
          if (!running) next();
        } catch {}
      });
    }
  } catch {}
}
