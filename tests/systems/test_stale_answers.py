"""Never a stale answer, through the real command: a team's app whose code is spread over a
package (a thin entry module, the retrieval in ``myapp/retriever.py``), a baseline run, then the
package degraded and the same command gated against the baseline. The gate must see the
regression with the default settings (the entry module's source did not change, so a cache keyed
on what ragexp can see would serve the baseline's answers); the unchanged app passes; pinning
``system.version`` reuses answers across commands and the report says so."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.cli_run import run_ragexp
from tests.stats.test_difference import zero_half

TOPICS = [f"topic{i}" for i in range(10)]
N_PER_TOPIC = 4

ENTRY = '''"""The app's entry point, as docs/systems.md's LangChain example has it: thin."""
from myapp.retriever import search


def answer(question: str) -> dict[str, object]:
    hits = search(question)
    return {"answer": hits[0][1], "contexts": [{"text": t, "doc_id": d} for d, t in hits]}
'''
RETRIEVER = """from pathlib import Path

DEGRADED = {degraded}


def search(question: str) -> list[tuple[str, str]]:
    docs = sorted(Path("corpus").glob("*.md"))
    words = set(question.split())
    ranked = sorted(docs, key=lambda p: -len(words & set(p.read_text().strip(".\\n").split())))
    if DEGRADED and int(question.split()[-1]) % 2 == 0:
        ranked = ranked[1:] + ranked[:1]  # half the questions lose their document
    return [(p.name, p.read_text()) for p in ranked[:1]]
"""


def _world(root: Path) -> Path:
    (root / "corpus").mkdir()
    for topic in TOPICS:
        (root / "corpus" / f"{topic}.md").write_text(f"All about {topic}.\n")
    cases = [
        {"id": f"{t}-{k}", "question": f"What about {t} {k}", "relevant_docs": [f"{t}.md"]}
        for t in TOPICS
        for k in range(N_PER_TOPIC)
    ]
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (root / "myapp").mkdir()
    (root / "myapp" / "__init__.py").write_text("")
    (root / "rag_chain.py").write_text(ENTRY)
    _retriever(root, degraded=False)
    return root


def _retriever(root: Path, *, degraded: bool) -> None:
    (root / "myapp" / "retriever.py").write_text(RETRIEVER.format(degraded=degraded))


def _run(root: Path, run_dir: str, *more: str) -> tuple[int, str, dict[str, object]]:
    result = run_ragexp(
        "system=python", "system.target=rag_chain:answer", "dataset=custom",
        f"dataset.corpus={root / 'corpus'}", f"dataset.cases={root / 'cases.jsonl'}",
        "metrics=[hit_rate]", f"cache.dir={root / 'cache'}", f"hydra.run.dir={run_dir}", *more,
        cwd=root,
    )  # fmt: skip
    assert "Traceback" not in result.stderr, result.stderr
    summary = json.loads((root / run_dir / "summary.json").read_text())
    return result.returncode, result.stderr, summary


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = _world(tmp_path_factory.mktemp("stale"))
    code, err, summary = _run(root, "base")
    assert code == 0, err
    assert summary["metrics"]["hit_rate"]["mean"] == 1.0  # type: ignore[index]
    return root


def test_an_unchanged_app_passes_the_gate_and_is_asked_again(app: Path) -> None:
    # 40 cases over 10 documents: an unchanged run's interval is Tango's corrected one at 10
    # effective pairs, ±0.404 (docs/decisions.md), so a margin of 0.45 is one it can show
    assert zero_half(10) == pytest.approx(0.404, abs=5e-4)
    code, err, summary = _run(app, "same", "gate.baseline=base", "gate.margin=0.45")
    assert code == 0, err
    assert "not worse" in err
    assert summary["answers"]["asked"] == 40 and summary["answers"]["reused"] == 0  # type: ignore[index]


def test_a_degraded_package_fails_the_gate_with_the_default_settings(app: Path) -> None:
    _retriever(app, degraded=True)
    try:
        code, err, summary = _run(app, "worse", "gate.baseline=base", "gate.margin=0.1")
    finally:
        _retriever(app, degraded=False)
    assert code == 1, err
    assert summary["metrics"]["hit_rate"]["mean"] == 0.5  # type: ignore[index]
    assert "hit_rate against base: Δ -0.500" in err and "gate" in err


def test_a_pinned_system_is_reused_by_the_next_command_and_the_report_says_so(
    app: Path,
) -> None:
    code, err, first = _run(app, "pinned-1", "system.version=3")
    assert code == 0, err
    assert first["answers"]["asked"] == 40  # type: ignore[index]
    code, err, again = _run(app, "pinned-2", "system.version=3")
    assert code == 0, err
    assert again["answers"] == {
        "asked": 0,
        "reused": 40,
        "reused_from": {"pinned-1": 40},
        "pinned": "3",
        "resumed_from": None,
    }
    report = (app / "pinned-2" / "report.md").read_text()
    assert "| answers | 40 reused from run pinned-1 (system pinned as 3) |" in report
    assert "answers: 40 reused from run pinned-1 (system pinned as 3);" in err


def test_a_sweeps_jobs_share_the_answers_of_one_command(app: Path) -> None:
    """Two jobs that differ only in what ragexp does with the answers (here the error rate
    allowed; in practice the judge) ask the app once between them."""
    result = run_ragexp(
        "system=python", "system.target=rag_chain:answer", "dataset=custom",
        f"dataset.corpus={app / 'corpus'}", f"dataset.cases={app / 'cases.jsonl'}",
        "metrics=[hit_rate]", f"cache.dir={app / 'cache'}", "hydra.sweep.dir=sweep",
        "-m", "run.max_error_rate=0.05,0.1",
        cwd=app,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    jobs = [json.loads((app / "sweep" / j / "summary.json").read_text()) for j in ("0", "1")]
    assert [job["answers"]["asked"] for job in jobs] == [40, 0]
    assert jobs[1]["answers"]["reused_from"] == {"sweep/0": 40}


def test_resume_reuses_the_answers_of_the_run_it_takes_up(app: Path) -> None:
    code, err, summary = _run(app, "resumed", "run.resume=base")
    assert code == 0, err
    assert summary["answers"]["reused"] == 40 and summary["answers"]["resumed_from"] == "base"  # type: ignore[index]
    assert "(resuming base)" in (app / "resumed" / "report.md").read_text()
    result = run_ragexp(
        "system=python", "system.target=rag_chain:answer", "dataset=custom",
        f"dataset.cases={app / 'cases.jsonl'}", "run.resume=nowhere", cwd=app,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "ragexp: error: run.resume=nowhere: no ragexp run there (no job.json with its command's "
        "id); give the dir of the interrupted run, e.g. run.resume=outputs/<date>/<time>"
    )


SERVICE = '''"""The same app behind HTTP: POST /ask {question} -> rag_chain.answer(question)."""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, ".")
from rag_chain import answer


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        data = json.dumps(answer(body["question"])).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
'''


@contextlib.contextmanager
def _deployed(root: Path, port: int) -> Iterator[str]:
    """The app's service on 127.0.0.1:``port``, as deployed from ``root`` now."""
    (root / "service.py").write_text(SERVICE)
    process = subprocess.Popen([sys.executable, "service.py", str(port)], cwd=root)
    url = f"http://127.0.0.1:{port}/ask"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.post(url, json={"question": "What about topic0 0"}, timeout=2)
                break
            except httpx.TransportError:
                assert process.poll() is None and time.monotonic() < deadline, "no service"
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_service_redeployed_degraded_on_the_same_url_fails_the_gate(app: Path) -> None:
    port = _free_port()
    common = [
        "system=http", "dataset=custom", f"dataset.cases={app / 'cases.jsonl'}",
        "metrics=[hit_rate]", f"cache.dir={app / 'cache'}",
    ]  # fmt: skip
    with _deployed(app, port) as url:
        base = run_ragexp(*common, f"system.url={url}", "hydra.run.dir=http-base", cwd=app)
    assert base.returncode == 0, base.stderr
    _retriever(app, degraded=True)
    try:
        with _deployed(app, port) as same_url:  # redeployed: the same URL, new code behind it
            gated = run_ragexp(
                *common, f"system.url={same_url}", "hydra.run.dir=http-gated",
                "gate.baseline=http-base", "gate.margin=0.1", cwd=app,
            )  # fmt: skip
    finally:
        _retriever(app, degraded=False)
    assert same_url == url
    assert gated.returncode == 1, gated.stderr
    assert "hit_rate against http-base: Δ -0.500" in gated.stderr
    summary = json.loads((app / "http-gated" / "summary.json").read_text())
    assert summary["answers"]["asked"] == 40
