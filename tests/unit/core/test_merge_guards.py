"""Merge rules a broken line would change silently: later store lookups, UTC offsets, number ties.

Each test pins an observable outcome of the merge (the survivor, the plan applied to a store), so it
fails whichever way the rule is broken.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acx.core.fingerprint import slot_key
from acx.core.merge import MergeConflict, instant_key, merge_into, merge_records, survivor
from tests.unit.core.test_merge import CBF_A, CBF_B, apply, field_learned, rec, store_lookup


def test_a_stored_record_found_only_by_the_folded_survivors_slot_is_merged() -> None:
    """Two incoming copies of memory x fold into content that a stored record s already holds, under a
    slot neither copy had: only a second lookup (by the survivor's new slot) finds s. Without it the
    store would hold two records with one slot."""
    a = rec("x", summary="short", tags=["p"])
    b = rec("x", summary="a longer summary", tags=["q"])
    (stored,) = merge_records([rec("s", title="title x", summary="a longer summary", tags=["p", "q"])])
    store = {"s": stored}
    folded = survivor(a, b)
    assert slot_key(folded) == slot_key(stored)
    assert slot_key(stored) not in {slot_key(a), slot_key(b)}

    lookup = store_lookup(store)
    plan = merge_into(lookup, [a, b])
    asked_slots = [slots for _, slots in lookup.asked]
    assert len(asked_slots) >= 2 and slot_key(stored) in asked_slots[1]
    after = apply(store, plan)
    assert sorted(after.values(), key=lambda r: r["id"]) == merge_records([stored, a, b])
    assert list(after) == ["s"]
    assert plan.accepted == 0 and plan.merged == 2 and plan.unchanged == 0


def test_plan_counts_every_incoming_record_once() -> None:
    (stored,) = merge_records([rec("a", summary="stored summary")])
    store = {"a": stored}
    incoming = [
        dict(stored),  # unchanged re-upload
        rec("b"),  # new
        rec("b"),  # a copy of the new one
        rec("c", title=stored["title"], summary="stored summary"),  # stored content under another id
    ]
    plan = merge_into(store_lookup(store), incoming)
    assert (plan.accepted, plan.merged, plan.unchanged) == (1, 2, 1)
    assert [w["id"] for w in plan.writes] == ["b"]
    assert plan.retired == [] and plan.absorbed == {}
    assert plan.write_slots == [slot_key(plan.writes[0])]


def test_a_stored_record_folded_into_a_smaller_incoming_id_is_retired_and_absorbed() -> None:
    (stored,) = merge_records([rec("m9", title="t", summary="s")])
    store = {"m9": stored}
    plan = merge_into(store_lookup(store), [rec("m1", title="t", summary="s")])
    assert plan.retired == ["m9"] and plan.absorbed == {"m1": ["m9"]}
    assert [w["id"] for w in plan.writes] == ["m1"] and plan.merged == 1 and plan.accepted == 0


@pytest.mark.parametrize(
    ("local", "utc"),
    [
        ("2026-01-01T00:30:00+00:30", "2026-01-01T00:00:00Z"),
        ("2026-01-01T05:45:00+05:45", "2026-01-01T00:00:00Z"),
        ("2025-12-31T20:15:00-03:45", "2026-01-01T00:00:00Z"),
        ("2026-01-01T00:00:00-00:01", "2026-01-01T00:01:00Z"),
        ("2026-01-01T23:59:00+23:59", "2026-01-01T00:00:00Z"),
    ],
)
def test_offset_minutes_count_towards_the_instant(local: str, utc: str) -> None:
    assert instant_key(local) == instant_key(utc)


_instants = st.datetimes(
    min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30), timezones=st.just(dt.UTC)
)


@given(moment=_instants, offset_minutes=st.integers(-(23 * 60 + 59), 23 * 60 + 59), fraction=st.booleans())
def test_instant_key_is_the_utc_epoch_second_of_any_rfc3339_text(
    moment: dt.datetime, offset_minutes: int, fraction: bool
) -> None:
    moment = moment.replace(microsecond=0)
    local = moment.astimezone(dt.timezone(dt.timedelta(minutes=offset_minutes)))
    sign = "+" if offset_minutes >= 0 else "-"
    hours, minutes = divmod(abs(offset_minutes), 60)
    text = local.strftime("%Y-%m-%dT%H:%M:%S").rjust(19, "0") + (".250" if fraction else "")
    text += f"{sign}{hours:02d}:{minutes:02d}"
    epoch = int((moment - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)).total_seconds())
    assert instant_key(text) == (epoch, "25" if fraction else "")


@pytest.mark.parametrize(
    ("text", "epoch"),
    [
        ("1970-01-01T00:00:00Z", 0),
        ("1970-01-01T00:00:01z", 1),
        ("1970-01-01t00:01:00Z", 60),
        ("1970-01-01 01:00:00Z", 3600),
        ("2000-01-01T00:00:00Z", 946684800),
        ("2000-03-01T00:00:00Z", 951868800),
        ("1900-03-01T00:00:00Z", -2203891200),
        ("2024-02-29T12:00:00Z", 1709208000),
    ],
)
def test_instant_key_known_answers(text: str, epoch: int) -> None:
    assert instant_key(text) == (epoch, "")


@pytest.mark.parametrize(
    "bad", [None, 17, "", "2026-01-01", "2026-01-01T00:00:00", "2026-01-01T00:00:00+0100"]
)
def test_an_unparseable_timestamp_never_wins_latest(bad: Any) -> None:
    key = instant_key(bad)
    assert key < instant_key("0000-01-01T00:00:00Z")
    good = rec("a", timestamp="1970-01-01T00:00:00Z")
    for order in ((good, rec("a", timestamp=bad)), (rec("a", timestamp=bad), good)):
        assert survivor(*order)["timestamp"] == "1970-01-01T00:00:00Z"


def test_equal_xp_prefers_the_integer_in_either_order() -> None:
    for first, second in ((1, 1.0), (1.0, 1)):
        (s,) = merge_records(
            [rec("a", xpAwarded=first), rec("a", xpAwarded=second, summary="longer summary")]
        )
        assert s["xpAwarded"] == 1 and type(s["xpAwarded"]) is int
    (s,) = merge_records([rec("a", xpAwarded=1.0), rec("a", xpAwarded=1.0, summary="longer summary")])
    assert type(s["xpAwarded"]) is float
    (s,) = merge_records([rec("a", xpAwarded=2), rec("a", xpAwarded=2.5, summary="longer summary")])
    assert s["xpAwarded"] == 2.5


def test_a_missing_value_never_beats_a_present_one() -> None:
    a = rec("a")
    b = rec("a", summary="a longer summary")
    for name in ("xpAwarded", "title", "impact", "timestamp"):
        del b[name]
    for order in ((a, b), (b, a)):
        s = survivor(*order)
        assert s["xpAwarded"] == 1 and s["title"] == "title a" and s["impact"] == "neutral"
        assert s["summary"] == "a longer summary" and s["timestamp"] == a["timestamp"]


@pytest.mark.parametrize(
    ("x", "y", "worst"), [("positive", "neutral", "neutral"), ("neutral", "negative", "negative")]
)
def test_the_worse_impact_wins_in_either_order(x: str, y: str, worst: str) -> None:
    assert survivor(rec("a", impact=x), rec("a", impact=y, summary="longer summary"))["impact"] == worst
    assert survivor(rec("a", impact=y, summary="longer summary"), rec("a", impact=x))["impact"] == worst


def test_one_id_in_two_codebases_is_refused_naming_the_codebase() -> None:
    with pytest.raises(MergeConflict) as caught:
        merge_records([field_learned("a", CBF_A), field_learned("a", CBF_B, summary="other")])
    assert caught.value.reason == "codebaseFingerprint" and caught.value.ids == ("a", "a")
    with pytest.raises(MergeConflict) as caught:
        merge_records([rec("a"), field_learned("a", CBF_A, summary="other")])
    assert caught.value.reason == "tier (portable)"


def test_the_refused_id_is_the_smallest_conflicting_one_whatever_the_order() -> None:
    records = [rec("b"), field_learned("b", summary="x"), rec("a"), field_learned("a", summary="y")]
    for order in (records, records[::-1]):
        with pytest.raises(MergeConflict) as caught:
            merge_records(order)
        assert caught.value.ids == ("a", "a")


class _Tag(str):
    """A str subclass: not ``type(tag) is str``, so the fast batch hash hands the record to slot_key."""


def test_a_record_the_fast_hash_hands_to_slot_key_does_not_stop_the_batch() -> None:
    """One key per record, in order, also after a record that took the slow path."""
    from acx.core.merge import slot_keys

    batch = [rec("a", tags=["x", _Tag("t")]), rec("b", tags=["y"]), rec("c", tags=[_Tag("u")]), rec("d")]
    keys = slot_keys(batch)
    assert keys == [slot_key(r) for r in batch]
    assert len(set(keys)) == 4
    with pytest.raises(AttributeError):  # a tag that is no string at all has no key (never validated)
        slot_keys([rec("e", tags=[7])])


def test_the_same_instant_written_two_ways_keeps_the_smaller_string_in_either_order() -> None:
    """``...01:00:00+01:00``, ``...00:00:00Z`` and ``...00:00:00.000Z`` are one instant: the survivor
    keeps the smallest string (UTF-16 order), whichever record arrived first and whichever record is
    the base (the base is the copy with the smaller canonical bytes: here the one whose summary sorts
    first, so the base's own timestamp is not always the smallest)."""
    forms = ["2026-01-01T01:00:00+01:00", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000Z"]
    for first in forms:
        for second in forms:
            if first == second:
                continue
            a, b = rec("x", summary="aa", timestamp=first), rec("x", summary="bb", timestamp=second)
            want = min(first, second)
            assert survivor(a, b)["timestamp"] == want, (first, second)
            assert survivor(b, a)["timestamp"] == want, (first, second)


def test_records_of_one_memory_from_two_codebases_are_never_folded() -> None:
    a, b = field_learned("x", CBF_A), field_learned("x", CBF_B)
    with pytest.raises(MergeConflict) as caught:
        survivor(a, b)
    assert caught.value.reason == "codebaseFingerprint"
    assert caught.value.ids == ("x", "x")


def test_a_missing_title_or_summary_is_filled_from_the_other_copy() -> None:
    """Text fields take the string when one copy lacks it, also when the copy lacking it is the base
    (its impact "negative" sorts first in canonical bytes)."""
    full = rec("x", title="Retry with backoff", summary="a summary")
    bare = rec("x", xpAwarded=5, impact="negative")
    del bare["title"]
    bare["summary"] = None
    for a, b in ((full, bare), (bare, full)):
        out = survivor(a, b)
        assert (out["title"], out["summary"], out["xpAwarded"]) == ("Retry with backoff", "a summary", 5)
        assert out["impact"] == "negative"


def test_a_bystander_is_kept_as_it_was_when_a_fold_lands_on_another_survivor() -> None:
    """The fold fixpoint refolds only the records that collided; an unrelated survivor passes through."""
    a = rec("x", summary="short", tags=["p"])
    b = rec("x", summary="a longer summary", tags=["q"])
    s = rec("s", title="title x", summary="a longer summary", tags=["p", "q"])
    u = rec("u", summary="unrelated", tags=["b", "a"])
    out = merge_records([a, b, s, u])
    assert [r["id"] for r in out] == ["s", "u"]
    assert out[1] == merge_records([u])[0]
    assert out[0] == merge_records([s, a, b])[0]
