"""The built-in systems under test: ``ragexp`` (its own retrieve -> generate pipeline, the
default), ``python`` (a callable), ``http`` (a service), ``answers`` (a file) and
``mlflow_traces`` (the traces an application logged to MLflow)."""

from __future__ import annotations

from collections.abc import Sequence

from ragexp.config.schema import RunConfig
from ragexp.config.system import SystemConfig
from ragexp.data.dataset import Dataset
from ragexp.hookspecs import hookimpl
from ragexp.systems.interface import NoOptions, RegisterSystem, System, SystemContext, SystemSpec


def _ragexp(config: SystemConfig, context: SystemContext) -> System:
    from ragexp.plugins.builtin.ragexp_system import build

    return build(config, context)


def _python(config: SystemConfig, context: SystemContext) -> System:
    from ragexp.systems.python import build

    return build(config, context)


def _python_check(configs: Sequence[SystemConfig]) -> None:
    from ragexp.systems.python import check_jobs

    check_jobs(configs)


def _http(config: SystemConfig, context: SystemContext) -> System:
    from ragexp.systems.http import build

    return build(config, context)


def _answers(config: SystemConfig, context: SystemContext) -> System:
    from ragexp.systems.answers import build

    return build(config, context)


def _mlflow_traces(config: SystemConfig, context: SystemContext) -> System:
    from ragexp.systems.mlflow_traces import build

    return build(config, context)


def _traces_dataset(config: SystemConfig, run: RunConfig) -> Dataset:
    from ragexp.systems.mlflow_traces import traces_dataset

    return traces_dataset(config, run)


@hookimpl
def ragexp_register_systems(register: RegisterSystem) -> None:
    register(
        SystemSpec(
            "ragexp",
            _ragexp,
            description="ragexp's own pipeline: retriever -> prompt -> generator",
            Options=NoOptions,
            own_concurrency=True,
        )
    )
    register(
        SystemSpec(
            "python",
            _python,
            description="a Python callable: system.target=module:attr (options as kwargs)",
            check=_python_check,
        )
    )
    register(
        SystemSpec(
            "http",
            _http,
            description="an HTTP service: system.url (POST question, case_id, options)",
        )
    )
    register(
        SystemSpec(
            "answers",
            _answers,
            description="a JSONL file of answers: system.path (case_id, answer, contexts)",
            Options=NoOptions,
        )
    )
    register(
        SystemSpec(
            "mlflow_traces",
            _mlflow_traces,
            description="traces logged to MLflow: system.experiment, system.filter (verdicts "
            "written back onto them)",
            Options=NoOptions,
            dataset=_traces_dataset,
            verdicts_to_traces=True,
        )
    )
