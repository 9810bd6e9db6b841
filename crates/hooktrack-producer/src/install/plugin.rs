//! The plugin format: a JavaScript file the agent loads in-process (OpenCode's
//! `plugin/hooktrack.js`), wholly hooktrack's. It forwards the bus events the agent's
//! descriptor lists to the same `hooktrack-hook emit` every hook runs, one process per
//! event with the event as JSON on stdin, so the envelope, the store, the no-loss and
//! no-stdout guarantees and the routing by `HOOKTRACK_*` (the agent's own environment,
//! which the plugin sees) are the emitter's, unchanged.
//!
//! The file is rendered whole from the observer; its first line names hooktrack's version
//! and the route, which is how `check` tells a stale plugin, and the read-back compares
//! the whole text.

use std::path::Path;

use hooktrack_core::agent::Agent;

use super::format::{Edit, Removal};
use super::{InstallError, Observer, Replaced, Route, Validation, Violation};

/// The first line's start: how hooktrack knows the file is its own.
const MARK: &str = "// hooktrack observer plugin ";

/// The version of hooktrack that writes the plugin, and that `check` expects.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The plugin's text for `agent`.
pub fn render(agent: Agent, observer: &Observer) -> String {
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned());
    let mut argv = vec![
        observer.emitter.to_string_lossy().into_owned(),
        "emit".to_owned(),
        "--observer".to_owned(),
        super::command::OBSERVER_LABEL.to_owned(),
    ];
    let route = match &observer.route {
        Route::Environment => {
            argv.extend(["--agent".to_owned(), agent.store_name().to_owned()]);
            "routed by the environment".to_owned()
        }
        Route::Argv(to) => {
            argv.extend([
                "--url".to_owned(),
                to.url.clone(),
                "--dir".to_owned(),
                to.dir.to_string_lossy().into_owned(),
                "--provider".to_owned(),
                agent.store_name().to_owned(),
                "--generation".to_owned(),
                to.generation.to_string(),
            ]);
            format!("generation {}", to.generation)
        }
    };
    let argv: Vec<String> = argv.iter().map(|a| quote(a)).collect();
    let events: Vec<String> = agent
        .descriptor()
        .hook_events
        .iter()
        .map(|e| quote(e))
        .collect();
    if agent == Agent::Pi {
        return render_pi(agent, &route, &argv.join(", "), &events.join(", "));
    }
    format!(
        "{MARK}{VERSION} for {label} ({route})\n\
// Written by `hooktrack install {name}`; `hooktrack uninstall {name}` removes it, and the
// next install rewrites it whole. Each event below goes to the hook command with the event
// as JSON on stdin, one after another (the store keeps the agent's order), never awaited
// by the agent, every failure swallowed: the agent never waits on or sees hooktrack. What
// is still queued when the agent exits is handed over synchronously on its way out.
import {{ spawn, spawnSync }} from \"node:child_process\";

const ARGV = [{argv}];
const EVENTS = new Set([{events}]);
// A child session's parent, to name the root session and the child (a subagent).
const parents = new Map();
// The last status of each session and tool call: the agent repeats both many times.
const last = new Map();
const pending = [];
let running = false;

function next() {{
  const item = pending.shift();
  running = item !== undefined;
  if (!running) return;
  let settled = false;
  const done = () => {{
    if (!settled) {{
      settled = true;
      next();
    }}
  }};
  try {{
    const child = spawn(ARGV[0], [...ARGV.slice(1), \"--event\", item[0]], {{ stdio: [\"pipe\", \"ignore\", \"ignore\"] }});
    child.on(\"error\", done);
    child.on(\"close\", done);
    child.stdin.on(\"error\", () => {{}});
    child.stdin.end(item[1]);
  }} catch {{
    done();
  }}
}}

process.on(\"exit\", () => {{
  for (const [name, payload] of pending.splice(0)) {{
    try {{
      spawnSync(ARGV[0], [...ARGV.slice(1), \"--event\", name], {{ input: payload, stdio: [\"pipe\", \"ignore\", \"ignore\"], timeout: 4000 }});
    }} catch {{}}
  }}
}});

export const HooktrackObserver = async () => ({{
  event: async ({{ event }}) => {{
    try {{
      const name = event?.type;
      if (!EVENTS.has(name)) return;
      const p = event.properties ?? {{}};
      const info = name === \"session.created\" ? p.info : undefined;
      if (info?.parentID) parents.set(info.id, info.parentID);
      let sid = p.sessionID ?? info?.id;
      let state;
      if (name === \"message.part.updated\") {{
        if (p.part?.type !== \"tool\") return;
        sid = p.part.sessionID;
        state = [\"c\" + p.part.callID, p.part.state?.status];
      }} else if (name === \"session.status\") {{
        state = [\"s\" + sid, p.status?.type];
      }}
      if (state) {{
        if (last.get(state[0]) === state[1]) return;
        last.set(state[0], state[1]);
      }}
      let root = sid;
      for (let i = 0; i < 64 && parents.has(root); i++) root = parents.get(root);
      const agent_id = root === sid ? undefined : sid;
      const payload = JSON.stringify({{ hook_event_name: name, session_id: root, agent_id, properties: p }});
      pending.push([name, payload]);
      if (!running) next();
    }} catch {{}}
  }},
}});
",
        label = agent.label(),
        name = agent.typed_name(),
        argv = argv.join(", "),
        events = events.join(", "),
    )
}

/// Pi's extension (`extensions/hooktrack.ts`): the same queue and exit flush as the
/// OpenCode plugin, on Pi's `pi.on(event, handler)`. Each handler returns at once (Pi
/// awaits handlers in turn, so an awaited spawn would hold the agent), and forwards only
/// the few fields of Pi's event hooktrack reads: Pi's events carry whole messages and
/// tool outputs. Pi retries a failed model call by running its agent loop again with no
/// prompt (`before_agent_start` fires only for a prompt): `agent_start` says which.
fn render_pi(agent: Agent, route: &str, argv: &str, events: &str) -> String {
    const BODY: &str = r#"import { spawn, spawnSync } from "node:child_process";

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
"#;
    format!(
        "{MARK}{VERSION} for {label} ({route})\n\
// Written by `hooktrack install {name}`; `hooktrack uninstall {name}` removes it, and the
// next install rewrites it whole. Each event below goes to the hook command with the event
// as JSON on stdin, one after another (the store keeps the agent's order), never awaited
// by the agent, every failure swallowed: the agent never waits on or sees hooktrack. What
// is still queued when the agent exits is handed over synchronously on its way out.
{body}",
        label = agent.label(),
        name = agent.typed_name(),
        body = BODY.replace("@ARGV@", argv).replace("@EVENTS@", events),
    )
}

/// The install edit: the whole file, rendered.
pub(crate) fn edit(
    agent: Agent,
    _config: &Path,
    before: &str,
    observer: &Observer,
) -> Result<Edit, InstallError> {
    let replaced = match header(before) {
        Some(h) => Replaced::entries_of(h.generation),
        None => Replaced::Nothing,
    };
    Ok(Edit {
        text: render(agent, observer),
        replaced,
        outside: String::new(),
    })
}

/// The read-back: exactly the text rendered.
pub(crate) fn read_back(
    agent: Agent,
    back: &str,
    observer: &Observer,
    _outside: &str,
) -> Result<Validation, Violation> {
    if back != render(agent, observer) {
        return Err(Violation::new(
            "the plugin read back differs from what was written",
        ));
    }
    validate(back, agent)
}

/// Removes the plugin (with `generation`, only a plugin of that generation).
pub(crate) fn remove(text: &str, generation: Option<u64>) -> Removal {
    let Some(h) = header(text) else {
        return Removal::Nothing;
    };
    if generation.is_some() && h.generation != generation {
        return Removal::KeptOther {
            generation: h.generation,
        };
    }
    Removal::Delete {
        generation: h.generation,
    }
}

/// The plugin is hooktrack's, of this version, and forwards every event hooktrack reads.
pub(crate) fn check(
    agent: Agent,
    config: &Path,
    text: Option<&str>,
) -> Result<Validation, InstallError> {
    let Some(text) = text else {
        return Err(InstallError::NotInstalled {
            path: config.to_owned(),
            reason: "the plugin file does not exist",
        });
    };
    let valid = validate(text, agent).map_err(|violation| InstallError::Invalid {
        path: config.to_owned(),
        violation,
    })?;
    if agent == Agent::Pi
        && let Some(entry) = pi_excluded(config)
    {
        return Err(InstallError::Invalid {
            path: config.to_owned(),
            violation: Violation::new(format!(
                "Pi's settings.json excludes it (`{entry}` in `extensions`): Pi does not load it"
            )),
        });
    }
    Ok(valid)
}

/// The entry of Pi's `settings.json` (beside `extensions/`) that keeps Pi from loading
/// the extension at `config`: `-path` or `!pattern` in `extensions`, as `pi config`
/// writes them. A missing or unreadable settings file excludes nothing.
fn pi_excluded(config: &Path) -> Option<String> {
    let dir = config.parent()?.parent()?;
    let text = std::fs::read_to_string(dir.join("settings.json")).ok()?;
    let settings: serde_json::Value = serde_json::from_str(&text).ok()?;
    let full = config.to_string_lossy();
    let relative = config
        .strip_prefix(dir)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = config
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    settings
        .get("extensions")?
        .as_array()?
        .iter()
        .filter_map(|e| e.as_str())
        .find(|entry| {
            let Some(pattern) = entry.strip_prefix('-').or_else(|| entry.strip_prefix('!')) else {
                return false;
            };
            [full.as_ref(), relative.as_str(), name.as_str()]
                .iter()
                .any(|candidate| glob(pattern, candidate))
        })
        .map(str::to_owned)
}

/// `*` (and `**`) match any run of characters, `?` one; enough to tell whether an
/// exclusion names the extension.
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Whether `text` is hooktrack's plugin of this version for `agent`, and (with an
/// observer) exactly the one it renders.
pub fn validate(text: &str, agent: Agent) -> Result<Validation, Violation> {
    let Some(h) = header(text) else {
        return Err(Violation::new("it is not hooktrack's plugin"));
    };
    if h.version != VERSION {
        return Err(Violation::new(format!(
            "the plugin is hooktrack {}'s, not {VERSION}'s: run `hooktrack install {}`",
            h.version,
            agent.typed_name()
        )));
    }
    for event in agent.descriptor().hook_events {
        let quoted = serde_json::to_string(event).unwrap_or_default();
        if !text.contains(&quoted) {
            return Err(Violation::new(format!(
                "the plugin does not forward {event}"
            )));
        }
    }
    Ok(Validation {
        entries: 1,
        ours: 1,
        generation: h.generation,
        routed: h.generation.is_none(),
    })
}

/// What the first line says.
struct Header<'a> {
    version: &'a str,
    generation: Option<u64>,
}

fn header(text: &str) -> Option<Header<'_>> {
    let first = text.lines().next()?.strip_prefix(MARK)?;
    let (version, rest) = first.split_once(' ')?;
    let generation = rest
        .rsplit_once("(generation ")
        .and_then(|(_, g)| g.strip_suffix(')'))
        .and_then(|g| g.parse().ok());
    Some(Header {
        version,
        generation,
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn observer() -> Observer {
        Observer {
            emitter: PathBuf::from("/opt/it's/hooktrack-hook"),
            route: Route::Environment,
            agent_version: None,
        }
    }

    #[test]
    fn the_rendered_plugin_validates_and_names_the_emitter_quoted() {
        let text = render(Agent::OpenCode, &observer());
        assert!(text.contains(r#"const ARGV = ["/opt/it's/hooktrack-hook", "emit""#));
        let v = validate(&text, Agent::OpenCode).expect("valid");
        assert_eq!((v.ours, v.generation, v.routed), (1, None, true));
    }

    #[test]
    fn an_older_plugin_or_another_file_is_not_valid() {
        let text = render(Agent::OpenCode, &observer());
        let old = text.replacen(VERSION, "0.0.0-old", 1);
        let e = validate(&old, Agent::OpenCode).expect_err("stale");
        assert!(e.contains("0.0.0-old"), "{e}");
        assert!(validate("export const X = 1;\n", Agent::OpenCode).is_err());
        let fewer = text.replace("\"session.error\", ", "");
        assert!(validate(&fewer, Agent::OpenCode).is_err());
    }

    #[test]
    fn the_pi_extension_validates_and_forwards_its_events() {
        let text = render(Agent::Pi, &observer());
        assert!(text.contains("export default function (pi)"), "{text}");
        assert!(text.contains(r#""--agent", "pi""#), "{text}");
        let v = validate(&text, Agent::Pi).expect("valid");
        assert_eq!((v.ours, v.generation, v.routed), (1, None, true));
        let fewer = text.replace("\"agent_end\"", "\"agent_gone\"");
        assert!(validate(&fewer, Agent::Pi).is_err());
    }

    #[test]
    fn a_pi_extension_excluded_in_pis_settings_fails_check() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let config = tmp.path().join("extensions/hooktrack.ts");
        let text = render(Agent::Pi, &observer());
        assert!(check(Agent::Pi, &config, Some(&text)).is_ok());
        for entry in [
            format!("-{}", config.display()),
            "!**/hooktrack.ts".to_owned(),
            "!extensions/*.ts".to_owned(),
        ] {
            let settings = serde_json::json!({ "extensions": [entry] }).to_string();
            std::fs::write(tmp.path().join("settings.json"), settings).expect("write");
            match check(Agent::Pi, &config, Some(&text)) {
                Err(InstallError::Invalid { violation, .. }) => {
                    assert!(violation.contains("excludes"), "{violation:?}");
                }
                other => panic!("{entry}: {other:?}"),
            }
        }
        let settings = serde_json::json!({ "extensions": ["!other.ts", "/x/mine.ts"] });
        std::fs::write(tmp.path().join("settings.json"), settings.to_string()).expect("write");
        assert!(check(Agent::Pi, &config, Some(&text)).is_ok());
    }

    #[test]
    fn removal_deletes_only_hooktracks_plugin_of_the_generation() {
        let text = render(Agent::OpenCode, &observer());
        assert_eq!(remove(&text, None), Removal::Delete { generation: None });
        assert_eq!(remove("// a user's plugin\n", None), Removal::Nothing);
    }
}
