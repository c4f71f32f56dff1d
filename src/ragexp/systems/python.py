"""``system=python system.target=module:attr``: the user's own code, imported with the run's
working directory on ``sys.path``. The target is

- a function, sync (run in a thread) or async, called as ``f(question, **system.options)``
  (and ``case_id=`` too when it takes a parameter of that name);
- a class: built once per run with no arguments, its instance then called as a function;
- an object with ``ainvoke``/``invoke`` (a LangChain runnable): given
  ``{"question": question, **system.options}``;
- an object with ``aquery``/``query`` (a LlamaIndex query engine): given the question alone.

What it returns is read by `ragexp.systems.shapes`. When it raises, the case's error is the
exception's first line, and its ``error_detail`` the traceback of the user's code
(`user_traceback`). Its answers are cached under the target and
the SHA-256 of its module's source (plus ``system.version`` and the options), so editing the
module asks it again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import importlib
import inspect
import os
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
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


def build(config: SystemConfig, context: SystemContext) -> PythonSystem:
    return PythonSystem(config)
