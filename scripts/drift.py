#!/usr/bin/env python3
"""Drives one agent CLI version through the recorded scenarios and prints what changed.

Used by `scripts/drift.sh AGENT VERSION` (see there and docs/providers.md). For each scenario
of the agent, the CLI runs through `hooktrack session` against tests/e2e/mock_model.py (a
scratch HOME; a TUI in tmux on a private socket), then the new store is replayed and set
against the recorded campaign in corpus/: the ledger against the recording's (as hooktrack reads both
today) and against its `.expect.toml` (turns, final phase, last result; unless the
expectation is pending on an open issue), and the hook events, in order, against its
`.ndjson`. A scenario
whose driver cannot run is reported as such. Exit 0 when nothing changed, 1 otherwise.

Standard library only. Bounded: every wait gives up after PATIENCE seconds.
"""

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib

PATIENCE = 60
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Hook events that come in varying numbers (display, batches, late notifications): not
# compared, they say nothing about turn state.
NOISE = {"MessageDisplay", "PostToolBatch", "Notification", "process_ended"}


class Tui:
    """The CLI's TUI in a tmux pane on a socket of its own."""

    def __init__(self, name, script):
        self.socket = f"hooktrack-drift-{os.getpid()}-{name}"
        subprocess.run(["tmux", "-L", self.socket, "new-session", "-d", "-x", "150", "-y", "45",
                        "bash", script], check=True)

    def keys(self, *keys):
        subprocess.run(["tmux", "-L", self.socket, "send-keys", *keys], check=True)
        time.sleep(0.3)

    def prompt(self, text):
        self.keys("-l", text)
        self.keys("Enter")

    def screen(self):
        return subprocess.run(["tmux", "-L", self.socket, "capture-pane", "-p"],
                              capture_output=True, text=True).stdout

    def wait(self, what, ok):
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            if ok(self.screen()):
                return
            time.sleep(0.2)
        raise TimeoutError(f"gave up waiting for {what}; screen:\n{self.screen()}")

    def close(self):
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


class World:
    """A scratch HOME, work dir and session root, and the mock model."""

    def __init__(self, base, name, claude, hooktrack, settings):
        self.dir = os.path.join(base, name)
        shutil.rmtree(self.dir, ignore_errors=True)
        self.home = os.path.join(self.dir, "home")
        self.work = os.path.join(self.dir, "work")
        self.root = os.path.join(self.dir, "root")
        os.makedirs(os.path.join(self.home, ".claude"))
        os.makedirs(self.work)
        with open(os.path.join(self.home, ".claude", "settings.json"), "w") as f:
            json.dump(settings, f)
        with open(os.path.join(self.home, ".claude.json"), "w") as f:
            json.dump({"hasCompletedOnboarding": True, "theme": "dark",
                       "customApiKeyResponses": {"approved": ["dummy-key-0123456789"], "rejected": []},
                       "projects": {self.work: {"hasTrustDialogAccepted": True,
                                                "hasCompletedProjectOnboarding": True}}}, f)
        self.mock = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests/e2e/mock_model.py")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.port = int(self.mock.stdout.readline())
        self.claude, self.hooktrack = claude, hooktrack
        self.env = dict(os.environ, HOME=self.home, ANTHROPIC_BASE_URL=f"http://127.0.0.1:{self.port}",
                        ANTHROPIC_API_KEY="dummy-key-0123456789",
                        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1")
        for var in ("CLAUDE_CONFIG_DIR", "HOOKTRACK_TOKEN", "HOOKTRACK_DIR", "HOOKTRACK_URL",
                    "HOOKTRACK_GENERATION", "TMUX"):
            self.env.pop(var, None)

    def session_argv(self, *args):
        return [self.hooktrack, "session", "--format", "ndjson", "--root", self.root,
                "--output", self.root + ".ndjson", "--", self.claude, *args]

    def headless(self, *args):
        subprocess.run(self.session_argv(*args), cwd=self.work, env=self.env, timeout=PATIENCE * 3,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def tui(self, name):
        script = os.path.join(self.dir, "run.sh")
        exports = " ".join(f"{k}='{v}'" for k, v in self.env.items()
                           if k in ("HOME", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY",
                                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_TELEMETRY"))
        argv = " ".join(f"'{a}'" for a in self.session_argv())
        with open(script, "w") as f:
            f.write(f"cd '{self.work}' || exit 1\nexport {exports}\n"
                    "unset CLAUDE_CONFIG_DIR HOOKTRACK_TOKEN HOOKTRACK_DIR HOOKTRACK_URL HOOKTRACK_GENERATION TMUX\n"
                    f"{argv}\nsleep 600\n")
        return Tui(name, script)

    def ended(self):
        """Waits for the session's end line."""
        deadline = time.monotonic() + PATIENCE
        out = self.root + ".ndjson"
        while time.monotonic() < deadline:
            try:
                with open(out) as f:
                    last = f.read().splitlines()[-1]
                if json.loads(last).get("kind") == "end":
                    return
            except (OSError, IndexError, ValueError):
                pass
            time.sleep(0.2)
        raise TimeoutError("gave up waiting for the session's end line")

    def events(self):
        return os.path.join(self.root, "hook-observation", "claude", "events.ndjson")

    def close(self):
        self.mock.stdin.close()
        try:
            self.mock.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.mock.kill()


def answer_manual_question(tui):
    """Waits for the prompt, answering the launch question of a manual-mode 2.1.33x
    (older versions do not ask)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        screen = tui.screen()
        if "keep manual mode" in screen:
            tui.keys("Down")
            tui.keys("Enter")
            return
        if "? for shortcuts" in screen or "auto mode on" in screen:
            return
        time.sleep(0.2)


def exit_tui(world, tui):
    tui.prompt("/exit")
    world.ended()


def answer_no(tui):
    tui.wait("the permission dialog", lambda s: "Do you want to proceed?" in s)
    choice = [m for m in re.findall(r"(\d)\. No\b", tui.screen())][-1]
    tui.keys(choice)
    tui.keys("Enter")


def reject_escape(world):
    tui = world.tui("reject")
    try:
        answer_manual_question(tui)
        tui.prompt("Make a file. [[ask]]")
        answer_no(tui)
        tui.wait("the rejection", lambda s: "Interrupted" in s)
        tui.prompt("Wait a while. [[slow]]")
        tui.wait("the dialog", lambda s: "Do you want to proceed?" in s and "slow-done" in s)
        tui.keys("1")
        tui.keys("Enter")
        tui.wait("the call running", lambda s: "Do you want to proceed?" not in s and "esc to interrupt" in s)
        tui.keys("Escape")
        tui.wait("the interrupt", lambda s: s.count("Interrupted") >= 2)
        tui.prompt("hello [[plain]]")
        tui.wait("the answer", lambda s: "Hello from the mock model." in s)
        exit_tui(world, tui)
    finally:
        tui.close()


def model_switch_compact(world):
    tui = world.tui("model")
    try:
        answer_manual_question(tui)
        tui.prompt("hello [[plain]]")
        tui.wait("the answer", lambda s: "Hello from the mock model." in s)
        tui.prompt("/model")
        tui.wait("the model picker", lambda s: "Sonnet" in s)
        tui.keys("4")
        tui.keys("Enter")
        tui.wait("the switch", lambda s: "Set model to" in s)
        tui.prompt("/compact")
        tui.wait("the compaction", lambda s: "Compacted" in s)
        exit_tui(world, tui)
    finally:
        tui.close()


def background_bash(world):
    tui = world.tui("bgbash")
    try:
        answer_manual_question(tui)
        tui.prompt("Wait in the background. [[bgbash]]")
        tui.wait("the background command's end", lambda s: "completed (exit code 0)" in s)
        time.sleep(2)
        exit_tui(world, tui)
    finally:
        tui.close()


def auto_dialog_background_subagent(world):
    tui = world.tui("autodialog")
    try:
        answer_manual_question(tui)
        tui.prompt("Start a helper. [[bgagent]]")
        tui.wait("the auto-mode dialog", lambda s: "Enter to stay in auto mode" in s)
        # The dialog takes keys a moment after it is drawn: Enter again while it shows.
        for _ in range(5):
            time.sleep(1)
            if "Enter to stay in auto mode" not in tui.screen():
                break
            tui.keys("Enter")
        tui.wait("the approval", lambda s: "Do you want to proceed?" in s)
        tui.keys("Down")
        tui.keys("Enter")
        tui.wait("the task notification's turn", lambda s: "finished" in s and "done" in s.split("finished")[-1])
        exit_tui(world, tui)
    finally:
        tui.close()


MANUAL = {"permissions": {"defaultMode": "manual"}}
# (corpus campaign, driver, settings)
SCENARIOS = {
    "claude-code": [
        ("claude-code-2.1.332-reject-escape-transcript", reject_escape, MANUAL),
        ("claude-code-2.1.332-model-switch-compact", model_switch_compact, MANUAL),
        ("claude-code-2.1.332-background-bash", background_bash, MANUAL),
        ("claude-code-2.1.332-auto-dialog-background-subagent", auto_dialog_background_subagent, {}),
    ],
}


def replay(hooktrack, events, transcripts):
    out = subprocess.run([hooktrack, "replay", "--format", "json", "--transcripts", transcripts, events],
                         capture_output=True, text=True, check=True)
    report = json.loads(out.stdout)
    turns = sorted(report["turns"], key=lambda t: (t["first_row"], t["id"]))
    ledger = [("main" if t["scope"] == "main" else "nested") + " " + t["result"] for t in turns]
    return ledger, report["final"]["turn"]["phase"], report["final"]["last_turn"]["result"]


def hook_events(path):
    names = []
    with open(path) as f:
        for line in f:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            name = row.get("event") or row.get("payload", {}).get("hook_event_name")
            if name and name not in NOISE:
                names.append(name)
    return names


def main():
    agent, version, claude, hooktrack, base = sys.argv[1:6]
    scenarios = SCENARIOS.get(agent)
    if not scenarios:
        print(f"no recorded scenarios are driven for {agent} yet: see docs/providers.md")
        return 2
    changed = 0
    # DRIFT_ONLY=WORD: only the scenarios whose campaign holds WORD.
    only = os.environ.get("DRIFT_ONLY", "")
    scenarios = [s for s in scenarios if only in s[0]]
    for campaign, drive, settings in scenarios:
        recorded = os.path.join(ROOT, "corpus", agent, campaign + ".ndjson")
        name = campaign.split("-", 3)[-1]
        world = World(base, name, claude, hooktrack, settings)
        try:
            drive(world)
        except (TimeoutError, subprocess.SubprocessError, IndexError) as e:
            screen = "\n      ".join(l for l in str(e).splitlines() if l.strip())
            print(f"{name}: the driver could not run it: {screen}")
            changed += 1
            continue
        finally:
            world.close()
        transcripts = os.path.join(world.dir, "transcripts")
        os.makedirs(transcripts, exist_ok=True)
        projects = os.path.join(world.home, ".claude", "projects")
        for folder, _, files in os.walk(projects):
            for f in files:
                if f.endswith(".jsonl") and "subagents" not in folder:
                    shutil.copy(os.path.join(folder, f), transcripts)
        with open(recorded[: -len(".ndjson")] + ".expect.toml", "rb") as f:
            expected = tomllib.load(f)
        got = replay(hooktrack, world.events(), transcripts)
        # Against what hooktrack reads in the recording today (a pending expectation states
        # what it should read once its issue is fixed), then against the expectation.
        before = replay(hooktrack, recorded, recorded[: -len(".ndjson")] + ".transcripts")
        want = (expected["turns"], expected["final_phase"], expected["last_result"])
        notes = []
        if got != before:
            notes.append(f"ledger: the recording reads {before}, this version {got}")
        pending = expected.get("pending")
        if got != want and not pending:
            notes.append(f"expectation: {want}, this version reads {got}")
        diff = list(difflib.unified_diff(hook_events(recorded), hook_events(world.events()),
                                         "recorded", version, lineterm="", n=1))
        if diff:
            notes.append("hook events (noise left out):\n      " + "\n      ".join(diff[2:]))
        if notes:
            changed += 1
            print(f"{name}: CHANGED\n    " + "\n    ".join(notes))
        else:
            print(f"{name}: as recorded")
        print(f"    store: {world.events()}")
    print(f"{agent} {version}: {changed} of {len(scenarios)} scenarios differ from the recordings")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
