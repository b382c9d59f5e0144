"""Cartridge container: header, schema, sqlar names, manifest, export boundary and zones, strip,
corruption, timestamps."""

from __future__ import annotations

import hashlib
import re
import sqlite3
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from acx.core import canonical
from acx.core.cartridge import (
    APPLICATION_ID,
    CartridgeError,
    CartridgeReader,
    CartridgeWriter,
    strip_to_rom,
    validate_sqlar_name,
)
from acx.core.cartridge.boundary import export_view
from acx.core.cartridge.format import now_rfc3339
from acx.core.signing import LocalEd25519Signer
from tests.factories import (
    CARTRIDGE_SKILL,
    CBF,
    cartridge_record,
    demo_cartridge,
)


def test_header_bytes_and_user_version(tmp_path: Path) -> None:
    demo_cartridge(tmp_path / "a.acx", save=False)
    demo_cartridge(tmp_path / "b.acx", save=True)
    a = (tmp_path / "a.acx").read_bytes()
    b = (tmp_path / "b.acx").read_bytes()
    assert a[68:72] == b"ACX1" and int.from_bytes(a[68:72], "big") == APPLICATION_ID
    assert int.from_bytes(a[60:64], "big") == 0x01000100
    assert int.from_bytes(b[60:64], "big") == 0x01000101


def test_schema_mirrors_the_reference(tmp_path: Path, vectors_dir: Path) -> None:
    demo_cartridge(tmp_path / "a.acx")
    ours = sqlite3.connect(tmp_path / "a.acx")
    ref = sqlite3.connect(vectors_dir / "reference-cartridge.acx")
    q = "SELECT name FROM sqlite_master WHERE type IN ('table', 'index') ORDER BY name"
    assert ours.execute(q).fetchall() == ref.execute(q).fetchall()
    for (table,) in ref.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        assert (
            ours.execute(f"PRAGMA table_info({table})").fetchall()
            == ref.execute(f"PRAGMA table_info({table})").fetchall()
        ), table
    with pytest.raises(sqlite3.IntegrityError):
        ours.execute("INSERT INTO memory VALUES ('x', 'attic', 'f', NULL, '{}', 'o', 't')")


@pytest.mark.parametrize(
    "name",
    [
        "rom/../etc/passwd",
        "/rom/a.md",
        "rom\\a.md",
        "rom/a\x00.md",
        "rom/.hidden",
        "rom//a.md",
        "other/a.md",
        "rom",
        "rom/" + "a" * 129,
        "rom/a b.md",
        "save/..",
        "rom/./a.md",
    ],
)
def test_traversal_and_bad_names_rejected(name: str, tmp_path: Path) -> None:
    with pytest.raises(CartridgeError):
        validate_sqlar_name(name)
    with (
        CartridgeWriter(tmp_path / "x.acx", artifact_id="a", artifact_version="1") as w,
        pytest.raises(CartridgeError),
    ):
        w.add_file(name, b"x")
    assert not list(tmp_path.iterdir())  # nothing left behind


def test_good_names_accepted() -> None:
    assert validate_sqlar_name("rom/skills/x-y_z.1/SKILL.md") == "rom"
    assert validate_sqlar_name("save/notes/a.md") == "save"


def test_manifest_reproducible_from_stored_objects(tmp_path: Path) -> None:
    res = demo_cartridge(tmp_path / "a.acx")["result"]
    with CartridgeReader(tmp_path / "a.acx") as r:
        rec_ = r.recompute(collect=True)
        assert rec_.problems == []
        assert rec_.manifest_hash == res.manifest_hash == r.meta()["acx.rom_manifest_hash"]
        manifest = r.manifest()
        assert "sha256:" + hashlib.sha256(canonical.dumps(manifest)).hexdigest() == res.manifest_hash
        keys = [(e["sourceRef"].split(":")[0], e["sourceRef"]) for e in manifest]
        assert all(e["sourceRef"] != "memory:mem-99999" for e in manifest)  # SAVE not in the manifest
        assert len(keys) == len(set(keys))
        # objects rows match payload hashes
        for row in r.iter_memory():
            assert canonical.dumps(row.record).decode() == row.payload


def test_export_boundary_strips_rom_and_marks_save(tmp_path: Path) -> None:
    demo_cartridge(tmp_path / "a.acx")
    with CartridgeReader(tmp_path / "a.acx") as r:
        rom = r.memory_records("rom")
        save = r.memory_records("save")
    assert {x["repoLabel"] for x in rom} == {"portable-core"} == {x["projectLabel"] for x in rom}
    assert all(x["repoId"] is None and x["codebaseFingerprint"] is None and x["zone"] == "rom" for x in rom)
    assert save[0]["repoId"] is None and save[0]["repoLabel"] == save[0]["projectLabel"] == "field-learned"
    assert save[0]["codebaseFingerprint"] == CBF and save[0]["foreign"] is True and save[0]["zone"] == "save"
    assert all(len(x["artifactFingerprint"]) == 10 for x in rom + save)


def test_skill_index_and_uncompressed_files(tmp_path: Path) -> None:
    demo_cartridge(tmp_path / "a.acx")
    db = sqlite3.connect(tmp_path / "a.acx")
    row = db.execute(
        "SELECT name, description, license, content_sha256, schema_version FROM acx_skill"
    ).fetchone()
    assert row == (
        "deploy-helper",
        "Helps with deploys.",
        "MIT",
        hashlib.sha256(CARTRIDGE_SKILL).hexdigest(),
        "acx.skill/1",
    )
    assert db.execute("SELECT count(*) FROM sqlar WHERE length(data) != sz").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM vectors").fetchone()[0] == 5
    assert db.execute("SELECT length(embedding) FROM vectors LIMIT 1").fetchone()[0] == 128 * 4


def test_reader_accepts_zlib_and_raw_deflate_sqlar(tmp_path: Path) -> None:
    demo_cartridge(tmp_path / "a.acx", save=False)
    data = b"# notes\n" * 50
    for wbits in (15, -15):
        co = zlib.compressobj(wbits=wbits)
        blob = co.compress(data) + co.flush()
        db = sqlite3.connect(tmp_path / "a.acx")
        db.execute(
            "UPDATE sqlar SET data = ?, sz = ? WHERE name = 'rom/knowledge/NOTES.md'", (blob, len(data))
        )
        db.commit()
        db.close()
        with CartridgeReader(tmp_path / "a.acx") as r:
            assert r.read_file("rom/knowledge/NOTES.md") == data


def test_vector_dim_checked_and_duplicates_refused(tmp_path: Path) -> None:
    with CartridgeWriter(tmp_path / "a.acx", artifact_id="a", artifact_version="1") as w:
        with pytest.raises(CartridgeError):
            w.add_memory(cartridge_record(1), "rom", [0.1] * 3)
    with (
        pytest.raises(CartridgeError),
        CartridgeWriter(tmp_path / "b.acx", artifact_id="a", artifact_version="1", chunk_size=10) as w,
    ):
        w.add_memory(cartridge_record(1), "rom")
        w.add_memory(cartridge_record(1), "rom")
        w.finalize(LocalEd25519Signer(), "com.example")
    assert not list(tmp_path.iterdir())


def test_strip_to_rom_keeps_manifest_hash(tmp_path: Path) -> None:
    res = demo_cartridge(tmp_path / "a.acx")["result"]
    before, after = strip_to_rom(tmp_path / "a.acx", tmp_path / "b.acx")
    assert before == after == res.manifest_hash
    raw = (tmp_path / "b.acx").read_bytes()
    assert int.from_bytes(raw[60:64], "big") == 0x01000100
    assert CBF.encode() not in raw  # VACUUMed: SAVE bytes gone
    with CartridgeReader(tmp_path / "b.acx") as r:
        assert r.counts()["memory"] == {"rom": 5}
        assert r.recompute().problems == []


def test_truncated_and_corrupted_files_raise_cartridge_error(tmp_path: Path) -> None:
    demo_cartridge(tmp_path / "a.acx", n=200)
    data = (tmp_path / "a.acx").read_bytes()
    cases = {
        "trunc.acx": data[: len(data) // 2],
        "tiny.acx": data[:50],
        "empty.acx": b"",
        "garbage.acx": data[:100] + bytes(range(256)) * ((len(data) - 100) // 256),
        "notsqlite.acx": b"hello" * 100,
        "wrongapp.acx": data[:68] + b"XXXX" + data[72:],
    }
    for name, blob in cases.items():
        (tmp_path / name).write_bytes(blob)
        with pytest.raises(CartridgeError):
            with CartridgeReader(tmp_path / name) as r:
                r.recompute()
                list(r.iter_memory())
    with pytest.raises(CartridgeError):
        CartridgeReader(tmp_path / "missing.acx")


def test_seal_sign_commit_with_an_injected_signer(tmp_path):
    """Signing is its own step: seal gives the Statement, any signer signs it, commit stores it."""
    from acx.core import dsse
    from acx.core.trust import evaluate

    signer = LocalEd25519Signer()
    w = CartridgeWriter(tmp_path / "c.acx", artifact_id="a", artifact_version="1")
    w.add_memory(cartridge_record(1), "rom")
    statement = w.seal("com.example.team", cartridge_id="c-1")
    assert statement["subject"][0]["name"] == "c-1"
    with pytest.raises(CartridgeError, match="already sealed"):
        w.seal("com.example.team")
    other = dict(statement, predicate=dict(statement["predicate"], publisherId="com.attacker"))
    with pytest.raises(CartridgeError, match="does not sign the sealed statement"):
        w.commit(dsse.sign_statement(other, signer), signer.public_key_der(), signer.algorithm)
    assert not (tmp_path / "c.acx").exists()  # a refused commit leaves nothing behind

    w = CartridgeWriter(tmp_path / "c.acx", artifact_id="a", artifact_version="1")
    w.add_memory(cartridge_record(1), "rom")
    statement = w.seal("com.example.team", cartridge_id="c-1")
    result = w.commit(dsse.sign_statement(statement, signer), signer.public_key_der(), signer.algorithm)
    assert result.cartridge_id == "c-1" and (tmp_path / "c.acx").exists()
    assert evaluate(tmp_path / "c.acx").verdict == "portable"


@pytest.mark.parametrize("name", ["", None, 123, b"rom/a.md"])
def test_a_sqlar_name_that_is_empty_or_not_a_string_is_refused_as_such(name: object) -> None:
    with pytest.raises(CartridgeError, match="file name must be a non-empty string"):
        validate_sqlar_name(name)  # type: ignore[arg-type]


def test_an_unknown_export_zone_is_refused() -> None:
    with pytest.raises(CartridgeError, match="unknown zone 'attic'"):
        export_view(cartridge_record(1), "attic")


def test_the_timestamp_is_utc_now_to_the_millisecond_with_a_z() -> None:
    before = datetime.now(UTC)
    stamp = now_rfc3339()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp), stamp
    read_back = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert before - timedelta(milliseconds=1) <= read_back <= datetime.now(UTC)
