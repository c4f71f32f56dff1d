"""People's labels of pairs of answers: which of two runs' answers to a case is better. JSONL,
one label per line, written by ``ragexp label RUN_A RUN_B --pairwise``:

    {"case_id": "demo-01", "answer_a_sha256": "9f2c…", "answer_b_sha256": "41d0…",
     "label": "b", "labeler": "ana", "sample": "ragexp pair draw seed=0 n=30"}

``answer_a_sha256``/``answer_b_sha256`` are the SHA-256 of run A's and run B's exact answer
text (UTF-8, as `ragexp.results.labels.answer_sha256`); ``label`` is ``a`` (A's answer is
better), ``b`` (B's is) or ``tie``. A label belongs to that pair of answers in that order: it
applies to a comparison whose A and B gave exactly those answers, never to another one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ragexp.errors import ConfigError, first_line
from ragexp.results.jsonl import json_lines
from ragexp.results.labels import answer_sha256

PAIR_LABELS_FILE = "pair-labels.jsonl"
"""Where the pair labeller stores labels by default, in run B's dir."""
PairChoice = Literal["a", "b", "tie"]
PAIR_SCORE: dict[str, float] = {"b": 1.0, "tie": 0.5, "a": 0.0}
"""A person's pair label as a score for run B (what a win rate of B averages)."""


class PairLabel(BaseModel):
    """One line of a pair-labels file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    case_id: str
    answer_a_sha256: str
    answer_b_sha256: str
    label: PairChoice
    labeler: str | None = None
    note: str | None = None
    sample: str | None = None
    """Set when ragexp's sampler drew the case at random (its seed), else None."""

    def key(self) -> tuple[str, str, str]:
        return (self.case_id, self.answer_a_sha256, self.answer_b_sha256)

    def line(self) -> str:
        return self.model_dump_json(exclude_none=True) + "\n"


def is_pair_labels(path: Path) -> bool:
    """True when ``path`` is a pair-labels file (its first label names two answers), or a
    folder holding ``pair-labels*.jsonl`` files."""
    if path.is_dir():
        return any(path.glob("pair-labels*.jsonl"))
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return False
    for line in lines:
        if line.strip():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                return False
            return isinstance(row, dict) and "answer_a_sha256" in row
    return False


def read_pair_labels(path: Path) -> list[PairLabel]:
    """Every pair label of a file, or of every ``pair-labels*.jsonl`` file in a folder; bad
    input is one `ConfigError` ``file:line: what is wrong``."""
    if path.is_dir():
        files = sorted(path.glob("pair-labels*.jsonl"))
        if not files:
            raise ConfigError(f"--labels {path}: no pair-labels*.jsonl file in that folder")
        return [label for file in files for label in read_pair_labels(file)]
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"--labels {path}: cannot read it ({exc.strerror or first_line(exc)}); give a "
            "pair-labels JSONL file (`ragexp label RUN_A RUN_B --pairwise` writes one)"
        ) from None
    return [_parse(row, where) for where, row in json_lines(path, data, error=ConfigError)]


def _parse(row: object, where: str) -> PairLabel:
    if not isinstance(row, dict):
        raise ConfigError(f"{where}: expected a JSON object, got {type(row).__name__}")
    data = dict(row)
    if isinstance(data.get("label"), str):
        data["label"] = {"t": "tie"}.get(data["label"].strip().lower(), data["label"].lower())
    try:
        return PairLabel.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where_in = ".".join(map(str, err["loc"]))
        hint = " (a, b or tie)" if where_in == "label" else ""
        raise ConfigError(f"{where}: {where_in}: {err['msg']}{hint}") from None


def pair_scores(
    labels: Sequence[PairLabel], answers_a: dict[str, str], answers_b: dict[str, str]
) -> tuple[dict[str, list[float]], int]:
    """People's scores for run B per case (`PAIR_SCORE`, one per distinct person and label)
    from the labels naming exactly A's and B's answers (case id -> answer text, hashed here);
    and how many labels named other answers (stale: never applied)."""
    keys = {
        (case_id, answer_sha256(answer), answer_sha256(answers_b[case_id])): case_id
        for case_id, answer in answers_a.items()
        if case_id in answers_b
    }
    seen: set[tuple[str, str, str, str | None, str]] = set()
    scores: dict[str, list[float]] = {}
    stale = 0
    for label in labels:
        case_id = keys.get(label.key())
        if case_id is None:
            stale += 1
            continue
        if (*label.key(), label.labeler, label.label) in seen:
            continue
        seen.add((*label.key(), label.labeler, label.label))
        scores.setdefault(case_id, []).append(PAIR_SCORE[label.label])
    return scores, stale
