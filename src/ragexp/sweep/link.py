"""``ragexp-sweep.json`` in a sweep dir: the swept keys and the parent MLflow run, written when
the multirun starts and read by every job, whichever process or machine runs it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ragexp.results.files import new_invocation

LINK_FILE = "ragexp-sweep.json"


class SweepLink(BaseModel):
    model_config = ConfigDict(extra="forbid")

    swept: list[str]
    """The swept config keys, in the order the command gave them."""
    parent_run_id: str = ""
    """The parent MLflow run, when known as the multirun starts (a joblib sweep's jobs and the
    first jobs of any sweep find ``parent_file`` instead)."""
    parent_file: str = ""
    """The file in the sweep dir where the parent run's id is written once it is created ('' when
    tracking is off): `ragexp.tracking.parent`."""
    tracking_uri: str = ""
    experiment: str = ""
    invocation: str = Field(default_factory=new_invocation)
    """The command this sweep is: its jobs reuse each other's system answers (`JobRecord`)."""

    def write(self, sweep_dir: Path) -> None:
        sweep_dir.mkdir(parents=True, exist_ok=True)
        (sweep_dir / LINK_FILE).write_text(self.model_dump_json(indent=2) + "\n", "utf-8")

    @classmethod
    def read(cls, sweep_dir: Path) -> SweepLink | None:
        try:
            return cls.model_validate_json((sweep_dir / LINK_FILE).read_text("utf-8"))
        except (OSError, ValueError):
            return None


def swept_keys(task_overrides: Sequence[str], sweeper_params: Mapping[str, object]) -> list[str]:
    """The keys a multirun varies: sweep overrides on the command line (``top_k=3,5``,
    ``range(1,4)``, ``choice(a,b)``) and a search sweeper's ``hydra.sweeper.params``."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(list(task_overrides))
    keys = [o.get_key_element() for o in parsed if o.is_sweep_override()]
    keys += [str(k) for k in sweeper_params if str(k) not in keys]
    return [k.lstrip("+~") for k in keys]


def job_values(job_overrides: Iterable[str], swept: Sequence[str]) -> dict[str, str]:
    """This job's value of each swept key, from its override strings (``key=value``)."""
    values: dict[str, str] = {}
    for override in job_overrides:
        key, _, value = override.partition("=")
        key = key.lstrip("+~")
        if key in swept:
            values[key] = re.sub(r"\\(.)", r"\1", value)  # Hydra escapes ':' as '\:'
    return {key: values[key] for key in swept if key in values}
