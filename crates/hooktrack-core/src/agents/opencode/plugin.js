@QUEUE@
const ARGV = [@ARGV@];
const EVENTS = new Set([@EVENTS@]);
// A child session's parent, to name the root session and the child (a subagent).
const parents = new Map();
// Root sessions created with no one to ask (their rules deny the `question` tool: what
// `opencode run` and `kilo run` create): a permission rejected there is the agent's own.
const unattended = new Set();
// Those of them whose run rejected a permission since their last `idle`.
const rejected = new Set();
// The last status of each session and tool call: the agent repeats both many times.
const last = new Map();

// Longest error text sent: enough for every text hooktrack compares or shows.
const clip = (text) => (typeof text === "string" && text.length > 1024 ? text.slice(0, 1024) : text);

// The fields of a bus event's properties hooktrack reads (OpenCode's adapter, and the
// version that tells Kilo's sessions): a tool's input and output, a message's text and
// the rest never leave the agent.
function read(p, root) {
  const part = p.part;
  const state = part?.state;
  const error = p.error;
  const info = p.info;
  return {
    sessionID: p.sessionID,
    status: p.status && {
      type: p.status.type,
      attempt: p.status.attempt,
      autoRejected: (p.status.type === "idle" && root === p.sessionID && rejected.delete(root)) || undefined,
    },
    part: part && {
      type: part.type,
      sessionID: part.sessionID,
      callID: part.callID,
      tool: part.tool,
      state: state && { status: state.status, error: clip(state.error) },
      unattended: unattended.has(root) || undefined,
    },
    error: error && { name: error.name, data: error.data && { message: clip(error.data.message) } },
    info: info && { id: info.id, parentID: info.parentID, version: info.version },
    id: p.id,
    requestID: p.requestID,
    reply: p.reply,
    permission: p.permission,
  };
}

export const HooktrackObserver = async () => ({
  event: async ({ event }) => {
    try {
      const name = event?.type;
      if (!EVENTS.has(name)) return;
      const p = event.properties ?? {};
      const info = name === "session.created" ? p.info : undefined;
      if (info?.parentID) parents.set(info.id, info.parentID);
      else if (info && Array.isArray(info.permission) && info.permission.some((r) => r?.permission === "question" && r?.action === "deny"))
        unattended.add(info.id);
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
      if (name === "permission.replied" && p.reply === "reject" && unattended.has(root)) rejected.add(root);
      const agent_id = root === sid ? undefined : sid;
      enqueue(name, root, JSON.stringify({ hook_event_name: name, session_id: root, agent_id, properties: read(p, root) }));
    } catch {}
  },
});
