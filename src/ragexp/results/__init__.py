"""What a run persists: case results (``cases.jsonl``), its summary (``summary.json``), the run
dir's files, and a sweep's jobs as they are read back from disk."""

from ragexp.results.case import (
    AppliedLabel,
    AppliedMarks,
    CaseResult,
    Judgement,
    JurorVerdict,
    LLMCall,
    MetricResult,
    RetrievedChunk,
)
from ragexp.results.jury import JurorCard, JurorSummary, JuryCard, JurySummary, SweepJury
from ragexp.results.replies import Compliance
from ragexp.results.sequential import SequenceInterval, SequentialOutcome
from ragexp.results.summary import (
    AnswersInfo,
    CalibratedMean,
    CallCount,
    ClaimAgreement,
    Cost,
    GateOutcome,
    GateVerdict,
    JudgeCard,
    LabelsInfo,
    MetricSource,
    MetricSummary,
    NoiseSummary,
    PartSummary,
    SettingLeniency,
    Summary,
    VerdictAgreement,
)
from ragexp.results.verdicts import VerdictMark

__all__ = [
    "AnswersInfo",
    "AppliedLabel",
    "AppliedMarks",
    "CalibratedMean",
    "CallCount",
    "CaseResult",
    "ClaimAgreement",
    "Compliance",
    "Cost",
    "GateOutcome",
    "GateVerdict",
    "JudgeCard",
    "Judgement",
    "JurorCard",
    "JurorSummary",
    "JurorVerdict",
    "JuryCard",
    "JurySummary",
    "LLMCall",
    "LabelsInfo",
    "MetricResult",
    "MetricSource",
    "MetricSummary",
    "NoiseSummary",
    "PartSummary",
    "RetrievedChunk",
    "SequenceInterval",
    "SequentialOutcome",
    "SettingLeniency",
    "Summary",
    "SweepJury",
    "VerdictAgreement",
    "VerdictMark",
]
