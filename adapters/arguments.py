"""Argument checks shared by the faces, so each framework face turns bad arguments into
`reverie.core.errors` types where the caller wrote them, never into a framework's own
validation error or an AttributeError deep inside a call.

Needs nothing but core and pydantic (a core dependency): any face can use it without
pulling in another face's framework.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from reverie.core.engine import MemoryEngine
from reverie.core.errors import InvalidInput
from reverie.core.models import validate_namespace

__all__ = [
    "as_invalid_input",
    "check_bool",
    "check_datetime",
    "check_engine",
    "check_namespace",
    "check_positive_int",
    "check_source",
    "check_text",
    "validation_message",
]


def check_engine(engine: Any, where: str) -> MemoryEngine:
    if not isinstance(engine, MemoryEngine):
        raise InvalidInput(
            f"{where} needs a reverie MemoryEngine (from open_engine()), got "
            f"{type(engine).__name__}"
        )
    return engine


def check_positive_int(name: str, value: Any, *, maximum: int | None = None) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < 1
        or (maximum is not None and value > maximum)
    ):
        what = f"an integer from 1 to {maximum}" if maximum is not None else "a positive integer"
        raise InvalidInput(f"{name} must be {what}, got {value!r}")
    return value


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"{name} must be True or False, got {value!r}")
    return value


def check_datetime(name: str, value: Any) -> datetime | None:
    if value is not None and not isinstance(value, datetime):
        raise InvalidInput(f"{name} must be a datetime or None, got {value!r}")
    return value


def check_namespace(value: Any) -> str | None:
    """None (the engine's default) or a valid reverie namespace (`InvalidNamespace`)."""
    return None if value is None else validate_namespace(value)


def check_source(value: Any) -> str | None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise InvalidInput(f"source must be a non-empty string or None, got {value!r}")
    return value


def check_text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string, got {type(value).__name__}")
    return value


def validation_message(error: ValidationError) -> str:
    """pydantic's errors as one line: `field: what is wrong; ...`."""
    parts = []
    for e in error.errors():
        where = ".".join(str(p) for p in e.get("loc", ())) or "arguments"
        parts.append(f"{where}: {e.get('msg', 'invalid')}")
    return "; ".join(parts)


@contextmanager
def as_invalid_input(what: str) -> Iterator[None]:
    """Run a pydantic model's construction, turning its ValidationError into
    `InvalidInput` that names the fields."""
    try:
        yield
    except ValidationError as e:
        raise InvalidInput(f"{what}: {validation_message(e)}") from e
