"""Time is a parameter: the engine asks a `Clock`, tests and simulations move one by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def utc(ts: datetime) -> datetime:
    """Naive datetimes are taken as UTC; aware ones are converted. One time zone inside."""
    if ts.tzinfo is None:
        return ts.replace(tzinfo=UTC)
    return ts.astimezone(UTC)


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that only moves when told: simulations of weeks run in milliseconds."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = utc(start) if start else datetime(2025, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self._now

    def set(self, when: datetime) -> None:
        self._now = utc(when)

    def advance(self, *, days: float = 0, hours: float = 0, seconds: float = 0) -> datetime:
        self._now += timedelta(days=days, hours=hours, seconds=seconds)
        return self._now
