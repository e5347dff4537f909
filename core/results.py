"""What recall returns: ranked hits with their explanations, and how a hit reads in a prompt."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .models import Memory
from .retrieval import Explanation


@dataclass(frozen=True, slots=True)
class Hit:
    memory: Memory
    score: float
    explanation: Explanation

    @property
    def id(self) -> str:
        return self.memory.id

    @property
    def text(self) -> str:
        return self.memory.text

    @property
    def sources(self) -> frozenset[str]:
        return self.memory.sources


@dataclass(frozen=True, slots=True)
class RecallResult:
    """Ranked hits, best first; `text()` renders them for a prompt."""

    query: str
    hits: tuple[Hit, ...]
    tokens: int | None = None  # tokens used when packed into a budget

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    def __getitem__(self, i: int) -> Hit:
        return self.hits[i]

    @property
    def memories(self) -> list[Memory]:
        return [h.memory for h in self.hits]

    def text(self) -> str:
        return "\n".join(render_hit(h) for h in self.hits)


def render_hit(hit: Hit) -> str:
    return f"- [{hit.memory.created_at:%Y-%m-%d}] {hit.memory.text}"
