"""Packing recalled memories into a prompt's token budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def pack(
    items: Sequence[T], budget: int, render: Callable[[T], str], count: Callable[[str], int]
) -> tuple[list[T], int]:
    """Greedy in rank order: keep each item that still fits, so one long memory does not
    push out every shorter, lower-ranked one. Returns the kept items and their tokens."""
    kept: list[T] = []
    used = 0
    for item in items:
        n = count(render(item)) + 1  # +1 for the newline that joins them
        if used + n <= budget:
            kept.append(item)
            used += n
    return kept, used
