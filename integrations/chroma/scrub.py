"""Erased vectors leave embedded Chroma's HNSW files, not only its answers.

Embedded Chroma (1.x) keeps each collection's graph in hnswlib's files under
`<vectors>/<segment id>/`. A deleted vector is only marked deleted: its floats stay in
the process's copy of the graph and reach `data_level0.bin` at the next persist, and a
vector persisted before its delete keeps its floats in the file. The file is also made
at the collection's creation from hnswlib's whole allocated block, bytes it never
initialised included, so freed process memory (which can hold recent texts) can reach it.

Two steps, both cheap next to a rebuild of the graph (which costs about as much as
indexing the namespace again):

- `blank` (before a delete): each vector is overwritten in place by a decoy, a random
  unit vector drawn from the id's hash, so the process's copy no longer holds the
  original and no later persist can write it back;
- `scrub_files` (after it): in the file, each erased element's floats become the same
  decoy, and every byte past the last element is zeroed, in it and in `length.bin` (the
  elements' norms, one float per slot, written from an uninitialised array likewise).
  The elements are found by the labels Chroma persisted beside the file
  (`index_metadata.pickle`, read with a loader that accepts plain data only).

The file layout read here is hnswlib's (Chroma's fork adds a 4-byte version in front of
the header); a header that does not add up is left alone and reported.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import sqlite3
import struct
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = [
    "SharedExclusive",
    "Tails",
    "blank",
    "decoys",
    "rewrite_queue",
    "scrub_collection",
    "scrub_files",
]

log = logging.getLogger(__name__)

# Vectors overwritten per call (`blank`): a few seconds of hnswlib work at most per batch
_BLANK_BATCH = 64
_HEADER = struct.Struct("<I6Q")  # version, offsetLevel0, max, count, size, label, data
_DATA = "data_level0.bin"
_LENGTHS = "length.bin"  # Chroma's fork: each element's norm, a float32 per slot


class SharedExclusive:
    """Chroma calls run side by side (shared); a file scrub runs alone (exclusive), so
    no persist writes the file while it is rewritten. Waiting scrubs go first."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._exclusive or self._waiting:
                self._cond.wait()
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            while self._exclusive or self._shared:
                self._cond.wait()
            self._waiting -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()


def decoys(ids: Sequence[str], dim: int) -> np.ndarray:
    """One unit vector per id, drawn from the id's hash: nothing of the original, and
    the same in the process's copy of the graph and in the scrubbed file."""
    out = np.empty((len(ids), dim), dtype=np.float32)
    for i, id_ in enumerate(ids):
        seed = int.from_bytes(hashlib.sha256(id_.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
        out[i] = v / np.linalg.norm(v)
    return out


def blank(collection: Any, ids: Sequence[str], dim: int) -> None:
    """Overwrite the stored vectors of `ids` (those present) by their decoys. An
    overwrite costs hnswlib about what indexing the vector did (it relinks the point's
    neighbours), so it goes in batches of `_BLANK_BATCH`: each call stays far inside
    the index's call deadline even on a loaded machine."""
    for s in range(0, len(ids), _BLANK_BATCH):
        part = list(ids[s : s + _BLANK_BATCH])
        present = list(collection.get(ids=part, include=[])["ids"])
        if present:
            collection.update(ids=present, embeddings=decoys(present, dim))


def rewrite_queue(conn: sqlite3.Connection) -> int:
    """Write Chroma's log (`embeddings_queue`) afresh, in the caller's transaction on a
    connection with `secure_delete` on: every row is deleted, which zeroes the table's
    pages whole, and put back. Chroma drops the rows its segments persisted past without
    zeroing them, so their vectors stay in the free space of the pages that held them;
    the log holds at most a sync threshold of writes, so this stays small. Returns the
    rows kept."""
    rows = conn.execute("SELECT * FROM embeddings_queue").fetchall()
    conn.execute("DELETE FROM embeddings_queue")
    if rows:
        marks = ",".join("?" * len(rows[0]))
        conn.executemany(f"INSERT INTO embeddings_queue VALUES ({marks})", rows)
    return len(rows)


class _PlainData(pickle.Unpickler):
    """Dicts, lists, numbers and strings only: a pickle naming any class is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"{module}.{name} is not plain data")


def scrub_collection(
    log_file: str, collection_id: str, ids: Sequence[str], dim: int, lock: SharedExclusive
) -> dict[str, int]:
    """`scrub_files` on the collection's segment, alone against every other call."""
    directory = segment_dir(log_file, collection_id)
    if directory is None:
        return {}
    with lock.exclusive():
        done = scrub_files(directory, ids, dim)
    if done["unreadable"]:
        log.warning(
            "the HNSW files in %s have a layout this version of reverie does not know; "
            "erased vectors may stay in them until `reverie repair --reembed` rebuilds "
            "the index",
            directory,
        )
    return done


def segment_dir(log_file: str, collection_id: str) -> str | None:
    """The directory of the collection's HNSW segment, from Chroma's own catalogue."""
    conn = sqlite3.connect(log_file, timeout=30.0)
    try:
        row = conn.execute(
            "SELECT id FROM segments WHERE collection = ? AND scope = 'VECTOR'",
            (collection_id,),
        ).fetchone()
    finally:
        conn.close()
    if row is None:
        return None
    path = os.path.join(os.path.dirname(log_file), str(row[0]))
    return path if os.path.isdir(path) else None


def scrub_files(directory: str, ids: Sequence[str], dim: int) -> dict[str, int]:
    """Decoys in place of the erased elements' floats in `data_level0.bin`, and zeros
    past its last element there and in `length.bin`. Returns what was done: elements
    overwritten, bytes zeroed, and `unreadable` 1 when the header or the labels could not
    be read (nothing then changes). The caller holds the index's `SharedExclusive` exclusively."""
    done = {"elements": 0, "zeroed": 0, "unreadable": 0}
    data = os.path.join(directory, _DATA)
    try:
        with open(os.path.join(directory, "header.bin"), "rb") as f:
            head = f.read(_HEADER.size)
        _, off0, _max, count, size, label_at, data_at = _HEADER.unpack(head)
        file_size = os.path.getsize(data)
    except (OSError, struct.error):
        done["unreadable"] = 1
        return done
    if (
        off0 != 0
        or size == 0
        or label_at + 8 != size
        or data_at + 4 * dim != label_at
        or count * size > file_size
    ):
        done["unreadable"] = 1
        return done
    labels = _labels(directory, ids) if count and ids else {}
    if labels is None:
        done["unreadable"] = 1
        return done
    with open(data, "r+b") as f:
        if labels:
            block = np.fromfile(f, dtype=np.uint8, count=count * size).reshape(count, size)
            stored = block[:, label_at:size].copy().view("<u8").ravel()
            wanted = {label: id_ for id_, label in labels.items()}
            slots = [j for j, label in enumerate(stored.tolist()) if label in wanted]
            fill = decoys([wanted[int(stored[j])] for j in slots], dim)
            for j, v in zip(slots, fill, strict=True):
                f.seek(j * size + data_at)
                f.write(v.astype("<f4").tobytes())
            done["elements"] = len(slots)
        done["zeroed"] = _zero_tail(f, count * size, file_size)
        if done["elements"] or done["zeroed"]:
            f.flush()
            os.fsync(f.fileno())
    lengths = os.path.join(directory, _LENGTHS)
    if os.path.exists(lengths):  # one float per slot, written from the same block
        with open(lengths, "r+b") as f:
            zeroed = _zero_tail(f, count * 4, os.path.getsize(lengths))
            if zeroed:
                f.flush()
                os.fsync(f.fileno())
        done["zeroed"] += zeroed
    return done


def _zero_tail(f: Any, start: int, end: int) -> int:
    """Zeros from `start` to `end` when any byte there is not one (a tail written
    before is left as it is, so a look costs a read and no write); returns the bytes
    zeroed."""
    step = 1 << 20
    f.seek(start)
    dirty = False
    for at in range(start, end, step):
        if f.read(min(step, end - at)).strip(b"\0"):
            dirty = True
            break
    if not dirty:
        return 0
    f.seek(start)
    for at in range(start, end, step):
        f.write(bytes(min(step, end - at)))
    return end - start


class Tails:
    """Zeroes the tail of a collection's `data_level0.bin` after any call that wrote it.

    The file's modification time and size are kept per segment; a call after which they
    differ (the first in this client, a persist, another process's write) has the tail
    looked at, alone against other calls, and zeroed when it holds anything."""

    def __init__(self, log_file: str, lock: SharedExclusive) -> None:
        self._log_file = log_file
        self._lock = lock
        self._dirs: dict[str, str] = {}  # collection id -> its segment's directory
        # directory -> (mtime_ns, size); one dict operation at a time, atomic in CPython
        self._seen: dict[str, tuple[int, int]] = {}

    def check(self, collection: Any, dim: int) -> None:
        """After a call into `collection` (made outside the call's shared hold)."""
        key = str(collection.id)
        directory = self._dirs.get(key)
        if directory is None:
            directory = segment_dir(self._log_file, key)
            if directory is None:  # no segment files yet
                return
            self._dirs[key] = directory
        try:
            st = os.stat(os.path.join(directory, _DATA))
        except FileNotFoundError:
            return
        if self._seen.get(directory) == (st.st_mtime_ns, st.st_size):
            return
        with self._lock.exclusive():
            try:
                unreadable = scrub_files(directory, [], dim)["unreadable"]
                st = os.stat(os.path.join(directory, _DATA))
            except FileNotFoundError:  # the collection was dropped meanwhile
                return
            except OSError as e:  # a read-only file: Chroma's own writes fail there too
                log.warning("cannot zero the bytes past the last element in %s: %s",
                            directory, e)
                unreadable = 0
            if unreadable:
                log.warning(
                    "the HNSW files in %s have a layout this version of reverie does not "
                    "know; bytes past their last element are left as written", directory,
                )
        self._seen[directory] = (st.st_mtime_ns, st.st_size)


def _labels(directory: str, ids: Sequence[str]) -> dict[str, int] | None:
    """hnswlib's label of each of `ids` Chroma persisted (absent: never in the file)."""
    path = os.path.join(directory, "index_metadata.pickle")
    if not os.path.exists(path):
        return {}
    try:
        with open(path, "rb") as f:
            meta = _PlainData(f).load()
        id_to_label = meta["id_to_label"]
    except (OSError, pickle.UnpicklingError, KeyError, TypeError, EOFError, ValueError):
        return None
    return {i: int(id_to_label[i]) for i in ids if i in id_to_label}
