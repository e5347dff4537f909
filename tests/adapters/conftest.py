"""LangChain's standard test classes write their async tests without an asyncio mark
(their own runs use `asyncio_mode = auto`); this suite runs in strict mode, so the
inherited coroutine tests get the mark before pytest-asyncio collects them."""

from __future__ import annotations

import inspect
from typing import Any

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: Any) -> None:
    if (
        inspect.iscoroutinefunction(obj)
        and getattr(obj, "__module__", "").startswith("langchain_tests.")
        and not any(m.name == "asyncio" for m in getattr(obj, "pytestmark", []))
    ):
        pytest.mark.asyncio(obj)
