"""`reverie inspect` in a real headless Chromium (Debian's chromium and chromedriver, driven
by selenium through /usr/bin/chromedriver, never a downloaded driver) against a real SQLite
store, embedded Chroma and the real embedding model.

The store holds a fact changed twice through `remember` (a supersession chain), weak traces
consolidated by a REM cycle (the extractive synthesizer, no LLM) with an edge the synthesis
inherits, a memory whose decay is computed by hand, one whose text is markup, enough
filler to page through, and a second namespace that must never show in the first. The
tests load each page, use the filters and the search, follow the chain and the lineage,
and check what the pages show against the store.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.selenium_manager import SeleniumManager
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select, WebDriverWait

from reverie.adapters.inspect import InspectorServer, make_server
from reverie.core import ManualClock, Memory, Status, Tier
from reverie.core.engine import MemoryEngine
from reverie.core.errors import InvalidInput
from reverie.integrations import open_engine
from reverie.integrations.redis.store import RedisStore

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
PAGE = 20  # the test server's page length, so a few dozen memories page
NS = "user/alice"
OTHER = "user/bob"

WEAK_TOPICS = [
    ["ugh the train to Leeds was late again this morning",
     "the train to Leeds was late again this morning, ugh",
     "this morning the Leeds train was late again"],
    ["the coffee machine on the second floor is broken again",
     "second floor coffee machine broken again"],
]
SCRIPT_TEXT = "<script>document.title='owned'</script> & <b>bold</b> \"quoted\""


@dataclass
class World:
    home: Path
    engine: MemoryEngine
    clock: ManualClock
    versions: list[Memory]  # Alice's city, oldest first
    synthesis_id: str
    members: list[str]
    handmade: Memory  # decay computed by hand
    markup: Memory


def _build(home: Path) -> World:
    clock = ManualClock(T0)
    engine = open_engine(home, clock=clock, namespace=NS)
    engine.observe("Leeds station is a ten minute walk from my flat", source="chat:0",
                   pinned=True)
    for topic in WEAK_TOPICS:
        for i, text in enumerate(topic):
            engine.observe(text, source=f"chat:weak:{i}")
    clock.advance(days=200)  # the traces have faded: the REM cycle takes them
    report = engine.consolidate()
    leeds = [c for c in report.clusters
             if c.committed and any("Leeds" in engine.get(i).text for i in c.member_ids)]
    assert len(leeds) == 1, f"the REM cycle made no Leeds synthesis: {report}"
    synthesis_id = leeds[0].synthesis_id
    members = sorted(leeds[0].member_ids)
    first = engine.remember("Alice", "lives in", "Paris", source="chat:1")
    clock.advance(days=10)
    engine.remember("Alice", "lives in", "Berlin", source="chat:2")
    clock.advance(days=20)
    engine.remember("Alice", "lives in", "Lisbon", source="chat:3")
    versions = engine.history("Alice", "lives in")
    assert [v.fact.object for v in versions if v.fact] == ["Paris", "Berlin", "Lisbon"]
    assert versions[0].id == first.id
    engine.observe_many(
        [f"filler note {i}: the weekly grocery list had item {i}" for i in range(45)]
    )
    handmade = engine.observe(
        "Dentist appointment moved to Thursday", source="chat:dentist",
        at=clock.now() - timedelta(days=14), importance=0.5,
    )
    markup = engine.observe(SCRIPT_TEXT, source="chat:markup")
    engine.observe("Bob keeps his bicycle in the shed", namespace=OTHER, source="chat:bob")
    engine.flush()
    return World(home, engine, clock, versions, synthesis_id, members, handmade, markup)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = _build(tmp_path_factory.mktemp("inspect"))
    try:
        yield w
    finally:
        w.engine.close()


def _start(engine: MemoryEngine, **kw: Any) -> tuple[InspectorServer, threading.Thread]:
    server = make_server(engine, page_size=PAGE, **kw)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


def _stop(server: InspectorServer, thread: threading.Thread) -> None:
    server.shutdown()
    server.server_close()
    thread.join(timeout=30)
    assert not thread.is_alive(), "the inspector did not stop within 30 s"


@pytest.fixture(scope="module")
def base(world: World) -> Iterator[str]:
    server, thread = _start(world.engine)
    try:
        yield server.url.rstrip("/")
    finally:
        _stop(server, thread)


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--disable-gpu", "--window-size=1280,1000"):
        options.add_argument(arg)
    with pytest.MonkeyPatch.context() as mp:
        def refuse(*args: object, **kwargs: object) -> None:
            raise AssertionError("selenium-manager was asked for a driver")

        mp.setattr(SeleniumManager, "binary_paths", refuse)
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _go(browser: webdriver.Chrome, element: WebElement, *, submit: bool = False) -> None:
    """Click a link or button (or submit a form) and wait until the next page replaced
    this one: a click returns before a POST's redirect has landed."""
    page = browser.find_element(By.TAG_NAME, "html")
    if submit:
        element.submit()
    else:
        element.click()
    wait = WebDriverWait(browser, 30)
    wait.until(lambda _: _replaced(page), message="no next page within 30 s")
    wait.until(expected_conditions.presence_of_element_located((By.TAG_NAME, "main")),
               message="the next page did not load within 30 s")


def _replaced(element: WebElement) -> bool:
    """Has the page holding `element` been replaced? chromedriver says so with a stale
    reference, or, when it asks for the node while the next page is being attached, with
    "Node with given id does not belong to the document"."""
    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as e:
        if "does not belong to the document" in str(e):
            return True
        raise
    return False


def _url(base: str, path: str, **params: str) -> str:
    return base + path + ("?" + urllib.parse.urlencode(params) if params else "")


def _status(url: str, data: bytes | None = None, headers: dict[str, str] | None = None) -> int:
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def _rows(driver: webdriver.Chrome, table_id: str) -> list[list[str]]:
    return [
        [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
        for tr in driver.find_elements(By.CSS_SELECTOR, f"#{table_id} tbody tr")
    ]


def _listed_ids(driver: webdriver.Chrome) -> list[str]:
    ids = []
    for a in driver.find_elements(By.CSS_SELECTOR, "#memory-list a.mem"):
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(a.get_attribute("href")).query)
        ids.append(query["id"][0])
    return ids


def _id_of(driver: webdriver.Chrome) -> str:
    return driver.find_element(By.ID, "memory-id").text


def _count(store_counts: dict[str, int], status: Status) -> str:
    return str(store_counts[f"status:{status.value}"])


# ---------------------------------------------------------------------------- pages


def test_front_page_lists_namespaces_with_the_store_counts(
    world: World, base: str, browser: webdriver.Chrome
) -> None:
    browser.get(base + "/")
    rows = {r[0]: r for r in _rows(browser, "namespaces")}
    assert set(rows) == {NS, OTHER}
    for ns, row in rows.items():
        c = world.engine.store.count(ns)
        assert row[1:] == [*(_count(c, s) for s in Status), str(c["total"])]
    assert rows[OTHER][-1] == "1"


def test_namespace_and_health_pages_agree_with_the_store(
    world: World, base: str, browser: webdriver.Chrome
) -> None:
    c = world.engine.store.count(NS)
    browser.get(_url(base, "/namespace", ns=NS))
    for s in Status:
        assert browser.find_element(By.ID, f"count-{s.value}").text.split()[-1] == _count(c, s)
    assert c["status:superseded"] == 2 and c["status:consolidated"] >= 3
    tiers = dict(r[:2] for r in _rows(browser, "tiers"))
    assert tiers == {t.value: str(c[f"tier:{t.value}"]) for t in Tier}

    _go(browser, browser.find_element(By.PARTIAL_LINK_TEXT, "Health"))
    assert "/health" in browser.current_url
    # the whole-namespace read runs in the background; the page reloads itself until done
    WebDriverWait(browser, 120).until(
        expected_conditions.presence_of_element_located((By.ID, "health-computed")),
        message="the health page did not finish reading the namespace within 120 s",
    )
    health = {
        th.text: td.text for th, td in zip(
            browser.find_elements(By.CSS_SELECTOR, "#health-counts th"),
            browser.find_elements(By.CSS_SELECTOR, "#health-counts td"), strict=True)
    }
    assert health["total"] == str(c["total"])
    assert health["superseded"].split()[-1] == "2"
    # the timeline's numbers: every memory counted once, by the day it was created
    browser.find_element(By.CSS_SELECTOR, "details summary").click()
    timeline = _rows(browser, "timeline-table")
    assert sum(int(r[-1]) for r in timeline) == c["total"]
    by_status = {s.value: sum(int(r[1 + i]) for r in timeline) for i, s in enumerate(Status)}
    assert by_status == {s.value: c[f"status:{s.value}"] for s in Status}
    # 230 days: one bar per week (from Monday), every week from the first to the last
    created = [m.created_at.date() for m in world.engine.memories(namespace=NS)]
    first = min(created) - timedelta(days=min(created).weekday())
    last = max(created) - timedelta(days=max(created).weekday())
    assert [r[0] for r in timeline] == [
        f"wk {first + timedelta(weeks=i):%Y-%m-%d}" for i in range((last - first).days // 7 + 1)
    ]
    assert browser.find_elements(By.CSS_SELECTOR, "svg#timeline rect")
    due = world.engine.maintenance_due(NS)
    if due:
        shown = [r[0] for r in _rows(browser, "maintenance-due")]
        assert shown == [t.name for t in due]
    else:
        assert "No maintenance is due" in browser.find_element(By.ID, "maintenance-due").text


def test_memory_list_pages_in_store_order(
    world: World, base: str, browser: webdriver.Chrome
) -> None:
    stored = [m.id for m in world.engine.memories(namespace=NS)]
    assert len(stored) > 2 * PAGE
    browser.get(_url(base, "/memories", ns=NS))
    seen: list[str] = []
    while True:
        seen.extend(_listed_ids(browser))
        nxt = browser.find_elements(By.CSS_SELECTOR, ".pager a.next")
        if not nxt:
            break
        _go(browser, nxt[0])
    assert seen == stored  # every memory once, in the order they were stored
    assert world.engine.memories(namespace=OTHER)  # ...and none of the other namespace
    assert not set(seen) & {m.id for m in world.engine.memories(namespace=OTHER)}


def test_memory_list_filters(world: World, base: str, browser: webdriver.Chrome) -> None:
    everything = list(world.engine.memories(namespace=NS))
    browser.get(_url(base, "/memories", ns=NS))
    Select(browser.find_element(By.ID, "filter-status")).select_by_value("superseded")
    _go(browser, browser.find_element(By.ID, "apply-filters"))
    assert _listed_ids(browser) == [v.id for v in world.versions[:2]]

    Select(browser.find_element(By.ID, "filter-status")).select_by_value("consolidated")
    _go(browser, browser.find_element(By.ID, "apply-filters"))
    assert _listed_ids(browser) == [m.id for m in everything if m.status is Status.CONSOLIDATED]

    Select(browser.find_element(By.ID, "filter-status")).select_by_value("")
    Select(browser.find_element(By.ID, "filter-tier")).select_by_value("synthesis")
    _go(browser, browser.find_element(By.ID, "apply-filters"))
    assert world.synthesis_id in _listed_ids(browser)
    assert _listed_ids(browser) == [m.id for m in everything if m.tier is Tier.SYNTHESIS]

    Select(browser.find_element(By.ID, "filter-tier")).select_by_value("")
    Select(browser.find_element(By.ID, "filter-kind")).select_by_value("semantic")
    _go(browser, browser.find_element(By.ID, "apply-filters"))
    assert _listed_ids(browser) == [m.id for m in everything if m.kind.value == "semantic"]

    Select(browser.find_element(By.ID, "filter-kind")).select_by_value("")
    box = browser.find_element(By.ID, "filter-q")
    box.clear()
    box.send_keys("LEEDS")
    _go(browser, browser.find_element(By.ID, "apply-filters"))
    expected = [m.id for m in everything if "leeds" in m.text.casefold()]
    assert len(expected) >= 4 and _listed_ids(browser) == expected


def test_memory_page_shows_the_decay_computed_by_hand(
    world: World, base: str, browser: webdriver.Chrome
) -> None:
    m = world.handmade
    browser.get(_url(base, "/memory", ns=NS, id=m.id))
    assert browser.find_element(By.ID, "memory-text").text == m.text
    # episodic, importance 0.5, last access 14 days ago: 0.5 * exp(-ln2/14 * 14) = 0.25
    assert browser.find_element(By.ID, "decay-now").text == "0.2500"
    explanation = browser.find_element(By.ID, "explanation").text
    assert "half-life 14.0 d" in explanation and "14.00" in explanation
    record = browser.find_element(By.ID, "record").text
    assert "episodic" in record and "0.5000" in record
    assert browser.find_element(By.ID, "sources").text == "chat:dentist"
    curve = browser.find_element(By.CSS_SELECTOR, "svg#decay-curve path").get_attribute("d")
    assert curve is not None and curve.count("L") == 80
    assert "now 0.250" in browser.find_element(By.ID, "decay-curve").text


def test_supersession_chain_is_followed_both_ways(
    world: World, base: str, browser: webdriver.Chrome
) -> None:
    paris, berlin, lisbon = world.versions
    browser.get(_url(base, "/memory", ns=NS, id=paris.id))
    items = browser.find_elements(By.CSS_SELECTOR, "#chain li")
    assert [li.get_attribute("data-id") for li in items] == [paris.id, berlin.id, lisbon.id]
    assert "superseded" in items[0].text and "active" in items[2].text
    # each version's dates, as the store has them
    for li, v in zip(items, world.versions, strict=True):
        assert v.valid_since.strftime("%Y-%m-%d %H:%M") in li.text
    assert "→ now" in items[2].text
    assert paris.valid_to is not None
    assert paris.valid_to.strftime("%Y-%m-%d %H:%M") in items[0].text
    _go(browser, items[1].find_element(By.CSS_SELECTOR, "a.version"))
    assert _id_of(browser) == berlin.id
    here = browser.find_element(By.CSS_SELECTOR, "#chain li.here")
    assert here.get_attribute("data-id") == berlin.id
    _go(browser, browser.find_element(By.CSS_SELECTOR, f'#chain li[data-id="{lisbon.id}"] a'))
    assert _id_of(browser) == lisbon.id
    _go(browser, browser.find_element(By.CSS_SELECTOR, f'#chain li[data-id="{paris.id}"] a'))
    assert _id_of(browser) == paris.id
    assert world.engine.get(paris.id).superseded_by == berlin.id


def test_consolidation_lineage_is_followed_both_ways(
    world: World, base: str, browser: webdriver.Chrome
) -> None:
    member = world.members[0]
    browser.get(_url(base, "/memory", ns=NS, id=member))
    _go(browser, browser.find_element(By.CSS_SELECTOR, "#consolidated-into a.synthesis"))
    assert _id_of(browser) == world.synthesis_id
    synthesis = world.engine.get(world.synthesis_id)
    links = browser.find_elements(By.CSS_SELECTOR, "#members a.member")
    shown = [urllib.parse.parse_qs(urllib.parse.urlsplit(a.get_attribute("href")).query)["id"][0]
             for a in links]
    assert sorted(shown) == sorted(synthesis.derived_from) == world.members
    # the edge from a member to the Leeds memory outside the cluster moved to the synthesis
    edges = _rows(browser, "edges")
    inherited = [r for r in edges if r[-1] == "inherited from a member"]
    stored = [e for e in world.engine.store.edges(NS, [synthesis.id])
              if e.type.value != "derived_from"]
    assert stored and len(inherited) == len(stored)
    assert any("Leeds station" in r[3] for r in inherited)
    _go(browser, links[1])
    assert _id_of(browser) == shown[1]
    assert world.engine.get(shown[1]).consolidated_into == world.synthesis_id


def test_search_runs_recall_and_shows_why(
    world: World, base: str, browser: webdriver.Chrome
) -> None:
    before = world.engine.get(world.versions[2].id).access_count
    browser.get(_url(base, "/namespace", ns=NS))
    box = browser.find_element(By.CSS_SELECTOR, "header input[type=search]")
    box.send_keys("where does Alice live")
    _go(browser, box, submit=True)
    assert "/search" in browser.current_url
    expected = world.engine.recall("where does Alice live", k=10, reinforce=False)
    rows = _rows(browser, "hits")
    assert len(rows) == len(expected.hits) > 0
    for row, hit in zip(rows, expected.hits, strict=True):
        assert row[3] == f"{hit.explanation.final:.4f}"
        assert row[4] == f"{hit.explanation.relevance:.4f}"
        assert row[5] == f"{hit.explanation.decay:.4f}"
        assert f"relevance {hit.explanation.relevance:.3f}" in row[7]
    ids = [urllib.parse.parse_qs(urllib.parse.urlsplit(a.get_attribute("href")).query)["id"][0]
           for a in browser.find_elements(By.CSS_SELECTOR, "#hits a.hit")]
    assert ids == [h.id for h in expected.hits]
    assert world.versions[2].id in ids and world.versions[0].id not in ids  # current only
    world.engine.flush()
    assert world.engine.get(world.versions[2].id).access_count == before  # not reinforced


def test_markup_in_a_memory_is_shown_as_text(
    world: World, base: str, browser: webdriver.Chrome
) -> None:
    browser.get(_url(base, "/memory", ns=NS, id=world.markup.id))
    assert browser.find_element(By.ID, "memory-text").text == SCRIPT_TEXT
    assert browser.find_elements(By.TAG_NAME, "script") == []
    assert browser.find_elements(By.CSS_SELECTOR, "main b") == []
    assert browser.title != "owned"
    browser.get(_url(base, "/memories", ns=NS, q="document.title"))
    assert _listed_ids(browser) == [world.markup.id]
    assert browser.find_elements(By.TAG_NAME, "script") == []


def test_unknown_and_bad_requests_get_pages_not_tracebacks(
    world: World, base: str, browser: webdriver.Chrome
) -> None:
    cases = [
        (_url(base, "/memory", ns=NS, id="no-such-id"), 404, "no-such-id"),
        (_url(base, "/memory", ns=OTHER, id=world.handmade.id), 404, "holds no memory"),
        (_url(base, "/namespace", ns="nobody"), 404, "no namespace 'nobody'"),
        (_url(base, "/memories", ns="bad namespace!"), 400, "invalid namespace"),
        (_url(base, "/memories", ns=NS, status="lost"), 400, "status 'lost'"),
        (_url(base, "/memories", ns=NS, skip="ten"), 400, "whole number"),
        (_url(base, "/search", ns=NS, q="x", k="0"), 400, "between 1 and 50"),
        (_url(base, "/nowhere"), 404, "no page"),
    ]
    for url, status, words in cases:
        assert _status(url) == status, url
        browser.get(url)
        assert browser.find_element(By.TAG_NAME, "h1").text.startswith(str(status))
        assert words in browser.find_element(By.ID, "error-message").text
        assert "Traceback" not in browser.page_source


def test_read_only_refuses_every_change(
    world: World, base: str, browser: webdriver.Chrome
) -> None:
    m = world.versions[2]
    browser.get(_url(base, "/memory", ns=NS, id=m.id))
    assert browser.find_elements(By.ID, "actions") == []
    assert "read-only" in browser.find_element(By.TAG_NAME, "header").text
    assert _status(_url(base, "/act", ns=NS, id=m.id, action="forget")) == 403
    form = urllib.parse.urlencode({"ns": NS, "id": m.id, "action": "forget", "token": "x"})
    assert _status(base + "/act", form.encode(),
                   {"Content-Type": "application/x-www-form-urlencoded"}) == 403
    assert world.engine.get(m.id).status is Status.ACTIVE


def test_only_loopback_is_served(world: World, base: str) -> None:
    port = urllib.parse.urlsplit(base).port
    assert _status(base + "/", headers={"Host": f"localhost:{port}"}) == 200
    assert _status(base + "/", headers={"Host": f"evil.example:{port}"}) == 421
    with pytest.raises(InvalidInput, match="loopback"):
        make_server(world.engine, host="0.0.0.0")


# ---------------------------------------------------------------------------- changes


def test_changes_ask_first_and_go_through_the_engine(
    tmp_path: Path, browser: webdriver.Chrome
) -> None:
    w = _build(tmp_path / "home")
    server, thread = _start(w.engine, allow_changes=True)
    b = server.url.rstrip("/")
    try:
        paris, _, lisbon = w.versions
        # confirm: a question first, nothing written until the answer
        browser.get(_url(b, "/memory", ns=NS, id=lisbon.id))
        assert "changes allowed" in browser.find_element(By.TAG_NAME, "header").text
        _go(browser, browser.find_element(By.CSS_SELECTOR, "a.action-confirm"))
        assert "Confirm this memory?" in browser.find_element(By.TAG_NAME, "h1").text
        assert not w.engine.get(lisbon.id).user_confirmed
        _go(browser, browser.find_element(By.ID, "do-it"))
        assert "Confirmed" in browser.find_element(By.ID, "flash").text
        confirmed = w.engine.get(lisbon.id)
        assert confirmed.user_confirmed and confirmed.tier is Tier.CRYSTAL

        # a form without this process's token changes nothing
        form = urllib.parse.urlencode(
            {"ns": NS, "id": w.handmade.id, "action": "forget", "token": "guessed"}
        )
        assert _status(b + "/act", form.encode(),
                       {"Content-Type": "application/x-www-form-urlencoded"}) == 403
        assert w.engine.get(w.handmade.id).status is Status.ACTIVE

        # restore the oldest version: it is current again, the newest superseded by it
        browser.get(_url(b, "/memory", ns=NS, id=paris.id))
        _go(browser, browser.find_element(By.CSS_SELECTOR, "a.action-restore"))
        _go(browser, browser.find_element(By.ID, "do-it"))
        assert "Restored" in browser.find_element(By.ID, "flash").text
        assert w.engine.get(paris.id).status is Status.ACTIVE
        assert w.engine.get(lisbon.id).status is Status.SUPERSEDED

        # forget, after the question; cancelling first writes nothing
        browser.get(_url(b, "/memory", ns=NS, id=w.handmade.id))
        _go(browser, browser.find_element(By.CSS_SELECTOR, "a.action-forget"))
        _go(browser, browser.find_element(By.LINK_TEXT, "cancel"))
        assert _id_of(browser) == w.handmade.id
        _go(browser, browser.find_element(By.CSS_SELECTOR, "a.action-forget"))
        _go(browser, browser.find_element(By.ID, "do-it"))
        assert "Forgotten: 1 record(s) deleted." in browser.find_element(By.ID, "flash").text
        assert w.engine.store.get(NS, w.handmade.id) is None
        assert _status(_url(b, "/memory", ns=NS, id=w.handmade.id)) == 404
    finally:
        _stop(server, thread)
        w.engine.close()


# ---------------------------------------------------------------------------- the command


def test_reverie_inspect_prints_a_loopback_url_and_serves(world: World) -> None:
    world.engine.flush()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from reverie.adapters.cli import main; main()",
         "--home", str(world.home), "inspect", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()  # blocks until the server listens
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", line), (line, proc.stderr)
        with urllib.request.urlopen(line) as r:
            page = r.read().decode()
        assert r.status == 200 and NS in page and "read-only" in page
        listing = line + "memories?" + urllib.parse.urlencode({"ns": OTHER})
        with urllib.request.urlopen(listing) as r:
            assert "bicycle" in r.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_reverie_inspect_on_a_redis_store(redis_url: str, tmp_path: Path) -> None:
    ns = f"inspect-{uuid.uuid4().hex[:10]}"
    home = tmp_path / "home"  # the vectors stay embedded here; the records live in Redis
    engine = open_engine(home, store=redis_url, namespace=ns, clock=ManualClock(T0))
    try:
        old = engine.remember("Rui", "lives in", "Coimbra", source="chat:1")
        engine.remember("Rui", "lives in", "Braga", source="chat:2")
        engine.observe("I bought a new road bike for the weekend rides", source="chat:3")
        engine.flush()
        stored = [m.id for m in engine.memories()]
    finally:
        engine.close()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from reverie.adapters.cli import main; main()",
         "--home", str(home), "inspect", "--redis", redis_url],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().strip().rstrip("/")
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", base), base
        with urllib.request.urlopen(_url(base, "/memories", ns=ns)) as r:
            listing = r.read().decode()
        assert re.findall(r"id=([0-9a-f]{32})", listing) == stored
        with urllib.request.urlopen(_url(base, "/memory", ns=ns, id=old.id)) as r:
            page = r.read().decode()
        chain = page[page.index('id="chain"'):]
        assert chain.index("Rui lives in Coimbra") < chain.index("Rui lives in Braga")
        assert _status(_url(base, "/namespace", ns=ns + "-none")) == 404
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        with RedisStore.from_url(redis_url) as store:
            store.delete_namespace(ns)
