"""The racing sweeper (``hydra/sweeper=race``, issue 39): the sweep's configurations run in
rounds on the same growing prefix of the golden set, and a configuration is dropped once the
race's confidence sequences (`ragexp.stats.race.Race`) show another better than it by more
than ``margin`` (``hydra.sweeper.margin``; by default ``compare.effect``; 0: worse at all). The
sequences are tuned to the race's length: the units (cases, or clusters) of the cases it may
take (the golden set, ``dataset.limit`` or ``max_cases``).

Each round runs every surviving configuration with ``dataset.limit`` = ``batch`` cases more than the
race has seen, to the end of the clusters they start (the first cases of the golden set, in its
order: the same cases for every job, so differences stay paired) through the configured launcher, in
``<sweep dir>/race/round-<r>/<job>``. A round after the first passes ``run.resume=<the job's
previous round>``: the system's answers to the earlier cases are reused, and ragexp's LLM call cache
makes the generator's and judge's calls on them free, so no case is paid twice. Only the round's new
cases enter the race.

The race stops when one configuration remains, when every surviving pair is within
``compare.effect`` (`Race.decided`), after ``rounds`` rounds, ``max_cases`` cases or
``max_calls`` judge calls (the calls the rounds' jobs made, read from their ``summary.json``;
calls served from the cache not counted; checked after each round), or when the golden set (or
``dataset.limit``) is exhausted. Cases that share a document (``compare.cluster``)
move together: a round runs on to the last case of every cluster it started (`RaceRecord.boundary`),
and the sequences take each cluster whole.

The rounds run with ``tracking.enabled=false``. Once the race is over, one final job per
configuration runs through the same launcher in ``<sweep dir>/<job>``, tracked as the sweep says:
``dataset.limit`` = the cases it raced on and ``run.resume=<its last round>``, so the system is
asked nothing again and every LLM call comes from the cache. MLflow thus holds one child run per
configuration, with all its cases, under the sweep's parent; the sweep's summary
(`ragexp.sweep.callback.SweepCallback`) reads these jobs, and ``race.json`` and ``race.md`` say
how the race went (`ragexp.sweep.race_report`, which also tags the runs)."""

from __future__ import annotations

import itertools
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf

from ragexp.errors import ConfigError
from ragexp.results.case import CaseResult
from ragexp.results.files import CASES_FILE, read_cases, read_summary
from ragexp.results.jobs import RACE_DIR, job_label
from ragexp.stats import ALPHA
from ragexp.stats.paired import Outcome, outcome
from ragexp.stats.race import GUARANTEE, GUARANTEES, Guarantee, Race
from ragexp.sweep.race_report import RaceRecord, RoundRecord, tag_race_runs, write_race


class RaceSweeper(Sweeper):
    """Hydra's sweeper interface (`setup`, `sweep`), racing the configurations of the
    command line's sweep (the cartesian product of its ``a=1,2`` values, as BasicSweeper)."""

    def __init__(
        self,
        batch: int = 20,
        rounds: int | None = None,
        max_cases: int | None = None,
        max_calls: int | None = None,
        alpha: float = ALPHA,
        margin: float | None = None,
        guarantee: str = GUARANTEE,
        params: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        if batch < 1:
            raise ConfigError(f"hydra.sweeper.batch={batch}: a round adds at least one case")
        if margin is not None and not 0 <= margin < 1:
            raise ConfigError(
                f"hydra.sweeper.margin={margin}: a margin is a difference of means in [0, 1) "
                "(0: drop a configuration once it is worse at all)"
            )
        if not 0 < alpha < 0.5:
            raise ConfigError(f"hydra.sweeper.alpha={alpha}: the race's error is in (0, 0.5)")
        if guarantee not in GUARANTEES:
            raise ConfigError(
                f"hydra.sweeper.guarantee={guarantee}: one of family (no wrong drop anywhere in "
                "the race, with chance 1 − alpha) or each (the best is dropped with chance at "
                "most alpha)"
            )
        self.guarantee: Guarantee = "each" if guarantee == "each" else "family"
        self.margin = margin
        self.batch = batch
        self.rounds = rounds
        self.max_cases = max_cases
        if max_calls is not None and max_calls < 1:
            raise ConfigError(f"hydra.sweeper.max_calls={max_calls}: a budget of calls is >= 1")
        self.max_calls = max_calls
        self.alpha = alpha
        self.params = dict(params or {})
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.launcher: Launcher | None = None
        self._job_idx = 0

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        from hydra.core.plugins import Plugins

        self.hydra_context = hydra_context
        self.config = config
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def sweep(self, arguments: list[str]) -> Any:
        assert self.config is not None and self.launcher is not None
        assert self.hydra_context is not None
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        parsed = parser.parse_overrides([f"{k}={v}" for k, v in self.params.items()] + arguments)
        jobs = _configurations(parsed)
        swept = {o.get_key_element() for o in parsed if o.is_sweep_override()}
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")
        if len(jobs) < 2:  # nothing to race: one ordinary run
            return [self.launcher.launch(jobs, initial_job_idx=0)]
        record = self._record(jobs, [_label(job, swept) for job in jobs])
        last, reached = self._race(jobs, sweep_dir, record)
        final = [  # one tracked job per configuration, on its cases, all answered already
            [*jobs[i], f"dataset.limit={reached[i]}", f"run.resume='{last[i]}'",
             f"hydra.sweep.subdir={i}"]
            for i in range(len(jobs))
        ]  # fmt: skip
        for i in range(len(jobs)):
            shutil.rmtree(sweep_dir / str(i), ignore_errors=True)
        record.returns.append(self.launcher.launch(final, initial_job_idx=self._job_idx))
        write_race(sweep_dir, record)
        tag_race_runs(self.config, sweep_dir, record)
        return record.returns

    def _record(self, jobs: list[list[str]], labels: list[str]) -> RaceRecord:
        assert self.config is not None
        metrics = list(OmegaConf.select(self.config, "metrics", default=None) or [])
        chosen = OmegaConf.select(self.config, "compare.metric", default=None)
        metric = chosen or (metrics[0] if metrics else "")
        effect = float(OmegaConf.select(self.config, "compare.effect", default=0.0) or 0.0)
        margin = effect if self.margin is None else self.margin
        limit = OmegaConf.select(self.config, "dataset.limit", default=None)
        caps = [c for c in (self.max_cases, limit) if c is not None]
        order, clusters = _case_order(self.config)
        largest = max(Counter(clusters.values()).values(), default=1)
        units = len({clusters[case] for case in order[: min(caps, default=len(order))]})
        race = Race(
            labels, effect=effect, alpha=self.alpha, max_cluster_size=largest, margin=margin,
            horizon=max(units, 1), guarantee=self.guarantee,
        )  # fmt: skip
        return RaceRecord(
            metric=metric, effect=effect, margin=margin, alpha=self.alpha, batch=self.batch,
            max_cases=min(caps) if caps else None, max_rounds=self.rounds,
            max_calls=self.max_calls, jobs=labels,
            race=race, order=order, clusters=clusters,
        )  # fmt: skip

    def _race(
        self, jobs: list[list[str]], sweep_dir: Path, record: RaceRecord
    ) -> tuple[dict[int, Path], dict[int, int]]:
        """Run the rounds, untracked; returns each configuration's last run dir and the cases
        it ran there."""
        assert self.launcher is not None
        race = record.race
        last: dict[int, Path] = {}
        reached: dict[int, int] = {}
        number = 0
        while record.stop is None:
            number += 1
            limit = record.boundary(record.seen + self.batch)
            alive = [i for i, label in enumerate(record.jobs) if label in race.survivors]
            batch = []
            for i in alive:
                subdir = f"{RACE_DIR}/round-{number}/{i}"
                extra = [
                    f"dataset.limit={limit}", f"hydra.sweep.subdir={subdir}",
                    "tracking.enabled=false",
                ]  # fmt: skip
                if i in last:
                    extra.append(f"run.resume='{last[i]}'")
                batch.append([*jobs[i], *extra])
            returns = self.launcher.launch(batch, initial_job_idx=self._job_idx)
            self._job_idx += len(batch)
            record.returns.append(returns)
            for i in alive:
                last[i] = sweep_dir / RACE_DIR / f"round-{number}" / str(i)
                reached[i] = limit
            record.stop = self._step(record, {record.jobs[i]: last[i] for i in alive}, limit)
        return last, reached

    def _step(self, record: RaceRecord, dirs: dict[str, Path], limit: int) -> str | None:
        """Take one round's new cases into the race; returns why the race stops, if it does."""
        race = record.race
        cases = {job: _cases(path) for job, path in dirs.items()}
        scores = {job: _scores(found, record.metric) for job, found in cases.items()}
        record.calls += sum(_judge_calls(path) for path in dirs.values())
        seen = min(limit, len(record.order))
        new = record.order[record.seen : seen]
        record.seen = seen
        if new:
            clusters = [record.clusters[c] for c in new]
            drops = race.update({job: [scores[job].get(c) for c in new] for job in dirs}, clusters)
            record.rounds.append(RoundRecord.of(race, drops, seen, list(dirs)))
        if len(race.survivors) == 1:
            return "one configuration remains"
        if race.decided():
            return f"every remaining pair is within compare.effect={record.effect}"
        if seen >= len(record.order):
            return f"the golden set is exhausted ({seen} cases)"
        if record.max_cases is not None and seen >= record.max_cases:
            return f"the budget of {record.max_cases} cases is reached"
        if record.max_rounds is not None and race.rounds >= record.max_rounds:
            return f"the budget of {record.max_rounds} rounds is reached"
        if record.max_calls is not None and record.calls >= record.max_calls:
            return f"the budget of {record.max_calls} judge calls is reached"
        return None


def _configurations(overrides: list[Override]) -> list[list[str]]:
    """Every configuration of the command line's sweep, as Hydra's basic sweeper makes them:
    the cartesian product of each swept key's values (``a=1,2``, ``range(1,4)``), fixed keys as
    typed."""
    lists: list[list[str]] = []
    for override in overrides:
        key = override.get_key_element()
        if not override.is_sweep_override():
            lists.append([f"{key}={override.get_value_element_as_str()}"])
        elif override.is_discrete_sweep():
            lists.append([f"{key}={value}" for value in override.sweep_string_iterator()])
        else:
            raise ConfigError(
                f"{override.input_line}: a race sweeps lists and ranges of values, not an interval"
            )
    return [list(job) for job in itertools.product(*lists)]


def _label(job: list[str], swept: set[str]) -> str:
    """A configuration's name: its swept values, as the sweep's summary names its jobs."""
    values = {}
    for override in job:
        key, _, value = override.partition("=")
        if key in swept:
            values[key.lstrip("+~")] = value
    return job_label(values)


def _cases(run_dir: Path) -> list[CaseResult]:
    """A round's job's cases (its ``cases.jsonl``)."""
    path = run_dir / CASES_FILE
    if not path.is_file():
        raise ConfigError(
            f"race: the job in {run_dir} left no {CASES_FILE} (it failed: see its ragexp.log)"
        )
    return read_cases(path, strict=False)


def _scores(cases: list[CaseResult], metric: str) -> dict[str, Outcome]:
    """Each case's `ragexp.stats.paired.outcome` on ``metric``: its score, or ``"failed"``
    (the race scores it `ragexp.stats.paired.WORST`); cases with no score for it left out."""
    found = {case.case_id: outcome(case, metric) for case in cases}
    return {case_id: o for case_id, o in found.items() if o is not None}


def _judge_calls(run_dir: Path) -> int:
    """The judge calls a round's job made (its ``summary.json``: ``calls`` of every
    ``judge:<metric>`` role); those served from ragexp's call cache (an earlier round's cases,
    another job's same answer) are not counted."""
    summary = read_summary(run_dir)
    if summary is None:
        return 0
    return sum(calls.made for role, calls in summary.calls.items() if role.startswith("judge:"))


def _case_order(config: DictConfig) -> tuple[list[str], dict[str, str]]:
    """The ids of the golden set's cases in its order, as a job loads them (``dataset.only``
    kept, ``dataset.limit`` left to the race's budget), and each one's cluster as the job
    records it (``compare.cluster``: by default its first relevant document; its own id when
    it has none)."""
    from ragexp.config.schema import DatasetConfig
    from ragexp.data.dataset import selected_cases

    data = OmegaConf.to_container(config.dataset, resolve=True)
    dataset = DatasetConfig.model_validate(data).model_copy(update={"limit": None})
    cluster_by = str(OmegaConf.select(config, "compare.cluster", default="auto") or "auto")
    cases = selected_cases(dataset, cluster_by)
    return [case.id for case in cases], {case.id: case.cluster or case.id for case in cases}
