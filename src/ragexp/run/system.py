"""Asking the system under test about one case, whatever it is: bounded by
``system.concurrency``, its call recorded as the case's ``generation`` (role ``system``) so
tokens, latency and traces read it as they read a generation, and its answer kept in ragexp's
cache (`ragexp.llm.cache.CallCache`) for reuse only where ragexp knows it is the same system.

A team's system is a black box: its package's other modules, its data, its index, its weights,
the service behind a URL are invisible to ragexp. So an answer is reused only within its
`AnswerScope`: the same command (a sweep's jobs, a judge-only re-run of one invocation), the
interrupted run that ``run.resume`` takes up, or, across commands, the same pinned
``system.version`` (the user's word that the system is unchanged). Within a scope the key also
holds the system's kind, its identity (`cache_identity`), its options and the case; ``cache.mode``
applies, and ``system.cache=false`` reuses nothing.

An answer enters the run bounded, once, here: at most ``system.max_answer_chars`` of its text,
its first ``system.max_contexts`` contexts and ``system.max_context_chars`` of each, so a system
that returns megabytes costs a bounded share of cases.jsonl, report.md, MLflow and the judge's
prompt. A cut answer says so on its case (``cut``) and in one warning at the end of the run.
The text is otherwise kept byte for byte (no whitespace stripped): what is scored and hashed for
human labels is what the system said."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import time
import warnings
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragexp.config.options import dump_options
from ragexp.config.schema import RunConfig
from ragexp.config.system import SystemConfig
from ragexp.data.dataset import Case
from ragexp.errors import ConfigError, RagexpWarning
from ragexp.llm.cache import CallCache
from ragexp.llm.interface import Completion
from ragexp.llm.retry import slot
from ragexp.results.case import LLMCall, RetrievedChunk
from ragexp.results.files import JobRecord, invocation_of
from ragexp.results.summary import AnswersInfo
from ragexp.systems.interface import System, SystemAnswer, SystemSpec, cache_identity

ROLE = "system"
"""The role of a system's call among a case's calls (``generate`` is ragexp's generator)."""


@dataclass(frozen=True)
class AnswerScope:
    """Where this run may reuse the system's answers from, and how it names itself to the runs
    that reuse its own."""

    invocation: str
    """The command's id (`ragexp.results.files.new_invocation`; a resumed run's: its own)."""
    origin: str
    """This run, as a later run's report names it: its dir."""
    resumed_from: str | None = None
    """``run.resume``, as given."""

    def key(self, config: SystemConfig) -> dict[str, str]:
        """The part of every answer's key that says where it may be reused."""
        if config.version is not None:
            return {"pinned": config.version}
        return {"invocation": self.invocation}


@dataclass
class AnswerTally:
    """The answers asked and reused so far, and which runs asked for the reused ones."""

    asked: int = 0
    reused: Counter[str] = field(default_factory=Counter)
    cut: Counter[str] = field(default_factory=Counter)
    """Answers cut to a bound, by what was cut (``answer``, ``contexts``)."""

    def info(self, config: SystemConfig, scope: AnswerScope) -> AnswersInfo:
        return AnswersInfo(
            asked=self.asked,
            reused=sum(self.reused.values()),
            reused_from=dict(self.reused.most_common()),
            pinned=config.version,
            resumed_from=scope.resumed_from,
        )


@dataclass
class SystemRun:
    """One run's system under test, with its resolved options."""

    system: System
    spec: SystemSpec
    config: SystemConfig
    options: Any
    """What ``answer`` receives: the spec's ``Options`` instance, or the options mapping."""
    cache: CallCache | None
    bound: asyncio.Semaphore | None
    scope: AnswerScope
    tally: AnswerTally = field(default_factory=AnswerTally)

    @classmethod
    def of(
        cls,
        system: System,
        spec: SystemSpec,
        config: SystemConfig,
        cache: CallCache | None,
        scope: AnswerScope,
    ) -> SystemRun:
        options: Any = (
            spec.Options.model_validate(config.options) if spec.Options else dict(config.options)
        )
        bound = None if spec.own_concurrency else asyncio.Semaphore(config.concurrency)
        return cls(system, spec, config, options, cache if config.cache else None, bound, scope)

    def answers(self) -> AnswersInfo | None:
        """Where the answers came from; None for a system whose answers ragexp generates
        itself (``system=ragexp``: its LLM calls are cached call by call). Warns once of the
        answers cut to the bounds."""
        if self.tally.asked == 0 and not self.tally.reused:
            return None
        if self.tally.cut:
            warnings.warn(cut_phrase(self.tally.cut, self.config), RagexpWarning, stacklevel=2)
        return self.tally.info(self.config, self.scope)

    @property
    def backend(self) -> str:
        return f"system:{self.config.kind}"

    async def ask(self, case: Case) -> tuple[SystemAnswer, LLMCall | None]:
        """The system's answer to ``case`` and the record of its call (None when ragexp made
        the LLM call itself: the answer's ``generation``)."""
        identity = cache_identity(self.system, case, self.options)
        key = None if identity is None or self.cache is None else self._key(case, identity)
        start_ns = time.time_ns()
        if key is not None and self.cache is not None and (hit := self.cache.get(key)):
            cached, origin = _from_cache(hit)
            self.tally.reused[origin] += 1
            cached = self._bound(cached)
            return cached, self._record(case, cached, start_ns, hit)
        t0 = time.perf_counter()
        async with self._bounded():
            answer = await self.system.answer(case, self.options)
        if answer.generation is not None:
            return answer, None
        self.tally.asked += 1
        answer = self._bound(answer)
        completion = Completion(
            text=json.dumps(_to_cache(answer, self.scope.origin), ensure_ascii=False),
            prompt_tokens=answer.prompt_tokens,
            completion_tokens=answer.completion_tokens,
            latency_s=time.perf_counter() - t0,
            model_id=self._model_id(answer),
        )
        if key is not None and self.cache is not None:
            self.cache.put(
                key,
                backend=self.backend,
                model=self._model_id(answer),
                role=ROLE,
                completion=completion,
            )
        return answer, self._record(case, answer, start_ns, completion)

    def _bound(self, answer: SystemAnswer) -> SystemAnswer:
        """``answer`` within the bounds, counted when cut (a cached answer: as cut before)."""
        bounded = bound(answer, self.config)
        said = bounded.cut or ""
        self.tally.cut.update(
            what
            for what, key in (("answer", "system.max_answer_chars"), ("contexts", "max_context"))
            if key in said
        )
        return bounded

    @contextlib.asynccontextmanager
    async def _bounded(self) -> AsyncIterator[None]:
        if self.bound is None:
            yield
            return
        async with slot(self.bound):
            yield

    def _key(self, case: Case, identity: Mapping[str, Any]) -> str:
        payload = {
            "system": self.config.kind,
            "reuse": self.scope.key(self.config),
            "options": dump_options(self.options),
            "case_id": case.id,
            "question": case.question,
            "identity": dict(identity),
        }
        canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(canonical.encode()).hexdigest()

    def _model_id(self, answer: SystemAnswer) -> str:
        return answer.model or self.config.model or self.config.kind

    def _record(
        self, case: Case, answer: SystemAnswer, start_ns: int, completion: Completion
    ) -> LLMCall:
        return LLMCall(
            role=ROLE,
            backend=self.backend,
            model=self._model_id(answer),
            model_id=completion.model_id,
            prompt=case.question,
            text=answer.answer,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            latency_s=completion.latency_s,
            start_ns=start_ns,
            cached=completion.cached,
            attempts=1 if completion.cached else answer.attempts,
        )


def bound(answer: SystemAnswer, config: SystemConfig) -> SystemAnswer:
    """``answer`` with at most ``system.max_answer_chars`` of text, its first
    ``system.max_contexts`` contexts and ``system.max_context_chars`` of each; ``cut`` says what
    was cut (added to what an earlier run's bounds cut). Unchanged when within them."""
    said = []
    text = answer.answer
    if len(text) > config.max_answer_chars:
        said.append(
            f"answer cut at {config.max_answer_chars:,} of {len(text):,} characters "
            "(system.max_answer_chars)"
        )
        text = text[: config.max_answer_chars]
    contexts = answer.contexts
    if len(contexts) > config.max_contexts:
        said.append(
            f"contexts cut to the first {config.max_contexts} of {len(contexts)} "
            "(system.max_contexts)"
        )
        contexts = contexts[: config.max_contexts]
    long = sum(len(chunk.text) > config.max_context_chars for chunk in contexts)
    if long:
        said.append(
            f"{long} contexts cut at {config.max_context_chars:,} characters "
            "(system.max_context_chars)"
        )
        contexts = [
            chunk.model_copy(update={"text": chunk.text[: config.max_context_chars]})
            if len(chunk.text) > config.max_context_chars
            else chunk
            for chunk in contexts
        ]
    if not said:
        return answer
    cut = "; ".join([answer.cut, *said] if answer.cut else said)
    return dataclasses.replace(answer, answer=text, contexts=contexts, cut=cut)


def cut_phrase(cut: Counter[str], config: SystemConfig) -> str:
    """The end-of-run warning: ``3 answers cut at 100,000 characters (...)``."""
    parts = []
    if cut["answer"]:
        parts.append(
            f"{cut['answer']} answer(s) cut at {config.max_answer_chars:,} characters "
            "(system.max_answer_chars)"
        )
    if cut["contexts"]:
        parts.append(
            f"the contexts of {cut['contexts']} answer(s) cut to {config.max_contexts} of at "
            f"most {config.max_context_chars:,} characters each (system.max_contexts, "
            "system.max_context_chars)"
        )
    return (
        f"system: {'; '.join(parts)}; they are scored and kept as cut, each case says what in "
        "'cut' (cases.jsonl); raise the bound if the system means to say this much"
    )


def _to_cache(answer: SystemAnswer, origin: str) -> dict[str, Any]:
    return {
        "answer": answer.answer,
        "contexts": [chunk.model_dump() for chunk in answer.contexts],
        "model": answer.model,
        "origin": origin,
        "cut": answer.cut,
    }


def _from_cache(hit: Completion) -> tuple[SystemAnswer, str]:
    """The cached answer, and the run that asked for it."""
    data = json.loads(hit.text)
    answer = SystemAnswer(
        answer=data["answer"],
        contexts=[RetrievedChunk.model_validate(c) for c in data["contexts"]],
        prompt_tokens=hit.prompt_tokens,
        completion_tokens=hit.completion_tokens,
        model=data.get("model"),
        cut=data.get("cut"),
    )
    return answer, str(data.get("origin") or "an earlier run")


def answer_scope(config: RunConfig, job: JobRecord, run_dir: Path) -> AnswerScope:
    """Where this run may reuse the system's answers from: its own command, or with
    ``run.resume`` the interrupted run's (whose id it then carries on)."""
    resume = config.run.resume
    if resume is not None:
        invocation = invocation_of(Path(resume))
        if invocation is None:
            raise ConfigError(
                f"run.resume={resume}: no ragexp run there (no job.json with its command's id); "
                "give the dir of the interrupted run, e.g. run.resume=outputs/<date>/<time>"
            )
        job.invocation = invocation
    return AnswerScope(job.invocation, _as_given(run_dir), resume)


def _as_given(path: Path) -> str:
    """``path`` relative to the working directory when under it (outputs/...), else whole."""
    with contextlib.suppress(ValueError):
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    return str(path)
