"""Did a swept option reach the system? When every job of a sweep over a ``system.options.*``
key gave the same answers (and contexts) on every case, the key most likely never reached the
system under test: a misspelled name that an HTTP service or a ``**kwargs`` function ignores.
Read from each job's ``cases.jsonl`` (`ragexp.results.jobs`), never from memory."""

from __future__ import annotations

from collections.abc import Sequence

from ragexp.results.case import CaseResult
from ragexp.results.jobs import JobResult

OPTION_PREFIX = "system.options."


def unreached_options(jobs: Sequence[JobResult], swept: Sequence[str]) -> dict[str, int]:
    """Each swept ``system.options.*`` key whose jobs, wherever they differ only in that key,
    answered every case they share identically (answer and contexts), with how many jobs were
    compared; a key with fewer than two such jobs, or no shared answered case, is left out."""
    done = [job for job in jobs if job.scored and job.cases]
    found: dict[str, int] = {}
    for key in swept:
        if not key.startswith(OPTION_PREFIX):
            continue
        groups: dict[tuple[tuple[str, str], ...], list[JobResult]] = {}
        for job in done:
            rest = tuple(sorted((k, v) for k, v in job.swept.items() if k != key))
            groups.setdefault(rest, []).append(job)
        compared = [g for g in groups.values() if len({j.swept.get(key) for j in g}) > 1]
        if compared and all(_same_answers(group) for group in compared):
            found[key] = sum(len(group) for group in compared)
    return found


def _same_answers(group: Sequence[JobResult]) -> bool:
    """Every case all of ``group`` answered got the same answer and contexts from each (at
    least one such case)."""
    replies = [{c.case_id: _reply(c) for c in job.cases if c.error is None} for job in group]
    shared = set.intersection(*(set(r) for r in replies))
    return bool(shared) and all(len({r[case] for r in replies}) == 1 for case in shared)


def _reply(case: CaseResult) -> tuple[str, tuple[tuple[str | None, str], ...]]:
    return case.answer or "", tuple((r.doc_id, r.text) for r in case.retrieved)
