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
