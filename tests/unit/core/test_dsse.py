"""DSSE PAE, envelope round trips and malformed envelopes."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from acx.core import dsse
from acx.core.signing import LocalEd25519Signer, PublicKey
from tests import factories


def statement(digest: str = "a" * 64) -> dict:
    return factories.statement(manifest_hash="sha256:" + digest)


class EcdsaSigner:
    algorithm = "ecdsa-p256"

    def __init__(self) -> None:
        self._k = ec.generate_private_key(ec.SECP256R1())

    def public_key_der(self) -> bytes:
        return self._k.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def sign(self, message: bytes) -> bytes:
        from cryptography.hazmat.primitives import hashes

        return self._k.sign(message, ec.ECDSA(hashes.SHA256()))


def test_pae_bytes() -> None:
    assert (
        dsse.pae("application/vnd.in-toto+json", b"hello")
        == b"DSSEv1 28 application/vnd.in-toto+json 5 hello"
    )
    assert dsse.pae("t", "é".encode()) == b"DSSEv1 1 t 2 \xc3\xa9"


def test_predicate_fields_match_the_reference(vectors_dir: Path) -> None:
    import sqlite3

    env = json.loads(
        sqlite3.connect(vectors_dir / "reference-cartridge.acx")
        .execute("SELECT envelope FROM signatures")
        .fetchone()[0]
    )
    ref = json.loads(base64.b64decode(env["payload"]))
    ours = statement()
    assert set(ours["predicate"]) == set(ref["predicate"])
    assert (
        set(ours) == set(ref)
        and ours["_type"] == ref["_type"]
        and ours["predicateType"] == ref["predicateType"]
    )
    assert list(env) == list(json.loads(dsse.envelope_json(dsse.sign_statement(ours, LocalEd25519Signer()))))


@pytest.mark.parametrize("signer_cls", [LocalEd25519Signer, EcdsaSigner])
def test_sign_verify_round_trip(signer_cls: type) -> None:
    signer = signer_cls()
    env = dsse.parse_envelope(dsse.envelope_json(dsse.sign_statement(statement(), signer)))
    key = PublicKey.from_der(signer.public_key_der())
    assert env.signatures[0][0] == key.keyid and key.keyid.startswith(signer.algorithm + ":")
    assert dsse.verify_envelope(env, key)
    assert env.statement()["subject"][0]["digest"]["sha256"] == "a" * 64
    other = PublicKey.from_der(signer_cls().public_key_der())
    assert not dsse.verify_envelope(env, other)
    env.payload = env.payload.replace(b"a" * 64, b"c" * 64)
    assert not dsse.verify_envelope(env, key)


def _env(**over: object) -> str:
    doc = dsse.sign_statement(statement(), LocalEd25519Signer())
    doc.update(over)
    return json.dumps(doc)


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        _env(payloadType="text/plain"),
        _env(payload="!!notbase64!!"),
        _env(signatures=[]),
        _env(signatures=[{"sig": "AA=="}]),
        _env(signatures=[{"keyid": "k", "sig": "@@"}]),
        '{"payloadType":"application/vnd.in-toto+json","payload":"e30=","payload":"e30=","signatures":[]}',
    ],
)
def test_malformed_envelopes_raise(text: str) -> None:
    with pytest.raises(dsse.DsseError):
        dsse.parse_envelope(text)


@pytest.mark.parametrize(
    "payload",
    [
        b"{}",
        b"[1]",
        b'{"_type":"https://in-toto.io/Statement/v1"}',
        json.dumps({**statement(), "subject": []}).encode(),
        json.dumps({**statement(), "predicateType": "x"}).encode(),
    ],
)
def test_malformed_statements_raise(payload: bytes) -> None:
    with pytest.raises(dsse.DsseError):
        dsse.parse_statement(payload)
