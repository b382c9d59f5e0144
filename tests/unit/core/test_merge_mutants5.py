"""Merge behaviours the fifth mutation run found unguarded: the tier check on its own (same codebase,
different tier), a malformed timestamp against a missing one, and the batch slot hash agreeing with
slot_key on a record whose text fields are not strings."""

from __future__ import annotations

import pytest

from acx.core.fingerprint import slot_key
from acx.core.merge import MergeConflict, merge_into, merge_records, slot_keys, survivor
from tests.unit.core.test_merge import CBF_A, apply, rec, store_lookup


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
