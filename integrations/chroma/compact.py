"""Embedded Chroma's HNSW files shrink back to the live vectors after many deletes.

hnswlib (under Chroma 1.x) keeps a slot in `data_level0.bin` (the vector, its links and
its label: about 1.7 kB at 384 dimensions) for every vector ever added, and a delete only
marks its slot; Chroma never reuses them. A namespace whose memories are mostly collected
by GC or forgotten so keeps files sized by everything it ever held. The only way to give
the slots back is a new graph: `rebuild` copies the live vectors, with their metadata, into
a new collection and puts it in the namespace's place. The vectors are the ones the index
already holds (the same float32 the record store keeps beside each record), so no model
is called and recall ranks the same items.

Crash safety, with `N` the namespace's collection name:

1. a collection `N-next` is filled with the live items and checked against `N`'s count;
2. `N` is renamed `N-old`, then `N-next` is renamed `N`;
3. `N-old` is deleted and its segment directory removed (Chroma's `delete_collection`
   leaves the directory on disk in process).

`settle`, run when a namespace is first resolved, finishes or undoes what a kill left: with
`N` present, any `N-next` (unfinished copy) and `N-old` (switched, not yet dropped) are
dropped; with `N` missing and `N-old` present (killed between the renames), `N-old` is
renamed back and `N-next` dropped. At every point one complete copy of the live vectors
is under `N` or `N-old`, so the index never loses a vector and the record store's count
against it (the vectors-behind check on open) still holds. A segment directory a kill left
after its collection was deleted is named in the new collection's metadata and removed.

Everything runs alone against the index's other calls (`SharedExclusive.exclusive`), and
each Chroma call in it has the index's per-call deadline (`chroma.bounded`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sqlite3
import struct
from typing import Any

from reverie.core.errors import StoreCorrupt
from reverie.integrations.chroma.collections import (
    NS_KEY,
    Collections,
    chunks,
    collection_name,
)
from reverie.integrations.chroma.scrub import scrub_files, segment_dir

__all__ = ["deleted_fraction", "rebuild", "settle"]

log = logging.getLogger(__name__)

_NEXT = "-next"
_OLD = "-old"
_REPLACES = "reverie_replaces_segment"  # the old segment directory, removed once gone
_COUNT = struct.Struct("<I3Q")  # version, offsetLevel0, max elements, element count


def _named(client: Any, name: str) -> Any | None:
    from chromadb.errors import NotFoundError

    try:
        return client.get_collection(name=name, embedding_function=None)
    except NotFoundError:
        return None


def _owned(col: Any, namespace: str) -> bool:
    return bool((col.metadata or {}).get(NS_KEY) == namespace)


def _drop(client: Any, log_file: str, col: Any) -> None:
    """Delete a collection and its segment directory."""
    from chromadb.errors import NotFoundError

    directory = segment_dir(log_file, str(col.id))
    with contextlib.suppress(NotFoundError):
        client.delete_collection(name=col.name)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


def _remove_replaced(log_file: str, col: Any) -> None:
    """The old segment directory named by the rebuilt collection, if a kill left it."""
    name = (col.metadata or {}).get(_REPLACES)
    if not isinstance(name, str) or not name or os.sep in name or name.startswith("."):
        return
    conn = sqlite3.connect(log_file, timeout=30.0)
    try:
        live = conn.execute("SELECT 1 FROM segments WHERE id = ?", (name,)).fetchone()
    finally:
        conn.close()
    path = os.path.join(os.path.dirname(log_file), name)
    if live is None and os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)


def settle(cols: Collections, log_file: str, namespace: str) -> None:
    """Finish or undo a rebuild of `namespace` a kill interrupted (see the module doc)."""
    client = cols.client
    name = collection_name(namespace)
    main = _named(client, name)
    nxt = _named(client, name + _NEXT)
    old = _named(client, name + _OLD)
    if main is None and old is not None and _owned(old, namespace):
        old.modify(name=name)
        main, old = old, None
        log.warning("an interrupted rebuild of namespace %r's vector index was undone", namespace)
    dropped = False
    for leftover in (nxt, old):
        if leftover is not None and _owned(leftover, namespace):
            _drop(client, log_file, leftover)
            dropped = True
    if main is not None:
        _remove_replaced(log_file, main)
        main_dir = segment_dir(log_file, str(main.id)) if dropped else None
        if main_dir is not None:  # switched in before its files were scrubbed
            scrub_files(main_dir, [], cols.dimension(main))


def _configuration(col: Any, cols: Collections) -> dict[str, Any]:
    """The HNSW configuration the collection was made with (a rebuild keeps it), or the
    index's own for a collection that does not say."""
    hnsw = (getattr(col, "configuration", None) or {}).get("hnsw")
    return {"hnsw": dict(hnsw)} if isinstance(hnsw, dict) else cols.hnsw.configuration()


def deleted_fraction(log_file: str, collection_id: str, live: int) -> float:
    """The share of the persisted HNSW slots that hold deleted vectors (0 before the
    first persist, or when more are live than were persisted)."""
    directory = segment_dir(log_file, collection_id)
    if directory is None:
        return 0.0
    try:
        with open(os.path.join(directory, "header.bin"), "rb") as f:
            _, _, _, count = _COUNT.unpack(f.read(_COUNT.size))
    except (OSError, struct.error):
        return 0.0
    if count <= 0 or live >= count:
        return 0.0
    return float(1.0 - live / count)


def rebuild(cols: Collections, log_file: str, namespace: str, min_fraction: float) -> int:
    """Rebuild the namespace's collection from its live vectors when at least
    `min_fraction` of its HNSW slots are deleted ones. Returns the slots given back
    (0 when nothing was rebuilt). A failure midway leaves the namespace to be settled
    when it is next resolved, so the index stays usable in this process too."""
    with cols.files.exclusive():
        settle(cols, log_file, namespace)
        cols.settled.add(namespace)
        cols.forget(namespace)
        try:
            return _rebuild(cols, log_file, namespace, min_fraction)
        except BaseException:
            cols.settled.discard(namespace)
            raise
        finally:
            cols.forget(namespace)


def _rebuild(cols: Collections, log_file: str, namespace: str, min_fraction: float) -> int:
    client = cols.client
    name = collection_name(namespace)
    old = cols.get(namespace)
    if old is None:
        return 0
    live = int(old.count())
    fraction = deleted_fraction(log_file, str(old.id), live)
    if fraction <= 0.0 or fraction < min_fraction:
        return 0
    old_dir = segment_dir(log_file, str(old.id))
    slots = round(live / (1.0 - fraction)) - live
    meta = dict(old.metadata or {})
    meta[_REPLACES] = os.path.basename(old_dir) if old_dir else ""
    new = client.create_collection(
        name=name + _NEXT,
        configuration=_configuration(old, cols),
        metadata=meta,
        embedding_function=None,
    )
    for s in chunks(live, cols.batch_size()):  # one call, and deadline, per batch
        page = old.get(include=["embeddings", "metadatas"], limit=s.stop - s.start, offset=s.start)
        if page["ids"]:
            new.add(ids=page["ids"], embeddings=page["embeddings"], metadatas=page["metadatas"])
    copied = int(new.count())
    if copied != live or int(old.count()) != live:
        _drop(client, log_file, new)
        raise StoreCorrupt(
            f"the rebuilt vector index of namespace {namespace!r} ({cols.location}) "
            f"held {copied} of {live} vectors; the old one is kept"
        )
    old.modify(name=name + _OLD)
    new.modify(name=name)
    _drop(client, log_file, old)
    # hnswlib's new block was allocated uninitialised past its last element, and a
    # persisted copy of it can hold freed memory (erased vectors among it): zeroed, as
    # after any erasure (`scrub.scrub_files`)
    new_dir = segment_dir(log_file, str(new.id))
    if new_dir is not None:
        scrub_files(new_dir, [], cols.dimension(new))
    return slots
