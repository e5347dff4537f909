"""The default `Embedder`: a sentence-embedding model run locally, with no model hub.

all-MiniLM-L6-v2 (the default, the `local` extra) or all-mpnet-base-v2 (the `mpnet`
extra: better recall, about seven times slower to embed; benchmarks/results/embedders.md).
The model files come from PyPI packages (integrations/model_files.py), so the embedder
works on a machine with no internet. Importing this module is cheap and needs neither
torch nor sentence-transformers: they are imported only when a `LocalEmbedder` is built,
so `reverie` stays usable (with another embedder) without the extra. Loading a model takes
seconds, so it is loaded once per process, model and device and shared by every
`LocalEmbedder`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from reverie.core.errors import InvalidInput, MissingExtra
from reverie.core.ports import Vector
from reverie.integrations.model_files import MINILM, MODELS, ModelSpec, installed, model_dir

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["LocalEmbedder", "default_model"]

MODEL_NAME = MINILM.name  # the default model
ENV_MODEL = "REVERIE_EMBEDDING_MODEL"
DEFAULT_BATCH_SIZE = 64  # texts per model call: bounds memory, keeps the CPU busy

_models: dict[tuple[str, str], SentenceTransformer] = {}
_models_lock = threading.Lock()


def default_model() -> str:
    """$REVERIE_EMBEDDING_MODEL, else all-MiniLM-L6-v2: what `open_engine()` and the CLI
    embed with when given no embedder."""
    return os.environ.get(ENV_MODEL) or MODEL_NAME


def _load_model(spec: ModelSpec, device: str) -> SentenceTransformer:
    """The shared model for (`spec`, `device`); the first call per process pays the load
    (and, for a split model, the first call per machine its unpacking)."""
    with _models_lock:
        model = _models.get((spec.name, device))
        if model is not None:
            return model
        # Never let transformers / huggingface_hub try the network: the files are local.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise MissingExtra(f"the embedding model {spec.name}", spec.extra) from e
        model = SentenceTransformer(str(model_dir(spec)), device=device)
        _models[(spec.name, device)] = model
        return model


class LocalEmbedder:
    """A local sentence-embedding model on the CPU (or `device`), unit-normalised float32:
    `model` is "all-MiniLM-L6-v2" (384-dim, the default) or "all-mpnet-base-v2" (768-dim).

    Raises `MissingExtra` at construction when the model's extra is not installed,
    so the failure names the fix instead of surfacing as an ImportError deep inside
    the first `embed` call, and `InvalidInput` for a model it does not know.
    """

    def __init__(
        self, device: str = "cpu", batch_size: int = DEFAULT_BATCH_SIZE, *,
        model: str | None = None,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInput(f"batch_size must be a positive integer, got {batch_size!r}")
        name = default_model() if model is None else model
        spec = MODELS.get(name)
        if spec is None:
            raise InvalidInput(
                f"unknown embedding model {name!r}; choose one of {', '.join(MODELS)}"
            )
        if not installed(spec):
            raise MissingExtra(f"the embedding model {spec.name}", spec.extra)
        self._spec = spec
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
            self._model = _load_model(self._spec, self._device)
        return self._model

    @property
    def name(self) -> str:
        return self._spec.name

    @property
    def dimension(self) -> int:
        return self._spec.dimension

    @property
    def policy_changes(self) -> dict[str, float]:
        """The `Policy` numbers this model's cosines want other than the defaults (recall's
        fusion weight, consolidation's clustering bars); `open_engine` applies them when
        given no policy."""
        return dict(self._spec.tuned)

    def embed(self, texts: Sequence[str]) -> Vector:
        """Embed `texts` in order: shape (len(texts), dimension), rows of unit length."""
        if isinstance(texts, str):
            # A bare string is a sequence of characters: embedding each one is never meant.
            raise InvalidInput("embed() takes a sequence of texts, not a single string")
        batch = list(texts)
        for i, t in enumerate(batch):
            if not isinstance(t, str):
                raise InvalidInput(f"text {i} is {type(t).__name__}, not str")
        if not batch:
            return np.zeros((0, self._spec.dimension), dtype=np.float32)
        out = self._loaded().encode(
            batch,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(out, dtype=np.float32)

    def __repr__(self) -> str:
        return f"LocalEmbedder({self._spec.name!r}, device={self._device!r})"
