"""Log entries: the hash definition, the chain, and payload validation."""

from __future__ import annotations

import hashlib
import json

import pytest

from acx.core import log
from tests.factories import entry_payload

PAYLOAD = entry_payload()


def test_entry_hash_is_sha256_of_canonical_prevhash_plus_payload() -> None:
    expected_bytes = json.dumps(
        {"prevHash": log.GENESIS, **PAYLOAD}, sort_keys=True, separators=(",", ":")
    ).encode()
    assert log.entry_hash(log.GENESIS, PAYLOAD) == hashlib.sha256(expected_bytes).hexdigest()
    assert log.GENESIS == "0" * 64


def test_chain_links_and_depends_on_every_field() -> None:
    from acx.core.append import EntrySpec, LogHead, plan_append

    second = {**PAYLOAD, "seq": 1}
    spec = EntrySpec(PAYLOAD["operation"], PAYLOAD["tier"], PAYLOAD["contentHash"], "r#x")
    plan = plan_append(
        LogHead.empty(),
        [spec, spec],
        actor=PAYLOAD["actor"],
        chain=PAYLOAD["chainKey"],
        created_at=PAYLOAD["createdAt"],
    )
    h0, h1 = (e.hash for e in plan.entries)
    assert h0 == log.entry_hash(log.GENESIS, PAYLOAD) and plan.entries[1].prev_hash == h0
    assert plan.head.chain_head == h1 and plan.size == 2
    assert h1 == log.entry_hash(h0, second)
    for field, value in [("actor", "x"), ("tier", "save"), ("contentHash", "b" * 64), ("seq", 2)]:
        assert log.entry_hash(h0, {**second, field: value}) != h1
    assert log.entry_hash("1" * 64, second) != h1


def test_content_hash_hashes_the_canonical_record() -> None:
    assert log.content_hash({"b": 1, "a": "x"}) == hashlib.sha256(b'{"a":"x","b":1}').hexdigest()
    assert log.file_content_hash("a.md", "x") != log.file_content_hash("b.md", "x")


def test_forget_needs_covers() -> None:
    fine = entry_payload(seq=3, operation="forget", covers={"seq": 1, "hash": "c" * 64})
    assert fine["covers"] == {"seq": 1, "hash": "c" * 64}


@pytest.mark.parametrize(
    "changes",
    [
        {"seq": 3, "operation": "forget"},  # a forget without covers
        {"seq": 3, "operation": "forget", "covers": {"seq": 3, "hash": "c" * 64}},  # covers itself
        {"seq": 3, "operation": "remember", "covers": {"seq": 1, "hash": "c" * 64}},  # covers on a write
        {"operation": "delete"},  # not an operation of the log
        {"content_hash": "A" * 64},  # upper-case hex
    ],
)
def test_payloads_the_log_refuses(changes: dict) -> None:
    with pytest.raises(log.EntryError):
        entry_payload(**changes)


def test_entry_hash_refuses_a_short_previous_hash() -> None:
    with pytest.raises(log.EntryError):
        log.entry_hash("0" * 63, PAYLOAD)


COVER = {"seq": 0, "hash": "c" * 64}


@pytest.mark.parametrize("operation", ["supersede", "invalidate", "review"])
def test_every_covering_operation_needs_an_earlier_entry(operation: str) -> None:
    base = {**PAYLOAD, "seq": 3, "operation": operation}
    if operation == "review":
        base["decision"] = "approve"
    with pytest.raises(log.EntryError, match=f"a {operation} entry must cover"):
        log.validate_payload(base)
    with pytest.raises(log.EntryError, match="earlier entry"):
        log.validate_payload({**base, "covers": {"seq": 3, "hash": "c" * 64}})
    log.validate_payload({**base, "covers": COVER})


def test_a_supersede_entry_carries_valid_time_trust_and_agent_in_its_hash() -> None:
    payload = log.make_payload(
        actor="alice",
        chain=PAYLOAD["chainKey"],
        seq=4,
        operation="supersede",
        tier="rom",
        content_hash="d" * 64,
        created_at="2026-12-03T10:00:00Z",
        covers=COVER,
        extra={"agent": "builder-1", "validFrom": "2026-12-01T00:00:00Z", "trust": "candidate"},
    )
    h = log.entry_hash(log.GENESIS, payload)
    for name, other in [("agent", "builder-2"), ("validFrom", "2026-12-02T00:00:00Z"), ("trust", "belief")]:
        assert log.entry_hash(log.GENESIS, {**payload, name: other}) != h


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"operation": "remember", "decision": "approve"}, "does not carry decision"),
        ({"operation": "forget", "covers": COVER, "trust": "belief"}, "does not carry trust"),
        ({"operation": "remember", "validUntil": "2026-12-01T00:00:00Z"}, "does not carry validUntil"),
        ({"operation": "remember", "trust": "vouched"}, "trust must be one of candidate, belief"),
        ({"operation": "remember", "validFrom": "yesterday"}, "validFrom must be an RFC 3339"),
        ({"operation": "remember", "agent": ""}, "agent must be a non-empty string"),
        ({"operation": "remember", "agent": "a" * 129}, "at most 128"),
        ({"operation": "review", "covers": COVER}, "must carry a decision"),
        ({"operation": "review", "covers": COVER, "decision": "maybe"}, "must carry a decision"),
    ],
)
def test_optional_fields_are_refused_where_they_do_not_belong(changes: dict, reason: str) -> None:
    with pytest.raises(log.EntryError, match=reason):
        log.validate_payload({**PAYLOAD, "seq": 2, **changes})


def test_optional_fields_survive_the_receipt_round_trip() -> None:
    from acx.adapters.log_receipts import decode_receipt, encode_entry
    from acx.core.append import EntrySpec, LogHead, plan_append

    remember = EntrySpec("remember", "rom", "a" * 64, "r#m1", extra=(("agent", "a1"), ("trust", "candidate")))
    first = plan_append(
        LogHead.empty(), [remember], actor="bob", chain="t/p", created_at="2026-12-03T10:00:00Z"
    )
    review = EntrySpec(
        "review", "rom", "a" * 64, "r#m1", log.Covers(0, first.entries[0].hash), (("decision", "approve"),)
    )
    plan = plan_append(
        LogHead.empty(), [remember, review], actor="bob", chain="t/p", created_at="2026-12-03T10:00:00Z"
    )
    item = {
        "v": 1,
        "actor": "bob",
        "chain": "t/p",
        "prev": bytes(32),
        "at": "2026-12-03T10:00:00Z",
        "e": [encode_entry(e) for e in plan.entries],
    }
    decoded = decode_receipt(item)
    assert [e.payload for e in decoded] == [e.payload for e in plan.entries]
    assert [e.hash for e in decoded] == [log.entry_hash(e.prev_hash, e.payload) for e in decoded]
