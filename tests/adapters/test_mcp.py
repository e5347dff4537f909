"""`reverie mcp` end to end, as an MCP client meets it: the official SDK's own `Client`
talks to a real `reverie mcp` process (stdio: spawned by the client; streamable HTTP: on a
free loopback port) over a real engine (SQLite, embedded Chroma, the real embedding model).

Every wait is bounded: each scenario runs under `anyio.fail_after`, the client has a read
timeout, and the HTTP server process is killed when its test ends.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent
from typer.testing import CliRunner

from reverie.adapters.cli.app import app
from reverie.adapters.mcp import ENV_NAMESPACE, NAMESPACE_HEADER
from tests.adapters.langchain_support import import_without
from tests.servers import wait_until

pytestmark = pytest.mark.slow

TOOLS = {"observe", "remember", "recall", "history", "forget", "confirm", "restore"}
SCENARIO_SECONDS = 240  # model load in the server process included
READ_TIMEOUT = 120.0


def reverie_exe() -> str:
    beside = Path(sys.executable).parent / "reverie"
    return str(beside) if beside.exists() else (shutil.which("reverie") or "reverie")


def run_bounded(scenario: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with anyio.fail_after(SCENARIO_SECONDS):
            await scenario()

    anyio.run(bounded)


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


async def ok(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, f"{tool}: {text_of(result)}"
    assert result.structured_content is not None
    return result.structured_content


async def tool_error(client: Client, tool: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(tool, args)
    message = text_of(result)
    assert result.is_error, f"{tool} {args} succeeded: {message}"
    assert "Traceback" not in message and 'File "' not in message
    return message


async def stats(client: Client, uri: str = "reverie://stats") -> dict[str, Any]:
    read = await client.read_resource(uri)
    [content] = read.contents
    payload = json.loads(content.text)  # type: ignore[union-attr]
    assert isinstance(payload, dict)
    return payload


def stdio_client(home: Path, *args: str, env: dict[str, str] | None = None) -> Client:
    params = StdioServerParameters(
        command=reverie_exe(),
        args=["--home", str(home), "mcp", *args],
        env=env,  # over the SDK's short list of inherited variables: no $REVERIE_STORE
    )
    return Client(params, read_timeout_seconds=READ_TIMEOUT)


# ------------------------------------------------------------------ stdio


def test_stdio_every_tool_the_stats_resource_and_errors(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with stdio_client(tmp_path / "home", "--namespace", "user/alice") as client:
            listed = await client.list_tools()
            by_name = {t.name: t for t in listed.tools}
            assert set(by_name) == TOOLS
            for tool in listed.tools:
                assert tool.description, tool.name
                assert "namespace" in tool.input_schema["properties"], tool.name
            assert by_name["history"].annotations.read_only_hint  # type: ignore[union-attr]
            assert by_name["forget"].annotations.destructive_hint  # type: ignore[union-attr]
            assert not by_name["recall"].annotations.read_only_hint  # type: ignore[union-attr]
            assert all(t.output_schema for t in listed.tools)
            k_schema = by_name["recall"].input_schema["properties"]["k"]
            assert (k_schema["minimum"], k_schema["maximum"]) == (1, 50)

            # remember: new, then a second source, then a different object supersedes
            first = await ok(
                client,
                "remember",
                {
                    "subject": "Alice",
                    "predicate": "lives in",
                    "object": "Lisbon",
                    "source": "chat-1",
                },
            )
            assert first["outcome"] == "new"
            assert first["memory"]["namespace"] == "user/alice"
            again = await ok(
                client,
                "remember",
                {
                    "subject": "Alice",
                    "predicate": "lives in",
                    "object": "Lisbon",
                    "source": "chat-2",
                },
            )
            assert again["outcome"] == "confirmed"
            assert again["memory"]["sources"] == ["chat-1", "chat-2"]
            moved = await ok(
                client,
                "remember",
                {
                    "subject": "Alice",
                    "predicate": "lives in",
                    "object": "Berlin",
                    "source": "chat-3",
                },
            )
            assert moved["outcome"] == "superseded"
            assert moved["superseded"]["fact"]["object"] == "Lisbon"
            assert moved["superseded"]["status"] == "superseded"

            seen = await ok(
                client, "observe", {"text": "I adopted a grey cat called Miso.", "source": "chat-3"}
            )
            assert (seen["kind"], seen["tier"]) == ("episodic", "trace")

            # recall: hits with dates and explanations; the replaced version left out
            found = await ok(client, "recall", {"query": "Where does Alice live?", "k": 3})
            assert found["namespace"] == "user/alice"
            top = found["hits"][0]
            assert top["memory"]["fact"]["object"] == "Berlin"
            assert top["memory"]["created_at"] and top["memory"]["valid_from"]
            assert set(top["explanation"]) >= {"final", "relevance", "decay", "importance"}
            assert top["score"] == pytest.approx(top["explanation"]["final"], abs=1e-3)
            texts = [h["memory"]["text"] for h in found["hits"]]
            assert not any("Lisbon" in t for t in texts)
            with_history = await ok(
                client, "recall", {"query": "Where does Alice live?", "include_history": True}
            )
            assert any("Lisbon" in h["memory"]["text"] for h in with_history["hits"])
            # the explanation says which is the newer version, as the engine's does
            newest = with_history["hits"][0]
            assert newest["memory"]["fact"]["object"] == "Berlin"
            assert "newer version of" in newest["explanation"]["note"]
            assert "Lisbon" in newest["explanation"]["note"]
            cat = await ok(client, "recall", {"query": "what pet does she have", "k": 1})
            assert "Miso" in cat["hits"][0]["memory"]["text"]

            versions = await ok(client, "history", {"subject": "Alice", "predicate": "lives in"})
            assert [v["fact"]["object"] for v in versions["versions"]] == ["Lisbon", "Berlin"]
            old, new = versions["versions"]
            assert old["valid_to"] == new["valid_from"]

            confirmed = await ok(client, "confirm", {"memory_id": seen["id"]})
            assert (confirmed["tier"], confirmed["user_confirmed"]) == ("crystal", True)

            st = await stats(client)
            assert st["namespace"] == "user/alice"
            assert (st["total"], st["status:superseded"], st["tier:crystal"]) == (3, 1, 1)

            gone = await ok(client, "forget", {"memory_ids": [seen["id"], "no-such-id"]})
            assert (gone["deleted"], gone["not_found"]) == (1, ["no-such-id"])
            assert (await stats(client))["total"] == 2

            # bad arguments: a tool error with a message, never a crash
            assert "k" in await tool_error(client, "recall", {"query": "x", "k": 0})
            assert "k" in await tool_error(client, "recall", {"query": "x", "k": 51})
            assert "query" in await tool_error(client, "recall", {"k": 2})
            assert "as_of" in await tool_error(
                client, "recall", {"query": "x", "as_of": "yesterday"}
            )
            assert "text" in await tool_error(client, "observe", {"text": ""})
            assert "empty" in (await tool_error(client, "observe", {"text": "   "})).lower()
            assert "kind" in await tool_error(
                client,
                "remember",
                {"subject": "a", "predicate": "b", "object": "c", "kind": "episodic"},
            )
            assert "memory_ids" in await tool_error(client, "forget", {"memory_ids": []})
            assert "no memory" in await tool_error(client, "confirm", {"memory_id": "nope"})
            assert "nothing deleted" in await tool_error(client, "forget", {"memory_ids": ["nope"]})
            assert "no fact" in await tool_error(
                client, "history", {"subject": "Bob", "predicate": "likes"}
            )
            assert "invalid namespace" in await tool_error(
                client, "observe", {"text": "hi", "namespace": "bad namespace!"}
            )
            with pytest.raises(MCPError):
                await client.read_resource("reverie://stats/bad namespace!")
            # the server is still up and nothing was written by the failures
            assert (await stats(client))["total"] == 2

    run_bounded(scenario)


def test_stdio_namespace_from_the_environment_and_per_call(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with stdio_client(tmp_path / "home", env={ENV_NAMESPACE: "user/env"}) as client:
            mine = await ok(client, "observe", {"text": "My favourite tea is sencha."})
            assert mine["namespace"] == "user/env"
            other = await ok(
                client,
                "observe",
                {"text": "My favourite tea is rooibos.", "namespace": "user/other"},
            )
            assert other["namespace"] == "user/other"

            here = await ok(client, "recall", {"query": "favourite tea"})
            assert [h["memory"]["text"] for h in here["hits"]] == ["My favourite tea is sencha."]
            there = await ok(
                client, "recall", {"query": "favourite tea", "namespace": "user/other"}
            )
            assert [h["memory"]["text"] for h in there["hits"]] == ["My favourite tea is rooibos."]
            assert "no memory" in await tool_error(
                client, "confirm", {"memory_id": other["id"]}
            )  # not in user/env
            assert (await stats(client))["namespace"] == "user/env"
            assert (await stats(client, "reverie://stats/user/other"))["total"] == 1

    run_bounded(scenario)


def readme_mcp_config() -> dict[str, Any]:
    """The MCP client configuration the README tells a user to paste, as written there."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    [block] = re.findall(r"```json\n(\{\"mcpServers\".*?)```", readme, flags=re.S)
    config = json.loads(block)
    assert isinstance(config, dict)
    return config


def test_the_readme_client_configuration_starts_a_working_server(tmp_path: Path) -> None:
    """A client configured as the README shows (its home swapped for the test's own)
    starts `reverie mcp` and gets the README's namespace."""
    [server] = readme_mcp_config()["mcpServers"].values()
    assert server["command"] == "reverie"
    args = list(server["args"])
    home = args.index("--home") + 1
    args[home] = str(tmp_path / "home")
    readme_namespace = args[args.index("--namespace") + 1]

    async def scenario() -> None:
        params = StdioServerParameters(command=reverie_exe(), args=args)
        async with Client(params, read_timeout_seconds=READ_TIMEOUT) as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS
            kept = await ok(client, "observe", {"text": "I adopted a grey cat called Miso."})
            assert kept["namespace"] == readme_namespace
            found = await ok(client, "recall", {"query": "what pet do I have?", "k": 1})
            assert found["hits"][0]["memory"]["id"] == kept["id"]
            assert (await stats(client))["namespace"] == readme_namespace

    run_bounded(scenario)


# ------------------------------------------------------------------ streamable HTTP


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    """`reverie mcp --transport http` on a free loopback port; yields its /mcp URL."""
    port = free_port()
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(
        [
            reverie_exe(),
            "--home",
            str(tmp_path / "home"),
            "-n",
            "team/shared",
            "mcp",
            "--transport",
            "http",
            "--port",
            str(port),
        ],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={k: v for k, v in os.environ.items() if k not in ("REVERIE_STORE", "REVERIE_VECTORS")},
    )

    def listening() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"the server exited: {(tmp_path / 'server.log').read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    try:
        wait_until(listening, f"reverie mcp to listen on port {port}", SCENARIO_SECONDS, 0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        log.close()


def http_client(url: str, namespace: str | None = None) -> Client:
    headers = {NAMESPACE_HEADER: namespace} if namespace else {}
    transport = streamable_http_client(
        url, http_client=httpx2.AsyncClient(headers=headers, timeout=READ_TIMEOUT)
    )
    return Client(transport, read_timeout_seconds=READ_TIMEOUT)


def test_http_clients_keep_their_namespaces_apart(http_server: str) -> None:
    async def scenario() -> None:
        async with (
            Client(http_server, read_timeout_seconds=READ_TIMEOUT) as shared,
            http_client(http_server, "user/bob") as bob,
        ):
            assert {t.name for t in (await shared.list_tools()).tools} == TOOLS
            team = await ok(
                shared,
                "remember",
                {"subject": "the team", "predicate": "meets on", "object": "Mondays"},
            )
            assert team["memory"]["namespace"] == "team/shared"  # the global -n
            own = await ok(
                bob, "remember", {"subject": "Bob", "predicate": "prefers", "object": "tea"}
            )
            assert own["memory"]["namespace"] == "user/bob"  # the header

            bob_hits = await ok(bob, "recall", {"query": "when does the team meet?"})
            assert all(h["memory"]["namespace"] == "user/bob" for h in bob_hits["hits"])
            assert not any("Mondays" in h["memory"]["text"] for h in bob_hits["hits"])
            team_hits = await ok(shared, "recall", {"query": "when does the team meet?"})
            assert "Mondays" in team_hits["hits"][0]["memory"]["text"]
            # an argument beats the header
            peek = await ok(bob, "recall", {"query": "meets on", "namespace": "team/shared"})
            assert "Mondays" in peek["hits"][0]["memory"]["text"]

            assert "nothing deleted" in await tool_error(
                bob, "forget", {"memory_ids": [team["memory"]["id"]]}
            )  # not bob's
            assert "k" in await tool_error(bob, "recall", {"query": "x", "k": "many"})
            assert (await stats(shared))["total"] == 1
            assert (await stats(bob))["namespace"] == "team/shared"  # the server's default
            assert (await stats(shared, "reverie://stats/user/bob"))["total"] == 1

            done = await ok(shared, "forget", {"memory_ids": [team["memory"]["id"]]})
            assert done["deleted"] == 1
            assert (await stats(shared))["total"] == 0

    run_bounded(scenario)


# ------------------------------------------------------------------ the command and the extra


def test_mcp_command_rejects_an_unknown_transport(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["--home", str(tmp_path), "mcp", "--transport", "sse"])
    assert result.exit_code == 2
    assert "stdio, http" in result.output


def test_mcp_face_without_its_extra_says_which_extra() -> None:
    done = import_without("reverie.adapters.mcp", "mcp")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("MissingExtra mcp"), done.stdout
