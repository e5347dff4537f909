"""Recorded HTTP exchanges with a real LLM server (vcrpy), replayed in CI.

A cassette is recorded once through the real client stack against the real local
llama.cpp server (`scripts/record-cassettes`; docs/cassettes.md says when to run it) and
replayed with `record_mode="none"`: CI needs neither the model nor the
server, and a request that was never recorded fails loudly instead of reaching out.

Matching is on method, path and body: without the body, several requests to the same
URL would replay in the wrong order. Host and port are not matched, so a recording made
against a server on any free port replays against the default URL.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import vcr

CASSETTE_DIR = Path(__file__).resolve().parent.parent / "cassettes"
LLM_MODEL = "smollm2-135m"  # the alias scripts/record-cassettes serves the model under


def recording() -> bool:
    """True while `scripts/record-cassettes` runs the tests against the live server."""
    return os.environ.get("REVERIE_RECORD") == "1"


def llm_base_url() -> str:
    """Where the OpenAI-compatible server is: live while recording, nominal on replay."""
    return os.environ.get("REVERIE_LLM_URL", "http://127.0.0.1:8765/v1")


_VCR = vcr.VCR(
    cassette_library_dir=str(CASSETTE_DIR),
    serializer="yaml",
    match_on=("method", "path", "body"),
    filter_headers=["authorization", "x-api-key", "api-key", "cookie", "set-cookie"],
    decode_compressed_response=True,
)


def use_cassette(name: str, **kwargs: Any) -> AbstractContextManager[Any]:
    """Replay `cassettes/<name>.yaml` (re-record it when REVERIE_RECORD=1)."""
    filename = name if name.endswith(".yaml") else f"{name}.yaml"
    if not recording() and not (CASSETTE_DIR / filename).is_file():
        raise FileNotFoundError(
            f"cassette {filename} is missing: record it with scripts/record-cassettes"
        )
    if recording():  # a re-recording replaces the cassette: vcrpy would append to it
        (CASSETTE_DIR / filename).unlink(missing_ok=True)
    mode = "all" if recording() else "none"
    return _VCR.use_cassette(filename, record_mode=mode, allow_playback_repeats=False, **kwargs)
