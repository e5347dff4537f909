"""Lazy public exports for the framework faces, so a face package imports without its extra.

`from reverie.adapters.langchain import ReverieRetriever` loads the submodule (and LangChain)
only when the name is first used; a missing extra then raises `MissingExtra`, which names
the extra to install, instead of failing at `import reverie.adapters.langchain`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module `__getattr__` and `__dir__` for `package`, where `exports` maps each public
    name to the submodule (relative to `package`) that defines it."""

    def __getattr__(name: str) -> Any:
        submodule = exports.get(name)
        if submodule is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{submodule}"), name)

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__
