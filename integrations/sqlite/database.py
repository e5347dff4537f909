"""One SQLite file opened as a reverie store: refuse a foreign file, migrate, and run every
read and write as one transaction, the writes on one shared connection.

- WAL, and ``BEGIN IMMEDIATE`` for every write. WAL lets readers run while a writer
  commits; taking the write lock at ``BEGIN`` (not at the first write) means a
  read-modify-write such as a compare-and-set or an access count cannot interleave with
  another process's, so no update is lost and no deadlock-by-upgrade happens.
- A failure at any point of a write rolls it back, so the file is either as it was or fully
  updated.
- Opening never modifies a file that is not already a reverie store (or empty): a user who
  points reverie at the wrong path keeps their data.
- Thread-safe: writes go through one connection under a re-entrant lock, because sqlite3
  connections must not run two statements at once and the engine's async methods call in
  from worker threads. A read while another thread writes goes through a read-only
  connection of its own (a pool, one per concurrent reader), so a recall never waits for
  a write: waiting, a recall in one thread sat out every write of another thread, a bulk
  ingest's chunk or a REM cycle's batch (hundreds of milliseconds). A read while no
  write runs takes the write connection, whose page cache stays warm; a thread inside a
  write reads through the write, so it sees the writes before it.
  Process-safe: WAL plus ``BEGIN IMMEDIATE`` with a busy timeout.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from reverie.core.errors import (
    BackendUnavailable,
    InvalidInput,
    SchemaTooNew,
    StorageFull,
    StoreCorrupt,
)
from reverie.core.policy import DEFAULT_POLICY
from reverie.integrations.sqlite.schema import (
    MARKER_NAME,
    MARKER_VALUE,
    MIGRATIONS,
    SCHEMA_VERSION,
)

__all__ = ["Database", "chunks", "fits_one_list", "marks"]

_SQLITE_HEADER = b"SQLite format 3\x00"
# Well under SQLite's bound-parameter limit (999 on old builds), so IN (...) lists are safe.
_CHUNK = 400
# Pages this process keeps in its own cache, in KiB (SQLite's default is 2 MB). A recall
# reads a hundred or so rows and index entries scattered over the file; with the default,
# most of those pages come from the operating system again on every query (a system call
# each). The price is memory: at most this much per open store, only as pages are read.
_PAGE_CACHE_KIB = 65_536
# Bytes of the file read through a memory map (SQLite caps it at its build's limit, 2 GB
# on most): a page beyond the page cache is then read from the operating system's cache
# without a system call and a copy. Recall at 300k memories (a 1.5 GB file) took 9.2-9.6
# ms with it against 10.5-10.9 ms without, taking turns. The mapped pages a process has
# read count in its resident size (they are the file's, and the system reclaims them like
# any cached file page), and a disk that fails a read stops the process (SIGBUS) where
# SQLite would raise an error: one more reason the store wants a local file system. A
# page a write changes is copied out of the map first, and a small file fits the page
# cache anyway: single observes into a new store ran about 5% slower with the map, and a
# REM cycle over 100k flagged memories 73.0 s against 68.4 s, taking turns.
_MMAP_BYTES = 1 << 31
_PAGE_BYTES = 8192  # a new file's page size (an existing file keeps its own)

T = TypeVar("T")


def chunks(items: Sequence[T], size: int = _CHUNK) -> Iterator[Sequence[T]]:
    """`items` in pieces small enough for one `IN (...)` list."""
    for i in range(0, len(items), size):
        yield items[i : i + size]


def fits_one_list(n: int) -> bool:
    """Whether `n` items fit one `IN (...)` list, so one statement reads them all."""
    return n <= _CHUNK


def marks(n: int) -> str:
    """`?,?,...`: n placeholders for an `IN (...)` list."""
    return ",".join("?" * n)


_SYNCHRONOUS = ("NORMAL", "FULL", "EXTRA")


class WriteLock:
    """A re-entrant lock that tells whether the calling thread holds it: a thread inside
    a write must read through the write's connection (to see its own uncommitted
    writes), another thread reads through a connection of its own while it is held."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._owner: int | None = None  # set and cleared by the holder only
        self._depth = 0

    def __enter__(self) -> WriteLock:
        self._lock.acquire()
        self._held()
        return self

    def _held(self) -> None:
        self._owner = threading.get_ident()
        self._depth += 1

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._owner = None
        self._lock.release()

    def held_here(self) -> bool:
        return self._owner == threading.get_ident()

    def enter_if_free(self) -> bool:
        """Take the lock if no other thread holds it (True), else leave it (False); a
        True must be followed by `__exit__`."""
        if not self._lock.acquire(blocking=False):
            return False
        self._held()
        return True


class Database:
    """The connection to one reverie SQLite file, and its transactions."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "NORMAL",
        busy_seconds: float = DEFAULT_POLICY.deadlines.store_call_seconds,
    ) -> None:
        """`synchronous`: NORMAL (the default) loses no commit to a killed process, but a
        power loss or OS crash may roll back the last commits (never corrupting the file);
        FULL syncs the WAL at every commit, so an acknowledged write survives those too,
        at the cost of one fsync per write (docs/durability.md). `busy_seconds`: how long
        a statement waits for another process's lock before `BackendUnavailable`
        (`Policy.deadlines.store_call_seconds`)."""
        sync = str(synchronous).upper()
        if sync not in _SYNCHRONOUS:
            raise InvalidInput(
                f"synchronous must be one of {', '.join(_SYNCHRONOUS)}, not {synchronous!r}"
            )
        self._busy_ms = max(1, round(busy_seconds * 1000))
        self._memory = os.fspath(path) == ":memory:"
        self._path = Path(os.fspath(path))
        self.lock = WriteLock()
        self._conn: sqlite3.Connection | None = None
        # the idle read-only connections (one in use is its reader's until it is returned)
        self._idle: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._together = False  # inside `together()`: writes are savepoints of one transaction
        if not self._memory:
            self._check_file()
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise BackendUnavailable(
                    f"cannot open the reverie store at {self._path}: its folder cannot be "
                    f"made ({e.strerror or e}); check the path and its permissions"
                ) from None
        try:
            conn = sqlite3.connect(
                os.fspath(path),
                timeout=self._busy_ms / 1000,
                isolation_level=None,  # we issue BEGIN/COMMIT ourselves
                check_same_thread=False,
            )
        except sqlite3.Error as e:
            raise BackendUnavailable(
                f"cannot open the reverie store at {self._path}: {e}; check the path and "
                "its permissions"
            ) from None
        try:
            conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            self._validate(conn)  # before anything that writes
            if not self._memory:
                # a new file's pages hold 8 KiB: a record row with its kept (half-precision)
                # embedding is ~1.6 KB, so a 4 KiB page fits two and leaves a fifth empty
                conn.execute(f"PRAGMA page_size = {_PAGE_BYTES}")
                # a new file hands the pages a deletion frees back to the file system
                # (`free_pages`); an older one takes the mode at its next VACUUM
                conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise BackendUnavailable(
                        f"SQLite refused WAL mode for {self._path} (got {mode!r}); put the "
                        "store on a local file system"
                    )
            conn.execute(f"PRAGMA synchronous = {sync}")
            conn.execute("PRAGMA foreign_keys = ON")
            # forget is for privacy: freed bytes are zeroed, not left readable in the file
            conn.execute("PRAGMA secure_delete = ON")
            conn.execute(f"PRAGMA cache_size = -{_PAGE_CACHE_KIB}")
            conn.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
            self._conn = conn
            self._migrate()
        except BaseException as e:
            self._conn = None
            conn.close()
            if isinstance(e, sqlite3.Error):  # WAL or pragma refused, before `_migrate`
                raise self._translate(e) from None
            raise

    @property
    def path(self) -> Path:
        return self._path

    @property
    def is_open(self) -> bool:
        return self._conn is not None

    def corrupt(self, why: str) -> StoreCorrupt:
        return StoreCorrupt(
            f"{self._path} {why}. reverie did not modify it. Point reverie at another path "
            "(a new file is created there), or restore the store from a backup."
        )

    # --- opening --------------------------------------------------------------------------

    def _check_file(self) -> None:
        """Reject a foreign file by its header before SQLite gets a chance to touch it."""
        if self._path.is_dir():
            raise InvalidInput(
                f"{self._path} is a directory; pass a file path such as {self._path / 'reverie.db'}"
            )
        if not self._path.exists():
            return
        with self._path.open("rb") as f:
            header = f.read(len(_SQLITE_HEADER))
        if header and header != _SQLITE_HEADER:
            raise self.corrupt("is not a SQLite database")

    def _validate(self, conn: sqlite3.Connection) -> None:
        """Read-only checks: empty file, reverie store of a known version, or refuse."""
        try:
            tables = {
                r[0]
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
                )
            }
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if not tables and version == 0:
                return  # a new (or empty) file: migration 1 will create the schema
            marker = None
            if "meta" in tables:
                try:
                    row = conn.execute(
                        "SELECT value FROM meta WHERE name = ?", (MARKER_NAME,)
                    ).fetchone()
                except sqlite3.OperationalError:  # someone else's `meta` table
                    row = None
                marker = row[0] if row else None
        except sqlite3.DatabaseError as e:
            if _cannot_open(e):  # the file may be fine: a read-only or unreachable folder
                raise self._unopenable(e) from None
            raise self.corrupt(f"cannot be read as a SQLite database ({e})") from None
        if marker != MARKER_VALUE:
            raise self.corrupt("is a SQLite database of another application, not a reverie store")
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"{self._path} has store schema version {version}, but this reverie knows "
                f"versions up to {SCHEMA_VERSION}: it was written by a newer reverie. Upgrade "
                "reverie (pip install -U reverie) to open it; the file was not modified."
            )
        if version < 1:
            raise self.corrupt("has a reverie marker but no schema version")

    def _migrate(self) -> None:
        with self.write() as conn:
            # Re-read inside the write lock: another process may have migrated meanwhile.
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise SchemaTooNew(
                    f"{self._path} was upgraded by a newer reverie to schema version "
                    f"{version} while opening; upgrade reverie to open it"
                )
            for target in range(version + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[target - 1](conn)
                conn.execute(f"PRAGMA user_version = {target}")

    # --- transactions ---------------------------------------------------------------------

    def connection(self) -> sqlite3.Connection:
        """The open connection (`BackendUnavailable` once closed)."""
        if self._conn is None:
            raise BackendUnavailable(
                f"the reverie store at {self._path} is closed; open a new SQLiteStore"
            )
        return self._conn

    def _unopenable(self, e: sqlite3.Error) -> BackendUnavailable:
        return BackendUnavailable(
            f"cannot open or write the reverie store at {self._path} ({e}); SQLite needs "
            "to write the file and its -wal and -shm files beside it: check that the folder "
            "is writable, on a local file system and not mounted read-only"
        )

    def _translate(self, e: sqlite3.Error) -> Exception:
        msg = str(e)
        translated: Exception = e
        if isinstance(e, sqlite3.OperationalError) and ("locked" in msg or "busy" in msg):
            translated = BackendUnavailable(
                f"the reverie store at {self._path} stayed locked by another writer for more "
                f"than {self._busy_ms / 1000:g} s ({msg}); retry later"
            )
        elif _is_full(e):
            translated = StorageFull(
                f"the reverie store at {self._path} cannot grow: {msg}. The write was not "
                "applied and the store stays readable; free disk space (or raise the size "
                "limit), then retry"
            )
        elif "malformed" in msg or "not a database" in msg:
            translated = self.corrupt(f"is damaged ({msg})")
        elif _cannot_open(e):
            translated = self._unopenable(e)
        return translated

    @contextmanager
    def together(self) -> Iterator[None]:
        """Every write of the body in one IMMEDIATE transaction, each still all-or-nothing
        as a savepoint of it (a failed write rolls back alone); reads see the writes before
        them. A burst of small writes then costs one commit. Other threads and processes
        wait for the whole body, so keep it short (a bulk ingest's chunk)."""
        with self.write():
            self._together = True
            try:
                yield
            finally:
                self._together = False

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One IMMEDIATE transaction: all of the body or none of it (inside `together`, a
        savepoint of its transaction)."""
        with self.lock:
            conn = self.connection()
            if self._together and conn.in_transaction:
                yield from self._savepoint(conn)
                return
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as e:
                raise self._translate(e) from None
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise self._translate(exc) from None
                raise

    def _savepoint(self, conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        conn.execute("SAVEPOINT reverie_write")
        try:
            yield conn
            conn.execute("RELEASE reverie_write")
        except BaseException as exc:
            conn.execute("ROLLBACK TO reverie_write")
            conn.execute("RELEASE reverie_write")
            if isinstance(exc, sqlite3.Error):
                raise self._translate(exc) from None
            raise

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read snapshot, so multi-statement reads (count, get_many) agree with themselves
        (inside a write, the write's transaction: it sees the writes before it)."""
        with self._read_connection() as (conn, writer):
            if writer and conn.in_transaction:
                yield conn
                return
            yield from self._snapshot(conn)

    @contextmanager
    def single(self) -> Iterator[sqlite3.Connection]:
        """For a read of one statement: SQLite runs a statement outside a transaction in
        a read snapshot of its own, so no BEGIN and COMMIT are sent around it (two calls
        fewer, each of which hands the GIL to any other thread waiting for it). The
        statement's rows must be read to the end inside the block."""
        with self._read_connection() as (conn, _writer):
            try:
                yield conn
            except sqlite3.Error as e:
                raise self._translate(e) from None

    @contextmanager
    def _read_connection(self) -> Iterator[tuple[sqlite3.Connection, bool]]:
        """The connection a read goes through, and whether it is the write connection:
        that one for a thread inside a write (it sees its own writes), for an in-memory
        store, and when no write runs (its page cache stays warm, where a read-only
        connection's is emptied by every commit of the writer: WAL resets another
        connection's cache); else a read-only connection of the pool, so the read does
        not wait for the write to commit."""
        taken = not self._memory and not self.lock.held_here() and self.lock.enter_if_free()
        if self._memory or self.lock.held_here():
            try:
                with self.lock:
                    yield self.connection(), True
            finally:
                if taken:
                    self.lock.__exit__()
            return
        with self._reader() as conn:
            yield conn, False

    def _snapshot(self, conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        try:
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")
        except sqlite3.Error as e:
            raise self._translate(e) from None

    def writing_here(self) -> bool:
        """Whether the calling thread is inside a write (its reads see that write)."""
        return self.lock.held_here()

    @contextmanager
    def _reader(self) -> Iterator[sqlite3.Connection]:
        """An idle read-only connection for the body, opened when none is idle. A
        connection in use by one thread is never lent to another; one whose read failed
        is closed, not returned."""
        self.connection()  # BackendUnavailable once the store is closed
        with self._readers_lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._open_reader()
        ok = False
        try:
            yield conn
            ok = not conn.in_transaction
        finally:
            with self._readers_lock:
                keep = ok and self._conn is not None  # closed meanwhile: closed here
                if keep:
                    self._idle.append(conn)
            if not keep:
                conn.close()

    def _open_reader(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                os.fspath(self._path),
                timeout=self._busy_ms / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as e:
            raise self._translate(e) from None
        try:
            conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            conn.execute("PRAGMA query_only = ON")  # a read path never writes the file
            conn.execute(f"PRAGMA cache_size = -{_PAGE_CACHE_KIB}")
            conn.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
        except sqlite3.Error as e:
            conn.close()
            raise self._translate(e) from None
        return conn

    def checkpoint(self) -> dict[str, int | bool]:
        """Copy the WAL into the main file and truncate it to zero bytes
        (`PRAGMA wal_checkpoint(TRUNCATE)`), so pages that held deleted rows leave the
        `-wal` file (the main file zeroes them itself: `secure_delete`). `complete` is
        False when another connection's open read kept part of the WAL in use; the next
        checkpoint (any forget or gc, or SQLite's own at 1000 pages) finishes it."""
        if self._memory:
            return {"complete": True, "wal_frames": 0}
        with self.lock:
            conn = self.connection()
            try:
                busy, frames, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.Error as e:
                raise self._translate(e) from None
        return {"complete": not busy, "wal_frames": int(frames)}

    def free_pages(self) -> int:
        """Give the file's free pages back to the file system (`incremental_vacuum`: it
        moves pages from the file's end into the holes, no full rewrite), so a store
        shrinks after gc or forget; returns the pages freed (0 for a file made without
        `auto_vacuum`, until a VACUUM converts it)."""
        if self._memory:
            return 0
        with self.lock:
            try:
                conn = self.connection()
                if conn.in_transaction:  # inside `together()`: the next deletion frees them
                    return 0
                before = int(conn.execute("PRAGMA page_count").fetchone()[0])
                conn.executescript("PRAGMA incremental_vacuum;")  # runs it to the end
                return before - int(conn.execute("PRAGMA page_count").fetchone()[0])
            except sqlite3.Error as e:
                raise self._translate(e) from None

    def vacuum(self) -> None:
        """Rebuild the file without its free pages (outside any transaction)."""
        if self._memory:
            return
        with self.lock:
            try:
                self.connection().execute("VACUUM")
            except sqlite3.Error as e:
                raise self._translate(e) from None

    def close(self) -> None:
        with self.lock:
            with self._readers_lock:
                idle, self._idle = self._idle, []
                conn, self._conn = self._conn, None
            for r in idle:  # one in use is closed when its read ends
                r.close()
            if conn is not None:
                conn.close()


_SQLITE_FULL = 13
# SQLITE_PERM, SQLITE_READONLY, SQLITE_IOERR, SQLITE_CANTOPEN: the file cannot be opened
# or written where it is (permissions, a read-only mount, a failing disk), not damage
_CANNOT_OPEN = frozenset({3, 8, 10, 14})


def _cannot_open(e: sqlite3.Error) -> bool:
    code = getattr(e, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in _CANNOT_OPEN


def _is_full(e: sqlite3.Error) -> bool:
    """SQLITE_FULL: the disk is full or the file reached `max_page_count`."""
    return getattr(e, "sqlite_errorcode", None) == _SQLITE_FULL or "disk is full" in str(e)
