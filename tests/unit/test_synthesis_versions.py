"""The REM cycle's contradiction step, pure: which clusters hold open versions (an
"outdates" link the write path left), the prompt and schema they get, and the
validation of an answer's "outdated" labels: only offered fragments, and the synthesis
must state the newest value. A malformed answer, or one naming fragments that do not
exist or were not offered, is refused; after the retries the cluster falls back to the
extractive synthesis, which supersedes nothing."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from reverie.core.commit import replaced_until
from reverie.core.consolidation import synthesize_group
from reverie.core.models import Kind, Memory, Tier
from reverie.core.policy import DEFAULT_POLICY
from reverie.core.synthesis import (
    SYNTHESIS_SCHEMA,
    InvalidPayload,
    build_prompt,
    open_versions,
    synthesis_schema,
    validate_payload,
)
from reverie.core.writing import UPDATE_KEY

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def trace(mid: str, text: str, day: int, **meta: Any) -> Memory:
    return Memory(id=mid, namespace="ns", kind=Kind.EPISODIC, tier=Tier.TRACE, text=text,
                  created_at=T0 + timedelta(days=day), metadata=meta)


def cluster() -> list[Memory]:
    """F1 Berlin, F2 an unrelated line, F3 the move (linked to F1 as "outdates")."""
    return [
        trace("b", "user: I live in Berlin, near Tempelhofer Feld.", 0),
        trace("p", "user: I go running in the park on Sundays.", 3),
        trace("l", "user: We finally moved to Lisbon last month.", 120,
              **{UPDATE_KEY: {"of": "b", "verdict": "outdates"}}),
    ]


def answer(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "synthesis": "The user lived in Berlin, then moved to Lisbon (the newer city wins); "
                     "runs in the park on Sundays.",
        "key_entities": ["Lisbon"], "causal_chains": [], "temporal_anchors": [],
        "importance": 0.4, "outdated": ["F1"],
    }
    return {**base, **changes}


def test_open_versions_come_from_the_write_paths_links() -> None:
    found = open_versions(cluster())
    assert found is not None
    assert dict(found.labels) == {"F1": "b", "F2": "p", "F3": "l"}
    assert dict(found.replaced_by) == {"F1": ("F3",)}
    # no link, a link to a memory outside the cluster, a restored member: nothing open
    plain = [trace("b", "a", 0), trace("l", "b", 1)]
    assert open_versions(plain) is None
    outside = [trace("b", "a", 0), trace("l", "b", 1, **{UPDATE_KEY: {"of": "zz"}})]
    assert open_versions(outside) is None
    restored = cluster()
    restored[0] = trace("b", restored[0].text, 0, reverie_restored={"at": "x"})
    assert open_versions(restored) is None


def test_prompt_and_schema_offer_the_open_pairs_only() -> None:
    members = cluster()
    prompt = build_prompt(members)
    assert "F1 [2025-01-01] user: I live in Berlin" in prompt
    assert "F3 [2025-05-01] user: We finally moved to Lisbon" in prompt
    assert "- F1 may be replaced by F3, which says: user: We finally moved" in prompt
    assert "chosen from: F1." in prompt
    schema = synthesis_schema(members)
    assert schema["properties"]["outdated"]["items"]["enum"] == ["F1"]
    assert schema["required"][-1] == "outdated"
    # a cluster without open versions keeps the plain prompt and schema
    plain = [trace("a", "Ana moved to Porto.", 0), trace("c", "Ana likes cafes.", 1)]
    assert synthesis_schema(plain) is SYNTHESIS_SCHEMA
    assert "outdated" not in build_prompt(plain)


def test_a_valid_answer_names_the_members_to_supersede() -> None:
    payload = validate_payload(answer(), cluster())
    assert payload.supersedes == ("b",)
    # read back from the journal, the payload is the same
    assert validate_payload(payload.to_dict()) == payload
    # the model may also judge that nothing was replaced
    assert validate_payload(answer(outdated=[]), cluster()).supersedes == ()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"outdated": ["F7"]}, "'outdated' names 'F7', not among the fragments (F1, F2, F3)"),
        ({"outdated": ["F2"]}, "may name only F1 (a fragment a newer one may replace), not F2"),
        ({"outdated": "F1"}, "'outdated' must be a list of fragment labels"),
        ({"synthesis": "The user lives in Berlin and runs in the park."},
         "'synthesis' must state the newest value (lisbon), which replaced F1's: F3 says"),
    ],
)
def test_an_answer_that_names_what_it_may_not_is_refused(
    changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidPayload) as e:
        validate_payload(answer(**changes), cluster())
    assert message in str(e.value)


def test_missing_outdated_is_malformed_for_open_versions_only() -> None:
    raw = answer()
    del raw["outdated"]
    with pytest.raises(InvalidPayload, match="missing key"):
        validate_payload(raw, cluster())
    plain = [trace("a", "Ana moved to Porto.", 0), trace("c", "Ana likes cafes.", 1)]
    with pytest.raises(InvalidPayload, match="unexpected key"):
        validate_payload(answer(), plain)


class Scripted:
    """Answers in order, as a model would; records each prompt and schema it was sent."""

    name = "scripted"

    def __init__(self, *answers: Mapping[str, Any]) -> None:
        self.answers = list(answers)
        self.sent: list[tuple[str, Mapping[str, Any]]] = []

    def synthesize(self, prompt: str, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        self.sent.append((prompt, schema))
        return self.answers.pop(0)


def test_a_refused_answer_is_re_asked_with_the_reason() -> None:
    model = Scripted(answer(outdated=["F9"]), answer())
    result = synthesize_group(cluster(), model, DEFAULT_POLICY)
    assert result.attempts == 2 and not result.fell_back
    assert result.payload.supersedes == ("b",)
    assert "'outdated' names 'F9'" in model.sent[1][0]
    assert all(schema == synthesis_schema(cluster()) for _, schema in model.sent)


def test_answers_that_stay_wrong_supersede_nothing() -> None:
    bad = answer(outdated=["F9"])
    model = Scripted(*[bad] * (DEFAULT_POLICY.maintenance.synthesis_retries + 1))
    result = synthesize_group(cluster(), model, DEFAULT_POLICY)
    assert result.fell_back and result.synthesizer == "extractive"
    assert result.payload.supersedes == ()


def test_a_replaced_member_holds_until_its_newer_version_was_observed() -> None:
    members = {m.id: m for m in cluster()}
    now = T0 + timedelta(days=400)
    # Berlin held until the move was told (day 120), not until the unrelated day-3 line
    assert replaced_until(members, frozenset({"b"}), now) == {"b": T0 + timedelta(days=120)}
    # without a link (a payload from elsewhere): until the next member that still holds
    unlinked = {m.id: m for m in cluster()[:2]}
    assert replaced_until(unlinked, frozenset({"b"}), now) == {"b": T0 + timedelta(days=3)}
    assert replaced_until(unlinked, frozenset({"p"}), now) == {"p": now}
