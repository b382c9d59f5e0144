"""core.erasure: which rows a forget erases, the tombstones they file, and what those refuse."""

from __future__ import annotations

import dataclasses
from typing import Any

from acx.core import erasure, forgetting
from acx.core.rows import LogRow

KEYER = forgetting.StaticKeyer(b"test-forget-key")
ON = forgetting.NearPolicy("refuse")
OFF = forgetting.NearPolicy("off")


def row(rid: str, *, active: bool = True, content_hash: str = "", **kw: Any) -> LogRow:
    record = {"id": rid, "title": f"title {rid}", "summary": f"summary of {rid}"} if active else None
    state = "active" if active else "tombstoned"
    return LogRow(rid, 0, content_hash or f"h-{rid}", "e", state, record, **kw)


def memory(title: str, summary: str, rid: str = "m") -> dict[str, object]:
    return {"id": rid, "title": title, "summary": summary}


# ---- which rows a forget erases


def test_a_forget_erases_the_target_then_every_other_active_row_of_its_knowledge() -> None:
    target = row("a", knowledge="K")
    same = [row("b", knowledge="K"), row("c", knowledge="X", past_keys=["K"]), row("a", knowledge="K")]
    assert [r.id for r in erasure.erased_rows(target, same)] == ["a", "b", "c"]


def test_rows_of_other_knowledge_or_already_tombstoned_are_not_erased() -> None:
    target = row("a", knowledge="K")
    others = [row("x", knowledge="X"), row("t", active=False, knowledge="K")]
    assert [r.id for r in erasure.erased_rows(target, others)] == ["a"]


def test_a_forgotten_target_erases_only_rows_of_its_knowledge_still_active() -> None:
    target = row("a", active=False, knowledge="K")
    assert erasure.erased_rows(target, []) == []  # done: the first forget's answer
    assert [r.id for r in erasure.erased_rows(target, [row("b", knowledge="K")])] == ["b"]


def test_a_target_without_a_knowledge_key_erases_itself_alone() -> None:
    assert [r.id for r in erasure.erased_rows(row("a"), [row("b", knowledge=None)])] == ["a"]


def test_forget_by_content_hash_prefers_the_active_row_then_the_first_tombstoned() -> None:
    gone1 = row("g1", active=False, content_hash="H")
    gone2 = row("g2", active=False, content_hash="H")
    live = row("l", content_hash="H")
    assert erasure.target_by_content_hash([gone1, gone2, live], "H") is live
    assert erasure.target_by_content_hash([gone1, gone2], "H") is gone1
    assert erasure.target_by_content_hash([live], "other") is None


def test_a_forgotten_row_refuses_its_own_and_its_older_versions_knowledge_keys() -> None:
    assert erasure.refused_keys(row("a", knowledge="K", past_keys=["P1", "P2"])) == ["K", "P1", "P2"]
    assert erasure.refused_keys(row("a", past_keys=["P"])) == ["P"]


# ---- what a forgotten row files


def test_the_tombstones_of_a_row_are_its_knowledge_keys_its_ids_and_its_sketch() -> None:
    r = row("a", past_ids=["old-a", "a"], past_keys=["P"])
    stones = erasure.tombstones_of(KEYER, ON, r)
    kk = forgetting.knowledge_key(KEYER, "title a", "summary of a")
    assert stones.knowledge == (kk, "P")
    assert stones.ids == (forgetting.id_key(KEYER, "a"), forgetting.id_key(KEYER, "old-a"))
    assert [k for k, _ in stones.sketches] == [kk]
    assert erasure.tombstones_of(KEYER, OFF, r).sketches == ()


def test_a_stored_knowledge_key_is_filed_as_is_even_once_the_text_is_gone() -> None:
    r = dataclasses.replace(row("a", knowledge="K"), record=None)
    assert erasure.tombstones_of(KEYER, OFF, r).knowledge == ("K",)


# ---- what the tombstones refuse


def probes(*records: dict[str, object], near: forgetting.NearPolicy = ON) -> list[forgetting.Probe]:
    return forgetting.probes(KEYER, records, near)


def test_an_exact_knowledge_key_refuses_whatever_the_id_and_wins_over_the_id_rule() -> None:
    [p] = probes(memory("Deploy keys", "rotate them", rid="new"))
    found = {f"k#{p.knowledge}": 7, f"i#{p.id_key}": 9}
    [hit] = erasure.blocked([p], found, {}, ON)
    assert (hit.index, hit.record_id, hit.rule, hit.seq) == (0, "new", "exact", 7)


def test_a_forgotten_id_refuses_other_text_under_that_id() -> None:
    [p] = probes(memory("Other text", "entirely"))
    [hit] = erasure.blocked([p], {f"i#{p.id_key}": 3}, {}, OFF)
    assert (hit.rule, hit.seq) == ("id", 3)


def test_nothing_found_refuses_nothing() -> None:
    assert erasure.blocked(probes(memory("a", "b")), {}, {}, ON) == []


def test_a_near_copy_is_refused_only_with_the_near_rule_on() -> None:
    text = "the staging database password rotates every ninety days through the vault"
    forgotten = forgetting.record_sketch(KEYER, "Rotation", text)
    assert forgotten is not None
    bands = {bk: {"t1": (tuple(forgotten), 5)} for bk in forgetting.band_keys(forgotten)}
    ps = probes(memory("Rotation", text + " now"))
    [hit] = erasure.blocked(ps, {}, bands, ON)
    assert (hit.rule, hit.seq) == ("near", 5)
    assert erasure.blocked(probes(memory("Rotation", text + " now"), near=OFF), {}, bands, OFF) == []


def test_hits_come_back_in_upload_order_one_per_record() -> None:
    ps = probes(memory("x", "one", rid="r0"), memory("y", "two", rid="r1"), memory("z", "three", rid="r2"))
    found = {f"k#{ps[2].knowledge}": 1, f"i#{ps[0].id_key}": 2, f"k#{ps[0].knowledge}": 3}
    hits = erasure.blocked(ps, found, {}, OFF)
    assert [(h.index, h.rule) for h in hits] == [(0, "exact"), (2, "exact")]


def test_the_keys_to_read_are_each_probes_exact_and_id_keys_and_with_near_on_its_bands() -> None:
    ps = probes(memory("a title", "a summary long enough to sketch"))
    off = erasure.tombstone_keys(ps, OFF)
    assert off == [f"k#{ps[0].knowledge}", f"i#{ps[0].id_key}"]
    on = erasure.tombstone_keys(ps, ON)
    assert on[:2] == off and on[2:] == [f"n#{bk}" for bk in dict.fromkeys(ps[0].bands)]


def test_ended_rows_and_rows_whose_versions_hold_the_knowledge_are_erased_once() -> None:
    import dataclasses

    target = row("a", knowledge="K")
    ended = dataclasses.replace(row("b", knowledge="K"), state="ended", record=None)
    by_version = row("c", knowledge="other")  # its ended version holds K (acx.core.versions)
    same = [ended, by_version, ended]
    assert [r.id for r in erasure.erased_rows(target, same, {"c"})] == ["a", "b", "c"]
    assert [r.id for r in erasure.erased_rows(ended, [])] == ["b"]  # an invalidated memory is forgettable
