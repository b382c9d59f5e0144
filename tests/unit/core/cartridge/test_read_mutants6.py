"""Reading an untrusted cartridge, continued: a 99-byte header, several signature rows (the oldest is
the one read), a memory object whose row is gone or not text, two log-checkpoint documents, the
embedding-engine meta key and the public key carried in the signature row.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from acx.core.cartridge import CartridgeError, CartridgeReader
from acx.core.cartridge.log_attestation import LEGACY_ATT_ID, LEGACY_ATT_TYPE, check_inclusion
from acx.core.signing import PublicKey
from tests.factories import INSERT_ATTESTATION, LEGACY_ATTESTATION, demo_cartridge

_JSON = "application/json"
_FIRST_MEMORY_OBJECT = "SELECT source_ref FROM objects WHERE kind = 'memory' ORDER BY source_ref"


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


def test_two_log_checkpoint_documents_are_one_failure_and_present(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        db.execute(INSERT_ATTESTATION, (LEGACY_ATT_ID, LEGACY_ATT_TYPE, _JSON, LEGACY_ATTESTATION, "2026"))
        db.execute(INSERT_ATTESTATION, ("second", LEGACY_ATT_TYPE, _JSON, LEGACY_ATTESTATION, "2026"))
    with CartridgeReader(path) as r:
        assert check_inclusion(r) == ({"present": True}, ["more than one log-checkpoint attestation"])


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
