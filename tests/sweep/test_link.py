"""What ties a sweep's jobs together: the swept keys, and job names made of their values."""

from __future__ import annotations

from pathlib import Path

from ragexp.results.jobs import job_label, short_keys, sweep_label
from ragexp.sweep.link import SweepLink, job_values, swept_keys


def test_swept_keys_are_the_sweep_overrides_and_a_search_sweepers_params() -> None:
    overrides = ["judge.model=qwen2.5:7b", "retriever.top_k=3,5,8", "prompt=choice(a,b)"]
    assert swept_keys(overrides, {}) == ["retriever.top_k", "prompt"]
    assert swept_keys(["x=1"], {"retriever.top_k": "range(2,8)"}) == ["retriever.top_k"]
    assert swept_keys(["++gate.faithfulness=0.5,0.8"], {}) == ["gate.faithfulness"]


def test_a_jobs_values_come_from_its_overrides_with_hydras_escapes_undone() -> None:
    overrides = ["dataset.limit=2", r"judge.model=qwen2.5\:7b", "retriever.top_k=3"]
    assert job_values(overrides, ["judge.model", "retriever.top_k"]) == {
        "judge.model": "qwen2.5:7b",
        "retriever.top_k": "3",
    }


def test_job_names_are_short_and_unambiguous() -> None:
    assert job_label({"generator.model": "gen-p90", "retriever.top_k": "3"}) == (
        "gen-p90 · top_k=3"
    )
    assert short_keys(["a.top_k", "b.top_k", "prompt"]) == {
        "a.top_k": "a.top_k",
        "b.top_k": "b.top_k",
        "prompt": "prompt",
    }
    assert job_label({}) == "default"
    assert sweep_label(["judge.model", "retriever.top_k"]) == "sweep judge × top_k"


def test_the_link_file_round_trips_and_a_missing_one_reads_as_none(tmp_path: Path) -> None:
    link = SweepLink(swept=["retriever.top_k"], parent_run_id="abc", tracking_uri="sqlite:///x")
    link.write(tmp_path / "sweep")
    assert SweepLink.read(tmp_path / "sweep") == link
    assert SweepLink.read(tmp_path / "elsewhere") is None
