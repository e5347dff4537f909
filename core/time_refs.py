"""The calendar period a question names ("on 7 July, 2023", "in December 2023", "during
2022"), read without an LLM, so recall can prefer what was observed then.

A memory's time is when it was observed, and a question about a dated event rarely
shares a word with the turn that told it: the turn says "yesterday", the question says
"on 7 July, 2023". Only dates with a year are read: "in May" alone may be any May, and
"may" and "march" are also verbs. A question naming several periods names the span from
the first to the last.
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

__all__ = ["MONTHS", "MONTH_PATTERN", "Period", "named_period"]

# every name of a month (full and abbreviated) and its number; `core/text.py` reads dates
# with the same names
MONTHS = {
    name: n
    for n, names in enumerate(
        (
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
            ("december", "dec"),
        ),
        1,
    )
    for name in names
}
MONTH_PATTERN = "(?:" + "|".join(sorted(MONTHS, key=len, reverse=True)) + ")"
_DAY = r"(?P<{0}>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<{0}>(?:19|20)\d\d)"
_PATTERNS = (
    # 7 July 2023, 7th of July, 2023
    re.compile(
        rf"\b{_DAY.format('d')}\s+(?:of\s+)?(?P<m>{MONTH_PATTERN})\.?,?\s+"
        rf"{_YEAR.format('y')}\b",
        re.I,
    ),
    # July 7, 2023
    re.compile(
        rf"\b(?P<m>{MONTH_PATTERN})\.?\s+{_DAY.format('d')},?\s+{_YEAR.format('y')}\b", re.I
    ),
    # July 2023, July of 2023
    re.compile(rf"\b(?P<m>{MONTH_PATTERN})\.?,?\s+(?:of\s+)?{_YEAR.format('y')}\b", re.I),
    # in 2023, during 2023, of 2023
    re.compile(rf"\b(?:in|during|of|throughout)\s+{_YEAR.format('y')}\b", re.I),
)


class Period(NamedTuple):
    """[start, end): the days, month or year a question names, in UTC."""

    start: datetime
    end: datetime

    def widened(self, min_slack: timedelta, fraction: float) -> Period:
        """The period with slack on both sides: `fraction` of its length, at least
        `min_slack` (an event is often told a few days after it, a plan before)."""
        slack = max(min_slack, (self.end - self.start) * fraction)
        return Period(self.start - slack, self.end + slack)


def _day(year: int, month: int, day: int) -> Period | None:
    if not 1 <= day <= calendar.monthrange(year, month)[1]:
        return None
    start = datetime(year, month, day, tzinfo=UTC)
    return Period(start, start + timedelta(days=1))


def _month(year: int, month: int) -> Period:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return Period(start, end)


def _year(year: int) -> Period:
    return Period(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))


def named_period(text: str) -> Period | None:
    """The span of every calendar date with a year that `text` names, or None. A date
    is read once, by its most precise form (a day before a month before a year)."""
    found: list[Period] = []
    taken: list[tuple[int, int]] = []
    for n, pattern in enumerate(_PATTERNS):
        for m in pattern.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue  # already read by a more precise form
            year = int(m["y"])
            if n < 2:
                period = _day(year, MONTHS[m["m"].lower()], int(m["d"]))
            elif n == 2:
                period = _month(year, MONTHS[m["m"].lower()])
            else:
                period = _year(year)
            if period is not None:
                found.append(period)
                taken.append(m.span())
    if not found:
        return None
    return Period(min(p.start for p in found), max(p.end for p in found))
