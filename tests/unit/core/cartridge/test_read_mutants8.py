"""Cartridge reading, from the seventh round's fresh mutation draw (seed 27): an objects row is
recomputed from the table its kind names, a SAVE memory's codebase fingerprint column is checked
against its payload, a cartridge whose tables vanish under the reader is refused as corrupt, and the
log attestation document is the canonical JSON of what it attests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from acx.core import canonical
from acx.core.cartridge import CartridgeError, CartridgeReader, log_attestation
from acx.core.cartridge.log_attestation import InclusionEntry
from tests.factories import demo_cartridge, duplicate_row


def test_a_capability_ref_under_another_kind_has_no_live_content(tmp_path: Path) -> None:
    """An objects row says which table holds its content by its kind AND its ref: a capability's ref
    relabelled as a memory object is not recomputed from the capabilities table."""
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE objects SET kind = 'memory' WHERE source_ref = 'capability:cap-1'")
    with CartridgeReader(path) as r:
        problems = r.recompute().problems
    assert problems == [
        "memory object capability:cap-1: live content missing",
        "capability cap-1 is not covered by any objects row",
    ]


def test_a_save_memory_whose_codebase_column_disagrees_with_its_payload_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=True)
    with sqlite3.connect(path) as db:
        rid = db.execute("SELECT id FROM memory WHERE zone = 'save'").fetchone()[0]
        db.execute("UPDATE memory SET codebase_fingerprint = 'cbf1_elsewhere' WHERE id = ?", (rid,))
    with CartridgeReader(path) as r:
        assert r.recompute().problems == [f"memory {rid}: fingerprint columns disagree with the payload"]
    demo_cartridge(tmp_path / "b.acx", save=True)
    with CartridgeReader(tmp_path / "b.acx") as r:
        assert r.recompute().problems == []


def test_a_cartridge_whose_objects_table_goes_missing_is_refused_as_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with CartridgeReader(path) as r:
        assert r.checksum()[1] > 0
        with sqlite3.connect(path) as db:
            db.execute("DROP TABLE objects")
        with pytest.raises(CartridgeError, match="corrupt or truncated cartridge"):
            r.checksum()


def test_the_log_attestation_document_is_canonical_json_of_what_it_attests() -> None:
    proof = InclusionEntry("mem-1", "sha256:" + "a" * 64, "b" * 64, 3, ["c" * 64, "d" * 64])
    doc = log_attestation.document("origin\n4\nroot\n", "vkey+1+AAAA", [proof])
    assert isinstance(doc, bytes) and canonical.dumps(canonical.loads(doc)) == doc
    assert canonical.loads(doc) == {
        "checkpoint": "origin\n4\nroot\n",
        "verifierKey": "vkey+1+AAAA",
        "proofs": [
            {
                "memoryId": "mem-1",
                "contentHash": "sha256:" + "a" * 64,
                "entryHash": "b" * 64,
                "index": 3,
                "proof": ["c" * 64, "d" * 64],
            }
        ],
    }


def test_the_first_meta_row_under_a_key_is_the_one_recomputed(tmp_path: Path) -> None:
    """Two rows under one meta key (a verifier's file has its own schema): a lookup reads the first,
    so an edited value ahead of the signed copy is reported, and a NULL behind it changes nothing but
    the duplicate's own problem."""
    ahead, behind = tmp_path / "ahead.acx", tmp_path / "behind.acx"
    demo_cartridge(ahead, save=False)
    demo_cartridge(behind, save=False)
    duplicate_row(ahead, "cartridge", "acx.publisher_id", 1, "com.evil.team", first=True)
    duplicate_row(behind, "cartridge", "acx.publisher_id", 1, None, first=False)
    with CartridgeReader(ahead) as r:
        assert r.recompute().problems == [
            "cartridge object cartridge:acx.publisher_id: recomputed oid differs from objects.oid",
            "cartridge object cartridge:acx.publisher_id: size differs from objects.sz",
            "meta key 'acx.publisher_id': 2 rows under one key",
        ]
    with CartridgeReader(behind) as r:
        assert r.recompute().problems == ["meta key 'acx.publisher_id': 2 rows under one key"]


def test_a_null_capability_row_behind_the_signed_one_changes_nothing_but_its_own_problem(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    duplicate_row(path, "capabilities", "cap-1", 1, None, first=False)
    with CartridgeReader(path) as r:
        assert r.recompute().problems == ["capability 'cap-1': 2 rows under one key"]
