"""A stub OpenAI-compatible server for the docs tests: every chat or text completion is
``<answer>Up</answer>``. ``python openai_stub.py PORT`` serves on 127.0.0.1 until stopped."""

from __future__ import annotations

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPLY = "<answer>Up</answer>"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def _send(self, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send({"object": "list", "data": [{"id": "my-model", "object": "model"}]})

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        common = {"id": "stub", "created": int(time.time()), "model": request.get("model", "")}
        if self.path.endswith("/chat/completions"):
            choice = {"index": 0, "finish_reason": "stop", "logprobs": None,
                      "message": {"role": "assistant", "content": REPLY}}  # fmt: skip
            self._send({**common, "object": "chat.completion", "choices": [choice], "usage": usage})
        else:
            choice = {"index": 0, "finish_reason": "stop", "logprobs": None, "text": REPLY}
            self._send({**common, "object": "text_completion", "choices": [choice], "usage": usage})


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
