"""No planted secret leaves ragexp: a secret is given in each way a user can pass one (a
system option, a secret-named header, a custom auth header, the key ``system.api_key_env`` and
``generator.api_key_env`` name, a URL's password), a real ``python -m ragexp`` runs against a
loopback service that echoes every request header in a 500 for one case, tracked into a real
sqlite store, once as a single run and once as a sweep; then every byte of every file the runs
left (run and sweep dirs, the answer cache, ``mlflow.db`` and its WAL, ``mlruns/``) and the
terminal output are searched for each secret, Hydra's own files (``.hydra/``, a sweep's
``multirun.yaml``, which hold the command line as typed) included."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests.cli_run import run_ragexp
from tests.loopback import serving
from tests.systems.world import dataset_args, make_world

OPTION = "tok-Opt7Qz91xV"
HEADER = "hdr-Key5Wm82bN"
CUSTOM = "team-Auth3Rv6cJ"  # a header whose name says nothing of a secret
SERVICE_KEY = "env-Key8Pn4cTq"
GENERATOR_KEY = "gen-Key2Lx7dHs"
PASSWORD = "pw-Secret4JkYe"
BASIC = base64.b64encode(f"team:{PASSWORD}".encode()).decode()  # what httpx sends for it
SECRETS = {
    "system.options.token": OPTION,
    "system.headers.X-Api-Key": HEADER,
    "system.headers.X-Team-Auth": CUSTOM,
    "system.api_key_env": SERVICE_KEY,
    "generator.api_key_env": GENERATOR_KEY,
    "system.url's password": PASSWORD,
    "system.url's Basic auth": BASIC,
}
CASES = [
    ("c1", "How much does a private vehicle pass cost?", "fees.md"),
    ("c2", "[echo] What does a backcountry permit cost per person?", "permits.md"),
    ("c3", "Can my dog ride the shuttle from the visitor center?", "pets.md"),
]


class Echo(BaseHTTPRequestHandler):
    """Answers with the case's relevant document; a question marked ``[echo]`` gets a 500 whose
    body repeats every request header, the way a verbose proxy or framework error page does."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        question = str(request.get("question", ""))
        if "[echo]" in question:
            echoed = "; ".join(f"{k}: {v}" for k, v in reversed(self.headers.items()))
            status, reply = 500, {"error": f"upstream failed for request with {echoed}"}
        else:
            doc = next(d for _, q, d in CASES if q == question)
            status, reply = (
                200,
                {"answer": "See the page.", "contexts": [{"doc_id": doc, "text": "t"}]},
            )
        body = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def echo_port() -> Iterator[int]:
    with serving(Echo) as url:
        yield int(url.rsplit(":", 1)[1])


def _leaks(folder: Path, texts: dict[str, str]) -> list[str]:
    """``what: where`` for each secret found in a file under ``folder`` (bytes) or in one of
    ``texts``."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [f"{what}: {path.relative_to(folder)}" for what, secret in SECRETS.items()
                  if secret.encode() in data]  # fmt: skip
    for name, text in texts.items():
        found += [f"{what}: {name}" for what, secret in SECRETS.items() if secret in text]
    return found


def _echo(run_dir: Path) -> str:
    """The ``error_detail`` of the case the service answered with its echo, lower-cased."""
    cases = [json.loads(line) for line in (run_dir / "cases.jsonl").read_text().splitlines()]
    return str(next(c for c in cases if c["case_id"] == "c2")["error_detail"]).lower()


def test_no_planted_secret_reaches_any_artifact_the_store_or_the_terminal(
    tmp_path: Path, echo_port: int
) -> None:
    world = make_world(tmp_path, CASES)
    args = (
        "system=http", f"system.options.token={OPTION}", f"+system.headers.X-Api-Key={HEADER}",
        f"+system.headers.X-Team-Auth={CUSTOM}", "system.api_key_env=SVC_KEY_FOR_TEST",
        "generator.backend=openai", "generator.base_url=http://127.0.0.1:9/v1",
        "generator.api_key_env=GEN_KEY_FOR_TEST",
        *dataset_args(world), "metrics=[hit_rate]", "run.max_error_rate=1",
    )  # fmt: skip
    env = {"SVC_KEY_FOR_TEST": SERVICE_KEY, "GEN_KEY_FOR_TEST": GENERATOR_KEY}
    url = f"127.0.0.1:{echo_port}/ask"
    single = run_ragexp(
        *args, f"system.url=http://team:{PASSWORD}@{url}", "hydra.run.dir=run",
        cwd=world, env=env, mlflow=True,
    )  # fmt: skip
    assert single.returncode == 0, single.stderr
    sweep = run_ragexp(
        *args, f"system.url=http://{url}", "hydra.sweep.dir=sweep",
        "-m", "system.options.top_k=1,2",
        cwd=world, env=env, mlflow=True,
    )  # fmt: skip
    assert sweep.returncode == 0, sweep.stderr

    # the echo reached the case's error, every secret in it masked (httpx sends the URL's
    # credentials as Basic auth in place of the key's Bearer: the sweep's URL has none)
    single_echo = _echo(world / "run")
    assert "x-team-auth: ***" in single_echo and "x-api-key: ***" in single_echo
    assert "authorization: basic ***" in single_echo
    [sweep_job, *_] = sorted((world / "sweep").glob("*/cases.jsonl"))
    assert "authorization: bearer ***" in _echo(sweep_job.parent)
    assert (world / "mlflow.db").exists() and (world / "sweep" / "summary.json").exists()
    hydra_own = [world / "run" / ".hydra" / "overrides.yaml", world / "sweep" / "multirun.yaml"]
    assert all(path.exists() for path in hydra_own)  # Hydra's own, searched too
    assert "system.options.token=***" in hydra_own[0].read_text()
    outputs = {
        "single run's stderr": single.stderr, "single run's stdout": single.stdout,
        "sweep's stderr": sweep.stderr, "sweep's stdout": sweep.stdout,
    }  # fmt: skip
    leaks = _leaks(world, outputs)
    assert not leaks, "\n".join(leaks)
