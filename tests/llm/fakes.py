"""A tiny real HTTP server on 127.0.0.1 that speaks the Ollama and OpenAI wire protocols.

Tests queue what the "model" says (`say(...)`) or exact HTTP replies (`Reply`), then read `requests` to
assert what the adapter sent. Unqueued calls get a default reply, so a re-ask or retry never hangs.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """An exact HTTP reply: a JSON body, or streamed lines; optionally after a delay."""

    status: int = 200
    body: Any = None
    lines: list[str] | None = None
    content_type: str = "application/json"
    delay_s: float = 0.0


@dataclass
class Said:
    """What the model says; formatted for whichever protocol the request used."""

    text: str
    prompt_tokens: int = 11
    completion_tokens: int = 7
    chunks: int = 3
    delay_s: float = 0.0


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeModelServer:
    """Serves /api/chat, /api/tags, /api/embed (Ollama) and /v1/chat/completions, /v1/models, /v1/embeddings."""

    models: list[str] = field(default_factory=lambda: ["gemma3n:e4b", "m-small"])
    default_text: str = '{"ok": true}'
    requests: list[Recorded] = field(default_factory=list)
    queue: deque[Reply | Said] = field(default_factory=deque)
    embed: Callable[[str], list[float]] = field(default=lambda text: [float(len(text)), 1.0, 0.0, 2.0])

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def say(self, *texts: str, **kwargs: Any) -> None:
        for text in texts:
            self.queue.append(Said(text, **kwargs))

    def reply(self, *replies: Reply) -> None:
        self.queue.extend(replies)

    def posts(self, path: str) -> list[Any]:
        return [r.body for r in self.requests if r.method == "POST" and r.path == path]

    def __enter__(self) -> FakeModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()  # wakes handlers sleeping to simulate a slow model
        self._server.shutdown()
        self._server.server_close()

    def answer(self, method: str, path: str, body: Any) -> Reply:
        """The reply for one request (called on the server thread); a queued `Reply` answers any POST."""
        if method == "POST" and self.queue and isinstance(self.queue[0], Reply):
            return self.queue.popleft()  # type: ignore[return-value]
        if method == "GET" and path == "/api/tags":
            return Reply(body={"models": [{"name": m, "model": m, "size": 1} for m in self.models]})
        if method == "GET" and path.endswith("/models"):
            return Reply(body={"object": "list", "data": [_openai_model(m) for m in self.models]})
        if path == "/api/embed":
            return Reply(body={"model": body["model"], "embeddings": [self.embed(t) for t in body["input"]]})
        if path.endswith("/embeddings"):
            data = [
                {"object": "embedding", "index": i, "embedding": self.embed(t)}
                for i, t in enumerate(body["input"])
            ]
            data.reverse()  # out of order on purpose: the adapter must sort by index
            usage = {"prompt_tokens": 3, "total_tokens": 3}
            return Reply(body={"object": "list", "data": data, "model": body["model"], "usage": usage})
        queued = self.queue.popleft() if self.queue else Said(self.default_text)
        assert isinstance(queued, Said)
        if path == "/api/chat":
            return _ollama_chat(queued, body)
        return _openai_chat(queued, body)

    def wait(self, seconds: float) -> None:
        self._stop.wait(seconds)


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _pieces(text: str, count: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, count)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _ollama_chat(said: Said, body: dict[str, Any]) -> Reply:
    model = body["model"]
    done = {
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": said.prompt_tokens,
        "eval_count": said.completion_tokens,
    }
    if not body.get("stream"):
        message = {"role": "assistant", "content": said.text}
        return Reply(
            body={"model": model, "created_at": "2025-01-01T00:00:00Z", "message": message, **done},
            delay_s=said.delay_s,
        )
    lines = [
        json.dumps(
            {"model": model, "message": {"role": "assistant", "content": piece}, "done": False},
            ensure_ascii=False,
        )
        for piece in _pieces(said.text, said.chunks)
    ]
    lines.append(json.dumps({"model": model, "message": {"role": "assistant", "content": ""}, **done}))
    return Reply(lines=lines, content_type="application/x-ndjson", delay_s=said.delay_s)


def _openai_chat(said: Said, body: dict[str, Any]) -> Reply:
    model = body["model"]
    usage = {
        "prompt_tokens": said.prompt_tokens,
        "completion_tokens": said.completion_tokens,
        "total_tokens": said.prompt_tokens + said.completion_tokens,
    }
    base = {"id": "chatcmpl-1", "created": 1, "model": model}
    if not body.get("stream"):
        choice = {"index": 0, "message": {"role": "assistant", "content": said.text}, "finish_reason": "stop"}
        return Reply(
            body={**base, "object": "chat.completion", "choices": [choice], "usage": usage},
            delay_s=said.delay_s,
        )
    chunk = {**base, "object": "chat.completion.chunk"}
    events = [
        {**chunk, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
        for piece in _pieces(said.text, said.chunks)
    ]
    events.append({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append({**chunk, "choices": [], "usage": usage})
    lines = [f"data: {json.dumps(e, ensure_ascii=False)}\n" for e in events] + ["data: [DONE]\n"]
    return Reply(lines=lines, content_type="text/event-stream", delay_s=said.delay_s)


def _openai_model(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 1, "owned_by": "test"}


def _handler_for(fake: FakeModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep pytest output clean
            pass

        def do_GET(self) -> None:
            self._serve(None)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            self._serve(json.loads(raw) if raw else None)

        def _serve(self, body: Any) -> None:
            path = self.path.split("?", 1)[0]
            headers = {k.lower(): v for k, v in self.headers.items()}
            fake.requests.append(Recorded(self.command, path, headers, body))
            reply = fake.answer(self.command, path, body)
            if reply.delay_s:
                fake.wait(reply.delay_s)
            try:
                self._write(reply)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

        def _write(self, reply: Reply) -> None:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            if reply.lines is None:
                payload = json.dumps(reply.body, ensure_ascii=False).encode()
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            self.send_header("Connection", "close")  # HTTP/1.0: the body ends when the socket closes
            self.end_headers()
            for line in reply.lines:
                self.wfile.write((line + "\n").encode())
                self.wfile.flush()

    return Handler
