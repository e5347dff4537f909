"""The default embedder with the real all-MiniLM-L6-v2 model (no hub, no network)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from reverie.core.errors import InvalidInput
from reverie.core.ports import Embedder
from reverie.integrations.embedders import LocalEmbedder

PARAPHRASES = [
    ("The cat sat on the mat.", "A cat is sitting on a mat."),
    ("Alice moved to Berlin last spring.", "Last spring Alice relocated to Berlin."),
    ("I prefer my coffee black, no sugar.", "I like to drink coffee without milk or sugar."),
]
UNRELATED = [
    ("The cat sat on the mat.", "Quarterly tax returns are due in April."),
    ("Alice moved to Berlin last spring.", "The GPU kernel failed to compile."),
]


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


@pytest.mark.slow
def test_is_an_embedder(embedder: LocalEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.name == "all-MiniLM-L6-v2"
    assert embedder.dimension == 384


@pytest.mark.slow
def test_shape_dtype_norm(embedder: LocalEmbedder) -> None:
    texts = [f"memory number {i} about topic {i % 7}" for i in range(150)]  # > 2 batches
    v = embedder.embed(texts)
    assert v.shape == (150, 384)
    assert v.dtype == np.float32
    assert v.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.isfinite(v).all()


@pytest.mark.slow
@pytest.mark.parametrize(("a", "b"), PARAPHRASES)
def test_paraphrases_are_close(embedder: LocalEmbedder, a: str, b: str) -> None:
    va, vb = embedder.embed([a, b])
    assert float(va @ vb) > 0.7


@pytest.mark.slow
@pytest.mark.parametrize(("a", "b"), UNRELATED)
def test_unrelated_are_far(embedder: LocalEmbedder, a: str, b: str) -> None:
    va, vb = embedder.embed([a, b])
    assert float(va @ vb) < 0.3


@pytest.mark.slow
def test_deterministic_and_order_preserving(embedder: LocalEmbedder) -> None:
    texts = ["first text", "second, longer text about something else entirely", "third"]
    one = embedder.embed(texts)
    two = embedder.embed(texts)
    np.testing.assert_array_equal(one, two)
    alone = embedder.embed([texts[1]])
    np.testing.assert_allclose(alone[0], one[1], atol=1e-5)  # batch-mates do not matter
    rev = embedder.embed(texts[::-1])
    np.testing.assert_allclose(rev[::-1], one, atol=1e-5)


@pytest.mark.slow
def test_empty_input(embedder: LocalEmbedder) -> None:
    out = embedder.embed([])
    assert out.shape == (0, 384)
    assert out.dtype == np.float32


@pytest.mark.slow
def test_rejects_a_bare_string(embedder: LocalEmbedder) -> None:
    with pytest.raises(InvalidInput, match="single string"):
        embedder.embed("a single string")
    with pytest.raises(InvalidInput):
        embedder.embed(["ok", 3])  # type: ignore[list-item]


@pytest.mark.slow
def test_model_is_loaded_once_per_process(embedder: LocalEmbedder) -> None:
    # the model loads at first use (or load()), once per process for every instance
    assert LocalEmbedder().load()._model is embedder.load()._model is not None


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_import_does_not_load_torch() -> None:
    r = _run(
        """
        import sys
        import reverie.integrations.embedders
        heavy = [m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules]
        print(",".join(heavy))
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", f"importing embedders loaded {r.stdout.strip()}"


def test_missing_extra_is_named() -> None:
    """Without sentence-transformers, constructing (not importing) fails with the fix."""
    r = _run(
        """
        import sys
        sys.modules["sentence_transformers"] = None  # makes `import` raise ImportError
        from reverie.core.errors import MissingExtra
        from reverie.integrations.embedders import LocalEmbedder
        try:
            LocalEmbedder()
        except MissingExtra as e:
            print("extra=" + e.extra)
            print(e)
        """
    )
    assert r.returncode == 0, r.stderr
    assert "extra=local" in r.stdout
    assert "pip install 'reverie[local]'" in r.stdout
