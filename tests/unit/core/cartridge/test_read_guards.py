"""Reading a cartridge someone else wrote: legacy attestation rows, missing tables, the header's
version word, quoted frontmatter and the log-checkpoint summary.

A verifier runs this code on an untrusted file, so each case is a file shape it must read right or
refuse by name.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from acx.core.cartridge import CartridgeError, CartridgeReader, parse_frontmatter
from acx.core.cartridge.format import APPLICATION_ID, oid_of
from acx.core.cartridge.log_attestation import LEGACY_ATT_ID, LEGACY_ATT_TYPE, LOG_CHECKPOINT_FILE, summary
from tests.factories import INSERT_ATTESTATION, LEGACY_ATTESTATION, add_legacy_attestation, demo_cartridge


def test_a_legacy_attestation_row_is_bound_into_the_rom_manifest(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with CartridgeReader(path) as r:
        before = r.recompute()
    add_legacy_attestation(path, LEGACY_ATTESTATION)
    with CartridgeReader(path) as r:
        rec = r.recompute(collect=True)
        assert rec.problems == []
        assert rec.entries == before.entries + 1
        assert rec.manifest_hash != before.manifest_hash
        entry = next(e for e in rec.manifest or [] if e["sourceRef"] == f"attestation:{LEGACY_ATT_ID}")
        assert entry == {
            "sourceRef": "attestation:log-checkpoint",
            "oid": oid_of(LEGACY_ATTESTATION.encode()),
            "canon": "raw",
            "sz": len(LEGACY_ATTESTATION.encode()),
        }
        want = {"origin": "example.com/log", "treeSize": "7", "proofs": 2, "file": LOG_CHECKPOINT_FILE}
        assert summary(r) == want


def test_an_edited_legacy_attestation_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    add_legacy_attestation(path, LEGACY_ATTESTATION.replace('"k"', '"K"'))
    with CartridgeReader(path) as r:
        problems = r.recompute().problems
    assert problems == [
        "attestation object attestation:log-checkpoint: recomputed oid differs from objects.oid"
    ]


def test_a_legacy_attestation_stored_as_a_blob_is_missing_content(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    add_legacy_attestation(path, LEGACY_ATTESTATION.encode())
    with CartridgeReader(path) as r:
        problems = r.recompute().problems
    assert problems == ["attestation object attestation:log-checkpoint: live content missing"]


def test_an_unbound_legacy_attestation_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    add_legacy_attestation(path, LEGACY_ATTESTATION, covered=False)
    with CartridgeReader(path) as r:
        assert r.recompute().problems == ["attestation log-checkpoint is not covered by any objects row"]


def test_a_one_line_checkpoint_has_no_tree_size(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        db.execute(
            INSERT_ATTESTATION,
            (LEGACY_ATT_ID, LEGACY_ATT_TYPE, "application/json", '{"checkpoint":"origin only"}', "x"),
        )
    with CartridgeReader(path) as r:
        got = summary(r)
    assert got is not None and (got["origin"], got["treeSize"], got["proofs"]) == ("origin only", None, 0)


def test_a_sqlite_file_with_the_acx_id_but_no_tables_is_refused_naming_them(tmp_path: Path) -> None:
    path = tmp_path / "empty.acx"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        db.execute("CREATE TABLE memory (id TEXT)")
    with pytest.raises(CartridgeError) as caught:
        CartridgeReader(path)
    assert "missing tables" in str(caught.value)
    assert "objects" in str(caught.value) and "memory," not in str(caught.value)


def test_the_reader_reads_the_version_word_and_its_save_flag(tmp_path: Path) -> None:
    demo_cartridge(tmp_path / "a.acx", save=False)
    demo_cartridge(tmp_path / "b.acx", save=True)
    with CartridgeReader(tmp_path / "a.acx") as a, CartridgeReader(tmp_path / "b.acx") as b:
        assert (a.user_version, a.save_flag) == (0x01000100, False)
        assert (b.user_version, b.save_flag) == (0x01000101, True)


def test_frontmatter_values_lose_one_pair_of_matching_quotes() -> None:
    text = '---\nname: "deploy"\ndesc: \'x y\'\nodd: "a\'\nq: ""\nlone: \'\n---\nbody: no\n'
    assert parse_frontmatter(text) == {"name": "deploy", "desc": "x y", "odd": "\"a'", "lone": "'"}
