"""The `reverie` CLI end to end, on real backends: SQLite, embedded Chroma and the real
local embedding model, each test in a home of its own under tmp_path.

Content is asserted through `--json`, exports and `run_demo`'s returned summary, not
by parsing tables, so the tests do not depend on terminal width or styling.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from reverie.adapters.cli import demo as demo_module
from reverie.adapters.cli.app import app
from reverie.adapters.cli.demo import default_transcript

pytestmark = pytest.mark.slow

runner = CliRunner()


def cli(home: Path, *args: str, input: str | None = None, ns: str | None = None) -> Result:
    opts = ["--home", str(home)] + (["-n", ns] if ns else [])
    return runner.invoke(app, [*opts, *args], input=input)


def ok(result: Result) -> Result:
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}\n{result.exception!r}"
    return result


def recall_json(home: Path, query: str, *extra: str, ns: str | None = None) -> dict[str, Any]:
    result = ok(cli(home, "recall", query, "--json", *extra, ns=ns))
    payload = json.loads(result.stdout)
    assert isinstance(payload, dict)
    return payload


def write_jsonl(path: Path, rows: list[dict[str, Any] | str]) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
        encoding="utf-8",
    )
    return path


CHAT = [
    {"text": "I just adopted a grey cat called Miso.", "speaker": "user", "session": 1},
    {"text": "Congratulations! How old is Miso?", "speaker": "assistant", "session": 1},
    {"text": "My sister Ines is getting married in Porto in September.", "role": "user",
     "session": 1},
    {"text": "ok thanks", "speaker": "user", "session": 1},
    {"subject": "Rui", "predicate": "has a cat named", "object": "Miso", "session": 1},
    {"subject": "Rui", "predicate": "lives in", "object": "Coimbra", "session": 1},
    {"text": "I bought a new road bike for the weekend rides.", "speaker": "user", "session": 2},
    {"subject": "Rui", "predicate": "lives in", "object": "Braga", "session": 2},
    {"text": "ok thanks", "speaker": "user", "session": 2},
]


@pytest.fixture
def chat_home(tmp_path: Path) -> Path:
    """A home holding CHAT, ingested through the CLI."""
    home = tmp_path / "home"
    ok(cli(home, "ingest", str(write_jsonl(tmp_path / "chat.jsonl", list(CHAT)))))
    return home


def test_demo_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[dict[str, Any]] = []
    real = demo_module.run_demo

    def recording(*args: Any, **kwargs: Any) -> dict[str, Any]:
        summary = real(*args, **kwargs)
        shown.append(summary)
        return summary

    monkeypatch.setattr(demo_module, "run_demo", recording)
    result = ok(cli(tmp_path / "demo-home", "demo"))
    assert "Every hit says why it ranked" in result.stdout
    [s] = shown
    assert s["ingest"]["lines"] == 78

    by_q = {q["question"]: q for q in s["questions"]}
    live = by_q["Where does Maya live?"]
    assert (live["before"], live["after"]) == ("Lisbon", "Berlin")
    assert not live["stale_returned_after"]
    assert not any("Lisbon" in t for t in live["after_texts"])
    work = by_q["What does Maya do for work?"]
    assert "Tidewater" in work["before"] and "Kestrel" in work["after"]
    diet = by_q["What diet does Maya follow?"]
    assert "vegetarian" in diet["before"] and "vegan" in diet["after"]
    assert not any(q["stale_returned_after"] for q in s["questions"])

    assert [v["object"] for v in s["history"]] == ["Lisbon", "Berlin"]
    assert [v["status"] for v in s["history"]] == ["superseded", "active"]
    assert s["history"][0]["valid_to"] == s["history"][1]["valid_from"]
    assert s["as_of_answer"] == "Lisbon"

    assert "Maya has a dog named Pixel" in s["crystals"]
    assert s["tiers"]["Maya lives in Berlin"] == "unit"
    # the diet changed in plain words (vegetarian -> vegan): the older statement is marked
    # possibly outdated and ranks below, not retired (the diet question answers vegan)
    assert all("vegetarian" not in c["superseded"] for c in s["corrections"])

    decay = s["decay"]
    trivial = decay["trivial"]
    assert trivial["recalled"][0] and not trivial["faded"][0] and trivial["faded"][12]
    # faded, yet the user's exact words are a strong match: recall still finds it
    assert trivial["recalled"][12]
    assert trivial["scores"][12] < trivial["scores"][0]
    assert not decay["important"]["faded"][12]  # high importance decays 3x slower
    assert decay["normal"]["faded"][12]
    assert all(decay["crystal"]["recalled"].values())
    assert not any(decay["crystal"]["faded"].values())
    assert len(set(decay["crystal"]["scores"].values())) == 1  # crystals do not decay

    explanation = s["explanation"]
    assert explanation["text"] == "Maya lives in Berlin"
    assert {"relevance", "lexical", "decay", "importance", "tier", "hops"} <= set(explanation)


def test_demo_refuses_a_namespace_that_holds_memories(chat_home: Path) -> None:
    result = cli(chat_home, "demo")
    assert result.exit_code == 2
    assert "already holds memories" in result.output
    assert "Traceback" not in result.output


def test_ingest_then_recall_finds_the_line(chat_home: Path) -> None:
    payload = recall_json(chat_home, "Who is getting married?", "-k", "3")
    top = payload["hits"][0]
    assert top["text"] == "user: My sister Ines is getting married in Porto in September."
    assert top["sources"] == ["session-1:3"]
    assert set(top) >= {"id", "text", "score", "tier", "status", "sources", "explanation"}
    assert {"relevance", "lexical", "decay", "importance", "tier", "hops"} <= set(
        top["explanation"]
    )
    # the changed fact answers with its current value
    facts = recall_json(chat_home, "Where does Rui live?", "-k", "5")["hits"]
    texts = [h["text"] for h in facts]
    assert "Rui lives in Braga" in texts and "Rui lives in Coimbra" not in texts
    # --history brings the superseded version back, marked as such
    old = recall_json(chat_home, "Where does Rui live?", "-k", "10", "--history")["hits"]
    assert {"text": "Rui lives in Coimbra", "status": "superseded"}.items() <= next(
        h for h in old if h["text"] == "Rui lives in Coimbra"
    ).items()


def test_ingest_summary_and_rerun_is_idempotent(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = write_jsonl(tmp_path / "chat.jsonl", list(CHAT))
    first = ok(cli(home, "ingest", str(path))).stdout
    # 9 lines: 8 new memories, "ok thanks" in session 2 folds into session 1's,
    # "Rui lives in Braga" supersedes Coimbra
    row = next(line for line in first.splitlines() if "9" in line)
    # lines, stored, folded, facts, superseded
    assert re.findall(r"\d+", row) == ["9", "8", "1", "3", "1"]
    # Lines carry deterministic sources, so replaying messages and unchanged facts
    # folds into what is there and writes nothing.
    steady = write_jsonl(tmp_path / "steady.jsonl", [r for r in CHAT if "Braga" not in str(r)])
    other = tmp_path / "other"
    ok(cli(other, "ingest", str(steady)))
    before = ok(cli(other, "export")).stdout
    ok(cli(other, "ingest", str(steady)))
    assert ok(cli(other, "export")).stdout == before


def test_ingest_from_stdin(tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = json.dumps({"text": "The boiler service is booked for Tuesday.", "speaker": "user"})
    ok(cli(home, "ingest", "-", input=data + "\n"))
    hits = recall_json(home, "When is the boiler service?")["hits"]
    assert hits[0]["text"] == "user: The boiler service is booked for Tuesday."
    assert hits[0]["sources"] == ["stdin:1"]


def _all_texts(home: Path, ns: str | None = None) -> list[str]:
    lines = ok(cli(home, "export", ns=ns)).stdout.splitlines()
    return [
        json.loads(x)["record"]["text"] for x in lines if json.loads(x)["type"] == "memory"
    ]


def test_bad_json_line_stops_with_its_number_and_keeps_what_came_before(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    path = write_jsonl(
        tmp_path / "bad.jsonl",
        [
            {"text": "The first line is fine."},
            {"text": "So is the second one."},
            {"subject": "Ada", "predicate": "works at", "object": "the observatory"},
            '{"text": "this line is cut',
            {"text": "Never reached."},
        ],
    )
    result = cli(home, "ingest", str(path))
    assert result.exit_code == 2
    assert "line 4" in result.stderr and "JSONDecodeError" in result.stderr
    assert "3 lines before it were ingested" in result.stderr
    assert "Traceback" not in result.output
    assert sorted(_all_texts(home)) == sorted(
        ["The first line is fine.", "So is the second one.", "Ada works at the observatory"]
    )


def test_invalid_line_inside_a_batch_keeps_the_lines_before_and_nothing_of_it(
    tmp_path: Path,
) -> None:
    """The engine rejects line 3 (too long) inside a batch of messages: lines 1-2 are
    stored anyway, nothing of 3 or after is."""
    home = tmp_path / "home"
    path = write_jsonl(
        tmp_path / "bad.jsonl",
        [
            {"text": "Gardening notes: tomatoes need staking."},
            {"text": "Cooking notes: rest the dough overnight."},
            {"text": "x" * 9000},
            {"text": "After the bad line."},
        ],
    )
    result = cli(home, "ingest", str(path))
    assert result.exit_code == 2
    assert "line 3" in result.stderr and "TextTooLong" in result.stderr
    assert sorted(_all_texts(home)) == sorted(
        ["Gardening notes: tomatoes need staking.", "Cooking notes: rest the dough overnight."]
    )


def test_bad_field_reports_the_typed_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = write_jsonl(tmp_path / "bad.jsonl", [{"text": "fine"}, {"text": "x", "at": "soon"}])
    result = cli(home, "ingest", str(path))
    assert result.exit_code == 2
    assert "line 2: InvalidInput" in result.stderr and "'at'" in result.stderr
    assert _all_texts(home) == ["fine"]


def test_export_import_round_trip_is_lossless(chat_home: Path, tmp_path: Path) -> None:
    # make the export interesting: a confirmed crystal, a pin, a second namespace
    hit = recall_json(chat_home, "road bike")["hits"][0]
    ok(cli(chat_home, "confirm", hit["id"]))
    ok(cli(chat_home, "pin", hit["id"]))
    ok(cli(chat_home, "remember", "team", "uses", "trunk-based development",
           "--kind", "procedural", ns="work/team-a"))

    first = tmp_path / "first.jsonl"
    ok(cli(chat_home, "export", str(first), "--all-namespaces"))
    fresh = tmp_path / "fresh"
    ok(cli(fresh, "import", str(first)))
    second = tmp_path / "second.jsonl"
    ok(cli(fresh, "export", str(second), "--all-namespaces"))
    assert first.read_text(encoding="utf-8") == second.read_text(encoding="utf-8")
    records = [json.loads(x) for x in first.read_text(encoding="utf-8").splitlines()]
    assert {r["record"]["namespace"] for r in records if r["type"] == "memory"} == {
        "default", "work/team-a"
    }
    assert any(r["type"] == "edge" for r in records)
    # the imported home is searchable: vectors were rebuilt on import
    assert recall_json(fresh, "road bike")["hits"][0]["id"] == hit["id"]
    # and a second import changes nothing
    again = ok(cli(fresh, "import", str(first))).stdout
    assert "skipped" in again


def test_history_remember_and_stats(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ok(cli(home, "remember", "Lena", "works at", "Acme", "--source", "chat-1"))
    confirmed = ok(cli(home, "remember", "Lena", "works at", "acme", "--source", "chat-2"))
    assert "confirmed" in confirmed.stdout
    changed = ok(cli(home, "remember", "Lena", "works at", "Globex", "--source", "chat-3"))
    assert "superseded" in changed.stdout and "Acme" in changed.stdout

    history = ok(cli(home, "history", "Lena", "works at")).stdout
    assert "Acme" in history and "Globex" in history
    assert "superseded" in history and "active" in history

    missing = cli(home, "history", "Lena", "likes")
    assert missing.exit_code == 2 and "no fact" in missing.stderr

    table = ok(cli(home, "stats")).stdout
    for label in ("memories", "superseded", "crystal", "vectors", "all-MiniLM-L6-v2", "data dir"):
        assert label in table
    st = json.loads(ok(cli(home, "stats", "--json")).stdout)
    assert (st["total"], st["status:active"], st["status:superseded"]) == (2, 1, 1)
    assert st["tier:unit"] == 1 and st["vectors"] == 2
    assert st["data_dir"] == str(home) and st["store"] == str(home / "memory.db")
    assert st["namespaces"] == ["default"]


def test_confirm_pin_forget(chat_home: Path) -> None:
    hit = recall_json(chat_home, "road bike")["hits"][0]
    assert hit["tier"] == "trace"
    ok(cli(chat_home, "confirm", hit["id"]))
    assert recall_json(chat_home, "road bike")["hits"][0]["tier"] == "crystal"

    declined = cli(chat_home, "forget", hit["id"], input="n\n")
    assert declined.exit_code == 1
    assert recall_json(chat_home, "road bike")["hits"][0]["id"] == hit["id"]

    ok(cli(chat_home, "forget", hit["id"], "--yes"))
    assert all(h["id"] != hit["id"] for h in recall_json(chat_home, "road bike")["hits"])
    gone = cli(chat_home, "confirm", hit["id"])
    assert gone.exit_code == 2
    assert gone.stderr.startswith("error:") and len(gone.stderr.strip().splitlines()) == 1


def test_repair_rebuilds_a_deleted_vector_index(chat_home: Path) -> None:
    queries = ["Who is getting married?", "Where does Rui live?", "cat"]

    def results() -> list[list[str]]:
        return [[h["id"] for h in recall_json(chat_home, q, "-k", "4")["hits"]] for q in queries]

    before = results()
    assert all(before)
    shutil.rmtree(chat_home / "vectors")
    stats = ok(cli(chat_home, "stats")).stdout
    assert "vectors" in stats
    report = ok(cli(chat_home, "repair")).stdout
    assert "indexed" in report
    assert results() == before


def test_errors_are_one_red_line_with_exit_code_2(tmp_path: Path) -> None:
    bad_ns = cli(tmp_path / "h", "stats", ns="no spaces allowed")
    assert bad_ns.exit_code == 2
    assert "invalid namespace" in bad_ns.stderr
    assert "Traceback" not in bad_ns.output
    bad_time = cli(tmp_path / "h", "recall", "x", "--as-of", "yesterday")
    assert bad_time.exit_code == 2 and "ISO-8601" in bad_time.output
    bad_kind = cli(tmp_path / "h", "remember", "a", "b", "c", "--kind", "episodic")
    assert bad_kind.exit_code == 2


def test_default_transcript_is_found() -> None:
    path = default_transcript()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert 60 <= len(lines) <= 100
    kinds = {json.loads(x)["type"] for x in lines}
    assert kinds == {"message", "fact"}


def test_installed_entry_point_help() -> None:
    exe = shutil.which("reverie") or str(Path(sys.executable).parent / "reverie")
    done = subprocess.run(
        [exe, "--help"], capture_output=True, text=True, timeout=120,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert done.returncode == 0, done.stderr
    for command in ("demo", "ingest", "recall", "remember", "history", "forget", "stats",
                    "export", "import", "repair"):
        assert command in done.stdout
