"""Log entries: the hash definition, the chain, and payload validation."""

from __future__ import annotations

import hashlib
import json
from typing import Any

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


# Log entries: known-answer hashes and every reject path of the payload check, each with its reason.
#
# An attacker who can post a write controls the payload fields; each case below is a payload that must
# never be chained, named by the reason the refusal gives.

GOOD: dict[str, Any] = {
    "v": 1,
    "actor": "agent-1",
    "chainKey": "t1/pkg",
    "seq": 0,
    "operation": "remember",
    "tier": "rom",
    "contentHash": "a" * 64,
    "createdAt": "2025-01-01T00:00:00Z",
}

# Known-answer vectors, computed once from DESIGN §1.2 (sha256 of the RFC 8785 bytes written out
# below). They pin the entry VERSION and the hash definition: changing either breaks every stored chain.
GENESIS_ENTRY_BYTES = (
    b'{"actor":"agent-1","chainKey":"t1/pkg","contentHash":"' + b"a" * 64 + b'",'
    b'"createdAt":"2025-01-01T00:00:00Z","operation":"remember","prevHash":"' + b"0" * 64 + b'",'
    b'"seq":0,"tier":"rom","v":1}'
)
GENESIS_ENTRY_HASH = "4cedb9c3c099cfa86738090c49380fdc31e1eb7f28dc48ae0336d85491227caf"
FORGET_ENTRY_HASH = "6953f8a1a11e64ac33f0b75ec3e2dfe725b5f46c82851349d813fe0214b9bb31"


def test_entry_hash_known_answer_pins_the_version_and_definition() -> None:
    import hashlib

    assert hashlib.sha256(GENESIS_ENTRY_BYTES).hexdigest() == GENESIS_ENTRY_HASH
    assert log.VERSION == 1
    payload = entry_payload()
    assert payload == GOOD
    assert log.entry_hash(log.GENESIS, payload) == GENESIS_ENTRY_HASH
    forget = entry_payload(
        seq=1,
        operation="forget",
        content_hash="b" * 64,
        created_at="2025-01-01T00:00:01Z",
        covers={"seq": 0, "hash": GENESIS_ENTRY_HASH},
    )
    first = log.entry_hash(log.GENESIS, payload)
    assert [first, log.entry_hash(first, forget)] == [GENESIS_ENTRY_HASH, FORGET_ENTRY_HASH]


def test_chain_key_names_tenant_and_package() -> None:
    assert log.chain_key("t1", "pkg") == "t1/pkg"


def test_a_good_payload_passes() -> None:
    log.validate_payload(dict(GOOD))
    log.validate_payload({**GOOD, "seq": 2**40})


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"v": 2}, "unsupported entry version"),
        ({"v": 0}, "unsupported entry version"),
        ({"v": None}, "unsupported entry version"),
        ({"v": "1"}, "unsupported entry version"),
        ({"operation": "delete"}, "operation must be one of"),
        ({"seq": -1}, "seq must be a non-negative integer"),
        ({"seq": True}, "seq must be a non-negative integer"),
        ({"seq": False}, "seq must be a non-negative integer"),
        ({"seq": 1.0}, "seq must be a non-negative integer"),
        ({"seq": "1"}, "seq must be a non-negative integer"),
        ({"actor": ""}, "actor must be a non-empty string"),
        ({"actor": 7}, "actor must be a non-empty string"),
        ({"chainKey": ""}, "chainKey must be a non-empty string"),
        ({"chainKey": None}, "chainKey must be a non-empty string"),
        ({"tier": ""}, "tier must be a non-empty string"),
        ({"tier": ["rom"]}, "tier must be a non-empty string"),
        ({"createdAt": ""}, "createdAt must be a non-empty string"),
        ({"createdAt": 1735689600}, "createdAt must be a non-empty string"),
        ({"contentHash": "a" * 63}, "contentHash must be 64 lowercase hex"),
        ({"contentHash": "g" * 64}, "contentHash must be 64 lowercase hex"),
        ({"extra": 1}, "unknown payload fields: ['extra']"),
        ({"prevHash": "0" * 64}, "unknown payload fields: ['prevHash']"),
        (
            {"covers": {"seq": 0, "hash": "c" * 64}},
            "only forget, invalidate, review, supersede entries carry covers",
        ),
    ],
)
def test_a_bad_payload_is_refused_with_its_reason(change: dict[str, Any], reason: str) -> None:
    with pytest.raises(log.EntryError) as caught:
        log.validate_payload({**GOOD, **change})
    assert str(caught.value).startswith(reason)


@pytest.mark.parametrize(
    "name", ["v", "actor", "chainKey", "seq", "operation", "tier", "contentHash", "createdAt"]
)
def test_a_missing_field_is_refused(name: str) -> None:
    payload = {k: v for k, v in GOOD.items() if k != name}
    with pytest.raises(log.EntryError):
        log.validate_payload(payload)


FORGET = {**GOOD, "seq": 5, "operation": "forget", "covers": {"seq": 4, "hash": "c" * 64}}


def test_forget_covers_an_earlier_entry_only() -> None:
    log.validate_payload(dict(FORGET))
    log.validate_payload({**FORGET, "covers": {"seq": 0, "hash": "c" * 64}})
    with pytest.raises(log.EntryError, match="earlier entry"):
        log.validate_payload({**FORGET, "covers": {"seq": 5, "hash": "c" * 64}})
    with pytest.raises(log.EntryError, match="earlier entry"):
        log.validate_payload({**FORGET, "covers": {"seq": 6, "hash": "c" * 64}})


@pytest.mark.parametrize(
    "covers",
    [
        None,
        [4, "c" * 64],
        {"seq": 4},
        {"hash": "c" * 64},
        {"seq": 4, "hash": "C" * 64},
        {"seq": "4", "hash": "c" * 64},
    ],
)
def test_forget_with_malformed_covers_is_refused(covers: Any) -> None:
    with pytest.raises(log.EntryError, match="must cover"):
        log.validate_payload({**FORGET, "covers": covers})


def test_entry_hash_refuses_a_payload_carrying_prevhash_or_a_bad_link() -> None:
    with pytest.raises(log.EntryError, match="must not carry prevHash"):
        log.entry_hash(log.GENESIS, {**GOOD, "prevHash": "1" * 64})
    for bad in ("0" * 63, "0" * 65, "G" * 64, "A" * 64, 0):
        with pytest.raises(log.EntryError, match="prevHash must be 64 lowercase hex"):
            log.entry_hash(bad, GOOD)  # type: ignore[arg-type]


def test_content_hash_of_file_binds_path_and_content() -> None:
    a = log.file_content_hash("a.md", "x")
    assert a == log.file_content_hash("a.md", "x")
    assert a != log.file_content_hash("a.md", "y")
    assert len(a) == 64
    assert log.canonical_content_hash(b"{}") == log.content_hash({})


def test_previous_covers_the_entry_planned_just_before_in_the_same_commit() -> None:
    from acx.core.append import EntrySpec, LogHead, plan_append

    first = EntrySpec("supersede", "rom", "a" * 64, "r#x", log.Covers(0, "b" * 64))
    second = EntrySpec("review", "rom", "a" * 64, None, log.PREVIOUS, (("decision", "approve"),))
    head = LogHead.empty()
    head = plan_append(
        head, [EntrySpec("remember", "rom", "b" * 64, "r#x")], actor="a", chain="c", created_at="t"
    )
    plan = plan_append(head.head, [first, second], actor="a", chain="c", created_at="t")
    superseding, approval = plan.entries
    assert approval.payload["covers"] == {"seq": superseding.seq, "hash": superseding.hash}
    # denial: PREVIOUS on the first entry of a commit names nothing this commit planned
    with pytest.raises(log.EntryError):
        plan_append(head.head, [second], actor="a", chain="c", created_at="t")
