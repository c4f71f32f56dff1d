"""Bad inputs through `python -m ragexp`, as a user meets them: each ends in one line naming the
problem and what to do next (or one warning line, when the run can go on), never a traceback."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ragexp.config import LLMConfig
from ragexp.config.llm import looks_like_key
from ragexp.errors import ConfigError
from ragexp.run.compose import compose_config
from tests.cli_run import OllamaRun, run_ragexp

LATIN1 = "Caf\u00e9 cr\u00e8me is sold from 7 am.\n".encode("latin-1")
BINARY = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00"


def one_line_error(result: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The single `ragexp: error:` line of a run that stopped, which must be all it printed."""
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ragexp: error: ")
    return lines[0].removeprefix("ragexp: error: ")


def custom_data(root: Path, *case_rows: dict[str, object], docs: dict[str, bytes]) -> list[str]:
    """A corpus folder and a golden set under ``root``; the overrides that point a run at them."""
    corpus = root / "corpus"
    corpus.mkdir(parents=True)
    for name, content in docs.items():
        (corpus / name).write_bytes(content)
    cases = root / "cases.jsonl"
    cases.write_text("".join(json.dumps(r) + "\n" for r in case_rows), encoding="utf-8")
    return ["dataset=custom", f"dataset.corpus={corpus}", f"dataset.cases={cases}"]


GOOD_DOCS = {
    "hours.md": b"# Hours\n\nThe park opens at 6 am and closes at 10 pm.\n",
    "fees.txt": b"A day pass costs 5 euros and is valid for 7 days.\n",
}


ON_OLLAMA = ("llm=ollama", "tracking.enabled=false", "hydra.run.dir=outputs/run")
"""A run on the `ollama` fixture's server (`llm=ollama` generates and judges with llama3.2:3b)."""


# -- case ids -----------------------------------------------------------------------------


def test_integer_case_ids_run_as_their_decimal_text(ollama: OllamaRun) -> None:
    data = custom_data(
        ollama.cwd,
        {"id": 7, "question": "When does the park open?"},
        {"id": 8, "question": "How much is a day pass?"},
        docs=GOOD_DOCS,
    )
    ollama.ragexp(*ON_OLLAMA, *data)
    lines = (ollama.cwd / "outputs/run/cases.jsonl").read_text().splitlines()
    assert [json.loads(line)["case_id"] for line in lines] == ["7", "8"]


def test_an_id_of_another_type_is_one_line_naming_the_line(tmp_path: Path) -> None:
    data = custom_data(
        tmp_path,
        {"id": 1, "question": "When does the park open?"},
        {"id": 2, "question": "How much is a day pass?"},
        {"id": 3.5, "question": "Is there a café?"},
        docs=GOOD_DOCS,
    )
    message = one_line_error(run_ragexp(*data, "hydra.run.dir=outputs/run", cwd=tmp_path))
    assert (
        message == f"{tmp_path / 'cases.jsonl'}:3: 'id' must be a string or a whole number, got 3.5"
    )


def test_a_golden_set_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    data = custom_data(tmp_path, docs=GOOD_DOCS)
    (tmp_path / "cases.jsonl").write_bytes(b'{"id": "a", "question": "Caf\xe9?"}\n')
    message = one_line_error(run_ragexp(*data, "hydra.run.dir=outputs/run", cwd=tmp_path))
    assert message == (
        f"{tmp_path / 'cases.jsonl'}:1: not UTF-8 text (byte 0xe9 at offset 28); re-save the "
        "file as UTF-8"
    )


# -- undecodable documents ----------------------------------------------------------------


def test_latin1_and_binary_documents_are_skipped_with_one_warning(ollama: OllamaRun) -> None:
    tmp_path = ollama.cwd
    data = custom_data(
        tmp_path,
        {"id": "a", "question": "When does the park open?"},
        docs={**GOOD_DOCS, "caf\u00e9.md": LATIN1, "map.txt": BINARY},
    )
    result = ollama.ragexp(*ON_OLLAMA, *data)  # exit code 0, no traceback
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert warnings == [
        f"ragexp: warning: {tmp_path / 'corpus'}: skipped 2 files that cannot be read as UTF-8 "
        "text: caf\u00e9.md (byte 0xe9 at offset 3), map.txt (binary); using the other 2; "
        "re-save them as UTF-8 to include them"
    ]
    [case] = [
        json.loads(x) for x in (tmp_path / "outputs/run/cases.jsonl").read_text().split("\n") if x
    ]
    assert {r["doc_id"] for r in case["retrieved"]} <= set(GOOD_DOCS)


@pytest.mark.parametrize("content", [LATIN1, BINARY], ids=["latin-1", "binary"])
def test_a_corpus_with_no_readable_document_is_one_line(tmp_path: Path, content: bytes) -> None:
    data = custom_data(
        tmp_path, {"id": "a", "question": "When does the park open?"}, docs={"only.md": content}
    )
    message = one_line_error(run_ragexp(*data, "hydra.run.dir=outputs/run", cwd=tmp_path))
    assert message.startswith(
        f"{tmp_path / 'corpus'}: no document left: skipped 1 file that cannot be read as UTF-8 "
        "text: only.md ("
    )
    assert message.endswith("; re-save as UTF-8 (e.g. iconv -f latin1 -t utf-8 old.md > new.md)")


# -- an API key where the name of its variable belongs ------------------------------------

KEY = "sk-proj-Q2hlY2tUaGlzS2V5TmV2ZXJMZWFrcw7f3a9"


NOWHERE = "http://127.0.0.1:9"  # nothing listens: were the key let through, the run fails fast
UNSERVED = ("llm=ollama", "tracking.enabled=false", "dataset.limit=1")


def run_refused(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_ragexp(*args, *UNSERVED, cwd=cwd, env={"OLLAMA_HOST": NOWHERE}, timeout=120)


def everything_under(root: Path) -> str:
    return "".join(p.read_bytes().decode(errors="replace") for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize(
    "args",
    [
        [f"generator.api_key_env={KEY}"],
        [
            "generator.backend=openai",
            f"generator.base_url={NOWHERE}/v1",
            f"generator.api_key_env={KEY}",
        ],
        [f"judge.api_key_env={KEY}", "-m", "retriever.top_k=3,5"],
        [f"retriever.embedder.api_key_env={KEY}"],
        [f"generator.api_key_env={KEY}:x]"],  # Hydra's own parse error quotes the override
    ],
    ids=["generator", "openai", "judge-in-a-sweep", "embedder", "unparsable"],
)
def test_a_key_given_as_api_key_env_is_refused_and_never_shown(
    tmp_path: Path, args: list[str]
) -> None:
    result = run_refused(*args, cwd=tmp_path)
    message = one_line_error(result)
    assert KEY not in result.stdout + result.stderr
    assert KEY[:12] not in result.stdout + result.stderr  # not even in part
    assert "api_key_env" in message
    assert KEY not in everything_under(tmp_path)
    assert not (tmp_path / "outputs").exists()  # refused before Hydra made a run dir


def test_the_message_names_the_key_path_and_the_fix(tmp_path: Path) -> None:
    message = one_line_error(run_refused(f"judge.api_key_env={KEY}", cwd=tmp_path))
    assert message == (
        "judge.api_key_env: this looks like a key itself, not the name of a variable that holds "
        "it; export the key (export OPENAI_API_KEY=…) and pass the name: "
        "judge.api_key_env=OPENAI_API_KEY"
    )


@pytest.mark.parametrize(
    "value", ["OPENAI-API-KEY", "$OPENAI_API_KEY", "1PASSWORD", "my key", "12345678"]
)
def test_a_value_that_is_no_variable_name_is_refused_without_showing_it(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        compose_config([f"generator.api_key_env={value}"])  # "12345678" reaches it as an int
    message = str(info.value)
    assert message == (
        "generator.api_key_env: not the name of an environment variable (letters, digits and _, "
        "not starting with a digit); export the key (export OPENAI_API_KEY=…) and pass the name: "
        "generator.api_key_env=OPENAI_API_KEY"
    )


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "hf_token",
        "MISTRAL_API_KEY_2",
        "OpenAIKeyForProjectX2024",
        "OPENAI_API_KEY_FOR_THE_STAGING_ENVIRONMENT_2024",
        "_KEY",
    ],
)
def test_variable_names_are_accepted(name: str) -> None:
    assert LLMConfig(model="m", api_key_env=name).api_key_env == name


def test_no_variable_is_none() -> None:
    assert LLMConfig(model="m", api_key_env=None).api_key_env is None
    assert LLMConfig(model="m", api_key_env="").api_key_env is None


@pytest.mark.parametrize(
    "key",
    [
        "sk-abc123",
        "sk-ant-api03-AbCdEf0123456789AbCdEf0123456789",
        "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
        "ghp_0123456789AbCdEfGhIjKlMnOpQrStUvWxYz",
        "gsk_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKlMn",
        "3f9a0c1e7b2d4a6f8e0c1b3d5f7a9c2e",  # Azure / Together: hex, no prefix
        "QWxhZGRpbjpvcGVuIHNlc2FtZQJkbWFsbGFyZA",  # Mistral / Cohere: letters, digits
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "123e4567-e89b-12d3-a456-426614174000",
    ],
)
def test_keys_look_like_keys(key: str) -> None:
    assert looks_like_key(key)
    with pytest.raises(ConfigError) as info:
        compose_config([f"generator.api_key_env={key}"])
    assert "looks like a key itself" in str(info.value)
    assert key not in str(info.value)
