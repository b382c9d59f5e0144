"""acx.core.review: the trust state a version enters with, who may decide it, what a decision writes.

Each rule is tested as a negative evaluation: the denial and, in the same test, its positive control.
"""

from __future__ import annotations

from typing import Any

import pytest

from acx.core import review
from acx.core.append import EntrySpec, LogHead, plan_append
from acx.core.log import Covers, EntryError, validate_payload
from tests.factories import memory


def test_policy_none_enters_beliefs_and_required_enters_candidates() -> None:
    rec = memory("m1")
    assert review.entry_state("none", rec) == "belief"  # today's behaviour, the default
    assert review.entry_state("required", rec) == "candidate"
    assert review.DEFAULT_POLICY == "none"
    with pytest.raises(ValueError, match="review policy"):
        review.entry_state("sometimes", rec)


@pytest.mark.parametrize(
    "mark", [{"origin": "imported"}, {"foreign": True}, {"importedFrom": "cart:abc"}], ids=str
)
def test_imported_and_foreign_records_always_enter_as_candidates(mark: dict) -> None:
    native = memory("m1")
    assert review.entry_state("none", native) == "belief"  # positive control: native is trusted
    assert review.entry_state("none", {**native, **mark}) == "candidate"
    assert review.is_foreign({**native, **mark}) and not review.is_foreign({**native, "origin": "native"})


def test_default_reads_serve_beliefs_only_and_candidates_on_request() -> None:
    assert review.serves("belief", "belief") and review.serves("belief", None)  # old rows: beliefs
    assert not review.serves("belief", "candidate")
    assert review.serves("candidate", "candidate") and not review.serves("candidate", "belief")
    assert review.serves("any", "candidate") and review.serves("any", "belief")


def test_a_token_cannot_decide_its_own_candidate_but_another_reviewer_can() -> None:
    denied = review.refusal("acme/agent-1", "acme/agent-1", "candidate")
    assert denied is not None and denied[0] == 403 and "wrote itself" in denied[1]
    assert review.refusal("acme/reviewer", "acme/agent-1", "candidate") is None


def test_only_candidates_are_decided() -> None:
    refused = review.refusal("acme/reviewer", "acme/agent-1", "belief")
    assert refused is not None and refused[0] == 409
    assert review.refusal("acme/reviewer", "acme/agent-1", None) is not None  # old rows are beliefs
    assert review.refusal("acme/reviewer", "acme/agent-1", "candidate") is None


def test_what_each_decision_writes() -> None:
    approve, reject, edit = (review.decision_writes(d) for d in ("approve", "reject", "edit"))
    assert approve.review_decision == "approve" and approve.becomes_belief and not approve.forgets
    assert reject.review_decision == "reject" and reject.forgets and not reject.becomes_belief
    assert edit.review_decision == "approve" and edit.writes_version and edit.becomes_belief
    with pytest.raises(ValueError):
        review.decision_writes("maybe")


def test_near_belief_finds_a_near_copy_and_ignores_an_unrelated_belief() -> None:
    cand = memory("c1", title="Retry DynamoDB writes with backoff", summary="Throttled batch writes "
                  "come back unprocessed; resend them with exponential backoff and jitter.")  # fmt: skip
    copy = {**cand, "id": "b1", "summary": cand["summary"] + " Always."}
    other = memory(
        "b2", title="Pin the Node version", summary="CI broke when the runner image moved to a new Node."
    )
    assert review.near_belief(cand, [other]) is None
    assert review.near_belief(cand, [other, copy]) == {"id": "b1", "title": cand["title"]}
    assert review.near_belief(cand, [cand]) is None  # never itself


def test_author_and_advisory() -> None:
    assert review.author("acme/a", "bot-7") == {"actor": "acme/a", "agent": "bot-7"}
    assert review.author("acme/a", None) == {"actor": "acme/a"}
    assert review.advisory("B.", "belief", " C.") == "B." and review.advisory("B.", "any", " C.") == "B. C."


def test_log_entries_carry_agent_trust_and_review_decision() -> None:
    h = "a" * 64
    specs = [
        EntrySpec("remember", "rom", h, "r#m1", extra=(("agent", "bot-7"), ("trust", "candidate"))),
        EntrySpec("policy", "package", h, None, extra=(("agent", "bot-7"),)),
    ]
    plan = plan_append(
        LogHead.empty(), specs, actor="acme/a", chain="acme/p", created_at="2026-01-01T00:00:00Z"
    )
    first = plan.entries[0]
    review_spec = EntrySpec("review", "rom", h, None, Covers(0, first.hash), (("decision", "approve"),))
    plan2 = plan_append(
        plan.head, [review_spec], actor="acme/r", chain="acme/p", created_at="2026-01-01T00:00:01Z"
    )
    assert plan2.entries[0].payload["decision"] == "approve" and plan2.entries[0].covers.seq == 0  # type: ignore[union-attr]
    bad = {**plan2.entries[0].payload}
    del bad["decision"]
    with pytest.raises(EntryError, match="decision"):
        validate_payload(bad)  # a review entry without its decision is not an entry
    with pytest.raises(EntryError, match="does not carry trust"):
        validate_payload({**plan.entries[1].payload, "trust": "candidate"})  # policy entries carry no trust


def _candidate(seq: int = 3) -> Any:
    from acx.core.rows import LogRow

    return LogRow("m1", seq, "c" * 64, "e" * 64, "active", memory("m1"), zone="rom", trust="candidate")


def test_an_edit_is_a_candidate_supersede_then_an_approve_of_it_and_nothing_else() -> None:
    from acx.core.fingerprint import slot_key
    from acx.core.rows import RecordWrite

    fixed = memory("m1", title="Fixed")
    specs = review.decision_specs(_candidate(), "approve", "bot-r", RecordWrite(fixed, slot_key(fixed)))
    assert [s.operation for s in specs] == ["supersede", "review"]
    superseding, approval = specs
    assert superseding.covers == Covers(3, "e" * 64) and superseding.key == "r#m1"
    assert dict(superseding.extra) == {"agent": "bot-r", "trust": "candidate"}
    assert approval.covers is review.logcore.PREVIOUS and dict(approval.extra)["decision"] == "approve"
    assert superseding.content_hash == approval.content_hash != "c" * 64
    plain = review.decision_specs(_candidate(), "reject", None)  # positive control: one entry
    assert [(s.operation, dict(s.extra)) for s in plain] == [("review", {"decision": "reject"})]
    for decision, rec in (("reject", fixed), ("approve", memory("other"))):  # denials
        with pytest.raises(ValueError):
            review.decision_specs(_candidate(), decision, None, RecordWrite(rec, slot_key(rec)))


def test_a_belief_write_under_a_review_policy_is_a_conflict_and_a_candidate_write_is_not() -> None:
    from acx.core.rows import Conflict, RecordWrite

    belief = RecordWrite(memory(1), "slot-1")
    candidate = RecordWrite(memory(2), "slot-2", trust="candidate")
    with pytest.raises(Conflict):
        review.check_admitted("required", [candidate, belief])
    review.check_admitted("required", [candidate])  # the positive control: candidates always enter
    review.check_admitted("none", [belief, candidate])
    review.check_admitted(None, [belief])  # no policy set: the default admits beliefs


def test_a_belief_is_vouched_for_by_its_policy_or_by_an_approve() -> None:
    assert review.vouched(None, "none", approved=False)  # a belief under the default policy
    assert review.vouched(None, None, approved=False)  # no policy set: the default
    assert not review.vouched(None, "required", approved=False)  # a belief the policy did not admit
    assert not review.vouched("candidate", "none", approved=False)  # a candidate flipped in the table
    assert review.vouched("candidate", "required", approved=True)  # a reviewer vouched
    assert review.admits("required", "candidate") and not review.admits("required", "belief")


def test_a_policy_entry_names_its_policy_by_content_hash() -> None:
    from acx.core.canonical import sha256_hex

    assert review.policy_of_hash(sha256_hex({"review": "required"})) == "required"
    assert review.policy_of_hash(sha256_hex({"review": "none"})) == "none"
    assert review.policy_of_hash(sha256_hex({"review": "sometimes"})) is None
