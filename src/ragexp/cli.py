"""Command-line edge: argv normalisation and config checks before Hydra takes over.

hydra-core 1.3 rejects ``-m`` placed between overrides (hydra issue 3053), yet
``python -m ragexp judge.model=qwen2.5:7b -m retriever.top_k=3,5,8`` is how users type a sweep,
so the multirun flag is moved to the front. Hydra's own composition errors are several lines with
a hint about HYDRA_FULL_ERROR; here every combination a command would run is composed and
validated first, so a mistake is one line and exit code 2 before any job starts.
"""

from __future__ import annotations

import itertools
import os
import re
import secrets
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import OmegaConf

from ragexp.errors import ConfigError, PluginError, RagexpError, RagexpWarning

if TYPE_CHECKING:
    from hydra.core.override_parser.types import Override
    from omegaconf import DictConfig

    from ragexp.config import RunConfig

MULTIRUN_FLAGS = frozenset({"-m", "--multirun"})
PLUGINS_DIR_FLAG = "--plugins-dir"
MAX_CHECKED_JOBS = 256
OPEN_MAPPINGS = ("metric_options.", "gate.")


def config_dir() -> Path:
    """`conf/`: inside the installed wheel, else at the repo root of an editable install."""
    packaged = Path(__file__).parent / "conf"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[2] / "conf"


def register_resolvers() -> None:
    """``${ragexp_data:demo/corpus}`` -> absolute path of a dataset bundled in the package.

    ``${ragexp_run_id:}`` -> a short random id, the same for the whole process, that tells apart
    run dirs started in the same second (``outputs/<date>/<H-M-S>-<id>``). It is fixed when the
    resolver is registered and cached like Hydra's ``now``, so every resolution of the run dir
    agrees, and a sweep's joblib workers (which get the launching process's resolvers and
    config cache) resolve the same sweep dir.

    ``${ragexp_metrics_help:}`` -> the registered metrics and their options, for ``--help``.
    """
    from ragexp.dataset import bundled_data_dir

    if not OmegaConf.has_resolver("ragexp_data"):
        OmegaConf.register_new_resolver(
            "ragexp_data", lambda rel: str(bundled_data_dir() / str(rel))
        )
    if not OmegaConf.has_resolver("ragexp_run_id"):
        run_id = secrets.token_hex(3)
        OmegaConf.register_new_resolver("ragexp_run_id", lambda: run_id, use_cache=True)
    if not OmegaConf.has_resolver("ragexp_metrics_help"):
        OmegaConf.register_new_resolver("ragexp_metrics_help", _metrics_help)


def _metrics_help() -> str:
    from ragexp.plugin_listing import metrics_help

    return metrics_help()


def take_plugins_dir(argv: Sequence[str]) -> list[str]:
    """``argv`` without ``--plugins-dir DIR`` (or ``--plugins-dir=DIR``), which sets
    ``RAGEXP_PLUGINS_DIR`` to DIR's absolute path, before Hydra sees the command line (a sweep's
    workers inherit the environment). Raises `PluginError` when DIR is missing or no directory."""
    from ragexp.plugins import DIR_ENV

    rest: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg == PLUGINS_DIR_FLAG:
            value = next(args, None)
        elif arg.startswith(PLUGINS_DIR_FLAG + "="):
            value = arg.partition("=")[2]
        else:
            rest.append(arg)
            continue
        if not value:
            raise PluginError(f"{PLUGINS_DIR_FLAG} needs a directory: {PLUGINS_DIR_FLAG} DIR")
        folder = Path(value).expanduser().resolve()
        if not folder.is_dir():
            raise PluginError(
                f"{PLUGINS_DIR_FLAG} {value}: no such directory; give a folder of one-file "
                "plugins (*.py)"
            )
        os.environ[DIR_ENV] = str(folder)
    return rest


def normalize_argv(argv: Sequence[str]) -> list[str]:
    """Move ``-m`` / ``--multirun`` in front of the overrides, keeping everything else in order.

    ``metric_options`` and ``gate`` are open mappings (keyed by metric), so their keys are added
    rather than overridden: ``metric_options.m.k=v`` becomes ``++metric_options.m.k=v``.
    """
    head, rest = list(argv[:1]), list(argv[1:])
    flags = [a for a in rest if a in MULTIRUN_FLAGS]
    rest = [("++" + a if a.startswith(OPEN_MAPPINGS) else a) for a in rest]
    return head + flags[:1] + [a for a in rest if a not in MULTIRUN_FLAGS]


def single_run_name(override_dirname: str) -> str:
    """A single run's MLflow name: Hydra's ``override_dirname`` without the ``++`` that
    `normalize_argv` put in front of ``metric_options`` and ``gate`` keys (what the user typed),
    and without the backslashes Hydra puts before ``:``; ``default`` when nothing was given."""
    name = re.sub(r"(^|,)\+{1,2}(?=[A-Za-z_])", r"\1", override_dirname.replace("\\", ""))
    return name or "default"


def check_command(argv: Sequence[str]) -> None:
    """Compose and validate every job the command would run; raise `ConfigError` on the first bad
    one. `--cfg` and `--info` are only composed; help and completion are left to Hydra."""
    from hydra._internal.utils import get_args_parser

    args, _ = get_args_parser().parse_known_args(list(argv[1:]))
    if args.help or args.hydra_help or args.shell_completion:
        return
    inspect_only = bool(args.cfg or args.info)  # printing a config: compose it, don't validate
    jobs = _job_overrides(
        args.overrides or [], multirun=bool(args.multirun), let_unknown_keys=not inspect_only
    )
    for overrides in jobs:
        _check_job(
            overrides, args.config_name or "config", args.config_dir, validate=not inspect_only
        )


def _job_overrides(
    overrides: list[str], *, multirun: bool, let_unknown_keys: bool = True
) -> list[list[str]]:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except OverrideParseException as exc:
        raise ConfigError(_without_keys(_one_line(str(exc)), overrides)) from None
    choices: list[list[str]] = []
    for override in parsed:
        if override.is_sweep_override() and not multirun:
            raise ConfigError(
                _without_keys(
                    f"{override.input_line}: a sweep needs multirun; add -m to the command",
                    overrides,
                )
            )
        # An unknown plain key is let through here, so that validation names it in one line.
        prefix = "++" if let_unknown_keys and _is_plain_key(override) else ""
        if override.is_interval_sweep():
            continue  # a search sweeper's interval(a,b) has no values to list: checked per job
        if override.is_sweep_override():
            key = override.get_key_element()
            choices.append([f"{prefix}{key}={v}" for v in override.sweep_string_iterator()])
        else:
            choices.append([prefix + (override.input_line or "")])
    # Past MAX_CHECKED_JOBS, jobs are still validated, each as it starts.
    return [list(c) for c in itertools.islice(itertools.product(*choices), MAX_CHECKED_JOBS)]


def _without_keys(message: str, overrides: list[str]) -> str:
    """Hydra's parse errors quote the override; the value of an `api_key_env` may be the key
    itself (validation refuses it later, without showing it), so it is cut out here."""
    for override in overrides:
        key, _, value = override.partition("=")
        if key.endswith("api_key_env") and len(value) >= 8:
            message = message.replace(value, "…")
    return message


def _is_plain_key(override: Override) -> bool:
    from hydra.core.override_parser.types import OverrideType

    key = override.key_or_group
    return (
        override.type == OverrideType.CHANGE
        and not key.startswith("hydra")
        and not (config_dir() / key).is_dir()
    )


def _check_job(
    overrides: list[str], config_name: str, extra_dir: str | None, *, validate: bool
) -> None:
    cfg = _compose(overrides, config_name, extra_dir)
    if validate:
        _validated(cfg)


def compose_config(overrides: Sequence[str]) -> RunConfig:
    """The validated config of one job, composed from ``conf/`` and command-line overrides
    (for commands such as ``ragexp doctor`` that read the config without running it)."""
    register_resolvers()
    [job] = _job_overrides(list(normalize_argv(["", *overrides])[1:]), multirun=False)
    return _validated(_compose(job, "config", None))


def _validated(cfg: DictConfig) -> RunConfig:
    from ragexp.config import validate_config
    from ragexp.experiment import resolve
    from ragexp.plugins import registry

    return validate_config(resolve(cfg), registry().known())


def _compose(overrides: list[str], config_name: str, extra_dir: str | None) -> DictConfig:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if extra_dir:
        overrides = [*overrides, f"hydra.searchpath=[file://{Path(extra_dir).resolve()}]"]
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(str(config_dir()), version_base="1.3"):
            return compose(config_name, overrides=overrides)
    except Exception as exc:  # Hydra's composition errors share no useful base class
        raise ConfigError(_one_line(str(exc))) from None
    finally:
        GlobalHydra.instance().clear()


def _one_line(message: str) -> str:
    """Fold Hydra's multi-line message into one line, dropping its search-path and env-var hints."""
    parts: list[str] = []
    options: list[str] = []
    for line in (ln.strip() for ln in message.splitlines()):
        if line.startswith("Config search path") or "HYDRA_FULL_ERROR" in line:
            break
        if not line or line.startswith("object_type"):
            continue
        if options or line.startswith("Available options in"):
            options.append(line)
        else:
            parts.append(line)
    if options:
        parts.append(f"{options[0].rstrip(':')}: {', '.join(options[1:])}")
    return "; ".join(p.rstrip(".") for p in parts).removeprefix("In 'config': ")


def show_warnings_as_lines() -> None:
    """Print ragexp's own warnings as one `ragexp: warning: ...` line each."""
    default = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, RagexpWarning):
            print(f"ragexp: warning: {message}", file=sys.stderr)
        else:
            default(message, category, *args, **kwargs)

    warnings.showwarning = show


def fail(exc: RagexpError) -> None:
    """Print the one-line error and exit with its code."""
    print(f"ragexp: error: {exc}", file=sys.stderr)
    sys.exit(exc.exit_code)
