"""Human labels, one format: JSONL, one label per line.

    {"case_id": "demo-01", "answer_sha256": "9f2c…", "metric": "faithfulness", "label": "NO",
     "labeler": "ana", "note": "the park has no shuttle", "sample": "ragexp seed 0"}

``answer_sha256`` is the SHA-256 of the exact answer text (UTF-8); ``answer``, the text itself,
is accepted instead. ``label`` is in the metric's own vocabulary (its ``label_scores``).
``labeler``, ``note`` and ``sample`` are optional; ``sample`` says the answer was drawn at random
by ragexp's sampler (the correction of the means assumes a random sample). A label belongs to one
answer: it applies to every run whose case has that exact answer, never to another one.

A metric that takes marks instead of labels (``diagnostics``: its vocabulary is empty) has lines
with ``"label": "marked"`` and ``verdicts``, a person's mark of each verdict of its verifier
(`ragexp.results.verdicts`):

    {"case_id": "demo-01", "answer_sha256": "9f2c…", "metric": "diagnostics", "label": "marked",
     "verdicts": [{"kind": "answer_in_chunks", "claim": "The park opens at 8.", "mark": true}]}
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from ragexp.errors import ConfigError, first_line
from ragexp.results.case import AppliedLabel, AppliedMarks, CaseResult
from ragexp.results.jsonl import json_lines
from ragexp.results.verdicts import KINDS, MARKED, VerdictMark

LABELS_FILE = "labels.jsonl"
"""Where the labeller and ``ragexp label import`` store labels, in a run or sweep dir."""

Vocabularies = Mapping[str, Mapping[str, float]]
"""metric -> its labels and their scores (`ragexp.metrics.label_scores`); empty for a metric
that takes marks of its verdicts instead (`ragexp.metrics.MarksVerdicts`)."""


class HumanLabel(BaseModel):
    """One line of a labels file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    case_id: str
    answer_sha256: str
    metric: str
    label: str
    labeler: str | None = None
    note: str | None = None
    sample: str | None = None
    """Set when ragexp's sampler drew the answer at random (its seed), else None."""
    claims: list[bool] | None = None
    """A person's mark of each claim the metric checked, in its order (supported or not); the
    label is then derived from the marks (`ragexp.labels.claims.claims_label`)."""
    verdicts: list[VerdictMark] | None = None
    """For a metric that takes marks instead of labels (``diagnostics``): the person's mark of
    each verdict of its verifier, with the claim it speaks of; the label is then ``marked``."""

    def key(self) -> tuple[str, str, str]:
        return (self.case_id, self.answer_sha256, self.metric)

    def line(self) -> str:
        return self.model_dump_json(exclude_none=True) + "\n"


def answer_sha256(answer: str) -> str:
    """The SHA-256 of an answer's exact text, as labels name it."""
    return hashlib.sha256(answer.encode("utf-8")).hexdigest()


def canonical_label(value: object, vocabulary: Mapping[str, float]) -> str | None:
    """``value`` as the vocabulary spells it (``yes`` -> ``YES``, ``4`` or 4 -> ``4``), or None
    when it is none of its labels."""
    text = str(value).strip()
    if isinstance(value, bool):
        text = "YES" if value else "NO"
    for label in vocabulary:
        if label.lower() == text.lower():
            return label
    return None


def parse_label(
    row: object, where: str, vocabularies: Vocabularies, *, sample: str | None = None
) -> HumanLabel:
    """One label from a JSON object; ``ConfigError`` ``<where>: what is wrong`` otherwise."""
    if not isinstance(row, dict):
        raise ConfigError(f"{where}: expected a JSON object, got {type(row).__name__}")
    data = dict(row)
    if data.get("answer") is not None:
        digest = answer_sha256(str(data.pop("answer")))
        if data.get("answer_sha256") not in (None, "", digest):
            raise ConfigError(
                f"{where}: 'answer' and 'answer_sha256' name different answers; give one"
            )
        data["answer_sha256"] = digest
    data.pop("answer", None)
    for key in ("case_id", "metric", "label", "answer_sha256"):
        if data.get(key) in (None, ""):
            name = "answer_sha256 (or answer)" if key == "answer_sha256" else key
            raise ConfigError(f"{where}: missing '{name}'")
    metric = str(data["metric"])
    if metric not in vocabularies:
        known = ", ".join(sorted(vocabularies)) or "none"
        raise ConfigError(f"{where}: unknown metric '{metric}'; metrics that take labels: {known}")
    label = _label(data, where, metric, vocabularies[metric])
    data.update(case_id=str(data["case_id"]), metric=metric, label=label)
    if sample is not None and not data.get("sample"):
        data["sample"] = sample
    try:
        parsed = HumanLabel.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"{where}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    unknown = sorted({m.kind for m in parsed.verdicts or []} - set(KINDS))
    if unknown:
        raise ConfigError(
            f"{where}: unknown kind of verdict {unknown[0]!r}; kinds: {', '.join(KINDS)}"
        )
    return parsed


def _label(
    data: Mapping[str, object], where: str, metric: str, vocabulary: Mapping[str, float]
) -> str:
    """The line's label as the vocabulary spells it; for a metric that takes marks of its
    verdicts instead (an empty vocabulary), ``marked``, and the marks must be there."""
    if not vocabulary:
        if str(data["label"]).lower() != MARKED or not isinstance(data.get("verdicts"), list):
            raise ConfigError(
                f"{where}: {metric} takes marks of its verdicts, not a label: give "
                f"'label': '{MARKED}' and 'verdicts', or mark them with `ragexp label RUN`"
            )
        return MARKED
    label = canonical_label(data["label"], vocabulary)
    if label is None:
        raise ConfigError(
            f"{where}: label {data['label']!r} is not one of {metric}'s labels "
            f"({', '.join(vocabulary)})"
        )
    if data.get("verdicts") is not None:
        raise ConfigError(
            f"{where}: 'verdicts' are marks for a metric that takes no label; {metric} takes one"
        )
    return label


def read_labels(path: Path, vocabularies: Vocabularies) -> list[HumanLabel]:
    """Every label of a labels file, or of every ``labels*.jsonl`` file in a folder. Bad input
    is one `ConfigError` ``file:line: what is wrong``."""
    if path.is_dir():
        files = sorted(path.glob("labels*.jsonl"))
        if not files:
            raise ConfigError(f"labels={path}: no labels*.jsonl file in that folder")
        return [label for file in files for label in read_labels(file, vocabularies)]
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"labels={path}: cannot read it ({exc.strerror or first_line(exc)}); give a labels "
            "JSONL file or a folder of them"
        ) from None
    return [
        parse_label(row, where, vocabularies)
        for where, row in json_lines(path, data, error=ConfigError)
    ]


class Line(Protocol):
    """A label that is one line of its file (`HumanLabel`, a pair label)."""

    def line(self) -> str: ...


def append_labels(path: Path, labels: Iterable[Line]) -> int:
    """Add labels to a labels file (created if missing); returns how many were written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("a", encoding="utf-8") as fh:
        for label in labels:
            fh.write(label.line())
            n += 1
    return n


def write_labels(path: Path, labels: Sequence[Line]) -> None:
    """Write a labels file anew (the terminal labeller's undo)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(label.line() for label in labels), encoding="utf-8")


class LabelIndex:
    """Labels by the answer they name, applied to cases one at a time as a run finishes them
    (``MetricResult.human``); the same label twice (a copy) counts once."""

    def __init__(self, labels: Sequence[HumanLabel], vocabularies: Vocabularies) -> None:
        self.vocabularies = vocabularies
        self.n_read = len(labels)
        self._by_key: dict[tuple[str, str, str], dict[tuple[str | None, str], HumanLabel]] = {}
        for label in labels:
            self._by_key.setdefault(label.key(), {})[(label.labeler, label.label)] = label
        self._used: set[tuple[str, str, str]] = set()

    def apply(self, case: CaseResult) -> None:
        """Attach the labels of this case's answer to its metric results."""
        if case.answer is None or case.error:
            return
        digest = answer_sha256(case.answer)
        for name, result in case.metrics.items():
            key = (case.case_id, digest, name)
            found = self._by_key.get(key)
            if not found or result.error:
                continue
            self._used.add(key)
            if not self.vocabularies[name]:
                result.marks = [
                    AppliedMarks(
                        labeler=label.labeler,
                        random=label.sample is not None,
                        verdicts=label.verdicts or [],
                    )
                    for label in found.values()
                ]
                continue
            result.human = [
                AppliedLabel(
                    label=label.label,
                    score=self.vocabularies[name][label.label],
                    labeler=label.labeler,
                    random=label.sample is not None,
                    claims=label.claims,
                )
                for label in found.values()
            ]

    @property
    def applied(self) -> int:
        """Labels that matched an answer of the cases applied so far."""
        return sum(len(self._by_key[key]) for key in self._used)

    @property
    def stale(self) -> int:
        """Labels that matched no answer (another answer, another case): never applied."""
        return sum(len(found) for key, found in self._by_key.items() if key not in self._used)
