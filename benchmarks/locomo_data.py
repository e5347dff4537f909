"""LoCoMo's conversations and questions, and how a ranking is scored against them.

Shared by every LoCoMo benchmark (`locomo.py`, `locomo_tiers.py`, `locomo_langgraph.py`,
`locomo_llamaindex.py`), so that all of them read the data and count a hit the same way.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
KS = (1, 5, 10, 20, 50)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass
class Turn:
    dia_id: str
    text: str
    at: datetime


@dataclass
class Question:
    text: str
    category: int
    evidence: frozenset[str]


def parse_when(s: str) -> datetime:
    return datetime.strptime(s.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def normalise_evidence(raw: Sequence[str], turn_ids: set[str]) -> frozenset[str]:
    """The dataset's evidence rules: split on ';' and spaces, D:11:26 -> D11:26, D30:05 -> D30:5,
    drop ids that are not turns."""
    out = set()
    for item in raw:
        for part in re.split(r"[;\s]+", item):
            m = re.fullmatch(r"D:?(\d+):0*(\d+)", part.strip())
            if m:
                did = f"D{m.group(1)}:{m.group(2)}"
                if did in turn_ids:
                    out.add(did)
    return frozenset(out)


def load(path: Path) -> list[tuple[str, list[Turn], list[Question]]]:
    convs = []
    for c in json.loads(path.read_text()):
        conv = c["conversation"]
        sessions = sorted(
            (k for k in conv if re.fullmatch(r"session_\d+", k) and isinstance(conv[k], list)),
            key=lambda k: int(k.split("_")[1]),
        )
        turns = []
        for s in sessions:
            start = parse_when(conv[f"{s}_date_time"])
            for i, t in enumerate(conv[s]):
                text = f"{t['speaker']}: {t['text']}"
                if t.get("blip_caption"):
                    text += f" [shares an image: {t['blip_caption']}]"
                turns.append(Turn(t["dia_id"], text, start + timedelta(seconds=30 * i)))
        ids = {t.dia_id for t in turns}
        qs = []
        for q in c["qa"]:
            if q.get("category") not in CATEGORIES:
                continue
            ev = normalise_evidence(q.get("evidence", []), ids)
            if ev:
                qs.append(Question(q["question"], int(q["category"]), ev))
        convs.append((c["sample_id"], turns, qs))
    return convs


class Scores:
    """recall@k and all@k, per category and overall."""

    def __init__(self) -> None:
        self.recall: dict[tuple[int, int], list[float]] = defaultdict(list)
        self.all: dict[tuple[int, int], list[float]] = defaultdict(list)

    def add(self, q: Question, ranked_sources: Sequence[frozenset[str]]) -> None:
        for k in KS:
            got: set[str] = set().union(*ranked_sources[:k]) if ranked_sources else set()
            hit = len(q.evidence & got)
            for cat in (q.category, 0):
                self.recall[(cat, k)].append(hit / len(q.evidence))
                self.all[(cat, k)].append(float(hit == len(q.evidence)))

    def table(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for cat in (0, *CATEGORIES):
            name = "overall" if cat == 0 else f"{cat} {CATEGORIES[cat]}"
            row = {}
            for k in KS:
                row[f"recall@{k}"] = float(np.mean(self.recall[(cat, k)]))
                row[f"all@{k}"] = float(np.mean(self.all[(cat, k)]))
            row["n"] = len(self.recall[(cat, KS[0])])
            out[name] = row
        return out
