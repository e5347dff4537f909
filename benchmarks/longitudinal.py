"""A year of daily agent sessions, with and without maintenance (REM cycle + sweep + GC).

Each simulated day is one session of 15-40 new memories (seeded, reproducible):
- fact mentions, in paraphrase (several phrasings per fact), stored the way an agent
  with a fact extractor stores them: `remember(subject, predicate, value, text=<the
  user's words>)`; seven of the twelve facts change once during the year, said as a
  correction ("actually, I moved to ..."), which supersedes the old value;
- recurring small talk on a few dozen topics, in paraphrase (`observe`);
- one-off noise, every line different (`observe`);
- ten important facts planted in the first three weeks, said once and marked important by
  the agent (`observe(..., importance=0.9)`), asked at month 12.

Both runs ingest the identical stream on the embedded default (SQLite + embedded
Chroma + the real all-MiniLM-L6-v2 model) on a ManualClock. The maintained run does,
every 7 days, one REM cycle (extractive synthesizer, no LLM) then a sweep, and every
30 days a GC. At each month's end both runs report their active nodes; at month 12
they are asked the planted facts (recall@5: the answer appears in a top-5 text) and
the changed facts (stale answer: a hit stating only an old value ranks above every
hit stating the current one). Evaluation recalls do not reinforce.

Targets: active nodes at month 12 at most 25% of the uncompressed run;
planted-fact recall@5 no lower than uncompressed; stale-answer rate 0.

Run: python benchmarks/longitudinal.py [--days 365] [--seed 11]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import MemoEmbedder

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
T0 = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)
NS = "user/sim"


@dataclass(frozen=True)
class FactSlot:
    predicate: str
    values: tuple[str, ...]  # the first, then what it changes to (if it changes)
    phrasings: tuple[str, ...]
    correction: str
    question: str


FACTS = [
    FactSlot("lives in", ("Lisbon", "Berlin"),
             ("I live in {v}", "my home is in {v}", "I'm based in {v} these days",
              "{v} is where I live", "back home in {v} it was sunny"),
             "actually, I moved to {v} last week", "Which city does the user live in?"),
    FactSlot("works at", ("Acme Robotics", "Globex Labs"),
             ("I work at {v}", "my job at {v} is busy", "at {v} we ship on Fridays",
              "my employer is {v}", "{v} is my company"),
             "actually, I switched jobs, I now work at {v}", "Where does the user work?"),
    FactSlot("has a dog named", ("Biscuit",),
             ("my dog {v} needs a walk", "{v}, my dog, chewed a shoe", "I took {v} to the park",
              "my dog is called {v}"),
             "", "What is the name of the user's dog?"),
    FactSlot("drives", ("a blue Toyota Corolla", "an electric Kia Niro"),
             ("I drive {v}", "my car is {v}", "I parked {v} downtown", "{v} is my car"),
             "actually, I sold the old car and now drive {v}", "What car does the user drive?"),
    FactSlot("favourite food is", ("ramen",),
             ("my favourite food is {v}", "I could eat {v} every day", "{v} is the best food",
              "I had {v} again, my favourite"),
             "", "What is the user's favourite food?"),
    FactSlot("goes to the gym on", ("Tuesdays", "Saturdays"),
             ("I go to the gym on {v}", "gym day for me is {v}", "{v} are my gym days",
              "I lift weights on {v}"),
             "actually, I changed my gym day to {v}", "Which day does the user go to the gym?"),
    FactSlot("partner is", ("Sam",),
             ("my partner {v} says hi", "{v}, my partner, cooked dinner", "I'm going out with {v}",
              "my partner is {v}"),
             "", "Who is the user's partner?"),
    FactSlot("manager is", ("Priya", "Tomas"),
             ("my manager is {v}", "{v}, my manager, set a deadline", "I report to {v}",
              "I had a one-on-one with {v}"),
             "actually, my manager is now {v} after the reorg", "Who is the user's manager?"),
    FactSlot("plays", ("the cello",),
             ("I play {v}", "I practised {v} tonight", "{v} is my hobby", "my lesson on {v}"),
             "", "Which instrument does the user play?"),
    FactSlot("drinks coffee", ("black", "with oat milk"),
             ("I take my coffee {v}", "coffee {v} for me", "I like my coffee {v}",
              "one coffee {v}, please"),
             "actually, I now take my coffee {v}", "How does the user take their coffee?"),
    FactSlot("uses a phone made by", ("Samsung",),
             ("my phone is a {v}", "I use a {v} phone", "my {v} phone died", "I have a {v}"),
             "", "What phone does the user have?"),
    FactSlot("favourite band is", ("Radiohead", "Arcade Fire"),
             ("my favourite band is {v}", "I listen to {v} all the time", "{v} is my band",
              "I love {v}"),
             "actually, my favourite band is {v} now", "What is the user's favourite band?"),
]

PLANTED = [
    ("My daughter Lia was born on 14 March 2019.", "When was the user's daughter born?",
     "14 March 2019"),
    ("I am allergic to penicillin, please always keep that in mind.",
     "Which medicine must the user avoid because of an allergy?", "penicillin"),
    ("My passport expires in November 2031.", "When does the user's passport run out?",
     "November 2031"),
    ("Our wedding anniversary is on 2 August.", "When is the user's wedding anniversary?",
     "2 August"),
    ("My blood type is O negative.", "What is the user's blood group?", "O negative"),
    ("The wifi password at the cabin is bluefinch88.", "What is the wifi password at the cabin?",
     "bluefinch88"),
    ("My mother's maiden name is Albuquerque.", "What was the user's mother's family name?",
     "Albuquerque"),
    ("I keep the spare house key under the green flowerpot.",
     "Where is the spare key to the house hidden?", "green flowerpot"),
    ("My first car was a red 1998 Volvo.", "What was the user's very first car?", "Volvo"),
    ("Our dog's vet is Dr. Okafor on Oak Street.", "Which vet does the user's dog see?",
     "Okafor"),
]

TOPICS = [
    "the quarterly report", "a Python script", "the garden", "weekend plans", "a podcast",
    "the budget spreadsheet", "a birthday gift", "the kitchen renovation", "a job interview",
    "learning Spanish", "the new laptop", "a marathon plan", "tax forms", "a book club pick",
    "the holiday trip", "a leaking tap", "meal prep", "the team offsite", "a chess opening",
    "a sourdough recipe", "the car insurance", "a slide deck", "moving boxes", "a film night",
    "the electricity bill", "a hiking route", "a resume update", "the school run",
    "a dentist appointment", "a camera lens",
]
SMALL_TALK = [
    "we talked about {t} again", "the user asked for help with {t}", "more questions on {t}",
    "spent a while discussing {t}", "quick chat about {t}",
]
NOISE_A = [
    "ok", "hmm", "right", "sure", "got it", "thanks", "cool", "fine", "alright", "nice",
    "interesting", "oh well", "makes sense", "fair enough", "haha", "no worries", "yep",
    "good to know", "I see", "great",
]
NOISE_B = [
    "the weather turned grey", "the train was a bit late", "I made tea", "the cat next door meowed",
    "my screen flickered", "I found a coin", "the printer jammed", "I ate a sandwich",
    "someone knocked", "the wifi dropped", "my pen ran out", "the bus was full",
    "I stretched my legs", "the kettle boiled", "a bird sang outside", "it started to drizzle",
    "I lost my umbrella", "the lift was slow", "I watered a plant", "the coffee went cold",
    "my shoelace snapped", "the neighbour mowed", "the fridge hummed", "a parcel arrived",
    "the meeting ran over", "I yawned a lot", "the music was loud", "I misplaced my keys",
    "the sun came out", "traffic was heavy",
]
NOISE_C = [
    "this morning", "earlier", "just now", "at lunch", "in the afternoon", "tonight",
    "before work", "after dinner", "on the way home", "around noon", "at breakfast",
    "late in the evening", "during a call", "while cooking", "after the gym",
]


@dataclass
class Item:
    at: datetime
    kind: str  # "fact" | "observe" | "planted"
    text: str
    slot: int = -1
    value: str = ""


def build_stream(days: int, seed: int) -> tuple[list[list[Item]], dict[int, int]]:
    """The sessions, and for each changing fact slot the day its value changes."""
    rng = np.random.default_rng(seed)
    changing = [i for i, f in enumerate(FACTS) if len(f.values) > 1]
    change_day = {i: int(rng.integers(days // 4, 3 * days // 4)) for i in changing}
    noise = [f"{a}, {b} {c}" for a in NOISE_A for b in NOISE_B for c in NOISE_C]
    order = rng.permutation(len(noise))
    noise_next = 0
    sessions: list[list[Item]] = []
    for day in range(days):
        start = T0 + timedelta(days=day, hours=float(rng.integers(0, 10)))
        n = int(rng.integers(15, 41))
        items: list[Item] = []
        if day in (2, 5, 9, 13, 17):  # plant two important facts on each of these days
            k = (2, 5, 9, 13, 17).index(day)
            for text, _, _ in PLANTED[2 * k : 2 * k + 2]:
                items.append(Item(start, "planted", text))
        for slot, d in change_day.items():
            if d == day:
                f = FACTS[slot]
                items.append(Item(start, "fact", f.correction.format(v=f.values[1]), slot,
                                  f.values[1]))
        while len(items) < n:
            r = rng.random()
            if r < 0.25:
                slot = int(rng.integers(len(FACTS)))
                f = FACTS[slot]
                v = f.values[1] if slot in change_day and day > change_day[slot] else f.values[0]
                phr = f.phrasings[int(rng.integers(len(f.phrasings)))]
                items.append(Item(start, "fact", phr.format(v=v), slot, v))
            elif r < 0.45:
                t = TOPICS[int(rng.integers(len(TOPICS)))]
                s = SMALL_TALK[int(rng.integers(len(SMALL_TALK)))]
                items.append(Item(start, "observe", s.format(t=t)))
            else:
                items.append(Item(start, "observe", noise[order[noise_next % len(noise)]]))
                noise_next += 1
        for j, it in enumerate(items):  # a minute apart, in order
            it.at = start + timedelta(minutes=j)
        sessions.append(items)
    return sessions, change_day


def ingest(engine: Any, day: int, items: list[Item]) -> None:
    from reverie.core.engine import Observation

    batch: list[Observation] = []

    def flush() -> None:
        if batch:
            engine.observe_many(batch, namespace=NS)
            batch.clear()

    for j, it in enumerate(items):
        src = f"day{day}-{j}"
        if it.kind == "fact":
            flush()
            f = FACTS[it.slot]
            engine.remember("user", f.predicate, it.value, namespace=NS, source=src, at=it.at,
                            text=it.text)
        else:
            importance = 0.9 if it.kind == "planted" else None
            batch.append(Observation(it.text, source=src, at=it.at, importance=importance))
    flush()


def evaluate(engine: Any, change_day: dict[int, int]) -> dict[str, Any]:
    planted_hits = []
    for _, question, answer in PLANTED:
        hits = engine.recall(question, namespace=NS, k=5, reinforce=False)
        planted_hits.append(any(answer.lower() in h.text.lower() for h in hits))
    stale = []
    current_found = []
    for slot in sorted(change_day):
        f = FACTS[slot]
        old, new = f.values[0].lower(), f.values[1].lower()
        hits = engine.recall(f.question, namespace=NS, k=5, reinforce=False)
        texts = [h.text.lower() for h in hits]
        cur = next((i for i, t in enumerate(texts) if new in t), None)
        old_only = next((i for i, t in enumerate(texts) if old in t and new not in t), None)
        stale.append(old_only is not None and (cur is None or old_only < cur))
        current_found.append(cur is not None)
    return {
        "planted_recall_at_5": float(np.mean(planted_hits)),
        "planted_hits": planted_hits,
        "stale_answer_rate": float(np.mean(stale)),
        "stale": stale,
        "current_value_in_top5": float(np.mean(current_found)),
    }


def run(
    label: str, sessions: list[list[Item]], change_day: dict[int, int], embedder: Any,
    home: Path, maintain: bool,
) -> dict[str, Any]:
    from reverie.core import ManualClock
    from reverie.integrations import open_engine

    clock = ManualClock(T0)
    engine = open_engine(home, embedder=embedder, clock=clock, namespace=NS)
    monthly: list[dict[str, Any]] = []
    maint_seconds = 0.0
    totals = {"consolidated": 0, "syntheses_rem": 0, "swept_archived": 0, "sweep_syntheses": 0,
              "gc_deleted": 0, "fallbacks": 0}
    started = time.perf_counter()
    try:
        for day, items in enumerate(sessions):
            clock.set(items[0].at)
            ingest(engine, day, items)
            clock.set(T0 + timedelta(days=day + 1))  # the end of the day
            if maintain and (day + 1) % 7 == 0:
                t = time.perf_counter()
                rem = engine.consolidate(NS)
                totals["consolidated"] += rem.consolidated
                totals["syntheses_rem"] += len(rem.committed)
                sw = engine.sweep(NS)
                totals["swept_archived"] += sw.archived
                totals["sweep_syntheses"] += sw.syntheses
                totals["fallbacks"] += sw.fallbacks + len(rem.fallbacks)
                if (day + 1) % 28 == 0:
                    totals["gc_deleted"] += engine.gc(NS).deleted
                maint_seconds += time.perf_counter() - t
            if (day + 1) % 30 == 0 or day + 1 == len(sessions):
                c = engine.store.count(NS)
                monthly.append({
                    "day": day + 1, "active": c.get("status:active", 0),
                    "total_records": c.get("total", 0),
                })
                print(f"  [{label}] day {day + 1}: active {monthly[-1]['active']}, "
                      f"records {monthly[-1]['total_records']}", flush=True)
        result = evaluate(engine, change_day)
        counts = engine.store.count(NS)
    finally:
        engine.close()
    return {"monthly": monthly, "eval": result, "counts": counts, "totals": totals,
            "maintenance_seconds": maint_seconds, "seconds": time.perf_counter() - started}


def plot(results: dict[str, dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, style in (("uncompressed", "o-"), ("maintained", "s-")):
        m = results[label]["monthly"]
        ax.plot([x["day"] / 30 for x in m], [x["active"] for x in m], style, label=label)
    ax.set_xlabel("month")
    ax.set_ylabel("active memories")
    ax.set_title("Active memories over a simulated year (embedded default)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    from reverie.integrations.embedders import LocalEmbedder

    sessions, change_day = build_stream(args.days, args.seed)
    n_items = sum(len(s) for s in sessions)
    print(f"{args.days} sessions, {n_items} memories written; changing facts on days "
          f"{sorted(change_day.values())}", flush=True)
    embedder = MemoEmbedder(LocalEmbedder())
    t = time.perf_counter()
    embedder.warm(sorted({it.text for s in sessions for it in s}))
    print(f"embedded {len(embedder.cache)} distinct texts in {time.perf_counter() - t:.1f} s",
          flush=True)
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, maintain in (("uncompressed", False), ("maintained", True)):
            print(f"run: {label}", flush=True)
            results[label] = run(label, sessions, change_day, embedder, Path(tmp) / label,
                                 maintain)
    un, mt = results["uncompressed"], results["maintained"]
    ratio = mt["monthly"][-1]["active"] / un["monthly"][-1]["active"]
    targets = {
        "active_ratio_at_most_0.25": ratio <= 0.25,
        "planted_recall_not_lower": mt["eval"]["planted_recall_at_5"]
        >= un["eval"]["planted_recall_at_5"],
        "stale_rate_zero": mt["eval"]["stale_answer_rate"] == 0.0,
    }
    meta = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        "python": platform.python_version(),
        "embedder": embedder.name,
        "days": args.days,
        "seed": args.seed,
        "memories_written": n_items,
        "maintenance": "every 7 days: REM cycle (extractive) + sweep; every 28 days: GC",
    }
    out = {"meta": meta, "results": results, "active_ratio": ratio, "targets": targets,
           "change_days": {FACTS[k].predicate: v for k, v in change_day.items()}}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "longitudinal.json").write_text(json.dumps(out, indent=2, default=str) + "\n")
    plot(results, RESULTS / "longitudinal.png")
    month = len(un["monthly"])
    lines = [
        "# Longitudinal: a simulated year, with and without maintenance",
        "",
        f"Measured {meta['date']} on {meta['machine']}, Python {meta['python']}, embedder "
        f"{meta['embedder']}, SQLite + embedded Chroma, ManualClock. {args.days} daily "
        f"sessions, {n_items} memories written (seed {args.seed}). Maintained run: "
        f"{meta['maintenance']}.",
        "",
        "![active memories per month](longitudinal.png)",
        "",
        "| day | uncompressed active | maintained active | ratio |",
        "|---:|---:|---:|---:|",
    ]
    for i in range(month):
        a, b = un["monthly"][i]["active"], mt["monthly"][i]["active"]
        lines.append(f"| {un['monthly'][i]['day']} | {a} | {b} | {b / a:.3f} |")
    lines += [
        "",
        "| at the end | uncompressed | maintained |",
        "|---|---:|---:|",
        f"| active nodes | {un['monthly'][-1]['active']} | {mt['monthly'][-1]['active']} |",
        f"| records kept (any status) | {un['counts']['total']} | {mt['counts']['total']} |",
        f"| planted-fact recall@5 (10 facts) | {un['eval']['planted_recall_at_5']:.2f} | "
        f"{mt['eval']['planted_recall_at_5']:.2f} |",
        f"| stale-answer rate (changed facts) | {un['eval']['stale_answer_rate']:.2f} | "
        f"{mt['eval']['stale_answer_rate']:.2f} |",
        f"| current value in top 5 (changed facts) | "
        f"{un['eval']['current_value_in_top5']:.2f} | {mt['eval']['current_value_in_top5']:.2f} |",
        f"| run time (s) | {un['seconds']:.0f} | {mt['seconds']:.0f} (maintenance "
        f"{mt['maintenance_seconds']:.0f}) |",
        "",
        f"Maintenance over the year: {mt['totals']['syntheses_rem']} REM syntheses from "
        f"{mt['totals']['consolidated']} memories; {mt['totals']['sweep_syntheses']} sweep "
        f"digests archiving {mt['totals']['swept_archived']} memories; GC deleted "
        f"{mt['totals']['gc_deleted']}; extractive fallbacks {mt['totals']['fallbacks']}.",
        "",
        "Targets:",
        f"- active nodes at month 12 at most 25% of uncompressed: ratio {ratio:.3f} -> "
        f"{'met' if targets['active_ratio_at_most_0.25'] else 'NOT met'}",
        f"- planted-fact recall@5 no lower than uncompressed: "
        f"{'met' if targets['planted_recall_not_lower'] else 'NOT met'}",
        f"- stale-answer rate 0 (maintained run): "
        f"{'met' if targets['stale_rate_zero'] else 'NOT met'}",
    ]
    (RESULTS / "longitudinal.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-12:]))
    print(f"saved {RESULTS / 'longitudinal.md'} and longitudinal.png")


if __name__ == "__main__":
    sys.exit(main())
