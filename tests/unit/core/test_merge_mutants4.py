"""Merge behaviours the fourth mutation run found unguarded: the fast slot hash agreeing with
slot_key at the edges of its number and type checks, unranked impact ties, and the UTF-16 id order of
merge output whose ids leave the Basic Multilingual Plane."""

from __future__ import annotations

import pytest

from acx.core.canonical import MAX_SAFE_INTEGER, CanonicalError
from acx.core.fingerprint import slot_key
from acx.core.merge import merge_records, slot_keys, survivor
from tests.unit.core.test_merge import rec


@pytest.mark.parametrize("xp", [1e-6, 5e-7, 0.000009])
def test_a_tiny_fractional_xp_hashes_as_rfc8785_writes_it(xp: float) -> None:
    """RFC 8785 writes 1e-6 as 1e-6 but 0.00001 in decimal; the batch hash must give slot_key's bytes."""
    record = rec("x", xpAwarded=xp)
    assert slot_keys([record]) == [slot_key(record)]


@pytest.mark.parametrize("xp", [MAX_SAFE_INTEGER + 1, 1 << 60])
def test_an_xp_beyond_the_safe_integers_is_refused_by_the_batch_hash_too(xp: int) -> None:
    record = rec("x", xpAwarded=xp)
    with pytest.raises(CanonicalError, match="safe integer"):
        slot_key(record)
    with pytest.raises(CanonicalError, match="safe integer"):
        slot_keys([rec("ok"), record])


@pytest.mark.parametrize("source", [None, 5])
def test_a_non_string_source_type_hashes_as_slot_key_does(source: object) -> None:
    records = [rec("a", sourceType=source), rec("b")]
    assert slot_keys(records) == [slot_key(r) for r in records]


def test_unranked_impacts_tie_and_the_base_records_value_stays() -> None:
    """Neither value is in the impact order: they rank the same and the base (smaller id) keeps its own,
    whichever order the two arrive in; a missing impact never replaces it with null."""
    base = rec("a", impact="unknown-impact")
    other = rec("b")
    del other["impact"]
    for pair in ((base, other), (other, base)):
        assert survivor(*pair)["impact"] == "unknown-impact"
    other2 = rec("b", impact="another-unknown")
    for pair in ((base, other2), (other2, base)):
        assert survivor(*pair)["impact"] == "unknown-impact"


def test_merge_output_is_sorted_by_utf16_code_units_beyond_the_bmp() -> None:
    """U+10000 is written as surrogates 0xD800 0xDC00 and so sorts before U+FFFF in JavaScript,
    although its code point is larger."""
    ids = ["\uffff", "\U00010000", "z", "\ue000"]
    out = merge_records([rec(i) for i in ids])
    assert [r["id"] for r in out] == ["z", "\U00010000", "\ue000", "\uffff"]
