"""Every expected result in reference-cartridge.expect.json, on the reference and on edited copies."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from acx.core import canonical
from acx.core.cartridge import CartridgeReader, CartridgeWriter, strip_to_rom
from acx.core.signing import LocalEd25519Signer
from acx.core.trust import evaluate

REF = "reference-cartridge.acx"


@pytest.fixture
def expect(vectors_dir: Path) -> dict:
    return json.loads((vectors_dir / "reference-cartridge.expect.json").read_text())


@pytest.fixture
def registry(vectors_dir: Path) -> dict:
    return json.loads((vectors_dir / "reference-trust-registry.json").read_text())


@pytest.fixture
def copy(reference_copy: Path) -> Path:
    return reference_copy


def test_recomputed_manifest_hash(vectors_dir: Path, expect: dict) -> None:
    with CartridgeReader(vectors_dir / REF) as r:
        rec = r.recompute()
        assert rec.problems == []
        assert rec.manifest_hash == expect["romManifestHash"]
        assert r.checksum() == ("sha256:b085beb00e7ad39b48afb6ce679e19e3f755a14f9af89634fa39d54d599053bb", 48)


def test_verify_with_registry_is_trusted(vectors_dir: Path, expect: dict, registry: dict) -> None:
    assert expect["verifyWithRegistry"].startswith("trusted")
    v = evaluate(vectors_dir / REF, registry)
    assert v.verdict == "trusted", v.reasons
    pem = (vectors_dir / "reference-cartridge.pub.pem").read_text()
    assert evaluate(vectors_dir / REF, registry, pem).verdict == "trusted"
    assert evaluate(vectors_dir / REF, registry, pem, {v.keyid}).verdict == "local"


def test_verify_without_registry_is_portable(vectors_dir: Path, expect: dict) -> None:
    assert expect["verifyWithoutRegistry"].startswith("portable")
    v = evaluate(vectors_dir / REF)
    assert v.verdict == "portable"
    assert v.manifestHash == expect["romManifestHash"] and v.publisherId == "com.example.peer"


def test_strip_to_rom_keeps_hash_and_verdict(
    vectors_dir: Path, expect: dict, registry: dict, tmp_path: Path
) -> None:
    before, after = strip_to_rom(vectors_dir / REF, tmp_path / "rom.acx")
    assert before == after == expect["romManifestHash"]
    assert expect["stripToRom"].endswith(after)
    assert evaluate(tmp_path / "rom.acx", registry).verdict == "trusted"
    with CartridgeReader(tmp_path / "rom.acx") as r:
        assert r.counts()["memory"] == {"rom": 15}


def _rom_ids(path: Path) -> list[str]:
    return [
        r[0] for r in sqlite3.connect(path).execute("SELECT id FROM memory WHERE zone = 'rom' ORDER BY id")
    ]


def test_editing_any_rom_memory_payload_is_tampered(
    vectors_dir: Path, expect: dict, registry: dict, tmp_path: Path
) -> None:
    assert expect["afterEditingAnyRomMemoryPayload"] == "tampered"
    ids = _rom_ids(vectors_dir / REF)
    assert len(ids) == 15
    for rid in ids:
        path = tmp_path / f"{rid}.acx"
        shutil.copyfile(vectors_dir / REF, path)
        path.chmod(0o644)
        db = sqlite3.connect(path)
        payload = json.loads(db.execute("SELECT payload FROM memory WHERE id = ?", (rid,)).fetchone()[0])
        payload["summary"] += " (edited)"
        db.execute("UPDATE memory SET payload = ? WHERE id = ?", (canonical.dumps(payload).decode(), rid))
        db.commit()
        db.close()
        assert evaluate(path, registry).verdict == "tampered", rid
        assert evaluate(path).verdict == "tampered", rid


def test_edit_with_consistent_oids_is_still_tampered(copy: Path, registry: dict) -> None:
    from acx.core.cartridge import oid_of

    db = sqlite3.connect(copy)
    rid = _rom_ids(copy)[0]
    payload = json.loads(db.execute("SELECT payload FROM memory WHERE id = ?", (rid,)).fetchone()[0])
    payload["impact"] = "positive" if payload["impact"] != "positive" else "negative"
    data = canonical.dumps(payload)
    old = db.execute("SELECT oid FROM memory WHERE id = ?", (rid,)).fetchone()[0]
    db.execute("UPDATE memory SET payload = ?, oid = ? WHERE id = ?", (data.decode(), oid_of(data), rid))
    db.execute("UPDATE objects SET oid = ?, sz = ? WHERE oid = ?", (oid_of(data), len(data), old))
    db.commit()
    db.close()
    v = evaluate(copy, registry)
    assert v.verdict == "tampered"
    assert any("subject digest" in r for r in v.reasons)


def test_edited_knowledge_file_and_meta_are_tampered(copy: Path, registry: dict) -> None:
    db = sqlite3.connect(copy)
    db.execute("UPDATE sqlar SET data = ?, sz = 5 WHERE name = 'rom/knowledge/SKILLS.md'", (b"hello",))
    db.commit()
    assert evaluate(copy, registry).verdict == "tampered"


def test_edited_bound_meta_is_tampered(copy: Path, registry: dict) -> None:
    db = sqlite3.connect(copy)
    db.execute("UPDATE cartridge SET value = 'com.attacker' WHERE key = 'acx.publisher_id'")
    db.commit()
    assert evaluate(copy, registry).verdict == "tampered"


def test_removed_signature_is_legacy(copy: Path) -> None:
    db = sqlite3.connect(copy)
    db.execute("DELETE FROM signatures")
    db.commit()
    assert evaluate(copy).verdict == "legacy"


def test_resigned_by_attacker_is_not_trusted(copy: Path, registry: dict) -> None:
    from acx.core import dsse
    from acx.core.signing import keyid_for, spki_pem

    attacker = LocalEd25519Signer()
    db = sqlite3.connect(copy)
    env = dsse.parse_envelope(db.execute("SELECT envelope FROM signatures").fetchone()[0])
    new = dsse.sign_statement(env.statement(), attacker)
    kid = keyid_for("ed25519", attacker.public_key_der())
    db.execute(
        "UPDATE signatures SET envelope = ?, keyid = ?, public_key_pem = ?",
        (dsse.envelope_json(new), kid, spki_pem(attacker.public_key_der())),
    )
    db.commit()
    db.close()
    v = evaluate(copy, registry)
    assert v.verdict == "portable" and any("not in the registry" in r for r in v.reasons)
    # verifying against the publisher's real key: keyid mismatch -> tampered
    ref_pem = registry["keys"][0]["publicKeyPem"]
    assert evaluate(copy, registry, ref_pem).verdict == "tampered"


def test_writer_reproduces_the_reference_manifest(vectors_dir: Path, tmp_path: Path, expect: dict) -> None:
    """Feed the reference's own content through our writer: the same ROM manifest hash comes out."""
    ref = sqlite3.connect(vectors_dir / REF)
    meta = dict(ref.execute("SELECT key, value FROM cartridge"))
    skip = {
        "acx.cal_skillset",
        "acx.lance_schema",
        "acx.package_spec",
        "acx.rom_manifest_hash",
        "acx.vec0_format",
        "acx.publisher_id",
        "acx.cartridge_id",
    }
    w = CartridgeWriter(
        tmp_path / "ours.acx",
        artifact_id=meta["acx.artifact_id"],
        artifact_version=meta["acx.artifact_version"],
        created_at=meta["acx.created_at"],
        meta={k: v for k, v in meta.items() if k not in skip},
    )
    with CartridgeReader(vectors_dir / REF) as r:
        for row in r.iter_memory():
            stored = w.add_memory(row.record, row.zone)
            assert canonical.dumps(stored).decode() == row.payload, row.id
        for name in r.file_names():
            w.add_file(name, r.read_file(name))
    for (js,) in ref.execute("SELECT json FROM capabilities"):
        w.add_capability(json.loads(js))
    res = w.finalize(LocalEd25519Signer(), meta["acx.publisher_id"], cartridge_id=meta["acx.cartridge_id"])
    assert res.manifest_hash == expect["romManifestHash"]
    with CartridgeReader(tmp_path / "ours.acx") as r:
        assert r.checksum()[0] == "sha256:b085beb00e7ad39b48afb6ce679e19e3f755a14f9af89634fa39d54d599053bb"
