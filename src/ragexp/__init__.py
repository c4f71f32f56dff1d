"""ragexp: is this RAG configuration better than that one?

The public API for plugin authors and embedding applications; docs/architecture.md maps the
package.
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragexp.api import *  # noqa: F403
    from ragexp.api import __all__ as __all__


def __getattr__(name: str) -> Any:
    """A public name (`ragexp.api`), imported on first use and kept; a subpackage by its own import
    (``from ragexp import hookspecs`` asks here first: it does not load the whole API)."""
    if (
        "." not in name
        and not name.startswith("__")
        and find_spec(f"{__name__}.{name}") is not None
    ):
        return import_module(f"{__name__}.{name}")
    api = import_module("ragexp.api")  # not `from ragexp import api`: that asks this function
    if name == "__all__" or name in api.__all__:
        value = getattr(api, name)
    elif name in globals():  # a subpackage the API's import loaded
        value = globals()[name]
    else:
        raise AttributeError(f"module 'ragexp' has no attribute {name!r}")
    globals()[name] = value
    return value
