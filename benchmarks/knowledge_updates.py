"""Knowledge updates through free text: does the current value win, and does anything
valid get retired by mistake?

An agent logs conversation through `observe(text)`. When a fact changes ("the deadline
was extended to May 20"), recall should answer with the new value, not the old message
whose words the question reuses; and a turn that only looks like a change ("color
correction", an assistant's "actually") must not retire a valid memory.

Three data sources, three systems on the same turns with the same embedder
(all-MiniLM-L6-v2, offline):
  reverie - `observe` every turn at its time, `recall` (defaults, k=10, no reinforcement)
  dense   - plain cosine top-k over the turn embeddings
  bm25    - plain BM25 over the turns (the BM25 reverie's lexical channel uses, FTS5's
            constants), with nothing ever retired
Data:
  1. generated scenarios (benchmarks/knowledge_scenarios.py), two seeded splits: `tune`
     and `report` (report is the published one);
  2. GoodAI LTM "Colours" (../shared/data/goodai_ltm/colours.jsonl): each script's
     statements separated by seeded filler chat, the question asked at the end;
  3. LoCoMo (../shared/data/locomo/locomo10.json): every turn observed at its session
     time; every memory retired at ingest is listed beside the turn that retired it.
A hit holds a value when it carries the turn that stated it (memories carry their
source turn ids), never by matching the value's words.

Run: python benchmarks/knowledge_updates.py [--split tune|report|both] [--limit N]
         [--locomo-conversations N] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import MemoEmbedder
from knowledge_scenarios import SEEDS, Scenario, coverage, filler, generate

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
COLOURS = DATA / "goodai_ltm" / "colours.jsonl"
K = 10
SYSTEMS = ("reverie", "dense", "bm25")
COLOUR_SEED = 4242
TARGETS = {"top1": 0.90, "stale_above": 0.05, "false_supersession_rate": 0.01}
COLOUR_WORDS = re.compile(
    r"\b(purple|blue|white|yellow|brown|red|beige|tan|cyan|khaki|pink|green|cream|magenta|"
    r"black|orange|grey|gray|silver|gold|teal|navy|maroon|olive|violet|indigo|turquoise|"
    r"lavender)\b",
    re.IGNORECASE,
)


# For reading the LoCoMo list only (which words the retiring turn holds); the engine's
# own detection is whatever it is, this does not reproduce it.
CUES = re.compile(
    r"\b(?:actually|no longer|not anymore|any ?more|switched to|changed to|moved to|"
    r"instead(?: of)?|correction|i was wrong|scratch that|from now on|these days|now)\b",
    re.IGNORECASE,
)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- baselines


class TurnIndex:
    """The two plain baselines over one conversation's turns: cosine and BM25."""

    def __init__(self, ids: Sequence[str], texts: Sequence[str], embedder: MemoEmbedder):
        from reverie.integrations.lexical.bm25 import term_frequencies

        self.ids = list(ids)
        vecs = embedder.embed(list(texts)).astype(np.float64)
        self.vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        self.embedder = embedder
        self.tf: list[Counter[str]] = []
        self.lengths: dict[str, int] = {}
        for i, t in zip(self.ids, texts, strict=True):
            tf, n = term_frequencies(t)
            self.tf.append(tf)
            self.lengths[i] = n
        self.order = {i: n for n, i in enumerate(self.ids)}

    def dense(self, query: str, k: int) -> list[frozenset[str]]:
        q = self.embedder.embed([query])[0].astype(np.float64)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        order = np.argsort(-(self.vecs @ q), kind="stable")[:k]
        return [frozenset({self.ids[i]}) for i in order]

    def bm25(self, query: str, k: int) -> list[frozenset[str]]:
        from reverie.core.text import query_terms
        from reverie.integrations.lexical.bm25 import bm25_top

        terms = dict.fromkeys(query_terms(query))
        postings = {
            term: {i: tf[term] for i, tf in zip(self.ids, self.tf, strict=True) if term in tf}
            for term in terms
        }
        top = bm25_top(postings, self.lengths, len(self.ids), sum(self.lengths.values()), k,
                       self.order)
        return [frozenset({doc}) for doc, _ in top]


def rank_of(ranked: Sequence[frozenset[str]], turns: Iterable[str]) -> int | None:
    want = set(turns)
    for n, sources in enumerate(ranked):
        if sources & want:
            return n
    return None


def judge(ranked: Sequence[frozenset[str]], current: Iterable[str],
          stale: Iterable[str]) -> dict[str, Any]:
    cur = rank_of(ranked, current)
    old = rank_of(ranked, stale)
    stale_above = old is not None and (cur is None or old < cur)
    return {"current_rank": cur, "stale_rank": old, "top1": cur == 0,
            "top3": cur is not None and cur < 3, "stale_above": stale_above}


# ----------------------------------------------------------------------------- scenarios


def _rate(xs: Sequence[bool]) -> float | None:
    return float(np.mean(xs)) if xs else None


def run_scenarios(engine: Any, clock: Any, embedder: MemoEmbedder,
                  scenarios: Sequence[Scenario]) -> dict[str, Any]:
    from reverie.core.models import Status
    from reverie.core.writing import UPDATE_KEY

    embedder.warm([t.text for s in scenarios for t in s.turns]
                  + [p.question for s in scenarios for p in s.probes])
    probes: list[dict[str, Any]] = []
    observe_ms: list[float] = []
    audit: list[dict[str, Any]] = []  # every memory retired at ingest
    keep_total = keep_hidden = 0
    neg_scen = neg_scen_hit = 0
    stale_total = stale_correct = stale_wrong_link = 0
    # every version link written at ingest (a newer text marked as replacing an older):
    # right when both state one fact and the newer is a later value of it
    links: list[dict[str, Any]] = []
    for n, sc in enumerate(scenarios, 1):
        ns = f"ku/{sc.id}"
        by_id = {t.id: t for t in sc.turns}
        texts = {t.id: t.text for t in sc.turns}
        for t in sc.turns:
            clock.set(t.at)
            t0 = time.perf_counter()
            engine.observe(t.text, namespace=ns, source=t.id, at=t.at)
            observe_ms.append(1000 * (time.perf_counter() - t0))
        clock.set(sc.asked_at)
        mems = {m.id: m for m in engine.memories(namespace=ns)}
        hidden_keep: set[str] = set()
        mine: list[dict[str, Any]] = []
        for m in mems.values():
            if m.status is Status.ACTIVE:
                continue
            by = mems.get(m.superseded_by) if m.superseded_by else None
            by_turns = sorted(by.sources) if by is not None else []
            for tid in sorted(m.sources):
                turn = by_id.get(tid)
                if turn is None:
                    continue
                if tid in sc.must_stay_current:
                    verdict = "false"
                    hidden_keep.add(tid)
                elif set(by_turns) & sc.retirable.get(tid, frozenset()):
                    verdict = "correct"
                else:
                    verdict = "stale-wrong-link"
                by_turn = by_id.get(by_turns[0]) if by_turns else None
                mine.append({
                    "scenario": sc.id, "scenario_kind": sc.kind, "status": m.status.value,
                    "verdict": verdict, "turn": tid, "role": turn.role, "text": turn.text,
                    "speaker": turn.speaker,
                    "by_turn": by_turn.id if by_turn else None,
                    "by_role": by_turn.role if by_turn else None,
                    "by_family": by_turn.family if by_turn else None,
                    "by_text": by_turn.text if by_turn else (by.text if by else None),
                })
        audit.extend(mine)
        for m in mems.values():
            link = m.metadata.get(UPDATE_KEY)
            old = mems.get(link["of"]) if isinstance(link, dict) else None
            if old is None:
                continue
            new_turn, old_turn = min(m.sources), min(old.sources)
            links.append({
                "scenario": sc.id, "right": new_turn in sc.retirable.get(old_turn, ()),
                "older": old.text, "newer": m.text, "verdict": link.get("verdict"),
                "context": link.get("context"),
            })
        keep_total += len(sc.must_stay_current)
        keep_hidden += len(hidden_keep)
        if sc.kind != "update":
            neg_scen += 1
            neg_scen_hit += bool(hidden_keep)
        for tid in sc.retirable:
            stale_total += 1
            rows = [a for a in mine if a["turn"] == tid]
            stale_correct += any(a["verdict"] == "correct" for a in rows)
            stale_wrong_link += any(a["verdict"] == "stale-wrong-link" for a in rows)
        index = TurnIndex([t.id for t in sc.turns], [t.text for t in sc.turns], embedder)
        for p in sc.probes:
            res = engine.recall(p.question, namespace=ns, k=K, reinforce=False)
            ranked = {
                "reverie": [h.memory.sources for h in res],
                "dense": index.dense(p.question, K),
                "bm25": index.bm25(p.question, K),
            }
            row = {
                "scenario": sc.id, "scenario_kind": sc.kind, "gap": sc.gap, "kind": p.kind,
                "question": p.question, "wording": p.wording, "family": p.family,
                "negative": p.negative, "current_turn": p.current_turn,
                "current_text": by_id[p.current_turn].text, "stale_turns": list(p.stale_turns),
                "updates": len(p.stale_turns),
                "current_hidden": p.current_turn in hidden_keep,
                "top_text": {s: _text_of(r, texts) for s, r in ranked.items()},
            }
            for s, r in ranked.items():
                row[s] = judge(r, [p.current_turn], p.stale_turns)
            probes.append(row)
        if n % 25 == 0 or n == len(scenarios):
            log(f"  [{n}/{len(scenarios)}] scenarios")
    out = summarise(scenarios, probes, audit, observe_ms, keep_total, keep_hidden, neg_scen,
                    neg_scen_hit, stale_total, stale_correct, stale_wrong_link)
    wrong = [x for x in links if not x["right"]]
    out["reverie_links"] = {"links": len(links), "wrong": len(wrong),
                            "wrong_rate": len(wrong) / len(links) if links else None,
                            "wrong_links": wrong}
    return out


def _text_of(ranked: Sequence[frozenset[str]], texts: dict[str, str]) -> str | None:
    if not ranked:
        return None
    tid = sorted(ranked[0])[0]
    return texts.get(tid, tid)


def _table(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(rows)}
    for s in SYSTEMS:
        out[s] = {
            "top1": _rate([r[s]["top1"] for r in rows]),
            "top3": _rate([r[s]["top3"] for r in rows]),
            "stale_above": _rate([r[s]["stale_above"] for r in rows]),
        }
    return out


def _breakdown(rows: Sequence[dict[str, Any]], key: str) -> dict[str, Any]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[str(r[key])].append(r)
    return {g: _table(rs) for g, rs in sorted(groups.items())}


def summarise(scenarios: Sequence[Scenario], probes: list[dict[str, Any]],
              audit: list[dict[str, Any]], observe_ms: list[float], keep_total: int,
              keep_hidden: int, neg_scen: int, neg_scen_hit: int, stale_total: int,
              stale_correct: int, stale_wrong_link: int) -> dict[str, Any]:
    upd = [r for r in probes if not r["negative"]]
    neg = [r for r in probes if r["negative"]]
    false = [a for a in audit if a["verdict"] == "false"]
    by_family: dict[str, list[bool]] = defaultdict(list)  # stale retired, by the update
    for sc in scenarios:
        turns = {t.id: t for t in sc.turns}
        for tid, later in sc.retirable.items():
            nxt = turns[min(later)]
            ok = any(a["scenario"] == sc.id and a["turn"] == tid and a["verdict"] == "correct"
                     for a in audit)
            by_family[str(nxt.family)].append(ok)
    return {
        "scenarios": len(scenarios),
        "turns": sum(len(s.turns) for s in scenarios),
        "coverage": coverage(scenarios),
        "updates": _table(upd),
        "negatives": _table(neg),
        "by_family": _breakdown(upd, "family"),
        "by_wording": _breakdown(upd, "wording"),
        "by_gap": _breakdown(upd, "gap"),
        "by_updates": _breakdown(upd, "updates"),
        "by_kind": _breakdown(upd, "kind"),
        "reverie_supersession": {
            "must_stay_current": keep_total,
            "false_supersessions": keep_hidden,
            "false_supersession_rate": keep_hidden / keep_total if keep_total else None,
            "negative_scenarios": neg_scen,
            "negative_scenarios_with_false_supersession": neg_scen_hit,
            "negative_rate": neg_scen_hit / neg_scen if neg_scen else None,
            "current_value_hidden": sum(r["current_hidden"] for r in upd),
            "stale_turns": stale_total,
            "stale_retired_by_a_later_value": stale_correct,
            "stale_retired_by_a_wrong_turn": stale_wrong_link,
            "stale_retired_rate_by_family": {f: _rate(v) for f, v in sorted(by_family.items())},
            "false_by_superseding_role": dict(Counter(str(a["by_role"]) for a in false)),
            "false_by_superseded_role": dict(Counter(str(a["role"]) for a in false)),
            "false_by_superseded_speaker": dict(Counter(a["speaker"] for a in false)),
            "false_by_scenario_kind": dict(Counter(a["scenario_kind"] for a in false)),
        },
        "observe_ms": {"p50": float(np.median(observe_ms)),
                       "p95": float(np.percentile(observe_ms, 95)), "n": len(observe_ms)},
        "false_supersessions": false,
        "probes": probes,
    }


# ----------------------------------------------------------------------------- colours


def run_colours(engine: Any, clock: Any, embedder: MemoEmbedder) -> dict[str, Any]:
    rows = []
    lines = [json.loads(x) for x in COLOURS.read_text().splitlines() if x.strip()]
    rng = random.Random(COLOUR_SEED)
    start = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)
    retired: list[dict[str, Any]] = []
    for script in lines:
        turns: list[tuple[str, str, datetime]] = []
        now = start
        statements: list[tuple[str, str]] = []  # (turn id, colour)
        seen: set[str] = set()
        for si, st in enumerate(script["statements"]):
            if si:
                for _ in range(rng.randint(40, 80)):  # roughly 600-1,200 tokens of filler
                    for _attempt in range(10):
                        speaker, text = filler(rng)
                        line = f"{speaker}: {text}"
                        if line not in seen:
                            break
                    seen.add(line)
                    turns.append((f"c{len(turns):03d}", line, now))
                    now += timedelta(seconds=rng.randint(20, 90))
            tid = f"c{len(turns):03d}"
            turns.append((tid, f"user: {st}", now))
            now += timedelta(seconds=rng.randint(20, 90))
            m = COLOUR_WORDS.search(st)
            statements.append((tid, m.group(1).casefold() if m else ""))
        expected = script["expected"].casefold()
        current = [t for t, c in statements if c == expected]
        stale = [t for t, c in statements if c != expected]
        last = statements[-1][0]
        ns = f"colours/{script['id']}"
        embedder.warm([t[1] for t in turns] + [script["question"]])
        for tid, text, at in turns:
            clock.set(at)
            engine.observe(text, namespace=ns, source=tid, at=at)
        clock.set(now + timedelta(minutes=5))
        res = engine.recall(script["question"], namespace=ns, k=K, reinforce=False)
        index = TurnIndex([t[0] for t in turns], [t[1] for t in turns], embedder)
        ranked = {"reverie": [h.memory.sources for h in res],
                  "dense": index.dense(script["question"], K),
                  "bm25": index.bm25(script["question"], K)}
        texts = {t[0]: t[1] for t in turns}
        row: dict[str, Any] = {"id": script["id"], "expected": script["expected"],
                               "statements": len(statements), "turns": len(turns)}
        for s, r in ranked.items():
            j = judge(r, current, stale)
            j["last_statement_top1"] = bool(r) and last in r[0]
            j["top_text"] = _text_of(r, texts)
            row[s] = j
        for m in engine.memories(namespace=ns):
            if m.status.value != "active":
                by = engine.get(m.superseded_by, namespace=ns) if m.superseded_by else None
                retired.append({"script": script["id"], "text": m.text,
                                "by_text": by.text if by else None})
        rows.append(row)
        log(f"  colours {script['id']}: reverie top1={row['reverie']['top1']}")
    summary = {s: {"top1": _rate([r[s]["top1"] for r in rows]),
                   "last_statement_top1": _rate([r[s]["last_statement_top1"] for r in rows]),
                   "top3": _rate([r[s]["top3"] for r in rows]),
                   "stale_above": _rate([r[s]["stale_above"] for r in rows]),
                   "scripts_answered": sum(r[s]["top1"] for r in rows)} for s in SYSTEMS}
    return {"scripts": len(rows), "summary": summary, "rows": rows, "retired": retired}


# ----------------------------------------------------------------------------- locomo


def run_locomo(engine: Any, clock: Any, embedder: MemoEmbedder,
               n_conversations: int | None) -> dict[str, Any]:
    from locomo import DATA as LOCOMO_DATA
    from locomo import load

    from reverie.core.writing import UPDATE_KEY

    convs = load(LOCOMO_DATA)[: n_conversations or None]
    pairs = []
    weak: list[dict[str, Any]] = []  # "possibly outdated" links: nothing hidden, reordered
    total = 0
    for sample, turns, _questions in convs:
        ns = f"locomo-ku/{sample}"
        embedder.warm([t.text for t in turns])
        when = {t.dia_id: t.at for t in turns}
        for t in turns:
            clock.set(t.at)
            engine.observe(t.text, namespace=ns, source=t.dia_id, at=t.at)
        total += len(turns)
        mems = {m.id: m for m in engine.memories(namespace=ns)}
        for m in mems.values():
            link = m.metadata.get(UPDATE_KEY)
            older = mems.get(link["of"]) if isinstance(link, dict) else None
            if older is not None and link.get("verdict") == "outdates":
                weak.append({"conversation": sample, "text": older.text, "by_text": m.text,
                             "similarity": link.get("similarity"),
                             "same_type": link.get("same_type"), "cue": link.get("cue")})
            if m.status.value == "active":
                continue
            by = mems.get(m.superseded_by) if m.superseded_by else None
            cos = None
            if by is not None:
                a, b = embedder.embed([m.text, by.text])
                cos = float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-12))
            src = sorted(m.sources)
            bsrc = sorted(by.sources) if by else []
            cue = CUES.search(by.text) if by else None
            pairs.append({
                "same_speaker": by is not None and _speaker(m.text) == _speaker(by.text),
                "cue": cue.group(0).casefold() if cue else None,
                "conversation": sample, "status": m.status.value, "turn": ",".join(src),
                "at": when[src[0]].strftime("%Y-%m-%d") if src and src[0] in when else "",
                "text": m.text, "by_turn": ",".join(bsrc),
                "by_at": when[bsrc[0]].strftime("%Y-%m-%d") if bsrc and bsrc[0] in when
                else "",
                "by_text": by.text if by else None, "cosine": cos,
            })
        log(f"  locomo {sample}: {len(turns)} turns, retired so far {len(pairs)}")
    return {"conversations": len(convs), "turns": total, "retired": len(pairs),
            "cross_speaker": sum(not p["same_speaker"] for p in pairs),
            "by_cue": dict(Counter(str(p["cue"]) for p in pairs).most_common()),
            "pairs": pairs, "outdated": len(weak), "outdated_pairs": weak}


def _speaker(text: str) -> str:
    return text.split(":", 1)[0].strip() if ":" in text else ""



# ----------------------------------------------------------------------------- report


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _f2(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _met(ok: bool) -> str:
    return "met" if ok else "**not met**"


def _metrics_table(table: dict[str, Any], title: str) -> list[str]:
    lines = [f"| {title} (n={table['n']}) | top-1 current | current in top 3 | "
             "stale above current |", "|---|---|---|---|"]
    for s in SYSTEMS:
        r = table[s]
        lines.append(f"| {s} | {_f(r['top1'])} | {_f(r['top3'])} | {_f(r['stale_above'])} |")
    return lines


def _breakdown_table(groups: dict[str, Any], title: str) -> list[str]:
    lines = [f"| {title} | n | " + " | ".join(f"{s} top-1 / stale>" for s in SYSTEMS) + " |",
             "|---|---|" + "---|" * len(SYSTEMS)]
    for g, t in groups.items():
        lines.append(f"| {g} | {t['n']} | " + " | ".join(
            f"{_f(t[s]['top1'])} / {_f(t[s]['stale_above'])}" for s in SYSTEMS) + " |")
    return lines


def _cell(s: str | None, width: int = 160) -> str:
    if s is None:
        return "-"
    s = s.replace("|", "\\|").replace("\n", " ")
    return s if len(s) <= width else s[: width - 1] + "…"


def render(r: dict[str, Any]) -> str:
    L = [
        f"# Knowledge updates through free text, {r['machine']}",
        "",
        "What it measures: an agent logs conversation with `observe(text)`; when a fact "
        "changes, does recall put the current value first, and does anything valid get "
        "retired by mistake? Two failure modes: (a) the old value wins (questions reuse the "
        "old message's words; updates state only the new value); (b) a valid memory is "
        "superseded by a turn that only looks like a correction (cue words, assistant "
        "replies, look-alike facts).",
        "",
        "Systems, same turns, same embedder (all-MiniLM-L6-v2, offline): **reverie** "
        f"(`observe` each turn at its time, `recall` with the default policy, k={K}, no "
        "reinforcement), **dense** (plain cosine top-k over the turn embeddings), **bm25** "
        "(plain BM25 over the turns, FTS5's constants, nothing ever retired). A hit holds a "
        "value when it carries the turn that stated it (turn ids passed as `source=`); "
        "metrics: the current value's turn is the top hit; it is in the top 3; a turn "
        "stating a stale value ranks above it (or the current one is missing from the top "
        f"{K} while a stale one is there).",
        "",
        "Reproduce: `python benchmarks/knowledge_updates.py` "
        "(scenarios from `benchmarks/knowledge_scenarios.py`; seeds "
        + ", ".join(f"{k}={v}" for k, v in r["seeds"].items())
        + f"; Colours filler seed {COLOUR_SEED}). Options: `--split tune|report|both`, "
        "`--limit N` scenarios per split, `--locomo-conversations N`.",
        "",
        "## Targets (report split, Colours, LoCoMo)",
        "",
        "| target | measured | |",
        "|---|---|---|",
    ]
    rep = r["splits"].get("report") or next(iter(r["splits"].values()), None)
    if rep is not None:
        u = rep["updates"]["reverie"]
        fs = rep["reverie_supersession"]["false_supersession_rate"]
        L += [
            f"| reverie top-1 current >= {TARGETS['top1']} | {_f(u['top1'])} | "
            f"{_met((u['top1'] or 0) >= TARGETS['top1'])} |",
            f"| reverie stale above current <= {TARGETS['stale_above']} | "
            f"{_f(u['stale_above'])} | "
            f"{_met((u['stale_above'] or 0) <= TARGETS['stale_above'])} |",
            f"| reverie false supersessions <= {TARGETS['false_supersession_rate']} (of the "
            f"memories that must stay current) | {_f(fs)} | "
            f"{_met((fs or 0) <= TARGETS['false_supersession_rate'])} |",
        ]
    if r.get("colours"):
        c = r["colours"]
        got = c["summary"]["reverie"]["scripts_answered"]
        L.append(f"| every Colours script answered with the last colour | {got} / "
                 f"{c['scripts']} | {_met(got == c['scripts'])} |")
    if r.get("locomo"):
        L.append(f"| LoCoMo memories retired at ingest, listed for a reader | "
                 f"{r['locomo']['retired']} | see the list below |")
    L += ["", "reverie `observe` p50 (write path, embeddings cached so the model's time is "
          "excluded): " + ", ".join(
              f"{k} {v['observe_ms']['p50']:.1f} ms (p95 {v['observe_ms']['p95']:.1f} ms, "
              f"n={v['observe_ms']['n']})" for k, v in r["splits"].items()) + "."]
    for split, res in r["splits"].items():
        cov = res["coverage"]
        sup = res["reverie_supersession"]
        lk = res["reverie_links"]
        L += [
            "",
            f"## Generated scenarios, `{split}` split (seed {r['seeds'][split]})",
            "",
            f"{res['scenarios']} scenarios ({cov.get('scenario:update', 0)} with changing "
            f"facts, {cov.get('scenario:twin', 0)} look-alike pairs, "
            f"{cov.get('scenario:incidental', 0)} incidental cue words), {res['turns']} turns "
            f"({cov.get('assistant_turns', 0)} by the assistant). Updates per phrasing "
            "family: " + ", ".join(f"{k.split(':', 1)[1]} {v}" for k, v in cov.items()
                                   if k.startswith("family:")) + ". Gaps: "
            + ", ".join(f"{k.split(':', 1)[1]} {v}" for k, v in cov.items()
                        if k.startswith("gap:")) + ".",
            "",
            *_metrics_table(res["updates"], "changed facts"),
            "",
            *_metrics_table(res["negatives"], "negatives: each look-alike's own statement"),
            "",
            "reverie supersession audit (status of every memory after ingest):",
            "",
            "| | count |",
            "|---|---|",
            f"| memories that must stay current | {sup['must_stay_current']} |",
            f"| of them retired (false supersessions) | {sup['false_supersessions']} "
            f"(rate {_f(sup['false_supersession_rate'])}) |",
            f"| negative scenarios with a valid memory retired | "
            f"{sup['negative_scenarios_with_false_supersession']} / "
            f"{sup['negative_scenarios']} ({_f(sup['negative_rate'])}) |",
            f"| questions whose current value was retired | {sup['current_value_hidden']} |",
            f"| stale statements | {sup['stale_turns']} |",
            f"| of them retired by a later value of the same fact | "
            f"{sup['stale_retired_by_a_later_value']} |",
            f"| of them retired by an unrelated turn | {sup['stale_retired_by_a_wrong_turn']} |",
            f"| version links written (retiring or outdating) | {lk['links']} |",
            f"| of them joining two different facts | {lk['wrong']} "
            f"(rate {_f(lk['wrong_rate'])}) |",
            "",
            "False supersessions by the retired turn's speaker: "
            + (", ".join(f"{k} {v}" for k, v in
                         sorted(sup["false_by_superseded_speaker"].items())) or "none")
            + ". By the retiring turn's role: "
            + (", ".join(f"{k} {v}" for k, v in sorted(sup["false_by_superseding_role"].items()))
               or "none")
            + "; by the retired turn's role: "
            + (", ".join(f"{k} {v}" for k, v in sorted(sup["false_by_superseded_role"].items()))
               or "none") + ".",
            "",
            "Stale statement retired by the next value, by that update's phrasing family: "
            + ", ".join(f"{k} {_f(v)}" for k, v in
                        sup["stale_retired_rate_by_family"].items()) + ".",
            "",
            "### By phrasing family of the update that set the current value",
            "",
            *_breakdown_table(res["by_family"], "family"),
            "",
            "### By question wording (old = the first statement's words)",
            "",
            *_breakdown_table(res["by_wording"], "wording"),
            "",
            "### By gap between a fact's versions",
            "",
            *_breakdown_table(res["by_gap"], "gap"),
            "",
            "### By number of updates of the fact",
            "",
            *_breakdown_table(res["by_updates"], "updates"),
            "",
            "### By kind of fact",
            "",
            *_breakdown_table(res["by_kind"], "kind"),
        ]
        false = res["false_supersessions"]
        if false:
            L += ["", f"### False supersessions ({len(false)}; first 40)", "",
                  "| scenario | retired (role) | retired by (role) |", "|---|---|---|"]
            for a in false[:40]:
                L.append(f"| {a['scenario']} | {_cell(a['text'])} ({a['role']}) | "
                         f"{_cell(a['by_text'])} ({a['by_role']}) |")
        wrong = lk["wrong_links"]
        if wrong:
            L += ["", f"### Version links joining two different facts (first 25 of "
                  f"{len(wrong)})", "", "| scenario | older | newer (verdict) |", "|---|---|---|"]
            for x in wrong[:25]:
                L.append(f"| {x['scenario']} | {_cell(x['older'])} | {_cell(x['newer'])} "
                         f"({x['verdict']}) |")
        misses = [p for p in res["probes"] if not p["negative"] and p["reverie"]["stale_above"]]
        if misses:
            L += ["", f"### Questions where reverie ranks a stale value first (first 25 of "
                  f"{len(misses)})", "",
                  "| question | current value's turn (family) | reverie's top hit |",
                  "|---|---|---|"]
            for p in misses[:25]:
                L.append(f"| {_cell(p['question'])} | {_cell(p['current_text'])} "
                         f"({p['family']}) | {_cell(p['top_text']['reverie'])} |")
    if r.get("colours"):
        c = r["colours"]
        L += ["", "## GoodAI LTM \"Colours\"", "",
              f"{c['scripts']} scripts; each statement separated by 40-80 seeded filler turns "
              "(roughly 600-1,200 tokens), the question asked 5 minutes after the last turn. "
              "Current = a statement naming the expected (last) colour; stale = one naming "
              "another colour.", "",
              "| system | scripts answered (top-1 current) | last statement top-1 | top 3 | "
              "stale above current |", "|---|---|---|---|---|"]
        for s in SYSTEMS:
            x = c["summary"][s]
            L.append(f"| {s} | {x['scripts_answered']} / {c['scripts']} | "
                     f"{_f(x['last_statement_top1'])} | {_f(x['top3'])} | "
                     f"{_f(x['stale_above'])} |")
        L += ["", "| script | expected | reverie's top hit | dense's top hit | bm25's top hit |",
              "|---|---|---|---|---|"]
        for row in c["rows"]:
            L.append(f"| {row['id']} | {row['expected']} | "
                     + " | ".join(_cell(row[s]["top_text"], 70) for s in SYSTEMS) + " |")
        L += ["", f"Memories reverie retired at ingest: {len(c['retired'])}."]
        for a in c["retired"]:
            L.append(f"- {a['script']}: {_cell(a['text'])} <- {_cell(a['by_text'])}")
    if r.get("locomo"):
        lo = r["locomo"]
        L += ["", "## LoCoMo: memories retired at ingest", "",
              f"{lo['conversations']} conversations, {lo['turns']} turns observed one by one "
              f"at their session times (a namespace per conversation). **{lo['retired']}** "
              "memories ended retired. Each pair below: the retired turn, then the turn that "
              "retired it, with their cosine. Judge for yourself whether it is a real change "
              "of a fact; LoCoMo has few (it is small talk between two friends), so most are "
              "expected to be false supersessions.", "",
              f"Retired by another speaker's turn: {lo['cross_speaker']}. Cue words in the "
              "retiring turn (first match, for reading only): "
              + ", ".join(f"{k} {v}" for k, v in lo["by_cue"].items()) + ".", "",
              "| # | conv | retired turn (date) | retired by (date) | cue | cos |",
              "|---|---|---|---|---|---|"]
        for n, a in enumerate(lo["pairs"], 1):
            L.append(f"| {n} | {a['conversation']} | {a['turn']} ({a['at']}): "
                     f"{_cell(a['text'], 400)} | {a['by_turn']} ({a['by_at']}): "
                     f"{_cell(a['by_text'], 400)} | {a['cue'] or '-'} | "
                     f"{_f2(a['cosine'])} |")
        weak = lo.get("outdated_pairs", [])
        L += ["", f"Weaker links at ingest (the older memory stays current and ranks below "
              f"the newer one when both are candidates): **{len(weak)}**.", ""]
        if weak:
            L += ["| # | conv | older | newer | same type | cue | cos |",
                  "|---|---|---|---|---|---|---|"]
            for n, a in enumerate(weak, 1):
                L.append(f"| {n} | {a['conversation']} | {_cell(a['text'], 300)} | "
                         f"{_cell(a['by_text'], 300)} | {a['same_type'] or '-'} | "
                         f"{'yes' if a['cue'] else '-'} | {_f2(a['similarity'])} |")
    return "\n".join(L) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=["tune", "report", "both"], default="both")
    ap.add_argument("--limit", type=int, default=None, help="scenarios per split")
    ap.add_argument("--locomo-conversations", type=int, default=None,
                    help="LoCoMo conversations to ingest (default all; 0 skips LoCoMo)")
    ap.add_argument("--no-colours", action="store_true")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)

    from reverie.core import ManualClock
    from reverie.integrations import open_engine
    from reverie.integrations.embedders import LocalEmbedder

    splits = ["tune", "report"] if args.split == "both" else [args.split]
    log("seeds: " + ", ".join(f"{s}={SEEDS[s]}" for s in splits))
    embedder = MemoEmbedder(LocalEmbedder())
    result: dict[str, Any] = {
        "machine": "2 cores, CPU only",
        "python": platform.python_version(),
        "seeds": {s: SEEDS[s] for s in splits},
        "k": K,
        "targets": TARGETS,
        "splits": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        clock = ManualClock()
        engine = open_engine(Path(tmp), embedder=embedder, clock=clock)
        try:
            for split in splits:
                scenarios = generate(split)[: args.limit or None]
                log(f"split {split} (seed {SEEDS[split]}): {len(scenarios)} scenarios")
                result["splits"][split] = run_scenarios(engine, clock, embedder, scenarios)
            if not args.no_colours:
                log("colours")
                result["colours"] = run_colours(engine, clock, embedder)
            if args.locomo_conversations != 0:
                log("locomo")
                result["locomo"] = run_locomo(engine, clock, embedder,
                                              args.locomo_conversations)
        finally:
            engine.close()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "knowledge_updates.json").write_text(json.dumps(result, indent=1,
                                                                default=str))
    text = render(result)
    (args.out / "knowledge_updates.md").write_text(text)
    log(f"wrote {args.out / 'knowledge_updates.md'}")
    for split, res in result["splits"].items():
        for s in SYSTEMS:
            u = res["updates"][s]
            log(f"{split} {s}: top1={_f(u['top1'])} top3={_f(u['top3'])} "
                f"stale_above={_f(u['stale_above'])}")
        log(f"{split} reverie false supersession rate="
            f"{_f(res['reverie_supersession']['false_supersession_rate'])}")


if __name__ == "__main__":
    main()
