"""Trust, continued: a cartridge already open is judged like its path, and with no public key at all
the verdict names the envelope's keyid that sorts first (whatever order the signatures come in).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from acx.core.cartridge import CartridgeReader
from acx.core.signing import LocalEd25519Signer
from acx.core.trust import evaluate
from tests.unit.core.test_trust import build, registry_for


def test_an_open_reader_is_judged_like_its_path(tmp_path: Path) -> None:
    signer = LocalEd25519Signer()
    path = tmp_path / "a.acx"
    build(path, signer)
    by_path = evaluate(path, registry_for(signer))
    with CartridgeReader(path) as reader:
        by_reader = evaluate(reader, registry_for(signer))
    assert by_reader.verdict == "trusted"
    assert by_reader == by_path


def test_without_a_public_key_the_first_sorted_envelope_keyid_is_named(tmp_path: Path) -> None:
    signer = LocalEd25519Signer()
    path = tmp_path / "a.acx"
    build(path, signer)
    with sqlite3.connect(path) as db:
        (envelope,) = db.execute("SELECT envelope FROM signatures").fetchone()
        doc = json.loads(envelope)
        real = doc["signatures"][0]
        doc["signatures"] = [
            real,
            {"keyid": "0-first", "sig": real["sig"]},
            {"keyid": "zz-last", "sig": real["sig"]},
        ]
        db.execute("UPDATE signatures SET public_key_pem = NULL, envelope = ?", (json.dumps(doc),))
    v = evaluate(path, registry_for(signer))
    assert v.keyid == "0-first"
    assert "no public key to verify the envelope with" in v.reasons
    assert v.verdict != "trusted"
