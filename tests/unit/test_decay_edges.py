"""Decay and frequency at a skewed clock (core/scoring.py): a time in the future never
makes a memory more salient or more often used than it is."""

from __future__ import annotations

from datetime import timedelta

from reverie.core import Memory, Policy
from reverie.core.models import Kind, Tier
from reverie.core.scoring import accesses_in_window, decay_value
from tests.unit.conftest import T0


def test_a_negative_age_is_no_growth() -> None:
    p = Policy()
    # S(t) = S0 * exp(-lambda * max(0, t)): at t = -3 days, S0 itself
    assert decay_value(0.5, Kind.EPISODIC, -3.0, p) == 0.5
    assert decay_value(0.5, Kind.EPISODIC, 0.0, p) == 0.5
    # one half-life (14 days for an episodic memory of ordinary importance) halves it
    assert abs(decay_value(0.5, Kind.EPISODIC, 14.0, p) - 0.25) < 1e-12


def test_accesses_stamped_after_now_are_not_counted() -> None:
    p = Policy()
    m = Memory(
        id="m",
        namespace="default",
        kind=Kind.EPISODIC,
        tier=Tier.TRACE,
        text="a note",
        created_at=T0,
        recent_accesses=(T0, T0 + timedelta(days=1), T0 + timedelta(days=40)),
    )
    now = T0 + timedelta(days=2)
    # T0 and T0 + 1 d are within the 30-day window before now; T0 + 40 d is after now
    assert accesses_in_window(m, now, p) == 2
    # an access at exactly now counts
    assert accesses_in_window(m, T0 + timedelta(days=1), p) == 2
