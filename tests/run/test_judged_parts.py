"""The parts of a metric judged more than once (``diagnostics``, in process, ``system=answers``
on the diagnostics world's fine cases, a loopback Ollama-API judge): with ``judge.repeats`` the
case's parts are its first judgement's (a second judgement that answers otherwise changes none),
with ``judge.panel`` each part is the mean of the jurors' (a juror that denies every chunk
halves the chunk parts). The expected parts are written out by hand from the plant."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ragexp.plugins.manager import load_plugins
from ragexp.results import CaseResult
from tests.cli_run import OLLAMA_MODELS
from tests.ollama_server import FakeOllama, request_options
from tests.plugins.builtin.diagnostics_world import answer_row, judge_reply, write_world
from tests.run.in_process import configured, run_in_process

N_CASES = 3
SEED = 7
TRUTHFUL, DENIER = "llama3.2:3b", "qwen2.5:7b"
FINE = {
    "claim_recall": 1.0, "precision": 1.0, "context_claim_recall": 1.0, "context_precision": 0.5,
    "context_utilisation": 1.0, "noise_sensitivity_relevant": 0.0,
    "noise_sensitivity_irrelevant": 0.0, "hallucination": 0.0, "self_knowledge": 0.0,
    "faithfulness": 1.0,
}  # fmt: skip
"""A fine case (the three facts said, both documents retrieved) as a truthful judge sees it."""
DENIED = FINE | {
    "context_claim_recall": 0.0, "context_precision": 0.0, "context_utilisation": None,
    "self_knowledge": 1.0, "faithfulness": 0.0,
}  # fmt: skip
"""The same case as a judge that finds no claim in any retrieved chunk (but judges the answer
against the reference, and the reference against the answer, truthfully): no chunk relevant, every
correct claim from the generator's own knowledge, nothing in a chunk to utilise."""


def _denies(prompt: str) -> str:
    """The truthful reply, every claim unsupported when the chunks shown are retrieved ones."""
    reply = judge_reply(prompt)
    if "CLAIMS:" not in prompt or "[reference]\n" in prompt or "[answer]\n" in prompt:
        return reply
    verdicts = json.loads(reply)["verdicts"]
    return json.dumps({"verdicts": [v | {"supported": False, "chunk": None} for v in verdicts]})


def _responder(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """``TRUTHFUL`` tells the truth on its first judgement (seed `SEED`) and denies on later ones;
    ``DENIER`` always denies."""
    prompt = str(messages[-1].get("content", ""))
    first = request_options().get("seed") == SEED
    return judge_reply(prompt) if model == TRUTHFUL and first else _denies(prompt)


def _cases(tmp_path: Path, **judge: Any) -> list[CaseResult]:
    world = write_world(tmp_path, N_CASES, configs=())
    rows = [answer_row(i, "fine") for i in range(N_CASES)]
    (world / "answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    reg = load_plugins([])
    with FakeOllama(models=OLLAMA_MODELS, responder=_responder) as server:
        settings = {
            "system": {"kind": "answers", "path": str(world / "answers.jsonl")},
            "dataset.cases": str(world / "cases.jsonl"), "dataset.corpus": str(world / "corpus"),
            "judge.base_url": server.url, "judge.model": TRUTHFUL, "judge.seed": SEED,
            "metrics": ["diagnostics"], "metric_options": {},
            "cache": {"dir": str(tmp_path / "cache")},
            **{f"judge.{key}": value for key, value in judge.items()},
        }  # fmt: skip
        return run_in_process(reg, configured(reg, settings)).cases


def test_with_repeats_the_parts_are_the_first_judgements(tmp_path: Path) -> None:
    cases = _cases(tmp_path, repeats=2)
    assert len(cases) == N_CASES
    for case in cases:
        result = case.metrics["diagnostics"]
        assert result.parts == pytest.approx(FINE)
        [repeat] = result.repeats  # the second judgement denied: its score is the same F1 ...
        assert (result.score, result.label, repeat.score, repeat.label) == (
            1.0,
            "fine",
            1.0,
            "fine",
        )


def test_with_a_panel_each_part_is_the_mean_of_the_jurors(tmp_path: Path) -> None:
    cases = _cases(tmp_path, panel=[TRUTHFUL, DENIER], quorum=2)
    for case in cases:
        result = case.metrics["diagnostics"]
        assert [v.parts for v in result.jurors] == [pytest.approx(FINE), pytest.approx(DENIED)]
        given = {part: [v for v in (FINE[part], DENIED[part]) if v is not None] for part in FINE}
        mean = {part: sum(values) / len(values) for part, values in given.items()}
        assert result.parts == pytest.approx(mean)
        assert result.parts["faithfulness"] == 0.5 and result.parts["context_utilisation"] == 1.0
