"""``ragexp generate`` offline, as the issue's "Done when" reads: the embedded model writes a small
set from the bundled demo corpus, and that set runs as a dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragexp.config.hydra import bundled_data_dir
from ragexp.data.chunking import chunk_text
from ragexp.data.dataset import load_corpus
from tests.cli_run import run_ragexp


@pytest.mark.slow
def test_the_embedded_model_writes_a_set_that_runs_as_a_dataset(tmp_path: Path) -> None:
    # The LLM-free filters only: the 135M model's judge would send round after round (minutes).
    # How many of its questions survive depends on the CPU's arithmetic (another CPU decodes
    # other words), so the chunks asked are bounded and any set of 1 to 4 cases is checked.
    result = run_ragexp("generate", "--n", "4", "--out", "golden.jsonl", "--max-chunks", "24",
                        "--filters", "too_generic,near_duplicates", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr + result.stdout
    assert "Traceback" not in result.stderr
    cases = [json.loads(line) for line in (tmp_path / "golden.jsonl").read_text().splitlines()]
    assert 1 <= len(cases) <= 4
    written = (
        "ragexp: wrote 4 cases to golden.jsonl"
        if len(cases) == 4
        else f"ragexp: --max-chunks 24 reached after {len(cases)} of 4: 24 chunks asked"
    )
    assert written in result.stdout
    corpus = load_corpus(bundled_data_dir() / "demo" / "corpus")
    chunks = {doc: len(chunk_text(doc, text, 40, 8)) for doc, text in corpus.items()}
    assert len({c["question"] for c in cases}) == len(cases)
    assert all(c["relevant_docs"][0] in corpus for c in cases)
    # no demo document holds a quarter of the chunks: each one's quota of 4 is ceil(< 1) = 1
    assert max(chunks.values()) < sum(chunks.values()) / 4
    assert len({c["cluster"] for c in cases}) == len(cases)
    assert {c["generator"]["backend"] for c in cases} == {"embedded"}
    report = json.loads((tmp_path / "golden.report.json").read_text())
    assert set(report["filters"]) == {"too_generic", "near_duplicates"}
    assert max(d["kept"] - d["quota"] for d in report["documents"]) <= 0
    corpus_dir = bundled_data_dir() / "demo" / "corpus"
    overrides = ["dataset=custom", "dataset.cases=golden.jsonl", f"dataset.corpus={corpus_dir}"]
    # retrieve and generate each case; a metric without a judge (the judge is not on trial here)
    run = run_ragexp(
        *overrides, "metrics=[hit_rate]", "tracking.enabled=false", "hydra.run.dir=outputs/run",
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    scored = [
        json.loads(line) for line in (tmp_path / "outputs/run/cases.jsonl").read_text().splitlines()
    ]
    assert sorted(c["case_id"] for c in scored) == sorted(c["id"] for c in cases)
    for case in scored:  # answered, and its relevant document is one retrieval can find
        assert case["error"] is None and case["answer"]
        assert case["metrics"]["hit_rate"]["error"] is None
        assert case["metrics"]["hit_rate"]["score"] in (0.0, 1.0)
