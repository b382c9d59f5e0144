"""Log entries as the receipts hand them out: the accessors read the payload's own values, and an
entry (or the cover it names) cannot be changed once built, so a verified link stays the link it was.
"""

from __future__ import annotations

import dataclasses

import pytest

from acx.core import log
from tests.factories import entry_payload

FIRST_HASH = "1" * 64


def _remember() -> log.Entry:
    payload = entry_payload(operation="remember", content_hash="c" * 64)
    return log.Entry(0, FIRST_HASH, log.GENESIS, payload, "r#mem-1")


def _forget() -> log.Entry:
    payload = entry_payload(
        seq=1,
        operation="forget",
        content_hash="d" * 64,
        created_at="2025-01-01T00:00:01Z",
        covers={"seq": 0, "hash": FIRST_HASH},
    )
    return log.Entry(1, "2" * 64, FIRST_HASH, payload, "r#mem-1")


def test_a_remember_entry_reads_its_operation_and_content_hash_and_covers_nothing() -> None:
    entry = _remember()
    assert entry.operation == "remember"
    assert entry.content_hash == "c" * 64
    assert entry.covers is None


def test_a_forget_entry_reads_the_seq_and_hash_it_covers() -> None:
    entry = _forget()
    assert entry.operation == "forget"
    assert entry.content_hash == "d" * 64
    assert entry.covers == log.Covers(0, FIRST_HASH)
    assert (entry.covers.seq, entry.covers.hash) == (0, FIRST_HASH)


def test_an_entry_cannot_be_rewritten_after_it_is_built() -> None:
    entry = _remember()
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.hash = "f" * 64  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.prev_hash = "f" * 64  # type: ignore[misc]
    assert (entry.hash, entry.prev_hash) == (FIRST_HASH, log.GENESIS)


def test_a_cover_cannot_be_pointed_at_another_entry() -> None:
    covers = log.Covers(0, FIRST_HASH)
    with pytest.raises(dataclasses.FrozenInstanceError):
        covers.seq = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        covers.hash = "f" * 64  # type: ignore[misc]
    assert covers == log.Covers(0, FIRST_HASH)
    assert hash(covers) == hash(log.Covers(0, FIRST_HASH))


@pytest.mark.parametrize("value", [_remember(), log.Covers(0, FIRST_HASH)], ids=["entry", "covers"])
def test_an_entry_and_its_cover_hold_their_declared_fields_and_nothing_else(value: object) -> None:
    # No per-instance dict (a chain is read as one object per entry), so nothing can be attached to
    # one, even by a caller going past the frozen guard.
    assert not hasattr(value, "__dict__")
    with pytest.raises(TypeError):
        vars(value)
    with pytest.raises(AttributeError):
        object.__setattr__(value, "verified", True)
