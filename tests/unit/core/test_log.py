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
