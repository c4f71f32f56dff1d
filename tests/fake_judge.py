"""A judge for metric unit tests: records every prompt, replies with a fixed text."""

from __future__ import annotations


class FakeJudge:
    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.prompts: list[str] = []

    async def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.reply
