"""One-file plugins on the real command line: ``--plugins-dir DIR`` / ``RAGEXP_PLUGINS_DIR``
with `python -m ragexp`, `plugins` and `--help`; a broken one is one line and exit code 2."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from tests.cli_run import run_ragexp
from tests.plugins.one_file import ANSWER_LENGTH

NO_VERSION = """
    import ragexp

    class AnswerLength:
        name = "answer_length"
        needs_judge = False

        async def score(self, sample, judge, options):
            return ragexp.MetricResult(score=1.0)

    @ragexp.hookimpl
    def ragexp_register_metrics(register):
        register(AnswerLength())
"""


def plugins(tmp_path: Path, source: str) -> Path:
    folder = tmp_path / "plugs"
    folder.mkdir()
    (folder / "length.py").write_text(textwrap.dedent(source))
    return folder


def test_broken_one_file_plugin_stops_the_run_in_one_line(tmp_path: Path) -> None:
    folder = plugins(tmp_path, NO_VERSION)
    result = run_ragexp(
        "dataset.limit=1", cwd=tmp_path, env={"RAGEXP_PLUGINS_DIR": str(folder)}, timeout=60
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"ragexp: error: plugin 'length' ({folder / 'length.py'}) registers metric "
        "'answer_length' without a `version`; a metric needs name (str), version (str), "
        "needs_judge (bool) and `async def score(self, sample, judge, options)`"
    ]
    assert not (tmp_path / "outputs").exists()  # before any case ran


def test_plugins_command_with_plugins_dir_lists_options(tmp_path: Path) -> None:
    folder = plugins(tmp_path, ANSWER_LENGTH)
    result = run_ragexp("plugins", "--plugins-dir", "plugs", cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr
    assert (
        f"length  ({folder / 'length.py'})\n"
        "    metrics: answer_length\n"
        "        answer_length options: max_words (int, default 100): answer longer than this "
        "scores 0\n"
    ) in result.stdout


def test_help_lists_metrics_and_their_options(tmp_path: Path) -> None:
    plugins(tmp_path, ANSWER_LENGTH)
    result = run_ragexp("--plugins-dir=plugs", "--help", cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr
    # the name column is as wide as the longest metric name
    assert re.search(r"\n  answer_length +no judge; from plugin 'length' \(/", result.stdout)
    assert "\n      max_words (int, default 100): answer longer than this scores 0\n" in (
        result.stdout
    )
    assert re.search(r"\n  faithfulness +asks the judge\n", result.stdout)


def test_help_survives_a_broken_plugin(tmp_path: Path) -> None:
    plugins(tmp_path, NO_VERSION)
    result = run_ragexp("--help", cwd=tmp_path, env={"RAGEXP_PLUGINS_DIR": "plugs"}, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "Metrics: cannot list them: plugin 'length' (/" in result.stdout
