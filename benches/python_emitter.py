#!/usr/bin/env python3
"""The emitter a user would otherwise write: the baseline of `cargo bench --bench producer`.

Same job as `hooktrack emit`: read the hook payload from stdin, take emitter_seq under an
exclusive flock on DIR/emitter.seq, POST the delivery with urllib and the bearer token from
$HOOKTRACK_TOKEN, and on any failure append a command_fallback row under the same lock.

usage: python_emitter.py URL DIR PROVIDER GENERATION EVENT < payload
"""

import datetime
import fcntl
import json
import os
import sys
import urllib.request


def main():
    url, directory, provider, generation, event = sys.argv[1:6]
    generation = int(generation)
    payload = sys.stdin.buffer.read(1 << 20).decode().strip()
    counter = os.path.join(directory, "emitter.seq")
    with open(os.open(counter, os.O_RDWR | os.O_CREAT, 0o600), "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        seq = int(f.read().strip() or 0) + 1
        f.seek(0)
        f.write("%020d\n" % seq)
        f.flush()
        fcntl.flock(f, fcntl.LOCK_UN)
    body = '{"v":1,"provider":%s,"generation":%d,"emitter_seq":%d,"event":%s,"payload":%s}' % (
        json.dumps(provider), generation, seq, json.dumps(event), payload)
    request = urllib.request.Request(url, data=body.encode(), method="POST", headers={
        "Authorization": "Bearer " + os.environ.get("HOOKTRACK_TOKEN", ""),
        "Content-Type": "application/json",
    })
    try:
        with urllib.request.urlopen(request, timeout=1.5) as response:
            if 200 <= response.status < 300:
                return
    except Exception:
        pass
    now = datetime.datetime.now(datetime.timezone.utc)
    stamp = now.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (now.microsecond // 1000)
    row = ('{"v":1,"provider":%s,"generation":%d,"via":"command_fallback","sequence":null,'
           '"emitter_seq":%d,"received_at":"%s","event":%s,"payload":%s}\n') % (
        json.dumps(provider), generation, seq, stamp, json.dumps(event), payload)
    with open(counter, "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        with open(os.path.join(directory, "events.ndjson"), "a") as events:
            events.write(row)
        fcntl.flock(f, fcntl.LOCK_UN)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        pass
    sys.exit(0)
