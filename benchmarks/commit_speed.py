"""Cost of the REM cycle's commit phase per cluster, as the SQLite store grows.

Fills a SQLite file with n memories (the synthetic texts of consolidation_speed.py) linked
in a chain of ENTITY edges (i -> i+1, like a conversation's entity links), plans one
cluster per 7 consecutive memories (n / 7 clusters: the whole store is consolidated, as
in a first cycle) and times `_execute_plan`, the journaled commit of every cluster, with
the vector index left out (a no-op), so only the record store's work is measured.

Baseline, in the same run: the same commit with `SQLiteStore.edges` reading `dst IN (...)`
without its index hint (SQLite then scans every edge of the namespace for each
cluster: the cost per cluster grows with the store). Also counts the SQL statements per
cluster by kind.

Run: python benchmarks/commit_speed.py [--sizes 2000 20000]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT / "benchmarks"))

CLUSTER = 7
NS = "bench"
T0 = datetime(2025, 1, 1, tzinfo=UTC)
HINT = " INDEXED BY edges_by_dst"


@contextmanager
def without_hint() -> Iterator[None]:
    """The baseline store: `edges` without the index hint (a patched copy of the
    module's code, restored after)."""
    import reverie.integrations.sqlite.store as ss

    saved = ss.SQLiteStore.edges
    source = Path(ss.__file__).read_text()
    assert f'"{HINT}"' in source, "the hint is gone from sqlite_store.py: update this script"
    scratch: dict[str, Any] = {}
    exec(compile(source.replace(f'"{HINT}"', '""'), ss.__file__, "exec"), scratch)
    ss.SQLiteStore.edges = scratch["SQLiteStore"].edges  # type: ignore[method-assign]
    try:
        yield
    finally:
        ss.SQLiteStore.edges = saved  # type: ignore[method-assign]


class Counting:
    """Connection proxy counting statements by their first words."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.kinds: collections.Counter[str] = collections.Counter()

    def _note(self, sql: str) -> None:
        words = sql.split()
        self.kinds[" ".join(words[:2]).upper() if words else "?"] += 1

    def execute(self, sql: str, *args: Any) -> Any:
        self._note(sql)
        return self._conn.execute(sql, *args)

    def executemany(self, sql: str, *args: Any) -> Any:
        self._note(sql)
        return self._conn.executemany(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def measure(n: int, tmp: Path, baseline: bool) -> dict[str, Any]:
    import consolidation_speed as cs

    from reverie.core import Kind, Memory, Tier
    from reverie.core import consolidation as C
    from reverie.core.models import Edge, EdgeType
    from reverie.core.policy import Policy
    from reverie.core.ports import WriteBatch
    from reverie.integrations.sqlite.store import SQLiteStore

    texts, _vectors, _topics = cs.synthetic(n)
    store = SQLiteStore(tmp / f"{n}-{'base' if baseline else 'now'}.db")
    try:
        for s in range(0, n, 1000):
            rng = range(s, min(s + 1000, n))
            mems = tuple(
                Memory(
                    id=f"m{i:06d}", namespace=NS, kind=Kind.EPISODIC, tier=Tier.TRACE,
                    text=texts[i], created_at=T0 + timedelta(minutes=i), importance=0.2,
                    sources=frozenset({f"s{i}"}),
                )
                for i in rng
            )
            edges = tuple(
                Edge(f"m{i:06d}", f"m{i + 1:06d}", EdgeType.ENTITY, 0.5)
                for i in rng if i + 1 < n
            )
            store.commit(WriteBatch(NS, mems, edges))
        policy = Policy()
        now = T0 + timedelta(days=60)
        planned = []
        for c in range(n // CLUSTER):
            ids = [f"m{i:06d}" for i in range(c * CLUSTER, (c + 1) * CLUSTER)]
            members = list(store.get_many(NS, ids).values())
            syn = C.synthesize_group(members, None, policy)
            planned.append(C._plan_cluster(C.fingerprint(ids), ids, syn))
        plan = {"state": "committing", "now": now.isoformat(), "strategy": "bench",
                "clusters": planned}
        deps = C.CycleDeps(store, policy, now, lambda ms: None,  # type: ignore[arg-type,return-value]
                           lambda nodes, retired: None)
        store.journal_put(NS, C.PLAN_KEY, plan)
        proxy = Counting(store._conn)  # type: ignore[arg-type]
        store._conn = proxy  # type: ignore[assignment]
        started, cpu = time.perf_counter(), time.process_time()
        with without_hint() if baseline else _nothing():
            outcomes = C._execute_plan(deps, NS, plan, lambda _s: None, None)
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu  # less distorted than wall time on a loaded machine
        store._conn = proxy._conn
        k = len(planned)
        assert sum(o.committed for o in outcomes) == k
        return {
            "memories": n, "clusters": k, "seconds": seconds, "ms_per_cluster": 1000 * seconds / k,
            "cpu_seconds": cpu, "cpu_ms_per_cluster": 1000 * cpu / k,
            "statements_per_cluster": {
                name: round(c / k, 2) for name, c in proxy.kinds.most_common()
            },
        }
    finally:
        store.close()


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000])
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            for baseline in (True, False):
                r = measure(n, Path(tmp), baseline)
                r["variant"] = "edges without index hint" if baseline else "current"
                rows.append(r)
                print(f"n={n:6d} {r['variant']:24s} {r['clusters']:5d} clusters "
                      f"{r['seconds']:7.2f} s  {r['ms_per_cluster']:6.2f} ms/cluster  "
                      f"CPU {r['cpu_ms_per_cluster']:6.2f} ms/cluster", flush=True)
    load = os.getloadavg()
    meta = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        "python": platform.python_version(), "sqlite": sqlite3.sqlite_version,
        "load_average_at_end": [round(x, 1) for x in load],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "commit_speed.json").write_text(json.dumps({"meta": meta, "rows": rows},
                                                           indent=2) + "\n")
    lines = [
        "# REM commit phase: cost per cluster as the SQLite store grows",
        "",
        f"Measured {meta['date']} on {meta['machine']}, Python {meta['python']}, SQLite "
        f"{meta['sqlite']}; load average at the end {meta['load_average_at_end']} (a shared "
        "machine: times are inflated and noisy). n memories in an ENTITY-edge chain, n/7 "
        "clusters of 7, journaled commit of all of them, vector index left out.",
        "",
        "| memories | variant | clusters | commit s | ms per cluster | CPU ms per cluster |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['memories']} | {r['variant']} | {r['clusters']} | "
                     f"{r['seconds']:.2f} | {r['ms_per_cluster']:.2f} | "
                     f"{r['cpu_ms_per_cluster']:.2f} |")
    last = [r for r in rows if r["variant"] == "current"][-1]
    lines += ["", f"SQL statements per cluster (current, {last['memories']} memories): "
              + ", ".join(f"{k} {v}" for k, v in last["statements_per_cluster"].items())]
    (RESULTS / "commit_speed.md").write_text("\n".join(lines) + "\n")
    print(f"saved {RESULTS / 'commit_speed.md'}")


if __name__ == "__main__":
    sys.exit(main())
