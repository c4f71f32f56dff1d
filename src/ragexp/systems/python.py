"""``system=python system.target=module:attr``: the user's own code, imported with the run's
working directory on ``sys.path``. The target is

- a function, sync (run in a thread) or async, called as ``f(question, **system.options)``
  (and ``case_id=`` too when it takes a parameter of that name);
- a class: built once per run with no arguments, its instance then called as a function;
- an object with ``ainvoke``/``invoke`` (a LangChain runnable): given
  ``{"question": question, **system.options}``;
- an object with ``aquery``/``query`` (a LlamaIndex query engine): given the question alone.

A function's (or a class instance's ``__call__``) signature is read once: a ``system.options``
key it has no parameter for (and no ``**kwargs``) is a `ConfigError` before any case, naming the
option, the target and what it takes (`option_problem`). A runnable or a query engine gets its
options in one mapping, so they are not checked.

What it returns is read by `ragexp.systems.shapes`. When it raises, the case's error is the
exception's first line, and its ``error_detail`` the traceback of the user's code
(`user_traceback`). A call runs within ``system.timeout_s`` (a sync target in a daemon thread
of its own, abandoned at the deadline), and ``sys.exit`` or KeyboardInterrupt inside it is that
case's error. Its answers are reused only where `ragexp.run.system` allows, keyed besides by the
target and the SHA-256 of its module's source, so editing that module asks it again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import difflib
import hashlib
import importlib
import inspect
import os
import sys
import threading
import traceback
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragexp.config.system import SystemConfig
from ragexp.data.dataset import Case
from ragexp.errors import ConfigError, RagexpError, SystemFailed, first_line
from ragexp.systems.interface import SystemAnswer, SystemContext
from ragexp.systems.shapes import read_answer


def load_target(target: str) -> Any:
    """The object ``module:attr`` names (the working directory first on ``sys.path``); a
    `ConfigError` naming the problem otherwise."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(
            f"system.target: '{target}' is not module:attr; e.g. system.target=mypkg.rag:answer"
        )
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except SystemExit as exc:
        raise ConfigError(
            f"system.target: importing '{module_name}' called sys.exit({exc.code!r}); a module "
            'ragexp imports must not exit (move that call under `if __name__ == "__main__":`)'
        ) from None
    except Exception as exc:
        raise ConfigError(
            f"system.target: cannot import '{module_name}' ({type(exc).__name__}: "
            f"{first_line(exc)}); run from the folder that holds it, or install it"
        ) from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"system.target: module '{module_name}' has no '{attr}'")
        obj = getattr(obj, part)
    return obj


def source_sha256(target: str) -> str:
    """The SHA-256 of the source file of ``target``'s module ("" when it has none)."""
    module = sys.modules.get(target.partition(":")[0])
    path = getattr(module, "__file__", None)
    if not path or not Path(path).is_file():
        return ""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class PythonSystem:
    """A callable of the user's, called once per case."""

    def __init__(self, config: SystemConfig) -> None:
        assert config.target is not None  # SystemConfig requires it for system=python
        self.target = config.target
        self.timeout_s = config.timeout_s
        obj = load_target(self.target)
        if inspect.isclass(obj):
            try:
                obj = obj()
            except (Exception, SystemExit) as exc:
                raise ConfigError(
                    f"system.target: building {self.target}() raised {type(exc).__name__}: "
                    f"{first_line(exc)}"
                ) from None
        if not callable(obj) and not _method(obj, "invoke", "query"):
            raise ConfigError(
                f"system.target: {self.target} is a {type(obj).__name__}, not a function, "
                "class, runnable (invoke) or query engine (query)"
            )
        problem = option_problem(obj, self.target, list(config.options))
        if problem is not None:
            raise ConfigError(problem)
        self.obj = obj
        self.source = source_sha256(self.target)

    def cache_identity(self, case: Case, options: Any) -> Mapping[str, Any]:
        return {"target": self.target, "source_sha256": self.source, "question": case.question}

    async def answer(self, case: Case, options: Any) -> SystemAnswer:
        """The target's answer, within ``system.timeout_s``: a call still running then is
        abandoned (a sync target's thread is a daemon: it never holds the process at exit) and
        the case fails; whatever the target raises, ``sys.exit`` and KeyboardInterrupt
        included, is that case's error, never the end of the run."""
        kwargs = dict(options) if isinstance(options, Mapping) else {}
        deadline = asyncio.timeout(self.timeout_s)
        try:
            async with deadline:
                reply = await self._call(case, kwargs)
        except RagexpError:
            raise
        except TimeoutError as exc:
            if not deadline.expired():  # the target's own TimeoutError
                raise self._failed(exc) from None
            raise SystemFailed(
                f"{self.target} did not answer within {self.timeout_s:g} s (system.timeout_s); "
                "its call was abandoned"
            ) from None
        except (Exception, SystemExit, KeyboardInterrupt) as exc:
            raise self._failed(exc) from None
        return read_answer(reply, self.target)

    def _failed(self, exc: BaseException) -> SystemFailed:
        if isinstance(exc, SystemExit):
            what = f"called sys.exit({exc.code!r})"
        else:
            name, text = type(exc).__name__, first_line(exc)
            what = f"raised {name}" + (f": {text}" if text != name else "")
        return SystemFailed(f"{self.target} {what}", detail=user_traceback(exc))

    async def _call(self, case: Case, kwargs: dict[str, Any]) -> Any:
        obj = self.obj
        if (ainvoke := _method(obj, "ainvoke")) is not None:
            return await ainvoke({"question": case.question, **kwargs})
        if (invoke := _method(obj, "invoke")) is not None:
            return await in_thread(invoke, {"question": case.question, **kwargs})
        if (aquery := _method(obj, "aquery")) is not None:
            return await aquery(case.question)
        if (query := _method(obj, "query")) is not None:
            return await in_thread(query, case.question)
        if _takes(obj, "case_id"):
            kwargs["case_id"] = case.id
        if _is_async(obj):
            return await obj(case.question, **kwargs)
        reply = await in_thread(obj, case.question, **kwargs)
        return await reply if inspect.isawaitable(reply) else reply


async def in_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in a daemon thread of its own. A call that never returns is
    abandoned when its awaiting is cancelled (the deadline) and never holds the process at
    exit, as a thread of asyncio's pool would: the interpreter waits for those."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():  # abandoned
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def work() -> None:
        try:
            outcome: tuple[Any, BaseException | None] = (fn(*args, **kwargs), None)
        except BaseException as exc:  # sys.exit and KeyboardInterrupt too: the case's error
            outcome = (None, exc)
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=work, name="ragexp-system-target", daemon=True).start()
    return await future


_MACHINERY = (
    str(Path(__file__).parent.parent) + os.sep,  # ragexp's package
    str(Path(asyncio.__file__).parent) + os.sep,
    str(Path(concurrent.futures.__file__).parent) + os.sep,
    threading.__file__,
)
"""Where ragexp's frames and the thread pool's between ragexp and the user's code are."""


def user_traceback(exc: BaseException) -> str:
    """``exc`` as Python prints it (its chained exceptions too), without the frames of ragexp
    and of the asyncio and thread machinery between ragexp and the user's code: what the user's
    code did, ending with the exception's type and message."""
    shown = traceback.TracebackException.from_exception(exc)
    frames = [frame for frame in shown.stack if not frame.filename.startswith(_MACHINERY)]
    shown.stack = traceback.StackSummary.from_list(frames)
    return "".join(shown.format()).rstrip("\n")


RUNNABLE_METHODS = ("ainvoke", "invoke", "aquery", "query")
"""What a LangChain runnable or a LlamaIndex query engine answers with: given its options in one
mapping (or none), so their names are not checked against a signature."""
_KEYWORD = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def call_parameters(obj: Any) -> list[inspect.Parameter] | None:
    """The parameters ragexp calls ``obj`` (a function, a class's instances, an object) with;
    None when they cannot be told: a runnable or query engine, ``**kwargs``, no signature."""
    if any(callable(getattr(obj, name, None)) for name in RUNNABLE_METHODS):
        return None
    try:
        if inspect.isclass(obj):  # its instances are called: __call__ without self
            params = list(inspect.signature(obj.__call__).parameters.values())[1:]
        else:
            params = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return params


def option_problem(obj: Any, target: str, options: Collection[str]) -> str | None:
    """The line saying which of ``options`` (``system.options`` keys) ``obj`` cannot accept as a
    keyword, with what it does accept and the closest name; None when it accepts them all or
    its parameters cannot be told (`call_parameters`)."""
    params = call_parameters(obj) if options else None
    if params is None:
        return None
    positional = [p for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    question = positional[0].name if positional else ""
    passed = (question, "case_id")  # given by ragexp itself
    accepted = [p.name for p in params if p.kind in _KEYWORD and p.name not in passed]
    unknown = [name for name in options if name not in accepted]
    if not unknown:
        return None
    name = unknown[0]
    hint = difflib.get_close_matches(name, accepted, n=1)
    takes = f"its options are {', '.join(accepted)}" if accepted else "it takes no option"
    return (
        f"system.options.{name}: {target} has no parameter '{name}' ({takes}; it is called as "
        f"{target.rpartition(':')[2]}{describe_signature(obj)})"
        + (f"; did you mean 'system.options.{hint[0]}'?" if hint else "; remove the option")
    )


def describe_signature(obj: Any) -> str:
    """``obj``'s call signature as text, without annotations, e.g. ``(question, top_k=4)`` (""
    when it has none)."""
    try:
        if inspect.isclass(obj):
            params = list(inspect.signature(obj.__call__).parameters.values())[1:]
        else:
            params = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return ""
    bare = [p.replace(annotation=inspect.Parameter.empty) for p in params]  # names and defaults
    return str(inspect.Signature(bare))


def describe_target(obj: Any) -> str:
    """What ``obj`` is, as ``ragexp doctor`` says it: a function, a class, a runnable, a query
    engine, with its call signature."""
    if inspect.isclass(obj):
        return f"a class, its instances called as {describe_signature(obj)}"
    if _method(obj, "ainvoke", "invoke") is not None:
        return f"a runnable ({type(obj).__name__}, given {{question, **options}})"
    if _method(obj, "aquery", "query") is not None:
        return f"a query engine ({type(obj).__name__}, given the question)"
    kind = "an async function" if _is_async(obj) else "a function"
    if not inspect.isfunction(obj) and not inspect.ismethod(obj):
        kind = f"a callable {type(obj).__name__}"
    return f"{kind} {describe_signature(obj)}"


def _method(obj: Any, *names: str) -> Callable[..., Any] | None:
    for name in names:
        method: Callable[..., Any] | None = getattr(obj, name, None)
        if callable(method) and not inspect.isclass(obj):
            return method
    return None


def _is_async(obj: Any) -> bool:
    return inspect.iscoroutinefunction(obj) or inspect.iscoroutinefunction(
        getattr(obj, "__call__", None)  # noqa: B004 - an instance's async __call__
    )


def _takes(obj: Any, name: str) -> bool:
    try:
        return name in inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return False


def check_jobs(configs: Sequence[SystemConfig]) -> None:
    """Before a sweep's first job: each target (imported once, never built) takes every option
    its jobs give it; raises `ConfigError` (`option_problem`) otherwise."""
    wanted: dict[str, list[str]] = {}
    for config in configs:
        if config.target is not None:
            names = wanted.setdefault(config.target, [])
            names += [name for name in config.options if name not in names]
    for target, options in wanted.items():
        problem = option_problem(load_target(target), target, options)
        if problem is not None:
            raise ConfigError(problem)


def build(config: SystemConfig, context: SystemContext) -> PythonSystem:
    return PythonSystem(config)
