"""Conformance of the merge: the survivor rules, the tier boundary, the store plan, the interop vector."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acx.core.canonical import MAX_SAFE_INTEGER, CanonicalError
from acx.core.fingerprint import artifact_fingerprint, slot_key
from acx.core.merge import (
    MergeConflict,
    _components,  # private, like _sorted_tags: checked against a reference on arbitrary inputs
    _sorted_tags,
    instant_key,
    link,
    merge_into,
    merge_records,
    slot_keys,
    survivor,
    utf16_key,
    utf16_len,
)
from tests.factories import memory

CBF_A = "cbf1_" + "a" * 40
CBF_B = "cbf1_" + "b" * 40


def rec(rid: str, **over: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"title": f"title {rid}", "summary": f"summary of {rid}", "sourceType": "memory"}
    return memory(rid, **fields | {"timestamp": "2026-01-01T00:00:00Z", "tags": []} | over)


def field_learned(rid: str, cbf: str = CBF_A, **over: Any) -> dict[str, Any]:
    return rec(rid, portable=False, codebaseFingerprint=cbf, repoLabel="field-learned", **over)


def store_lookup(store: dict[str, dict[str, Any]]):
    """A lookup over an in-memory store, recording every key asked for (to prove no scan)."""
    by_slot = {slot_key(r): r for r in store.values()}
    asked: list[tuple[set[str], set[str]]] = []

    def lookup(ids: set[str], slots: set[str]):
        asked.append((set(ids), set(slots)))
        return ({i: store[i] for i in ids if i in store}, {s: by_slot[s] for s in slots if s in by_slot})

    lookup.asked = asked  # type: ignore[attr-defined]
    return lookup


def apply(store: dict[str, dict[str, Any]], plan) -> dict[str, dict[str, Any]]:
    out = dict(store)
    for rid in plan.retired:
        del out[rid]
    for record in plan.writes:
        out[record["id"]] = record
    return out


# --- strings compare as JavaScript does -------------------------------------------------------------


def test_utf16_order_puts_astral_characters_before_the_end_of_the_bmp() -> None:
    # Code point order says U+FF61 < U+1F680; UTF-16 says the surrogate 0xD83D < 0xFF61.
    assert "\U0001f680" > "\uff61"
    assert utf16_key("\U0001f680") < utf16_key("\uff61")


def test_utf16_length_counts_astral_characters_twice() -> None:
    assert utf16_len("ab") == 2
    assert utf16_len("a\U0001f680") == 3


def test_longer_title_wins_by_utf16_length_not_code_points() -> None:
    # 3 code points / 4 UTF-16 units beats 4 code points / 4 units? Equal length -> smaller wins.
    a = rec("a", title="xy\U0001f680")  # 4 units
    b = rec("b", title="wxyz")  # 4 units
    s = survivor(a, b)
    assert s["title"] == min("xy\U0001f680", "wxyz", key=utf16_key)
    c = rec("c", title="abcde")  # 5 units beats 4
    assert survivor(a, c)["title"] == "abcde"
    d = rec("d", title="ab\U0001f680")  # 4 units, beats "abc" (3) though both 3 code points
    assert survivor(d, rec("e", title="abc"))["title"] == "ab\U0001f680"


# --- the survivor rules -----------------------------------------------------------------------------


def test_survivor_takes_fields_from_the_smaller_id() -> None:
    a = rec("mem-2", sourceType="incident", projectLabel="a", markdownPath="x.md")
    b = rec("mem-1", sourceType="review", projectLabel="b")
    for s in (survivor(a, b), survivor(b, a)):
        assert s["id"] == "mem-1"
        assert s["sourceType"] == "review"
        assert "markdownPath" not in s


def test_survivor_equal_length_texts_pick_the_lexicographically_smaller() -> None:
    a = rec("a", title="  ALARM \t", summary="bbb")
    b = rec("b", title="  alarm  ", summary="aaa")
    for s in (survivor(a, b), survivor(b, a)):
        assert s["title"] == "  ALARM \t"
        assert s["summary"] == "aaa"


def test_survivor_worst_impact_max_xp_union_tags_latest_timestamp() -> None:
    a = rec("a", impact="positive", xpAwarded=50, tags=["b", "A"], timestamp="2026-01-01T10:00:00Z")
    b = rec("a", impact="negative", xpAwarded=2.5, tags=["a", "b"], timestamp="2026-01-01T11:00:00+02:00")
    c = rec("a", impact="neutral", xpAwarded=0, tags=[], timestamp="2026-01-01T09:30:00.5Z")
    for order in ([a, b, c], [c, b, a], [b, a, c]):
        (s,) = merge_records(order)
        assert s["impact"] == "negative"
        assert s["xpAwarded"] == 50
        assert s["tags"] == ["A", "a", "b"]
        # 11:00+02:00 is 09:00Z: the latest instant is 10:00Z, although "11:00" sorts later as text.
        assert s["timestamp"] == "2026-01-01T10:00:00Z"


def test_timestamps_compare_as_instants_with_fractions_and_offsets() -> None:
    assert instant_key("2026-01-01T00:00:00.5Z") > instant_key("2026-01-01T00:00:00Z")
    assert instant_key("2026-01-01T00:00:00.25Z") < instant_key("2026-01-01T00:00:00.5Z")
    assert instant_key("2026-01-01T00:00:00.50Z") == instant_key("2026-01-01T00:00:00.5Z")
    assert instant_key("2026-01-01T01:00:00+01:00") == instant_key("2026-01-01T00:00:00Z")
    assert instant_key("1969-12-31T23:59:59Z") == (-1, "")
    assert instant_key("2026-03-01T00:00:00Z")[0] - instant_key("2026-02-28T00:00:00Z")[0] == 86400


def test_same_instant_written_two_ways_picks_one_deterministically() -> None:
    a = rec("a", timestamp="2026-01-01T01:00:00+01:00")
    b = rec("a", timestamp="2026-01-01T00:00:00Z", title="other")
    assert survivor(a, b)["timestamp"] == survivor(b, a)["timestamp"]


def test_survivor_artifact_fingerprint_matches_its_own_content() -> None:
    a = rec("a", summary="short", artifactFingerprint="0000000000")
    b = rec("a", summary="a longer summary")
    s = survivor(a, b)
    assert s["artifactFingerprint"] == artifact_fingerprint(s)
    (lone,) = merge_records([a])
    assert lone["artifactFingerprint"] == artifact_fingerprint(lone) != "0000000000"


def test_survivor_does_not_mutate_its_inputs() -> None:
    a = rec("a", tags=["z", "y"])
    b = rec("a", tags=["x"], summary="longer summary here")
    snapshot = (dict(a), dict(b))
    survivor(a, b)
    merge_records([a, b])
    assert (a, b) == snapshot


# --- the two keys ----------------------------------------------------------------------------------


def test_same_content_under_two_ids_folds_into_the_smaller_id() -> None:
    a = rec("mem-9", title="Cache Await", summary="same", tags=["X"])
    b = rec("alt-1", title="  cache await  ", summary="same", tags=["x"])
    assert slot_key(a) == slot_key(b)
    (s,) = merge_records([a, b])
    assert s["id"] == "alt-1"
    assert s["title"] == "  cache await  "
    assert s["tags"] == ["X", "x"]


def test_distinct_memories_stay_distinct_and_output_is_sorted_by_utf16_id() -> None:
    records = [rec(f"m{i}", summary=f"memory number {i}") for i in range(20)]
    random.Random(3).shuffle(records)
    out = merge_records(records)
    assert [r["id"] for r in out] == sorted((f"m{i}" for i in range(20)), key=utf16_key)


def test_chain_of_id_and_slot_links_is_one_component_in_any_order() -> None:
    a = rec("a-1", title="t", summary="shared text")
    b = rec("b-1", title="t", summary="shared text")  # same slot as a
    c = rec("b-1", summary="an edit of b with a longer text")  # same id as b
    results = {tuple(map(str, merge_records(p))) for p in ([a, b, c], [c, b, a], [b, c, a], [c, a, b])}
    assert len(results) == 1
    (s,) = merge_records([a, b, c])
    assert s["id"] == "a-1"
    assert s["summary"] == "an edit of b with a longer text"


def test_fold_landing_on_another_slot_is_folded_again() -> None:
    # a1+a2 fold into content equal to b: the output must not hold two records of one slot.
    a1 = rec("a", title="t", summary="the long summary", xpAwarded=1)
    a2 = rec("a", title="t", summary="short", xpAwarded=7)
    b = rec("b", title="t", summary="the long summary", xpAwarded=7)
    out = merge_records([a1, a2, b])
    assert len({slot_key(r) for r in out}) == len(out) == 1
    assert merge_records(out) == out


def test_duplicate_tags_are_dropped_and_the_result_is_a_fixpoint() -> None:
    out = merge_records([rec("a", tags=["x", "x", "X"])])
    assert out[0]["tags"] == ["X", "x"]
    assert merge_records(out) == out


# --- the tier boundary ------------------------------------------------------------------------------


def test_same_id_across_tiers_is_refused_naming_the_ids_only() -> None:
    a = rec("mem-1", summary="SECRET-CONTENT")
    b = field_learned("mem-1")
    with pytest.raises(MergeConflict) as info:
        merge_records([a, b])
    assert "mem-1" in str(info.value)
    assert "SECRET" not in str(info.value)
    with pytest.raises(MergeConflict):
        survivor(a, b)


def test_same_id_across_codebases_is_refused() -> None:
    with pytest.raises(MergeConflict, match="codebaseFingerprint"):
        merge_records([field_learned("m", CBF_A), field_learned("m", CBF_B)])


def test_same_content_in_two_tiers_never_folds() -> None:
    a = rec("a")
    b = field_learned("b", title=a["title"], summary=a["summary"])
    c = field_learned("c", CBF_B, title=a["title"], summary=a["summary"])
    out = merge_records([a, b, c])
    assert [r["id"] for r in out] == ["a", "b", "c"]
    assert [(r["portable"], r["codebaseFingerprint"]) for r in out] == [
        (True, None),
        (False, CBF_A),
        (False, CBF_B),
    ]


def test_survivor_refuses_different_tiers_even_with_different_ids() -> None:
    with pytest.raises(MergeConflict):
        survivor(rec("a"), field_learned("b"))


# --- the fast slot path agrees with the definition ---------------------------------------------------


def test_fast_slot_keys_equal_slot_key_on_awkward_values() -> None:
    records = [
        rec("a", xpAwarded=2.5),
        rec("b", xpAwarded=1.0),
        rec("c", xpAwarded=1e-7),
        rec("d", xpAwarded=1e20),
        rec("e", title="\u2028 Ωmega Σ \ufeff", tags=["É", "\U0001f680", "\uff61", "a"]),
        rec("f", summary='quote " back \\ ctl \x01 \x7f'),
        field_learned("g", repoId="github.com/x/y"),
        rec("h", xpAwarded=0),
    ]
    assert slot_keys(records) == [slot_key(r) for r in records]


# --- merge_into: the service plan ---------------------------------------------------------------------


def test_merge_into_new_records_are_accepted() -> None:
    lookup = store_lookup({})
    plan = merge_into(lookup, [rec("a"), rec("b")])
    assert (plan.accepted, plan.merged, plan.unchanged) == (2, 0, 0)
    assert [r["id"] for r in plan.writes] == ["a", "b"]
    assert plan.retired == []


def test_merge_into_reupload_is_a_no_op() -> None:
    stored = {r["id"]: r for r in merge_records([rec("a"), rec("b", tags=["t"])])}
    plan = merge_into(store_lookup(stored), [rec("a"), rec("b", tags=["t"])])
    assert plan.writes == [] and plan.retired == []
    assert (plan.unchanged, plan.merged, plan.accepted) == (2, 0, 0)


def test_merge_into_existing_id_updates_through_the_survivor() -> None:
    stored = {r["id"]: r for r in merge_records([rec("a", xpAwarded=5)])}
    plan = merge_into(store_lookup(stored), [rec("a", xpAwarded=1, summary="a longer summary of a")])
    (w,) = plan.writes
    assert w["xpAwarded"] == 5 and w["summary"] == "a longer summary of a"
    assert (plan.merged, plan.accepted, plan.unchanged) == (1, 0, 0)


def test_merge_into_new_id_on_existing_slot_retires_the_larger_id() -> None:
    stored = {r["id"]: r for r in merge_records([rec("mem-5", title="T", summary="s")])}
    plan = merge_into(store_lookup(stored), [rec("alt-1", title="t", summary="s")])
    assert [w["id"] for w in plan.writes] == ["alt-1"]
    assert plan.retired == ["mem-5"]
    assert plan.merged == 1
    # The other way round, the stored smaller id survives and nothing is retired.
    stored = {r["id"]: r for r in merge_records([rec("alt-1", title="T", summary="s")])}
    plan = merge_into(store_lookup(stored), [rec("mem-5", title="t", summary="s")])
    assert plan.retired == [] and plan.merged == 1
    assert plan.writes == [] or plan.writes[0]["id"] == "alt-1"


def test_merge_into_duplicates_inside_the_bundle() -> None:
    plan = merge_into(
        store_lookup({}), [rec("a"), rec("a"), rec("b", title="title a", summary="summary of a")]
    )
    assert len(plan.writes) == 1
    assert (plan.accepted, plan.merged, plan.unchanged) == (1, 2, 0)


def test_merge_into_asks_only_for_the_incoming_keys() -> None:
    stored = {r["id"]: r for r in merge_records([rec(f"s{i}", summary=f"stored {i}") for i in range(50)])}
    lookup = store_lookup(stored)
    incoming = [rec("s1", summary="stored 1"), rec("new", summary="fresh")]
    merge_into(lookup, incoming)
    asked_ids = set().union(*(ids for ids, _ in lookup.asked))
    asked_slots = set().union(*(slots for _, slots in lookup.asked))
    assert asked_ids == {"s1", "new"}
    assert asked_slots == {slot_key(r) for r in incoming}


def test_merge_into_refuses_cross_tier_update() -> None:
    stored = {r["id"]: r for r in merge_records([rec("a")])}
    with pytest.raises(MergeConflict):
        merge_into(store_lookup(stored), [field_learned("a")])


def test_merge_into_equals_merge_records_on_the_union() -> None:
    existing = [rec(f"m{i}", summary=f"s{i}", xpAwarded=i) for i in range(10)]
    incoming = [rec("m3", summary="s3 extended", xpAwarded=0), rec("a0", summary="s4", xpAwarded=4), rec("z")]
    store = {r["id"]: r for r in merge_records(existing)}
    after = apply(store, merge_into(store_lookup(store), incoming))
    assert sorted(after.values(), key=lambda r: r["id"]) == merge_records(existing + incoming)


# --- interop vector ---------------------------------------------------------------------------------

CONTENT_FIELDS = (
    "id",
    "title",
    "summary",
    "sourceType",
    "portable",
    "codebaseFingerprint",
    "repoId",
    "repoLabel",
    "projectLabel",
    "timestamp",
    "impact",
    "xpAwarded",
    "tags",
)


def _content(record: dict[str, Any]) -> dict[str, Any]:
    return {k: record.get(k) for k in CONTENT_FIELDS}


def test_agrees_with_the_reference_merge_vector(load_vector) -> None:
    vec = load_vector("merge.json")
    expected = {r["id"]: _content(r) for r in vec["merged"]}
    for records in (vec["existing"] + vec["incoming"], vec["incoming"] + vec["existing"]):
        got = {r["id"]: _content(r) for r in merge_records(records)}
        assert got == expected


def test_reference_vector_via_the_service_plan(load_vector) -> None:
    vec = load_vector("merge.json")
    store = {r["id"]: r for r in merge_records(vec["existing"])}
    after = apply(store, merge_into(store_lookup(store), vec["incoming"]))
    assert {i: _content(r) for i, r in after.items()} == {r["id"]: _content(r) for r in vec["merged"]}


def test_reference_keeps_a_stale_fingerprint_where_we_recompute(load_vector) -> None:
    # Documented difference: the reference copies the existing record's artifactFingerprint onto the
    # survivor; ours is always the fingerprint of the survivor's own content.
    vec = load_vector("merge.json")
    for r in merge_records(vec["existing"] + vec["incoming"]):
        assert r["artifactFingerprint"] == artifact_fingerprint(r)


# --- grouping and tag helpers against plain reference implementations ------------------------------


def reference_components(keys: list[tuple[str, str]]) -> list[list[int]]:
    """Connected components of "same id or same slot", by search; sorted by smallest index."""
    seen: set[int] = set()
    out = []
    for start in range(len(keys)):
        if start in seen:
            continue
        todo, comp = [start], set()
        while todo:
            i = todo.pop()
            if i in comp:
                continue
            comp.add(i)
            todo.extend(j for j in range(len(keys)) if keys[j][0] == keys[i][0] or keys[j][1] == keys[i][1])
        seen |= comp
        out.append(sorted(comp))
    return out


@given(st.lists(st.tuples(st.sampled_from("abcdefg"), st.sampled_from("uvwxyz")), max_size=25))
@settings(max_examples=400, deadline=None)
def test_components_are_the_connected_components_in_index_order(keys: list[tuple[str, str]]) -> None:
    ids = [rid for rid, _ in keys]
    slots = [slot for _, slot in keys]
    expected = reference_components(keys)
    assert _components(ids, slots) == expected
    assert link(ids, slots) == [c for c in expected if len(c) > 1]


@given(
    st.lists(st.one_of(st.sampled_from(["b", "a", "B", "\u00e9", "\U0001f680", "\uff61"]), st.integers(0, 2)))
)
def test_sorted_tags_is_the_sorted_set_in_utf16_order(tags: list[Any]) -> None:
    unique = set(tags)
    if all(type(t) is str for t in unique):
        assert _sorted_tags(tags) == sorted(unique, key=utf16_key)
    else:
        assert _sorted_tags(tags) == sorted(unique, key=repr)


@given(
    st.lists(
        st.lists(
            st.one_of(
                st.sampled_from(["b", "A", "a", "\u00c9", "\U0001f680", "\uff61", "Straße"]),
                st.integers(0, 3),
            ),
            max_size=4,
        ),
        max_size=6,
    )
)
@settings(max_examples=300, deadline=None)
def test_fast_slot_keys_equal_slot_key_on_any_tags(tag_lists: list[list[Any]]) -> None:
    def outcome(fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:  # a tag that is not a string: both refuse it the same way
            return type(exc)

    for i, tags in enumerate(tag_lists):
        record = rec(f"r{i}", tags=tags)
        fast = outcome(slot_keys, [record])
        assert fast == outcome(slot_key, record) or fast == [outcome(slot_key, record)]


# --- the collector pause around a merge


@pytest.mark.parametrize("enabled", [True, False])
def test_a_merge_pauses_the_collector_and_gives_it_back_as_it_was(enabled: bool) -> None:
    import gc

    seen: list[bool] = []

    def lookup(ids: set[str], slots: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
        seen.append(gc.isenabled())
        return {}, {}

    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        plan = merge_into(lookup, [rec("a"), rec("b")])
        assert seen == [False] and len(plan.writes) == 2  # paused while merging
        assert gc.isenabled() is enabled
        with pytest.raises(MergeConflict):  # an error on the way out restores it too
            merge_records([rec("m"), field_learned("m")])
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


# Merge rules a broken line would change silently: later store lookups, UTC offsets, number ties.
#
# Each test pins an observable outcome of the merge (the survivor, the plan applied to a store), so it
# fails whichever way the rule is broken.


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


# The fast slot hash agrees with slot_key at the edges of its number and type checks; unranked impacts
# tie; merge output whose ids leave the Basic Multilingual Plane is in UTF-16 id order.


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


# The tier check on its own (same codebase, different tier), a malformed timestamp against a missing
# one, and the batch slot hash agreeing with slot_key on a record whose text fields are not strings.


@pytest.mark.parametrize("cbf", [None, CBF_A])
def test_two_tiers_with_the_same_codebase_are_refused_naming_the_tier(cbf: str | None) -> None:
    """The codebases agree (both absent, or both the same fingerprint), so only the tier tells them
    apart: the refusal must still come, and name the tier."""
    portable = rec("a", codebaseFingerprint=cbf)
    local = rec("b", portable=False, codebaseFingerprint=cbf)
    for pair in ((portable, local), (local, portable)):
        with pytest.raises(MergeConflict) as caught:
            survivor(*pair)
        assert caught.value.reason == "tier (portable)"
        assert set(caught.value.ids) == {"a", "b"}


@pytest.mark.parametrize("missing", ["absent", None, 20260101])
def test_a_malformed_timestamp_is_kept_over_a_missing_one_in_either_order(missing: object) -> None:
    """Neither is an instant, so they tie; a string (even an unparseable one) beats no string, whichever
    record is the base."""
    written = rec("a", timestamp="not a timestamp")
    other = rec("b")
    if missing == "absent":
        del other["timestamp"]
    else:
        other["timestamp"] = missing
    for first, second in ((written, other), (other, written)):
        assert survivor(first, second)["timestamp"] == "not a timestamp"
    # and the other way round: the base (smaller id) is the one without a string
    base, late = dict(other, id="a"), dict(written, id="b")
    assert survivor(base, late)["timestamp"] == "not a timestamp"
    assert survivor(late, base)["timestamp"] == "not a timestamp"


@pytest.mark.parametrize("name", ["title", "summary", "projectLabel", "timestamp", "impact"])
@pytest.mark.parametrize("value", [None, 5, ["p"]])
def test_a_non_string_text_field_hashes_as_slot_key_does(name: str, value: object) -> None:
    """slot_keys is slot_key for every record: a text field that is not a string gets slot_key's key
    too, never an AttributeError from the fast path's strip()."""
    records = [rec("a", **{name: value}), rec("b")]
    assert slot_keys(records) == [slot_key(r) for r in records]


def test_tags_beyond_the_bmp_sort_by_utf16_code_units_in_a_fold_and_alone() -> None:
    """U+10000 is the surrogates 0xD800 0xDC00 in UTF-16, so it sorts before U+FFFF (as JavaScript
    sorts), although its code point is larger; the union of two records' tags and one record's own
    tags are both sorted that way."""
    want = ["a", "\U00010000", "\uffff"]
    folded = survivor(rec("x", tags=["\uffff", "a"]), rec("x", tags=["\U00010000"], summary="longer summary"))
    assert folded["tags"] == want
    (alone,) = merge_records([rec("y", tags=["\uffff", "\U00010000", "a"])])
    assert alone["tags"] == want


def test_a_fold_of_records_without_a_tag_list_adds_no_tags() -> None:
    """Folding never invents a field: records with no tags key give a survivor with none, and a base's
    non-list tags value is kept as it was."""
    a, b = rec("x"), rec("x", summary="longer summary")
    del a["tags"], b["tags"]
    assert "tags" not in survivor(a, b)
    assert "tags" not in survivor(b, a)
    c, d = rec("x", tags=None), rec("x", summary="longer summary", tags=None)
    assert survivor(c, d)["tags"] is None
    assert survivor(d, c)["tags"] is None


@pytest.mark.parametrize("ranked", ["positive", "neutral", "negative"])
@pytest.mark.parametrize("unranked", ["unknown-impact", None, "absent"])
def test_a_ranked_impact_beats_an_unranked_or_missing_one_in_either_order(
    ranked: str, unranked: object
) -> None:
    """Only positive, neutral and negative are ranked: any of them is worse than a value outside the
    order (or none), whichever record is the base."""
    for base_has_it in (True, False):
        known = rec("a" if base_has_it else "b", impact=ranked)
        other = rec("b" if base_has_it else "a", impact=unranked)
        if unranked == "absent":
            del other["impact"]
        assert survivor(known, other)["impact"] == ranked
        assert survivor(other, known)["impact"] == ranked


@pytest.mark.parametrize("repo", [1.0, 1e-7, 5, ["r"]])
def test_a_non_string_repo_id_hashes_as_slot_key_does(repo: object) -> None:
    """A repoId that is a number is written as RFC 8785 writes numbers (1.0 as 1, 1e-7 as 1e-7),
    in the batch hash as in slot_key."""
    records = [rec("a", repoId=repo), rec("b", repoId="repo-b")]
    assert slot_keys(records) == [slot_key(r) for r in records]


def test_a_cascade_through_the_store_asks_for_each_slot_once() -> None:
    """The incoming s1 folds with the stored s1 into content that is stored s2's: the store is asked for
    that slot once (it holds s2, which folds in too), never again for a slot already answered."""
    stored = {
        r["id"]: r
        for r in merge_records(
            [
                rec("s1", title="a long stored title", summary="s"),
                rec("s2", title="a long stored title", summary="a long incoming summary"),
            ]
        )
    }
    incoming = [rec("s1", title="t", summary="a long incoming summary")]
    lookup = store_lookup(stored)
    plan = merge_into(lookup, incoming)
    asked = [slot for _, slots in lookup.asked for slot in slots]
    assert len(asked) == len(set(asked))
    assert slot_key(stored["s2"]) in asked
    assert plan.retired == ["s2"]
    after = apply(stored, plan)
    assert sorted(after.values(), key=lambda r: r["id"]) == merge_records(list(stored.values()) + incoming)


# A fold never adds a field that none of its records has.


@pytest.mark.parametrize("name", ["title", "summary", "impact", "xpAwarded", "timestamp"])
def test_a_field_no_record_of_the_fold_has_stays_absent(name: str) -> None:
    """The survivor carries a merged field only when a record had it: two records without ``name``
    fold into one without it (not into ``name: None``), whichever is the base."""
    a, b = rec("a"), rec("b", title="a longer title b")
    a.pop(name, None)
    b.pop(name, None)
    for first, second in ((a, b), (b, a)):
        assert name not in survivor(first, second)
    (merged,) = merge_records([a, dict(b, id="a")])
    assert name not in merged
