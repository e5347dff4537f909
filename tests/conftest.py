"""Fixtures shared by every test directory: real server processes, started once per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers import ServerStartError, start_chroma


@pytest.fixture(scope="session")
def chroma_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a real `chroma run` server for the whole session; fails loudly, never skips.

    Tests share it, so each must use namespaces of its own (see `unique_ns`-style
    fixtures in the contract suite).
    """
    base = tmp_path_factory.mktemp("chroma-server")
    try:
        server, url = start_chroma(base / "data")
    except ServerStartError as e:
        pytest.fail(f"cannot start the Chroma test server: {e}", pytrace=False)
    try:
        yield url
    finally:
        server.stop()
