"""A generated golden set of any size: one short document per case, plus distractors.

Each document states a few facts about one fictional place; each case asks for one of them, so
retrieval has a right answer and the fake server's replies (the first sentence of the context)
are on topic. Deterministic for a given size and seed.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

_PLACES = ["Harbor", "Summit", "Meadow", "Canyon", "Lakeside", "Forest", "Ridge", "Valley"]
_KINDS = ["museum", "library", "visitor center", "boathouse", "observatory", "gallery", "market"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def generate(n_cases: int, directory: Path, seed: int = 0) -> tuple[Path, Path]:
    """Write ``corpus/`` and ``cases.jsonl`` under ``directory``; returns both paths."""
    rng = random.Random(seed)
    corpus = directory / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(n_cases):
        name = f"{rng.choice(_PLACES)} {rng.choice(_KINDS)} {i}"
        opens, closes, fee = rng.randint(6, 10), rng.randint(16, 21), rng.randint(2, 30)
        closed = rng.choice(_DAYS)
        doc = f"place-{i:05d}.md"
        (corpus / doc).write_text(
            f"# {name}\n\nThe {name} opens at {opens} am and closes at {closes - 12} pm. "
            f"Entry costs ${fee} for adults; children enter free. "
            f"It is closed every {closed} and on public holidays. "
            f"Guided tours of the {name} start every hour from the main entrance.\n",
            encoding="utf-8",
        )
        question = rng.choice(
            [
                (f"When does the {name} open?", f"It opens at {opens} am."),
                (f"How much is entry to the {name}?", f"${fee} for adults; children are free."),
                (f"On which day is the {name} closed?", f"It is closed every {closed}."),
            ]
        )
        lines.append(
            json.dumps(
                {
                    "id": f"case-{i:05d}",
                    "question": question[0],
                    "reference": question[1],
                    "relevant_docs": [doc],
                }
            )
        )
    cases = directory / "cases.jsonl"
    cases.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return corpus, cases
