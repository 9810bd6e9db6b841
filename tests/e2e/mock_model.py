#!/usr/bin/env python3
"""A scripted stand-in for an OpenAI-compatible chat-completions model server.

Binds 127.0.0.1 on an ephemeral port, prints the port on the first line of stdout, and
answers `POST /v1/chat/completions` (streamed or not) from a fixed script chosen by a
`[[marker]]` in the latest user message:

- `[[tools]]`: step 1 runs Shell and WriteFile in parallel, step 2 reads the file back,
  step 3 answers in text;
- `[[plain]]` (or anything else): one text answer.

The step is the number of tool results after the latest user message, so the script is
stateless and a re-run gives the same conversation. Standard library only; it serves until
it is killed or its stdin closes.
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "kimi-mock"


def text(content):
    return {"content": content}


def calls(*specs):
    return {"tool_calls": [{"id": i, "name": n, "arguments": json.dumps(a)} for i, n, a in specs]}


def reply_for(messages):
    last_user = 0
    for i, m in enumerate(messages):
        if m.get("role") == "user":
            last_user = i
    prompt = content_text(messages[last_user].get("content")) if messages else ""
    step = sum(1 for m in messages[last_user + 1:] if m.get("role") == "tool")
    if "[[tools]]" in prompt:
        if step == 0:
            return calls(
                ("call_t_0", "Shell", {"command": "echo hello-from-shell"}),
                ("call_t_1", "WriteFile", {"path": "notes.txt", "content": "line one\nline two\n"}),
            )
        if step == 2:
            return calls(("call_t_2", "ReadFile", {"path": "notes.txt"}))
        return text("The file holds two lines. Done.")
    return text("Hello from the mock model.")


def content_text(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def chunk(delta, finish=None):
    return {
        "id": "chatcmpl-mock",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("mock: " + (fmt % args) + "\n")

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            self.send_json({"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        else:
            self.send_json({"error": "not found"}, 404)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.send_json({"error": "not found"}, 404)
            return
        reply = reply_for(body.get("messages", []))
        if body.get("stream"):
            self.send_stream(reply)
        else:
            self.send_whole(reply)

    def send_json(self, doc, status=200):
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_whole(self, reply):
        message = {"role": "assistant", "content": reply.get("content")}
        finish = "stop"
        if "tool_calls" in reply:
            finish = "tool_calls"
            message["tool_calls"] = [
                {"id": c["id"], "type": "function",
                 "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in reply["tool_calls"]
            ]
        self.send_json({
            "id": "chatcmpl-mock", "object": "chat.completion", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": USAGE,
        })

    def send_stream(self, reply):
        events = [chunk({"role": "assistant", "content": ""})]
        if "tool_calls" in reply:
            for index, c in enumerate(reply["tool_calls"]):
                events.append(chunk({"tool_calls": [{
                    "index": index, "id": c["id"], "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }]}))
            events.append(chunk({}, "tool_calls"))
        else:
            events.append(chunk({"content": reply["content"]}))
            events.append(chunk({}, "stop"))
        events.append({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0,
                       "model": MODEL, "choices": [], "usage": USAGE})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for e in events:
            self.wfile.write(b"data: " + json.dumps(e).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


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
