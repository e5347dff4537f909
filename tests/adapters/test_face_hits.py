"""The faces' fast hit conversion (adapters/hits.py) gives exactly the values the plain
calls give: `Explanation.as_dict()`, `Enum.value`, `datetime.isoformat()`."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from reverie.adapters.hits import KIND, STATUS, TIER, explanation_dict, iso
from reverie.core.models import Kind, Status, Tier
from reverie.core.retrieval import Explanation, shown

scores = st.floats(min_value=-2.0, max_value=2.0, allow_nan=False)


@given(
    final=scores, relevance=scores, dense=scores, lexical=scores, decay=scores,
    importance=scores, context=scores, tier=st.sampled_from(list(Tier)),
    hops=st.integers(0, 5), via=st.none() | st.text(max_size=8),
    note=st.none() | st.text(max_size=20), speaker=scores,
)  # fmt: skip
def test_explanation_dict_is_as_dict(
    final: float, relevance: float, dense: float, lexical: float, decay: float,
    importance: float, context: float, tier: Tier, hops: int, via: str | None,
    note: str | None, speaker: float,
) -> None:  # fmt: skip
    e = Explanation(final, relevance, dense, lexical, decay, importance, tier, hops, via,
                    context, note, speaker)  # fmt: skip
    got = explanation_dict(e)
    assert got == e.as_dict()
    assert list(got) == list(e.as_dict())  # same key order in the JSON a user sees


def test_enum_tables_and_iso() -> None:
    assert {k: k.value for k in Kind} == KIND and len(KIND) == 3
    assert {t: t.value for t in Tier} == TIER and len(TIER) == 4
    assert {s: s.value for s in Status} == STATUS and len(STATUS) == 4
    moment = datetime(2025, 3, 3, 9, 0, 0, 123456, tzinfo=UTC)
    assert iso(moment) == "2025-03-03T09:00:00.123456+00:00"
    assert iso(moment) == moment.isoformat()  # a cached answer is the same text
    # equal instants in different zones are equal datetimes: their text must still differ
    lisbon = moment.astimezone(timezone(timedelta(hours=1)))
    assert lisbon == moment
    assert iso(lisbon) == "2025-03-03T10:00:00.123456+01:00"


def test_shown_rounds_to_four_decimals() -> None:
    assert shown(0.123456) == 0.1235
    assert shown(0.12344) == 0.1234
    assert shown(-0.98766) == -0.9877
    assert shown(0.0) == 0.0
    assert shown(1e20) == 1e20  # too large for the arithmetic: unchanged
    assert math.isnan(shown(math.nan))


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
def test_shown_is_round_to_four_decimals_but_at_a_tie(x: float) -> None:
    got, exact = shown(x), round(x, 4)
    assert abs(got - exact) <= 1e-4 * (1 + 1e-9) + 1e-9 * abs(x)
    if abs(x * 1e4 - math.floor(x * 1e4) - 0.5) > 1e-6:  # not near a tie: the very same
        assert got == exact


def test_the_cli_explanation_shows_what_a_named_speaker_added() -> None:
    from datetime import datetime

    from rich.console import Console

    from reverie.adapters.cli.render import explanation_panel
    from reverie.core import Policy
    from reverie.core.models import Memory
    from reverie.core.results import Hit

    m = Memory(id="m", namespace="default", kind=Kind.EPISODIC, tier=Tier.TRACE,
               text="Melanie: We went camping at the lake.",
               created_at=datetime(2025, 1, 1, tzinfo=UTC))
    shown_text = []
    for speaker in (0.0, 0.2562):
        e = Explanation(0.6156, 0.3, 0.3, 0.3, 0.6, 0.3, Tier.TRACE, 0, speaker=speaker)
        console = Console(record=True, width=300)
        console.print(explanation_panel(Hit(m, e.final, e), Policy()))
        shown_text.append(console.export_text())
    assert "named" not in shown_text[0]
    assert "+ 0.256 as said by someone the question names (0.4 of the way to 1)" in shown_text[1]
