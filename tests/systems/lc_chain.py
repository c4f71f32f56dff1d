"""A real LangChain runnable (langchain-core) as a team's RAG chain: a retriever step that
returns ``Document``s, then an answer step, shaped as LangChain's retrieval chains return
(``{"question", "context": [Document], "answer"}``)."""

from __future__ import annotations

from operator import itemgetter
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda, RunnableParallel
from lexical import first_sentence, load, search


def _retrieve(inputs: dict[str, Any]) -> list[Document]:
    hits = search(load(Path("corpus")), inputs["question"], int(inputs.get("top_k", 2)))
    return [Document(page_content=t, metadata={"source": d, "score": s}) for d, s, t in hits]


def _answer(inputs: dict[str, Any]) -> str:
    return first_sentence(inputs["context"][0].page_content)


chain = RunnableParallel(question=itemgetter("question"), context=RunnableLambda(_retrieve)).assign(
    answer=RunnableLambda(_answer)
)
