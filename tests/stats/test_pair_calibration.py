"""People's pair labels against a planted judge biased toward run A: `ragexp compare A B
--pairwise --labels FILE` on a loopback Ollama judge, in-process. People say B is better on 36
of 60 cases, tie on 6 and A on 18 (a true win rate of B of 0.65); the judge prefers A's answer
on 12 of the cases people give to B, and picks whatever is shown first on 3 more (inconsistent).
30 cases drawn at random are labelled by the truth. The expected figures come from the planted
sets and ppi_py (the PPI authors' code), not from ragexp."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

from ragexp.commands import compare
from ragexp.results import CaseResult
from ragexp.results.case import RetrievedChunk
from tests.ollama_server import FakeOllama

N = 60
TRUTH = {f"c{i:02d}": "b" if i % 10 < 6 else "tie" if i % 10 == 6 else "a" for i in range(N)}
TRUE_WIN_RATE = 0.65  # (36 + ½ · 6) / 60
FOR_A = {f"c{i:02d}" for i in range(N) if i % 10 in (0, 5)}
"""People give these to B; the judge gives them to A, in both orders."""
FIRST = {f"c{i:02d}" for i in range(N) if i % 20 == 1}
"""The judge picks the answer shown first: inconsistent."""
SCORE = {"b": 1.0, "tie": 0.5, "a": 0.0}
LABELLED = sorted(
    str(c) for c in np.random.default_rng(7).choice(sorted(TRUTH), size=30, replace=False)
)
_SECTION = re.compile(r"^ANSWER (?P<pos>[AB]):\n(?P<answer>.*?)\n\n", re.DOTALL | re.MULTILINE)
_CASE = re.compile(r"case (c\d\d)")


def judge_for_a(model: str, messages: Sequence[Mapping[str, Any]]) -> str:
    text = str(messages[-1]["content"]) + "\n\n"
    by_run = {
        ("a" if "said by A" in m["answer"] else "b"): m["pos"] for m in _SECTION.finditer(text)
    }
    found = _CASE.search(text)
    assert found is not None and len(by_run) == 2, text
    case = found.group(1)
    if case in FIRST:
        return "A"
    choice = "a" if case in FOR_A else TRUTH[case]
    return "TIE" if choice == "tie" else by_run[choice]


def _case(i: int, run: str) -> CaseResult:
    return CaseResult(
        case_id=f"c{i:02d}", question=f"What does document {i // 2} say?", cluster=f"d{i // 2}",
        answer=f"case c{i:02d}, said by {run}",
        retrieved=[RetrievedChunk(doc_id=f"d{i // 2}", chunk_id="x#0", score=1.0, text="t")],
    )  # fmt: skip


def _label(case: CaseResult, other: CaseResult) -> str:
    from ragexp.results.labels import answer_sha256

    return json.dumps(
        {"case_id": case.case_id, "answer_a_sha256": answer_sha256(case.answer or ""),
         "answer_b_sha256": answer_sha256(other.answer or ""), "label": TRUTH[case.case_id],
         "labeler": "ana"}
    ) + "\n"  # fmt: skip


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("pairlabels")
    runs = {}
    for run in ("A", "B"):
        (root / run).mkdir()
        cases = [_case(i, run) for i in range(N)]
        (root / run / "cases.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in cases))
        runs[run] = {c.case_id: c for c in cases}
    labels = root / "pair-labels.jsonl"
    stale = _case(1, "C")  # c01 with another answer than B's: the label is not B's, never used
    labels.write_text(
        "".join(_label(runs["A"][c], runs["B"][c]) for c in LABELLED)
        + _label(runs["A"]["c01"], stale)
    )
    with FakeOllama(models=["qwen2.5:7b"], responder=judge_for_a) as server:
        yield {
            "argv": [str(root / "A"), str(root / "B"), "--pairwise", "--labels", str(labels),
                     "judge.model=qwen2.5:7b", f"judge.base_url={server.url}",
                     f"cache.dir={root / 'cache'}"],
        }  # fmt: skip


def _compare(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert compare.run(compare.parse(argv)) == 0
    return capsys.readouterr().out


def test_the_corrected_win_rate_moves_toward_the_truth_and_covers_it(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    pairwise = json.loads(_compare([*world["argv"], "--format", "json"], capsys))["pairwise"]
    human = pairwise["human"]
    assert pairwise["win_rate"] == pytest.approx((21 + 3) / 57)  # the judge's own: biased
    assert human["n_labels"] == 30 and human["stale_labels"] == 1
    decided = [c for c in LABELLED if c not in FIRST]
    agreed = [c for c in decided if c not in FOR_A]
    assert human["compared"] == len(decided) and human["undecided"] == len(LABELLED) - len(decided)
    assert human["agreement"] == pytest.approx(len(agreed) / len(decided))
    assert abs(human["win_rate"] - TRUE_WIN_RATE) < abs(pairwise["win_rate"] - TRUE_WIN_RATE)
    assert human["ci_low"] <= TRUE_WIN_RATE <= human["ci_high"]
    # ppi_py on the same labels and predictions (the judge's outcome: win 1, tie ½, loss 0; ½
    # where it was inconsistent), at ragexp's λ
    judge = {c: 0.5 if c in FIRST else 0.0 if c in FOR_A else SCORE[t] for c, t in TRUTH.items()}
    y = np.array([SCORE[TRUTH[c]] for c in LABELLED])
    f_l = np.array([judge[c] for c in LABELLED])
    f_u = np.array([judge[c] for c in TRUTH if c not in LABELLED])
    point = float(np.squeeze(ppi_mean_pointestimate(y, f_l, f_u, lam=human["lambda"])))
    assert human["win_rate"] == pytest.approx(point, abs=1e-9)
    low, high = ppi_mean_ci(y, f_l, f_u, alpha=0.05, lam=human["lambda"])
    assert float(low[0]) <= TRUE_WIN_RATE <= float(high[0])
    # ragexp's interval (t, floored, clustered) is no narrower than ppi_py's z interval
    assert human["ci_high"] - human["ci_low"] >= float(high[0] - low[0]) - 1e-9


def test_the_text_shows_agreement_and_the_corrected_win_rate(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    text = _compare(world["argv"], capsys)
    decided = [c for c in LABELLED if c not in FIRST]
    agreed = len([c for c in decided if c not in FOR_A])
    assert "Pairwise against people (30 labelled pairs)" in text
    assert (
        f"judge agrees with people on {agreed / len(decided):.0%} ({agreed} of {len(decided)}"
        in text
    )
    assert "win rate of B corrected with people's labels: 0." in text
    assert "labelled of 60 judged pairs" in text


def test_pair_labels_without_pairwise_and_a_bad_label_are_one_line(
    world: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "pair-labels.jsonl"
    bad.write_text(
        '{"case_id": "c00", "answer_a_sha256": "x", "answer_b_sha256": "y", "label": "c"}\n'
    )
    argv = world["argv"]
    for args, message in [
        ([*argv[:2], "--labels", argv[4]], "pair labels (of two answers) are read by --pairwise"),
        ([*argv[:4], str(bad), *argv[5:]], f"{bad}:1: label: "),
    ]:
        with pytest.raises(SystemExit) as exit_:
            compare.run(compare.parse(args))
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_a_folder_of_pair_labels_is_read_and_its_single_labels_beside_them_too(
    world: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pair-labels-ana.jsonl").write_text(Path(world["argv"][4]).read_text())
    argv = [*world["argv"][:4], str(tmp_path), *world["argv"][5:], "--format", "json"]
    assert json.loads(_compare(argv, capsys))["pairwise"]["human"]["n_labels"] == 30
    (tmp_path / "labels.jsonl").write_text("")  # single-answer labels beside: read as well
    assert json.loads(_compare(argv, capsys))["pairwise"]["human"]["n_labels"] == 30
    plain = json.loads(_compare([*argv[:2], "--labels", str(tmp_path), "--format", "json"], capsys))
    assert "pairwise" not in plain  # without --pairwise the pair labels are not read


# -- the corrected win rate is clustered by document (simulation) -------------------------------

DOC_WORLDS = 300
PREFERS_B = 0.65
"""Each document favours B with this chance; people then say B on 9 cases in 10 of it (else 1 in
10): true win rate 0.65 · 0.9 + 0.35 · 0.1 = 0.62, and cases of a document move together."""


def _document_world(
    rng: np.random.Generator, base: Any, documents: int, per: int, clustered: bool = True
) -> Any:
    """People's labels on 30 random cases of ``documents`` × ``per``; a judge agreeing with
    people on 4 cases in 5. Returns `human_pairwise`'s result."""
    import dataclasses

    from ragexp.stats.pair_calibration import human_pairwise

    n = documents * per
    favours = np.repeat(rng.random(documents) < PREFERS_B, per)
    people = np.where(favours, rng.random(n) < 0.9, rng.random(n) < 0.1).astype(float)
    judge = np.where(rng.random(n) < 0.8, people, 1 - people)
    ids = [f"c{i}" for i in range(n)]
    result = dataclasses.replace(
        base,
        outcomes=tuple((ids[i], "win" if judge[i] else "loss") for i in range(n)),
        clusters=tuple(f"d{i // per}" if clustered else ids[i] for i in range(n)),
        win_rate=float(judge.mean()),
    )
    labelled = rng.choice(n, 30, replace=False)
    return human_pairwise(result, {ids[i]: [float(people[i])] for i in labelled})


def test_the_corrected_win_rate_is_clustered_by_document() -> None:
    """12 documents of 10 cases: the corrected interval, clustered by document, covers the true
    win rate at least 90% of the time (0.94 measured); read as if every case were its own (as
    ppi_py's interval does) it covered 0.78. And in one world, the interval clustered by
    document is wider than the same labels read case by case."""
    from ragexp.stats.pairwise import PairReplies, pairwise_result

    base = pairwise_result([PairReplies("c0", "d0", "A", "B")])
    truth = PREFERS_B * 0.9 + (1 - PREFERS_B) * 0.1
    rng = np.random.default_rng(12)
    covered = 0
    for _ in range(DOC_WORLDS):
        corrected = _document_world(rng, base, 12, 10).corrected
        assert corrected is not None
        covered += corrected.ci_low <= truth <= corrected.ci_high
    print(f"12 documents: the corrected win rate covers {covered / DOC_WORLDS:.3f}")
    assert covered >= 0.90 * DOC_WORLDS
    by_document = _document_world(np.random.default_rng(5), base, 12, 10).corrected
    by_case = _document_world(np.random.default_rng(5), base, 12, 10, clustered=False).corrected
    assert by_document is not None and by_case is not None
    assert by_document.mean == pytest.approx(by_case.mean)
    assert by_document.ci_high - by_document.ci_low > 1.2 * (by_case.ci_high - by_case.ci_low)
