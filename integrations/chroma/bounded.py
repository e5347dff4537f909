"""Embedded Chroma behind a deadline: every method call on the client and on the
collections it returns runs through `deadline.Bounded`, so no call into embedded Chroma
outlasts `Policy.deadlines.index_call_seconds` (see `integrations/deadline.py` for why
it can block). Attributes that are plain data (a collection's `id`, `name`, `metadata`)
are read directly: they are already in memory."""

from __future__ import annotations

import functools
from typing import Any

from reverie.integrations.deadline import Bounded

__all__ = ["BoundedClient"]


class _Proxy:
    __slots__ = ("_bounded", "_target")

    def __init__(self, target: Any, bounded: Bounded) -> None:
        self._target = target
        self._bounded = bounded

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value):
            return value
        bounded = self._bounded

        @functools.wraps(value)
        def call(*args: Any, **kwargs: Any) -> Any:
            result = bounded.call(functools.partial(value, *args, **kwargs))
            return _wrap(result, bounded)

        return call


class BoundedClient(_Proxy):
    """A chromadb client whose calls (and its collections' calls) have a deadline."""

    __slots__ = ()

    @property
    def bounded(self) -> Bounded:
        return self._bounded


class _BoundedCollection(_Proxy):
    __slots__ = ()


def _wrap(result: Any, bounded: Bounded) -> Any:
    from chromadb.api.models.Collection import Collection

    if isinstance(result, Collection):
        return _BoundedCollection(result, bounded)
    return result
