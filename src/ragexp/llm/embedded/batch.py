"""Several chat requests decoded together in one llama.cpp context, one sequence id each: the
embedded worker's (``ragexp.llm.embedded.worker``) continuous batching.

A 135M model's generation is bound by reading its weights, so one generation step for every
sequence costs little more than one for a single sequence; prompt reading is compute-bound and
gains nothing, so a step reads one prompt, or generates for every sequence, never both. Each
request is prepared by llama-cpp-python's own ``create_chat_completion`` (its ``create_completion``
stood in for), so the prompt tokens, stop strings, sampler and seed are exactly the serial path's.
Measured on 2 cores (demo, start to exit): 107 s against 134 s serial; generation time ~58 s ->
~30 s, prompt reading unchanged (~70 s at ~330 tokens/s).
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any


def chat_kwargs(request: dict[str, Any]) -> dict[str, Any]:
    """The arguments of ``create_chat_completion`` for one chat request of the protocol; a
    request's JSON ``schema`` becomes a llama.cpp ``grammar``. The batched path builds each
    sequence's sampler from these same arguments (`BatchEngine.prepare`), grammar included, and
    its sampler accepts every token it samples, so the grammar holds there as on the serial
    path."""
    kwargs: dict[str, Any] = {
        "messages": request["messages"],
        "temperature": request["temperature"],
        "max_tokens": request["max_tokens"],
    }
    if request.get("seed") is not None:
        kwargs["seed"] = request["seed"]
    if request.get("schema") is not None:
        schema = bounded_strings(request["schema"], request["max_tokens"])
        kwargs["grammar"] = grammar_for(json.dumps(schema, sort_keys=True))
    return kwargs


CHARS_PER_TOKEN = 3
"""Characters a token is counted as when a reply's strings are bounded: fewer than English
text's ~4, so a bound reached by odd text (digits, punctuation) still fits ``max_tokens``."""
JSON_TOKENS = 16
"""Tokens kept for the object's keys, quotes and braces."""
MIN_CHARS = 40


def bounded_strings(schema: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """``schema`` with a ``maxLength`` on each free string property of its top-level object
    (no ``enum``, ``const``, ``pattern`` or ``maxLength`` of its own), the reply's ``max_tokens``
    shared among them: ``CHARS_PER_TOKEN · (max_tokens − JSON_TOKENS) / their number``, at
    least `MIN_CHARS`. A tiny model that repeats itself inside a string (the 135M one does) is
    then made to close the string, and the object, before ``max_tokens`` cuts it into a reply
    that does not parse. Other schemas are returned as they are."""
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, dict):
        return schema
    free = [
        name
        for name, spec in properties.items()
        if isinstance(spec, dict)
        and spec.get("type") == "string"
        and not {"enum", "const", "pattern", "maxLength"} & set(spec)
    ]
    if not free:
        return schema
    chars = max(MIN_CHARS, CHARS_PER_TOKEN * (max_tokens - JSON_TOKENS) // len(free))
    bounded = {name: {**properties[name], "maxLength": chars} for name in free}
    return {**schema, "properties": {**properties, **bounded}}


@lru_cache(maxsize=64)
def grammar_for(schema_json: str) -> Any:
    """llama.cpp's grammar for a JSON schema (``LlamaGrammar.from_json_schema``), built once per
    schema in the worker."""
    from llama_cpp.llama_grammar import LlamaGrammar

    return LlamaGrammar.from_json_schema(schema_json, verbose=False)


class _Captured(Exception):
    """Raised by the stand-in ``create_completion`` once it holds the arguments it was given."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        super().__init__("captured")
        self.kwargs = kwargs


@dataclass
class _Sequence:
    """One chat request being answered in a slot of the batched context."""

    id: Any
    prompt: list[int]
    stop: list[bytes]
    max_tokens: int
    sampler: Any  # llama_cpp._internals.LlamaSampler, this request's own chain and seed
    started: float
    completion: list[int] = field(default_factory=list)
    next_token: int | None = None  # sampled, not yet evaluated
    multibyte_fix: int = 0
    text: bytes = b""
    prompt_eval_tokens: int = 0
    prompt_eval_ms: float = 0.0
    eval_tokens: int = 0
    eval_ms: float = 0.0


COPY_MIN_TOKENS = 16
"""Prompt tokens another slot must share beyond the chosen slot's own for its KV to be copied.
A copy moves the donor's whole stream (4,096 cells, ~94 MB of F16 KV for SmolLM2-135M) however
few of its tokens are kept: measured on 2 cores, 7-10 ms, what reading ~8 prompt tokens costs."""


@dataclass
class _Slot:
    """A sequence id of the batched context and the tokens whose KV it holds."""

    seq_id: int
    cached: list[int] = field(default_factory=list)
    seq: _Sequence | None = None
    placed: int = 0  # when its sequence was placed (`BatchEngine.placed`)


class BatchEngine:
    """Several chat requests decoded together: one llama.cpp context, one sequence id each.

    Generating a token with a 135M model is bound by reading the weights (~33 tokens/s for one
    sequence on 2 cores), so a step that carries one token for each of several sequences costs
    far less than that many steps: on the demo, the time spent generating fell from ~58 s to
    ~30 s with 8 sequences. Reading prompts (~330 tokens/s, ~70 s of the demo) gains nothing:
    it is compute-bound already. A step reads ``n_batch`` tokens of one waiting prompt, else
    takes the next token of every generating sequence; new requests join between steps.

    Every request is prepared by llama-cpp-python's own ``create_chat_completion`` up to the
    point where it would call ``create_completion`` (same chat template, prompt tokens, stop
    strings, sampler chain and seed), and finished by the same stop rules as its
    ``_create_completion`` (end-of-generation token, stop strings, ``max_tokens``), so a request
    gets the answer the serial path gives, up to float rounding from batching.
    Each sequence keeps the KV of its last prompt: a request goes to the free slot sharing the
    longest token prefix with it, which then recomputes only what differs; when another slot
    (busy or free) shares a longer prefix, that prefix's KV is copied from it instead. On the
    demo, the prompt tokens read fell from ~23,900 to ~22,800 of 25,711 (the judges' and the
    generator's instructions, read once per slot and no longer once per slot that lacked them).
    """

    def __init__(self, llama: Any, n_seq: int) -> None:
        import llama_cpp
        from llama_cpp import _internals

        self.lib, self.llama, self.n_ctx = llama_cpp, llama, llama.n_ctx()
        params = llama_cpp.llama_context_params.from_buffer_copy(llama.context_params)
        params.n_seq_max = n_seq
        params.n_ctx = self.n_ctx * n_seq  # each sequence gets the serial path's window
        params.kv_unified = False  # a stream per sequence: attention reads only its own
        self.n_batch = int(params.n_batch)
        self.ctx = _internals.LlamaContext(model=llama._model, params=params, verbose=False)
        self.batch = _internals.LlamaBatch(
            n_tokens=max(self.n_batch, n_seq), embd=0, n_seq_max=1, verbose=False
        )
        self.slots = [_Slot(i) for i in range(n_seq)]
        self.waiting: list[_Sequence] = []
        self.placed = 0

    @property
    def busy(self) -> bool:
        return bool(self.waiting) or any(slot.seq is not None for slot in self.slots)

    def submit(self, seq: _Sequence) -> None:
        """Queue ``seq``; it takes a slot at the next step that has one free."""
        self.waiting.append(seq)

    def prepare(self, request: dict[str, Any]) -> _Sequence:
        """The request as llama-cpp-python would run it (raises ValueError as it would)."""
        kwargs = _capture_completion(self.llama, request)
        prompt = list(kwargs["prompt"])
        if len(prompt) >= self.n_ctx:
            raise ValueError(
                f"Requested tokens ({len(prompt)}) exceed context window of {self.n_ctx}"
            )
        max_tokens = kwargs.get("max_tokens")
        if max_tokens is None or max_tokens <= 0:
            max_tokens = self.n_ctx - len(prompt)
        max_tokens = min(max_tokens, self.n_ctx - len(prompt))
        seed = kwargs.get("seed")
        self.llama.set_seed(seed if seed is not None else random.Random().randint(0, 2**32))
        sampler = self.llama._init_sampler(
            top_k=kwargs["top_k"],
            top_p=kwargs["top_p"],
            min_p=kwargs["min_p"],
            typical_p=kwargs["typical_p"],
            temp=kwargs["temperature"],
            repeat_penalty=kwargs["repeat_penalty"],
            frequency_penalty=kwargs["frequency_penalty"],
            presence_penalty=kwargs["presence_penalty"],
            tfs_z=kwargs["tfs_z"],
            mirostat_mode=kwargs["mirostat_mode"],
            mirostat_tau=kwargs["mirostat_tau"],
            mirostat_eta=kwargs["mirostat_eta"],
            logits_processor=kwargs.get("logits_processor"),
            grammar=kwargs.get("grammar"),
        )
        stop = kwargs.get("stop") or []
        stop = [stop] if isinstance(stop, str) else list(stop)
        return _Sequence(
            id=request.get("id"),
            prompt=prompt,
            stop=[s.encode("utf-8") for s in stop],
            max_tokens=max_tokens,
            sampler=sampler,
            started=time.perf_counter(),
        )

    def _admit(self) -> None:
        """Waiting sequences, first come, into free slots."""
        while self.waiting and any(slot.seq is None for slot in self.slots):
            self._place(self.waiting.pop(0))

    def _place(self, seq: _Sequence) -> None:
        """Put ``seq`` in the free slot whose cached tokens share the longest prefix with it;
        when another slot, busy or free, shares at least `COPY_MIN_TOKENS` more, its KV is
        copied into the free slot used longest ago, and only the rest of the prompt is read."""
        limit = len(seq.prompt) - 1  # the last prompt token is read again: its logits are needed

        def shared(slot: _Slot) -> int:
            return min(_common_prefix(slot.cached, seq.prompt), limit)

        free = [slot for slot in self.slots if slot.seq is None]
        slot = max(free, key=shared)
        keep = shared(slot)
        donor = max(self.slots, key=shared)
        if shared(donor) - keep >= COPY_MIN_TOKENS:
            slot = min(free, key=lambda s: s.placed)
            keep = shared(donor)
            # a stream per sequence: llama.cpp copies the donor's whole stream (at the next
            # decode, before it writes), then the copy's cells past the prefix are dropped
            self.ctx.kv_cache_seq_cp(donor.seq_id, slot.seq_id, -1, -1)
            slot.cached = donor.cached[:keep]
        self.ctx.kv_cache_seq_rm(slot.seq_id, keep, -1)
        slot.cached = slot.cached[:keep]
        slot.seq = seq
        self.placed += 1
        slot.placed = self.placed

    def step(self) -> list[_Sequence]:
        """One decode of every busy slot's next tokens; returns the sequences that finished."""
        self._admit()
        outputs, prompt_reads = self._fill_batch()
        start = time.perf_counter()
        self.ctx.decode(self.batch)
        ms = (time.perf_counter() - start) * 1000
        for slot, n in prompt_reads:
            assert slot.seq is not None
            slot.seq.prompt_eval_tokens += n
            slot.seq.prompt_eval_ms += ms
        finished = []
        for slot, index in outputs:
            seq = slot.seq
            assert seq is not None
            if seq.next_token is not None:  # this step evaluated a generated token
                seq.eval_tokens += 1
                seq.eval_ms += ms
            token = seq.sampler.sample(self.ctx, index)
            if self._accept(seq, token):
                finished.append(seq)
                slot.seq = None
            else:
                seq.next_token = token
        return finished

    def _fill_batch(self) -> tuple[list[tuple[_Slot, int]], list[tuple[_Slot, int]]]:
        """The next ``n_batch`` tokens of one waiting prompt, else the next token of every
        generating sequence. Measured on 2 cores: several prompts in one step, or generated
        tokens mixed into a prompt's step, ran slower than these pure steps (llama.cpp splits a
        mixed batch into small equal-length pieces, one sequence's tokens each)."""
        batch = self.batch.batch
        batch.n_tokens = 0
        outputs: list[tuple[_Slot, int]] = []
        prompt_reads: list[tuple[_Slot, int]] = []

        def add(slot: _Slot, token: int, logits: bool) -> None:
            i = batch.n_tokens
            batch.token[i], batch.pos[i] = token, len(slot.cached)
            batch.seq_id[i][0], batch.n_seq_id[i], batch.logits[i] = slot.seq_id, 1, logits
            batch.n_tokens += 1
            slot.cached.append(token)
            if logits:
                outputs.append((slot, i))

        reading = [s for s in self.slots if s.seq is not None and s.seq.next_token is None]
        if reading:
            slot = reading[0]
            assert slot.seq is not None
            prompt = slot.seq.prompt
            todo = prompt[len(slot.cached) :][: self.n_batch]
            for token in todo:
                add(slot, token, len(slot.cached) == len(prompt) - 1)
            prompt_reads.append((slot, len(todo)))
            return outputs, prompt_reads
        for slot in self.slots:
            if slot.seq is not None and slot.seq.next_token is not None:
                add(slot, slot.seq.next_token, True)
        return outputs, prompt_reads

    def _accept(self, seq: _Sequence, token: int) -> bool:
        """``Llama._create_completion``'s rules for one sampled token; True when finished."""
        if self.lib.llama_vocab_is_eog(self.llama._model.vocab, token):
            seq.text = self.llama.detokenize(seq.completion, prev_tokens=seq.prompt)
            return True
        seq.completion.append(token)
        all_text = self.llama.detokenize(seq.completion, prev_tokens=seq.prompt)
        for k, char in enumerate(all_text[-3:]):  # an incomplete UTF-8 character: go on
            k = 3 - k
            for num, pattern in [(2, 192), (3, 224), (4, 240)]:
                if num > k and pattern & char == pattern:
                    seq.multibyte_fix = num - k
        if seq.multibyte_fix > 0:
            seq.multibyte_fix -= 1
            return False
        stops = [s for s in seq.stop if s in all_text]
        if stops:
            seq.text = all_text[: all_text.index(stops[0])]
            return True
        if len(seq.completion) >= seq.max_tokens:
            seq.text = all_text
            return True
        return False

    @staticmethod
    def answer(seq: _Sequence) -> dict[str, Any]:
        """The serial path's answer fields; the ms are those of the decode steps the sequence
        took part in (shared with the sequences decoded alongside it)."""
        return {
            "id": seq.id,
            "text": seq.text.decode("utf-8", errors="ignore"),
            "prompt_tokens": len(seq.prompt),
            "completion_tokens": len(seq.completion),
            "latency_s": time.perf_counter() - seq.started,
            "prompt_eval_ms": seq.prompt_eval_ms,
            "prompt_eval_tokens": seq.prompt_eval_tokens,
            "eval_ms": seq.eval_ms,
            "eval_tokens": seq.eval_tokens,
        }


def _capture_completion(llama: Any, request: dict[str, Any]) -> dict[str, Any]:
    """The arguments ``create_chat_completion`` passes to ``create_completion`` for ``request``:
    its chat handler renders and tokenizes the messages exactly as on the serial path."""

    def capture(**kwargs: Any) -> Any:
        raise _Captured(kwargs)

    llama.create_completion = capture  # an instance attribute: shadows the method
    try:
        llama.create_chat_completion(**chat_kwargs(request))
    except _Captured as captured:
        return captured.kwargs
    finally:
        del llama.create_completion
    raise RuntimeError("create_chat_completion did not reach create_completion")


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n
