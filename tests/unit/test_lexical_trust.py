"""How far a question's lexical half is trusted: by the cosine of its nearest strong lexical
match. Numbers by hand from the default policy (dense_weight 0.5, lexical_floor 1.0,
lexical_trust_low 0.2, lexical_trust_high 0.35)."""

from __future__ import annotations

import pytest

from reverie.core import Policy
from reverie.core.errors import InvalidPolicy
from reverie.core.ports import LexicalHit, VectorHit
from reverie.core.retrieval import fuse, fused_trust, lexical_trust, strong_lexical

P = Policy()


@pytest.mark.parametrize(
    ("cosine", "trust"),
    [
        (0.0, 0.0),
        (0.1, 0.0),
        (0.2, 0.0),  # the low end: nothing kept
        (0.23, 0.2),  # (0.23 - 0.2) / (0.35 - 0.2)
        (0.275, 0.5),
        (0.35, 1.0),  # the high end: all of it
        (0.9, 1.0),
    ],
)
def test_trust_grows_linearly_between_the_two_cosines(cosine: float, trust: float) -> None:
    assert lexical_trust({"a": 1.0}, {"a": cosine}, P) == pytest.approx(trust)


def test_the_nearest_strong_match_decides_and_weak_matches_do_not_count() -> None:
    lexical = {"far": 1.0, "near": 0.5, "weak": 0.49}
    # "weak" is near the question but below half the best BM25: not a strong match
    assert lexical_trust(lexical, {"far": 0.05, "near": 0.275, "weak": 0.9}, P) == (
        pytest.approx(0.5)
    )
    assert lexical_trust(lexical, {"far": 0.05, "near": 0.1, "weak": 0.9}, P) == 0.0


def test_an_unknown_cosine_or_no_strong_match_keeps_the_lexical_half() -> None:
    # a strong match whose cosine recall did not read is no evidence against the channel
    assert lexical_trust({"far": 1.0, "unread": 0.8}, {"far": 0.0}, P) == 1.0
    # every match weak (BM25 under the floor): weak already, nothing to judge
    assert lexical_trust({"a": 0.3, "b": 0.1}, {"a": 0.0, "b": 0.0}, P) == 1.0
    assert lexical_trust({}, {}, P) == 1.0


def test_zero_and_zero_turn_it_off() -> None:
    off = P.replace(lexical_trust_low=0.0, lexical_trust_high=0.0)
    assert lexical_trust({"a": 1.0}, {"a": 0.0}, off) == 1.0


def test_bounds_out_of_order_are_refused() -> None:
    with pytest.raises(InvalidPolicy, match="lexical_trust_low must not exceed"):
        P.replace(lexical_trust_low=0.4, lexical_trust_high=0.3)


def test_fuse_scales_every_lexical_term_by_the_trust() -> None:
    # best BM25 4.0 -> "stem" 1.0, "other" 0.5 (both strong); nearest strong cosine 0.275
    lexical = [LexicalHit("stem", 4.0), LexicalHit("other", 2.0), LexicalHit("faint", 0.4)]
    dense = [VectorHit("answer", 0.44), VectorHit("other", 0.275)]
    got = fuse(dense, lexical, P, extra_similarity={"stem": 0.05, "faint": 0.3})
    assert strong_lexical(lexical, P) == ["stem", "other"]
    assert got["stem"].lexical == pytest.approx(0.5 * 1.0)
    assert got["stem"].relevance == pytest.approx(0.5 * 0.05 + 0.5 * 0.5)
    assert got["other"].relevance == pytest.approx(0.5 * 0.275 + 0.5 * 0.5 * 0.5)
    assert got["faint"].relevance == pytest.approx(0.5 * 0.3 + 0.5 * 0.5 * 0.1)
    assert got["answer"].relevance == pytest.approx(0.5 * 0.44)
    # the same share, for the explanation
    assert fused_trust(dense, lexical, P, {"stem": 0.05, "faint": 0.3}) == pytest.approx(0.5)
    # with the strong matches far from the question, only the cosines are left
    far = fuse(dense[:1], lexical, P, extra_similarity={"stem": 0.05, "other": 0.1})
    assert {c.lexical for c in far.values()} == {0.0}
    assert far["answer"].relevance > far["stem"].relevance
    assert fused_trust(dense[:1], lexical, P, {"stem": 0.05, "other": 0.1}) == 0.0
    # a trust computed once for the recall is taken as given
    given = fuse(dense[:1], lexical, P, {"stem": 0.05, "other": 0.1}, trust=1.0)
    assert given["stem"].lexical == 1.0 and given["other"].lexical == 0.5
