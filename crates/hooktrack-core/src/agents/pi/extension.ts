@QUEUE@
const ARGV = [@ARGV@];
const EVENTS = [@EVENTS@];
let prompted = false;

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
          enqueue(name, session_id, JSON.stringify({ hook_event_name: name, session_id, properties: fields(name, event) }));
        } catch {}
      });
    }
  } catch {}
}
