@QUEUE@
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
const ARGV = [@ARGV@];
const EVENTS = [@EVENTS@];
// Forwarded only in the cases below, not each time they fire: `turn_end` and
// `message_start` when a prompt typed while Pi worked starts inside the running agent run,
// `before_agent_start` when a prompt comes instead of the retry Pi waited to start.
const ONLY_WHEN = new Set(["turn_end", "message_start", "before_agent_start"]);
let prompted = false;
// Pi 0.73.1's own retry of a failed model call (`AgentSession._isRetryableError`, the
// same test on the error text): after such an `agent_end` Pi waits (showing "Retrying
// (n/max) in Ns… (escape to cancel)") and runs the loop again with no prompt, unless its
// settings turn retries off or the attempts are used up. Pi tells extensions nothing of
// the wait, so the extension counts the attempts as Pi does.
const RETRYABLE =
  /overloaded|provider.?returned.?error|rate.?limit|too many requests|429|500|502|503|504|service.?unavailable|server.?error|internal.?error|network.?error|connection.?error|connection.?refused|connection.?lost|websocket.?closed|websocket.?error|other side closed|fetch failed|upstream.?connect|reset before headers|socket hang up|ended without|http2 request did not get a response|timed? out|timeout|terminated|retry delay/i;
let retryAttempts = 0;
// A retry announced (an `agent_end` forwarded with `retryAttempt`) whose run has not
// started yet.
let retryWaiting = false;

// Pi's `retry` settings: the project's `.pi/settings.json` over the agent folder's.
function retrySettings(ctx) {
  const read = (path) => {
    try {
      return JSON.parse(readFileSync(path, "utf8"))?.retry ?? {};
    } catch {
      return {};
    }
  };
  const dir = process.env.PI_CODING_AGENT_DIR || `${homedir()}/.pi/agent`;
  const merged = { ...read(`${dir}/settings.json`), ...read(`${ctx?.cwd ?? "."}/.pi/settings.json`) };
  return { enabled: merged.enabled ?? true, maxRetries: merged.maxRetries ?? 3 };
}
// The run's own prompt message has yet to start (the first user message of a run a prompt
// started); the stop reason of the run's last model call.
let ownPrompt = false;
let lastStop;

// Longest error text sent: enough for every text hooktrack compares or shows.
const clip = (text) => (typeof text === "string" && text.length > 1024 ? text.slice(0, 1024) : text);

// The fields of Pi's event hooktrack reads (Pi's adapter): a tool's arguments and result
// and the messages' text never leave the agent.
function fields(name, e, ctx) {
  switch (name) {
    case "session_start":
    case "session_shutdown":
      return { reason: e?.reason };
    case "agent_start": {
      const retry = !prompted;
      prompted = false;
      ownPrompt = !retry;
      lastStop = undefined;
      retryWaiting = false;
      return { retry };
    }
    case "agent_end": {
      const messages = Array.isArray(e?.messages) ? e.messages : [];
      let last;
      for (let i = messages.length - 1; i >= 0 && !last; i--) if (messages[i]?.role === "assistant") last = messages[i];
      let retryAttempt;
      if (last?.stopReason !== "error") retryAttempts = 0;
      else if (typeof last?.errorMessage === "string" && RETRYABLE.test(last.errorMessage)) {
        const settings = retrySettings(ctx);
        retryAttempts += 1;
        if (settings.enabled && retryAttempts <= settings.maxRetries) retryAttempt = retryAttempts;
        else retryAttempts = 0;
      }
      retryWaiting = retryAttempt !== undefined;
      return { stopReason: last?.stopReason, errorMessage: clip(last?.errorMessage), retryAttempt };
    }
    case "tool_execution_start":
    case "tool_execution_end":
      return { toolCallId: e?.toolCallId, toolName: e?.toolName, isError: e?.isError };
    default:
      return {};
  }
}

function send(name, ctx, properties) {
  let session_id;
  try {
    session_id = ctx?.sessionManager?.getSessionId();
  } catch {}
  enqueue(name, session_id, JSON.stringify({ hook_event_name: name, session_id, properties }));
}

export default function (pi) {
  try {
    // A prompt while Pi waits to retry: the wait was cancelled (Escape), Pi runs the prompt
    // instead, and counts its attempts from zero again.
    pi.on("before_agent_start", (event, ctx) => {
      prompted = true;
      try {
        if (!retryWaiting) return;
        retryWaiting = false;
        retryAttempts = 0;
        send("before_agent_start", ctx, { retryCancelled: true });
      } catch {}
    });
    pi.on("turn_end", (event) => {
      try {
        lastStop = event?.message?.stopReason;
      } catch {}
    });
    // A user message that is not the run's own prompt: one typed while Pi worked, taken up
    // in the same run. After an answer (the last call stopped on its own) it is a turn of
    // its own, and that answer's end goes first; before one (Enter during tool calls:
    // Pi's steer) it joins the running turn.
    pi.on("message_start", (event, ctx) => {
      try {
        if (event?.message?.role !== "user") return;
        if (ownPrompt) {
          ownPrompt = false;
          return;
        }
        const answered = lastStop === "stop" || lastStop === "length";
        if (answered) send("turn_end", ctx, { stopReason: lastStop });
        send("message_start", ctx, { role: "user", steer: !answered });
      } catch {}
    });
    for (const name of EVENTS) {
      if (ONLY_WHEN.has(name)) continue;
      pi.on(name, (event, ctx) => {
        try {
          send(name, ctx, fields(name, event, ctx));
        } catch {}
      });
    }
  } catch {}
}
