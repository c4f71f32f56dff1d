"""Registers ragexp's racing sweeper in Hydra's ConfigStore (group ``hydra/sweeper``, name
``race``), as Hydra's own BasicSweeper registers ``basic``. The sweeper is
`ragexp.sweep.race.RaceSweeper`, subclassed here because Hydra instantiates only plugin classes
defined in the ``hydra_plugins`` package; docs/sweeps.md describes it.

No ``from __future__ import annotations``: Hydra imports this module outside ``sys.modules``,
where a dataclass cannot resolve string annotations."""

from dataclasses import dataclass
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


@dataclass
class RaceSweeperConf:
    _target_: str = "hydra_plugins.ragexp_race.race_sweeper.RaceSweeper"
    batch: int = 20
    """Cases added per round."""
    rounds: int | None = None
    """At most this many rounds (None: until decided or the golden set is exhausted)."""
    max_cases: int | None = None
    """At most this many cases per job (None: the whole golden set, or ``dataset.limit``)."""
    max_calls: int | None = None
    """Stop once the rounds' judge calls reach this many (calls from the cache not counted;
    checked after each round). None: no budget of calls."""
    alpha: float = 0.05
    """The race's error, in (0, 0.5), as ``guarantee`` reads it."""
    guarantee: str = "family"
    """``family``: any configuration is ever dropped wrongly with chance at most alpha (each
    side of each pair at alpha / (k (k − 1)), Bonferroni over all ordered comparisons);
    ``each``: the best one is, and so is any given one (each side at alpha / (k − 1),
    Bonferroni over one configuration's k − 1 rivals). A wrong drop: one by a rival not better
    by more than ``margin``."""
    margin: float | None = None
    """Drop a configuration once another is better than it by more than this (>= 0; 0: once
    it is worse at all). None: ``compare.effect``."""
    params: dict[str, str] | None = None
    """Swept values from the config, as BasicSweeper's ``hydra.sweeper.params``."""


ConfigStore.instance().store(
    group="hydra/sweeper", name="race", node=RaceSweeperConf, provider="ragexp"
)


class RaceSweeper(Sweeper):
    """`ragexp.sweep.race.RaceSweeper`, where Hydra looks for plugins. Hydra imports every module
    of ``hydra_plugins`` on each start (``--help`` too): ragexp's race, and numpy with it, is
    imported only when a race is set up."""

    def __init__(self, **params: Any) -> None:
        super().__init__()
        self.params = params
        self.race: Any = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        from ragexp.errors import RagexpError, fail
        from ragexp.sweep import race

        try:
            self.race = race.RaceSweeper(**self.params)
        except RagexpError as exc:  # a bad value (the sweep callback refuses it first): one line
            fail(exc)
        self.race.setup(hydra_context=hydra_context, task_function=task_function, config=config)

    def sweep(self, arguments: list[str]) -> Any:
        return self.race.sweep(arguments)
