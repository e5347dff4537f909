"""The answer to another speaker's question is indexed with the question's meaning
(`Policy.retrieval.reply_context_weight`): a later question in the words of the one it
answered finds a reply that shares none of them. Real SQLite, real Chroma, the real MiniLM
model."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reverie.core import ManualClock
from reverie.core.erasure import CONTEXT_KEY
from reverie.integrations import open_engine
from reverie.integrations.embedders import LocalEmbedder

pytestmark = pytest.mark.slow
T0 = datetime(2025, 5, 1, 19, 0, tzinfo=UTC)
QUESTION = "Caroline: Which band played at your daughter's birthday concert?"
REPLY = "Melanie: It was Matt Patterson, he is so talented! His voice gave me chills."
CHAT = (
    "Caroline: I finally finished the painting for the art show next month.",
    QUESTION,
    REPLY,
    "Caroline: I'm going hiking this weekend with my brother and his dog.",
    "Melanie: Enjoy it! The weather should stay dry until Sunday.",
    "Caroline: My brother's dog is a border collie called Pip.",
)
ASKED = "Who performed at the daughter's birthday concert?"


def _engine(tmp_path: Path, store: str | None = None, **policy: float) -> Any:
    e = open_engine(tmp_path / "h", store=store, clock=ManualClock(T0 + timedelta(days=1)),
                    namespace=f"chat-{uuid.uuid4().hex[:8]}")
    # no lift of the best hit's neighbouring turns: the reply must be found on its own
    e.policy = e.policy.replace(neighbour_weight=0.0, context_weight=0.0, **policy)
    return e


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def _observe(e: Any, texts: tuple[str, ...], gap: timedelta) -> list[str]:
    return [e.observe(t, at=T0 + n * gap).id for n, t in enumerate(texts)]


def test_a_reply_is_indexed_with_half_the_question_it_answers(tmp_path: Path) -> None:
    e = _engine(tmp_path)
    ids = _observe(e, CHAT, timedelta(seconds=30))
    e.flush()
    stored = e.vectors.stored_vectors(e.default_namespace, ids)
    model = LocalEmbedder()
    own = model.embed(list(CHAT))
    # the reply, 30 s after another speaker's question: its vector plus 0.5 of the
    # question's, normalised
    assert np.allclose(stored[ids[2]], _unit(own[2] + 0.5 * own[1]), atol=1e-5)
    # a question's own turn follows a statement, the hiking turn an answer: their own
    # vectors; so do the turns after a statement of the same speaker or another's
    for n in (0, 1, 3, 4, 5):
        assert np.allclose(stored[ids[n]], own[n], atol=1e-5), CHAT[n]
    e.close()


def test_the_question_it_answered_scores_the_reply_by_the_mixed_vector(
    tmp_path: Path,
) -> None:
    model = LocalEmbedder()
    q, reply, question = model.embed([ASKED, REPLY, QUESTION])
    dense = {}
    for weight in (0.5, 0.0):
        e = _engine(tmp_path / str(weight), reply_context_weight=weight)
        ids = _observe(e, CHAT, timedelta(seconds=30))
        hits = e.recall(ASKED, k=10, reinforce=False).hits
        found = next(h for h in hits if h.memory.id == ids[2])
        # the dense channel's cosine is the question's with the vector the reply was
        # indexed by
        dense[weight] = found.explanation.dense
        assert dense[weight] == pytest.approx(float(q @ _unit(reply + weight * question)),
                                              abs=1e-3)
        e.close()
    # the reply shares no word with what is asked: the question it answered brings it
    # from 0.30 to 0.57
    assert dense[0.5] > dense[0.0] + 0.25


def test_no_context_beyond_the_window_or_between_turns_of_one_speaker(
    tmp_path: Path,
) -> None:
    model = LocalEmbedder()
    e = _engine(tmp_path)
    # 5 minutes after the question: beyond the 120 s window
    late = _observe(e, (QUESTION, REPLY), timedelta(minutes=5))
    # the same speaker answering her own question
    own = _observe(e, ("Melanie: Who played at the party?", REPLY.replace("It was", "Was")),
                   timedelta(seconds=30))
    # texts that name no speaker: a list of facts, not a conversation
    bare = _observe(e, ("Who plays at the party?", "It was Matt Patterson."),
                    timedelta(seconds=30))
    e.flush()
    stored = e.vectors.stored_vectors(e.default_namespace, [late[1], own[1], bare[1]])
    plain = model.embed([REPLY, REPLY.replace("It was", "Was"), "It was Matt Patterson."])
    for i, v in zip((late[1], own[1], bare[1]), plain, strict=True):
        assert np.allclose(stored[i], v, atol=1e-5)
    e.close()


def test_a_role_in_the_metadata_names_the_speaker(tmp_path: Path) -> None:
    e = _engine(tmp_path)
    q = e.observe("Which city should I fly to first?", at=T0,
                  metadata={"role": "user"})
    a = e.observe("Start in Lisbon, then take the train to Porto.", at=T0 + timedelta(seconds=5),
                  metadata={"role": "assistant"})
    e.flush()
    stored = e.vectors.stored_vectors(e.default_namespace, [q.id, a.id])
    own = LocalEmbedder().embed([q.text, a.text])
    assert np.allclose(stored[a.id], _unit(own[1] + 0.5 * own[0]), atol=1e-5)
    e.close()


@pytest.mark.parametrize("tier", ["sqlite", "redis"])
def test_forgetting_the_question_re_indexes_its_reply_by_its_own_vector(
    tmp_path: Path, tier: str, request: pytest.FixtureRequest
) -> None:
    store = request.getfixturevalue("redis_url") if tier == "redis" else None
    e = _engine(tmp_path, store)
    ns = e.default_namespace
    ids = _observe(e, CHAT, timedelta(seconds=30))
    e.flush()
    assert e.store.get(ns, ids[2]).metadata[CONTEXT_KEY] == {"of": ids[1]}
    own = LocalEmbedder().embed([REPLY])[0]
    mixed = e.vectors.stored_vectors(ns, [ids[2]])[ids[2]]
    assert not np.allclose(mixed, own, atol=1e-3)
    e.forget(ids[0])  # another turn: the reply keeps the question it answered
    assert np.allclose(e.vectors.stored_vectors(ns, [ids[2]])[ids[2]], mixed, atol=1e-5)
    e.forget(ids[1])
    reply = e.store.get(ns, ids[2])
    assert reply is not None and CONTEXT_KEY not in reply.metadata
    # nothing of the forgotten question is left in the reply's vector: in the index and
    # kept beside the record (which a repair would rebuild the index from)
    assert np.allclose(e.vectors.stored_vectors(ns, [ids[2]])[ids[2]], own, atol=1e-5)
    assert np.allclose(e.store.embeddings(ns, [ids[2]])[ids[2]], own, atol=2e-3)
    e.close()


def test_a_re_embedding_and_an_import_index_the_reply_with_its_question_again(
    tmp_path: Path,
) -> None:
    e = _engine(tmp_path)
    ns = e.default_namespace
    ids = _observe(e, CHAT, timedelta(seconds=30))
    e.flush()
    own = LocalEmbedder().embed(list(CHAT))
    mixed = _unit(own[2] + 0.5 * own[1])
    e.repair(reembed=True)
    assert np.allclose(e.vectors.stored_vectors(ns, [ids[2]])[ids[2]], mixed, atol=1e-5)
    assert np.allclose(e.store.embeddings(ns, [ids[2]])[ids[2]], mixed, atol=2e-3)
    # the other turns stay their own
    assert np.allclose(e.vectors.stored_vectors(ns, [ids[3]])[ids[3]], own[3], atol=1e-5)
    exported = list(e.export(ns))
    e.close()
    e = open_engine(tmp_path / "imported", clock=ManualClock(T0 + timedelta(days=1)))
    e.import_(exported)
    e.flush()
    got = e.vectors.stored_vectors(ns, [ids[2], ids[3]])
    assert np.allclose(got[ids[2]], mixed, atol=1e-5)
    assert np.allclose(got[ids[3]], own[3], atol=1e-5)
    e.close()
