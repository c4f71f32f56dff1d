"""The system interface, in process: a third party's system registered through the hook, its
typed options, its answers reused only where ragexp knows the system is the same (one command, a
resumed run, a pinned ``system.version``) and asked again whenever a key part changes, and a
system that raises recorded on its case."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import ragexp
from ragexp.config import validate_config
from ragexp.data.dataset import load_dataset
from ragexp.errors import ConfigError
from ragexp.plugins.listing import format_plugins, plugins_json
from ragexp.plugins.manager import PluginInfo, Registry, load_plugins, register_plugin
from ragexp.results import CaseResult
from ragexp.results.summary import AnswersInfo
from ragexp.run.pipeline import RunOutcome, run_experiment
from ragexp.run.system import AnswerScope
from tests.config.test_schema import valid_raw


class Counting:
    """A system that answers with its options and counts the questions it was asked."""

    class Options(BaseModel):
        top_k: int = 2
        style: str = "short"

    def __init__(self, log: list[str]) -> None:
        self.log = log

    async def answer(self, case: ragexp.Case, options: Options) -> ragexp.SystemAnswer:
        self.log.append(case.id)
        if "dog ride" in case.question:
            raise ValueError("no dogs on this system")
        return ragexp.SystemAnswer(
            answer=f"{options.style} answer to {case.id}",
            contexts=[ragexp.RetrievedChunk(doc_id="fees.md", chunk_id="x", score=None, text="t")],
            prompt_tokens=10 * options.top_k,
            completion_tokens=3,
        )

    def cache_identity(self, case: ragexp.Case, options: Any) -> dict[str, str]:
        return {"counting": "1"}


class SystemsPlugin:
    def __init__(self) -> None:
        self.log: list[str] = []
        self.log2: list[str] = []
        """What ``counting2`` (the same class, another name) was asked."""

    @ragexp.hookimpl
    def ragexp_register_systems(self, register: Any) -> None:
        register(
            ragexp.SystemSpec(
                "counting",
                lambda config, context: Counting(self.log),
                description="counts what it is asked",
                Options=Counting.Options,
            )
        )
        register(
            ragexp.SystemSpec(
                "counting2",
                lambda config, context: Counting(self.log2),
                Options=Counting.Options,
            )
        )


@pytest.fixture
def plugged() -> tuple[Registry, SystemsPlugin]:
    reg = load_plugins([])
    plugin = SystemsPlugin()
    register_plugin(reg, plugin, PluginInfo("systems-plugin", "tests", "0", (), {}))
    return reg, plugin


def _config(reg: Registry, world: Path, system: dict[str, Any], **more: Any) -> ragexp.RunConfig:
    raw = {
        **valid_raw(),
        "dataset": {
            "name": "w",
            "corpus": str(world / "corpus"),
            "cases": str(world / "cases.jsonl"),
        },
        "metrics": ["hit_rate"],
        "metric_options": {},
        "system": system,
        "cache": {"dir": str(world / "cache"), "mode": "readwrite"},
        **more,
    }
    return validate_config(raw, reg.known())


def _outcome(reg: Registry, config: ragexp.RunConfig, scope: AnswerScope | None) -> RunOutcome:
    dataset = load_dataset(config.dataset)
    return asyncio.run(run_experiment(config, dataset, reg, progress=io.StringIO(), scope=scope))


def _run(
    reg: Registry, config: ragexp.RunConfig, scope: AnswerScope | None = None
) -> list[CaseResult]:
    return _outcome(reg, config, scope).cases


def test_hook_ragexp_register_systems(plugged: tuple[Registry, SystemsPlugin], world: Path) -> None:
    reg, plugin = plugged
    assert reg.owners[("systems", "counting")] == "plugin 'systems-plugin' (tests 0)"
    listing = format_plugins(reg)
    assert "systems: counting" in listing
    assert 'options: top_k (int, default 2), style (str, default "short")' in listing
    assert "systems: ragexp, python, http, answers, mlflow_traces" in listing
    assert '"counting": "top_k (int, default 2)' in plugins_json(reg)
    cases = _run(reg, _config(reg, world, {"kind": "counting", "options": {"style": "long"}}))
    by_id = {c.case_id: c for c in cases}
    assert by_id["c1"].answer == "long answer to c1"
    assert by_id["c1"].generation is not None and by_id["c1"].generation.prompt_tokens == 20
    assert by_id["c1"].metrics["hit_rate"].score == 1.0  # fees.md is c1's relevant document
    assert by_id["c3"].error == "system 'counting' raised ValueError: no dogs on this system"
    assert by_id["c3"].error_kind == "SystemFailed" and "hit_rate" not in by_id["c3"].metrics
    assert sorted(plugin.log) == ["c1", "c2", "c3", "c4", "c5", "c6"]


def test_a_new_command_asks_the_system_again(
    plugged: tuple[Registry, SystemsPlugin], world: Path
) -> None:
    """Two commands (two invocations), nothing pinned: ragexp cannot know the system did not
    change in between, so it is asked again, and the second says so."""
    reg, plugin = plugged
    system = {"kind": "counting", "options": {"top_k": 3}}
    first = _outcome(reg, _config(reg, world, system), AnswerScope("cmd-1", "first"))
    second = _outcome(reg, _config(reg, world, system), AnswerScope("cmd-2", "second"))
    assert len(plugin.log) == 12
    assert first.answers == second.answers == AnswersInfo(asked=5)  # c3 raised: not an answer
    assert not any(c.generation.cached for c in second.cases if c.generation is not None)


def test_within_one_command_answers_are_reused_and_say_where_from(
    plugged: tuple[Registry, SystemsPlugin], world: Path
) -> None:
    """A sweep's jobs (one invocation) share the system's answers; a failed case is asked
    again; the tally names the run that asked."""
    reg, plugin = plugged
    system = {"kind": "counting", "options": {"top_k": 3}}
    scope = AnswerScope("cmd-1", "job-0 (outputs/x/0)")
    first = _run(reg, _config(reg, world, system), scope)
    again = _outcome(reg, _config(reg, world, system), AnswerScope("cmd-1", "job-1"))
    assert sorted(plugin.log) == ["c1", "c2", "c3", "c3", "c4", "c5", "c6"]  # c3 raised
    assert [c.answer for c in again.cases] == [c.answer for c in first]
    assert all(c.generation.cached for c in again.cases if c.generation and c.case_id != "c3")
    assert again.answers == AnswersInfo(asked=0, reused=5, reused_from={"job-0 (outputs/x/0)": 5})


def test_a_pinned_version_is_reused_by_a_later_command(
    plugged: tuple[Registry, SystemsPlugin], world: Path
) -> None:
    reg, plugin = plugged
    system = {"kind": "counting", "options": {"top_k": 3}, "version": 3}  # an int, as Hydra reads
    _run(reg, _config(reg, world, system), AnswerScope("cmd-1", "main (outputs/a)"))
    again = _outcome(reg, _config(reg, world, system), AnswerScope("cmd-2", "pr"))
    assert len(plugin.log) == 7  # c3 raised, so it is asked again
    v4 = _outcome(reg, _config(reg, world, {**system, "version": "v4"}), AnswerScope("cmd-3", "x"))
    assert len(plugin.log) == 13 and v4.answers == AnswersInfo(asked=5, pinned="v4")
    assert again.answers == AnswersInfo(
        asked=0, reused=5, reused_from={"main (outputs/a)": 5}, pinned="3"
    )


@pytest.mark.parametrize(
    ("change", "scope"),
    [
        ({"options": {"top_k": 4}}, "cmd-1"),
        ({"version": "v2"}, "cmd-1"),  # pinned: a scope of its own
        ({"cache": False}, "cmd-1"),
        ({}, "cmd-2"),  # another command
        ({"kind": "counting2"}, "cmd-1"),  # another system with the same options
    ],
)
def test_each_part_of_an_answers_key_changes_it(
    plugged: tuple[Registry, SystemsPlugin],
    world: Path,
    change: dict[str, Any],
    scope: str,
) -> None:
    """One command, one case set, the same answers on disk: every part of the key that
    changes makes the system asked again, every case."""
    reg, plugin = plugged
    system = {"kind": "counting", "options": {"top_k": 3}}
    _run(reg, _config(reg, world, system), AnswerScope("cmd-1", "first"))
    _run(reg, _config(reg, world, system), AnswerScope("cmd-1", "same"))
    asked = len(plugin.log) + len(plugin.log2)
    assert asked == 7  # the second asked only c3 (it raised)
    _run(reg, _config(reg, world, {**system, **change}), AnswerScope(scope, "changed"))
    assert len(plugin.log) + len(plugin.log2) == asked + 6


def test_refresh_asks_again_within_one_command(
    plugged: tuple[Registry, SystemsPlugin], world: Path
) -> None:
    reg, plugin = plugged
    system = {"kind": "counting"}
    _run(reg, _config(reg, world, system), AnswerScope("cmd-1", "first"))
    refresh = {"dir": str(world / "cache"), "mode": "refresh"}
    _run(reg, _config(reg, world, system, cache=refresh), AnswerScope("cmd-1", "second"))
    assert len(plugin.log) == 12


def test_an_unknown_option_names_the_allowed_ones(
    plugged: tuple[Registry, SystemsPlugin], world: Path
) -> None:
    reg, _ = plugged
    with pytest.raises(ConfigError) as info:
        _config(reg, world, {"kind": "counting", "options": {"top_kk": 3}})
    assert str(info.value) == (
        "system.options.top_kk: unknown option of system 'counting'; its options: "
        'top_k (int, default 2), style (str, default "short"); '
        "did you mean 'system.options.top_k'?"
    )
    with pytest.raises(ConfigError) as info:
        _config(reg, world, {"kind": "countin"})
    assert str(info.value).startswith("system.kind: 'countin' is not one of: answers, counting")


@pytest.mark.parametrize(
    ("system", "message"),
    [
        ({"kind": "python"}, "system.target: system=python needs it"),
        ({"kind": "http"}, "system.url: system=http needs it"),
        ({"kind": "answers"}, "system.path: system=answers needs it"),
        ({"kind": "http", "url": "u", "api_key_env": "sk-abc123"}, "the NAME of an environment"),
    ],
)
def test_what_each_built_in_system_needs(
    plugged: tuple[Registry, SystemsPlugin], world: Path, system: dict[str, Any], message: str
) -> None:
    reg, _ = plugged
    with pytest.raises(ConfigError) as info:
        _config(reg, world, system)
    assert message in str(info.value)
    assert "sk-abc123" not in str(info.value)


def test_another_system_is_self_judged_when_its_model_is_the_judges(
    plugged: tuple[Registry, SystemsPlugin], world: Path
) -> None:
    reg, _ = plugged
    judge = valid_raw()["judge"]["model"]
    same = _config(reg, world, {"kind": "counting", "model": judge})
    other = _config(reg, world, {"kind": "counting", "model": "gpt-x"})
    unnamed = _config(reg, world, {"kind": "counting"})
    backends = {"system": "system:counting", "judge": "ollama"}
    assert [c.is_self_judge(backends) for c in (same, other, unnamed)] == [True, False, False]
    # the model its answers named counts as much as system.model
    assert unnamed.is_self_judge(backends, judge) and not unnamed.is_self_judge(backends, "gpt-x")
