"""The plugin contract, enforced when a plugin loads: each broken plugin is one `PluginError`
line naming it, raised before any case runs, and leaves nothing registered."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from ragexp import MetricResult, hookimpl
from ragexp.errors import PluginError
from ragexp.plugins.checks import HOOKS, METRIC_CONTRACT, check_metric
from ragexp.plugins.manager import (
    ALLOW_ENV,
    PluginInfo,
    Registry,
    load_plugins,
    register_plugin,
    registry,
    unknown_metric_hint,
)
from tests.plugins.one_file import ANSWER_LENGTH, metric_plugin
from tests.plugins.test_manager import make_dist

LABEL = "plugin 'x' (pkg 0.1)"
DROP = object()


def make_metric(**attrs: Any) -> Any:
    """A metric object keeping the contract, but for ``attrs`` (``DROP`` removes one)."""

    async def score(self: Any, sample: Any, judge: Any, options: Any) -> MetricResult:
        return MetricResult(score=1.0)

    base: dict[str, Any] = {"name": "m", "version": "1", "needs_judge": False, "score": score}
    body = {k: v for k, v in {**base, **attrs}.items() if v is not DROP}
    return type("M", (), body)()


def plugin_registering(*metrics: Any) -> Any:
    class Plugin:
        @hookimpl
        def ragexp_register_metrics(self, register: Any) -> None:
            for metric in metrics:
                register(metric)

    return Plugin()


def register(plugin: Any) -> Registry:
    reg = load_plugins([])
    register_plugin(reg, plugin, PluginInfo("x", "pkg", "0.1", (), {}))
    return reg


def refused(plugin: Any) -> str:
    """The one-line error registering ``plugin`` raises; it leaves no trace in the registry."""
    reg = load_plugins([])
    metrics = dict(reg.metrics)
    with pytest.raises(PluginError) as info:
        register_plugin(reg, plugin, PluginInfo("x", "pkg", "0.1", (), {}))
    assert reg.metrics == metrics and not reg.pm.has_plugin("x")
    assert [p.name for p in reg.plugins][-1] != "x"
    message = str(info.value)
    assert "\n" not in message
    return message


# --- 1. metrics keep the contract -----------------------------------------------------------


class GoodOptions(BaseModel):
    max_words: int = Field(100, description="answer longer than this scores 0")
    strict: bool = False


class NeedsValue(BaseModel):
    limit: int
    depth: int = 2


def sync_score(self: Any, sample: Any, judge: Any, options: Any) -> MetricResult:
    return MetricResult(score=1.0)


async def two_args(self: Any, sample: Any, judge: Any) -> MetricResult:
    return MetricResult(score=1.0)


@pytest.mark.parametrize(
    ("attrs", "expected"),
    [
        ({"version": DROP}, f"{LABEL} registers metric 'm' without a `version`; {METRIC_CONTRACT}"),
        ({"name": DROP}, f"{LABEL} registers a metric (M) without a `name`; {METRIC_CONTRACT}"),
        ({"name": ""}, f"{LABEL} registers a metric (M) with an empty `name`; {METRIC_CONTRACT}"),
        ({"version": ""}, f"{LABEL} registers metric 'm' with an empty `version`; "),
        ({"version": 1}, f"{LABEL} registers metric 'm' with `version` = 1 (int, not str); "),
        (
            {"needs_judge": "yes"},
            f"{LABEL} registers metric 'm' with `needs_judge` = 'yes' (str, not bool); ",
        ),
        ({"needs_judge": DROP}, f"{LABEL} registers metric 'm' without a `needs_judge`; "),
        ({"score": DROP}, f"{LABEL} registers metric 'm' without a `score` method; "),
        (
            {"score": sync_score},
            f"{LABEL} metric 'm': score must be `async def` (it is a plain function)",
        ),
        ({"score": two_args}, f"{LABEL} metric 'm': score must take (sample, judge, options); "),
        (
            {"Options": {"max_words": 100}},
            f"{LABEL} metric 'm': Options is a dict, not a pydantic BaseModel subclass; ",
        ),
        (
            {"Options": NeedsValue},
            f"{LABEL} metric 'm': Options field 'limit' has no default; give every option a "
            "default (metric_options.m may leave it out)",
        ),
        (
            {"reply_tokens": 8},
            f"{LABEL} metric 'm': reply_tokens is an int; the optional capability is a method "
            "`reply_tokens(self, options) -> int | None`",
        ),
        (
            {"calls_cached_as": "faithfulness_claims"},
            f"{LABEL} metric 'm': calls_cached_as is a str; the optional capability is a "
            "(metric name, version) pair of non-empty strings",
        ),
        (
            {"calls_cached_as": ("faithfulness_claims", "")},
            f"{LABEL} metric 'm': calls_cached_as is a tuple; ",
        ),
    ],
)
def test_check_metric_names_what_is_wrong(attrs: dict[str, Any], expected: str) -> None:
    with pytest.raises(PluginError) as info:
        check_metric(make_metric(**attrs), LABEL)
    assert str(info.value).startswith(expected)
    assert "\n" not in str(info.value)


def test_check_metric_accepts_the_contract() -> None:
    class Caller:
        async def __call__(self, sample: Any, judge: Any, options: Any) -> MetricResult:
            return MetricResult(score=1.0)

    check_metric(make_metric(), LABEL)
    check_metric(make_metric(Options=GoodOptions, needs_judge=True), LABEL)
    check_metric(make_metric(Options=None), LABEL)  # None: no options
    check_metric(make_metric(score=Caller()), LABEL)  # an object with an async __call__


def test_a_bad_metric_fails_its_plugin_at_load_and_leaves_no_trace() -> None:
    good = make_metric(name="fine")
    message = refused(plugin_registering(good, make_metric(version=DROP)))
    assert message.startswith("plugin 'x' (pkg 0.1) registers metric 'm' without a `version`")


# --- 2.-4. hooks are marked, known, synchronous and take their spec's arguments --------------


def _hook_plugin(hook: str, function: Any, mark: bool = True) -> Any:
    return type("Plugin", (), {hook: hookimpl(function) if mark else function})()


@pytest.mark.parametrize("hook", list(HOOKS))
def test_async_hook_is_refused(hook: str) -> None:
    async def impl(self: Any) -> None:
        return None

    assert refused(_hook_plugin(hook, impl)) == (
        f"plugin 'x' (pkg 0.1): hook {hook} is `async def`; hooks are called synchronously, "
        "make it a plain def"
    )


def test_hook_without_hookimpl_is_refused() -> None:
    def ragexp_register_metrics(register: Any) -> None:
        register(make_metric())

    import types

    module = types.ModuleType("unmarked")
    module.ragexp_register_metrics = ragexp_register_metrics  # type: ignore[attr-defined]
    assert refused(module) == (
        "plugin 'x' (pkg 0.1) defines ragexp_register_metrics without @hookimpl; decorate it "
        "with `from ragexp import hookimpl` / `@hookimpl`"
    )


def test_plugin_without_any_hook_is_refused() -> None:
    class Nothing:
        def helper(self) -> None:
            return None

    assert refused(Nothing()).startswith(
        "plugin 'x' (pkg 0.1) implements no ragexp hook; mark its hook functions with "
        "`@hookimpl` (`from ragexp import hookimpl`) and name each after a hook: "
        "ragexp_case_end, ragexp_register_backends, "
    )


def test_unknown_hook_suggests_the_closest() -> None:
    def impl(self: Any, register: Any) -> None:
        return None

    assert refused(_hook_plugin("ragexp_register_metric", impl)) == (
        "plugin 'x' (pkg 0.1) implements unknown hook 'ragexp_register_metric'; "
        "did you mean 'ragexp_register_metrics'?"
    )
    assert refused(_hook_plugin("ragexp_zzz", impl)).endswith(
        "unknown hook 'ragexp_zzz'; the hooks are: " + ", ".join(HOOKS)
    )


def test_optional_unknown_hook_is_allowed() -> None:
    class Plugin:
        @hookimpl
        def ragexp_run_end(self, event: Any) -> None:
            return None

        @hookimpl(optionalhook=True)
        def ragexp_future_hook(self) -> None:
            return None

    assert register(Plugin()).plugins[-1].name == "x"


def test_wrong_argument_names_the_expected_ones() -> None:
    def one(self: Any, reg: Any) -> None:
        return None

    def two(self: Any, case: Any, evt: Any) -> None:
        return None

    assert refused(_hook_plugin("ragexp_register_metrics", one)) == (
        "plugin 'x' (pkg 0.1): hook ragexp_register_metrics takes (register); "
        "'reg' is not one of them"
    )
    assert refused(_hook_plugin("ragexp_case_end", two)) == (
        "plugin 'x' (pkg 0.1): hook ragexp_case_end takes (event); 'case', 'evt' are not among them"
    )


def test_a_plugin_name_is_taken_once() -> None:
    reg = register(plugin_registering(make_metric(name="first")))
    with pytest.raises(PluginError) as info:
        register_plugin(reg, plugin_registering(), PluginInfo("x", "/p/x.py", "", (), {}))
    assert str(info.value) == (
        "plugin 'x' (/p/x.py): the name 'x' is taken by plugin 'x' (pkg 0.1); rename one"
    )


def test_fewer_arguments_and_defaults_are_fine() -> None:
    class Plugin:
        @hookimpl
        def ragexp_run_start(self) -> None:
            return None

        @hookimpl
        def ragexp_case_end(self, event: Any, extra: int = 0) -> None:
            return None

    assert register(Plugin()).plugins[-1].hooks == ("ragexp_case_end", "ragexp_run_start")


# --- 5. RAGEXP_LOAD_PLUGINS names installed plugins -----------------------------------------

EXTRA = metric_plugin()  # answer_length, scoring 1.0


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`registry()` loads again in the test, and is forgotten after it."""
    monkeypatch.delenv("RAGEXP_PLUGINS_DIR", raising=False)
    registry.cache_clear()
    yield
    registry.cache_clear()


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Installed: ragexp-extra (entry point 'extra', registers answer_length) and ragexp-broken
    (entry point 'broken', fails at import)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    make_dist(tmp_path, "ragexp-extra", EXTRA, entry="extra")
    make_dist(tmp_path, "ragexp-broken", "raise RuntimeError('boom')\n", entry="broken")
    return tmp_path


def test_load_plugins_typo_is_an_error(
    site: Path, fresh_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ALLOW_ENV, "extar")
    with pytest.raises(PluginError) as info:
        registry()
    assert str(info.value) == (
        "RAGEXP_LOAD_PLUGINS: 'extar' is no installed ragexp plugin; installed: "
        "broken (ragexp-broken 0.3.1), extra (ragexp-extra 0.3.1); did you mean 'extra'?"
    )


@pytest.mark.parametrize("allow", ["", "extra", "ragexp-extra", " extra , "])
def test_load_plugins_by_entry_point_or_distribution(
    site: Path, fresh_registry: None, monkeypatch: pytest.MonkeyPatch, allow: str
) -> None:
    monkeypatch.setenv(ALLOW_ENV, allow)
    assert ("answer_length" in registry().metrics) == bool(allow)


# --- 6. a metric of a left-out plugin is named with that plugin ---------------------------


def test_unknown_metric_hint_names_the_left_out_plugin(
    site: Path, fresh_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ALLOW_ENV, "")
    assert unknown_metric_hint("answer_length") == (
        "metric 'answer_length' comes from plugin 'extra' (ragexp-extra 0.3.1), which "
        "RAGEXP_LOAD_PLUGINS='' leaves out; add 'extra' there"
    )  # and the broken plugin, probed too, was skipped
    assert unknown_metric_hint("faithfulnes") == "did you mean 'faithfulness'?"
    assert unknown_metric_hint("zzz") == ""


def test_unknown_metric_hint_without_an_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ALLOW_ENV)
    assert unknown_metric_hint("hitrate", load_plugins([])) == "did you mean 'hit_rate'?"


# --- 7. one-file plugins ---------------------------------------------------------------------

REPORTER = """
    import ragexp

    @ragexp.hookimpl
    def ragexp_run_end(event):
        pass
"""


def write(folder: Path, name: str, source: str) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


def test_plugins_dir_files_load_after_entry_points_sorted(tmp_path: Path) -> None:
    path = write(tmp_path, "length.py", ANSWER_LENGTH)
    write(tmp_path, "a_reporter.py", REPORTER)
    write(tmp_path, "notes.txt", "not python")
    reg = load_plugins([], tmp_path)
    assert [p.name for p in reg.plugins][-2:] == ["a_reporter", "length"]
    assert reg.owners[("metrics", "answer_length")] == f"plugin 'length' ({path})"


def test_plugins_dir_import_error_names_the_file(tmp_path: Path) -> None:
    write(tmp_path, "broken.py", "import ragexp\ndef oops(:\n")
    with pytest.raises(PluginError) as info:
        load_plugins([], tmp_path)
    message = str(info.value)
    assert message.startswith(
        f"plugin 'broken' ({tmp_path / 'broken.py'}) failed to import: SyntaxError: "
    )
    assert message.endswith(f"; fix broken.py or remove it from {tmp_path}")


def test_plugins_dir_env_and_its_errors(
    tmp_path: Path, fresh_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "plugs", "length.py", ANSWER_LENGTH)
    monkeypatch.setenv("RAGEXP_PLUGINS_DIR", str(tmp_path / "plugs"))
    monkeypatch.setenv(ALLOW_ENV, "length")  # a one-file plugin's name is allowed there too
    assert "answer_length" in registry().metrics
    registry.cache_clear()
    monkeypatch.setenv("RAGEXP_PLUGINS_DIR", str(tmp_path / "nope"))
    with pytest.raises(PluginError) as info:
        registry()
    assert str(info.value) == (
        f"RAGEXP_PLUGINS_DIR={tmp_path / 'nope'}: no such directory; point it (or --plugins-dir) "
        "at a folder of one-file plugins (*.py)"
    )


def test_plugins_dir_flag_is_taken_out_of_argv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragexp.commands.argv import take_plugins_dir

    monkeypatch.delenv("RAGEXP_PLUGINS_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plugs").mkdir()
    assert take_plugins_dir(["-m", "--plugins-dir", "plugs", "retriever.top_k=1,2"]) == [
        "-m",
        "retriever.top_k=1,2",
    ]
    import os

    assert os.environ["RAGEXP_PLUGINS_DIR"] == str(tmp_path / "plugs")
    assert take_plugins_dir(["plugins", f"--plugins-dir={tmp_path}"]) == ["plugins"]
    assert os.environ["RAGEXP_PLUGINS_DIR"] == str(tmp_path)
    with pytest.raises(PluginError, match=r"^--plugins-dir needs a directory: "):
        take_plugins_dir(["--plugins-dir"])
    with pytest.raises(PluginError, match=r"^--plugins-dir nope: no such directory; "):
        take_plugins_dir(["--plugins-dir", "nope"])


# --- 8. metric options in the listing ------------------------------------------------------


def test_listing_shows_each_metric_s_options(tmp_path: Path) -> None:
    import json

    from ragexp.plugins.listing import format_plugins, plugins_json

    write(tmp_path, "length.py", ANSWER_LENGTH)
    reg = load_plugins([], tmp_path)
    register_plugin(
        reg,
        plugin_registering(make_metric(name="two", Options=GoodOptions)),
        PluginInfo("x", "pkg", "0.1", (), {}),
    )
    listing = format_plugins(reg)
    assert (
        "    metrics: answer_length\n"
        "        answer_length options: max_words (int, default 100): answer longer than this "
        "scores 0\n    hooks: ragexp_register_metrics"
    ) in listing
    assert (
        "        two options: max_words (int, default 100): answer longer than this scores 0\n"
        "                     strict (bool, default false)\n"
    ) in listing
    assert "    metrics: hit_rate, mrr, context_recall\n    hooks:" in listing  # no options
    assert (
        '        faithfulness options: parse (strict | first_match, default "strict"): ' in listing
    )
    [entry] = [p for p in json.loads(plugins_json(reg)) if p["name"] == "x"]
    assert entry["options"] == {
        "two": [
            {
                "name": "max_words",
                "type": "int",
                "default": 100,
                "description": "answer longer than this scores 0",
            },
            {"name": "strict", "type": "bool", "default": False, "description": None},
        ]
    }


def test_help_lists_metrics_with_options_and_survives_a_broken_plugin(
    tmp_path: Path, fresh_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragexp.plugins.listing import metrics_help

    path = write(tmp_path / "good", "length.py", ANSWER_LENGTH)
    monkeypatch.setenv("RAGEXP_PLUGINS_DIR", str(path.parent))
    lines = metrics_help().splitlines()
    assert lines[0].startswith("Metrics (metrics=[a,b]; options: metric_options.")
    assert lines[1:4] == [
        f"  answer_length        no judge; from plugin 'length' ({path})",
        "      max_words (int, default 100): answer longer than this scores 0",
        "  answer_relevance     asks the judge",
    ]
    registry.cache_clear()
    write(tmp_path / "bad", "bad.py", "raise RuntimeError('boom')\n")
    monkeypatch.setenv("RAGEXP_PLUGINS_DIR", str(tmp_path / "bad"))
    assert metrics_help().startswith("Metrics: cannot list them: plugin 'bad' (/")
