"""The byte form of a kept embedding (integrations/kept_vectors.py): half precision where
the values fit, float32 where they do not, and the float32 form of files written before
half precision still read."""

from __future__ import annotations

import numpy as np
import pytest

from reverie.core import InvalidInput
from reverie.integrations.kept_vectors import from_bytes, from_bytes_many, to_bytes


def _unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_a_unit_vector_takes_half_the_bytes_and_keeps_its_cosines() -> None:
    vecs = _unit(np.random.default_rng(7), 64, 384)
    blobs = [to_bytes(f"m{i}", v) for i, v in enumerate(vecs)]
    assert {len(b) for b in blobs} == {4 + 2 * 384}  # marker + 384 halves, not 4 * 384
    back = np.stack([from_bytes(b) for b in blobs])
    assert back.dtype == np.float32 and back.shape == vecs.shape
    # a half keeps 11 significant bits: each value within 2**-11 of itself, relatively
    assert np.all(np.abs(back - vecs) <= np.abs(vecs) * 2.0**-11 + 2.0**-24)
    assert np.abs(vecs @ back.T - vecs @ vecs.T).max() < 1e-4


def test_values_half_precision_cannot_hold_are_kept_as_float32_exactly() -> None:
    v = np.array([70_000.0, -1.5, 0.1], dtype=np.float32)  # 70,000 > 65,504
    blob = to_bytes("big", v)
    assert len(blob) == 12
    assert np.array_equal(from_bytes(blob), v)
    edge = np.array([65_504.0, -65_504.0], dtype=np.float32)  # the largest half
    assert len(to_bytes("edge", edge)) == 4 + 4
    assert np.array_equal(from_bytes(to_bytes("edge", edge)), edge)


def test_the_float32_form_written_before_half_precision_still_reads() -> None:
    v = np.array([0.1, -0.2, 0.3], dtype=np.float32)
    assert np.array_equal(from_bytes(v.astype("<f4").tobytes()), v)


@pytest.mark.parametrize("bad", [np.array([np.inf, 1.0]), np.array([[1.0]]), [], "x"])
def test_a_vector_that_is_not_one_is_refused(bad: object) -> None:
    with pytest.raises(InvalidInput):
        to_bytes("m", bad)


def test_many_blobs_read_at_once_equal_each_read_alone() -> None:
    vecs = _unit(np.random.default_rng(3), 5, 8)
    halves = [to_bytes(f"m{i}", v) for i, v in enumerate(vecs)]
    wide = to_bytes("big", np.array([70_000.0, *vecs[0][1:]], dtype=np.float32))
    old = vecs[1].astype("<f4").tobytes()  # the float32 form of older files
    for blobs in (halves, [*halves, wide], [old, *halves]):
        together = from_bytes_many(blobs)
        alone = [from_bytes(b) for b in blobs]
        assert len(together) == len(blobs)
        for a, b in zip(together, alone, strict=True):
            assert a.dtype == np.float32 and np.array_equal(a, b)
    assert from_bytes_many([]) == []
