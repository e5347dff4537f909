"""Id lists as every store takes them: deduplicated in the caller's order, and cut into
pieces a single statement or command can carry (each store picks the size)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from reverie.core.errors import InvalidInput

__all__ = ["chunks", "unique"]


def chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def unique(ids: Iterable[str]) -> list[str]:
    if isinstance(ids, str):  # a lone id would otherwise be iterated character by character
        raise InvalidInput("pass a list of ids, not a single string")
    return list(dict.fromkeys(ids))
