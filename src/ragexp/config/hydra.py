"""Hydra glue: where ``conf/`` is, ragexp's resolvers, composing a job's config, and checking
every job a command would run before Hydra starts any.

Hydra's own composition errors are several lines with a hint about HYDRA_FULL_ERROR; here every
combination a command would run is composed and validated first, so a mistake is one line and
exit code 2 before any job starts. Validation needs what the plugins registered (`Known`): the
caller passes it in, so this module stands below the plugins.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from ragexp.config.schema import Known, RunConfig
from ragexp.config.validate import validate_config
from ragexp.errors import ConfigError

if TYPE_CHECKING:
    from hydra.core.override_parser.types import Override

MAX_CHECKED_JOBS = 256
OPEN_MAPPINGS = ("metric_options.", "gate.", "system.options.", "system.headers.")
"""Config keys that are open mappings (keyed by metric, or a system's own options and headers):
their keys are added, not overridden."""


def config_dir() -> Path:
    """`conf/`: inside the installed wheel, else at the repo root of an editable install."""
    packaged = Path(__file__).parents[1] / "conf"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[3] / "conf"


def bundled_data_dir() -> Path:
    """Folder of the datasets that ship inside the package (``demo``)."""
    return Path(str(resources.files("ragexp") / "data"))


def register_resolvers(
    metrics_help: Callable[[], str] = lambda: "", commands_help: Callable[[], str] = lambda: ""
) -> None:
    """``${ragexp_data:demo/corpus}`` -> absolute path of a dataset bundled in the package.

    ``${ragexp_run_id:}`` -> a short random id, the same for the whole process, that tells apart
    run dirs started in the same second (``outputs/<date>/<H-M-S>-<id>``). It is fixed when the
    resolver is registered and cached like Hydra's ``now``, so every resolution of the run dir
    agrees, and a sweep's joblib workers (which get the launching process's resolvers and
    config cache) resolve the same sweep dir.

    ``${ragexp_metrics_help:}`` -> ``metrics_help()``: the registered metrics and their options,
    and ``${ragexp_commands_help:}`` -> ``commands_help()``: the subcommands, for ``--help``.
    """
    if not OmegaConf.has_resolver("ragexp_data"):
        OmegaConf.register_new_resolver(
            "ragexp_data", lambda rel: str(bundled_data_dir() / str(rel))
        )
    if not OmegaConf.has_resolver("ragexp_run_id"):
        run_id = secrets.token_hex(3)
        OmegaConf.register_new_resolver("ragexp_run_id", lambda: run_id, use_cache=True)
    if not OmegaConf.has_resolver("ragexp_metrics_help"):
        OmegaConf.register_new_resolver("ragexp_metrics_help", metrics_help)
    if not OmegaConf.has_resolver("ragexp_commands_help"):
        OmegaConf.register_new_resolver("ragexp_commands_help", commands_help)


def resolve(cfg: DictConfig) -> dict[str, Any]:
    """The composed config as plain data: interpolations resolved, Hydra's own node dropped."""
    missing = sorted(k for k in OmegaConf.missing_keys(cfg) if not k.startswith("hydra."))
    if missing:
        raise ConfigError(
            f"{missing[0]}: no value set (it is ??? in the config); "
            f"give it on the command line, e.g. {missing[0]}=..."
            + (f" (also missing: {', '.join(missing[1:])})" if missing[1:] else "")
        )
    data = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(data, dict)
    data.pop("hydra", None)
    return {str(k): v for k, v in data.items()}


@dataclass(frozen=True)
class CheckedCommand:
    """What `check_command` found: the validated config of each job, and whether it is a
    multirun (a sweep)."""

    configs: list[RunConfig]
    multirun: bool


def check_command(argv: Sequence[str], known: Callable[[], Known]) -> CheckedCommand:
    """Compose and validate every job the command would run; raise `ConfigError` on the first bad
    one (``known``: what the plugins registered, asked once a job is validated). `--cfg` and
    `--info` are only composed; help and completion are left to Hydra."""
    from hydra._internal.utils import get_args_parser

    args, _ = get_args_parser().parse_known_args(list(argv[1:]))
    if args.help or args.hydra_help or args.shell_completion:
        return CheckedCommand([], False)
    inspect_only = bool(args.cfg or args.info)  # printing a config: compose it, don't validate
    jobs = job_overrides(
        args.overrides or [], multirun=bool(args.multirun), let_unknown_keys=not inspect_only
    )
    configs = []
    for overrides in jobs:
        cfg = compose(overrides, args.config_name or "config", args.config_dir)
        if not inspect_only:
            configs.append(validate_config(resolve(cfg), known()))
    return CheckedCommand(configs, bool(args.multirun) and not inspect_only)


def with_open_mappings(overrides: Sequence[str]) -> list[str]:
    """``metric_options.m.k=v`` as ``++metric_options.m.k=v`` (and ``gate.x=...``): keys of an
    open mapping are added rather than overridden."""
    return [("++" + a if a.startswith(OPEN_MAPPINGS) else a) for a in overrides]


def compose_job(overrides: Sequence[str]) -> DictConfig:
    """The composed config of one job from ``conf/`` and command-line overrides (as a user types
    them), for commands such as ``ragexp doctor`` that read the config without running it."""
    [job] = job_overrides(with_open_mappings(overrides), multirun=False)
    return compose(job, "config", None)


def job_overrides(
    overrides: list[str], *, multirun: bool, let_unknown_keys: bool = True
) -> list[list[str]]:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except OverrideParseException as exc:
        raise ConfigError(_without_keys(hydra_one_line(str(exc)), overrides)) from None
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


def compose(overrides: list[str], config_name: str, extra_dir: str | None) -> DictConfig:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if extra_dir:
        overrides = [*overrides, f"hydra.searchpath=[file://{Path(extra_dir).resolve()}]"]
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(str(config_dir()), version_base="1.3"):
            return compose(config_name, overrides=overrides)
    except Exception as exc:  # Hydra's composition errors share no useful base class
        raise ConfigError(hydra_one_line(str(exc))) from None
    finally:
        GlobalHydra.instance().clear()


def hydra_one_line(message: str) -> str:
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
