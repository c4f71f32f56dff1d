"""A URL is shown without its secrets: its password and its secret query parameters."""

from __future__ import annotations

import pytest

from ragexp.config.secrets import redact_url, redact_urls


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://team:pw-123@127.0.0.1:8000/ask", "http://team:***@127.0.0.1:8000/ask"),
        ("https://h/ask?api_key=sk-1&top=2", "https://h/ask?api_key=***&top=2"),
        ("https://h/ask?KEY=abc", "https://h/ask?KEY=***"),
        ("http://team@h/ask", "http://team@h/ask"),  # a user name alone is no secret
        ("http://h:8000/ask?top=2", "http://h:8000/ask?top=2"),
        ("mypkg.rag:answer", "mypkg.rag:answer"),
    ],
)
def test_a_urls_secrets_are_redacted(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_every_url_in_an_override_string_is_redacted() -> None:
    text = "dataset=custom,system.url=http://u:s3cr3t@h:1/ask,judge.base_url=http://j/?token=t9"
    assert redact_urls(text) == (
        "dataset=custom,system.url=http://u:***@h:1/ask,judge.base_url=http://j/?token=***"
    )


def test_the_secrets_of_a_config_are_every_way_a_user_passes_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ragexp.config.secrets import secret_values

    monkeypatch.setenv("SVC_KEY", "env-key-1")
    monkeypatch.setenv("JUDGE_KEY", "env-key-2")
    tree = {
        "system": {
            "url": "http://team:pw-9@h/ask?sig=s-77&top=2",
            "api_key_env": "SVC_KEY",
            "options": {"token": "tok-1", "top_k": 3},
            "headers": {"Authorization": "Bearer abc-1", "X-Team-Auth": "team-42", "X-N": "1"},
        },
        "judge": {"api_key_env": "JUDGE_KEY", "max_tokens": 128, "base_url": ["http://a", "b"]},
        "generator": {"api_key_env": "UNSET_VAR_FOR_SECRETS_TEST"},
    }
    assert set(secret_values(tree)) == {
        "pw-9",
        "dGVhbTpwdy05",  # base64 of team:pw-9, what httpx sends as Basic auth
        "s-77",
        "env-key-1",
        "env-key-2",
        "tok-1",
        "abc-1",
        "team-42",
    }


def test_redact_masks_each_secret_longest_first_and_every_urls_credentials() -> None:
    from ragexp.config.secrets import redact

    text = "token=sk-12345 and sk-123, at http://u:pw@h/"
    assert redact(text, ["sk-123", "sk-12345"]) == "token=*** and ***, at http://u:***@h/"


def test_a_tree_to_write_shows_secret_keys_and_headers_as_stars() -> None:
    from ragexp.config.secrets import redact_tree

    tree = {
        "system": {"headers": {"X-Team": "ab"}, "options": {"token": 7, "note": "uses tok-1"}},
        "judge": {"base_url": "http://u:pw@h", "max_tokens": 5},
    }
    assert redact_tree(tree, ["tok-1"]) == {
        "system": {"headers": {"X-Team": "***"}, "options": {"token": "***", "note": "uses ***"}},
        "judge": {"base_url": "http://u:***@h", "max_tokens": 5},
    }
