"""Argument checks for the public API: every value a caller passes, checked before any I/O.

Each function takes what a caller gave, raises a `reverie.core.errors` type naming the
argument and the fix when it is not acceptable, and otherwise returns it in the one form
the engine stores (a `frozenset` of entity names, a plain JSON-ready metadata `dict`, a UTC
`datetime`). Nothing here writes; the engine calls these at the top of each public method,
so a bad argument leaves the store as it was. The limits are `Policy` numbers
(`policy.funnel.max_metadata_bytes`, `policy.retrieval.max_recall_k`, ...).

Pure Python: `reverie.core` needs nothing beyond numpy.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from .clock import utc
from .errors import EmptyText, InvalidInput, TextTooLong
from .models import Kind, Status, Tier, check_unit, parse_kind
from .policy import Policy

__all__ = [
    "callback",
    "entities",
    "flag",
    "identifier",
    "identifiers",
    "import_records",
    "items",
    "kinds",
    "memory_fields",
    "metadata",
    "optional_text",
    "positive_int",
    "record",
    "statuses",
    "text",
    "tiers",
    "unit",
    "when",
]

# Unicode categories that show nothing: control and format characters (zero-width spaces,
# joiners, the byte-order mark, bidi marks) and separators. A text made only of these is empty.
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"})
# A time must stay a valid `datetime` after any shift the lifecycle makes (windows, decay
# horizons): this margin keeps clear of `datetime.min` and `datetime.max`.
_TIME_MARGIN = timedelta(days=366 * 200)
_EARLIEST = datetime.min.replace(tzinfo=UTC) + _TIME_MARGIN
_LATEST = datetime.max.replace(tzinfo=UTC) - _TIME_MARGIN
_INT_LIMIT = 2**63  # metadata integers: what every store's JSON and Redis round-trips exactly


def _utf8(value: str, what: str) -> None:
    """A lone surrogate cannot be stored as UTF-8 by any backend: refuse it up front."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidInput(
            f"{what} holds a lone surrogate ({value[e.start]!r} at position {e.start}), "
            "which is not valid Unicode text: decode the source bytes with errors='replace'"
        ) from None
    if "\x00" in value:
        raise InvalidInput(f"{what} holds a NUL character (\\x00): remove it")


def _short(name: str) -> str:
    """A path into a caller's structure, cut so an error message stays one short line."""
    return name if len(name) <= 80 else f"{name[:38]}...{name[-38:]}"


def _visible(value: str) -> bool:
    return any(unicodedata.category(c) not in _INVISIBLE for c in value)


def text(value: object, what: str, policy: Policy) -> str:
    """Words to store or search: a `str` with at least one visible character, valid
    Unicode, at most `policy.funnel.max_text_chars` characters."""
    if not isinstance(value, str):
        raise EmptyText(
            f"{what} must be text (a str), got {type(value).__name__}: pass the words to remember"
        )
    limit = policy.funnel.max_text_chars
    if len(value) > limit:
        raise TextTooLong(
            f"{what} has {len(value)} characters, over the limit of {limit}: split it, "
            "or raise Policy.funnel.max_text_chars"
        )
    _utf8(value, what)
    if not _visible(value):
        raise EmptyText(f"{what} is empty (nothing visible in it): pass the words to remember")
    return value


def optional_text(value: object, what: str, policy: Policy) -> str | None:
    return None if value is None else text(value, what, policy)


def identifier(value: object, what: str, policy: Policy) -> str:
    """A memory id or a source name: non-empty text of at most `max_name_chars`."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be text (a str), got {type(value).__name__}")
    limit = policy.funnel.max_name_chars
    if len(value) > limit:
        raise InvalidInput(
            f"{what} has {len(value)} characters, over the limit of {limit} "
            "(Policy.funnel.max_name_chars)"
        )
    _utf8(value, what)
    if not _visible(value):
        raise InvalidInput(f"{what} must be non-empty text, got {value!r}")
    return value


def identifiers(values: Iterable[object], what: str, policy: Policy) -> tuple[str, ...]:
    return tuple(identifier(v, what, policy) for v in values)


def flag(value: object, what: str) -> bool:
    """True or False, exactly: a string such as "no" is not a flag."""
    if not isinstance(value, bool):
        raise InvalidInput(f"{what} must be True or False, got {value!r}")
    return value


def unit(value: object, what: str) -> float | None:
    """None, or a finite number in [0, 1]."""
    return None if value is None else check_unit(what, value)


def positive_int(value: object, what: str, maximum: int | None = None, limit: str = "") -> int:
    """A whole number >= 1 (and <= `maximum`, the Policy number named by `limit`)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"{what} must be a positive integer, got {value!r}")
    if maximum is not None and value > maximum:
        raise InvalidInput(
            f"{what} is {value}, over the limit of {maximum}" + (f" ({limit})" if limit else "")
        )
    return value


def callback(value: object, what: str) -> None:
    if value is not None and not callable(value):
        raise InvalidInput(f"{what} must be a function or None, got {type(value).__name__}")


def when(value: object, what: str) -> datetime | None:
    """None, or a `datetime` (naive ones are UTC) within the years the engine can shift."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidInput(
            f"{what} must be a datetime (e.g. datetime(2025, 1, 1, tzinfo=UTC)), got "
            f"{type(value).__name__} {value!r}: parse strings with datetime.fromisoformat, "
            "epoch seconds with datetime.fromtimestamp(x, UTC)"
        )
    try:
        t = utc(value)
    except (OverflowError, ValueError):
        t = None
    if t is None or not _EARLIEST <= t <= _LATEST:
        raise InvalidInput(
            f"{what} is {value.isoformat()}, outside the years reverie can keep "
            f"({_EARLIEST.year}-{_LATEST.year})"
        )
    return t


def items(value: object, what: str) -> Iterable[Any]:
    """A collection of several things: a list, tuple, set or generator; never a single str
    (it would be taken one character at a time), bytes or a mapping."""
    if isinstance(value, str | bytes | bytearray | Mapping) or not isinstance(value, Iterable):
        raise InvalidInput(
            f"{what} must be a list (or another iterable) of items, got {type(value).__name__}"
        )
    return value


def entities(value: object, policy: Policy) -> frozenset[str] | None:
    """None (the engine finds them), or a collection of entity names, casefolded."""
    if value is None:
        return None
    out: set[str] = set()
    for e in items(value, "entities"):
        out.add(identifier(e, "each entity", policy).casefold())
        if len(out) > policy.funnel.max_entities:
            raise InvalidInput(
                f"more than {policy.funnel.max_entities} entities for one memory "
                "(Policy.funnel.max_entities)"
            )
    return frozenset(out)


def kinds(value: object) -> frozenset[Kind] | None:
    return None if value is None else frozenset(parse_kind(k) for k in items(value, "kinds"))


def _enum_values(value: object, enum: type[Status] | type[Tier], what: str) -> list[Any] | None:
    if value is None:
        return None
    out = []
    for v in items(value, what):
        try:
            out.append(enum(v))
        except ValueError:
            raise InvalidInput(
                f"unknown {enum.__name__.lower()} {v!r} in {what}: use "
                + ", ".join(x.value for x in enum)
            ) from None
    return out


def statuses(value: object) -> list[Status] | None:
    return _enum_values(value, Status, "statuses")


def tiers(value: object) -> list[Tier] | None:
    return _enum_values(value, Tier, "tiers")


def metadata(value: object, policy: Policy) -> dict[str, Any] | None:
    """None, or a mapping with text keys whose values are JSON (None, bool, int, finite
    float, str, lists and mappings of those), at most `max_metadata_depth` deep and
    `max_metadata_bytes` long as UTF-8 JSON. Returned as plain dicts and lists, which is
    what every store gives back, so the memory returned equals the memory stored."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidInput(f"metadata must be a mapping (a dict), got {type(value).__name__}")
    funnel = policy.funnel
    budget = funnel.max_metadata_bytes

    def too_big() -> InvalidInput:
        return InvalidInput(
            f"metadata is over the limit of {budget} bytes as JSON "
            "(Policy.funnel.max_metadata_bytes): store large content as its own memory"
        )

    size = 0
    root: dict[str, Any] = {}
    # iterative, so a deep structure is refused by depth, not by a RecursionError
    stack: list[tuple[Mapping[Any, Any] | Sequence[Any], Any, int, str]] = [
        (value, root, 1, "metadata")
    ]
    while stack:
        src, dst, depth, path = stack.pop()
        if depth > funnel.max_metadata_depth:
            raise InvalidInput(
                f"metadata nests deeper than {funnel.max_metadata_depth} levels "
                "(Policy.funnel.max_metadata_depth)"
            )
        pairs: Iterable[tuple[object, object]] = (
            src.items() if isinstance(src, Mapping) else enumerate(src)
        )
        for key, v in pairs:
            if isinstance(src, Mapping):
                if not isinstance(key, str):
                    raise InvalidInput(
                        f"{path} has the key {_short(repr(key))} ({type(key).__name__}): "
                        "metadata keys "
                        "must be text, as JSON has them (1 and '1' would become one key)"
                    )
                _utf8(key, f"{path} key {key[:40]!r}")
                size += len(key) + 4
            where = _short(f"{path}[{key!r}]")
            out: Any
            if v is None or isinstance(v, bool):
                out = v
                size += 5
            elif isinstance(v, int):
                if not -_INT_LIMIT <= v < _INT_LIMIT:
                    raise InvalidInput(f"{where} is an integer outside 64 bits")
                out = int(v)
                size += 20
            elif isinstance(v, float):
                if not math.isfinite(v):
                    raise InvalidInput(f"{where} is {v!r}: JSON has no NaN or infinity")
                out = float(v)
                size += 24
            elif isinstance(v, str):
                size += len(v) + 2
                if size > budget:
                    raise too_big()
                _utf8(v, where)
                out = v
            elif isinstance(v, Mapping):
                out = {}
                stack.append((v, out, depth + 1, where))
            elif isinstance(v, list | tuple):
                out = [None] * len(v)
                stack.append((v, out, depth + 1, where))
            else:
                raise InvalidInput(
                    f"{where} is a {type(v).__name__}: metadata values must be JSON (text, "
                    "numbers, True/False, None, lists and dicts); convert it first"
                )
            if size > budget:
                raise too_big()
            dst[key] = out
    exact = len(json.dumps(root, ensure_ascii=False, allow_nan=False).encode("utf-8"))
    if exact > budget:
        raise too_big()
    return root


def record(value: object, n: int) -> Mapping[str, Any]:
    """One record of an export being imported: a mapping with a known `type`."""
    if not isinstance(value, Mapping):
        raise InvalidInput(
            f"record {n} is a {type(value).__name__}, not an export record (a dict with "
            "'type': 'reverie-export', 'memory' or 'edge')"
        )
    if value.get("type") in ("memory", "edge") and not isinstance(value.get("record"), Mapping):
        raise InvalidInput(f"record {n} has no 'record' mapping")
    return value


def memory_fields(rec: Mapping[str, Any], n: int, policy: Policy) -> None:
    """The free-form fields of an imported memory record: its text, entities, sources and
    metadata pass the same checks as an `observe` (the codec checks the rest)."""
    where = f"record {n}"
    text(rec.get("text"), f"{where} text", policy)
    for name in ("sources", "entities", "derived_from", "recent_accesses"):
        got = rec.get(name, ())
        if not isinstance(got, list | tuple):
            raise InvalidInput(f"{where} {name} must be a list, got {type(got).__name__}")
        if name != "recent_accesses":
            identifiers(got, f"{where} {name}", policy)
    fact = rec.get("fact")
    if fact is not None:
        if not isinstance(fact, list | tuple) or len(fact) != 3:
            raise InvalidInput(f"{where} fact must be [subject, predicate, object]")
        for part in fact:
            text(part, f"{where} fact", policy)
    for name in ("importance", "confidence"):
        if name not in rec:
            raise InvalidInput(f"{where} has no {name}")
        unit(rec[name], f"{where} {name}")
    for name in ("pinned", "retention_exempt", "user_confirmed"):
        if name in rec:
            flag(rec[name], f"{where} {name}")
    for name in ("access_count", "version"):
        v = rec.get(name, 1)
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < _INT_LIMIT:
            raise InvalidInput(f"{where} {name} must be a whole number >= 0, got {v!r}")
    for name in ("superseded_by", "consolidated_into"):
        if rec.get(name) is not None:
            identifier(rec[name], f"{where} {name}", policy)
    key = rec.get("key")
    if key is not None:
        if not isinstance(key, str):
            raise InvalidInput(f"{where} key must be text, got {type(key).__name__}")
        _utf8(key, f"{where} key")
    metadata(rec.get("metadata") or {}, policy)
    identifier(rec.get("id"), f"{where} id", policy)


def import_records(records: object, policy: Policy) -> Iterator[Mapping[str, Any]]:
    """An export being imported, each record checked as it is read (a batch is written
    only when every record in it passed)."""
    source = items(records, "records")

    def checked() -> Iterator[Mapping[str, Any]]:
        for n, rec in enumerate(source, 1):
            rec = record(rec, n)
            if rec.get("type") == "memory":
                memory_fields(rec["record"], n, policy)
            elif rec.get("type") == "edge":
                edge = rec["record"]
                identifier(edge.get("src"), f"record {n} src", policy)
                identifier(edge.get("dst"), f"record {n} dst", policy)
            yield rec

    return checked()
