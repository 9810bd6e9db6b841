@QUEUE@
const ARGV = [@ARGV@];
const EVENTS = [@EVENTS@];
// Forwarded only when a prompt queued while Pi worked starts inside the running agent run
// (below), not each time they fire.
const QUEUED_ONLY = new Set(["turn_end", "message_start"]);
let prompted = false;
// The run's own prompt message has yet to start (the first user message of a run a prompt
// started); the stop reason of the run's last model call.
let ownPrompt = false;
let lastStop;

// Longest error text sent: enough for every text hooktrack compares or shows.
const clip = (text) => (typeof text === "string" && text.length > 1024 ? text.slice(0, 1024) : text);

// The fields of Pi's event hooktrack reads (Pi's adapter): a tool's arguments and result
// and the messages' text never leave the agent.
function fields(name, e) {
  switch (name) {
    case "session_start":
    case "session_shutdown":
      return { reason: e?.reason };
    case "agent_start": {
      const retry = !prompted;
      prompted = false;
      ownPrompt = !retry;
      lastStop = undefined;
      return { retry };
    }
    case "agent_end": {
      const messages = Array.isArray(e?.messages) ? e.messages : [];
      let last;
      for (let i = messages.length - 1; i >= 0 && !last; i--) if (messages[i]?.role === "assistant") last = messages[i];
      return { stopReason: last?.stopReason, errorMessage: clip(last?.errorMessage) };
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
    pi.on("before_agent_start", () => {
      prompted = true;
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
      if (QUEUED_ONLY.has(name)) continue;
      pi.on(name, (event, ctx) => {
        try {
          send(name, ctx, fields(name, event));
        } catch {}
      });
    }
  } catch {}
}
