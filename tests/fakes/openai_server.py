"""A local OpenAI-compatible HTTP server for tests and benchmarks (stdlib only).

Chat answers come from a pluggable responder, embeddings are deterministic unit vectors, and faults
(429, 500, malformed JSON, slow answers) are queued per test and consumed by successive requests, or
drawn at random with fixed shares and a seed (`FaultRates`). A chat request with `"stream": true` is
answered as Server-Sent Events the way OpenAI streams: a role chunk, one chunk per word of the answer
(`stream_delay_s` apart, after the request's `latency_s`; an unstreamed answer waits as long in all
before its body), a finish chunk, a usage chunk when
`stream_options.include_usage` asks for it, then `data: [DONE]`; a stream the client closes early is
counted in `abandoned_streams`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import random
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, NamedTuple, Protocol

Responder = Callable[[dict[str, Any]], str]
FaultKind = Literal["rate_limit", "server_error", "malformed_json", "slow"]


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    seconds: float = 0.0
    status: int = 500

    @classmethod
    def rate_limit(cls, retry_after: float = 0.1) -> Fault:
        return cls("rate_limit", seconds=retry_after, status=429)

    @classmethod
    def server_error(cls, status: int = 500) -> Fault:
        return cls("server_error", status=status)

    @classmethod
    def malformed_json(cls) -> Fault:
        return cls("malformed_json", status=200)

    @classmethod
    def slow(cls, seconds: float) -> Fault:
        """Wait `seconds`, then answer normally (a client with a shorter timeout gives up first)."""
        return cls("slow", seconds=seconds, status=200)


@dataclass(frozen=True)
class FaultRates:
    """Random faults, as shares of requests; each draw is seeded by (seed, request body, how many times that
    body was seen), so a run's faults do not depend on the order concurrent requests arrive in."""

    rate_limit: float = 0.0
    server_error: float = 0.0
    malformed_json: float = 0.0
    timeout: float = 0.0
    timeout_s: float = 3.0  # longer than the client's timeout, so the client gives up
    seed: int = 0

    def draw(self, path: str, body: dict[str, Any], seen: int) -> Fault | None:
        key = hashlib.sha256(json.dumps([self.seed, path, body, seen], sort_keys=True).encode()).digest()
        roll = random.Random(key).random()
        for share, fault in (
            (self.rate_limit, Fault.rate_limit(0.05)),
            (self.server_error, Fault.server_error()),
            (self.malformed_json, Fault.malformed_json()),
            (self.timeout, Fault.slow(self.timeout_s)),
        ):
            if roll < share:
                return fault
            roll -= share
        return None


class FaultPlan(Protocol):
    """What decides each request's fault: `FaultRates`, or `FirstSightFaults`."""

    def draw(self, path: str, body: dict[str, Any], seen: int) -> Fault | None: ...


@dataclass(frozen=True)
class FirstSightFaults:
    """A 500 for the first `sights` of each chat request whose messages hold one of `marks` (a prompt's
    opening words, a passage's text): an outage past the client's retries and re-asks for exactly those
    calls, the same in every run; the same request asked once more is answered."""

    marks: tuple[str, ...]
    sights: int = 2

    def draw(self, path: str, body: dict[str, Any], seen: int) -> Fault | None:
        if seen >= self.sights or not path.endswith("/chat/completions"):
            return None
        text = "\n".join(message_text(message) for message in body.get("messages", []))
        return Fault.server_error() if any(mark in text for mark in self.marks) else None


class RecordedRequest(NamedTuple):
    path: str
    json: dict[str, Any]


def estimate_tokens(text: str) -> int:
    """The server's token count: one token per four characters, rounded up."""
    return math.ceil(len(text) / 4)


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def echo_responder(request: dict[str, Any]) -> str:
    """Default answer: the last user message, prefixed, so tests can tell requests apart."""
    users = [message_text(m) for m in request.get("messages", []) if m.get("role") == "user"]
    return f"echo: {users[-1] if users else ''}"


def deterministic_embedding(text: str, dimension: int) -> list[float]:
    """A unit vector seeded by the text's hash: equal texts, equal vectors."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    rng = random.Random(seed)
    values = [rng.gauss(0.0, 1.0) for _ in range(dimension)]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


class FakeOpenAIServer:
    """`with FakeOpenAIServer() as server:` serves on 127.0.0.1 at `server.base_url` (ends in /v1)."""

    def __init__(
        self,
        *,
        responder: Responder = echo_responder,
        embedding_dimension: int = 1536,
        latency_s: float = 0.0,
        fault_rates: FaultPlan | None = None,
        rejects_response_format: bool = False,
        prose_around_json: bool = False,
        stream_delay_s: float = 0.0,
        rejects_json_schema: bool = False,
        context_window: int | None = None,
        total_slots: int | None = None,
    ) -> None:
        self.stream_delay_s = stream_delay_s
        # llama.cpp's `GET /props` (at the root, not under /v1): answered only with a `context_window` (its
        # `n_ctx`, the whole server's, shared by the slots) or `total_slots` (1 unless given); probes are
        # counted, not recorded.
        self.context_window = context_window
        self.total_slots = total_slots
        self.props_requests = 0
        self.streamed_requests = 0
        self.abandoned_streams = 0
        # Two behaviours of real OpenAI-compatible servers and small models: a 400 for any request
        # carrying `response_format`, and JSON answers wrapped in chatty prose.
        self.rejects_response_format = rejects_response_format
        self.prose_around_json = prose_around_json
        self.rejected_response_format = 0
        # A server that takes JSON mode but not a JSON schema: a 400 for `response_format` of type json_schema.
        self.rejects_json_schema = rejects_json_schema
        self.responder = responder
        self.fault_rates = fault_rates
        self._seen: dict[str, int] = {}
        self.faults_served: dict[str, int] = {}
        self.embedding_dimension = embedding_dimension
        self.latency_s = latency_s
        self._faults: deque[Fault] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._in_flight = 0
        self.max_in_flight = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- control --------------------------------------------------------------------------
    def inject(self, *faults: Fault) -> None:
        """Queue faults; each following request (any endpoint) consumes one."""
        with self._lock:
            self._faults.extend(faults)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("server not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAIServer:
        handler = type("BoundHandler", (_Handler,), {"fake": self})
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._stopping.clear()
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping on latency or a slow fault
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # --- request handling (called from handler threads) ----------------------------------
    def _begin(self, path: str, body: dict[str, Any]) -> Fault | None:
        with self._lock:
            self._requests.append(RecordedRequest(path, body))
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            fault = self._faults.popleft() if self._faults else None
            if fault is None and self.fault_rates is not None:
                key = hashlib.sha256(json.dumps([path, body], sort_keys=True).encode()).hexdigest()
                seen = self._seen.get(key, 0)
                self._seen[key] = seen + 1
                fault = self.fault_rates.draw(path, body, seen)
            if fault is not None:
                self.faults_served[fault.kind] = self.faults_served.get(fault.kind, 0) + 1
            return fault

    def _end(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def _answer_text(self, request: dict[str, Any]) -> str:
        text = self.responder(request)
        if self.prose_around_json and text.lstrip().startswith("{"):
            text = f"Sure! Here is the JSON you asked for:\n{text}\nI hope this helps; ask if anything is unclear."
        return text

    def _chat(self, request: dict[str, Any]) -> dict[str, Any]:
        text = self._answer_text(request)
        prompt_tokens = sum(estimate_tokens(message_text(m)) for m in request.get("messages", []))
        completion_tokens = estimate_tokens(text)
        return {
            "id": "chatcmpl-" + hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:24],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "unknown"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _chat_chunks(self, request: dict[str, Any]) -> list[dict[str, Any] | None]:
        """The chunks of a streamed answer; None marks where the server waits `stream_delay_s`."""
        text = self._answer_text(request)
        base = {
            "id": "chatcmpl-" + hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:24],
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": request.get("model", "unknown"),
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

        chunks: list[dict[str, Any] | None] = [chunk({"role": "assistant", "content": ""})]
        for piece in re.findall(r"\s*\S+\s*|\s+", text):
            chunks += [None, chunk({"content": piece})]
        chunks.append(chunk({}, "stop"))
        if (request.get("stream_options") or {}).get("include_usage"):
            prompt_tokens = sum(estimate_tokens(message_text(m)) for m in request.get("messages", []))
            completion_tokens = estimate_tokens(text)
            usage = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            }
            chunks.append({**base, "choices": [], "usage": usage})
        return chunks

    def _embeddings(self, request: dict[str, Any]) -> dict[str, Any]:
        inputs = request.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs]
        dimension = int(request.get("dimensions") or self.embedding_dimension)
        as_base64 = request.get("encoding_format") == "base64"
        data = []
        for index, text in enumerate(texts):
            vector = deterministic_embedding(text, dimension)
            # The openai client asks for base64 (packed little-endian float32) unless told otherwise.
            embedding: Any = (
                base64.b64encode(struct.pack(f"<{dimension}f", *vector)).decode("ascii") if as_base64 else vector
            )
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = sum(estimate_tokens(t) for t in texts)
        return {
            "object": "list",
            "data": data,
            "model": request.get("model", "unknown"),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


class _Server(ThreadingHTTPServer):
    # socketserver's default listen backlog is 5: a burst of more new connections (the first wave of a
    # run's concurrent calls) overflows it and the kernel drops SYNs, which the client resends after a
    # second, a stall no real API adds (and which benchmarks would count as the client's own time).
    request_queue_size = 128


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAIServer
    protocol_version = "HTTP/1.1"
    # The headers and the body go out in two writes: with Nagle's algorithm the body waits for the
    # client's delayed ACK of the headers, about 40 ms per answer on Linux, which no real API adds
    # (and which benchmarks would count as the client's own time).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests assert on recorded requests instead."""

    def do_GET(self) -> None:
        path = self.path.rstrip("/")
        if path != "/props" or (self.fake.context_window is None and self.fake.total_slots is None):
            self._send_json(404, {"error": {"message": f"unknown path {path}", "type": "not_found"}})
            return
        with self.fake._lock:
            self.fake.props_requests += 1
        slots = self.fake.total_slots or 1
        generation = {"n_ctx": self.fake.context_window * slots} if self.fake.context_window is not None else {}
        self._send_json(200, {"default_generation_settings": generation, "total_slots": slots})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") == "/api/show":  # Ollama's model report: not this server (not recorded)
            self._send_json(404, {"error": {"message": "unknown path /api/show", "type": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": {"message": "request body is not JSON", "type": "invalid_request"}})
            return
        path = self.path.rstrip("/")
        fault = self.fake._begin(path, body)
        try:
            self._answer(path, body, fault)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before the answer; nothing to do
        finally:
            self.fake._end()

    def _answer(self, path: str, body: dict[str, Any], fault: Fault | None) -> None:
        self.fake._sleep(self.fake.latency_s)
        if fault is not None and fault.kind == "slow":
            self.fake._sleep(fault.seconds)
        if fault is not None and fault.kind == "rate_limit":
            headers = {"retry-after": f"{fault.seconds:g}", "retry-after-ms": f"{fault.seconds * 1000:g}"}
            error = {"message": "Rate limit reached (injected)", "type": "rate_limit_exceeded"}
            self._send_json(429, {"error": error}, headers)
            return
        if fault is not None and fault.kind == "server_error":
            self._send_json(fault.status, {"error": {"message": "injected server error", "type": "server_error"}})
            return
        if path.endswith("/chat/completions") and self.fake.rejects_response_format and "response_format" in body:
            with self.fake._lock:
                self.fake.rejected_response_format += 1
            error = {"message": "response_format is not supported by this server", "type": "invalid_request_error"}
            self._send_json(400, {"error": error})
            return
        wanted = body.get("response_format") or {}
        if path.endswith("/chat/completions") and self.fake.rejects_json_schema and wanted.get("type") == "json_schema":
            with self.fake._lock:
                self.fake.rejected_response_format += 1
            error = {"message": "response_format type json_schema is not supported", "type": "invalid_request_error"}
            self._send_json(400, {"error": error})
            return
        if path.endswith("/chat/completions") and body.get("stream"):
            self._stream(body)
            return
        if path.endswith("/chat/completions"):
            payload = self.fake._chat(body)
            # A model writes an unstreamed answer just as fast: the same time per word, all before the body.
            words = len(re.findall(r"\s*\S+\s*|\s+", payload["choices"][0]["message"]["content"]))
            self.fake._sleep(self.fake.stream_delay_s * words)
        elif path.endswith("/embeddings"):
            payload = self.fake._embeddings(body)
        else:
            self._send_json(404, {"error": {"message": f"unknown path {path}", "type": "not_found"}})
            return
        if fault is not None and fault.kind == "malformed_json":
            self._send_raw(200, json.dumps(payload).encode()[:40] + b'{"oops', "application/json")
            return
        self._send_json(200, payload)

    def _stream(self, body: dict[str, Any]) -> None:
        with self.fake._lock:
            self.fake.streamed_requests += 1
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for chunk in self.fake._chat_chunks(body):
                if chunk is None:
                    self.fake._sleep(self.fake.stream_delay_s)
                else:
                    self._send_chunk(f"data: {json.dumps(chunk)}\n\n".encode())
        except (BrokenPipeError, ConnectionResetError):
            # The client closed the stream before its end: a real server stops writing there too.
            with self.fake._lock:
                self.fake.abandoned_streams += 1
            self.close_connection = True
            return
        self._send_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _send_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode("utf-8"), "application/json", headers)

    def _send_raw(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
