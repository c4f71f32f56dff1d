"""The tags MLflow's run-context providers give a run (`mlflow.tracking.context`), made without
importing MLflow, for the table writer (`ragexp.tracking.tables`): the user, the source (the
program that was run), its git commit, branch and remote, and the tags in
``$MLFLOW_RUN_CONTEXT``. A test compares them with MLflow's ``resolve_tags`` in several git
states."""

from __future__ import annotations

import getpass
import json
import os
import shutil
import subprocess
import sys
from configparser import ConfigParser
from pathlib import Path
from urllib.parse import urlsplit

from ragexp.tracking import names


def context_tags() -> dict[str, str]:
    """The tags MLflow's run-context providers would give a run started by this process."""
    main = sys.argv[0] if sys.argv and sys.argv[0] else None
    tags = {
        names.USER: _username() or _user(),
        names.SOURCE_NAME: main or "<console>",
        names.SOURCE_TYPE: "LOCAL",
    }
    git = _git_info(main) if main is not None else {}
    if git.get(names.GIT_COMMIT) is not None:
        tags.update({key: value for key, value in git.items() if value is not None})
    if os.environ.get("MLFLOW_RUN_CONTEXT"):
        tags.update(json.loads(os.environ["MLFLOW_RUN_CONTEXT"]))
    return tags


def _username() -> str | None:
    """MLflow's user name: ``$MLFLOW_TRACKING_USERNAME``, else ``~/.mlflow/credentials``."""
    if os.environ.get("MLFLOW_TRACKING_USERNAME"):
        return os.environ["MLFLOW_TRACKING_USERNAME"]
    path = Path(os.path.expanduser("~/.mlflow/credentials"))
    if not path.exists():
        return None
    parser = ConfigParser()
    parser.read(path)
    return parser["mlflow"].get("mlflow_tracking_username") if "mlflow" in parser else None


def _user() -> str:
    try:
        return getpass.getuser()
    except (ImportError, KeyError, OSError):
        return "unknown"


def _git_info(main: str) -> dict[str, str | None]:
    """Commit, branch and first remote of the git repository holding ``main``, as MLflow reads
    them with GitPython (here with the ``git`` program GitPython itself runs: importing GitPython
    cost a fifth of a second); None where there is none."""
    path = os.path.dirname(os.path.abspath(main)) if os.path.isfile(main) else main
    if shutil.which("git") is None or _git(path, "rev-parse", "--git-dir") is None:
        return {}
    ignored = _git(path, "check-ignore", path) is not None
    remotes = _git(path, "config", "--local", "--get-regexp", r"^remote\..*\.url$")
    url = remotes.splitlines()[0].split(" ", 1)[1] if remotes else None
    return {
        names.GIT_COMMIT: None if ignored else _git(path, "rev-parse", "--verify", "HEAD"),
        names.GIT_BRANCH: _git(path, "symbolic-ref", "--short", "-q", "HEAD"),
        names.GIT_REPO_URL: _without_credentials(url) if url else None,
    }


def _git(folder: str, *args: str) -> str | None:
    """``git args`` run in ``folder``: its output, or None if it failed."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=folder, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _without_credentials(url: str) -> str:
    """A remote's URL without any user name or token in it."""
    parts = urlsplit(url)
    if not parts.scheme or "@" not in parts.netloc:
        return str(url)
    return str(parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl())
