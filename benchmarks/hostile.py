"""Hostile systems, servers, files and signals, each through the real CLI: what each costs.

    .venv/bin/python benchmarks/hostile.py            # every probe (about 3 minutes on 2 cores)
    .venv/bin/python benchmarks/hostile.py drip bomb  # some of them

Each probe runs ``python -m ragexp`` in a world of its own (four documents, six cases, a team's
system that answers five of them well and is hostile on the sixth, or a crafted file), tracked into
one real MLflow store (SQLite). A secret is planted as a header (``system.headers.X-Api-Key``) and
an option (``system.options.token``) on every system run. Printed per probe: exit code, seconds
start to exit, the peak RSS of the largest process of the run (``ru_maxrss`` of the probe's own
waiter), its last line; at the end, the runs left RUNNING in the store and every file (the
worlds, the store) holding a planted secret. What each probe should cost: its case (exit 0 with
the case failed), or one line and exit 2 for a bad file, within the configured deadline, under
1 GB, nothing RUNNING, no secret anywhere (docs/reliability.md).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from tempfile import mkdtemp

HEADER_SECRET = "hdr-Hostile7Qx2Lm"
OPTION_SECRET = "opt-Hostile4Rt9Wc"
SECRETS = (HEADER_SECRET, OPTION_SECRET)
TIMEOUT_S = 3
DOCS = {
    "fees.md": "A private vehicle pass costs 35 dollars for seven days.",
    "permits.md": "A backcountry permit costs 6 dollars per person per night.",
    "pets.md": "Dogs are not allowed on backcountry trails or in the visitor center.",
    "shuttle.md": "The shuttle runs every 20 minutes from the visitor center in summer.",
}
CASES = [
    ("c1", "How much does a private vehicle pass cost?", "fees.md"),
    ("c2", "What does a backcountry permit cost?", "permits.md"),
    ("c3", "Can my dog go to the visitor center?", "pets.md"),
    ("c4", "How often does the shuttle run?", "shuttle.md"),
    ("c5", "How long is a vehicle pass valid?", "fees.md"),
    ("c6", "HOSTILE", "permits.md"),
]
BOMB = gzip.compress(b" " * 400_000_000, compresslevel=9)


class Service(BaseHTTPRequestHandler):
    """Answers well, but on the hostile case does what its path says."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def handle(self) -> None:  # the client giving up mid-reply is what the probe is for
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            super().handle()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        question = str(body.get("question"))
        if question != "HOSTILE":
            doc = next(d for _, q, d in CASES if q == question)
            return self._send(
                200, {"answer": DOCS[doc], "contexts": [{"doc_id": doc, "text": DOCS[doc]}]}
            )
        mode = self.path.strip("/")
        if mode == "drip":  # headers, then a byte a second for ever
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            for _ in range(600):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(1)
        elif mode == "silent":  # never a header
            time.sleep(600)
        elif mode == "bomb":
            self._raw(200, BOMB, {"Content-Encoding": "gzip", "Content-Type": "application/json"})
        elif mode == "huge":
            self._send(200, {"answer": "x" * 50_000_000, "contexts": []})
        elif mode == "ndjson":
            lines = b'{"answer": "A permit costs 6 dollars."}\n{"contexts": []}\n'
            self._raw(200, lines, {"Content-Type": "application/x-ndjson"})
        elif mode == "errnull":
            self._send(200, {"answer": "6 dollars", "contexts": [], "error": None})
        elif mode == "echo":
            echoed = "; ".join(f"{k}: {v}" for k, v in self.headers.items())
            self._send(500, {"error": f"upstream failed for {echoed}"})
        else:
            self._send(404, {"error": "no such probe"})

    def _send(self, status: int, reply: object) -> None:
        self._raw(status, json.dumps(reply).encode(), {"Content-Type": "application/json"})

    def _raw(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


TARGET = """
import os, sys, time
def answer(question, token=""):
    if question != "HOSTILE":
        return {"answer": "It is in the documents.", "contexts": []}
    mode = os.environ["PROBE_MODE"]
    if os.environ.get("PROBE_READY"):
        open(os.environ["PROBE_READY"], "w").close()
    if mode == "hang":
        while True:
            time.sleep(1)
    if mode == "exit0":
        sys.exit(0)
    if mode == "exit3":
        sys.exit(3)
    if mode == "interrupt":
        raise KeyboardInterrupt
    if mode == "huge":
        return {"answer": "y" * 50_000_000, "contexts": [{"text": "z" * 50_000_000}] * 3}
    if mode == "slow":
        time.sleep(30)
    return "fine"
"""
TARGET_AT_IMPORT = "import sys\nsys.exit(0)\ndef answer(question):\n    return 'never'\n"


def make_world(root: Path, name: str) -> Path:
    world = root / name
    (world / "corpus").mkdir(parents=True)
    for doc, text in DOCS.items():
        (world / "corpus" / doc).write_text(text + "\n")
    lines = [json.dumps({"id": i, "question": q, "relevant_docs": [d]}) for i, q, d in CASES]
    (world / "cases.jsonl").write_text("\n".join(lines) + "\n")
    (world / "hostile_target.py").write_text(TARGET)
    (world / "exits_at_import.py").write_text(TARGET_AT_IMPORT)
    return world


def dataset(world: Path, cases: str = "cases.jsonl") -> list[str]:
    return [
        "dataset=custom",
        f"dataset.corpus={world / 'corpus'}",
        f"dataset.cases={world / cases}",
    ]


COMMON = ["metrics=[hit_rate]", "run.max_error_rate=1", "hydra.run.dir=run"]


def http_args(world: Path, port: int, mode: str) -> list[str]:
    return [
        "system=http", f"system.url=http://127.0.0.1:{port}/{mode}",
        f"system.timeout_s={TIMEOUT_S}",
        f"+system.headers.X-Api-Key={HEADER_SECRET}", f"system.options.token={OPTION_SECRET}",
        *dataset(world), *COMMON,
    ]  # fmt: skip


def python_args(world: Path, target: str = "hostile_target:answer") -> list[str]:
    return [
        "system=python", f"system.target={target}", f"system.timeout_s={TIMEOUT_S}",
        f"system.options.token={OPTION_SECRET}", *dataset(world), *COMMON,
    ]  # fmt: skip


def answers_args(world: Path, body: bytes) -> list[str]:
    (world / "answers.jsonl").write_bytes(body)
    return ["system=answers", f"system.path={world / 'answers.jsonl'}", *dataset(world), *COMMON]


WAITER = (
    "import resource, subprocess, sys, json, time, os, signal\n"
    "start = time.monotonic()\n"
    "p = subprocess.Popen(sys.argv[2:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)\n"  # noqa: E501
    "plan = json.loads(sys.argv[1])\n"
    "ready = os.environ.get('PROBE_READY')\n"
    "while plan and ready and not os.path.exists(ready) and p.poll() is None:\n"
    "    time.sleep(0.05)\n"
    "last = start\n"
    "for delay, sig in plan:\n"
    "    time.sleep(delay)\n"
    "    os.kill(p.pid, sig)\n"
    "    last = time.monotonic()\n"
    "out, err = p.communicate()\n"
    "seconds = time.monotonic() - start\n"
    "if plan:\n"
    "    err += f'\\nragexp-probe: error: exited {time.monotonic() - last:.1f} s after the last signal'\n"  # noqa: E501
    "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
    "print(json.dumps({'code': p.returncode, 'seconds': seconds, 'rss_mb': rss, 'out': out, 'err': err}))\n"  # noqa: E501
)


def run(world: Path, args: list[str], store: str, env: dict[str, str] | None = None,
        signals: list[tuple[float, int]] = ()) -> dict[str, object]:  # fmt: skip
    """``python -m ragexp *args`` in ``world``, with ``signals`` sent (delay, signal) after it
    starts; its exit code, seconds, peak RSS (MB) and output."""
    environ = {**os.environ, "MLFLOW_TRACKING_URI": store, **(env or {})}
    if signals:  # sent once the target is in its hostile call, not while ragexp starts
        environ["PROBE_READY"] = str(world / "in-the-call")
    command = [
        sys.executable,
        "-c",
        WAITER,
        json.dumps(list(signals)),
        sys.executable,
        "-m",
        "ragexp",
        *args,
    ]
    done = subprocess.run(
        command, cwd=world, env=environ, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def said_lines(result: dict[str, object], word: str) -> list[str]:
    """ragexp's own lines of the run's terminal output holding ``word`` (error, warning)."""
    lines = (str(result["err"]) + "\n" + str(result["out"])).split("\n")
    return [ln.strip()[:150] for ln in lines if ln.startswith("ragexp") and word in ln.lower()]


def case_error(world: Path) -> str:
    cases = world / "run" / "cases.jsonl"
    if not cases.exists():
        return "(no cases.jsonl)"
    for line in cases.read_text(encoding="utf-8").split("\n"):  # JSONL: lines end at \n only
        if not line:
            continue
        case = json.loads(line)
        if case.get("case_id") == "c6":
            return str(case.get("error") or "answered")[:150]
    return "(c6 not in cases.jsonl)"


Probe = Callable[[Path, int, str], dict[str, object]]


def probes() -> dict[str, tuple[str, Probe]]:
    def http(mode: str) -> Probe:
        return lambda w, port, store: run(w, http_args(w, port, mode), store)

    def target(
        mode: str, signals: list[tuple[float, int]] = (), timeout_s: int = TIMEOUT_S
    ) -> Probe:
        return lambda w, port, store: run(
            w,
            [*python_args(w), f"system.timeout_s={timeout_s}"],
            store,
            {"PROBE_MODE": mode},
            signals,
        )

    def answers(body: bytes) -> Probe:
        return lambda w, port, store: run(w, answers_args(w, body), store)

    deep = b'{"case_id": "c1", "answer": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    ok_line = json.dumps({"case_id": "c1", "answer": "A pass costs 35 dollars."}).encode()

    def deep_cases(w: Path, port: int, store: str) -> dict[str, object]:
        (w / "deep.jsonl").write_bytes(
            b'{"id": "c1", "question": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
        )
        return run(
            w, python_args(w)[:4] + dataset(w, "deep.jsonl") + COMMON, store, {"PROBE_MODE": "ok"}
        )

    def symlink(w: Path, port: int, store: str) -> dict[str, object]:
        (w.parent / f"{w.name}-outside.md").write_text("OUTSIDE-SECRET-TEXT the private notes\n")
        (w / "corpus" / "notes.md").symlink_to(w.parent / f"{w.name}-outside.md")
        return run(w, python_args(w), store, {"PROBE_MODE": "ok"})

    def unknown_docs(w: Path, port: int, store: str) -> dict[str, object]:
        lines = (w / "cases.jsonl").read_text().replace('"permits.md"', '"permit.md"')
        (w / "cases.jsonl").write_text(lines)
        return run(w, python_args(w), store, {"PROBE_MODE": "ok"})

    def kill9(w: Path, port: int, store: str) -> dict[str, object]:
        result = run(w, python_args(w), store, {"PROBE_MODE": "slow"}, [(1.0, signal.SIGKILL)])
        time.sleep(30)  # the logging process notices within its grace
        result["err"] = f"ragexp-probe: error: 30 s later, runs RUNNING: {len(running_runs(store))}"
        return result

    return {
        "drip": ("HTTP: headers, then a byte a second", http("drip")),
        "silent": ("HTTP: connection accepted, no header ever", http("silent")),
        "bomb": ("HTTP: 400 KB gzip inflating to 400 MB", http("bomb")),
        "huge-http": ("HTTP: a 50 MB answer", http("huge")),
        "ndjson": ("HTTP: application/x-ndjson reply", http("ndjson")),
        "errnull": ('HTTP: "error": null beside an answer', http("errnull")),
        "echo": ("HTTP: 500 echoing every request header", http("echo")),
        "hang": ("Python: the target hangs", target("hang")),
        "exit0": ("Python: sys.exit(0) in a call", target("exit0")),
        "exit3": ("Python: sys.exit(3) in a call", target("exit3")),
        "interrupt": ("Python: KeyboardInterrupt in a call", target("interrupt")),
        "huge-python": ("Python: 50 MB answer, 3 × 50 MB contexts", target("huge")),
        "import-exit": (
            "Python: sys.exit(0) at import",
            lambda w, p, s: run(w, python_args(w, "exits_at_import:answer"), s),
        ),
        "sigterm": (
            "Python: hung target (timeout 60 s), SIGTERM, and again 1 s later",
            target("hang", [(0.5, signal.SIGTERM), (1.0, signal.SIGTERM)], timeout_s=60),
        ),
        "kill9": ("kill -9 of ragexp mid-run (then 30 s)", kill9),
        "not-utf8": ("answers file not UTF-8", answers(b"\xff\xfe" + ok_line + b"\n")),
        "deep-answers": ("answers line nested 100,000 deep", answers(deep)),
        "deep-cases": ("cases line nested 100,000 deep", deep_cases),
        "u2028": (
            "answers JSONL with U+2028 and U+0085 in a string",
            answers(
                json.dumps(
                    {"case_id": "c1", "answer": "a\u2028b\u0085c"}, ensure_ascii=False
                ).encode()
                + b"\n"
            ),
        ),
        "symlink": ("corpus symlink to a file outside", symlink),
        "unknown-docs": ("relevant_docs naming no corpus file", unknown_docs),
    }


def running_runs(store: str) -> list[str]:
    from mlflow import MlflowClient

    client = MlflowClient(store)
    experiments = [e.experiment_id for e in client.search_experiments()]
    runs = client.search_runs(experiments, "attributes.status = 'RUNNING'") if experiments else []
    return [f"{r.info.run_name} ({r.info.run_id[:8]})" for r in runs]


def leaks(root: Path) -> list[str]:
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [
            f"{secret}: {path.relative_to(root)}" for secret in SECRETS if secret.encode() in data
        ]
    return found


def main(names: list[str]) -> int:
    root = Path(mkdtemp(prefix="ragexp-hostile-"))
    store = f"sqlite:///{root / 'mlflow.db'}"
    server = ThreadingHTTPServer(("127.0.0.1", 0), Service)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    chosen = {k: v for k, v in probes().items() if not names or k in names}
    print(f"{len(chosen)} probes in {root}; system.timeout_s={TIMEOUT_S}\n")
    print("| probe | exit | seconds | peak RSS MB | case c6 / last line |")
    print("| --- | --- | --- | --- | --- |")
    worst_rss = 0.0
    for name, (what, probe) in chosen.items():
        world = make_world(root, name)
        result = probe(world, port, store)
        worst_rss = max(worst_rss, float(result["rss_mb"]))  # type: ignore[arg-type]
        if result["code"] in (0, 1):
            said = " / ".join([case_error(world), *said_lines(result, "warning")[:1]])
        else:
            said = (said_lines(result, "error") or ["(no error line)"])[-1]
        said = said.replace("|", "/")
        print(
            f"| {what} | {result['code']} | {result['seconds']:.1f} "
            f"| {result['rss_mb']:.0f} | {said} |",
            flush=True,
        )
    # one more run on the store: it reconciles what a dead process left RUNNING
    world = make_world(root, "after")
    run(world, python_args(world), store, {"PROBE_MODE": "ok"})
    left = running_runs(store)
    found = leaks(root)
    print(
        textwrap.dedent(f"""
        worst peak RSS: {worst_rss:.0f} MB
        runs left RUNNING in the store: {len(left)} {left if left else ""}
        files holding a planted secret: {len(found)} {found if found else ""}""")
    )
    server.shutdown()
    return 1 if left or found or worst_rss > 1024 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
