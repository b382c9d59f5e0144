"""Log entries: known-answer hashes and every reject path of the payload check, each with its reason.

An attacker who can post a write controls the payload fields; each case below is a payload that must
never be chained, named by the reason the refusal gives.
"""

from __future__ import annotations

from typing import Any

import pytest

from acx.core import log
from tests.factories import entry_payload

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
        ({"covers": {"seq": 0, "hash": "c" * 64}}, "only forget, invalidate, review, supersede entries carry covers"),
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
