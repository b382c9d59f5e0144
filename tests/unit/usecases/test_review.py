"""usecases.review (and the read path's trust filter) on fakes: attribution, trust state, human review.

Negative evaluations (issue 29, item 5): every rule is shown denying and, in the same test, its
positive control passing.
"""

from __future__ import annotations

import pytest

from acx.core.package import PackageRef
from acx.usecases import cartridges, forget, ingest, recall, review, search
from acx.usecases.access import Principal
from acx.usecases.errors import ServiceError
from acx.usecases.verify import verify_package
from tests.factories import bundle_json, memory
from tests.fakes import chained_deps

REF = PackageRef("t1", "notes")
AGENT_1 = Principal("t1", "agent-1", frozenset({"memory:write", "memory:read", "memory:review"}), "bot-1")
AGENT_2 = Principal("t1", "agent-2", frozenset({"memory:write", "memory:read"}), "bot-2")
REVIEWER = Principal("t1", "alice", frozenset({"memory:review", "memory:read"}))
ADMIN = Principal("t1", "ops", frozenset({"admin"}))


@pytest.fixture
def deps(fake_search_index):
    return chained_deps()


def write(deps, who: Principal, *records: dict) -> None:
    ingest.ingest_bundle(deps, "t1", "notes", who.actor, bundle_json(list(records)), agent=who.agent)


def ids(page: dict) -> list[str]:
    return [r["id"] for r in page["records"]]


def test_every_entry_names_its_actor_and_agent_and_every_memory_its_author(deps) -> None:
    write(deps, AGENT_1, memory("a1", title="Lesson one"))
    write(deps, AGENT_2, memory("b1", title="Lesson two"))
    forget.forget(deps, "t1", "notes", AGENT_2.actor, record_id="a1", agent=AGENT_2.agent)
    entries = list(deps.log.entries(REF))
    assert [(e.operation, e.payload["actor"], e.payload.get("agent")) for e in entries] == [
        ("remember", "t1/agent-1", "bot-1"),
        ("remember", "t1/agent-2", "bot-2"),
        ("forget", "t1/agent-2", "bot-2"),  # who forgot whose memory is in the log
    ]
    got = recall.get_memory(deps, "t1", "notes", "b1")
    assert got["author"] == {"actor": "t1/agent-2", "agent": "bot-2"} and got["trust"] == "belief"
    assert verify_package(deps.log, REF, deps.settings.publisher_id).status == "ok"


def test_reads_filter_by_agent_and_an_unknown_agent_gets_nothing(deps) -> None:
    write(deps, AGENT_1, memory("a1", title="Lesson one"))
    write(deps, AGENT_2, memory("b1", title="Lesson two"))
    assert ids(recall.recall(deps, "t1", "notes", agent="bot-1")) == ["a1"]  # positive control
    assert ids(recall.recall(deps, "t1", "notes", agent="bot-9")) == []  # denial: not that agent's
    page = recall.recall(deps, "t1", "notes")
    assert page["meta"] == [
        {"id": "a1", "trust": "belief", "author": {"actor": "t1/agent-1", "agent": "bot-1"}},
        {"id": "b1", "trust": "belief", "author": {"actor": "t1/agent-2", "agent": "bot-2"}},
    ]
    found = search.search(deps, "t1", "notes", search.parse_query("lesson", agent="bot-2"))
    assert [r.id for r in found.results] == ["b1"]
    with pytest.raises(ServiceError) as exc:
        recall.get_memory(deps, "t1", "notes", "a1", agent="bot-2")
    assert exc.value.status == 404


def test_policy_required_makes_candidates_that_default_reads_do_not_serve(deps) -> None:
    write(deps, AGENT_1, memory("old", title="Believed before the policy"))
    out = review.set_policy(deps, "t1", "notes", ADMIN, "required")
    assert out["changed"] and review.get_policy(deps, "t1", "notes") == {"review": "required"}
    policy_entry = list(deps.log.entries(REF))[-1]
    assert (policy_entry.operation, policy_entry.payload["actor"]) == ("policy", "t1/ops")  # auditable
    write(deps, AGENT_1, memory("new", title="Written under review"))
    # denial: the default read serves beliefs only ...
    default = recall.recall(deps, "t1", "notes")
    assert ids(default) == ["old"] and "candidates" not in default["advisory"]
    # ... positive control: asked for, the candidate is served, marked, and the banner says so
    anyp = recall.recall(deps, "t1", "notes", trust="any")
    assert ids(anyp) == ["new", "old"] and [m["trust"] for m in anyp["meta"]] == ["candidate", "belief"]
    assert "candidates" in anyp["advisory"]
    assert ids(recall.recall(deps, "t1", "notes", trust="candidate")) == ["new"]
    q = search.parse_query("written review")
    assert [r.id for r in search.search(deps, "t1", "notes", q).results] == []
    q = search.parse_query("written review", trust="candidate")
    res = search.search(deps, "t1", "notes", q)
    assert [(r.id, r.trust) for r in res.results] == [("new", "candidate")] and "candidates" in res.advisory
    with pytest.raises(ServiceError) as exc:
        recall.get_memory(deps, "t1", "notes", "new")
    assert exc.value.status == 404 and "trust=candidate" in exc.value.message
    assert recall.get_memory(deps, "t1", "notes", "new", trust="candidate")["trust"] == "candidate"
    assert review.set_policy(deps, "t1", "notes", ADMIN, "required")["changed"] is False


def test_imported_records_enter_as_candidates_under_the_default_policy(deps) -> None:
    write(deps, AGENT_1, memory("native", title="Our own lesson"))
    write(
        deps, AGENT_1, memory("imp", title="Someone else's lesson", origin="imported", importedFrom="cart-1")
    )
    assert ids(recall.recall(deps, "t1", "notes")) == ["native"]  # the import waits for review
    assert ids(recall.recall(deps, "t1", "notes", trust="candidate")) == ["imp"]


def test_the_queue_lists_candidates_oldest_first_with_author_source_and_near_belief(deps) -> None:
    belief = memory(
        "b1", title="Retry throttled writes", summary="Resend unprocessed items with backoff and jitter."
    )
    write(deps, AGENT_2, belief)
    review.set_policy(deps, "t1", "notes", ADMIN, "required")
    write(
        deps,
        AGENT_1,
        memory("c2", title="Later candidate", summary="Written second.", timestamp="2026-01-03T00:00:00Z"),
    )
    write(
        deps,
        AGENT_1,
        {
            **belief,
            "id": "c3",
            "summary": belief["summary"] + " Always.",
            "timestamp": "2026-01-04T00:00:00Z",
        },
    )
    q = review.review_queue(deps, "t1", "notes", limit=1)
    assert [i["id"] for i in q["items"]] == ["c2"] and q["cursor"]
    item = q["items"][0]
    assert item["author"] == {"actor": "t1/agent-1", "agent": "bot-1"} and item["nearBelief"] is None
    assert (
        item["source"] == {"origin": "native", "importedFrom": None, "foreign": False} and item["recordedAt"]
    )
    q2 = review.review_queue(deps, "t1", "notes", limit=10, cursor=q["cursor"])
    assert [i["id"] for i in q2["items"]] == ["c3"] and q2["cursor"] is None
    assert q2["items"][0]["nearBelief"] == {"id": "b1", "title": belief["title"]}


def test_an_agent_cannot_approve_its_own_candidate_but_a_reviewer_can(deps) -> None:
    review.set_policy(deps, "t1", "notes", ADMIN, "required")
    write(deps, AGENT_1, memory("c1", title="Needs a second pair of eyes"))
    # denial: agent-1 holds memory:review but wrote c1
    with pytest.raises(ServiceError) as exc:
        review.decide(deps, "t1", "notes", AGENT_1, "c1", "approve")
    assert exc.value.status == 403 and "wrote itself" in exc.value.message
    assert ids(recall.recall(deps, "t1", "notes")) == []
    # positive control: another person approves; the decision is a receipted entry naming her
    out = review.decide(deps, "t1", "notes", REVIEWER, "c1", "approve")
    assert out["reviewer"] == {"actor": "t1/alice"} and out["decision"] == "approve"
    entry = list(deps.log.entries(REF))[out["seq"]]
    assert (entry.operation, entry.payload["decision"], entry.payload["actor"]) == (
        "review",
        "approve",
        "t1/alice",
    )
    assert entry.covers is not None and entry.covers.seq == deps.log.rows.get(REF, "c1").seq
    assert ids(recall.recall(deps, "t1", "notes")) == ["c1"]
    assert recall.get_memory(deps, "t1", "notes", "c1")["reviewer"] == "t1/alice"
    assert review.review_queue(deps, "t1", "notes")["items"] == []
    assert verify_package(deps.log, REF, deps.settings.publisher_id).status == "ok"


def test_only_a_candidate_can_be_decided(deps) -> None:
    write(deps, AGENT_1, memory("b1", title="Already a belief"))
    review.set_policy(deps, "t1", "notes", ADMIN, "required")
    write(deps, AGENT_1, memory("c1", title="A candidate"))
    with pytest.raises(ServiceError) as exc:
        review.decide(deps, "t1", "notes", REVIEWER, "b1", "approve")
    assert exc.value.status == 409 and exc.value.code == "not_candidate"
    assert review.decide(deps, "t1", "notes", REVIEWER, "c1", "approve")["decision"] == "approve"
    with pytest.raises(ServiceError) as exc:
        review.decide(deps, "t1", "notes", REVIEWER, "c1", "approve")  # decided once
    assert exc.value.status == 409
    with pytest.raises(ServiceError) as exc:
        review.decide(deps, "t1", "notes", REVIEWER, "nope", "approve")
    assert exc.value.status == 404


def test_reject_forgets_the_candidate_and_its_tombstone_refuses_it_back(deps) -> None:
    review.set_policy(deps, "t1", "notes", ADMIN, "required")
    bad = memory("c1", title="Disable TLS checks to fix the build", summary="Set verify false everywhere.")
    write(deps, AGENT_1, bad)
    out = review.decide(deps, "t1", "notes", REVIEWER, "c1", "reject")
    assert out["forget"]["forgotten"] == "c1"
    ops = [(e.operation, e.payload.get("decision"), e.payload["actor"]) for e in deps.log.entries(REF)]
    assert ops[-2:] == [("review", "reject", "t1/alice"), ("forget", None, "t1/alice")]
    assert ids(recall.recall(deps, "t1", "notes", trust="any")) == []
    # denial: the same knowledge is refused back ...
    with pytest.raises(ServiceError) as exc:
        write(deps, AGENT_2, {**bad, "id": "again"})
    assert exc.value.status == 409 and exc.value.code == "forgotten"
    # ... positive control: other knowledge still lands
    write(deps, AGENT_2, memory("fine", title="Pin certificates in tests"))
    assert verify_package(deps.log, REF, deps.settings.publisher_id).status == "ok"


def test_a_reject_that_would_also_forget_a_belief_is_refused(deps) -> None:
    write(deps, AGENT_2, memory("b1", title="Same words", summary="Exactly the same knowledge."))
    review.set_policy(deps, "t1", "notes", ADMIN, "required")
    write(
        deps,
        AGENT_1,
        memory(
            "c1", title="Same words", summary="Exactly the same knowledge.", timestamp="2026-02-01T00:00:00Z"
        ),
    )
    with pytest.raises(ServiceError) as exc:
        review.decide(deps, "t1", "notes", REVIEWER, "c1", "reject")
    assert exc.value.status == 409 and "b1" in exc.value.message
    assert ids(recall.recall(deps, "t1", "notes")) == ["b1"]  # the belief is untouched
    assert review.decide(deps, "t1", "notes", REVIEWER, "c1", "approve")["decision"] == "approve"


def test_edit_supersedes_the_candidate_and_approves_the_correction_in_one_commit(deps) -> None:
    review.set_policy(deps, "t1", "notes", ADMIN, "required")
    write(deps, AGENT_1, memory("c1", title="Typo in tittle"))
    candidate = deps.log.record(REF, "c1")
    size = deps.log.head(REF).size
    fixed = memory("c1", title="Typo in title")
    out = review.decide(deps, "t1", "notes", REVIEWER, "c1", "edit", fixed, seen_seq=candidate.seq)
    assert out["decision"] == "edit" and out["reviewer"] == {"actor": "t1/alice"}
    assert out["supersedes"] == {"seq": candidate.seq, "hash": candidate.entry_hash}
    assert (out["seq"], out["approvedSeq"]) == (size, size + 1)  # one commit, two entries
    superseding, approval = list(deps.log.entries(REF))[size:]
    assert (superseding.operation, superseding.payload["actor"], superseding.payload["trust"]) == (
        "supersede", "t1/alice", "candidate",
    )  # fmt: skip
    assert superseding.payload["covers"] == {"seq": candidate.seq, "hash": candidate.entry_hash}
    assert (approval.operation, approval.payload["decision"], approval.payload["actor"]) == (
        "review", "approve", "t1/alice",
    )  # fmt: skip
    assert approval.payload["covers"] == {"seq": superseding.seq, "hash": superseding.hash}  # who vouched
    # the corrected text is the belief default reads serve; the candidate's text is its history
    got = recall.get_memory(deps, "t1", "notes", "c1")
    assert (got["record"]["title"], got["trust"], got["reviewer"]) == ("Typo in title", "belief", "t1/alice")
    assert review.review_queue(deps, "t1", "notes")["items"] == []
    from acx.usecases import versions

    history = versions.history(deps, "t1", "notes", "c1")["versions"]
    assert [v["record"]["title"] for v in history] == ["Typo in tittle", "Typo in title"]
    assert verify_package(deps.log, REF, deps.settings.publisher_id).status == "ok"


def test_an_edit_is_checked_like_any_write_and_a_refused_edit_approves_nothing(deps) -> None:
    review.set_policy(deps, "t1", "notes", ADMIN, "required")
    write(deps, AGENT_1, memory("c1", title="Typo in tittle"), memory("b0", title="Other", summary="Else."))
    review.decide(deps, "t1", "notes", REVIEWER, "b0", "approve")
    size = deps.log.head(REF).size
    secret = "token ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    refused = [
        (memory("c1", xpAwarded=-1, impact="awful"), 422, None),  # every problem in one answer
        (memory("other-id"), 422, "$.record.id"),
        (memory("c1", portable=False, codebaseFingerprint="cbf1_" + "0" * 40), 422, "$.record.portable"),
        (memory("c1", summary=secret), 422, None),  # the scrub gate
        (memory("c1", title="Other", summary="Else."), 409, "$.record"),  # another memory's content
    ]
    for record, status, path in refused:
        with pytest.raises(ServiceError) as exc:
            review.decide(deps, "t1", "notes", REVIEWER, "c1", "edit", record)
        assert exc.value.status == status, exc.value.message
        if path:
            assert exc.value.path == path
    first = refused[0]
    with pytest.raises(ServiceError) as exc:
        review.decide(deps, "t1", "notes", REVIEWER, "c1", "edit", first[0])
    paths = [p["path"] for p in exc.value.extra["report"]["problems"]]
    assert any(p.startswith("$.record.xpAwarded") for p in paths) and "$.record.impact" in paths, paths
    with pytest.raises(ServiceError) as exc:
        review.decide(deps, "t1", "notes", REVIEWER, "c1", "edit", memory("c1", summary=secret))
    assert exc.value.code == "blocked" and "ghp_" not in str(exc.value.extra)
    assert deps.log.head(REF).size == size  # a refused edit writes (and approves) nothing
    assert ids(recall.recall(deps, "t1", "notes", trust="candidate")) == ["c1"]
    # positive control: the same reviewer's valid edit lands
    assert (
        review.decide(deps, "t1", "notes", REVIEWER, "c1", "edit", memory("c1", title="Typo"))["seq"] == size
    )


def test_an_edit_of_forgotten_knowledge_is_refused(deps) -> None:
    review.set_policy(deps, "t1", "notes", ADMIN, "required")
    gone = memory("g1", title="Forgotten lesson", summary="Never to come back.")
    write(deps, AGENT_1, gone, memory("c1", title="Candidate"))
    forget.forget(deps, "t1", "notes", ADMIN.actor, record_id="g1")
    with pytest.raises(ServiceError) as exc:
        review.decide(deps, "t1", "notes", REVIEWER, "c1", "edit", {**gone, "id": "c1"})
    assert (exc.value.status, exc.value.code) == (409, "forgotten")
    out = review.decide(deps, "t1", "notes", REVIEWER, "c1", "edit", memory("c1", title="Kept lesson"))
    assert out["decision"] == "edit"  # positive control: different knowledge is approved


def test_the_author_cannot_edit_approve_its_own_candidate_but_a_reviewer_can(deps) -> None:
    review.set_policy(deps, "t1", "notes", ADMIN, "required")
    write(deps, AGENT_1, memory("c1", title="Typo in tittle"))
    fixed = memory("c1", title="Typo in title")
    with pytest.raises(ServiceError) as exc:  # AGENT_1 holds memory:review, and wrote c1
        review.decide(deps, "t1", "notes", AGENT_1, "c1", "edit", fixed)
    assert exc.value.status == 403
    assert ids(recall.recall(deps, "t1", "notes")) == []
    review.decide(deps, "t1", "notes", REVIEWER, "c1", "edit", fixed)
    assert ids(recall.recall(deps, "t1", "notes")) == ["c1"]


def test_a_stale_candidate_is_refused_and_the_current_one_is_decided(deps) -> None:
    from acx.usecases import versions

    review.set_policy(deps, "t1", "notes", ADMIN, "required")
    write(deps, AGENT_1, memory("c1", title="First draft"))
    seen = deps.log.record(REF, "c1").seq
    versions.update(deps, "t1", "notes", AGENT_1.actor, "c1", memory("c1", title="Second draft"))
    now = deps.log.record(REF, "c1").seq
    for decision, record in (("edit", memory("c1", title="Reviewed draft")), ("approve", None)):
        with pytest.raises(ServiceError) as exc:  # the reviewer saw the first draft
            review.decide(deps, "t1", "notes", REVIEWER, "c1", decision, record, seen_seq=seen)
        assert exc.value.status == 409 and exc.value.code == "not_candidate"
    assert deps.log.record(REF, "c1").trust == "candidate"
    review.decide(deps, "t1", "notes", REVIEWER, "c1", "edit", memory("c1", title="Reviewed"), seen_seq=now)
    assert recall.recall(deps, "t1", "notes")["records"][0]["title"] == "Reviewed"


def test_cartridges_export_beliefs_only(deps) -> None:
    write(deps, AGENT_1, memory("b1", title="Exported belief"))
    review.set_policy(deps, "t1", "notes", ADMIN, "required")
    write(deps, AGENT_1, memory("c1", title="Unreviewed candidate"))
    rows, _ = cartridges._rows_with_proofs(deps, REF, None)
    assert [r["id"] for r in rows] == ["b1"]  # denial of c1 beside its positive control b1
    review.decide(deps, "t1", "notes", REVIEWER, "c1", "approve")
    rows, _ = cartridges._rows_with_proofs(deps, REF, None)
    assert sorted(r["id"] for r in rows) == ["b1", "c1"]


def test_bad_filters_and_policies_are_refused_with_their_path(deps) -> None:
    write(deps, AGENT_1, memory("a1"))
    for call, path in (
        (lambda: recall.recall(deps, "t1", "notes", trust="maybe"), "$.trust"),
        (lambda: recall.recall(deps, "t1", "notes", agent="x" * 200), "$.agent"),
        (lambda: search.parse_query("q", trust="all"), "$.trust"),
        (lambda: review.set_policy(deps, "t1", "notes", ADMIN, "sometimes"), "$.review"),
        (lambda: review.review_queue(deps, "t1", "notes", cursor="bogus"), "$.cursor"),
    ):
        with pytest.raises(ServiceError) as exc:
            call()
        assert exc.value.path == path
    assert ids(recall.recall(deps, "t1", "notes", trust="belief", agent=None)) == ["a1"]


def test_a_correction_under_review_is_a_candidate_too(deps) -> None:
    from acx.usecases import versions

    write(deps, AGENT_1, memory("m1", title="Deploy on Fridays", summary="Nothing ever breaks."))
    review.set_policy(deps, "t1", "notes", ADMIN, "required")
    fixed = memory("m1", title="Never deploy on Fridays", summary="Something always breaks.")
    versions.update(deps, "t1", "notes", AGENT_2.actor, "m1", fixed)
    # denial: the unreviewed correction does not reach default reads ...
    assert ids(recall.recall(deps, "t1", "notes")) == []
    # ... positive control: it waits in the queue, and a reviewer's approval makes it the belief
    assert [i["id"] for i in review.review_queue(deps, "t1", "notes")["items"]] == ["m1"]
    review.decide(deps, "t1", "notes", REVIEWER, "m1", "approve")
    assert recall.recall(deps, "t1", "notes")["records"][0]["title"] == "Never deploy on Fridays"
