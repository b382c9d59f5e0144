"""Conformance of the merge: the survivor rules, the tier boundary, the store plan, the interop vector."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acx.core.fingerprint import artifact_fingerprint, slot_key
from acx.core.merge import (
    MergeConflict,
    _components,
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
