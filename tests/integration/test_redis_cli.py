"""`reverie --store redis://... --vectors http://...` end to end: the CLI on the shared tier,
a real redis-server and a real `chroma run` server (the session's), the real embedder."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from reverie.adapters.cli.app import app
from reverie.integrations.redis.store import RedisStore

pytestmark = pytest.mark.slow

runner = CliRunner()

CHAT = [
    {"text": "My sister Ines is getting married in Porto in September.", "speaker": "user",
     "session": 1},
    {"text": "I bought a new road bike for the weekend rides.", "speaker": "user", "session": 1},
    {"subject": "Rui", "predicate": "lives in", "object": "Coimbra", "session": 1},
    {"subject": "Rui", "predicate": "lives in", "object": "Braga", "session": 2},
]


def ok(result: Result) -> Result:
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}\n{result.exception!r}"
    return result


def test_cli_on_redis_and_a_chroma_server(
    redis_url: str, chroma_server_url: str, tmp_path: Path
) -> None:
    ns = f"cli-{uuid.uuid4().hex[:10]}"
    home = tmp_path / "home"  # holds nothing of the memory: both tiers are servers
    opts = ["--home", str(home), "--store", redis_url, "--vectors", chroma_server_url, "-n", ns]
    chat = tmp_path / "chat.jsonl"
    chat.write_text("".join(json.dumps(row) + "\n" for row in CHAT), encoding="utf-8")

    ok(runner.invoke(app, [*opts, "ingest", str(chat)]))
    result = ok(runner.invoke(app, [*opts, "recall", "Who is getting married?", "-k", "3",
                                    "--json"]))
    payload: dict[str, Any] = json.loads(result.stdout)
    assert payload["hits"][0]["text"] == (
        "user: My sister Ines is getting married in Porto in September."
    )
    facts = json.loads(ok(runner.invoke(
        app, [*opts, "recall", "Where does Rui live?", "-k", "5", "--json"])).stdout)["hits"]
    texts = [h["text"] for h in facts]
    assert "Rui lives in Braga" in texts and "Rui lives in Coimbra" not in texts

    # The records really are in Redis (and nowhere under --home).
    with RedisStore.from_url(redis_url) as store:
        try:
            assert ns in store.namespaces()
            assert store.count(ns)["status:superseded"] == 1
        finally:
            store.delete_namespace(ns)
    assert not (home / "memory.db").exists()
