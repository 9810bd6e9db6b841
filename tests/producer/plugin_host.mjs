// A stand-in for the JavaScript host an agent loads hooktrack's plugin in: OpenCode calls
// the plugin's export and hands its `event` handler each bus event; Pi calls the
// extension's default export with `pi`, whose `on` registers a handler per event. The
// host fires COUNT tool events at once, each carrying a 500 KB tool output (and a tool
// name of NAME_BYTES), as the agent does without waiting on the handler.
//
//   node --expose-gc plugin_host.mjs PLUGIN AGENT COUNT NAME_BYTES MODE
//
// MODE `exit`: the host exits right after the burst (the plugin's exit flush runs).
// MODE `hold`: it prints `{"rss_before", "rss_after"}` (bytes, after a garbage
// collection each) and exits when its stdin ends.
const [plugin, agent, count, nameBytes, mode] = process.argv.slice(2);
const output = "o".repeat(500 * 1024);
const tool = "t".repeat(Number(nameBytes));
const mod = await import(plugin);

let fire;
if (agent === "pi") {
  const handlers = new Map();
  mod.default({ on: (name, handler) => handlers.set(name, handler) });
  const ctx = { sessionManager: { getSessionId: () => "ses_1" } };
  const handler = handlers.get("tool_execution_end");
  fire = (i) =>
    handler(
      { toolCallId: `call_${i}`, toolName: tool, isError: false, result: { content: [{ type: "text", text: output }] } },
      ctx,
    );
} else {
  const hooks = await mod.HooktrackObserver({});
  fire = (i) =>
    hooks.event({
      event: {
        type: "message.part.updated",
        properties: {
          part: {
            type: "tool",
            sessionID: "ses_1",
            callID: `call_${i}`,
            tool,
            state: { status: "completed", input: { command: "cat big" }, output },
          },
        },
      },
    });
}

const rss = () => {
  globalThis.gc?.();
  return process.memoryUsage().rss;
};
const before = rss();
for (let i = 0; i < Number(count); i++) fire(i);
if (mode === "exit") process.exit(0);
console.log(JSON.stringify({ rss_before: before, rss_after: rss() }));
process.stdin.resume();
process.stdin.on("end", () => process.exit(0));
