"""Cartridge reading, from the eighth round's screen of the whole mutation pool (the reader): a file in
incremental-vacuum mode, table pages that are garbage behind an intact schema page, an objects row
relabelled to another kind, a second memory row under a signed id, a memory row whose zone column was
moved, every memory row checked after a bad one, a payload that is not JSON, a missing file, a legacy
cartridge without a signature, and the orphan-vector count."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from acx.core.cartridge import CartridgeError, CartridgeReader
from acx.core.cartridge.format import oid_of
from tests.factories import LEGACY_ATTESTATION, add_legacy_attestation, demo_cartridge, duplicate_row


def test_a_cartridge_in_incremental_vacuum_mode_is_read(tmp_path: Path) -> None:
    """Bytes 64-67 of the header are the incremental-vacuum flag, right before the application id:
    a cartridge rebuilt with it set is still an ACX cartridge, its content unchanged."""
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with CartridgeReader(path) as r:
        before = r.recompute().manifest_hash
    db = sqlite3.connect(path)
    db.execute("PRAGMA auto_vacuum = INCREMENTAL")
    db.execute("VACUUM")
    db.close()
    assert path.read_bytes()[64:68] == b"\x00\x00\x00\x01"
    with CartridgeReader(path) as r:
        rec = r.recompute()
    assert (rec.problems, rec.manifest_hash) == ([], before)


def test_garbage_table_pages_behind_an_intact_schema_page_are_refused_as_corrupt(tmp_path: Path) -> None:
    """The header and the schema (page 1) pass the opening checks; every later read must still refuse,
    never return an empty answer."""
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    data = bytearray(path.read_bytes())
    for off in range(4096, len(data)):
        data[off] = (off * 7) & 0xFF
    path.write_bytes(bytes(data))
    with CartridgeReader(path) as r:
        with pytest.raises(CartridgeError, match="corrupt or truncated cartridge"):
            r.meta()
        with pytest.raises(CartridgeError, match="corrupt or truncated cartridge"):
            r.memory_records()
        with pytest.raises(CartridgeError, match="corrupt or truncated cartridge"):
            r.recompute()


def test_a_memory_object_relabelled_as_a_file_has_no_live_content(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE objects SET kind = 'sqlar' WHERE source_ref = 'memory:mem-00001'")
    with CartridgeReader(path) as r:
        assert r.recompute().problems == [
            "sqlar object memory:mem-00001: live content missing",
            "memory row mem-00001 is not covered by any objects row",
        ]


def test_a_legacy_attestation_object_relabelled_as_a_skill_has_no_live_content(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    add_legacy_attestation(path, LEGACY_ATTESTATION)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE objects SET kind = 'skill' WHERE source_ref = 'attestation:log-checkpoint'")
    with CartridgeReader(path) as r:
        assert r.recompute().problems == [
            "skill object attestation:log-checkpoint: live content missing",
            "attestation log-checkpoint is not covered by any objects row",
        ]


def test_a_second_memory_row_under_a_signed_id_is_its_own_problem_only(tmp_path: Path) -> None:
    """The signed row comes first, the lookup reads it; the row behind it (a NULL payload, or another
    zone) is reported for itself, not as the signed object's content."""
    null_payload, other_zone = tmp_path / "a.acx", tmp_path / "b.acx"
    demo_cartridge(null_payload, save=False)
    demo_cartridge(other_zone, save=False)
    duplicate_row(null_payload, "memory", "mem-00001", 4, None, first=False)
    duplicate_row(other_zone, "memory", "mem-00001", 1, "save", first=False)
    with CartridgeReader(null_payload) as r:
        assert r.recompute().problems == [
            "memory row 'mem-00001': 2 rows under one key",
            "memory mem-00001: payload is not text",
        ]
    with CartridgeReader(other_zone) as r:
        assert r.recompute().problems == [
            "memory row 'mem-00001': 2 rows under one key",
            "memory mem-00001: id/zone columns disagree with the payload",
        ]


def test_a_memory_row_moved_to_another_zone_disagrees_with_its_payload(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE memory SET zone = 'save' WHERE id = 'mem-00002'")
    with CartridgeReader(path) as r:
        assert r.recompute().problems == [
            "memory object memory:mem-00002: objects.zone 'rom' but content is in 'save'",
            "memory mem-00002: id/zone columns disagree with the payload",
        ]


@pytest.mark.parametrize(
    ("payload", "reasons"),
    [
        (
            lambda record: json.dumps(record).encode(),
            ["memory object memory:mem-00000: live content missing", "memory mem-00000: payload is not text"],
        ),
        (
            lambda record: "not json",
            [
                "memory object memory:mem-00000: recomputed oid differs from objects.oid",
                "memory object memory:mem-00000: size differs from objects.sz",
                "memory mem-00000: payload is not valid JSON",
            ],
        ),
        (
            lambda record: json.dumps(record),
            [
                "memory object memory:mem-00000: recomputed oid differs from objects.oid",
                "memory object memory:mem-00000: size differs from objects.sz",
                "memory mem-00000: payload is not canonical JSON of an object",
            ],
        ),
        (
            lambda record: "[1]",
            [
                "memory object memory:mem-00000: recomputed oid differs from objects.oid",
                "memory object memory:mem-00000: size differs from objects.sz",
                "memory mem-00000: payload is not canonical JSON of an object",
            ],
        ),
    ],
    ids=["blob", "not-json", "not-canonical", "canonical-list"],
)
def test_every_memory_row_is_checked_after_a_bad_payload(
    tmp_path: Path, payload: object, reasons: list
) -> None:
    """The first memory row's payload is bad (its oid column updated to match it); the last row's oid
    column is wrong: both are reported."""
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        record = json.loads(db.execute("SELECT payload FROM memory WHERE id = 'mem-00000'").fetchone()[0])
        bad = payload(record)  # type: ignore[operator]
        raw = bad if isinstance(bad, bytes) else bad.encode()
        db.execute("UPDATE memory SET payload = ?, oid = ? WHERE id = 'mem-00000'", (bad, oid_of(raw)))
        db.execute("UPDATE memory SET oid = 'sha256:' || hex(zeroblob(32)) WHERE id = 'mem-00004'")
    with CartridgeReader(path) as r:
        assert r.recompute().problems == [
            *reasons,
            "memory mem-00004: memory.oid differs from the payload hash",
        ]


def test_a_memory_payload_that_is_not_json_is_refused_when_listed(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE memory SET payload = '{not json' WHERE id = 'mem-00003'")
    with (
        CartridgeReader(path) as r,
        pytest.raises(CartridgeError, match="memory mem-00003: payload is not valid JSON"),
    ):
        r.memory_records()


def test_reading_a_file_the_cartridge_does_not_hold_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with CartridgeReader(path) as r:
        assert r.find_file("rom/knowledge/ABSENT.md") is None
        with pytest.raises(CartridgeError, match=r"no file 'rom/knowledge/ABSENT\.md'"):
            r.read_file("rom/knowledge/ABSENT.md")


def test_a_cartridge_without_a_signature_row_carries_no_public_key(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM signatures")
    with CartridgeReader(path) as r:
        assert r.signature() is None
        assert r.public_key() is None


def test_orphan_vectors_are_the_vectors_without_a_memory_row(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with CartridgeReader(path) as r:
        assert r.orphan_vectors() == 0
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM memory WHERE id IN ('mem-00001', 'mem-00003')")
    with CartridgeReader(path) as r:
        assert r.orphan_vectors() == 2


def test_a_recompute_not_asked_to_collect_holds_no_manifest(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with CartridgeReader(path) as r:
        plain, collected = r.recompute(), r.recompute(collect=True)
    assert plain.manifest is None
    assert collected.manifest is not None and len(collected.manifest) == collected.entries == plain.entries
