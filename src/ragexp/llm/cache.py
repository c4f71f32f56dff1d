"""A cache of LLM calls on disk, shared by every run, sweep job and process at once.

One SQLite file (``<cache.dir>/calls.sqlite``) in WAL mode with a busy timeout: any number of
processes read while one writes, a writer waits its turn instead of failing, and a call that
finished is on disk before the next one starts, so an interrupted run loses none of them. SQLite
rather than diskcache (itself SQLite underneath): one table with typed columns that
``ragexp cache info`` and ``prune`` can query by model and age, and no extra dependency.

The key is the SHA-256 of everything that changes a call's output: the backend kind, the model's
identity (Ollama digest, GGUF sha256 and runtime, the served model id; never the name alone), the
full messages, the decoding options, the replicate index, for judge calls the metric's name
and version, and for a call constrained to a JSON schema, the schema. Modes (``cache.mode``):
``readwrite`` (default), ``read`` (use entries, add none), ``refresh`` (make every call again
and store it), ``off``.
"""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from ragexp.config.llm import LLMConfig
from ragexp.llm.interface import Completion, Message

CacheMode = Literal["readwrite", "read", "refresh", "off"]
CACHE_FILE = "calls.sqlite"
BUSY_TIMEOUT_MS = 60_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    model_id TEXT NOT NULL,
    role TEXT NOT NULL,
    completion TEXT NOT NULL,
    latency_s REAL NOT NULL,
    created REAL NOT NULL
)
"""


def decoding_options(config: LLMConfig) -> dict[str, Any]:
    """The options of ``config`` that change what a model answers."""
    return {
        "temperature": config.temperature,
        "seed": config.seed,
        "num_ctx": config.num_ctx,
        "max_tokens": config.max_tokens,
    }


def call_key(
    *,
    backend: str,
    model_id: str,
    messages: Sequence[Message],
    options: Mapping[str, Any],
    replicate: int = 0,
    metric: str | None = None,
    metric_version: str | None = None,
    schema: Mapping[str, Any] | None = None,
) -> str:
    """The content address of one call (see the module docstring); a call constrained to a
    JSON ``schema`` has it in its key (a call without one keeps the key it always had)."""
    payload = {
        "backend": backend,
        "model_id": model_id,
        "messages": [dict(m) for m in messages],
        "options": dict(sorted(options.items())),
        "replicate": replicate,
        "metric": metric,
        "metric_version": metric_version,
    }
    if schema is not None:
        payload["schema"] = dict(schema)
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _open(path: Path) -> sqlite3.Connection:
    """The cache file, in WAL mode, with its table. Processes that open a new file at the same
    moment (a joblib sweep's jobs) can get "database is locked" at once from the switch to WAL,
    without SQLite's busy handler waiting (seen about once in 240 openings): such an opening is
    tried again, for up to the busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        try:
            db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute(_SCHEMA)
            return db
        except sqlite3.OperationalError as exc:
            db.close()
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(random.uniform(0.01, 0.05))


class CallCache:
    """The cache file of one folder; reads and writes per ``mode``."""

    def __init__(self, folder: Path, mode: CacheMode = "readwrite") -> None:
        self.mode = mode
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / CACHE_FILE
        self._db = _open(self.path)

    @property
    def reads(self) -> bool:
        return self.mode in ("readwrite", "read")

    @property
    def writes(self) -> bool:
        return self.mode in ("readwrite", "refresh")

    def get(self, key: str) -> Completion | None:
        data = self._read(key)
        if data is None:
            return None
        return Completion(
            text=data["text"],
            prompt_tokens=data.get("prompt_tokens"),
            completion_tokens=data.get("completion_tokens"),
            latency_s=data["latency_s"],
            model_id=data["model_id"],
            timings=data.get("timings") or {},
            cached=True,
        )

    def put(self, key: str, *, backend: str, model: str, role: str, completion: Completion) -> None:
        """Store one finished call: its answer, and when and how long it took."""
        data = {
            "text": completion.text,
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "latency_s": completion.latency_s,
            "model_id": completion.model_id,
            "timings": dict(completion.timings),
        }
        self._write(key, backend, model, completion.model_id, role, data, completion.latency_s)

    def get_vector(self, key: str) -> list[float] | None:
        data = self._read(key)
        return None if data is None else [float(x) for x in data["vector"]]

    def put_vector(
        self,
        key: str,
        *,
        backend: str,
        model: str,
        model_id: str,
        vector: Sequence[float],
        latency_s: float,
    ) -> None:
        """Store one text's embedding (``latency_s``: its share of the batch call)."""
        self._write(key, backend, model, model_id, "embed", {"vector": list(vector)}, latency_s)

    def _read(self, key: str) -> dict[str, Any] | None:
        if not self.reads:
            return None
        row = self._db.execute("SELECT completion FROM calls WHERE key = ?", (key,)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def _write(
        self,
        key: str,
        backend: str,
        model: str,
        model_id: str,
        role: str,
        data: Mapping[str, Any],
        latency_s: float,
    ) -> None:
        if not self.writes:
            return
        self._db.execute(
            "INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (key, backend, model, model_id, role, json.dumps(data), latency_s, time.time()),
        )

    def close(self) -> None:
        self._db.close()


def cache_info(folder: Path) -> dict[str, Any]:
    """What the cache in ``folder`` holds: entries and the time they saved, by model and role."""
    path = (folder / CACHE_FILE).resolve()
    if not path.exists():
        return {"path": str(path), "entries": 0, "bytes": 0, "models": [], "roles": {}}
    cache = CallCache(folder, "read")
    db = cache._db
    models = [
        {
            "model": m,
            "model_id": mid,
            "entries": n,
            "call_seconds": round(s, 1),
            "oldest": _iso(lo),
            "newest": _iso(hi),
        }
        for m, mid, n, s, lo, hi in db.execute(
            "SELECT model, model_id, COUNT(*), SUM(latency_s), MIN(created), MAX(created) "
            "FROM calls GROUP BY model, model_id ORDER BY model"
        )
    ]
    roles = dict(db.execute("SELECT role, COUNT(*) FROM calls GROUP BY role ORDER BY role"))
    cache.close()
    size = sum(p.stat().st_size for p in folder.glob(CACHE_FILE + "*"))
    return {
        "path": str(path),
        "entries": sum(m["entries"] for m in models),
        "bytes": size,
        "models": models,
        "roles": roles,
    }


def prune(folder: Path, *, older_than_days: float | None, model: str | None) -> int:
    """Delete entries older than ``older_than_days`` and/or of ``model`` (a name or a model
    identity); returns how many went."""
    cache = CallCache(folder, "readwrite")
    clauses: list[str] = []
    args: list[float | str] = []
    if older_than_days is not None:
        clauses.append("created < ?")
        args.append(time.time() - older_than_days * 86400)
    if model is not None:
        clauses.append("(model = ? OR model_id = ?)")
        args += [model, model]
    deleted = cache._db.execute(f"DELETE FROM calls WHERE {' AND '.join(clauses)}", args).rowcount
    cache._db.execute("VACUUM")
    cache.close()
    return int(deleted)


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))
