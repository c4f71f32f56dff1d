"""The plugin manager: built-ins, entry points one by one, clear errors, every hook exercised.

Each hook in hookspecs.py has a `test_hook_<name>` here (tests/test_docs.py checks it)."""

from __future__ import annotations

import asyncio
import io
import textwrap
from collections.abc import Mapping
from importlib.metadata import EntryPoint, distributions
from pathlib import Path
from typing import Any

import pytest

import ragexp
from ragexp.commands import plugins as plugins_command
from ragexp.config import DatasetConfig, LLMConfig, validate_config
from ragexp.config.hydra import bundled_data_dir
from ragexp.data.dataset import load_dataset
from ragexp.errors import PluginError, RagexpWarning
from ragexp.llm.interface import Completion
from ragexp.plugins.listing import format_plugins
from ragexp.plugins.manager import DEFAULT_PLUGINS, Registry, load_plugins
from ragexp.results import MetricResult
from ragexp.run.pipeline import run_experiment
from tests.cli_run import run_ragexp
from tests.plugins.one_file import metric_plugin


def make_dist(root: Path, name: str, module_source: str, entry: str = "plug") -> list[EntryPoint]:
    """A real installed distribution (dist-info + module) in `root`; returns its entry points."""
    module = f"{name.replace('-', '_')}_mod"
    (root / f"{module}.py").write_text(textwrap.dedent(module_source))
    info = root / f"{name.replace('-', '_')}-0.3.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.3.1\n")
    (info / "entry_points.txt").write_text(f"[ragexp]\n{entry} = {module}\n")
    [dist] = [d for d in distributions(path=[str(root)]) if d.metadata["Name"] == name]
    return list(dist.entry_points.select(group="ragexp"))


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


GOOD_PLUGIN = metric_plugin(
    "const", version="2", score='float(options.get("value", 1.0))', label="C"
)


def test_builtins_load_first_and_are_ordinary_plugins() -> None:
    reg = load_plugins([])
    assert [p.name for p in reg.plugins] == list(DEFAULT_PLUGINS)
    assert set(reg.metrics) == {
        "faithfulness",
        "faithfulness_claims",
        "diagnostics",
        "answer_relevance",
        "hit_rate",
        "mrr",
        "context_recall",
    }
    assert set(reg.backends) == {"ollama", "openai", "embedded"}
    assert set(reg.retrievers) == {"bm25", "dense"}
    assert reg.owners[("metrics", "faithfulness")].startswith(
        "plugin 'ragexp.plugins.builtin.faithfulness' (ragexp "
    )


def test_entry_point_plugin_registers_and_is_listed(plugin_dir: Path) -> None:
    reg = load_plugins(make_dist(plugin_dir, "ragexp-const", GOOD_PLUGIN))
    assert "const" in reg.metrics
    assert reg.owners[("metrics", "const")] == "plugin 'plug' (ragexp-const 0.3.1)"
    listing = format_plugins(reg)
    assert "plug  (ragexp-const 0.3.1)\n    metrics: const\n    hooks: ragexp_register_metrics" in (
        listing
    )


def test_import_error_names_plugin_distribution_and_version(plugin_dir: Path) -> None:
    eps = make_dist(plugin_dir, "ragexp-broken", "import no_such_module_anywhere\n")
    with pytest.raises(PluginError) as info:
        load_plugins(eps)
    message = str(info.value)
    assert "plugin 'plug' (ragexp-broken 0.3.1) failed to import" in message
    assert "No module named 'no_such_module_anywhere'" in message
    assert "\n" not in message


def test_unknown_hook_is_rejected_and_leaves_no_trace(plugin_dir: Path) -> None:
    source = GOOD_PLUGIN + "\n\n@ragexp.hookimpl\ndef ragexp_no_such_hook():\n    pass\n"
    eps = make_dist(plugin_dir, "ragexp-typo", source)
    with pytest.raises(PluginError) as info:
        load_plugins(eps)
    assert str(info.value).startswith(
        "plugin 'plug' (ragexp-typo 0.3.1) implements unknown hook 'ragexp_no_such_hook'; "
    )


def test_name_clash_names_both_plugins_and_registers_nothing(plugin_dir: Path) -> None:
    source = """
        import ragexp
        from ragexp.plugins.builtin.faithfulness import Faithfulness

        class Extra:
            name = "extra"
            version = "1"
            needs_judge = False
            async def score(self, sample, judge, options):
                return ragexp.MetricResult(score=1.0)

        @ragexp.hookimpl
        def ragexp_register_metrics(register):
            register(Extra())
            register(Faithfulness())
    """
    eps = make_dist(plugin_dir, "ragexp-clash", source)
    reg = load_plugins([])
    with pytest.raises(PluginError) as info:
        from ragexp.plugins.manager import register_plugin

        register_plugin(reg, eps[0].load(), _info_for(eps[0]))
    assert "registers metric 'faithfulness', already registered by plugin " in str(info.value)
    assert "ragexp.plugins.builtin.faithfulness" in str(info.value)
    assert "extra" not in reg.metrics  # nothing half-registered
    assert not reg.pm.has_plugin("plug")


def _info_for(ep: EntryPoint) -> Any:
    from ragexp.plugins.manager import PluginInfo

    assert ep.dist is not None
    return PluginInfo(ep.name, ep.dist.name, ep.dist.version, (), {})


def test_broken_plugin_on_the_command_line_is_one_line(tmp_path: Path) -> None:
    plugins = tmp_path / "site"
    plugins.mkdir()
    make_dist(plugins, "ragexp-broken", "raise RuntimeError('boom at import')\n")
    result = run_ragexp(
        "dataset.limit=1",
        cwd=tmp_path,
        env={"PYTHONPATH": str(plugins), "RAGEXP_LOAD_PLUGINS": "ragexp-broken"},
        timeout=120,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        "ragexp: error: plugin 'plug' (ragexp-broken 0.3.1) failed to import: RuntimeError: "
        "boom at import; fix or uninstall it, or leave it out with RAGEXP_LOAD_PLUGINS"
    ]


def test_plugins_command_lists_builtins(capsys: pytest.CaptureFixture[str]) -> None:
    assert plugins_command.run(plugins_command.parser().parse_args([])) == 0
    out = capsys.readouterr().out
    assert "ragexp.plugins.builtin.faithfulness  (ragexp 0.1.0)" in out
    assert "backends: ollama, openai, embedded" in out
    assert plugins_command.run(plugins_command.parser().parse_args(["--json"])) == 0
    assert '"distribution": "ragexp"' in capsys.readouterr().out


# --- every hook, exercised through a run -----------------------------------------------------


class FakeBackend:
    """A backend registered through the hook: deterministic, no server."""

    kind = "fake"

    def __init__(self, config: LLMConfig) -> None:
        self.config = config

    async def preflight(self) -> str:
        return "fake-id"

    async def chat(self, messages: Any) -> Completion:
        prompt = messages[-1]["content"]
        text = "YES" if "EXACTLY one word" in prompt else "4" if "single digit" in prompt else "ok"
        return Completion(text, 1, 1, 0.0, "fake-id")

    async def embed(self, texts: Any) -> list[list[float]]:
        return [[1.0] for _ in texts]

    async def aclose(self) -> None:
        return None


class FirstChunks:
    async def index(self, chunks: Any) -> None:
        self.chunks = list(chunks)

    async def search(self, query: str, top_k: int) -> list[ragexp.RetrievedChunk]:
        from ragexp.retrieval.base import to_result

        return [to_result(c, 0.0) for c in self.chunks[:top_k]]


class Flaky:
    """Raises on one case only."""

    name = "flaky"
    version = "1"
    needs_judge = False

    async def score(
        self, sample: ragexp.Sample, judge: Any, options: Mapping[str, Any]
    ) -> MetricResult:
        if sample.case_id == "demo-02":
            raise ValueError("cannot score this one")
        return MetricResult(score=1.0, label="fine")


class RecordingPlugin:
    def __init__(self) -> None:
        self.events: list[Any] = []

    @ragexp.hookimpl
    def ragexp_register_metrics(self, register: Any) -> None:
        register(Flaky())

    @ragexp.hookimpl
    def ragexp_register_backends(self, register: Any) -> None:
        register(ragexp.BackendSpec("fake", FakeBackend))

    @ragexp.hookimpl
    def ragexp_register_retrievers(self, register: Any) -> None:
        register(ragexp.RetrieverSpec("first", lambda config, endpoints: FirstChunks()))

    @ragexp.hookimpl
    def ragexp_run_start(self, event: ragexp.RunStart) -> None:
        self.events.append(event)

    @ragexp.hookimpl
    def ragexp_case_end(self, event: ragexp.CaseEnd) -> None:
        self.events.append(event)

    @ragexp.hookimpl
    def ragexp_run_end(self, event: ragexp.RunEnd) -> None:
        self.events.append(event)


@pytest.fixture
def test_registry() -> tuple[Registry, RecordingPlugin]:
    from ragexp.plugins.manager import PluginInfo, register_plugin

    reg = load_plugins([])
    plugin = RecordingPlugin()
    register_plugin(reg, plugin, PluginInfo("testplugin", "tests", "0", (), {}))
    return reg, plugin


def _config(reg: Registry, **extra: Any) -> ragexp.RunConfig:
    data = bundled_data_dir() / "demo"
    llm = {"backend": "fake", "model": "m"}
    raw = {
        "generator": llm,
        "judge": llm,
        "retriever": {"kind": "first", "top_k": 2},
        "prompt": {"name": "p", "template": "{context}\n{question}"},
        "dataset": {
            "name": "demo",
            "corpus": data / "corpus",
            "cases": data / "cases.jsonl",
            "limit": 3,
        },
        **extra,
    }
    return validate_config(raw, reg.known())


def _run(reg: Registry, config: ragexp.RunConfig) -> list[ragexp.CaseResult]:
    dataset = load_dataset(DatasetConfig.model_validate(config.dataset.model_dump()))
    outcome = asyncio.run(run_experiment(config, dataset, reg, progress=io.StringIO()))
    return outcome.cases


def test_hook_ragexp_register_metrics(test_registry: tuple[Registry, RecordingPlugin]) -> None:
    reg, _ = test_registry
    assert reg.owners[("metrics", "flaky")] == "plugin 'testplugin' (tests 0)"
    cases = _run(reg, _config(reg, metrics=["faithfulness", "flaky"]))
    assert [c.metrics["flaky"].score for c in cases] == [1.0, None, 1.0]
    failed = cases[1].metrics["flaky"]
    assert failed.error == "ValueError: cannot score this one [plugin 'testplugin' (tests 0)]"
    assert cases[1].metrics["faithfulness"].label == "YES"  # the other metric is unaffected
    assert all(c.metrics["flaky"].metric_version == "1" for c in cases)


def test_hook_ragexp_register_backends(test_registry: tuple[Registry, RecordingPlugin]) -> None:
    reg, _ = test_registry
    cases = _run(reg, _config(reg))
    assert cases[0].generation is not None
    assert (cases[0].generation.backend, cases[0].generation.model_id) == ("fake", "fake-id")
    assert cases[0].answer == "ok"


def test_hook_ragexp_register_retrievers(test_registry: tuple[Registry, RecordingPlugin]) -> None:
    reg, _ = test_registry
    cases = _run(reg, _config(reg))
    assert [len(c.retrieved) for c in cases] == [2, 2, 2]
    assert cases[0].retrieved[0].chunk_id == cases[1].retrieved[0].chunk_id  # first chunks


def _cli_events(reg: Registry, plugin: RecordingPlugin, tmp_path: Path) -> list[Any]:
    from omegaconf import OmegaConf

    from ragexp.run.job import run_job

    config = _config(reg, tracking={"enabled": False})
    cfg = OmegaConf.create(config.model_dump(mode="json"))
    run_job(cfg, tmp_path / "run", run_name="hooks", registry_override=reg)
    return plugin.events


def test_hook_ragexp_run_start(
    test_registry: tuple[Registry, RecordingPlugin], tmp_path: Path
) -> None:
    reg, plugin = test_registry
    events = _cli_events(reg, plugin, tmp_path)
    start = events[0]
    assert isinstance(start, ragexp.RunStart)
    assert (start.run_name, start.n_cases, start.run_dir) == ("hooks", 3, tmp_path / "run")


def test_hook_ragexp_case_end(
    test_registry: tuple[Registry, RecordingPlugin], tmp_path: Path
) -> None:
    reg, plugin = test_registry
    ends = [e for e in _cli_events(reg, plugin, tmp_path) if isinstance(e, ragexp.CaseEnd)]
    assert [e.done for e in ends] == [1, 2, 3] and {e.total for e in ends} == {3}
    assert {e.case.case_id for e in ends} == {"demo-01", "demo-02", "demo-03"}


def test_hook_ragexp_run_end(
    test_registry: tuple[Registry, RecordingPlugin], tmp_path: Path
) -> None:
    reg, plugin = test_registry
    end = _cli_events(reg, plugin, tmp_path)[-1]
    assert isinstance(end, ragexp.RunEnd)
    assert end.summary.n_cases == 3 and len(end.cases) == 3
    assert (end.run_dir / "summary.json").is_file()  # outputs are written before the hook


def test_lifecycle_hook_failure_is_a_warning_not_fatal(
    test_registry: tuple[Registry, RecordingPlugin], tmp_path: Path
) -> None:
    reg, _ = test_registry

    class Broken:
        @ragexp.hookimpl
        def ragexp_case_end(self, event: ragexp.CaseEnd) -> None:
            raise RuntimeError("reporter down")

    from ragexp.plugins.manager import PluginInfo, register_plugin

    register_plugin(reg, Broken(), PluginInfo("broken-reporter", "tests", "0", (), {}))
    with pytest.warns(RagexpWarning, match="plugin 'broken-reporter' failed in ragexp_case_end"):
        events = _cli_events(reg, RecordingPlugin(), tmp_path)
    assert (tmp_path / "run" / "report.md").is_file()
    del events
