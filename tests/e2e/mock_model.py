#!/usr/bin/env python3
"""A scripted stand-in for the model servers of the four agent CLIs.

Binds 127.0.0.1 on an ephemeral port, prints the port on the first line of stdout, and
answers from a fixed script chosen by a `[[marker]]` in the conversation's latest prompt:

- OpenAI chat completions, `POST /v1/chat/completions` (Kimi CLI, Kimi Code, Qwen Code,
  GitHub Copilot CLI and OpenCode: told apart by the tools offered, Kimi Code's include
  `Bash`, Copilot's `read_bash`, or by the model name, `qwen…`, `opencode…` and, among those
  offering `Bash`, Letta Code's `letta…`), streamed or not;
- Anthropic Messages, `POST /v1/messages` (Claude Code), streamed (SSE) or not;
- OpenAI Responses, `POST /v1/responses` (Codex), streamed (SSE);
- Gemini, `POST /v1beta/models/M:streamGenerateContent` (SSE), `:generateContent` and
  `:countTokens` (Gemini CLI).
- Augment's API (Auggie, whose tenant URL is this server): `POST /get-models` (a model `mock`
  and the tenant flag `enable_hooks`), `/agents/list-remote-tools`, the MCP settings
  calls, `/report-error`, and `/chat-stream` (one JSON object a line: text, or tool calls
  as response nodes of type 5; `[[fail]]` a 400, `[[retryalways]]` a 500).

Scripts:

- `[[tools]]`: step 1 runs a shell command and writes `notes.txt`, step 2 reads it back,
  step 3 answers in text (each CLI with its own tool names);
- `[[fail]]`: every model call fails with a non-retryable 400;
- `[[retry]]` (chat completions): the first two calls of the server's life fail with a
  retryable 500, then one text answer; `[[retryalways]]`: every call fails with a
  retryable 500 (Pi's provider client retries a 500 twice by itself before Pi sees it);
  `[[retry3]]`: the first three calls fail so (Pi's first attempt), then one text answer;
- `[[plain]]` (or anything else): one text answer;
- `[[repeat]]`: one phrase repeated 400 times (degenerate output);
- `[[slowtext]]` (streamed chat completions, and Claude Code's streamed Messages): a text
  answer streamed one word a second, over a minute, to press Escape
  while it streams, no tool running;
- Kimi Code only, the scenarios of its end-to-end tests and recordings (`KIMI_CODE`): a
  command that needs approval, a slow command, parallel commands, a subagent (foreground,
  background, asking permission), a background shell task, a question dialog.

Claude Code only (the cases of its background work and dialogs; other CLIs answer text):

- `[[bgagent]]`: an `Agent` call whose subagent prompt carries `[[subtool]]`, then text;
  `[[bgagent_ask]]` the same with `[[subask]]`;
- `[[subtool]]`: a `Bash` `echo` (allowed without asking), then text; `[[subask]]`: a `Bash`
  `touch` (asks in manual mode), then text;
- `[[bgbash]]`: a `Bash` call with `run_in_background`, then text;
- `[[slow]]`: a `Bash` call that takes 30 s (to press Escape during it), then text;
- `[[ask]]`: a `Bash` `touch` that needs permission, then text;
- `[[wait20]]`, `[[wait3]]`: a `Bash` call that needs permission and runs 20 s (3 s), then
  text;
- `[[askeach]]`, `[[wait3each]]`: as `[[ask]]` and `[[wait3]]`, but the call's id is new for
  each prompt (its number in the conversation): one dialog per prompt in one conversation,
  where a fixed id is called once (the mock answers text once its call is there).

The step is the number of tool results after the prompt carrying the marker, so the
script is stateless and a re-run gives the same conversation. Standard library only; it
serves until it is killed or its stdin closes.
"""

import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
MARKER = re.compile(r"\[\[(\w+)\]\]")
FINAL = "The file holds two lines. Done."
HELLO = "Hello from the mock model."
# `[[repeat]]`: an answer that is one phrase over and over, which Factory Droid refuses
# as degenerate output ("The model repeatedly generated the same output").
REPEATED = "again and again " * 400
SUMMARY = "Summary: the user asked for scripted steps and they ran."

# The tool calls of `[[tools]]`, per CLI: (id, name, arguments) per step.
TOOLS = {
    "kimi": [
        [("call_t_0", "Shell", {"command": "echo hello-from-shell"}),
         ("call_t_1", "WriteFile", {"path": "notes.txt", "content": "line one\nline two\n"})],
        [("call_t_2", "ReadFile", {"path": "notes.txt"})],
    ],
    "claude": [
        [("toolu_mock_0", "Bash", {"command": "echo hello-from-shell", "description": "Print a greeting"}),
         ("toolu_mock_1", "Write", {"file_path": "{cwd}/notes.txt", "content": "line one\nline two\n"})],
        [("toolu_mock_2", "Read", {"file_path": "{cwd}/notes.txt"})],
    ],
    "codex": [
        [("call_mock_0", "exec_command", {"cmd": "echo hello-from-shell"}),
         ("call_mock_1", "exec_command", {"cmd": "printf 'line one\\nline two\\n' > notes.txt"})],
        [("call_mock_2", "exec_command", {"cmd": "cat notes.txt"})],
    ],
    "gemini": [
        [("", "run_shell_command", {"command": "echo hello-from-shell", "description": "Print a greeting"}),
         ("", "write_file", {"file_path": "{cwd}/notes.txt", "content": "line one\nline two\n"})],
        [("", "read_file", {"file_path": "{cwd}/notes.txt"})],
    ],
    "copilot": [
        [("call_c_0", "bash", {"command": "echo hello-from-shell", "description": "Print a greeting"}),
         ("call_c_1", "bash", {"command": "printf 'line one\\nline two\\n' > notes.txt", "description": "Write notes"})],
        [("call_c_2", "view", {"path": "{cwd}/notes.txt"})],
    ],
    # Factory Droid: `Execute` (with its required summary and risk level), `Read`.
    "droid": [
        [("call_d_0", "Execute", {"command": "echo hello-from-shell", "summary": "Print a greeting",
                                  "riskLevel": "low", "riskLevelReason": "It only prints text."}),
         ("call_d_1", "Execute", {"command": "printf 'line one\\nline two\\n' > notes.txt",
                                  "summary": "Write the notes file", "riskLevel": "low",
                                  "riskLevelReason": "It writes one scratch file in the project."})],
        [("call_d_2", "Read", {"file_path": "{cwd}/notes.txt"})],
    ],
    "qwen": [
        [("call_q_0", "run_shell_command", {"command": "echo hello-from-shell", "description": "Print a greeting"}),
         ("call_q_1", "write_file", {"file_path": "{cwd}/notes.txt", "content": "line one\nline two\n"})],
        [("call_q_2", "read_file", {"file_path": "{cwd}/notes.txt"})],
    ],
    "opencode": [
        [("call_o_0", "bash", {"command": "echo hello-from-shell", "description": "Print a greeting"}),
         ("call_o_1", "write", {"filePath": "{cwd}/notes.txt", "content": "line one\nline two\n"})],
        [("call_o_2", "read", {"filePath": "{cwd}/notes.txt"})],
    ],
    # Cline: `run_commands` (a list of commands), `editor` (creates the file with
    # `new_text`), `read_files`.
    "cline": [
        [("call_l_0", "run_commands", {"commands": ["echo hello-from-shell"]}),
         ("call_l_1", "editor", {"path": "{cwd}/notes.txt", "new_text": "line one\nline two\n"})],
        [("call_l_2", "read_files", {"files": [{"path": "{cwd}/notes.txt"}]})],
    ],
    # Auggie: `launch-process` (its `cwd` is required), `save-file`, `view`.
    "auggie": [
        [("toolu_g_0", "launch-process", {"command": "echo hello-from-shell", "wait": True,
                                          "max_wait_seconds": 30, "cwd": "{cwd}"}),
         ("toolu_g_1", "save-file", {"path": "notes.txt", "file_content": "line one\nline two\n"})],
        [("toolu_g_2", "view", {"path": "notes.txt", "type": "file"})],
    ],
    # Letta Code: Claude's names, `Write` and `Read` take a `file_path`.
    "letta": [
        [("call_lt_0", "Bash", {"command": "echo hello-from-shell"}),
         ("call_lt_1", "Write", {"file_path": "{cwd}/notes.txt", "content": "line one\nline two\n"})],
        [("call_lt_2", "Read", {"file_path": "{cwd}/notes.txt"})],
    ],
    # Pi: `bash`, `write` and `read` take a `path`.
    "pi": [
        [("call_p_0", "bash", {"command": "echo hello-from-shell"}),
         ("call_p_1", "write", {"path": "{cwd}/notes.txt", "content": "line one\nline two\n"})],
        [("call_p_2", "read", {"path": "{cwd}/notes.txt"})],
    ],
}

# Codex's `exec_command` arguments that ask to run outside the sandbox: with
# `-a on-request` its TUI asks the user first.
ESCALATE = {"sandbox_permissions": "require_escalated", "justification": "Run it outside the sandbox?"}

# More scripts for the TUI recordings, per CLI: `[[perm]]` one shell call that asks for
# approval, `[[slow]]` a shell call that runs long enough to press Escape, `[[agent]]` a
# subagent whose own prompt is plain.
SCRIPTS = {
    "qwen": {
        "perm": [[("call_q_p", "run_shell_command", {"command": "touch approved.txt", "description": "Create a file"})]],
        # Qwen Code drops a call whose id it has already run: a second approval prompt needs
        # an id of its own.
        "reject": [[("call_q_r", "run_shell_command", {"command": "touch rejected.txt", "description": "Create a file"})]],
        "slow": [[("call_q_w", "run_shell_command", {"command": "sleep 40 # intentional-sleep: long enough to press Escape",
                                                    "description": "Wait"})]],
        # The same call under an id of its own, for a second slow call in one session.
        "slow2": [[("call_q_w2", "run_shell_command", {"command": "sleep 30 # intentional-sleep: long enough to queue a prompt",
                                                      "description": "Wait"})]],
        # `[[wait20]]` (`[[wait3]]`): a call that asks (the default approval mode) and runs
        # 20 s (3 s), so the screen after "Yes" shows it running long before its end hook;
        # the id new for each prompt (Qwen Code drops one it has run); it blocks a standalone
        # `sleep` without the comment.
        "wait20": [[("call_q_t_{P}", "run_shell_command", {"command": "sleep 20 # intentional-sleep: runs past the answer",
                                                           "description": "Wait twenty seconds"})]],
        "wait3": [[("call_q_3_{P}", "run_shell_command", {"command": "sleep 3 # intentional-sleep: runs past the answer",
                                                          "description": "Wait three seconds"})]],
        "agent": [[("call_q_a", "agent", {"description": "Say hello", "prompt": "Say hello. [[plain]]",
                                          "subagent_type": "general-purpose"})]],
    },
    # Factory Droid: `Execute`; a medium-risk command asks in the TUI's default autonomy.
    "droid": {
        "perm": [[("call_d_p", "Execute", {"command": "touch approved.txt", "summary": "Create the approved file",
                                           "riskLevel": "medium", "riskLevelReason": "It creates a file in the project."})]],
        "reject": [[("call_d_r", "Execute", {"command": "touch rejected.txt", "summary": "Create the rejected file",
                                             "riskLevel": "medium", "riskLevelReason": "It creates a file in the project."})]],
        "slow": [[("call_d_w", "Execute", {"command": "sleep 40", "summary": "Wait for forty seconds",
                                           "riskLevel": "low", "riskLevelReason": "It only waits."})]],
        # A command asked about (medium risk) that runs long enough to read the screen after
        # "Yes" (`[[wait]]`: 20 s); `[[wait3each]]` a 3 s one whose call id is new for each
        # prompt (`<id>_<P>`, as Claude Code's), one dialog per prompt in one conversation.
        "wait": [[("call_d_t", "Execute", {"command": "sleep 20", "summary": "Wait for twenty seconds",
                                           "riskLevel": "medium", "riskLevelReason": "It holds the shell."})]],
        "wait3each": [[("call_d_e", "Execute", {"command": "sleep 3", "summary": "Wait for three seconds",
                                                "riskLevel": "medium", "riskLevelReason": "It holds the shell."})]],
        # `Task` (offered from `--auto high` on) runs the custom droid `helper` that the
        # recording's `~/.factory/droids/helper.md` defines; its own prompt is plain.
        # `[[agent]]` waits for it (`await`), `[[bgagent]]` runs it in the background (the
        # default: the result comes back as a message that starts a turn of its own).
        "agent": [[("call_d_a", "Task", {"subagent_type": "helper", "description": "Say hello",
                                         "prompt": "Say hello. [[plain]]", "await": True})]],
        "bgagent": [[("call_d_b", "Task", {"subagent_type": "helper", "description": "Say hello",
                                           "prompt": "Say hello. [[plain]]"})]],
    },
    # GitHub Copilot CLI: `bash` (with a `description`), `view`, `task` for a subagent.
    "copilot": {
        "perm": [[("call_c_p", "bash", {"command": "touch approved.txt", "description": "Create a file"})]],
        "reject": [[("call_c_r", "bash", {"command": "touch rejected.txt", "description": "Create a file"})]],
        "slow": [[("call_c_w", "bash", {"command": "sleep 40", "description": "Wait"})]],
        # A call asked about that runs long enough to read the screen after "Yes".
        "wait": [[("call_c_t", "bash", {"command": "sleep 20", "description": "Wait"})]],
        # `[[wait20]]` / `[[wait3]]`: the same for 20 s / 3 s, the id new for each prompt.
        "wait20": [[("call_c_t_{P}", "bash", {"command": "sleep 20", "description": "Wait twenty seconds"})]],
        "wait3": [[("call_c_3_{P}", "bash", {"command": "sleep 3", "description": "Wait three seconds"})]],
        "agent": [[("call_c_a", "task", {"name": "greeter", "description": "Say hello",
                                         "prompt": "Say hello. [[plain]]", "agent_type": "general-purpose"})]],
        # The same in the background: the call returns at once, the turn ends, and Copilot
        # reports the agent's end in a prompt of its own (`<system_notification>`).
        "bgagent": [[("call_c_b", "task", {"name": "greeter", "description": "Say hello",
                                           "prompt": "Say hello. [[plain]]", "agent_type": "general-purpose",
                                           "mode": "background"})]],
    },
    # OpenCode (and Kilo): `[[perm]]` a call outside the project folder, which asks;
    # `[[slow]]` a shell call long enough to press Escape; `[[agent]]` a `task` subagent
    # that runs a tool of its own (`[[subtool]]`).
    "opencode": {
        "perm": [[("call_o_p", "bash", {"command": "touch approved.txt", "description": "Create a file"})]],
        "reject": [[("call_o_r", "bash", {"command": "touch rejected.txt", "description": "Create a file"})]],
        "slow": [[("call_o_w", "bash", {"command": "sleep 40", "description": "Wait"})]],
        "agent": [[("call_o_a", "task", {"description": "Say hello", "prompt": "Say hello. [[subtool]]",
                                         "subagent_type": "general"})]],
        "subtool": [[("call_o_s", "bash", {"command": "echo from-subagent", "description": "Print"})]],
        # `[[question]]`: the `question` tool (offered in the TUI, not in `opencode run`),
        # which waits on the user's answer.
        "question": [[("call_o_q", "question", {"questions": [{
            "question": "Which color?", "header": "Color",
            "options": [{"label": "Red", "description": "A warm color"},
                        {"label": "Blue", "description": "A cool color"}]}]})]],
        # `[[wait20]]` (`[[wait3]]`): a shell call that asks (with a `permission` of `ask`
        # for bash) and then runs 20 s (3 s), so the screen after "Allow once" can be
        # read while it runs.
        "wait20": [[("call_o_t", "bash", {"command": "sleep 20", "description": "Wait twenty seconds"})]],
        "wait3": [[("call_o_3", "bash", {"command": "sleep 3", "description": "Wait three seconds"})]],
    },
    # Cline: `[[slow]]` a shell call long enough to press Escape.
    "cline": {
        "slow": [[("call_l_w", "run_commands", {"commands": ["sleep 40"]})]],
    },
    # Codex (`exec_command`) and Gemini CLI (`run_shell_command`), in a TUI that asks
    # before a command: `[[perm]]` / `[[reject]]` a `touch` to approve / reject, `[[wait20]]`
    # (`[[wait3]]`) a call that asks and then runs 20 s (3 s), so the screen after "Yes"
    # shows it running long before its end hook.
    # Codex asks (`-a on-request`) for a call that wants to leave the sandbox.
    "codex": {
        "perm": [[("call_x_p", "exec_command", {"cmd": "touch approved.txt", **ESCALATE})]],
        "reject": [[("call_x_r", "exec_command", {"cmd": "touch rejected.txt", **ESCALATE})]],
        # Codex hands a command still running after `yield_time_ms` (10 s by default)
        # back to the model, with no `PostToolUse`: this one waits for the whole call.
        "wait20": [[("call_x_t", "exec_command", {"cmd": "sleep 20", "yield_time_ms": 30000, **ESCALATE})]],
        "wait3": [[("call_x_3", "exec_command", {"cmd": "sleep 3", "yield_time_ms": 30000, **ESCALATE})]],
    },
    "gemini": {
        "perm": [[("", "run_shell_command", {"command": "touch approved.txt", "description": "Create a file"})]],
        "reject": [[("", "run_shell_command", {"command": "touch rejected.txt", "description": "Create a file"})]],
        "wait20": [[("", "run_shell_command", {"command": "sleep 20", "description": "Wait twenty seconds"})]],
        "wait3": [[("", "run_shell_command", {"command": "sleep 3", "description": "Wait three seconds"})]],
    },
    # Auggie: `[[slow]]` a `launch-process` long enough to press Escape; `[[perm]]` one
    # that writes a file.
    "auggie": {
        "slow": [[("toolu_g_w", "launch-process", {"command": "sleep 40", "wait": True,
                                                   "max_wait_seconds": 60, "cwd": "{cwd}"})]],
        "perm": [[("toolu_g_p", "launch-process", {"command": "touch approved.txt", "wait": True,
                                                   "max_wait_seconds": 30, "cwd": "{cwd}"})]],
    },
    # Letta Code: `[[slow]]` a shell call long enough to press Escape, `[[broken]]` a call
    # that fails (a `Read` of a file that is not there).
    "letta": {
        "slow": [[("call_lt_w", "Bash", {"command": "sleep 40"})]],
        "broken": [[("call_lt_b", "Read", {"file_path": "{cwd}/missing.txt"})]],
    },
    # Pi: `[[slow]]` a shell call long enough to press Escape; `[[wait5]]` one long
    # enough to type a prompt while it runs.
    "pi": {
        "slow": [[("call_p_w", "bash", {"command": "sleep 40"})]],
        "wait5": [[("call_p_5", "bash", {"command": "sleep 5"})]],
    },
}

# Kimi Code 2.x scripts: marker -> (steps of (id, name, args), final text). A subagent's
# prompt carries its own marker, so its conversation follows its own script.
KIMI_CODE = {
    "tools": ([
        [("call_t_0", "Bash", {"command": "echo hello-from-shell"}),
         ("call_t_1", "Write", {"path": "notes.txt", "content": "line one\nline two\n"})],
        [("call_t_2", "Read", {"path": "notes.txt"})],
    ], FINAL),
    "perm": ([[("call_p_0", "Bash", {"command": "touch approved.txt"})]], "Permission step done."),
    "slow": ([[("call_s_0", "Bash", {"command": "sleep 30"})]], "Slept."),
    "parallel": ([[("call_par_0", "Bash", {"command": "echo one"}),
                   ("call_par_1", "Bash", {"command": "echo two"}),
                   ("call_par_2", "Bash", {"command": "echo three"})]], "Three commands ran."),
    "subagent": ([[("call_a_0", "Agent", {"description": "Inspect the folder",
                                           "prompt": "Print a greeting. [[subtools]]"})]],
                 "The subagent finished."),
    "subtools": ([[("call_sub_0", "Bash", {"command": "echo from-subagent"})]], "Subagent done."),
    "slowsub": ([[("call_sub_2", "Bash", {"command": "sleep 3; echo from-subagent"})]],
                "Subagent done."),
    "subperm": ([[("call_a_1", "Agent", {"description": "Touch a file",
                                          "prompt": "Create a file. [[subpermtool]]"})]],
                "The subagent finished."),
    "subpermtool": ([[("call_sub_1", "Bash", {"command": "touch from-subagent.txt"})]],
                    "Subagent done."),
    "bgagent": ([[("call_a_2", "Agent", {"description": "Greet in background",
                                          "prompt": "Greet slowly. [[slowsub]]",
                                          "run_in_background": True})]],
                "The background subagent was started."),
    "bgtask": ([[("call_bg_0", "Bash", {"command": "sleep 3; echo bg-done",
                                        "description": "Sleep briefly",
                                        "run_in_background": True})]],
               "The background task was started."),
    "ask": ([[("call_q_0", "AskUserQuestion", {"questions": [{
        "question": "Which color?", "header": "Color",
        "options": [{"label": "Red"}, {"label": "Blue"}]}]})]], "Noted the color."),
    "conttool": ([[("call_c_0", "Bash", {"command": "echo continuing"})]], "Continuation done."),
}


# Claude Code scripts of one step: the calls, then a text answer.
CLAUDE_ONE_STEP = {
    "bgagent": [("toolu_mock_a", "Agent", {"description": "Helper task", "subagent_type": "general-purpose",
                                           "prompt": "Say where you are. [[subtool]]"})],
    "bgagent_ask": [("toolu_mock_a", "Agent", {"description": "Helper task", "subagent_type": "general-purpose",
                                               "prompt": "Create a file. [[subask]]"})],
    "subtool": [("toolu_mock_s", "Bash", {"command": "echo sub-work", "description": "Print sub work"})],
    "subask": [("toolu_mock_s", "Bash", {"command": "touch sub-made.txt", "description": "Create a file"})],
    "bgbash": [("toolu_mock_b", "Bash", {"command": "sleep 4 && echo bg-done", "description": "Wait in the background",
                                         "run_in_background": True})],
    # Not `sleep`: 2.1.33x blocks a sleep before PreToolUse.
    "slow": [("toolu_mock_w", "Bash", {"command": "timeout 30 tail -f /dev/null; echo slow-done",
                                       "description": "Wait a while"})],
    "ask": [("toolu_mock_k", "Bash", {"command": "touch asked.txt", "description": "Create a file"})],
    # A call that asks for permission, then runs 20 s (3 s): the pane shows it answered
    # long before its PostToolUse.
    "wait20": [("toolu_mock_t", "Bash", {"command": "timeout 20 tail -f /dev/null; echo waited",
                                         "description": "Wait twenty seconds"})],
    "wait3": [("toolu_mock_3", "Bash", {"command": "timeout 3 tail -f /dev/null; echo waited",
                                        "description": "Wait three seconds"})],
}
ONE_STEP_TEXT = "Step done."

# Claude Code scripts of one step whose call id is new for each prompt (`<id>_<P>`, P the
# prompt's number in the conversation), so that each prompt gets its own dialog.
CLAUDE_EACH_PROMPT = {
    "askeach": [("toolu_mock_e", "Bash", {"command": "touch asked.txt", "description": "Create a file"})],
    "wait3each": [("toolu_mock_f", "Bash", {"command": "timeout 3 tail -f /dev/null; echo waited",
                                            "description": "Wait three seconds"})],
}


class Turn:
    """What the conversation so far asks for: the script, the step, the working dir."""

    def __init__(self, prompts, results_after, cwd):
        marker = ""
        index = -1
        for i, text in enumerate(prompts):
            found = MARKER.findall(text)
            if found:
                marker, index = found[-1], i
        self.marker = marker
        # The number of the prompt that carries it.
        self.prompt = index
        self.step = results_after(index)
        self.cwd = cwd
        # The tool_use ids the model already sent in this conversation (Anthropic only).
        self.called = set()


# How many calls of `[[retry]]` failed so far (this server's lifetime: one test's).
RETRIED = {"count": 0}
RETRY_FAILURES = 2


def reply(cli, turn):
    """`("fail", None)`, `("retryable", None)`, `("text", str)` or `("calls", [(id, name, args)])`."""
    if turn.marker == "fail":
        return ("fail", None)
    if turn.marker == "retryalways":
        return ("retryable", None)
    if turn.marker in ("retry", "retry3"):
        with LOCK:
            RETRIED["count"] += 1
            failing = RETRIED["count"] <= (3 if turn.marker == "retry3" else RETRY_FAILURES)
        return ("retryable", None) if failing else ("text", HELLO)
    if turn.marker == "repeat":
        return ("text", REPEATED)
    if cli == "kimi-code" and turn.marker in KIMI_CODE:
        steps, final = KIMI_CODE[turn.marker]
        done = 0
        for calls in steps:
            if turn.step == done:
                return ("calls", [(i, name, fill(args, turn.cwd)) for i, name, args in calls])
            done += len(calls)
        return ("text", final)
    steps = TOOLS[cli] if turn.marker == "tools" else SCRIPTS.get(cli, {}).get(turn.marker)
    if steps:
        # Both calls of step 1 come back before step 2.
        done = 0
        each = turn.marker.endswith("each")
        for n, calls in enumerate(steps):
            if turn.step == done:
                # `{P}` in an id: the prompt's number, as `each` does (for a script that
                # keeps the name the other CLIs' tests prompt with).
                return ("calls", [(f"{i}_{turn.prompt}" if each else i.replace("{P}", str(turn.prompt)),
                                   name, fill(args, turn.cwd))
                                  for i, name, args in calls])
            done += len(calls)
        return ("text", FINAL)
    if cli == "claude" and turn.marker in CLAUDE_EACH_PROMPT:
        calls = [(f"{i}_{turn.prompt}", name, args) for i, name, args in CLAUDE_EACH_PROMPT[turn.marker]]
        if not any(i in turn.called for i, _, _ in calls):
            return ("calls", [(i, name, fill(args, turn.cwd)) for i, name, args in calls])
        return ("text", ONE_STEP_TEXT)
    if cli == "claude" and turn.marker in CLAUDE_ONE_STEP:
        # Done once the script's call is in the conversation: Claude Code 2.1.33x moves a
        # later prompt behind the `tool_result`s of earlier calls, so counting results
        # after the prompt does not tell.
        calls = CLAUDE_ONE_STEP[turn.marker]
        if not any(i in turn.called for i, _, _ in calls):
            return ("calls", [(i, name, fill(args, turn.cwd)) for i, name, args in CLAUDE_ONE_STEP[turn.marker]])
        return ("text", ONE_STEP_TEXT)
    return ("text", HELLO)


def fill(args, cwd):
    # Nested too: Cline's `read_files` takes a list of `{path}` objects.
    if isinstance(args, dict):
        return {k: fill(v, cwd) for k, v in args.items()}
    if isinstance(args, list):
        return [fill(v, cwd) for v in args]
    return args.replace("{cwd}", cwd or ".") if isinstance(args, str) else args


def cwd_in(text):
    match = re.search(r"(?:working directory|Working directory|cwd)[^/]*(/[^\s'\"`<>]+)", text or "")
    return match.group(1).rstrip(".,)") if match else ""


# ---------------------------------------------------------------- per-protocol parsing

def turn_chat(body):
    messages = body.get("messages", [])
    prompts, owners = [], []
    for i, m in enumerate(messages):
        if m.get("role") == "user":
            prompts.append(flatten(m.get("content")))
            owners.append(i)

    def after(index):
        start = owners[index] if index >= 0 else 0
        return sum(1 for m in messages[start + 1:] if m.get("role") == "tool")
    text = " ".join(flatten(m.get("content")) for m in messages if m.get("role") in ("system", "user"))
    # Qwen Code names it in its first user message ("working in the directory: D"), GitHub
    # Copilot CLI in its system message ("Current working directory: D"), OpenCode in its
    # system prompt ("Working directory: D", read by cwd_in).
    # Factory Droid in the output of the `pwd` it ran at session start ("% pwd\nD").
    found = re.search(r"(?:working in the directory:|Current working directory:|% pwd\n)\s*(/\S+)", text)
    return Turn(prompts, after, found.group(1) if found else cwd_in(text))


def turn_anthropic(body):
    # Claude Code 2.1.33x sends a prompt typed after a rejected or interrupted call in the
    # same user message as that call's `tool_result`: count by content block, not message.
    blocks = []
    for m in body.get("messages", []):
        content = m.get("content")
        parts = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        blocks.extend((m.get("role"), b) for b in parts if isinstance(b, dict))
    prompts, owners = [], []
    for i, (role, b) in enumerate(blocks):
        if role == "user" and b.get("type") == "text":
            prompts.append(b.get("text", ""))
            owners.append(i)

    def after(index):
        start = owners[index] if index >= 0 else 0
        return sum(1 for role, b in blocks[start:] if role == "user" and b.get("type") == "tool_result")
    system = flatten(body.get("system"))
    turn = Turn(prompts, after, cwd_in(system))
    turn.called = {b.get("id") for role, b in blocks if role == "assistant" and b.get("type") == "tool_use"}
    return turn


def turn_responses(body):
    items = body.get("input", [])
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    prompts, owners = [], []
    cwd = ""
    for i, item in enumerate(items):
        if item.get("type", "message") == "message" and item.get("role") == "user":
            text = flatten(item.get("content"))
            prompts.append(text)
            owners.append(i)
            m = re.search(r"<cwd>([^<]+)</cwd>", text)
            if m:
                cwd = m.group(1)

    def after(index):
        start = owners[index] if index >= 0 else 0
        return sum(1 for it in items[start + 1:] if it.get("type") == "function_call_output")
    return Turn(prompts, after, cwd)


def turn_gemini(body):
    contents = body.get("contents", [])
    prompts, owners = [], []
    for i, c in enumerate(contents):
        if c.get("role") == "user":
            texts = [p.get("text", "") for p in c.get("parts", []) if "text" in p]
            if texts:
                prompts.append(" ".join(texts))
                owners.append(i)

    def after(index):
        start = owners[index] if index >= 0 else 0
        return sum(1 for c in contents[start + 1:] for p in c.get("parts", []) if "functionResponse" in p)
    everything = " ".join(prompts) + " " + flatten(body.get("systemInstruction", {}).get("parts"))
    return Turn(prompts, after, cwd_in(everything))


def flatten(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(flatten(p.get("text", p.get("content", ""))) if isinstance(p, dict) else str(p)
                        for p in content)
    if isinstance(content, dict):
        return flatten(content.get("text", ""))
    return ""


# ------------------------------------------------------------------------- the server

USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}


# Qwen Code's compaction: `/compress` replaces the history only when its token count does
# not grow (the last turn's reported `prompt_tokens` against the summary's), so a short
# history with the 100 tokens of `USAGE` is "not beneficial"; and it compresses on its own
# before a prompt once the last reported prompt passes 85 % of the model's window (262144
# tokens for `qwen-mock`). `[[bigctx]]` answers text reporting 240000 prompt tokens; the
# summary request (its directive asks for a `<state_snapshot>`) of a conversation holding
# `[[bigctx]]` gets one, the same usage, after a pause long enough to read the screen while
# it compacts. The summary names the marker again, so a compacted history compacts again.
QWEN_BIG_PROMPT = 240000
QWEN_SUMMARY = ("<state_snapshot>\n<overall_goal>Scripted mock turns.</overall_goal>\n"
                "<key_knowledge>The user asked for a big context: [[bigctx]].</key_knowledge>\n"
                "</state_snapshot>")


def qwen_compaction(body, kind, value, usage):
    messages = body.get("messages") or [{}]
    big = {"prompt_tokens": QWEN_BIG_PROMPT, "completion_tokens": 60, "total_tokens": QWEN_BIG_PROMPT + 60}
    summary_request = "produce the <state_snapshot> XML" in flatten(messages[-1].get("content"))
    if summary_request and any("[[bigctx]]" in flatten(m.get("content")) for m in messages):
        time.sleep(2)
        return "text", QWEN_SUMMARY, big
    if not summary_request and turn_chat(body).marker == "bigctx":
        return kind, value, big
    return kind, value, usage


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("mock: " + (fmt % args) + "\n")

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        if self.path.split("?")[0].rstrip("/").endswith("/models"):
            self.send_json({"object": "list", "data": [{"id": "kimi-mock", "object": "model"}],
                            "models": []})
        else:
            self.send_json({"error": "not found"}, 404)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) or b"{}"
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        path = self.path.split("?")[0].rstrip("/")
        dump = os.environ.get("MOCK_DUMP")
        if dump:
            # For writing a script: every request body, one JSON line each.
            with open(dump, "a") as f:
                f.write(json.dumps({"path": path, "body": body}) + "\n")
        if path.endswith("/chat/completions"):
            self.chat(body)
        elif path.endswith("/messages/count_tokens"):
            self.send_json({"input_tokens": 100})
        elif path.endswith("/messages"):
            self.anthropic(body)
        elif path.endswith("/responses"):
            self.openai_responses(body)
        elif ":countTokens" in path:
            self.send_json({"totalTokens": 100})
        elif ":streamGenerateContent" in path or ":generateContent" in path:
            self.gemini(body, stream=":streamGenerateContent" in path)
        elif path in AUGMENT_STATIC:
            self.send_json(AUGMENT_STATIC[path])
        elif path == "/chat-stream":
            self.augment(body)
        else:
            self.send_json({"error": "not found"}, 404)

    # -- plumbing

    def send_json(self, doc, status=200):
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_sse(self, events, named=True):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for e in events:
            if named and isinstance(e, dict) and "type" in e:
                self.wfile.write(b"event: " + e["type"].encode() + b"\n")
            data = e if isinstance(e, str) else json.dumps(e)
            self.wfile.write(b"data: " + data.encode() + b"\n\n")
        self.wfile.flush()
        self.close_connection = True

    def slow_text(self, body):
        """`[[slowtext]]` (streamed chat completions): a text answer of 60 words, one a
        second, to press Escape while it streams with no tool running. A client that
        hangs up ends it."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        model = str(body.get("model", ""))

        def send(delta, finish=None):
            doc = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            self.wfile.write(b"data: " + json.dumps(doc).encode() + b"\n\n")
            self.wfile.flush()
        try:
            send({"role": "assistant", "content": ""})
            for n in range(60):
                send({"content": f"word{n} "})
                time.sleep(1)
            send({}, "stop")
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except OSError:
            pass
        self.close_connection = True

    def fail(self, shape):
        self.send_json(shape, 400)

    # -- OpenAI chat completions (Kimi CLI)

    def chat(self, body):
        offered = {t.get("function", {}).get("name") for t in body.get("tools") or []
                   if isinstance(t, dict)}
        usage = USAGE
        messages = body.get("messages") or [{}]
        if "Bash" in offered and "handoff summary" in flatten(messages[-1].get("content")):
            # Kimi Code's compaction (it still offers the tools) wants a text summary,
            # whatever marker the conversation it summarizes holds.
            kind, value = ("text", SUMMARY)
        elif "Bash" in offered and str(body.get("model", "")).startswith("letta"):
            # Letta Code (`-m ollama/letta-mock`): Claude's tool names, its own script.
            kind, value = reply("letta", turn_chat(body))
        elif "Bash" in offered:
            kind, value = reply("kimi-code", turn_chat(body))
        elif "read_bash" in offered:
            # GitHub Copilot CLI: its shell tool family (`bash`, `read_bash`, ...).
            kind, value = reply("copilot", turn_chat(body))
        else:
            # Qwen Code speaks chat completions too; its model name picks its tool names.
            model = str(body.get("model", ""))
            cli = ("qwen" if model.startswith("qwen") else "opencode" if model.startswith("opencode")
                   else "droid" if model.startswith("droid") else "kimi")
            # Pi: its model `pi-mock` picks Pi's tool names.
            cli = "pi" if model.startswith("pi-") else cli
            # Cline: its model `cline-mock` picks Cline's tool names.
            cli = "cline" if model.startswith("cline") else cli
            kind, value = reply(cli, turn_chat(body))
            if cli == "qwen":
                kind, value, usage = qwen_compaction(body, kind, value, usage)
        if kind == "fail":
            return self.fail({"error": {"message": "mock model: scripted failure",
                                        "type": "invalid_request_error"}})
        if kind == "retryable":
            return self.send_json({"error": {"message": "mock model: overloaded, try again",
                                             "type": "server_error"}}, 500)
        if body.get("stream") and turn_chat(body).marker == "slowtext":
            return self.slow_text(body)
        calls = value if kind == "calls" else []
        text = value if kind == "text" else None

        def chunk(delta, finish=None):
            return {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0,
                    "model": "kimi-mock", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        if not body.get("stream"):
            message = {"role": "assistant", "content": text}
            if calls:
                message["tool_calls"] = [{"id": i, "type": "function",
                                          "function": {"name": n, "arguments": json.dumps(a)}}
                                         for i, n, a in calls]
            return self.send_json({"id": "chatcmpl-mock", "object": "chat.completion", "created": 0,
                                   "model": "kimi-mock", "usage": usage,
                                   "choices": [{"index": 0, "message": message,
                                                "finish_reason": "tool_calls" if calls else "stop"}]})
        events = [chunk({"role": "assistant", "content": ""})]
        for index, (i, n, a) in enumerate(calls):
            events.append(chunk({"tool_calls": [{"index": index, "id": i, "type": "function",
                                                 "function": {"name": n, "arguments": json.dumps(a)}}]}))
        if calls:
            events.append(chunk({}, "tool_calls"))
        else:
            events.append(chunk({"content": text}))
            events.append(chunk({}, "stop"))
        events.append({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0,
                       "model": "kimi-mock", "choices": [], "usage": usage})
        events.append("[DONE]")
        self.send_sse(events, named=False)

    # -- Anthropic Messages (Claude Code)

    def anthropic(self, body):
        kind, value = reply("claude", turn_anthropic(body))
        if kind == "fail":
            return self.fail({"type": "error", "error": {"type": "invalid_request_error",
                                                         "message": "mock model: scripted failure"}})
        if body.get("stream") and turn_anthropic(body).marker == "slowtext":
            return self.slow_anthropic(body)
        model = body.get("model", "claude-mock")
        blocks = []
        if kind == "text":
            blocks.append({"type": "text", "text": value})
        else:
            for i, n, a in value:
                blocks.append({"type": "tool_use", "id": i, "name": n, "input": a})
        stop = "tool_use" if kind == "calls" else "end_turn"
        usage = {"input_tokens": 100, "output_tokens": 10}
        if not body.get("stream"):
            return self.send_json({"id": "msg_mock", "type": "message", "role": "assistant",
                                   "model": model, "content": blocks, "stop_reason": stop,
                                   "stop_sequence": None, "usage": usage})
        events = [{"type": "message_start", "message": {
            "id": "msg_mock", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 1}}}]
        for index, b in enumerate(blocks):
            if b["type"] == "text":
                events.append({"type": "content_block_start", "index": index,
                               "content_block": {"type": "text", "text": ""}})
                events.append({"type": "content_block_delta", "index": index,
                               "delta": {"type": "text_delta", "text": b["text"]}})
            else:
                events.append({"type": "content_block_start", "index": index,
                               "content_block": {"type": "tool_use", "id": b["id"], "name": b["name"],
                                                 "input": {}}})
                events.append({"type": "content_block_delta", "index": index,
                               "delta": {"type": "input_json_delta",
                                         "partial_json": json.dumps(b["input"])}})
            events.append({"type": "content_block_stop", "index": index})
        events.append({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                       "usage": {"output_tokens": 10}})
        events.append({"type": "message_stop"})
        self.send_sse(events)

    def slow_anthropic(self, body):
        """`[[slowtext]]` for Claude Code: a text answer of 60 words, one a second, as
        Anthropic SSE; a client that hangs up (Escape) ends it."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()

        def send(doc):
            self.wfile.write(b"event: " + doc["type"].encode() + b"\n")
            self.wfile.write(b"data: " + json.dumps(doc).encode() + b"\n\n")
            self.wfile.flush()
        try:
            send({"type": "message_start", "message": {
                "id": "msg_mock", "type": "message", "role": "assistant",
                "model": body.get("model", "claude-mock"), "content": [], "stop_reason": None,
                "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 1}}})
            send({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
            for n in range(60):
                send({"type": "content_block_delta", "index": 0,
                      "delta": {"type": "text_delta", "text": f"word{n} "}})
                time.sleep(1)
            send({"type": "content_block_delta", "index": 0,
                  "delta": {"type": "text_delta", "text": "Slow answer done."}})
            send({"type": "content_block_stop", "index": 0})
            send({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                  "usage": {"output_tokens": 61}})
            send({"type": "message_stop"})
        except OSError:
            pass
        self.close_connection = True

    # -- OpenAI Responses (Codex)

    def openai_responses(self, body):
        kind, value = reply("codex", turn_responses(body))
        if kind == "fail":
            return self.fail({"error": {"message": "mock model: scripted failure",
                                        "type": "invalid_request_error", "code": "invalid_request"}})
        output = []
        if kind == "text":
            output.append({"type": "message", "id": "msg_mock", "role": "assistant", "status": "completed",
                           "content": [{"type": "output_text", "text": value, "annotations": []}]})
        else:
            for n, (i, name, args) in enumerate(value):
                output.append({"type": "function_call", "id": f"fc_mock_{n}", "call_id": i, "name": name,
                               "arguments": json.dumps(args), "status": "completed"})
        response = {"id": "resp_mock", "object": "response", "created_at": 0, "status": "in_progress",
                    "model": body.get("model", "gpt-mock"), "output": []}
        events = [{"type": "response.created", "response": response}]
        for index, item in enumerate(output):
            events.append({"type": "response.output_item.added", "output_index": index,
                           "item": dict(item, status="in_progress")})
            if item["type"] == "message":
                events.append({"type": "response.output_text.delta", "item_id": item["id"],
                               "output_index": index, "content_index": 0,
                               "delta": item["content"][0]["text"]})
            events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        done = dict(response, status="completed", output=output, usage={
            "input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 110})
        events.append({"type": "response.completed", "response": done})
        self.send_sse(events)

    # -- Augment's chat stream (Auggie)

    def augment(self, body):
        """`/chat-stream`: one JSON object a line; a tool call is a response node of type
        5 (`tool_use`, its input as a JSON string) with `stop_reason` 3 (tool use
        requested), a text answer `text` and `stop_reason` 1 (end turn)."""
        turn = turn_augment(body)
        kind, value = reply("auggie", turn)
        if kind == "fail":
            return self.send_json({"error": "mock model: scripted failure"}, 400)
        if kind == "retryable":
            return self.send_json({"error": "mock model: overloaded, try again"}, 500)
        if kind == "text":
            lines = [{"text": value, "nodes": [{"id": 1, "type": 0, "content": value}]},
                     {"text": "", "nodes": [], "stop_reason": 1}]
        else:
            nodes = [{"id": n + 1, "type": 5, "content": "",
                      "tool_use": {"tool_use_id": i, "tool_name": name, "input_json": json.dumps(args)}}
                     for n, (i, name, args) in enumerate(value)]
            lines = [{"text": "", "nodes": nodes}, {"text": "", "nodes": [], "stop_reason": 3}]
        data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    # -- Gemini (Gemini CLI)

    def gemini(self, body, stream):
        kind, value = reply("gemini", turn_gemini(body))
        if kind == "fail":
            return self.fail({"error": {"code": 400, "message": "mock model: scripted failure",
                                        "status": "INVALID_ARGUMENT"}})
        if kind == "text":
            parts = [{"text": value}]
        else:
            parts = [{"functionCall": {"name": n, "args": a}} for _, n, a in value]
        doc = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                               "index": 0}],
               "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10,
                                 "totalTokenCount": 110},
               "modelVersion": "gemini-mock"}
        if not stream:
            return self.send_json(doc)
        self.send_sse([doc], named=False)


# -- Augment's API (Auggie): its tenant URL is this server.

# The fixed answers Auggie needs before a prompt: a model, and the tenant feature flag
# that turns its hooks on (`enable_hooks`); no remote tools, no MCP configs.
AUGMENT_STATIC = {
    "/get-models": {"default_model": "mock",
                    "models": [{"name": "mock", "suggested_prefix_char_count": 0,
                                "suggested_suffix_char_count": 0}],
                    "feature_flags": {"enable_hooks": True}},
    "/agents/list-remote-tools": {"tools": []},
    "/settings/get-mcp-tenant-configs": {},
    "/settings/get-mcp-user-configs": {},
    "/report-error": {},
}


def turn_augment(body):
    """The prompt is `message` (or a text request node), earlier exchanges are in
    `chat_history`; the tool results since the prompt are the request's `tool_result_node`s
    and those of the exchanges after the one the marker's prompt opened."""
    def texts(nodes):
        return " ".join(n.get("text_node", {}).get("content", "") for n in nodes or []
                        if isinstance(n, dict) and n.get("text_node"))

    def results(nodes):
        return sum(1 for n in nodes or [] if isinstance(n, dict) and n.get("tool_result_node"))
    history = body.get("chat_history") or []
    prompts = [h.get("request_message") or texts(h.get("request_nodes")) for h in history]
    counts = [results(h.get("request_nodes")) for h in history]
    prompts.append(body.get("message") or texts(body.get("nodes")))
    counts.append(results(body.get("nodes")))
    # A tool result goes back without a prompt of its own: a later entry with no marker
    # (an empty message) belongs to the prompt before it.
    marked = [i for i, p in enumerate(prompts) if MARKER.search(p or "")]

    def after(index):
        start = marked[index] if 0 <= index < len(marked) else 0
        return sum(counts[start:])
    # The workspace is in the request's IDE state node (`current_working_directory`).
    found = re.search(r'"current_working_directory": "([^"]+)"', json.dumps(body.get("nodes") or []))
    return Turn([prompts[i] for i in marked], after, found.group(1) if found else "")


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # Serve until the parent closes our stdin (or kills us).
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
