"""Reading a cartridge someone else wrote (acx.core.cartridge.reader): the header and its version
word, missing tables, legacy attestation rows, signature rows and the public key, objects rows and
the live content they name, memory payloads, sqlar entries, the skill index and the vector counts.

A verifier runs this code on an untrusted file, so each case is a file shape it must read right or
refuse by name, never a crash.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path

import pytest

from acx.core.cartridge import CartridgeError, CartridgeReader
from acx.core.cartridge.format import APPLICATION_ID, SQLITE_MAGIC, oid_of, sqlar_bytes
from acx.core.cartridge.log_attestation import LEGACY_ATT_ID, LOG_CHECKPOINT_FILE, summary
from acx.core.signing import PublicKey
from tests.factories import (
    LEGACY_ATTESTATION,
    add_legacy_attestation,
    demo_cartridge,
    tampered_cartridge,
    without_primary_key,
)


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


def test_a_short_file_is_refused_as_a_truncated_header_even_with_the_sqlite_magic(tmp_path: Path) -> None:
    """A file under 100 bytes cannot hold a SQLite header, whatever it starts with; 100 bytes that do not
    start with the SQLite magic are no SQLite file either. Both are refused by that reason."""
    short = tmp_path / "short.acx"
    short.write_bytes(SQLITE_MAGIC + b"\x00" * 40)
    with pytest.raises(CartridgeError, match="not a SQLite file"):
        CartridgeReader(short)
    junk = tmp_path / "junk.acx"
    junk.write_bytes(b"\x00" * 100)
    with pytest.raises(CartridgeError, match="not a SQLite file"):
        CartridgeReader(junk)


def test_a_file_is_read_from_one_row_its_size_and_its_data(tmp_path: Path) -> None:
    """In a sqlar table rebuilt without its key, a lookup by name reads the first row's size with that
    row's own data (a raw file: size equal to its length), not another row's size."""
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        rows = without_primary_key(db, "sqlar")
        (notes,) = [r for r in rows if r[0] == "rom/knowledge/NOTES.md"]
        other = (notes[0], notes[1], notes[2], notes[3] + 7, zlib.compress(b"# other notes\n"))
        db.executemany("INSERT INTO sqlar VALUES (?, ?, ?, ?, ?)", [*rows, other])
    with CartridgeReader(path) as r:
        assert r.find_file("rom/knowledge/NOTES.md") == b"# notes\n"


def test_missing_live_content_enters_the_manifest_as_the_all_zero_oid(tmp_path: Path) -> None:
    """A ROM objects row whose content is gone is reported, and the recomputed manifest binds it as the
    all-zero sha256 oid with size -1 (a well-formed oid no content hashes to), never as nothing."""
    path = tampered_cartridge(tmp_path / "a.acx", "DELETE FROM capabilities")
    with CartridgeReader(path) as r:
        rec = r.recompute(collect=True)
    assert rec.problems == ["cartridge object capability:cap-1: live content missing"]
    (entry,) = [e for e in rec.manifest or [] if e["sourceRef"] == "capability:cap-1"]
    assert entry == {
        "sourceRef": "capability:cap-1",
        "oid": "sha256:" + "0" * 64,
        "canon": "jcs-rfc8785",
        "sz": -1,
    }


def test_an_entry_without_data_reads_as_no_bytes() -> None:
    """A sqlar row whose data is NULL (a directory entry in stock sqlar) is an empty file, b"", whatever
    its recorded size."""
    assert sqlar_bytes(0, None) == b""
    assert sqlar_bytes(12, None) == b""


def test_a_99_byte_prefix_of_a_real_cartridge_is_refused_as_a_truncated_header(tmp_path: Path) -> None:
    """The SQLite header is 100 bytes: 99 of them, magic and application id included, are too few."""
    whole = tmp_path / "a.acx"
    demo_cartridge(whole)
    cut = tmp_path / "cut.acx"
    cut.write_bytes(whole.read_bytes()[:99])
    with pytest.raises(CartridgeError, match=r"not a SQLite file \(bad or truncated header\)"):
        CartridgeReader(cut)


def test_the_signature_read_is_the_oldest_row(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path)
    with CartridgeReader(path) as r:
        first = r.signature()
    assert first is not None
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO signatures (sig_id, manifest_hash, envelope, keyid, public_key_pem, alg, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            ("zz-later", first.manifest_hash, "{}", "other-key", None, "ed25519", "9999-12-31T23:59:59Z"),
        )
    with CartridgeReader(path) as r:
        assert len(r.signatures()) == 2
        assert r.signature() == first
        assert r.public_key() is not None


def test_the_public_key_is_the_one_in_the_signature_row(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    made = demo_cartridge(path)
    with CartridgeReader(path) as r:
        key = r.public_key()
    assert key is not None
    assert key.keyid == PublicKey.from_der(made["signer"].public_key_der()).keyid
    with sqlite3.connect(path) as db:
        db.execute("UPDATE signatures SET public_key_pem = ''")
    with CartridgeReader(path) as r:
        assert r.public_key() is None


def test_a_memory_object_without_its_row_is_reported_missing(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        ref = db.execute(
            "SELECT source_ref FROM objects WHERE kind = 'memory' ORDER BY source_ref"
        ).fetchone()[0]
        db.execute("DELETE FROM memory WHERE id = ?", (ref[7:],))
    with CartridgeReader(path) as r:
        rec = r.recompute(collect=True)
    assert f"memory object {ref}: live content missing" in rec.problems


def _set_engine(path: Path, value: str | None) -> None:
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM cartridge WHERE key = 'acx.embedding_engine'")
        if value is not None:
            db.execute("INSERT INTO cartridge (key, value) VALUES ('acx.embedding_engine', ?)", (value,))


def test_the_embedding_engine_meta_key_is_parsed_as_an_object(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    _set_engine(path, '{"dim":128,"model":"m"}')
    with CartridgeReader(path) as r:
        assert r.embedding_engine() == {"dim": 128, "model": "m"}
    _set_engine(path, "[1,2]")
    with CartridgeReader(path) as r:
        assert r.embedding_engine() is None
    _set_engine(path, None)
    with CartridgeReader(path) as r:
        assert r.embedding_engine() is None


_REF = "cartridge:acx.publisher_id"


@pytest.mark.parametrize("change", ["deleted", "blob"])
def test_a_metadata_object_without_its_text_row_is_reported_missing(tmp_path: Path, change: str) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT 1 FROM objects WHERE source_ref = ?", (_REF,)).fetchone()
        if change == "deleted":
            db.execute("DELETE FROM cartridge WHERE key = 'acx.publisher_id'")
        else:
            db.execute("UPDATE cartridge SET value = X'7075626c6973686572' WHERE key = 'acx.publisher_id'")
    with CartridgeReader(path) as r:
        rec = r.recompute(collect=True)
    assert f"cartridge object {_REF}: live content missing" in rec.problems


def test_the_skill_index_lists_the_cartridges_skill(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        want = db.execute("SELECT sqlar_path, name FROM acx_skill").fetchall()
    assert want and want[0][0] == "rom/skills/deploy-helper/SKILL.md"
    with CartridgeReader(path) as r:
        skills = r.skills()
    assert [(s["sqlar_path"], s["name"]) for s in skills] == want
    assert set(skills[0]) == {"sqlar_path", "name", "description", "license", "content_sha256"}


def test_a_capability_ref_under_another_kind_has_no_live_content(tmp_path: Path) -> None:
    """An objects row says which table holds its content by its kind AND its ref: a capability's ref
    relabelled as a memory object is not recomputed from the capabilities table."""
    path = tampered_cartridge(
        tmp_path / "a.acx", "UPDATE objects SET kind = 'memory' WHERE source_ref = 'capability:cap-1'"
    )
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


def test_a_sqlar_entry_that_does_not_inflate_to_its_size_is_refused(tmp_path: Path) -> None:
    path = tampered_cartridge(
        tmp_path / "a.acx",
        ("UPDATE sqlar SET sz = 1000, data = ? WHERE name = 'rom/knowledge/NOTES.md'", (b"\x00junk",)),
    )
    with CartridgeReader(path) as r, pytest.raises(CartridgeError, match="cannot be decompressed"):
        r.read_file("rom/knowledge/NOTES.md")


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
    path = tampered_cartridge(
        tmp_path / "a.acx", "UPDATE objects SET kind = 'sqlar' WHERE source_ref = 'memory:mem-00001'"
    )
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


def test_a_memory_row_moved_to_another_zone_disagrees_with_its_payload(tmp_path: Path) -> None:
    path = tampered_cartridge(tmp_path / "a.acx", "UPDATE memory SET zone = 'save' WHERE id = 'mem-00002'")
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


@pytest.mark.parametrize(
    ("payload", "rid", "reason"),
    [
        ("[1,2]", "mem-00001", "payload is not a JSON object"),
        ("{not json", "mem-00003", "payload is not valid JSON"),
    ],
    ids=["json-but-not-an-object", "not-json"],
)
def test_a_memory_payload_that_is_not_a_json_object_is_refused_by_id(
    tmp_path: Path, payload: str, rid: str, reason: str
) -> None:
    path = tampered_cartridge(
        tmp_path / "a.acx", ("UPDATE memory SET payload = ? WHERE id = ?", (payload, rid))
    )
    with CartridgeReader(path) as r, pytest.raises(CartridgeError, match=f"memory {rid}: {reason}"):
        r.memory_records()


def test_reading_a_file_the_cartridge_does_not_hold_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with CartridgeReader(path) as r:
        assert r.find_file("rom/knowledge/ABSENT.md") is None
        with pytest.raises(CartridgeError, match=r"no file 'rom/knowledge/ABSENT\.md'"):
            r.read_file("rom/knowledge/ABSENT.md")


def test_a_cartridge_without_a_signature_row_carries_no_public_key(tmp_path: Path) -> None:
    path = tampered_cartridge(tmp_path / "a.acx", "DELETE FROM signatures")
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
