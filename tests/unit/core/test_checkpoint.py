"""C2SP signed-note checkpoints: format, key ids, signature checks."""

from __future__ import annotations

import base64
import hashlib

import pytest

from acx.core import checkpoint as ck
from acx.core.signing import LocalEd25519Signer, raw_ed25519

ROOT = hashlib.sha256(b"root").digest()
CP = ck.Checkpoint("dev.acx.local/t1/pkg", 7, ROOT, "ab" * 32)


@pytest.fixture(scope="module")
def signer() -> LocalEd25519Signer:
    return LocalEd25519Signer()


def test_format_and_roundtrip(signer: LocalEd25519Signer) -> None:
    text = ck.sign_checkpoint(CP, "acx-log", signer)
    lines = text.split("\n")
    assert lines[:4] == [
        "dev.acx.local/t1/pkg",
        "7",
        base64.b64encode(ROOT).decode(),
        "chain-head " + "ab" * 32,
    ]
    assert lines[4] == "" and lines[5].startswith("\u2014 acx-log ") and lines[6] == ""
    vkey = ck.verifier_key_for("acx-log", signer)
    assert ck.verify_checkpoint(text, vkey) == CP
    assert ck.parse_checkpoint(text) == CP


def test_key_id_matches_c2sp_definition(signer: LocalEd25519Signer) -> None:
    pub = raw_ed25519(signer.public_key_der())
    expected = hashlib.sha256(b"acx-log\n\x01" + pub).digest()[:4]
    vkey = ck.verifier_key("acx-log", pub)
    b64 = base64.b64encode(bytes([1]) + pub).decode()
    assert vkey == f"acx-log+{expected.hex()}+{b64}"
    sig_line = ck.sign_checkpoint(CP, "acx-log", signer).split("\n")[5]
    assert base64.b64decode(sig_line.split(" ")[2])[:4] == expected


def test_rejects_tampered_body_wrong_key_and_garbage(signer: LocalEd25519Signer) -> None:
    text = ck.sign_checkpoint(CP, "acx-log", signer)
    vkey = ck.verifier_key_for("acx-log", signer)
    with pytest.raises(ck.CheckpointError):
        ck.verify_checkpoint(text.replace("\n7\n", "\n8\n"), vkey)
    other = ck.verifier_key_for("acx-log", LocalEd25519Signer())
    with pytest.raises(ck.CheckpointError):
        ck.verify_checkpoint(text, other)
    renamed = ck.verifier_key_for("other", signer)
    with pytest.raises(ck.CheckpointError, match="no signature"):
        ck.verify_checkpoint(text, renamed)
    sig = text.split("\n")[5].split(" ")[2]
    raw = bytearray(base64.b64decode(sig))
    raw[10] ^= 1
    forged = text.replace(sig, base64.b64encode(bytes(raw)).decode())
    with pytest.raises(ck.CheckpointError, match="does not verify"):
        ck.verify_checkpoint(forged, vkey)
    for bad in ("", "x\n", text.replace("\n\n", "\n"), text.replace("chain-head", "chainhead"), text[:-1]):
        with pytest.raises(ck.CheckpointError):
            ck.verify_checkpoint(bad, vkey)
    with pytest.raises(ck.CheckpointError):
        ck.verify_checkpoint(text, vkey.replace("+", "+00", 1))


def test_rejects_non_canonical_size(signer: LocalEd25519Signer) -> None:
    vkey = ck.verifier_key_for("acx-log", signer)
    text = ck.sign_checkpoint(CP, "acx-log", signer).replace("\n7\n", "\n07\n")
    with pytest.raises(ck.CheckpointError):
        ck.verify_checkpoint(text, vkey)
