"""``system=ragexp``, the default system under test: ragexp's own pipeline. The corpus is
chunked and indexed once (``retriever``), then each case is retrieved (``retriever.top_k``),
rendered into the prompt variant (``prompt``) and answered by the generator (``generator``).
Its LLM calls are cached one by one (`ragexp.llm.cache`), so its answers are not cached again
as a whole."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ragexp.config.schema import RunConfig
from ragexp.config.system import SystemConfig
from ragexp.data.chunking import chunk_text
from ragexp.data.dataset import Case, Dataset
from ragexp.errors import RagexpError
from ragexp.llm.calls import recorded_call
from ragexp.llm.interface import Message
from ragexp.metrics.interface import format_context
from ragexp.results.case import RetrievedChunk
from ragexp.retrieval.base import Retriever, RetrieverSpec
from ragexp.systems.interface import SystemAnswer, SystemContext, with_partial


def render_prompt(
    config: RunConfig, question: str, chunks: Sequence[RetrievedChunk]
) -> list[Message]:
    """The generator's messages: the prompt variant filled with the question and the chunks."""
    context = format_context(chunks)
    user = config.prompt.template.replace("{context}", context).replace("{question}", question)
    messages: list[Message] = []
    if config.prompt.system:
        messages.append({"role": "system", "content": config.prompt.system})
    messages.append({"role": "user", "content": user})
    return messages


class RagexpSystem:
    """Retrieve -> generate, as configured by ``retriever``, ``prompt`` and ``generator``."""

    def __init__(self, context: SystemContext) -> None:
        self.config = context.config
        self.dataset: Dataset = context.dataset
        self.generator = context.endpoints("generator", self.config.generator)
        spec: RetrieverSpec = context.retrievers[self.config.retriever.kind]
        self.retriever: Retriever = spec.factory(self.config.retriever, context.endpoints)

    async def start(self) -> None:
        """Chunk and index the corpus (after the endpoints answered)."""
        retriever = self.config.retriever
        chunks = [
            chunk
            for doc_id, text in self.dataset.documents.items()
            for chunk in chunk_text(doc_id, text, retriever.chunk_size, retriever.chunk_overlap)
        ]
        await self.retriever.index(chunks)

    def models(self) -> dict[str, tuple[str, str]]:
        """Its generator's backend and model identity (known once the endpoint answered)."""
        return {"generator": (self.generator.backend_name, self.generator.model_id)}

    async def answer(self, case: Case, options: Any) -> SystemAnswer:
        t0 = time.time_ns()
        retrieved = await self.retriever.search(case.question, self.config.retriever.top_k)
        retrieve_ns = (t0, time.time_ns())
        messages = render_prompt(self.config, case.question, retrieved)
        try:
            generation = await recorded_call(self.generator, messages, role="generate")
        except RagexpError as exc:  # the case keeps what was retrieved, as it always did
            raise with_partial(exc, retrieved, retrieve_ns) from None
        return SystemAnswer(
            answer=generation.text.strip(),
            contexts=retrieved,
            generation=generation,
            retrieve_ns=retrieve_ns,
        )


def build(config: SystemConfig, context: SystemContext) -> RagexpSystem:
    return RagexpSystem(context)
