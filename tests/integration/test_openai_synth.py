"""`OpenAISynthesizer` failure modes that need no recording: a real TCP server that
accepts and never answers (the timeout), a refused connection, and the missing extra."""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator

import pytest

from reverie.core.errors import MissingExtra, SynthesisFailed
from reverie.core.synthesis import SYNTHESIS_SCHEMA
from reverie.integrations.llm import OpenAISynthesizer, parse_json_object
from tests.servers import free_port


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Accepts connections and reads requests, never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        stop.set()
        t.join()
        for c in held:
            c.close()
        sock.close()


def test_a_server_that_never_answers_is_a_timeout(silent_server: str) -> None:
    synth = OpenAISynthesizer(silent_server, "any-model", timeout=0.5)
    with pytest.raises(SynthesisFailed, match=r"did not answer within 0.5 s"):
        synth.synthesize("prompt", SYNTHESIS_SCHEMA)


def test_a_refused_connection_is_synthesis_failed() -> None:
    synth = OpenAISynthesizer(f"http://127.0.0.1:{free_port()}/v1", "any-model", timeout=5)
    with pytest.raises(SynthesisFailed, match="the LLM call failed: APIConnectionError"):
        synth.synthesize("prompt", SYNTHESIS_SCHEMA)


def test_answers_that_are_not_one_json_object() -> None:
    assert parse_json_object('```json\n{"a": 1}\n```') == {"a": 1}
    with pytest.raises(SynthesisFailed, match="not a JSON object"):
        parse_json_object('{"synthesis": "Tom adopted')  # truncated
    with pytest.raises(SynthesisFailed, match="not an object"):
        parse_json_object("[1, 2]")


def test_without_the_openai_package_the_error_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # import openai -> ImportError
    with pytest.raises(MissingExtra, match=r"pip install 'reverie\[openai\]'"):
        OpenAISynthesizer("http://127.0.0.1:1/v1", "m")
