"""A small OpenAI-compatible chat-completions server on 127.0.0.1, for the tests: it counts calls and misbehaves
on request.

It answers as examples/judge_example.py's judge would (the query and the passage are read back out of the
prompt groundkit ships), so the HTTP path and the python: path can be compared label for label. ``mode``
picks a fault; the first ``after`` requests are answered normally, then ``faults`` requests get the fault, then
the server answers normally again.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from examples.judge_example import make_judge

PROMPT = re.compile(r"Query:\n<<<\n(?P<query>.*)\n>>>\n\nPassage:\n<<<\n(?P<passage>.*)\n>>>\n\nAnswer with", re.S)
PROPOSE = re.compile(r"Passage:\n<<<\n(?P<passage>.*)\n>>>\n\nWrite one question", re.S)


class LLMServer:
    """Start with ``with LLMServer(...) as server:``; ``server.url`` is the base URL (up to /v1)."""

    def __init__(self, judgments: str = "evals/judgments.jsonl", *, mode: str = "ok", faults: int = 10**9,
                 answer: Any = None, delay: float = 0.0, hang: float = 2.0, structured: bool = True,
                 retry_after: str = "0", after: int = 0) -> None:
        self.judge = make_judge({"judgments": judgments, "false_positive_rate": 0.1, "false_negative_rate": 0.1})
        self.mode, self.faults, self.answer, self.delay, self.hang = mode, faults, answer, delay, hang
        self.structured, self.retry_after, self.after = structured, retry_after, after
        self.requests = 0  # every POST, faults included
        self.answered = 0  # well-formed completions answered
        self.in_flight = 0  # requests being handled now
        self.headers: list[dict[str, str]] = []
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                with server.lock:
                    server.in_flight += 1
                try:
                    server.handle(self)
                finally:
                    with server.lock:
                        server.in_flight -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> LLMServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def settled(self, quiet: float = 0.3, timeout: float = 30.0) -> int:
        """Wait until no request is being handled and none has come for ``quiet`` seconds; return the count.

        A client killed mid-call may leave its last request in the server's socket, handled a moment after the
        kill: a count read at once would miss it and charge it to whatever runs next."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                seen, busy = self.requests, self.in_flight
            time.sleep(quiet)
            with self.lock:
                if (not busy and not self.in_flight and self.requests == seen) or time.monotonic() > deadline:
                    return self.requests

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length", "0"))
        body = json.loads(request.rfile.read(length))
        with self.lock:
            self.requests += 1
            self.headers.append(dict(request.headers))
            self.bodies.append(body)
            fault = self.mode if self.faults > 0 and self.requests > self.after else "ok"
            if fault != "ok":
                self.faults -= 1
        if request.path != "/v1/chat/completions":
            return self.send(request, 404, {"error": "not found"})
        if not self.structured and "response_format" in body:
            return self.send(request, 400, {"error": {"message": "response_format is not supported"}})
        if self.delay:
            time.sleep(self.delay)
        if fault == "hang":
            time.sleep(self.hang)
            return None
        if fault == "401":
            # A careless proxy echoes the request's headers, the key among them.
            return self.send(request, 401, {"error": "bad key", "echo": request.headers.get("Authorization")})
        if fault in ("429", "500", "503"):
            return self.send(request, int(fault), {"error": "busy"}, headers={"Retry-After": self.retry_after})
        content = self.content(body)
        finish = "stop"
        if fault == "not_json":
            content = "I think the passage is relevant. " + str(request.headers.get("Authorization"))
        elif fault == "truncated":
            content, finish = content[: len(content) // 2], "length"
        elif fault == "cut":  # cut off without saying so
            content = content[: len(content) // 2]
        elif fault == "grade":
            content = json.dumps({"grade": 7, "quote": None})
        elif fault == "bad_body":
            return self.send(request, 200, {"unexpected": True})
        with self.lock:
            self.answered += fault == "ok"  # a well-formed answer
        return self.send(request, 200, {"choices": [{"index": 0, "finish_reason": finish,
                                                     "message": {"role": "assistant", "content": content}}],
                                        "usage": {"prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 100}})

    def content(self, body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        if self.answer is not None:
            return json.dumps(self.answer)
        asked = PROMPT.search(prompt)
        if asked is not None:
            return json.dumps(self.judge.judge(asked["query"], asked["passage"]))
        proposed = PROPOSE.search(prompt)
        assert proposed is not None, prompt[:200]
        return json.dumps(self.judge.propose(proposed["passage"]))

    @staticmethod
    def send(request: BaseHTTPRequestHandler, status: int, document: Any,
             headers: dict[str, str] | None = None) -> None:
        data = json.dumps(document).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            request.send_header(name, value)
        request.end_headers()
        request.wfile.write(data)
