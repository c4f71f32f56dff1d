"""What ``ragexp doctor`` checks, for one screen a user can paste into a bug report.

Python and ragexp versions, the plugins, llama.cpp's build (what CPU features it was compiled to
use, whether this CPU can run them) with a short probe of the bundled model, each backend the
config uses (reachable or not, the models it serves), the system under test when it is not
ragexp's own (`ragexp.doctor.system`: its service probed, its target imported), the MLflow store
and the call cache.
Every problem comes with the command that fixes it. Exit code 0 when all is well, 1 otherwise;
``--json`` for tools. Command-line overrides pick the config to check, as for a run:
``ragexp doctor llm=ollama``.
"""

from __future__ import annotations

import asyncio
import os
import platform
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from ragexp.config.llm import LLMConfig
from ragexp.config.schema import RunConfig
from ragexp.doctor.result import Check
from ragexp.doctor.system import system_check
from ragexp.errors import RagexpError, first_line
from ragexp.llm.cache import cache_info
from ragexp.llm.embedded.build import VERSION as LLAMA_CPP_VERSION
from ragexp.llm.embedded.native import PORTABLE_BASELINE, VARIANT_ENV, check_build, cpu_flags
from ragexp.llm.interface import Completion, resolve_backend_name
from ragexp.plugins.manager import registry
from ragexp.run.compose import compose_config
from ragexp.tracking.store import check_store

PROBE_PROMPT = "Name one animal that lives in a national park. Answer in three words."
PROBE_TOKENS = 8


def _fix(exc: Exception) -> str:
    """The actionable part of a ragexp error: what follows its last '; ' (ragexp's messages end
    with what to run or change), else the whole message."""
    message = str(exc)
    head, sep, tail = message.rpartition("; ")
    return tail if sep and head else message


def _version(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def system_checks() -> list[Check]:
    py = platform.python_version()
    where = f"{platform.system()} {platform.machine()}, {_cpu_model()}, {os.cpu_count()} cores"
    checks = [
        Check(
            "python",
            sys.version_info >= (3, 11),
            f"{py} ({sys.executable}) on {where}",
            fix="ragexp needs Python 3.11 or newer",
        ),
        Check("ragexp", True, _version("ragexp") or "not installed"),
    ]
    try:
        plugins = registry().plugins
        listed = ", ".join(f"{p.name} ({p.origin})" for p in plugins if p.distribution != "ragexp")
        checks.append(Check("plugins", True, listed or "none besides ragexp's own"))
    except RagexpError as exc:
        checks.append(Check("plugins", False, str(exc), fix=_fix(exc)))
    return checks


async def _llama_checks(config: LLMConfig) -> list[Check]:
    from ragexp.llm.embedded.backend import EmbeddedBackend

    installed = _version("llama-cpp-python")
    if installed is None:
        from ragexp.llm.embedded.native import reinstall_command

        return [
            Check(
                "llama.cpp",
                False,
                "llama-cpp-python is not installed",
                fix=f"run `{reinstall_command()}`",
            )
        ]
    backend = EmbeddedBackend(config.model_copy(update={"max_tokens": PROBE_TOKENS}))
    try:
        worker = await backend.worker_info()
        build = _build_check(installed, worker.system_info, worker.variant)
        completion = await backend.chat([{"role": "user", "content": PROBE_PROMPT}])
        return [build, _probe_check(config.model, completion)]
    except RagexpError as exc:
        return [Check("llama.cpp", False, f"llama-cpp-python {installed}: {exc}", fix=_fix(exc))]
    finally:
        await backend.aclose()


def _build_check(installed: str, system_info: str, variant: str | None) -> Check:
    """What llama.cpp was built for, and whether that build is the portable one."""
    check = check_build(system_info, cpu_flags())
    baseline = PORTABLE_BASELINE.get(platform.machine(), frozenset())
    if variant:
        portable = (
            f"the {variant} build, loaded for this CPU's AVX-512; "
            f"{VARIANT_ENV}=portable for the portable build"
        )
    elif check.beyond_baseline:
        portable = f"not portable: uses {', '.join(check.beyond_baseline)} beyond the baseline"
    else:
        portable = "portable"
    features = " ".join(sorted(check.features)) or "no SIMD features"
    pinned = "" if installed == LLAMA_CPP_VERSION else f" (ragexp builds {LLAMA_CPP_VERSION})"
    return Check(
        "llama.cpp",
        True,
        f"llama-cpp-python {installed}{pinned}; built for {features} "
        f"({portable}; baseline {' '.join(sorted(baseline)) or 'n/a'})",
    )


def _probe_check(model: str, completion: Completion) -> Check:
    """The bundled model's answer to a short prompt, with llama.cpp's own token rates."""
    t = completion.timings
    rate = ""
    if t.get("prompt_eval_ms") and t.get("eval_ms"):
        rate = (
            f"; prompt {t['prompt_eval_tokens'] / t['prompt_eval_ms'] * 1000:.0f} "
            f"tokens/s, generation {t['eval_tokens'] / t['eval_ms'] * 1000:.0f} tokens/s"
        )
    return Check(
        "probe",
        True,
        f"{model}: {completion.completion_tokens} tokens in {completion.latency_s:.2f} s{rate}",
    )


async def _backend_check(role: str, config: LLMConfig) -> Check:
    specs = registry().backends
    name = resolve_backend_name(config, list(specs.values()))
    if name not in specs:
        return Check(
            role,
            False,
            f"backend '{name}' is not installed",
            fix=f"set {role}.backend to one of: {', '.join(sorted(specs))}",
        )
    label = f"{name} {config.model}"
    if name != "embedded":
        label += f" at {config.resolved_base_url()}"
    try:
        backend = specs[name].factory(config)
    except RagexpError as exc:
        return Check(role, False, f"{label}: {exc}", fix=_fix(exc))
    try:
        served_models = getattr(backend, "served_models", None)
        served: list[str] = await served_models() if served_models else []
        model_id = await backend.preflight()
    except RagexpError as exc:
        return Check(role, False, f"{label}: {exc}", fix=_fix(exc))
    finally:
        await backend.aclose()
    listing = f"; serves {', '.join(served[:8])}" + (" …" if len(served) > 8 else "")
    return Check(role, True, f"{label}: ok ({model_id[:19]}){listing if served else ''}")


async def _llm_checks(config: RunConfig) -> list[Check]:
    roles: dict[str, LLMConfig] = {"judge": config.judge}
    if config.system.kind == "ragexp":  # another system brings its own generator and retriever
        roles = {"generator": config.generator, **roles}
    if config.system.kind == "ragexp" and config.retriever.kind == "dense":
        roles["retriever.embedder"] = config.retriever.embedder
    checks: list[Check] = []
    specs = list(registry().backends.values())
    embedded = [c for c in roles.values() if resolve_backend_name(c, specs) == "embedded"]
    if embedded:
        checks += await _llama_checks(embedded[0])
    for role, llm in roles.items():
        checks.append(await _backend_check(role, llm))
    return checks


def mlflow_check(config: RunConfig) -> Check:
    """The MLflow store the config logs to, and why that one (the config, or MLflow's own
    environment variables, or the default)."""
    tracking = config.tracking
    uri = tracking.uri()
    where = f"{uri} (from {tracking.uri_source()})"
    if not tracking.enabled:
        return Check("mlflow", True, f"tracking off ({where})")
    name = tracking.experiment_name()
    named = f"experiment '{name}' (from {tracking.experiment_source()})"
    if uri.startswith("sqlite:///"):
        path = Path(uri.removeprefix("sqlite:///"))
        if not path.exists():
            folder = path.parent if str(path.parent) else Path(".")
            writable = os.access(folder.resolve(), os.W_OK)
            return Check(
                "mlflow",
                writable,
                f"{where}: not created yet, the first run creates it with {named}",
                fix=f"make {folder.resolve()} writable or set tracking.tracking_uri",
            )
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    try:
        check_store(uri)
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=uri)
        experiment = client.get_experiment_by_name(name)
    except Exception as exc:  # any store failure is the finding itself
        return Check(
            "mlflow",
            False,
            f"{where}: {first_line(exc)}",
            fix="start the tracking server, or fix tracking.tracking_uri / $MLFLOW_TRACKING_URI",
        )
    if experiment is None:
        return Check("mlflow", True, f"{where}: {named} not created yet")
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    more = "+" if len(runs) == 1000 else ""
    return Check(
        "mlflow",
        True,
        f"{where}: {named}, id {experiment.experiment_id}, {len(runs)}{more} runs",
    )


def cache_check(config: RunConfig) -> Check:
    if config.cache.mode == "off":
        return Check("cache", True, "off")
    try:
        info = cache_info(config.cache.dir)
    except Exception as exc:  # a damaged or unreadable cache file is the finding itself
        return Check(
            "cache",
            False,
            f"{config.cache.dir}: {exc}",
            fix=f"move {config.cache.dir} aside or set cache.dir",
        )
    models = ", ".join(f"{m['model']} {m['entries']}" for m in info["models"])
    return Check(
        "cache",
        True,
        f"{info['path']} ({config.cache.mode}): {info['entries']} calls, "
        f"{info['bytes'] / 1e6:.1f} MB" + (f"; {models}" if models else ""),
    )


def gather(overrides: list[str]) -> list[Check]:
    """Every check, for the config the overrides select."""
    checks = system_checks()
    try:
        config = compose_config(overrides)
    except RagexpError as exc:
        return [*checks, Check("config", False, str(exc), fix=_fix(exc))]
    checks += asyncio.run(_llm_checks(config))
    probed = system_check(config.system)
    checks += [probed] if probed is not None else []
    checks.append(mlflow_check(config))
    checks.append(cache_check(config))
    return checks
