"""acx inspect / verify / strip / import on the reference cartridge and edited copies."""

from __future__ import annotations

import json
import sqlite3
import struct
from pathlib import Path

import pytest

from acx.cli.main import main
from acx.core import canonical
from tests.factories import tiny

REF = "reference-cartridge.acx"


@pytest.fixture
def ref(reference_copy: Path) -> Path:
    return reference_copy


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, (json.loads(out) if "--json" in argv and out.strip() else {})


def test_inspect(ref: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run(capsys, "inspect", str(ref), "--json")
    assert code == 0
    assert doc["counts"]["memory"] == {"rom": 15, "save": 5}
    assert doc["counts"]["objects"]["sqlar"] == {"rom": 14}
    assert doc["skills"][0]["name"] == "expertise-designer"
    assert doc["signature"]["keyid"].startswith("ed25519:f906")
    assert doc["signature"]["signedAt"] == "2026-04-03T13:35:46.190Z"
    assert main(["inspect", str(ref)]) == 0
    text = capsys.readouterr().out
    assert "memory rom 15, save 5" in text and "sqlar rom 14" in text
    assert not set("{}'[]") & set(text), text  # no Python reprs for people


def test_verify_exit_codes(ref: Path, vectors_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reg = str(vectors_dir / "reference-trust-registry.json")
    pem = str(vectors_dir / "reference-cartridge.pub.pem")
    assert run(capsys, "verify", str(ref), "--json")[1]["verdict"] == "portable"
    assert run(capsys, "verify", str(ref))[0] == 1
    code, doc = run(capsys, "verify", str(ref), "--registry", reg, "--public-key", pem, "--json")
    assert (code, doc["verdict"]) == (0, "trusted")
    db = sqlite3.connect(ref)
    db.execute("UPDATE memory SET payload = replace(payload, 'flaky', 'FLAKY') WHERE id = 'mem-201-00001'")
    db.commit()
    db.close()
    code, doc = run(capsys, "verify", str(ref), "--registry", reg, "--json")
    assert (code, doc["verdict"]) == (4, "tampered")
    bad = ref.parent / "bad.acx"
    bad.write_bytes(ref.read_bytes()[:3000])
    assert main(["verify", str(bad)]) == 2


def test_strip(ref: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run(capsys, "strip", str(ref), str(tmp_path / "out.acx"), "--json")
    assert code == 0 and doc["equal"] is True
    assert doc["original"] == "sha256:368de7e206e539e47f513a3b150ff7d9a7635ac74cc3a6ea60938e2e9461546d"


def test_import_merges_rom_and_quarantines_save(
    ref: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    code, doc = run(capsys, "import", str(ref), "--into", str(store), "--json")
    assert code == 0 and doc["imported"] == 15 and sum(doc["quarantined"].values()) == 5
    merged = canonical.loads((store / "memory-records.json").read_bytes())
    assert len(merged) == 15 and all(r["portable"] is True and r["origin"] == "imported" for r in merged)
    qfiles = sorted((store / "quarantine").iterdir())
    assert len(qfiles) == 5 and all(f.name.startswith("cbf1_") for f in qfiles)
    q = canonical.loads(qfiles[0].read_bytes())
    assert q[0]["codebaseFingerprint"] == qfiles[0].stem and q[0]["foreign"] is True
    # importing twice is idempotent (merge dedupes by id)
    assert run(capsys, "import", str(ref), "--into", str(store), "--json")[1]["storeSize"] == 15


def test_import_refuses_tampered_and_baseline_free_vectors(ref: Path, tmp_path: Path) -> None:
    db = sqlite3.connect(ref)
    db.execute("INSERT INTO vectors VALUES ('ghost', 'rom', ?, NULL)", (struct.pack("<128f", *[0.0] * 128),))
    db.commit()
    db.close()
    assert main(["import", str(ref), "--into", str(tmp_path / "s")]) == 2
    assert not (tmp_path / "s" / "memory-records.json").exists()
    db = sqlite3.connect(ref)
    db.execute("DELETE FROM vectors")
    db.execute("UPDATE memory SET payload = replace(payload, 'flaky', 'calm') WHERE id = 'mem-201-00001'")
    db.commit()
    db.close()
    assert main(["import", str(ref), "--into", str(tmp_path / "s")]) == 4
    assert not (tmp_path / "s" / "memory-records.json").exists()


def test_import_discards_foreign_vectors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from acx.core.cartridge import CartridgeWriter
    from acx.core.signing import LocalEd25519Signer

    r = tiny("m-1")
    with CartridgeWriter(
        tmp_path / "v.acx",
        artifact_id="a",
        artifact_version="1",
        embedding_engine={"id": "foreign-engine", "dim": 4},
    ) as w:
        w.add_memory(r, "rom", [1.0, 0.0, 0.0, 0.0])
        w.finalize(LocalEd25519Signer(), "com.example")
    code, doc = run(capsys, "import", str(tmp_path / "v.acx"), "--into", str(tmp_path / "s"), "--json")
    assert code == 0 and doc["discardedVectors"] == 1 and doc["engine"]["id"] == "local-hash-128"
    vec = canonical.loads((tmp_path / "s" / "vectors.json").read_bytes())
    assert len(vec["vectors"]["m-1"]) == 128


def test_import_reindexes_with_the_stores_engine_and_never_reads_a_cartridges_vectors(tmp_path: Path) -> None:
    """Vectors tagged with the importer's own engine are not trusted either: the store's vectors are
    recomputed from memory-records.json (the cartridge's here are all ones: never a hash vector)."""
    from acx.cli.offline_cartridge import import_cartridge
    from acx.core.cartridge import CartridgeWriter
    from acx.core.embedding import embed_record
    from acx.core.signing import LocalEd25519Signer

    r = tiny("m-1")
    with CartridgeWriter(
        tmp_path / "v.acx",
        artifact_id="a",
        artifact_version="1",
        embedding_engine={"id": "local-hash-128", "dim": 128},
    ) as w:
        w.add_memory(r, "rom", [1.0] * 128)
        w.finalize(LocalEd25519Signer(), "com.example")
    doc = import_cartridge(str(tmp_path / "v.acx"), tmp_path / "hash")
    stored = canonical.loads((tmp_path / "hash" / "vectors.json").read_bytes())
    assert doc["cartridgeEngine"] == doc["engine"] == stored["engine"] == {"id": "local-hash-128", "dim": 128}
    (record,) = canonical.loads((tmp_path / "hash" / "memory-records.json").read_bytes())
    assert stored["vectors"]["m-1"] == embed_record(record) != [1.0] * 128
    assert doc["discardedVectors"] == 1 and record["embeddingEngine"] == "local-hash-128"

    class Axes:
        id, dim, lexical = "test-axes-2", 2, False

        def embed(self, texts: list[str]) -> list[list[float]]:
            return [[1.0, float(len(t))] for t in texts]

    doc = import_cartridge(str(tmp_path / "v.acx"), tmp_path / "axes", engine=Axes())
    stored = canonical.loads((tmp_path / "axes" / "vectors.json").read_bytes())
    assert doc["engine"] == stored["engine"] == {"id": "test-axes-2", "dim": 2}
    (record,) = canonical.loads((tmp_path / "axes" / "memory-records.json").read_bytes())
    text = f"{record['title']}\n\n{record['summary']}"
    assert (
        stored["vectors"] == {"m-1": [1.0, float(len(text))]} and record["embeddingEngine"] == "test-axes-2"
    )
