"""What ``ragexp generate`` writes: the cases file (ragexp's cases format plus provenance) and
the report beside it (``<stem>.report.md`` and ``.json``): per filter what it removed, with
examples; per document its quota and the cases kept; the skipped chunks; the calls."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragexp.generate.ask import PROMPT_SHA
from ragexp.generate.filters import removal_counts, removal_key
from ragexp.generate.session import Generation
from ragexp.reporting.markdown import text

EXAMPLES = 3
"""Removed candidates shown per filter."""


def case_rows(generation: Generation) -> list[dict[str, Any]]:
    """One JSON object per kept case, in id order."""
    result = generation.result
    return [
        {
            "id": c.id,
            "question": c.question,
            "reference": c.reference,
            "relevant_docs": [c.chunk.doc_id],
            "cluster": c.chunk.doc_id,
            "source_chunk": c.chunk.chunk_id,
            "generator": generation.generator,
            "prompt_sha": PROMPT_SHA,
            "seed": result.seed,
        }
        for c in result.kept
    ]


def write_cases(path: Path, generation: Generation) -> None:
    lines = [json.dumps(row, ensure_ascii=False) for row in case_rows(generation)]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def report_paths(out: Path) -> tuple[Path, Path]:
    """``golden.jsonl`` -> ``golden.report.md``, ``golden.report.json``."""
    return out.with_name(f"{out.stem}.report.md"), out.with_name(f"{out.stem}.report.json")


def report_json(generation: Generation, filters: Sequence[str]) -> dict[str, Any]:
    result = generation.result
    kept = result.kept_per_document()
    counts = removal_counts(result.removed)
    shown = [key for key in counts if key.split(":", 1)[0] in filters or counts[key]]
    removed: dict[str, list[dict[str, str]]] = {key: [] for key in shown}
    for removal in result.removed:
        removed[removal_key(removal)].append(
            {
                "id": removal.candidate.id,
                "question": removal.candidate.question,
                "chunk": removal.candidate.chunk.chunk_id,
                "reason": removal.reason,
            }
        )
    return {
        "n": result.n,
        "seed": result.seed,
        "written": len(result.kept),
        "exhausted": result.exhausted,
        "max_chunks": result.max_chunks,
        "budget_spent": result.budget_spent,
        "rounds": result.rounds,
        "chunks_asked": result.asked,
        "trivial_chunks": result.trivial,
        "generator": generation.generator,
        "judge": generation.judge,
        "prompt_sha": PROMPT_SHA,
        "filters": {
            name: {"removed": len(items), "examples": items[:EXAMPLES]}
            for name, items in removed.items()
        },
        "documents": [
            {"doc": doc, "quota": quota, "kept": kept[doc]}
            for doc, quota in sorted(result.quota.items())
        ],
        "skipped": [{"chunk": s.chunk_id, "reason": s.reason} for s in result.skipped],
        "calls": {
            role: {"made": c.made, "cached": c.cached} for role, c in generation.calls.items()
        },
    }


def outcome_line(report: dict[str, Any]) -> str:
    """``wrote 200 cases``, ``the corpus ran out after 143 of 200: ...`` or ``--max-chunks 40
    reached after 12 of 200: ...``."""
    if not report["exhausted"]:
        return f"wrote {report['written']} cases"
    removed = sum(f["removed"] for f in report["filters"].values())
    why = (
        f"--max-chunks {report['max_chunks']} reached"
        if report.get("budget_spent")
        else "the corpus ran out"
    )
    return (
        f"{why} after {report['written']} of {report['n']}: "
        f"{report['chunks_asked']} chunks asked, {removed} removed, "
        f"{len(report['skipped'])} skipped (see report)"
    )


def report_markdown(report: dict[str, Any], out: Path) -> str:
    calls = ", ".join(
        f"{role} {c['made']} made, {c['cached']} cached" for role, c in report["calls"].items()
    )
    gen = report["generator"]
    lines = [
        f"# Golden set: {text(out.name)}",
        "",
        f"{_sentence(outcome_line(report))} Asked for {report['n']} cases (seed "
        f"{report['seed']}): {report['chunks_asked']} chunks asked in {report['rounds']} "
        f"round(s) over {len(report['documents'])} documents; {report['trivial_chunks']} "
        "trivial chunks (headings only, or under a dozen words) never drawn.",
        "",
        f"Generator: {text(gen['backend'])} {text(gen['model'])} ({text(gen['model_id'])}); "
        f"prompt {report['prompt_sha']}. Calls: {calls}.",
        "",
        "## Filters",
        "",
        "| filter | removed |",
        "| --- | ---: |",
    ]
    lines += [
        f"| {text(name, cell=True)} | {f['removed']} |" for name, f in report["filters"].items()
    ]
    for name, f in report["filters"].items():
        if f["examples"]:
            lines += ["", f"### {text(name)}: examples", ""]
            lines += [
                f"- `{e['id']}` {text(e['question'], limit=160)} — {text(e['reason'], limit=200)}"
                for e in f["examples"]
            ]
    lines += ["", "## Documents", "", "| document | quota | kept |", "| --- | ---: | ---: |"]
    lines += [
        f"| {text(d['doc'], cell=True)} | {d['quota']} | {d['kept']} |" for d in report["documents"]
    ]
    lines += ["", f"## Skipped chunks ({len(report['skipped'])})", ""]
    lines += [f"- `{s['chunk']}`: {text(s['reason'])}" for s in report["skipped"]] or ["None."]
    return "\n".join(lines) + "\n"


def _sentence(line: str) -> str:
    return line[0].upper() + line[1:] + "."


def write_report(out: Path, generation: Generation, filters: Sequence[str]) -> Path:
    """Both reports beside ``out``; returns the Markdown one's path."""
    data = report_json(generation, filters)
    md_path, json_path = report_paths(out)
    json_path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    md_path.write_text(report_markdown(data, out), encoding="utf-8")
    return md_path
