"""A stub OpenAI-compatible chat server on 127.0.0.1 (port 0: a free port per test)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class StubChat:
    """Serves ``/v1/chat/completions``; ``reply(request_json) -> str`` writes the answer."""

    def __init__(self, reply):
        self.reply = reply
        self.requests: list[dict] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append({"path": self.path, "headers": dict(self.headers), **body})
                text = stub.reply(body)
                payload = json.dumps({"choices": [{"message": {"content": text}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):  # keep test output quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def last_user_text(body: dict) -> str:
    content = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    if isinstance(content, list):
        return " ".join(p["text"] for p in content if p["type"] == "text")
    return content
