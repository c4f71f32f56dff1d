"""A fake Ollama server for tests: the real HTTP API on 127.0.0.1, in a background thread.

Usage::

    with FakeOllama(models={"qwen2.5:7b": {}, "nomic-embed-text": {"embedding": True}}) as server:
        backend = OllamaBackend(LLMConfig(model="qwen2.5:7b", base_url=server.url))
        ...
        assert server.requests[-1].body["options"]["seed"] == 42

Endpoints (shapes as Ollama answers them): ``GET /``, ``GET /api/version``, ``GET /api/tags``,
``POST /api/show``, ``POST /api/chat`` (streamed NDJSON unless ``"stream": false``),
``POST /api/embed`` and the legacy ``POST /api/embeddings``. A model the server does not have is a
404 ``{"error": "model \\"x\\" not found, try pulling it first"}``; a name without a tag means
``:latest``, as in Ollama.

Everything is deterministic: chat replies come from ``responder(model, messages)`` (by default
`default_responder`), embeddings are hashed bag-of-words vectors (texts sharing words are
similar). Failures are injected with `FakeOllama.fail_next` (any status and body) and
`FakeOllama.fail_in_body` (a 200 whose body is ``{"error": ...}``, Ollama's mid-stream error).
Only loopback is ever bound.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

Responder = Callable[[str, Sequence[Mapping[str, Any]]], str]
"""``responder(model, messages) -> reply text``; ``model`` is the name as the request sent it."""

EMBED_DIM = 64
DEFAULT_REPLY = "The park opens at 6 am."
FAITHFULNESS_MARK = "Reply with EXACTLY one word"
RELEVANCE_MARK = "Reply with a single digit"

_WORD_RE = re.compile(r"[a-z0-9]+")
_SENTENCE_RE = re.compile(r".+?[.!?](?=\s|$)", re.DOTALL)


_request = threading.local()


def request_options() -> Mapping[str, Any]:
    """The ``options`` of the chat request being answered, for a responder that needs them
    (e.g. its ``seed``); each request is answered on a thread of its own."""
    return getattr(_request, "options", {})


def default_responder(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """A judge-aware reply: ``YES`` to the faithfulness prompt, ``4`` to the answer-relevance
    prompt, else the first sentence after ``Context`` in the prompt, else `DEFAULT_REPLY`."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if FAITHFULNESS_MARK in text:
        return "YES"
    if RELEVANCE_MARK in text:
        return "4"
    return first_context_sentence(text) or DEFAULT_REPLY


def first_context_sentence(text: str) -> str:
    """The first sentence after the word ``Context`` (skipping ``:`` and ``[doc-id]`` lines)."""
    index = text.find("Context")
    if index < 0:
        return ""
    rest = text[index + len("Context") :].lstrip(": \t\r\n")
    lines = [line.strip() for line in rest.splitlines()]
    while lines and (not lines[0] or (lines[0].startswith("[") and lines[0].endswith("]"))):
        lines.pop(0)
    body = " ".join(lines).strip()
    # Stop at the next section of a typical template.
    body = re.split(r"\b(?:Question|QUESTION)\s*:", body, maxsplit=1)[0].strip()
    if not body:
        return ""
    match = _SENTENCE_RE.match(body)
    return (match.group(0) if match else body).strip()


def hashed_embedding(text: str, dim: int = EMBED_DIM) -> list[float]:
    """A unit-length hashed bag-of-words vector; equal texts give equal vectors."""
    vector = [0.0] * dim
    for word in _WORD_RE.findall(text.lower()):
        bucket = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big") % dim
        vector[bucket] += 1.0
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0.0:  # no words: a fixed unit vector rather than zeros (no NaN cosines)
        return [1.0 / math.sqrt(dim)] * dim
    return [x / norm for x in vector]


def count_tokens(text: str) -> int:
    """Ollama-like token count estimate: about four characters a token."""
    return max(1, math.ceil(len(text) / 4)) if text else 0


def full_name(name: str) -> str:
    """Ollama's normal form of a model name: no tag means ``:latest``."""
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last else f"{name}:latest"


@dataclass(frozen=True)
class FakeModel:
    """One model on the fake server."""

    name: str
    """Full name with tag, e.g. ``qwen2.5:7b`` or ``nomic-embed-text:latest``."""
    digest: str
    size: int
    family: str = "llama"
    parameter_size: str = "3.2B"
    quantization_level: str = "Q4_K_M"
    context_length: int = 131072
    embedding: bool = False
    """An embedding-only model: ``/api/chat`` answers 400 ``does not support chat``."""
    dim: int = EMBED_DIM

    @classmethod
    def build(cls, name: str, spec: Mapping[str, Any] | None = None) -> FakeModel:
        spec = dict(spec or {})
        full = full_name(name)
        digest = spec.pop("digest", None) or hashlib.sha256(full.encode()).hexdigest()
        size = int(spec.pop("size", 1_000_000_000 + len(full) * 1_000_003))
        return cls(name=full, digest=str(digest), size=size, **spec)

    @property
    def capabilities(self) -> list[str]:
        return ["embedding"] if self.embedding else ["completion"]

    def details(self) -> dict[str, Any]:
        return {
            "parent_model": "",
            "format": "gguf",
            "family": self.family,
            "families": [self.family],
            "parameter_size": self.parameter_size,
            "quantization_level": self.quantization_level,
        }


@dataclass(frozen=True)
class RecordedRequest:
    """One request the fake server received."""

    method: str
    path: str
    body: Any
    """The parsed JSON body (``None`` for no body or a body that is not JSON)."""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class _Failure:
    status: int
    body: Any
    remaining: int
    path: str | None
    in_stream: bool = False


class FakeOllama:
    """A fake Ollama server on ``127.0.0.1:<free port>``; a context manager.

    ``models`` maps a model name to its options (``None`` or a mapping with any of `FakeModel`'s
    fields: ``digest``, ``size``, ``family``, ``embedding``, ``dim``...), or is a list of names.
    ``responder(model, messages)`` decides chat replies; ``delay_s`` is slept before each chat
    and embed answer (to test timeouts and concurrency).
    """

    def __init__(
        self,
        models: Mapping[str, Mapping[str, Any] | None] | Iterable[str] = ("llama3.2:3b",),
        *,
        responder: Responder | None = None,
        version: str = "0.6.2",
        default_num_ctx: int = 2048,
        delay_s: float = 0.0,
    ) -> None:
        specs: Mapping[str, Mapping[str, Any] | None]
        specs = models if isinstance(models, Mapping) else dict.fromkeys(models)
        self.models: dict[str, FakeModel] = {}
        for name, spec in specs.items():
            model = FakeModel.build(name, spec)
            self.models[model.name] = model
        self.responder: Responder = responder or default_responder
        self.version = version
        self.default_num_ctx = default_num_ctx
        self.delay_s = delay_s
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._failures: list[_Failure] = []
        self._in_flight = 0
        self.max_in_flight = 0
        """The most chat/embed requests handled at the same time."""
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeOllama:
        """Bind a free loopback port and serve in a daemon thread."""
        if self._httpd is not None:
            raise RuntimeError("FakeOllama is already running")
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"FakeOllama:{httpd.server_address[1]}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close the socket and join the thread (and its handler threads)."""
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=10)

    def __enter__(self) -> FakeOllama:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeOllama is not running; use it as a context manager")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, to use as ``base_url`` or ``OLLAMA_HOST``."""
        return f"http://127.0.0.1:{self.port}"

    # -- what tests look at and inject -------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, in order."""
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        """The requests received for one path, e.g. ``/api/chat``."""
        return [r for r in self.requests if r.path == path]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def digest(self, name: str) -> str:
        """The digest ``/api/tags`` lists for a model."""
        return self.models[full_name(name)].digest

    def fail_next(
        self, status: int, body: Any = None, count: int = 1, *, path: str | None = None
    ) -> None:
        """Answer the next ``count`` requests (to ``path``, or any path) with ``status``/``body``.

        ``body`` is sent as JSON unless it is a ``str`` (sent as text/plain, like a proxy's page);
        ``None`` means ``{"error": "<reason phrase>"}``.
        """
        if body is None:
            body = {"error": _reason(status).lower()}
        with self._lock:
            self._failures.append(_Failure(status, body, count, path))

    def fail_in_body(
        self, message: str = "an error was encountered while running the model", count: int = 1
    ) -> None:
        """Make the next ``count`` chats answer 200 with ``{"error": message}``: Ollama's
        mid-stream error (a streamed chat gets one content chunk first, then the error line)."""
        with self._lock:
            self._failures.append(
                _Failure(200, {"error": message}, count, "/api/chat", in_stream=True)
            )

    # -- internals used by the handler -------------------------------------------------------

    def _intercept(self, handler: _Handler, path: str, body: Any) -> bool:
        """Called first for every request: a subclass may answer it here (return True) or let
        the normal routes answer (False). `tests.fault_server.FaultyOllama` injects faults."""
        return False

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _take_failure(self, path: str) -> _Failure | None:
        with self._lock:
            for failure in self._failures:
                if failure.path is None or failure.path == path:
                    failure.remaining -= 1
                    if failure.remaining <= 0:
                        self._failures.remove(failure)
                    return failure
        return None

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _find(self, name: str) -> FakeModel | None:
        return self.models.get(full_name(name)) if name else None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False
    request_queue_size = 128
    """socketserver's default backlog is 5: a run with concurrency 16 on a loaded machine had
    connections refused, each a failed call where a test counts every verdict."""
    fake: FakeOllama

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-answer (an interrupted run) is not a server error."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def _reason(status: int) -> str:
    return BaseHTTPRequestHandler.responses.get(status, ("Error", ""))[0]


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _not_found(model: str) -> tuple[int, dict[str, Any]]:
    return 404, {"error": f'model "{model}" not found, try pulling it first'}


class _HTTPError(Exception):
    def __init__(self, status: int, body: Any) -> None:
        super().__init__(status)
        self.status = status
        self.body = body


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.0: one request per connection, so no idle keep-alive thread outlives the test.
    protocol_version = "HTTP/1.0"
    server_version = "FakeOllama"
    sys_version = ""
    timeout = 10
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    # -- plumbing ----------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        fake = self.server.fake
        path = self.path.split("?", 1)[0]
        raw = self._read_body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        fake._record(RecordedRequest(method, path, body, dict(self.headers.items())))
        if fake._intercept(self, path, body):
            return  # a subclass answered, e.g. with an injected fault (tests/fault_server.py)

        failure = fake._take_failure(path)
        if failure is not None:
            stream = isinstance(body, dict) and body.get("stream", True) is not False
            if failure.in_stream and stream and isinstance(body, dict):
                chunk = self._chunk(str(body.get("model", "")), "The", done=False)
                self._send_stream([chunk, failure.body])
            else:
                self._send(failure.status, failure.body)
            return

        routes: dict[tuple[str, str], Callable[[Any], None]] = {
            ("GET", "/"): self._root,
            ("HEAD", "/"): self._root,
            ("GET", "/api/version"): self._version,
            ("GET", "/api/tags"): self._tags,
            ("POST", "/api/show"): self._show,
            ("POST", "/api/chat"): self._chat,
            ("POST", "/api/embed"): self._embed,
            ("POST", "/api/embeddings"): self._embeddings,
            # Ollama's OpenAI-compatible API
            ("GET", "/v1/models"): self._v1_models,
            ("POST", "/v1/chat/completions"): self._v1_chat,
            ("POST", "/v1/embeddings"): self._v1_embeddings,
        }
        handler = routes.get((method, path))
        if handler is None:
            if any(p == path for _, p in routes):
                self._send(405, "405 method not allowed")
            else:
                self._send(404, "404 page not found")
            return
        if method == "POST" and raw:
            if body is None:
                self._send(400, {"error": "invalid character in request body"})
                return
            if not isinstance(body, dict):
                self._send(400, {"error": "json: cannot unmarshal into request"})
                return
        try:
            handler(body if isinstance(body, dict) else {})
        except _HTTPError as exc:
            self._send(exc.status, exc.body)
        except Exception as exc:  # a responder bug shows up as Ollama's 500
            self._send(500, {"error": f"{type(exc).__name__}: {exc}"})

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send(self, status: int, body: Any) -> None:
        if isinstance(body, str):
            data = body.encode()
            content_type = "text/plain; charset=utf-8"
        else:
            data = json.dumps(body).encode()
            content_type = "application/json; charset=utf-8"
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _send_stream(self, chunks: Iterable[Mapping[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()  # no length: HTTP/1.0, the body ends when the connection closes
        for chunk in chunks:
            self.wfile.write(json.dumps(chunk).encode() + b"\n")
            self.wfile.flush()

    def _model(self, body: Mapping[str, Any], key: str = "model") -> tuple[str, FakeModel]:
        name = str(body.get(key) or body.get("name") or "")
        if not name:
            raise _HTTPError(400, {"error": "model is required"})
        model = self.server.fake._find(name)
        if model is None:
            raise _HTTPError(*_not_found(name))
        return name, model

    def _chunk(self, model: str, content: str, *, done: bool) -> dict[str, Any]:
        return {
            "model": model,
            "created_at": _now(),
            "message": {"role": "assistant", "content": content},
            "done": done,
        }

    # -- endpoints ---------------------------------------------------------------------------

    def _root(self, _: Any) -> None:
        self._send(200, "Ollama is running")

    def _version(self, _: Any) -> None:
        self._send(200, {"version": self.server.fake.version})

    def _tags(self, _: Any) -> None:
        models = [
            {
                "name": m.name,
                "model": m.name,
                "modified_at": "2025-01-01T00:00:00Z",
                "size": m.size,
                "digest": m.digest,
                "details": m.details(),
            }
            for m in self.server.fake.models.values()
        ]
        self._send(200, {"models": models})

    def _show(self, body: Mapping[str, Any]) -> None:
        name = str(body.get("model") or body.get("name") or "")
        if not name:
            raise _HTTPError(400, {"error": "model is required"})
        model = self.server.fake._find(name)
        if model is None:
            raise _HTTPError(404, {"error": f"model '{name}' not found"})
        arch = model.family
        self._send(
            200,
            {
                "license": "",
                "modelfile": f'# Modelfile generated by "ollama show"\nFROM {model.name}\n',
                "parameters": 'stop "<|eot_id|>"',
                "template": "{{ .Prompt }}",
                "details": model.details(),
                "model_info": {
                    "general.architecture": arch,
                    "general.parameter_count": model.size,
                    f"{arch}.context_length": model.context_length,
                    f"{arch}.embedding_length": model.dim,
                },
                "capabilities": model.capabilities,
                "modified_at": "2025-01-01T00:00:00Z",
            },
        )

    def _chat(self, body: Mapping[str, Any]) -> None:
        fake = self.server.fake
        start = time.perf_counter_ns()
        name, model = self._model(body)
        if model.embedding:
            raise _HTTPError(400, {"error": f'"{name}" does not support chat'})
        messages = body.get("messages") or []
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise _HTTPError(400, {"error": "messages must be a list of objects"})
        options = body.get("options") or {}
        num_ctx = int(options.get("num_ctx") or fake.default_num_ctx)
        num_predict = int(options.get("num_predict") or -1)

        fake._enter()
        try:
            if fake.delay_s:
                time.sleep(fake.delay_s)
            _request.options = options
            reply = str(fake.responder(name, messages))
        finally:
            fake._leave()

        prompt_tokens = sum(count_tokens(str(m.get("content", ""))) + 4 for m in messages)
        prompt_tokens = min(prompt_tokens, num_ctx)  # Ollama truncates the prompt silently
        words = reply.split()
        done_reason = "stop"
        if num_predict > 0 and len(words) > num_predict:
            words = words[:num_predict]
            reply = " ".join(words)
            done_reason = "length"
        eval_count = max(1, len(words))
        total = time.perf_counter_ns() - start
        final = {
            "done_reason": done_reason,
            "done": True,
            "total_duration": total,
            "load_duration": 1_000_000,
            "prompt_eval_count": prompt_tokens,
            "prompt_eval_duration": prompt_tokens * 100_000,
            "eval_count": eval_count,
            "eval_duration": eval_count * 1_000_000,
        }
        if body.get("stream", True) is False:
            response = self._chunk(name, reply, done=True)
            response.update(final)
            self._send(200, response)
            return
        pieces = [w if i == 0 else " " + w for i, w in enumerate(words)]
        chunks = [self._chunk(name, piece, done=False) for piece in pieces]
        last = self._chunk(name, "", done=True)
        last.update(final)
        self._send_stream([*chunks, last])

    def _v1_models(self, _: Any) -> None:
        data = [
            {"id": m.name, "object": "model", "created": 0, "owned_by": "library"}
            for m in self.server.fake.models.values()
        ]
        self._send(200, {"object": "list", "data": data})

    def _v1_model(self, body: Mapping[str, Any]) -> tuple[str, FakeModel]:
        try:
            return self._model(body)
        except _HTTPError as exc:  # OpenAI's error shape
            message = exc.body.get("error") if isinstance(exc.body, dict) else str(exc.body)
            error = {"error": {"message": message, "type": "api_error"}}
            raise _HTTPError(exc.status, error) from None

    def _v1_chat(self, body: Mapping[str, Any]) -> None:
        name, _ = self._v1_model(body)
        messages = body.get("messages") or []
        reply = str(self.server.fake.responder(name, messages))
        prompt_tokens = sum(count_tokens(str(m.get("content", ""))) + 4 for m in messages)
        self._send(
            200,
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": 0,
                "model": name,
                "system_fingerprint": "fp_ollama",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": max(1, len(reply.split())),
                    "total_tokens": prompt_tokens + max(1, len(reply.split())),
                },
            },
        )

    def _v1_embeddings(self, body: Mapping[str, Any]) -> None:
        name, model = self._v1_model(body)
        raw = body.get("input", [])
        texts = [raw] if isinstance(raw, str) else list(raw)
        vectors = self._embed_texts(model, texts)
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        self._send(200, {"object": "list", "data": data, "model": name})

    def _embed_texts(self, model: FakeModel, texts: Sequence[str]) -> list[list[float]]:
        fake = self.server.fake
        fake._enter()
        try:
            if fake.delay_s:
                time.sleep(fake.delay_s)
            return [hashed_embedding(t, model.dim) for t in texts]
        finally:
            fake._leave()

    def _embed(self, body: Mapping[str, Any]) -> None:
        start = time.perf_counter_ns()
        name, model = self._model(body)
        raw = body.get("input", [])
        texts = [raw] if isinstance(raw, str) else raw
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise _HTTPError(400, {"error": "invalid input type"})
        vectors = self._embed_texts(model, texts)
        dims = body.get("dimensions")
        if isinstance(dims, int) and 0 < dims < model.dim:
            vectors = [_normalize(v[:dims]) for v in vectors]
        self._send(
            200,
            {
                "model": name,
                "embeddings": vectors,
                "total_duration": time.perf_counter_ns() - start,
                "load_duration": 1_000_000,
                "prompt_eval_count": sum(count_tokens(t) for t in texts),
            },
        )

    def _embeddings(self, body: Mapping[str, Any]) -> None:
        """The legacy endpoint: ``{"model", "prompt"}`` -> ``{"embedding": [...]}``."""
        _, model = self._model(body)
        prompt = str(body.get("prompt", ""))
        self._send(200, {"embedding": self._embed_texts(model, [prompt])[0]})


def _normalize(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else vector
