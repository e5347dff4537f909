"""Token-budget packing pinned case by case.

The budget is a promise made by the LangChain memory, the LlamaIndex block and
``recall --budget``: a pack never exceeds it, counts the newline that joins hits, and skips a
hit that does not fit instead of stopping there. A fixed counter (one token per word) makes
every kept id and every token used exact, so an off-by-one or a dropped joiner changes a
pinned number rather than slipping under a loose "within budget" check.
"""

from __future__ import annotations

import pytest

from reverie.core.packing import pack

TEXTS = {
    "a": "alpha",
    "b": "beta gamma",
    "c": "delta epsilon zeta",
    "long": "one two three four five six seven eight nine ten",
    "s1": "short",
    "s2": "tiny",
    "s3": "small",
}


def words(text: str) -> int:
    return len(text.split())


def render(item: str) -> str:
    return TEXTS[item]


# Each kept hit costs its words plus one token for the newline that joins it to the pack.
CASES = [
    # (items in rank order, budget, kept ids, tokens used)
    pytest.param([], 10, [], 0, id="nothing-to-pack"),
    pytest.param(["a"], 0, [], 0, id="zero-budget"),
    pytest.param(["a"], 1, [], 0, id="word-fits-but-joiner-does-not"),
    pytest.param(["a"], 2, ["a"], 2, id="exactly-at-budget-one-hit"),
    pytest.param(["c"], 3, [], 0, id="one-below-budget"),
    pytest.param(["c"], 4, ["c"], 4, id="exactly-at-budget-three-words"),
    pytest.param(["a", "b", "c"], 9, ["a", "b", "c"], 9, id="exactly-at-budget-all"),
    pytest.param(["a", "b", "c"], 8, ["a", "b"], 5, id="last-misses-by-one"),
    pytest.param(["a", "b", "c"], 100, ["a", "b", "c"], 9, id="ample-budget"),
    pytest.param(["s1", "s2", "s3"], 5, ["s1", "s2"], 4, id="joiner-counted-per-hit"),
    pytest.param(["s1", "s2", "s3"], 6, ["s1", "s2", "s3"], 6, id="joiners-exactly-fit"),
    pytest.param(["long", "s1", "s2"], 5, ["s1", "s2"], 4, id="long-first-is-skipped"),
    pytest.param(["s1", "long", "s2", "s3"], 6, ["s1", "s2", "s3"], 6, id="long-middle-skipped"),
    pytest.param(["c", "long", "a"], 6, ["c", "a"], 6, id="skip-then-exact-fit"),
    pytest.param(["long", "s1"], 11, ["long"], 11, id="long-exactly-fits-then-full"),
    pytest.param(["long", "s1"], 13, ["long", "s1"], 13, id="long-and-short-exactly"),
    pytest.param(["c", "b", "a"], 5, ["c"], 4, id="rank-order-not-best-fit"),
]


@pytest.mark.parametrize(("items", "budget", "kept", "used"), CASES)
def test_pack_keeps_exactly(items: list[str], budget: int, kept: list[str], used: int) -> None:
    got, tokens = pack(items, budget, render, words)
    assert (got, tokens) == (kept, used)
    assert tokens <= budget


def test_pack_tokens_equal_the_joined_text_plus_trailing_newline() -> None:
    """The tokens reported are what the caller pastes: hits joined by newlines, and the
    count is the text's words plus one per hit, never less than what is kept."""
    items = ["s1", "long", "b", "a", "c"]
    for budget in range(0, 25):
        got, tokens = pack(items, budget, render, words)
        assert tokens == sum(words(render(i)) for i in got) + len(got)
        assert tokens <= budget
        # Greedy skip: any item left out would not have fitted at the point it was met.
        used = 0
        for item in items:
            cost = words(render(item)) + 1
            if item in got:
                used += cost
            else:
                assert used + cost > budget, (budget, item)


def test_pack_renders_with_the_given_renderer() -> None:
    seen: list[str] = []

    def count(text: str) -> int:
        seen.append(text)
        return words(text)

    pack(["a", "b"], 10, render, count)
    assert seen == ["alpha", "beta gamma"]
