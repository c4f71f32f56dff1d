"""The minimum evidence for a verdict (`ragexp.stats.evidence`): units are documents only when
cases share them, and the few-clusters note is for clustered runs alone (a run of 8 cases that
share no document rests on 8 independent cases, not on "only 8 clusters")."""

from __future__ import annotations

import pytest

from ragexp.reporting.wording import cluster_notes
from ragexp.stats.evidence import Evidence, smallest_p


@pytest.mark.parametrize("n", [2, 5, 6, 8, 9, 40])
def test_cases_that_share_no_document_never_get_the_few_clusters_note(n: int) -> None:
    """No clusters recorded, or as many clusters as cases: every case its own."""
    for evidence in (Evidence(n, None), Evidence(n, n)):
        assert not evidence.clustered
        assert not evidence.few_clusters
        assert evidence.units == n
        assert cluster_notes([evidence]) == []


def test_cases_sharing_few_documents_get_the_note_and_the_documents_are_the_units() -> None:
    evidence = Evidence(40, 8)
    assert evidence.clustered and evidence.few_clusters and evidence.units == 8
    [note] = cluster_notes([evidence, Evidence(8, None)])
    assert note.startswith("Only 8 clusters (documents)")
    assert not Evidence(40, 10).few_clusters  # 10 documents: enough for the variance


@pytest.mark.parametrize(("units", "enough"), [(5, False), (6, True)])
def test_a_verdict_needs_six_units_as_the_sign_flip_test_says(units: int, enough: bool) -> None:
    """2 / 2^units, the smallest two-sided p of a sign-flip test, reaches 0.05 from 6."""
    assert smallest_p(units) == 2 / 2**units
    assert (smallest_p(units) < 0.05) is enough
    assert Evidence(units, None).enough is enough
    assert Evidence(units * 4, units).enough is enough
