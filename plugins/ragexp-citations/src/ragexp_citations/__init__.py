"""ragexp-citations: the ``citation_accuracy`` metric for ragexp.

Do the source ids an answer cites in square brackets (``[fees-and-passes.md]``) point at chunks the
retriever actually returned for that case? No judge is asked; the check is purely textual.

What counts as a citation
-------------------------
1. ``<think>...</think>`` blocks are removed first (reasoning is not the answer).
2. Every innermost ``[...]`` group on one line is a candidate: ``[a.md]``, ``[a.md][b.md]`` and
   ``[a.md] [b.md]`` give two groups each. A group is split on ``,`` and ``;``
   (``[a.md, b.md]``). Each piece is trimmed of whitespace, quotes and backticks; a leading
   ``source:`` / ``sources:`` label is dropped, and so is a trailing chunk number ``#<n>``
   (``[a.md#2]`` cites ``a.md``).
3. A piece is a cited source id when it is exactly one of the case's retrieved doc ids, or it
   *looks like* a doc id: no spaces, only letters, digits, ``_ . -`` and ``/`` separators, and a
   file suffix starting with a letter (``a.md``, ``guides/permits.txt``, ``notes.v2.html``).
   Anything else is not a citation and is ignored: ``[1]``, ``[2, 3]``, ``[1.5]``, ``[sic]``,
   ``[citation needed]``, ``[x]``.

Score and labels
----------------
``score`` = share of the *distinct* cited ids that are among the retrieved chunks' doc ids;
``label`` = ``all_valid`` (1.0), ``some_invalid`` (strictly between) or ``none_valid`` (0.0);
``raw`` = the distinct cited ids in order of first appearance, joined by ``", "`` (``None`` when
nothing is cited).

An answer that cites nothing gets label ``no_citations`` and score ``None`` (left out of the mean,
counted as unscored). With ``metric_options.citation_accuracy.require_citations=true`` it scores
0.0 instead — except an abstention ("I don't know", "I do not know", at the start of the answer),
which the ``cite`` prompt tells the model to give *without* a citation, so it stays unscored.

Options (``metric_options.citation_accuracy.<option>``) are declared by `CitationAccuracy.Options`:
``require_citations`` (bool, default false). ragexp validates them before any case runs (an
unknown key or a value that is not a boolean stops the run with one line naming the key) and
passes ``score`` an ``Options`` instance.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, StrictBool
from ragexp import MetricResult, hookimpl
from ragexp.metrics import Judge, Metric, RegisterMetric, Sample, strip_reasoning

__version__ = "0.2.0"

__all__ = [
    "CitationAccuracy",
    "__version__",
    "extract_citations",
    "is_abstention",
    "ragexp_register_metrics",
]

ALL_VALID: Final = "all_valid"
SOME_INVALID: Final = "some_invalid"
NONE_VALID: Final = "none_valid"
NO_CITATIONS: Final = "no_citations"

# An innermost bracket group on one line; bounded so a stray "[" cannot swallow a paragraph.
_GROUP_RE: Final = re.compile(r"\[([^\[\]\n]{1,500})\]")
_SPLIT_RE: Final = re.compile(r"[,;]")
_LABEL_RE: Final = re.compile(r"^sources?\s*:\s*", re.IGNORECASE)
_CHUNK_SUFFIX_RE: Final = re.compile(r"#\d+$")
# Path segments of word characters, dots and dashes, ending in a suffix that starts with a letter.
_DOC_ID_RE: Final = re.compile(r"[\w.-]+(?:/[\w.-]+)*\.[^\W\d_]\w{0,15}")
_QUOTES: Final = "'\"`\u2018\u2019\u201c\u201d"
_ABSTENTION_RE: Final = re.compile(
    rf"^[\W_]*i\s+(?:don[{_QUOTES}]?t|do\s+not)\s+know\b", re.IGNORECASE
)
_TRIM: Final = " \t" + _QUOTES


def _pieces(text: str) -> Iterator[str]:
    for group in _GROUP_RE.findall(text):
        for part in _SPLIT_RE.split(group):
            piece = _LABEL_RE.sub("", part.strip(_TRIM)).strip(_TRIM)
            piece = _CHUNK_SUFFIX_RE.sub("", piece)
            if piece:
                yield piece


def extract_citations(answer: str, known_ids: Iterable[str] = ()) -> list[str]:
    """The distinct source ids ``answer`` cites, in order of first appearance.

    A bracketed piece counts when it equals one of ``known_ids`` (the retrieved doc ids) or looks
    like a doc id (a file name or relative path with a letter-initial suffix); see the module
    docstring for the full rule.
    """
    known = set(known_ids)
    cited: list[str] = []
    for piece in _pieces(strip_reasoning(answer)):
        if (piece in known or _DOC_ID_RE.fullmatch(piece)) and piece not in cited:
            cited.append(piece)
    return cited


def is_abstention(answer: str) -> bool:
    """True when the answer starts with "I don't know" (or "I do not know")."""
    return _ABSTENTION_RE.match(strip_reasoning(answer).strip()) is not None


def _label(score: float) -> str:
    if score == 1.0:
        return ALL_VALID
    if score == 0.0:
        return NONE_VALID
    return SOME_INVALID


class CitationAccuracy:
    """Share of the answer's distinct citations that name a retrieved document."""

    name: str = "citation_accuracy"
    version: str = "1"
    needs_judge: bool = False

    class Options(BaseModel):
        """``metric_options.citation_accuracy.<option>``; ragexp checks them before any case."""

        model_config = ConfigDict(frozen=True)

        require_citations: StrictBool = Field(
            default=False,
            description="score an answer that cites nothing 0.0 instead of leaving it "
            "unscored; an abstention (an answer starting with I don't know) stays unscored",
        )

    async def score(
        self, sample: Sample, judge: Judge | None, options: CitationAccuracy.Options
    ) -> MetricResult:
        """Score one answer; ragexp passes ``options`` as an `Options` instance."""
        require = options.require_citations
        retrieved: Sequence[str] = [c.doc_id for c in sample.contexts]
        cited = extract_citations(sample.answer, retrieved)
        if not cited:
            penalize = require and not is_abstention(sample.answer)
            return MetricResult(score=0.0 if penalize else None, label=NO_CITATIONS)
        valid = set(retrieved)
        score = sum(1 for doc_id in cited if doc_id in valid) / len(cited)
        return MetricResult(score=score, label=_label(score), raw=", ".join(cited))


@hookimpl
def ragexp_register_metrics(register: RegisterMetric) -> None:
    """Register ``citation_accuracy``."""
    metric: Metric = CitationAccuracy()
    register(metric)
