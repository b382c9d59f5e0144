"""Versions of a memory from its log entries: valid time, supersession, invalidation, forget."""

from __future__ import annotations

from typing import Any

import pytest

from acx.core import versions as v
from acx.core.append import EntrySpec, LogHead, plan_append
from acx.core.log import Covers, Entry

H = "a" * 64


def _log(*steps: tuple[str, str, dict[str, str]], key: str = "r#m1") -> list[Entry]:
    """Entries of (operation, createdAt, extra) steps, each covering the previous one where it must."""
    head, out = LogHead.empty(), []
    for op, at, extra in steps:
        covers = Covers(out[-1].seq, out[-1].hash) if op in ("supersede", "invalidate", "forget") else None
        ch = format(len(out), "x").rjust(64, "0")
        spec = EntrySpec(op, "rom", ch, key, covers, tuple(extra.items()))
        plan = plan_append(head, [spec], actor=f"actor{len(out)}", chain="t#p", created_at=at)
        head, out = plan.head, out + plan.entries
    return out


def test_remember_then_supersede_ends_the_old_version_at_the_new_valid_from() -> None:
    log = _log(
        ("remember", "2026-01-01T00:00:00Z", {}),
        ("supersede", "2026-03-01T00:00:00Z", {"validFrom": "2026-02-01T00:00:00Z"}),
    )
    old, new = v.versions(log)
    assert (old.valid_from, old.valid_until, old.ended_by) == (
        "2026-01-01T00:00:00Z",
        "2026-02-01T00:00:00Z",
        "supersede",
    )
    assert (new.operation, new.valid_from, new.valid_until, new.current) == (
        "supersede",
        "2026-02-01T00:00:00Z",
        None,
        True,
    )
    assert new.recorded_at == "2026-03-01T00:00:00Z" and new.actor == "actor1" and not old.current
    # as of T is valid time as the log holds it now: the correction answers for Feb 15
    assert v.valid_at([old, new], "2026-01-15T00:00:00Z") is old
    assert v.valid_at([old, new], "2026-02-15T00:00:00Z") is new
    assert v.valid_at([old, new], "2026-02-01T00:00:00Z") is new  # validUntil is exclusive
    assert v.valid_at([old, new], "2025-12-31T23:59:59Z") is None


def test_a_merge_refines_the_open_version_and_keeps_its_valid_time() -> None:
    log = _log(("remember", "2026-01-01T00:00:00Z", {}), ("remember", "2026-01-05T00:00:00Z", {}))
    (only,) = v.versions(log)
    assert (only.first_seq, only.seq, only.valid_from, only.recorded_at) == (
        0,
        1,
        "2026-01-01T00:00:00Z",
        "2026-01-05T00:00:00Z",
    )
    assert only.entry_hash == log[1].hash and only.content_hash == log[1].content_hash


def test_invalidate_ends_validity_without_a_successor_and_a_new_remember_begins_again() -> None:
    log = _log(
        ("remember", "2026-01-01T00:00:00Z", {}),
        ("invalidate", "2026-01-10T00:00:00Z", {"validUntil": "2026-01-08T00:00:00Z"}),
        ("remember", "2026-01-20T00:00:00Z", {}),
    )
    first, second = v.versions(log)
    assert (first.valid_until, first.ended_by) == ("2026-01-08T00:00:00Z", "invalidate")
    assert v.valid_at([first, second], "2026-01-09T00:00:00Z") is None
    assert second.current and second.valid_from == "2026-01-20T00:00:00Z"


def test_invalidate_without_valid_until_ends_at_its_record_time() -> None:
    log = _log(("remember", "2026-01-01T00:00:00Z", {}), ("invalidate", "2026-01-10T00:00:00Z", {}))
    (only,) = v.versions(log)
    assert only.valid_until == "2026-01-10T00:00:00Z" and not only.current


def test_forget_marks_every_version_forgotten_and_as_of_never_answers_them() -> None:
    log = _log(
        ("remember", "2026-01-01T00:00:00Z", {}),
        ("supersede", "2026-02-01T00:00:00Z", {}),
        ("forget", "2026-03-01T00:00:00Z", {}),
    )
    history = v.versions(log)
    assert [x.forgotten for x in history] == [True, True]
    assert history[1].ended_by == "forget"
    assert v.valid_at(history, "2026-01-15T00:00:00Z") is None
    assert v.valid_at(history, "2026-02-15T00:00:00Z") is None


def test_instants_compare_across_offsets_and_fractions() -> None:
    log = _log(("remember", "2026-01-01T10:00:00+02:00", {}))  # 08:00Z
    (only,) = v.versions(log)
    assert only.valid_at("2026-01-01T08:00:00Z") and not only.valid_at("2026-01-01T07:59:59.999Z")


def test_by_memory_groups_memory_entries_and_skips_files_and_locks() -> None:
    a = _log(("remember", "2026-01-01T00:00:00Z", {}))
    b = _log(("remember", "2026-01-01T00:00:00Z", {}), key="f#knowledge/a.md")
    lock = Entry(9, H, H, {"operation": "lock"}, None)
    assert v.by_memory([*a, *b, lock]) == {"m1": a}
    assert v.memory_id(b[0]) is None and v.memory_id(lock) is None


def test_entries_in_any_order_give_the_same_history() -> None:
    log = _log(("remember", "2026-01-01T00:00:00Z", {}), ("supersede", "2026-02-01T00:00:00Z", {}))
    assert v.versions(reversed(log)) == v.versions(log)


def _current(valid_from: str = "2026-01-10T00:00:00Z") -> v.Version:
    return v.Version(0, 0, "remember", H, H, valid_from, None, valid_from, "a")


@pytest.mark.parametrize(
    ("end", "fragment"),
    [
        ("2026-01-09T00:00:00Z", "precedes the current version's validFrom"),
        ("2026-02-01T00:00:00Z", "is in the future"),
    ],
)
def test_an_end_outside_the_current_versions_time_is_refused(end: str, fragment: str) -> None:
    with pytest.raises(v.VersionError, match=fragment) as info:
        v.check_end(_current(), end, "2026-01-20T00:00:00Z", "$.validFrom")
    assert info.value.path == "$.validFrom" and info.value.message.startswith("validFrom ")


def test_an_end_within_the_current_versions_time_is_allowed() -> None:
    v.check_end(_current(), "2026-01-10T00:00:00Z", "2026-01-20T00:00:00Z", "$.validUntil")
    v.check_end(_current(), None, "2026-01-20T00:00:00Z", "$.validUntil")


@pytest.mark.parametrize("value", ["yesterday", "2026-02-30T00:00:00Z", 5, None])
def test_check_time_refuses_what_is_not_rfc3339(value: Any) -> None:
    with pytest.raises(v.VersionError, match="RFC 3339"):
        v.check_time(value, "$.asOf")
    assert v.check_time("2026-02-28T00:00:00Z", "$.asOf") == "2026-02-28T00:00:00Z"


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"id": "other"}, "$.record.id"),
        ({"portable": False}, "$.record.portable"),
        ({"codebaseFingerprint": "cbf1_" + "0" * 40}, "$.record.codebaseFingerprint"),
    ],
)
def test_an_update_keeps_id_tier_and_codebase(change: dict[str, Any], path: str) -> None:
    old = {"id": "m1", "portable": True, "codebaseFingerprint": None}
    v.check_update(old, {**old, "summary": "new"})
    with pytest.raises(v.VersionError) as info:
        v.check_update(old, {**old, **change})
    assert info.value.path == path


def test_kept_names_each_text_field_the_merge_kept_and_points_to_update() -> None:
    stored = {"id": "m1", "title": "Staging API", "summary": "Staging API port is 8080, set in nginx."}
    short = {"id": "m1", "title": "Staging API", "summary": "Staging API port is 9090 now."}
    (entry,) = v.kept(short, stored, "/v1/packages/p/memories/m1")
    assert entry["id"] == "m1" and entry["field"] == "summary"
    assert "longer summary" in entry["reason"] and "PUT /v1/packages/p/memories/m1" in entry["reason"]
    assert v.kept(stored, stored, "x") == []
    assert [k["field"] for k in v.kept({"id": "m1", "title": "T"}, stored, "x")] == ["title", "summary"]
