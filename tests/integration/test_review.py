"""Attribution, trust state and human review through the API handler on moto (the DynamoDB layout of
log_rows: trust/actor/agent on rows, the ``q#`` queue, the ``policy`` item).

Negative evaluations (issue 29, item 5): each test shows a denial beside its positive control.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.service import Service, bundle, record, start_service

PKG = "reviewed"
P = f"/v1/packages/{PKG}"
AGENT_1 = {"sub": "agent-1", "agent_id": "bot-1"}
AGENT_2 = {"sub": "agent-2", "agent_id": "bot-2"}
REVIEWER = {"sub": "alice"}
WRITE = ["memory:write", "memory:read", "memory:forget", "log:read"]
REVIEW = ["memory:review", "memory:read", "log:read"]


@pytest.fixture
def svc() -> Iterator[Service]:
    yield from start_service()


def call(
    svc: Service, method: str, path: str, who: dict[str, str], scopes: list[str], **kw: Any
) -> tuple[int, Any]:
    return svc.call(method, path, claims=who, scopes=scopes, **kw)


def upload(svc: Service, who: dict[str, str], *records: dict[str, Any]) -> None:
    status, body = call(svc, "POST", f"{P}/bundles", who, WRITE, body=bundle(list(records)))
    assert status == 201, body


def listed(svc: Service, **query: str) -> list[str]:
    status, page = call(svc, "GET", f"{P}/memories", AGENT_2, WRITE, query=query)
    assert status == 200, page
    return [r["id"] for r in page["records"]]


def test_entries_and_memories_name_their_actor_and_agent_and_reads_filter_by_agent(svc: Service) -> None:
    one, two = record(1), record(2)
    upload(svc, AGENT_1, one)
    upload(svc, AGENT_2, two)
    status, body = call(svc, "DELETE", f"{P}/memories/{one['id']}", AGENT_2, WRITE)
    assert status == 200, body
    status, log = call(svc, "GET", f"{P}/log/entries", AGENT_2, WRITE)
    assert [(e["operation"], e["actor"], e.get("agent")) for e in log["entries"]] == [
        ("remember", "acme/agent-1", "bot-1"),
        ("remember", "acme/agent-2", "bot-2"),
        ("forget", "acme/agent-2", "bot-2"),  # the second agent forgot the first one's memory: on record
    ]
    three = record(3, title="Pin the runner image", summary="A moved base image broke every build.")
    upload(svc, AGENT_1, three)
    assert listed(svc, agent="bot-1") == [three["id"]]  # positive control
    assert listed(svc, agent="bot-9") == []  # denial: no memory of that agent
    status, got = call(svc, "GET", f"{P}/memories/{two['id']}", AGENT_2, WRITE)
    assert got["author"] == {"actor": "acme/agent-2", "agent": "bot-2"} and got["trust"] == "belief"
    status, page = call(svc, "GET", f"{P}/memories", AGENT_2, WRITE)
    assert {m["id"]: m["author"].get("agent") for m in page["meta"]} == {
        two["id"]: "bot-2",
        record(3)["id"]: "bot-1",
    }


def test_policy_change_needs_admin_and_is_a_receipted_entry(svc: Service) -> None:
    upload(svc, AGENT_1, record(1))
    status, body = call(svc, "PUT", f"{P}/policy", AGENT_1, WRITE, body={"review": "required"})
    assert status == 403 and body["scope"] == "admin"  # denial
    status, body = call(svc, "PUT", f"{P}/policy", {"sub": "ops"}, ["admin"], body={"review": "required"})
    assert status == 200 and body["review"] == "required" and body["changed"] is True  # positive control
    status, body = call(svc, "GET", f"{P}/policy", AGENT_1, WRITE)
    assert body == {"review": "required"}
    status, log = call(svc, "GET", f"{P}/log/entries", AGENT_1, WRITE)
    assert (log["entries"][-1]["operation"], log["entries"][-1]["actor"]) == ("policy", "acme/ops")
    status, body = call(svc, "PUT", f"{P}/policy", {"sub": "ops"}, ["admin"], body={"review": "often"})
    assert status == 422


def test_candidates_stay_out_of_default_reads_until_a_reviewer_approves(svc: Service) -> None:
    upload(svc, AGENT_1, record(1))
    call(svc, "PUT", f"{P}/policy", {"sub": "ops"}, ["admin"], body={"review": "required"})
    cand = record(2)
    upload(svc, AGENT_1, cand)
    # denial: default list, search and get serve beliefs only
    assert listed(svc) == [record(1)["id"]]
    status, found = call(svc, "GET", f"{P}/memories/search", AGENT_2, WRITE, query={"q": cand["title"]})
    assert cand["id"] not in [r["id"] for r in found["results"]]
    status, _ = call(svc, "GET", f"{P}/memories/{cand['id']}", AGENT_2, WRITE)
    assert status == 404
    # positive control: on request, marked as candidates, and the banner says so
    status, page = call(svc, "GET", f"{P}/memories", AGENT_2, WRITE, query={"trust": "any"})
    assert [(m["id"], m["trust"]) for m in page["meta"]] == sorted(
        [(record(1)["id"], "belief"), (cand["id"], "candidate")]
    )
    assert "candidates" in page["advisory"]
    q = {"q": cand["title"], "trust": "candidate"}
    status, found = call(svc, "GET", f"{P}/memories/search", AGENT_2, WRITE, query=q)
    assert [(r["id"], r["trust"]) for r in found["results"]] == [(cand["id"], "candidate")]
    assert found["results"][0]["author"] == {"actor": "acme/agent-1", "agent": "bot-1"}

    status, queue = call(svc, "GET", f"{P}/review", REVIEWER, REVIEW)
    assert status == 200 and [i["id"] for i in queue["items"]] == [cand["id"]]
    assert (
        queue["items"][0]["author"]["agent"] == "bot-1" and queue["items"][0]["source"]["origin"] == "native"
    )

    # denial: the author's own token, even holding memory:review, cannot approve its candidate
    status, body = call(
        svc,
        "POST",
        f"{P}/review/{cand['id']}",
        AGENT_1,
        [*WRITE, "memory:review"],
        body={"decision": "approve"},
    )
    assert status == 403 and "wrote itself" in body["error"]["message"]
    # positive control: the reviewer approves; the decision is a receipted entry naming her
    status, body = call(
        svc, "POST", f"{P}/review/{cand['id']}", REVIEWER, REVIEW, body={"decision": "approve"}
    )
    assert status == 200 and body["reviewer"] == {"actor": "acme/alice"} and body["decision"] == "approve"
    status, log = call(svc, "GET", f"{P}/log/entries", REVIEWER, REVIEW)
    last = log["entries"][-1]
    assert (last["operation"], last["decision"], last["actor"]) == ("review", "approve", "acme/alice")
    assert sorted(listed(svc)) == sorted([record(1)["id"], cand["id"]])
    status, got = call(svc, "GET", f"{P}/memories/{cand['id']}", AGENT_2, WRITE)
    assert got["trust"] == "belief" and got["reviewer"] == "acme/alice"
    status, again = call(
        svc, "POST", f"{P}/review/{cand['id']}", REVIEWER, REVIEW, body={"decision": "approve"}
    )
    assert status == 409 and again["error"]["code"] == "not_candidate"
    status, queue = call(svc, "GET", f"{P}/review", REVIEWER, REVIEW)
    assert queue["items"] == []
    status, verdict = call(svc, "GET", f"{P}/log/verify", REVIEWER, REVIEW)
    assert verdict["status"] == "ok", verdict


def test_deciding_needs_the_review_scope(svc: Service) -> None:
    call(svc, "PUT", f"{P}/policy", {"sub": "ops"}, ["admin"], body={"review": "required"})
    cand = record(1)
    upload(svc, AGENT_1, cand)
    status, body = call(svc, "GET", f"{P}/review", REVIEWER, ["memory:read", "admin"])
    assert status == 403 and body["scope"] == "memory:review"
    status, body = call(
        svc,
        "POST",
        f"{P}/review/{cand['id']}",
        REVIEWER,
        ["memory:read", "admin"],
        body={"decision": "approve"},
    )
    assert status == 403 and body["scope"] == "memory:review"
    status, body = call(
        svc, "POST", f"{P}/review/{cand['id']}", REVIEWER, REVIEW, body={"decision": "reject"}
    )
    assert status == 200 and body["forget"]["forgotten"] == cand["id"]
    assert listed(svc, trust="any") == []
    status, body = call(svc, "POST", f"{P}/bundles", AGENT_2, WRITE, body=bundle([{**cand, "id": "again-1"}]))
    assert status == 409 and body["error"]["code"] == "forgotten"  # the rejected knowledge stays out


def test_the_queue_pages_oldest_first_and_an_edit_approves_the_corrected_version(svc: Service) -> None:
    call(svc, "PUT", f"{P}/policy", {"sub": "ops"}, ["admin"], body={"review": "required"})
    for i in range(1, 4):
        upload(svc, AGENT_1, record(i))
    seen: list[str] = []
    seqs: list[int] = []
    cursor = None
    while True:
        status, page = call(
            svc,
            "GET",
            f"{P}/review",
            REVIEWER,
            REVIEW,
            query={"limit": "2", **({"cursor": cursor} if cursor else {})},
        )
        assert status == 200, page
        seen += [i["id"] for i in page["items"]]
        seqs += [i["seq"] for i in page["items"]]
        cursor = page["cursor"]
        if not cursor:
            break
    assert seen == [record(i)["id"] for i in range(1, 4)]
    fixed = record(1, title="Lesson 1 about retries, with jitter")
    status, body = call(
        svc, "POST", f"{P}/review/{seen[0]}", REVIEWER, REVIEW,
        body={"decision": "edit", "record": fixed, "seq": seqs[0]},
    )  # fmt: skip
    assert status == 200, body
    assert (body["decision"], body["approvedSeq"], body["reviewer"]) == (
        "edit",
        body["seq"] + 1,
        {"actor": "acme/alice"},
    )
    status, log = call(svc, "GET", f"{P}/log/entries", REVIEWER, REVIEW)
    superseding, approval = log["entries"][-2:]
    assert (superseding["operation"], superseding["actor"], superseding["trust"]) == (
        "supersede", "acme/alice", "candidate",
    )  # fmt: skip
    assert superseding["covers"]["seq"] == seqs[0]
    assert (approval["operation"], approval["decision"], approval["actor"]) == (
        "review",
        "approve",
        "acme/alice",
    )
    assert approval["covers"] == {"seq": superseding["seq"], "hash": superseding["hash"]}  # who vouched
    status, got = call(svc, "GET", f"{P}/memories/{seen[0]}", AGENT_2, WRITE)
    assert status == 200 and (got["record"]["title"], got["trust"], got["reviewer"]) == (
        fixed["title"], "belief", "acme/alice",
    )  # fmt: skip
    assert listed(svc) == [seen[0]]  # the others still wait
    status, queue = call(svc, "GET", f"{P}/review", REVIEWER, REVIEW)
    assert [i["id"] for i in queue["items"]] == seen[1:]
    status, verified = call(svc, "GET", f"{P}/log/verify", REVIEWER, REVIEW)
    assert verified["status"] == "ok", verified


def test_an_edit_is_refused_when_stale_invalid_secret_or_the_authors_own(svc: Service) -> None:
    call(svc, "PUT", f"{P}/policy", {"sub": "ops"}, ["admin"], body={"review": "required"})
    upload(svc, AGENT_1, record(1))
    status, queue = call(svc, "GET", f"{P}/review", REVIEWER, REVIEW)
    item = queue["items"][0]
    path = f"{P}/review/{item['id']}"
    fixed = record(1, title="Lesson 1, corrected")

    def edit(who: dict[str, str], rec: dict[str, Any], seq: int) -> tuple[int, Any]:
        return call(svc, "POST", path, who, REVIEW, body={"decision": "edit", "record": rec, "seq": seq})

    status, body = edit(AGENT_1, fixed, item["seq"])  # the author, holding memory:review
    assert status == 403, body
    status, body = edit(REVIEWER, fixed, item["seq"] - 1)  # not the version the queue showed
    assert status == 409 and body["error"]["code"] == "not_candidate", body
    status, body = edit(REVIEWER, record(1, impact="awful", xpAwarded=-1), item["seq"])
    assert status == 422, body
    paths = [p["path"] for p in body["report"]["problems"]]
    assert "$.record.impact" in paths and any(p.startswith("$.record.xpAwarded") for p in paths), paths
    token = "ghp_" + "Q7x2Lm9Kp4Rt8Vw1Yz3Bn6Cd5Fg0Hj2Kl4Mn"
    status, body = edit(REVIEWER, record(1, summary=f"use {token}"), item["seq"])
    assert status == 422 and body["error"]["code"] == "blocked" and token not in str(body), body
    assert listed(svc) == []  # nothing refused was approved
    status, body = edit(REVIEWER, fixed, item["seq"])  # positive control
    assert status == 200, body
    assert listed(svc) == [item["id"]]
