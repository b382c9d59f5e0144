"""Algebraic properties of the merge, on generated families of records.

Generated records come in *families* (one memory each): copies under one id with varied content
(edits), or copies under several ids with the same content slot (re-uploads), each in one tier. Families
never share ids or slots, so the properties hold for every grouping; see the module docstring of
``acx.core.merge`` for why a chain mixing both link kinds cannot be associative for any record merge.
Permutation invariance, idempotence and the tier boundary are also checked on unrestricted chains.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acx.core.fingerprint import slot_key
from acx.core.merge import MergeConflict, merge_into, merge_records, slot_keys

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CBFS = (None, "cbf1_" + "1" * 40, "cbf1_" + "2" * 40)
TEXT = st.text(alphabet=st.sampled_from("aAbB \t\u00e9\u00c9\U0001f680\uff61"), max_size=6)
TIMESTAMPS = st.sampled_from(
    [
        "2026-01-01T00:00:00Z",
        "2026-01-01T01:00:00+01:00",
        "2026-01-01T00:00:00.5Z",
        "2027-06-01T12:00:00-03:30",
    ]
)


def _record(rid: str, family: int, cbf: str | None, draw: Any, variant: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": rid,
        "title": variant["title"],
        "summary": f"family {family}: {variant['summary']}",
        "sourceType": "memory",
        "portable": cbf is None,
        "codebaseFingerprint": cbf,
        "repoId": None,
        "repoLabel": "portable-core" if cbf is None else "field-learned",
        "projectLabel": "api",
        "timestamp": variant["timestamp"],
        "impact": variant["impact"],
        "xpAwarded": variant["xp"],
        "tags": variant["tags"],
    }


@st.composite
def variants(draw: Any) -> dict[str, Any]:
    return {
        "title": draw(TEXT),
        "summary": draw(TEXT),
        "timestamp": draw(TIMESTAMPS),
        "impact": draw(st.sampled_from(["positive", "neutral", "negative"])),
        "xp": draw(st.sampled_from([0, 1, 2.5, 7, 100])),
        "tags": draw(
            st.lists(st.sampled_from(["a", "A", "b", "\u00e9", "\U0001f680"]), max_size=3, unique=True)
        ),
    }


def _case_variant(v: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Same content slot, different raw text: case and surrounding whitespace, tag order."""
    out = dict(v)
    out["title"] = rng.choice(["", " ", "\t"]) + rng.choice([v["title"].upper(), v["title"].lower()])
    out["tags"] = list(reversed(v["tags"]))
    return out


@st.composite
def families(draw: Any) -> list[dict[str, Any]]:
    """A shuffled list of records from a few independent families."""
    records: list[dict[str, Any]] = []
    rng = random.Random(draw(st.integers(0, 2**32)))
    for family in range(draw(st.integers(1, 5))):
        cbf = draw(st.sampled_from(CBFS))
        if draw(st.booleans()):
            # edits: one id, several contents
            for _ in range(draw(st.integers(1, 3))):
                records.append(_record(f"f{family}-id", family, cbf, draw, draw(variants())))
        else:
            # re-uploads: one content, several ids
            base = draw(variants())
            for copy in range(draw(st.integers(1, 3))):
                v = _case_variant(base, rng) if copy else base
                records.append(_record(f"f{family}-c{rng.randrange(3)}", family, cbf, draw, v))
    rng.shuffle(records)
    return records


def _split(records: list[dict[str, Any]], cut: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    cut = cut % (len(records) + 1)
    return records[:cut], records[cut:]


@SETTINGS
@given(families())
def test_idempotent(records: list[dict[str, Any]]) -> None:
    once = merge_records(records)
    assert merge_records(records + records) == once
    assert merge_records(once) == once


@SETTINGS
@given(families(), st.randoms(use_true_random=False))
def test_commutative_any_permutation(records: list[dict[str, Any]], rnd: random.Random) -> None:
    shuffled = list(records)
    rnd.shuffle(shuffled)
    assert merge_records(shuffled) == merge_records(records)


@SETTINGS
@given(families(), st.integers(0, 100), st.randoms(use_true_random=False))
def test_associative_any_grouping(records: list[dict[str, Any]], cut: int, rnd: random.Random) -> None:
    a, b = _split(records, cut)
    whole = merge_records(a + b)
    assert merge_records(merge_records(a) + b) == whole
    assert merge_records(a + merge_records(b)) == whole
    assert merge_records(merge_records(b) + merge_records(a)) == whole
    # three-way grouping
    b1, b2 = _split(b, rnd.randrange(100))
    assert merge_records(merge_records(a + b1) + b2) == whole


@SETTINGS
@given(families())
def test_one_survivor_per_family_and_distinct_records_stay_distinct(records: list[dict[str, Any]]) -> None:
    out = merge_records(records)
    fams = {r["summary"].split(":")[0] for r in records}
    assert len(out) == len(fams)
    assert len({r["id"] for r in out}) == len(out)
    assert len({slot_key(r) for r in out}) == len(out)
    distinct = {(r["id"], slot_key(r)): r for r in records}
    ids = [k[0] for k in distinct]
    slots = [k[1] for k in distinct]
    if len(set(ids)) == len(ids) and len(set(slots)) == len(slots):
        assert {r["id"] for r in out} == set(ids)


@SETTINGS
@given(families())
def test_survivors_keep_their_family_tier(records: list[dict[str, Any]]) -> None:
    tiers = {r["summary"].split(":")[0]: (r["portable"], r["codebaseFingerprint"]) for r in records}
    for out in merge_records(records):
        assert (out["portable"], out["codebaseFingerprint"]) == tiers[out["summary"].split(":")[0]]


@SETTINGS
@given(families(), st.sampled_from(CBFS))
def test_same_id_in_another_tier_raises(records: list[dict[str, Any]], cbf: str | None) -> None:
    victim = dict(records[0])
    if victim["codebaseFingerprint"] == cbf:
        cbf = CBFS[(CBFS.index(cbf) + 1) % len(CBFS)]
    victim.update(portable=cbf is None, codebaseFingerprint=cbf, summary="other tier")
    with pytest.raises(MergeConflict) as info:
        merge_records([*records, victim])
    assert victim["id"] in str(info.value)


@SETTINGS
@given(families(), st.integers(0, 100))
def test_merge_into_agrees_with_merge_records(records: list[dict[str, Any]], cut: int) -> None:
    existing, incoming = _split(records, cut)
    store = {r["id"]: r for r in merge_records(existing)}
    by_slot = {slot_key(r): r for r in store.values()}

    def lookup(ids: set[str], slots: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
        return {i: store[i] for i in ids if i in store}, {s: by_slot[s] for s in slots if s in by_slot}

    plan = merge_into(lookup, incoming)
    assert plan.write_slots == [slot_key(r) for r in plan.writes]  # ingest stores rows under these
    for rid in plan.retired:
        del store[rid]
    for record in plan.writes:
        store[record["id"]] = record
    assert sorted(store.values(), key=lambda r: r["id"]) == merge_records(existing + incoming)
    assert plan.accepted + plan.merged + plan.unchanged == len(incoming)


@st.composite
def chains(draw: Any) -> list[dict[str, Any]]:
    """Unrestricted links: ids and contents drawn from tiny pools, so id and slot links chain."""
    n = draw(st.integers(1, 8))
    cbf = draw(st.sampled_from(CBFS))
    out = []
    for _ in range(n):
        v = draw(variants())
        v["summary"] = draw(st.sampled_from(["x", "y", "a longer text"]))
        v["title"] = draw(st.sampled_from(["t", "T", "title"]))
        out.append(_record(draw(st.sampled_from(["a", "b", "c"])), 0, cbf, draw, v))
    return out


@SETTINGS
@given(chains(), st.randoms(use_true_random=False))
def test_chains_are_order_independent_and_idempotent(
    records: list[dict[str, Any]], rnd: random.Random
) -> None:
    out = merge_records(records)
    shuffled = list(records)
    rnd.shuffle(shuffled)
    assert merge_records(shuffled) == out
    assert merge_records(records + shuffled) == out
    assert merge_records(out) == out


@SETTINGS
@given(st.lists(variants(), min_size=1, max_size=5), st.sampled_from(CBFS))
def test_fast_slot_keys_agree_with_slot_key(vs: list[dict[str, Any]], cbf: str | None) -> None:
    records = [_record(f"r{i}", i, cbf, None, v) for i, v in enumerate(vs)]
    assert slot_keys(records) == [slot_key(r) for r in records]
