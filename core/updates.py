"""Free-text update detection: is a new trace a newer version of an earlier one?

An agent tells reverie that a fact changed in plain words ("we finally moved to Lisbon",
"the deadline was extended to May 20", or, a few turns after "About my pay.", just
"Raised to $118,000"). No LLM runs on the write path, so the judgement is made from cheap
signals, each recorded so a user can see why a memory was retired or marked outdated:

- similarity: the cosine of the two texts' embeddings (the write path has both already);
- context: the best cosine of the turns said just before the new one (same namespace,
  within a few minutes) to the earlier trace, since an elliptical update names its
  subject there and not in itself;
- new value: the new text states a value the earlier one does not hold (a number, an
  amount, a time, a date, a version, a colour, a name), or, for values that are plain
  words ("keto", "by bus"), content words of its own;
- same type: the values that differ are of one type on both sides (a city for a city,
  an amount for an amount), the strongest sign that one replaces the other;
- cue: change words ("no longer", "moved to", "from now on", "raised to"): one signal among
  several, never enough alone;
- contrast: each text qualifies a shared word differently ("marketing budget" and
  "travel budget", "my sister lives" and "my brother lives"): two look-alike facts, not
  two versions of one, so no link at all.

Who spoke matters too: an assistant's words never retire anything (they echo, advise and
say "actually" for politeness), and an assistant's words are not linked as versions.

The verdict is one of three: no link, "outdates" (the older memory stays current but
ranks below the newer one at recall) or "supersedes" (the older one is retired, and
`as_of` still finds it). Thresholds live in `Policy.updates`.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .policy import Policy
from .text import STOP_WORDS, porter_stem, speaker_name, strip_speaker

# Speaker prefixes and metadata roles that mark an assistant's words.
_ASSISTANT_NAMES = frozenset(["assistant", "ai", "bot", "system", "model", "tool", "agent"])
ROLE_KEYS = ("role", "speaker", "type")  # metadata keys that may name who spoke


def speaker_of(text: str, metadata: Mapping[str, Any] | None = None) -> str | None:
    """Who said this, where the turn tells: the metadata's role, else a speaker prefix
    ("Caroline: ", "Human: "), lower-cased; the assistant's names are one speaker."""
    for key in ROLE_KEYS:
        role = (metadata or {}).get(key)
        if isinstance(role, str) and role.strip():
            name = role.strip().casefold()
            return "assistant" if name in _ASSISTANT_NAMES else name
    said = speaker_name(text)
    return "assistant" if said in _ASSISTANT_NAMES else said


def is_assistant(text: str, metadata: Mapping[str, Any] | None = None) -> bool:
    """Did an assistant (or the system, or a tool) say this? Read from the metadata's
    role, as the LlamaIndex block records it, else from a speaker prefix ("AI: ",
    "assistant: ") as the LangChain memory and most chat logs write it."""
    return speaker_of(text, metadata) == "assistant"


class _Folded:
    """A case-insensitive pattern that, on ASCII text, runs case-sensitively over the
    lower-cased text: the same matches at the same places (lower-casing ASCII changes no
    length), for about half the cost, since IGNORECASE folds case at every step of every
    alternative. Other text gets the case-insensitive pattern itself (Unicode folds "ſ"
    to "s" and "K" (Kelvin) to "k", which lower-casing does not).

    `hints`: lower-case strings of which every match holds at least one. Lower-cased
    text that holds none of them cannot match, and is told so by a few substring tests
    instead of the pattern, which tries each of its alternatives at every position: most
    chat turns hold no change word, and the change-word pattern cost a seventh of
    reading a turn."""

    def __init__(self, pattern: str, hints: Sequence[str] = ()) -> None:
        if any(c.isupper() for c in re.sub(r"\\.", "", pattern)):
            raise ValueError("a folded pattern is written in lower case")
        if any(h != h.lower() or not h for h in hints):
            raise ValueError("a hint is a non-empty lower-case string")
        self.any_case = re.compile(pattern, re.IGNORECASE)
        self._lower = re.compile(pattern)
        self.hints = tuple(hints)

    def _hinted(self, low: str) -> bool:
        return not self.hints or any(h in low for h in self.hints)

    def search(
        self, text: str, low: str | None, endpos: int = sys.maxsize
    ) -> re.Match[str] | None:
        """`low`: the text lower-cased when it is ASCII, else None; `endpos` as for
        `re.Pattern.search` (the text read as if it ended there)."""
        if low is not None:
            if not self._hinted(low):
                return None
            return self._lower.search(low, 0, endpos)
        return self.any_case.search(text, 0, endpos)

    def finditer(self, text: str, low: str | None) -> Iterator[re.Match[str]]:
        if low is not None:
            return self._lower.finditer(low) if self._hinted(low) else iter(())
        return self.any_case.finditer(text)


def _ascii_lower(text: str) -> str | None:
    return text.lower() if text.isascii() else None


# A word of a value as written: "$1,500", "3.10", "4:30", "gluten-free", "Dr."
_TOKEN = r"[\w$£€](?:[\w.,:'/-]*\w)?\.?"
# Change words. Incidental uses ("color correction", "instead of Wi-Fi") are why a cue is
# one signal among several and never sufficient.
CUE = _Folded(
    r"(?:^|[.!?;,:]\s*|\b(?:oh|sorry|no|wait|well),?\s+)actually\b|"  # not "I've actually"
    r"\b(?:no longer|not anymore|isn'?t .{1,40}? any ?more|"
    r"(?:switched|changed|moved|upgraded|raised|increased|extended|rescheduled)"
    r"(?: \w+){0,3} (?:to|for)|"
    r"(?:downgraded|decreased|lowered|shortened|adjusted|improved|reduced|bumped|pushed|"
    r"updated|went up|went down|traded it in|relocated|migrated|transferred|postponed|"
    r"delayed|cut|dropped|swapped(?: \w+){0,2}) (?:to|for)|"
    r"now it'?s|(?:it'?s|is|are) now|from now on|"
    r"these days|new (?:[\w'-]+ ){0,3}(?:is|are)|my new [\w'-]+ is|our new [\w'-]+ is|"
    r"i was wrong|scratch that|sorry,? (?:actually|i meant)|got changed|has changed|"
    r"have changed|went with|for the record|just so you know|heads up|make that|"
    r"going forward|as of (?:now|today)|fyi)\b"
    # "It's (a double espresso) now.", "It's (Python 3.10) now.", "Down to ($1,200) now.":
    # a value's own punctuation stays inside its word
    rf"|\b(?:it'?s|is|are) {_TOKEN}(?: {_TOKEN}){{0,2}} now[.!]?$"
    rf"|^(?:{_TOKEN} ){{1,3}}(?<!for )now[.!]?$",  # "Going by tram now.", not "Bye for now!"
    # words of every alternative, as specific as it allows: a "now" of a change stands
    # after a space or opens "now it's", while "know" and "snow" hold one too
    hints=(
        "actually", "no longer", "anymore", "any more", "switched", "changed", "moved",
        "upgraded", "raised", "increased", "extended", "rescheduled", "downgraded",
        "decreased", "lowered", "shortened", "adjusted", "improved", "reduced", "bumped",
        "pushed", "updated", "went ", "traded", "relocated", "migrated", "transferred",
        "postponed", "delayed", "cut ", "dropped", "swapped", "now it", " now",
        "these days", "new ", "i was wrong", "scratch that", "i meant", "the record",
        "so you know", "heads up", "make that", "going forward", "as of", "fyi",
    ),
)

# Change words that say outright that a value was replaced; "actually" or "for the record"
# only announce. With one of these, two texts that qualify a shared word apart ("oat milk",
# then "switched to almond milk") are versions of one thing, not look-alikes.
STRONG_CUE = _Folded(
    r"\b(?:no longer|not anymore|any ?more|switched|changed|moved|from now on|instead of|"
    r"replaced|went with|upgraded|traded it in|relocated|migrated|swapped)\b"
)

# up to 40 characters of one clause ("Dr." and "$1,640" end none)
_SPAN = r"(?:(?:dr|mr|mrs|ms|prof|st|mt)\.\s+|\d[.,](?=\d)|[^.;,!?]){1,40}?"
_TITLES = frozenset(["dr", "mr", "mrs", "ms", "prof", "st", "mt"])
# A change that names the value it replaced, to negate it: "my course is no longer
# Dutch", "my diet isn't Mediterranean anymore", "switched from the bus to", "switched to
# Catan instead of Monopoly". The older text it updates holds that value.
_NEGATED = _Folded(
    rf"\bno longer (?:(?:is|are|be|a|an|the)\s+)*({_SPAN})"
    r"(?=\s*(?:[.;,!?]|$)|\s+(?:now|but|and|since|as)\b)"
    rf"|\b(?:isn'?t|aren'?t|is not|are not)\s+({_SPAN})\s+any ?more\b"
    r"|\b(?:switched|changed|moved|upgraded|swapped|migrated|relocated)\s+from\s+"
    rf"({_SPAN})\s+to\b"
    rf"|\binstead of\s+({_SPAN})(?=\s*(?:[.;,!?]|$)|\s+(?:now|but|and)\b)",
    hints=("no longer", "more", "from", "instead of"),
)

# A past event ("the bowl I made was chipped", "we had a mocha") happens again with other
# values; a restated value without a change word is a new version only in the present.
_PAST = _Folded(r"\b(?:was|were|had|did)\b", hints=("was", "were", "had", "did"))

STATE = _Folded(
    r"\b(?:favou?rite|prefer(?:red|ence)?|usual(?:ly)?|current(?:ly)?)\b",
    hints=("favo", "prefer", "usual", "current"),
)
# A request to the assistant asks as a question does, and states no value of its own
# ("Tell me a fun fact about volcanoes.", "I need a gift idea for my sister.").
_REQUEST = _Folded(
    r"^(?:(?:please|hey|ok(?:ay)?|so),?\s+)?(?:(?:tell|give|show|help|teach) me|explain|"
    r"suggest|recommend|(?:can|could|would|will) you)\b"
    r"|^i(?: need| want| could use|[’']d like| would like) (?:a|an|some|any)\b.{0,40}?\b"
    r"(?:ideas?|tips?|advice|suggestions?|recommendations?)\b"
)

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DAYS = ("mon", "tues", "wednes", "thurs", "fri", "satur", "sun")
_WEEKDAY = rf"(?:{'|'.join(_DAYS)})day"
# A when that repeats ("every evening", "on Tuesdays", "weekday mornings", "daily"): a
# schedule, which one when replaces, where a one-off's day and hour are two parts of it
_RECURRING = _Folded(
    rf"\b(?:every|each|daily|weekly|nightly)\b|\b{_WEEKDAY}s\b|\bweek(?:day|end)s\b|"
    r"\b(?:mornings|afternoons|evenings|nights|lunchtimes)\b",
    hints=("every", "each", "daily", "weekly", "nightly", "days", "weekends", "mornings",
           "afternoons", "evenings", "nights", "lunchtimes"),
)
_COLOURS = (
    "red|orange|yellow|green|blue|purple|violet|indigo|pink|brown|black|white|grey|gray|"
    "beige|tan|cyan|khaki|cream|magenta|silver|gold|teal|navy|maroon|olive|turquoise|"
    "lavender|crimson|amber|coral|lilac|mint|burgundy|charcoal"
)


class _Words:
    """Matches whole ASCII words of a set, as `\b(?:w1|w2|...)\b` with IGNORECASE would,
    at a fraction of its cost: that alternation is tried at every position of a text.
    On lower-cased ASCII text, a text with none of the words (most) makes no match
    object at all."""

    _WORD = re.compile(r"\b[A-Za-z]+\b")

    def __init__(self, words: frozenset[str]) -> None:
        self.words = words

    def finditer(self, text: str, low: str | None) -> Iterator[re.Match[str]]:
        if low is None:
            return (m for m in self._WORD.finditer(text) if m.group(0).lower() in self.words)
        if self.words.isdisjoint(self._WORD.findall(low)):
            return iter(())
        return (m for m in self._WORD.finditer(low) if m.group(0) in self.words)


_DIGITS = tuple("0123456789")  # the hint of a pattern that needs a digit

# Typed values, most specific first: a span claimed by one type is masked for the rest.
_VALUE_TYPES: tuple[tuple[str, _Folded | _Words], ...] = (
    ("money", _Folded(r"[$€£¥]\s?\d[\d,]*(?:\.\d+)?\s?[km]?\b|\b\d[\d,]*(?:\.\d+)?\s?"
                      r"(?:dollars|euros|pounds|usd|eur|gbp)\b",
                      hints=("$", "dollar", "eur", "pound", "usd", "gbp"))),
    ("time", _Folded(r"\b\d{1,2}(?::\d{2})?\s?(?:am|pm)\b|\b\d{1,2}:\d{2}\b|\bnoon\b|"
                     r"\bmidnight\b|"
                     # an hour after "at" that ends the clause or a time phrase ("every
                     # evening at 7.", "at 7 on Tuesdays"): "7 o'clock" said short
                     r"(?<=\bat )\d{1,2}\b(?![.,:]?\d)(?=\s*(?:[.,;!?)]|$|(?:on|every|each|"
                     r"sharp|tonight|today|tomorrow|before|after|for|with|in the)\b))|"
                     r"\b\d{1,2} o'clock\b",
                     hints=(":", "am", "pm", "noon", "midnight", "at ", "o'clock"))),
    ("daypart", _Folded(r"\b(?:mornings?|afternoons?|evenings?|nights?|lunchtimes?)\b",
                        hints=("morning", "afternoon", "evening", "night", "lunchtime"))),
    ("date", _Folded(rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}/\d{{1,2}}(?:/\d{{2,4}})?\b|"
                     rf"\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b|"
                     rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b|\b{_WEEKDAY}s?\b|"
                     rf"\bweek(?:day|end)s?\b",
                     hints=("day", "week", *_DIGITS))),  # a weekday ends in "day"
    ("version", _Folded(r"\bv?\d+\.\d+(?:\.\d+)*\b", hints=(".",))),
    ("number", _Folded(r"\b\d[\d,]*(?:\.\d+)?\b")),
    ("colour", _Words(frozenset(_COLOURS.split("|")))),
)
# The value types that never match a text without a digit (but "noon" and "midnight").
_DIGIT_TYPES = frozenset(["money", "time", "version", "number"])
_WORD_TIMES = _Folded(r"\b(?:noon|midnight)\b", hints=("noon", "midnight"))
_DIGIT = re.compile(r"\d")
# A part of the day qualifies more often than it states ("every morning", "my morning
# coffee", "game night"): masked as a value, never the value that changed.
_WEAK_TYPES = frozenset(["daypart"])
# A colour describes more often than it is the fact ("a flat white", "green tea", "my red
# Tesla"): an older text's colour left unnamed by a change is no sign that the change
# speaks of something else. A colour for a colour is still a value replaced.
_DESCRIBING = _WEAK_TYPES | {"colour"}
# The types that say when: a schedule's days and hours are one value (`_replaced_type`)
_WHEN = ("date", "time")
_WEEKDAYS = frozenset(f"{d}day" for d in _DAYS)
_TITLE = r"(?:Dr|Mr|Mrs|Ms|Prof|St|Mt)\.?"
# A name starts with a capital, or with one lower-case letter before one ("iPhone 15",
# "eBay"), which no sentence start explains.
_NAME = re.compile(rf"\b(?:{_TITLE}\s+)?(?:[A-Z]|[a-z](?=[A-Z]))[\w'&-]*(?:\s+[A-Z0-9][\w'&-]*)*")
_VOCATIVE_BEFORE = _Folded(
    r"\b(?:hey|hi|hello|thanks|thank you|wow|congrats|yeah|oh|aw+|ha+|bye|dear),?\s*$"
)
_SENTENCE_START = re.compile(r"(?:^|[.!?;:]\s+|\(\s*|\"\s*)$")
_WORD = re.compile(r"[a-z][a-z'-]*")
# Words that carry the change or the chat, not the attribute or its value.
_NOISE_WORDS = frozenset(
    """
    actually now new old no longer anymore any more still currently today recently
    just really also oh ok okay so well heads up fyi btw sorry update changed change
    switched moved got get gets going went finally instead things thing it's its isn't
    is'nt s t there's that's i'm i've we're we've i'd we'd know mean meant said says
    say upgraded downgraded increased decreased raised lowered extended shortened
    rescheduled adjusted improved reduced bumped pushed dropped updated traded replaced
    record us until till about
    """.split()  # noqa: SIM905
)


@functools.lru_cache(maxsize=65536)
def _stem(w: str) -> str:
    """Porter's stem, with a final "i" read as the "y" it came from: Porter turns "y"
    into "i" before a suffix is dropped but not after, so "employed" and "employ" stem to
    "emploi" while "employer" stems to "employ"; here all three are one word."""
    s = porter_stem(w.strip("'-"))
    return s[:-1] + "y" if s.endswith("i") and len(s) > 2 else s


# The words `CUE` tells a change with, stemmed as content words are: inside a change
# phrase they say how something changed, not what changed.
_CUE_VOCABULARY = frozenset(
    _stem(w) for w in """
    actually longer anymore switched changed moved upgraded raised increased extended
    rescheduled downgraded decreased lowered shortened adjusted improved reduced bumped
    pushed updated went traded relocated migrated transferred postponed delayed cut
    dropped swapped now days new wrong scratch meant record know heads make going forward
    fyi
    """.split()  # noqa: SIM905
)


@dataclass(frozen=True, slots=True)
class Reading:
    """What the update signals need from one text, computed once per text."""

    values: Mapping[str, frozenset[str]]  # type -> normalised values
    words: frozenset[str]  # stemmed content words, values and noise removed
    sequence: tuple[str, ...]  # the lower-cased words in order (for contrast)
    cue: bool
    question: bool  # a question asks, it states no value
    speaker: str | None = None  # "caroline" for "Caroline: ...", lower-cased
    strong_cue: bool = False
    state: bool = False  # speaks of a preference or a standing state ("my favourite ...")
    subject: frozenset[str] = frozenset()  # content words before the first value
    past: bool = False  # told as a past event ("was chipped", "had a mocha")
    # numbers that name which one of a kind ("project 7", "day 3"): word -> numbers
    labels: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # content words of its change phrase ("make" of "make that", "day" of "these
    # days"): how the change is told, not what it is about
    cue_words: frozenset[str] = frozenset()
    # the runs of `sequence` between its typed values (`_qualifiers` reads them)
    phrases: tuple[tuple[str, ...], ...] = ()
    # its subject is the user's own named thing ("my car is ...", "our flat is ..."):
    # it says itself what it is about
    owned: bool = False
    # the words of the value a change names to negate it ("no longer Dutch", "isn't
    # Mediterranean anymore", "instead of Monopoly"), as written and stemmed
    negated: frozenset[str] = frozenset()
    # ...and whether that value is a typed one (a name, a time, an amount)
    negated_typed: bool = False
    # it states a when that repeats (`_RECURRING`, or two weekdays or more): a schedule
    recurring: bool = False
    # the content words right after its first "my" or "our" ("commut" of "my commute is
    # by tram now"): the thing of the user's it speaks of, with or without a typed value
    possessed: frozenset[str] = frozenset()


# A number right after a word that is neither a verb's complement nor a preposition
# ("project 7", "note 22", "day 3", "room 12") names which one of a kind a text speaks of;
# another number after the same word is another one of that kind, not a new value.
_LABEL = _Folded(
    r"\b([a-z][a-z'-]+)\s+#?(\d+)\b(?![.,]\d|\s?(?:%|am\b|pm\b))", hints=_DIGITS
)


_MONTH_WORD = re.compile(_MONTH)


def _labels(body: str, low: str | None) -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for m in _LABEL.finditer(body, low):
        word = m.group(1).casefold()
        if (
            word in STOP_WORDS or word in _NOISE_WORDS or word in _NOT_LABELS
            or _MONTH_WORD.fullmatch(word)
        ):
            continue  # "May 20" is a date (a value), not the 20th of a kind
        out.setdefault(word, set()).add(m.group(2))
    return {w: frozenset(v) for w, v in out.items()}


# Words after which a number is a value, not a label ("earn 5000", "costs 40").
_NOT_LABELS = frozenset(
    """
    earn earns earned make makes made cost costs pay pays paid weigh weighs weighed
    run ran runs walk walked swim swam drive drove lift lifted score scored sleep slept
    bench squat read save saved spend spent owe owes charge charges charged rent rents
    about around roughly approximately nearly almost over under only exactly least most
    than plus minus times
    """.split()  # noqa: SIM905
)


def _label_contrast(new: Reading, old: Reading) -> str | None:
    """The same word labelled by other numbers in the two texts ('project 7' /
    'project 22'): two of a kind, not two versions of one."""
    for word, nums in new.labels.items():
        had = old.labels.get(word)
        if had and not nums & had:
            return f"{word} {'/'.join(sorted(had))}/{'/'.join(sorted(nums))}"
    return None


@functools.lru_cache(maxsize=16_384)
def reading(text: str) -> Reading:
    """`read`, remembered per text: recall compares the same hits query after query, and
    the version search reads the same earlier texts for each newer one."""
    return read(text)


def forget_cached_texts() -> None:
    """Drop every text this module remembers for speed (readings, word sequences), after
    a forget: no forgotten text stays in the process. They refill as texts are read."""
    for cached in (reading, _about, _qualifiers, _predicate):
        cached.cache_clear()


def asks(text: str) -> bool:
    """Does the text ask (a question, or a request to the assistant), as `read` tells it?"""
    body = strip_speaker(text)
    return _asks(body, _ascii_lower(body))


def _asks(body: str, lower: str | None) -> bool:
    return body.rstrip().endswith("?") or _REQUEST.search(body, lower) is not None


def read(text: str) -> Reading:
    """The values, content words and cue of one text (speaker prefix dropped)."""
    body = strip_speaker(text)
    lower = _ascii_lower(body)  # the case-insensitive patterns' fast way (`_Folded`)
    masked = body
    values: dict[str, set[str]] = {}
    first = len(body)  # where the first value starts: the words before it are the subject
    digits = _DIGIT.search(body) is not None
    masked_lower = lower  # `masked` lower-cased, blanked along with it
    cuts: list[tuple[int, int]] = []  # every typed value's span
    for kind, pattern in _VALUE_TYPES:
        if kind in _DIGIT_TYPES and not digits and not (
            kind == "time" and _WORD_TIMES.search(masked, masked_lower)
        ):
            continue  # most chat turns hold no digit: four patterns fewer to run
        spans = []
        for m in pattern.finditer(masked, masked_lower):
            value = _norm_value(m.group(0))
            if kind in ("time", "date"):  # "mornings" and "morning", "Tuesdays" and "Tuesday"
                value = value.removesuffix("s")
            values.setdefault(kind, set()).add(value)
            first = min(first, m.start())
            spans.append(m.span())
        if spans:  # masked for the types after it, keeping positions
            cuts.extend(spans)
            masked = _blank(masked, spans)
            masked_lower = None if masked_lower is None else _blank(masked_lower, spans)
    named: list[tuple[int, int]] = []  # where the names are (masked for the content words)
    for m in _NAME.finditer(masked):
        if (
            _VOCATIVE_BEFORE.search(masked, masked_lower, m.start())
            or masked[m.end() : m.end() + 1] == "!"
        ):
            continue  # "Thanks, Mel!", "Hey Gina": who is spoken to, not a value
        start = m.start()
        if m.group(0)[0].isupper() and _SENTENCE_START.search(masked, 0, m.start()):
            # a sentence's first word is capitalised anyway; keep the rest of the run
            rest = m.group(0).split(None, 1)
            if len(rest) < 2:
                continue
            name = rest[1]
            start = m.end() - len(name)
        else:
            name = m.group(0)
        parts = _norm_value(name).split()
        while parts and parts[0] in STOP_WORDS:  # "The National" is "national"
            parts = parts[1:]
        if parts:
            values.setdefault("name", set()).add(" ".join(parts))
            first = min(first, start)
            named.append((start, m.end()))
    low = masked.casefold()
    seq = _words(low)

    def content(ws: Sequence[str]) -> frozenset[str]:
        return frozenset(
            _stem(w) for w in ws
            if w not in STOP_WORDS and w not in _NOISE_WORDS and len(w) > 1
        )

    # the subject: the words before the first value, less the word just before it (the
    # verb or preposition that introduces the value: "my dentist [is] Dr. Okafor")
    lead = _words(low[:first]) if first < len(body) else ()
    if lead and lead[-1] in _NAMING:
        # "a golden retriever named Bailey": the kind before the participle is part of
        # the value, not of the subject ("our family pet [is]")
        cut = len(lead) - 1
        while cut > 0 and lead[cut - 1] not in STOP_WORDS:
            cut -= 1
        lead = lead[:cut]
    told = CUE.search(body, lower)
    cue = told is not None
    negated, negated_typed = _negated(body, lower, values) if cue else (frozenset(), False)
    return Reading(
        {k: frozenset(v) for k, v in values.items()},
        # a name's words are no content words where the name stands, and are elsewhere:
        # "The phone I use is a Nothing Phone" speaks of a phone
        content(_words(_blank(low, named)) if named else seq), seq, cue,
        _asks(body, lower),
        speaker_name(text),
        cue and STRONG_CUE.search(body, lower) is not None,
        STATE.search(body, lower) is not None,
        content(lead[:-1]), _PAST.search(body, lower) is not None, _labels(body, lower),
        content(_words(told.group(0).casefold())) & _CUE_VOCABULARY if told else frozenset(),
        _phrases(low, cuts) if cuts else (seq,),
        _owned(lead[:-1]),
        negated,
        negated_typed,
        _RECURRING.search(body, lower) is not None
        or len(values.get("date", set()) & _WEEKDAYS) >= 2,
        _possessed(seq),
    )


def _negated(
    body: str, lower: str | None, values: Mapping[str, set[str]]
) -> tuple[frozenset[str], bool]:
    """The words of the values a change names to negate them (`_NEGATED`), as written
    and stemmed, and whether one of them is a typed value."""
    spans = [
        next(g for g in m.groups() if g is not None)
        for m in _NEGATED.finditer(body, lower)
    ]
    if not spans:
        return frozenset(), False
    said = [_norm_value(x) for x in spans]
    words = frozenset(
        w.strip(".") for x in said for w in x.split()
        if w not in STOP_WORDS and w not in _NOISE_WORDS and w.strip(".") not in _TITLES
    )
    # a typed value said inside the negation: "Dr. Patel", "Friday at 8:15"
    typed = any(
        v in x for vals in values.values() for v in (_norm_value(y) for y in vals)
        for x in said
    )
    return words | {_stem(w) for w in words}, typed


def _holds(r: Reading, words: frozenset[str]) -> bool:
    """Does a text state any of `words` (a negated value's): as a content word, or in one
    of its values?"""
    if words & r.words:
        return True
    return any(
        w.strip(".") in words or _stem(w) in words
        for vals in r.values.values() for v in vals for w in v.split()
    )


_POSSESSIVE = frozenset({"my", "our"})
# participles that introduce a name, after the kind of thing it names
_NAMING = frozenset({"named", "called"})
# words after "my" that name no thing of the user's: "my new one is ...", "my pick is ..."
_NO_THING = frozenset({"one", "ones", "pick", "choice", "answer", "vote", "decision"})


def _owned(lead: Sequence[str]) -> bool:
    """Does a possessive stand before a word that names the thing ("FYI my car is")?"""
    for i, w in enumerate(lead):
        if w in _POSSESSIVE:
            rest = [x for x in lead[i + 1 :] if x not in STOP_WORDS and x not in _NOISE_WORDS]
            return bool(rest) and not any(x in _NO_THING for x in rest)
    return False


def _same_possession(new: Reading, old: Reading) -> bool:
    """Do both name one thing of the user's ("my usual", "my usual coffee order")?"""
    a, b = new.possessed, old.possessed
    return bool(a and b) and (a <= b or b <= a)


def _possessed(seq: Sequence[str]) -> frozenset[str]:
    """The run of content words after the first possessive, up to a stop or change word
    ("my usual coffee order is ...", "my diet changed, ...")."""
    for i, w in enumerate(seq):
        if w in _POSSESSIVE:
            run: list[str] = []
            for x in seq[i + 1 :]:
                if x in _NOISE_WORDS and not run:  # "my new manager"
                    continue
                if x in STOP_WORDS or x in _NOISE_WORDS:
                    break
                run.append(x)
            if any(x in _NO_THING for x in run):
                return frozenset()
            return frozenset(_stem(x) for x in run if len(x) > 1)
    return frozenset()


def _phrases(low: str, cuts: list[tuple[int, int]]) -> tuple[tuple[str, ...], ...]:
    """The runs of words between the typed values: "booked 3 interviews" holds no
    "booked interviews", so no word across a value qualifies the word after it. A name
    stays in its run: "our Berlin office" and "our Madrid office" are two offices."""
    out: list[tuple[str, ...]] = []
    at = 0
    for start, end in sorted(cuts):
        if start > at:
            out.append(_words(low[at:start]))
        at = max(at, end)
    out.append(_words(low[at:]))
    return tuple(ws for ws in out if ws)


def _blank(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """`text` with each span replaced by spaces, so every other position stays put."""
    for a, b in spans:
        text = text[:a] + " " * (b - a) + text[b:]
    return text


def _words(text: str) -> tuple[str, ...]:
    return tuple(w.strip("'-") for w in _WORD.findall(text))


def _without_names(r: Reading, participants: frozenset[str]) -> Reading:
    names = r.values.get("name")
    if not names:
        return r
    kept = frozenset(
        n for n in names if not any(p.startswith(n.split()[0]) for p in participants)
    )
    if len(kept) == len(names):  # the usual case: no copy of the reading
        return r
    values = {k: v for k, v in r.values.items() if k != "name"}
    if kept:
        values["name"] = kept
    return dataclasses.replace(r, values=values)


UPDATE_KEY = "reverie_update"  # metadata of a newer version: which memory, and why


def may_update(r: Reading, policy: Policy) -> bool:
    """Could this text be a newer version of anything on its own words (before any
    earlier text is looked up)? A change word, a preference, or a short statement that
    states a typed value; a question or a long chat turn states no replacement."""
    if r.question or len(r.sequence) > policy.updates.max_words:
        return False
    return r.cue or r.state or bool(r.values)


def introduces(turn: Reading, policy: Policy) -> bool:
    """Can this turn name the subject of the elliptical update after it? An intro ("About
    my pay.", "You know the car I was complaining about?", "Travel update for Boston.")
    states no value of its own: a turn that states a number, date or time, or names
    something in a longer sentence ("My GP is Dr. Nguyen"), is a fact of its own."""
    if any(kind != "name" for kind in turn.values):
        return False
    return "name" not in turn.values or len(turn.sequence) <= policy.updates.intro_words


def _norm_value(s: str) -> str:
    return " ".join(re.sub(r"[^\w:.$€£¥ ]", " ", s.casefold().replace(",", "")).split())


class Verdict(StrEnum):
    NONE = "none"
    OUTDATES = "outdates"  # the older stays current, ranked below the newer
    SUPERSEDES = "supersedes"  # the older is retired


@dataclass(frozen=True, slots=True)
class Signals:
    """Why a new trace was (or was not) judged a newer version of an earlier one."""

    similarity: float
    context: float
    new_value: bool
    same_type: str | None  # the value type that changed on both sides, if any
    cue: bool
    contrast: str | None  # "marketing/travel" when the texts qualify a shared word apart
    score: float
    verdict: Verdict = Verdict.NONE
    shared: tuple[str, ...] = field(default=())  # content words both speak of
    # the retired version these signals were read on, when the link goes to the version
    # that replaced it (the fact's current one)
    through: str | None = None
    # the intro turn whose subject an elliptical update borrowed ("About the prod
    # runtime." before "Rolled out Python 3.14."): recall reaches the update through it
    intro: str | None = None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "verdict": self.verdict.value,
            "score": round(self.score, 4),
            "similarity": round(self.similarity, 4),
            "context": round(self.context, 4),
            "new_value": self.new_value,
            "same_type": self.same_type,
            "cue": self.cue,
            "contrast": self.contrast,
            "shared": list(self.shared),
        }
        if self.through is not None:
            out["through"] = self.through
        if self.intro is not None:
            out["intro"] = self.intro
        return out


# People a fact may be about: "my sister lives in Porto" is not a version of "my brother
# lives in Lisbon", nor "my wife drives a Mazda" of "I drive a Tesla".
_PEOPLE = frozenset(
    """
    i me my we our mom mum mother dad father parents sister brother sibling wife husband
    partner girlfriend boyfriend son daughter kid kids child children baby aunt uncle
    cousin niece nephew grandma grandpa grandmother grandfather friend roommate colleague
    coworker neighbour neighbor
    """.split()  # noqa: SIM905
)
_SELF = frozenset(["i", "me", "my", "we", "our"])
# A text with one of these speaks of the speaker ("I live in Berlin with my partner"),
# whoever else it names; without, of the person it names ("my wife drives a Mazda").
_SELF_SUBJECT = frozenset(["i", "we", "i'm", "we're", "i've", "we've", "i'd", "we'd"])


@functools.lru_cache(maxsize=16_384)
def _about(seq: tuple[str, ...]) -> frozenset[str]:
    """Who a text speaks of: the people it names, unless the speaker is its subject.
    Remembered per text: recall compares the same hits pairwise, query after query."""
    people = _people(seq) - _SELF
    if not people or _SELF_SUBJECT & set(seq):
        return frozenset(["self"])
    return people


def same_people(a: Reading, b: Reading) -> bool:
    """Do two texts speak of one person (`_about`)? An intro about the neighbour's pay
    names no subject for the speaker's own "Raised to $65,000." after it."""
    return bool(_about(a.sequence) & _about(b.sequence))


def _people(seq: Sequence[str]) -> frozenset[str]:
    return frozenset(w.removesuffix("'s") for w in seq if w.removesuffix("'s") in _PEOPLE)


def _contrast(new: Reading, old: Reading, replaced: bool = False) -> str | None:
    """A shared content word that each text qualifies with a word of its own: 'marketing
    budget' / 'travel budget'; or each speaks of someone the other does not ('my sister'
    / 'my brother'). Two look-alike facts, not two versions of one; a qualifier that an
    outright change word replaced (`replaced`) is a value, not a contrast."""
    who_new, who_old = _about(new.sequence), _about(old.sequence)
    if not who_new & who_old:
        return f"{'/'.join(sorted(who_old))}/{'/'.join(sorted(who_new))}"
    if replaced:  # "switched to almond milk": the qualifier is the value that changed
        return None
    new_set, old_set = set(new.sequence), set(old.sequence)
    # a qualifier is no difference when the other text holds a word of its sense
    # anywhere: "I always order" qualifies the order as "my usual coffee order" does
    new_sense = {_SENSE.get(w, w) for w in new_set}
    old_sense = {_SENSE.get(w, w) for w in old_set}
    before_new = _qualifiers(new.phrases)
    before_old = _qualifiers(old.phrases)
    # a word both texts qualify after their verb "to be" is the value's ("my usual order
    # is an oat latte", "my morning coffee is a chai latte"): its qualifier is the value
    # that changed, not another thing
    valued = _predicate(new.sequence) & _predicate(old.sequence)
    for head, q_new in before_new.items():
        q_old = before_old.get(head)
        if q_old is None or head in valued:
            continue
        for a in q_new:
            for b in q_old:
                if (
                    _SENSE.get(a, a) not in old_sense and _SENSE.get(b, b) not in new_sense
                ):
                    return f"{b}/{a} {head}"
    return None


_COPULA = frozenset(["is", "are", "was", "were", "it's", "that's"])


@functools.lru_cache(maxsize=16_384)
def _predicate(seq: tuple[str, ...]) -> frozenset[str]:
    """The words after a text's first form of "to be" (`_COPULA`: "is", "are", "was",
    "were", "it's", "that's"): what it says its subject is."""
    for n, w in enumerate(seq):
        if w in _COPULA:
            return frozenset(seq[n + 1 :])
    return frozenset()


# Qualifiers that say the same thing in other words: "my yearly pay" is "my annual pay",
# "my usual order" is what "I always order". Only words of one sense, never two of a
# kind ("monthly" and "annual" budgets are two budgets).
_SENSE = {
    "yearly": "annual", "annually": "annual",
    "always": "usual", "usually": "usual", "normally": "usual", "typically": "usual",
    "regular": "usual", "regularly": "usual", "normal": "usual", "typical": "usual",
    "everyday": "daily",
    "favorite": "favourite", "fave": "favourite", "preferred": "favourite",
}


def _names_qualify(old: Reading, shared: Sequence[str]) -> bool:
    """Is each name of the older text one word that stands right beside a word both texts
    hold ("a Mediterranean diet", "eating Mediterranean")? It then tells which kind of
    that thing, as a plain word would: a value a plain-word change may replace."""
    names = old.values.get("name", frozenset())
    if not names or not shared or any(" " in n for n in names):
        return False
    seq = old.sequence
    for name in names:
        at = [i for i, w in enumerate(seq) if w == name]
        if not any(
            _stem(seq[j]) in shared for i in at for j in (i - 1, i + 1) if 0 <= j < len(seq)
        ):
            return False
    return True


def _subject_contrast(new: Reading, old: Reading) -> str | None:
    """Each text names, before its value, a subject the other does not ('my dentist is
    Dr. Okafor' / 'my dermatologist is Dr. Nguyen'): two facts unless a change word says
    one replaced the other."""
    if new.subject and old.subject and not new.subject & old.subject:
        return f"{'/'.join(sorted(old.subject))}/{'/'.join(sorted(new.subject))}"
    return None


@functools.lru_cache(maxsize=16_384)
def _qualifiers(phrases: tuple[tuple[str, ...], ...]) -> Mapping[str, frozenset[str]]:
    """Content word -> the content words right before it ('travel' before 'budget'),
    within one run of words between values. A participle ('a corgi named Biscuit') is
    no head: what precedes it is a value. Remembered per text, like `_about`."""
    out: dict[str, set[str]] = {}
    pairs = itertools.chain.from_iterable(itertools.pairwise(seq) for seq in phrases)
    for prev, word in pairs:
        if (
            word in STOP_WORDS or prev in STOP_WORDS or word in _NOISE_WORDS
            or prev in _NOISE_WORDS or len(prev) < 3 or len(word) < 3
            or (word.endswith("ed") and len(word) > 4)
        ):
            continue
        out.setdefault(word, set()).add(prev)
    return {w: frozenset(before) for w, before in out.items()}


_AMOUNT = re.compile(r"\d+(?:\.\d+)?")


@functools.lru_cache(maxsize=16_384)
def _amount(value: str) -> float | None:
    m = _AMOUNT.search(value.replace(",", ""))
    if m is None:
        return None
    x = float(m.group(0))
    if re.search(r"\d\s?k\b", value):
        x *= 1e3
    elif re.search(r"\d\s?m\b", value):
        x *= 1e6
    return x


def _comparable(kind: str, new: frozenset[str], old: frozenset[str], ratio: float) -> bool:
    """Amounts or counts an order of magnitude apart are two quantities ("$1,350 a
    month" rent and a "$95,000" salary), not one that changed."""
    if kind not in ("money", "number"):
        return True
    a = [x for x in map(_amount, new) if x]
    b = [x for x in map(_amount, old) if x]
    if not a or not b:
        return True
    return any(max(x, y) / min(x, y) <= ratio for x in a for y in b)


def _replaced_type(new: Reading, old: Reading, policy: Policy) -> str | None:
    """The value type the new text replaces: a value of a type the old text states too,
    none of whose values the new one repeats (a city for a city), or, after a word that
    says a value was replaced, one it does not ("no longer Friday at 8:15; it's Sunday
    at 9:20" names the old value to negate it). Days and times are one kind of value, a
    when, where both repeat: "every evening at 7" replaces "Monday, Wednesday and Friday"
    as a schedule, while "at 10 AM" tells the hour of "an appointment on Friday"."""
    for k, vals in new.values.items():
        had = old.values.get(k)
        if k in _WEAK_TYPES or not had or not vals - had:
            continue
        if (new.strong_cue or not vals & had) and _comparable(
            k, vals - had, had, policy.updates.max_value_ratio
        ):
            return k
    if _both_schedules(new, old):
        when_new = [k for k in _WHEN if k in new.values]
        said = frozenset().union(*(new.values[k] for k in when_new))
        had = frozenset().union(*(old.values.get(k, frozenset()) for k in _WHEN))
        if not said & had:
            return when_new[0]
    return None


def _both_schedules(new: Reading, old: Reading) -> bool:
    """Do both texts state a when that repeats (a day or an hour of a schedule)?"""
    return (
        new.recurring and old.recurring
        and any(k in new.values for k in _WHEN) and any(k in old.values for k in _WHEN)
    )


def shares_a_type(new: Reading, old: Reading) -> bool:
    """Do both texts state a value of one type (not a weak one; a day and a time are one
    kind, a when)? Without, no value of the older text can have been replaced
    (`_replaced_type`): a cheap test before the signals."""
    return any(
        k not in _WEAK_TYPES and k in old.values for k in new.values
    ) or _both_schedules(new, old)


def answers_alike(
    new: Reading, old: Reading, asked: frozenset[str], policy: Policy, loose: bool = False
) -> str | None:
    """At recall, two hits that answer one question with two values: the newer is a
    newer version of the answer, though it may not name the subject at all ("See you at
    9:45 on Tuesday for the design sync" after "Our design sync is at 2:30 on Tuesdays").
    The question names what both speak of, so the write path's need for a change word
    or a near text is not asked here; what makes two facts only look alike still rules a
    link out: other people, a shared word qualified apart, a numbered one of a kind, the
    same named thing again, or a subject the question names that the newer text lacks
    while naming one the older text lacks, in words otherwise the older text's ("Who is
    my dentist?" and "My dermatologist is ..." after "My dentist is ...").
    A value is typed (a city for a city), or plain words ("keto", "by bus") when both
    texts hold a word of the question; with `loose`, without that word (the caller
    has other evidence: a change word, texts near each other and the question). `asked`
    holds the question's content words (`read(question).words`). Returns the value type
    ("words" for plain words) or None."""
    p = policy.updates
    if new.question or old.question:
        return None
    if len(new.sequence) > p.max_words or len(old.sequence) > p.max_words:
        return None
    if new.speaker is not None and old.speaker is not None and new.speaker != old.speaker:
        return None
    kind = _replaced_type(new, old, policy)
    if kind is None:
        # plain-word values: both speak of a word of the question, each has words of its own
        if not ((loose or asked & new.words & old.words) and new.words - old.words
                and old.words - new.words):
            return None
        again = new.values.get("name", frozenset()) & old.values.get("name", frozenset())
        if again and new.negated and _holds(old, new.negated):
            again = frozenset()  # "isn't Mediterranean anymore": named to be negated
        if again or any(k not in _DESCRIBING for k in old.values if k not in new.values):
            return None  # the same named thing again, or a typed value left unreplaced
        kind = "words"
    if _contrast(new, old, new.strong_cue) is not None:
        return None
    if not new.strong_cue and _label_contrast(new, old) is not None:
        return None
    # the subject the newer text names is its own only when the older text lacks it
    # ("my flight to Boston" names the flight "the Boston flight I'm booked on" spoke
    # of), and it is another subject only when it is all that differs: "My dermatologist
    # is Dr. Brennan" is "My dentist is Dr. Cohen" with another subject, while "the
    # company I work for is Initech" and "Negotiated hard and landed $104,000" tell,
    # in words of their own, of the employer and the pay the question names
    named = asked & old.subject
    if (
        named and new.subject - old.words and not named & new.words
        and new.words - old.words <= new.subject and old.words - new.words <= old.subject
    ):
        return None
    return kind


def judge(
    new: Reading,
    old: Reading,
    similarity: float,
    context: float,
    policy: Policy,
    participants: frozenset[str] = frozenset(),
) -> Signals:
    """The signals for "new is a newer version of old", and the verdict they reach."""
    p = policy.updates
    if new.speaker is not None and old.speaker is not None and new.speaker != old.speaker:
        # one speaker's words are not a newer version of another's
        return Signals(similarity, context, False, None, new.cue, "speaker", 0.0)
    if participants:  # "Thanks, Mel!": a name of who is talking is no value
        new, old = _without_names(new, participants), _without_names(old, participants)
    fresh_types = [
        kind for kind, vals in new.values.items() if vals - old.values.get(kind, frozenset())
    ]
    same_type = _replaced_type(new, old, policy)
    own_words = new.words - old.words
    asks = new.question or old.question  # a question states no value to replace
    # A change is told in a short statement; a long chat turn mixes several things, and
    # its change words and names come by the way ("I've been wanting to switch to ...").
    short = len(new.sequence) <= p.max_words
    old_short = len(old.sequence) <= p.max_words
    # a word of either text's change phrase is shared by how both tell a change, not by
    # what they speak of ("Make that an oat latte." and "making omelette for dinner")
    shared = tuple(sorted((new.words & old.words) - new.cue_words - old.cue_words))
    # A preference restated with another plain-word value ("My favourite food is falafel"
    # after "From now on, my favourite food is dumplings"): a standing state holds one
    # value at a time, so the two are versions when they name it in the same words.
    preference = (
        same_type is None and new.state and old.state and not (new.past or old.past)
        and old_short and similarity >= p.typed_similarity
        and len(shared) >= 2 and bool(old.words - new.words)
    )
    new_value = short and not asks and (
        bool(fresh_types) or (bool(own_words) and (new.cue or preference))
    )
    contrast = _contrast(new, old, new.strong_cue)
    if contrast is None and not new.strong_cue:
        contrast = _label_contrast(new, old)
    # The turns before count only for an update that does not name its subject itself,
    # and only for a typed value replaced by one of its type: an intro's words lend a
    # subject, and the value says which of the subjects near it ("About my pay." then
    # "Raised to $65,000." is a new amount, not a new anything).
    # A plain-word value ("It's paleo now.") counts too when a change word says it is
    # one: the intro named the subject, the cue says its value changed.
    # A typed value it names ("I switched to Dr. Okafor") replaces one of its type, so an
    # older text that states none is no earlier version, however near the turn before.
    # The intro counts when it is near the older text at all, even when the update's own
    # words are nearer still: "It's at 11:15 AM now." after "The design meeting, one more
    # thing." is the meeting's time, though a flight's time reads more like it.
    # A preference or standing state told in its own words ("actually my favourite food
    # is ramen now") names what it is about, however few its words: it borrows no
    # subject from the turn before ("I'm thinking of making banana bread for dinner.").
    typed = any(k not in _WEAK_TYPES for k in new.values)
    elliptical = (
        len(new.words) <= p.elliptical_words and context >= p.min_similarity
        and not new.state
        and len(old.sequence) <= p.max_words
        and len(new.subject) <= p.elliptical_subject_words
        and len(new.sequence) <= p.elliptical_max_words
        and (same_type is not None or (new.cue and not typed))
        # an update that names its own thing ("FYI my car is a Nissan Leaf", "my commute
        # is by tram now") borrows no subject for an older text that does not speak of
        # that thing
        and not (new.owned and not new.subject <= old.words)
        and not (new.possessed and not new.possessed & old.words)
    )
    base = max(similarity, context if elliptical else 0.0)
    score = (
        base
        + (p.same_type_bonus if same_type else 0.0)
        + (p.cue_bonus if new.cue else 0.0)
        + (p.strong_cue_bonus if new.strong_cue else 0.0)
        + p.shared_word_bonus * min(len(shared), 3)
        + (p.possessed_bonus if _same_possession(new, old) else 0.0)
    )
    # A value restated in other words ("my salary is $88,000" after "I earn $72,000"),
    # with no change word and no intro turn: evidence only when the two name one
    # subject, since look-alikes ("my dentist is ...", "my dermatologist is ...") differ
    # exactly there.
    # Without a change word the older text must be a statement too: a long chat turn
    # mixes several things, and one of its names is no value the new text replaces.
    restated = (
        same_type is not None and similarity >= p.typed_similarity and old_short
        and not (new.past or old.past)
        and not (elliptical and context >= p.min_similarity)
    )
    if restated and not new.cue and contrast is None:
        contrast = _subject_contrast(new, old)
    # An untyped change that names the old text's own names again, with no word that
    # negates the old value, speaks of the same named thing, not of a new value of it
    # ("Actually, the Dune movie was better than I expected").
    # A change that names the value it negates ("isn't Mediterranean anymore") speaks of
    # the older text that holds that value. One that holds another value is an earlier
    # version only when both name one subject ("my employer isn't Pied Piper anymore"
    # after "I'm employed by Hooli": a version between them went unsaid); "switched to
    # Catan instead of Monopoly" is no newer version of "my language course is Japanese".
    negates_old = bool(new.negated) and _holds(old, new.negated)
    if contrast is None and new.negated_typed and not negates_old and not shared:
        contrast = "negates another value"
    if same_type is None and contrast is None and not negates_old:
        again = new.values.get("name", frozenset()) & old.values.get("name", frozenset())
        if again and "name" not in fresh_types:
            contrast = "same " + "/".join(sorted(again))
    # An untyped change beside an old text that states typed values, none of whose types
    # the new one states: it speaks of something else about the same thing ("The food
    # bank moved to a warehouse" after "I volunteer at the food bank on Wednesdays").
    # Not when a change word stands before the very subject the older text's value
    # follows ("My new gym schedule is 3 times a week." after "... my gym schedule is
    # lunchtimes on weekdays"), or before a subject whose words the older text's subject
    # holds ("I changed my gym days to ..." after "My training days at the gym are ..."):
    # that subject now takes a value of another shape. Nor
    # when an elliptical update with a change word leaves only a name unreplaced, after
    # an intro as near the older text as a restated value must be (`typed_similarity`):
    # the intro named the subject, and a plain-word value ("It's paleo now." after
    # "About my diet.") replaces one that reads as a name only by its capital ("I've
    # been eating Mediterranean since the doctor's advice"). Nor when a change word
    # leaves only names unreplaced that say which kind of a word both texts hold
    # (`_names_qualify`: "my diet is gluten-free" after "a Mediterranean diet").
    old_typed = [k for k in old.values if k not in _DESCRIBING]
    restyled = new.cue and bool(new.subject) and new.subject <= old.subject
    if same_type is None and contrast is None and not restyled:
        kept = [k for k in old_typed if k not in new.values]
        if kept and len(kept) == len(old_typed) and not (
            elliptical and new.cue and kept == ["name"] and context >= p.typed_similarity
        ) and not (
            new.cue and kept == ["name"] and not new.values and _names_qualify(old, shared)
        ):
            contrast = "no new " + "/".join(sorted(kept))
    # The other way round: a typed value ("I switched to Dr. Okafor") beside an old text
    # that states none and shares no content word with it ("I burnt the chili again"):
    # no value of the old text was replaced, and nothing says both speak of one thing.
    if same_type is None and contrast is None and not shared and typed and not old_typed:
        contrast = "no value replaced"
    verdict = Verdict.NONE
    # Never similarity alone: a change word, an intro turn just before that names the
    # subject of an update that does not, or a typed value replaced. A value that
    # differs without either is as likely a second event ("ran 5 km today") as a new
    # version, so it only outdates.
    # A preference or a standing state ("my favourite colour is ...", "I usually ...")
    # holds one value at a time, so a new value of one is a new version as well.
    evidence = (
        new.cue or (elliptical and context >= p.min_similarity)
        or (same_type is not None and new.state and old.state)
        or restated or preference
    )
    if new_value and evidence and contrast is None and base >= p.min_similarity:
        if same_type is None:
            # a cue and new words: outdated at most, on a higher bar (incidental cues
            # come with new words too); a preference restated is judged as a value
            # restated is, on the weak link's own bar
            bar = p.outdate_score if preference and not new.cue else p.cue_only_score
            if score >= bar:
                verdict = Verdict.OUTDATES
        elif (
            score >= p.supersede_score and new.cue and not elliptical
            and (new.strong_cue or _subject_contrast(new, old) is None)
        ):
            # retired only when both name one subject, or a word says the value was
            # replaced: "Actually, my dermatologist is ..." does not retire "my dentist"
            verdict = Verdict.SUPERSEDES
        elif score >= p.outdate_score:
            verdict = Verdict.OUTDATES
    return Signals(similarity, context if elliptical else 0.0, new_value, same_type, new.cue,
                   contrast, score, verdict, shared)
