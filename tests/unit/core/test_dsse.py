"""DSSE PAE, envelope round trips and malformed envelopes."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from acx.core import dsse
from acx.core.signing import LocalEd25519Signer, PublicKey
from tests import factories


def statement_for(digest: str = "a" * 64) -> dict:
    return factories.statement(manifest_hash="sha256:" + digest)


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
    ours = statement_for()
    assert set(ours["predicate"]) == set(ref["predicate"])
    assert (
        set(ours) == set(ref)
        and ours["_type"] == ref["_type"]
        and ours["predicateType"] == ref["predicateType"]
    )
    assert list(env) == list(json.loads(dsse.envelope_json(dsse.sign_statement(ours, LocalEd25519Signer()))))


@pytest.mark.parametrize("signer_cls", [LocalEd25519Signer, factories.P256Signer])
def test_sign_verify_round_trip(signer_cls: type) -> None:
    signer = signer_cls()
    env = dsse.parse_envelope(dsse.envelope_json(dsse.sign_statement(statement_for(), signer)))
    key = PublicKey.from_der(signer.public_key_der())
    assert env.signatures[0][0] == key.keyid and key.keyid.startswith(signer.algorithm + ":")
    assert dsse.verify_envelope(env, key)
    assert env.statement()["subject"][0]["digest"]["sha256"] == "a" * 64
    other = PublicKey.from_der(signer_cls().public_key_der())
    assert not dsse.verify_envelope(env, other)
    env.payload = env.payload.replace(b"a" * 64, b"c" * 64)
    assert not dsse.verify_envelope(env, key)


def _env(**over: object) -> str:
    doc = dsse.sign_statement(statement_for(), LocalEd25519Signer())
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
        json.dumps({**statement_for(), "subject": []}).encode(),
        json.dumps({**statement_for(), "predicateType": "x"}).encode(),
    ],
)
def test_malformed_statements_raise(payload: bytes) -> None:
    with pytest.raises(dsse.DsseError):
        dsse.parse_statement(payload)


# DSSE envelopes: each malformed envelope or statement refused with its reason; keyid selection.
#
# The envelope arrives inside a cartridge anyone can hand to a verifier, so every field is attacker
# controlled; the reasons are asserted so that a guard that stops refusing shows up as a failure here.

SIGNER = LocalEd25519Signer()
KEY = PublicKey.from_der(SIGNER.public_key_der())


def statement(**over: Any) -> dict[str, Any]:
    st = factories.statement()
    st.update(over)
    return st


def envelope(**over: Any) -> str:
    doc = dsse.sign_statement(statement(), SIGNER)
    doc.update(over)
    return json.dumps(doc)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.parametrize("digest", ["a" * 64, "0" * 64])
def test_build_statement_binds_the_manifest_hash_twice_and_the_subject(digest: str) -> None:
    st = factories.statement(manifest_hash="sha256:" + digest)
    assert st["subject"] == [{"name": "com.example/x@1", "digest": {"sha256": digest}}]
    assert st["predicate"]["romDigest"] == st["predicate"]["manifestHash"] == "sha256:" + digest
    assert dsse.parse_statement(json.dumps(st).encode()) == st


@pytest.mark.parametrize("bad", ["a" * 64, "sha256:" + "a" * 63, "sha256:" + "a" * 65, "sha1:" + "a" * 67])
def test_build_statement_refuses_a_manifest_hash_not_of_the_sha256_form(bad: str) -> None:
    with pytest.raises(dsse.DsseError, match="sha256:<64 hex>"):
        factories.statement(manifest_hash=bad)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("x" * (dsse.MAX_ENVELOPE_BYTES + 1), "envelope too large"),
        ("{", "envelope is not JSON"),
        ('"envelope"', "envelope is not a JSON object"),
        ("[]", "envelope is not a JSON object"),
        (envelope(payloadType="application/json"), "payloadType must be"),
        (envelope(payloadType=None), "payloadType must be"),
        (envelope(payload=None), "payload must be a base64 string"),
        (envelope(payload=123), "payload must be a base64 string"),
        (envelope(payload="e30"), "payload is not valid base64"),
        (envelope(payload="e3 0="), "payload is not valid base64"),
        (envelope(signatures=None), "envelope has no signatures"),
        (envelope(signatures=[]), "envelope has no signatures"),
        (envelope(signatures={"keyid": "k", "sig": "AA=="}), "envelope has no signatures"),
        (envelope(signatures=["AA=="]), r"signatures\[0\] must have a string keyid"),
        (envelope(signatures=[{"keyid": 1, "sig": "AA=="}]), r"signatures\[0\] must have a string keyid"),
        (
            envelope(signatures=[{"keyid": "k", "sig": "AA=="}, {"sig": "AA=="}]),
            r"signatures\[1\] must have a string keyid",
        ),
        (envelope(signatures=[{"keyid": "k"}]), r"signatures\[0\].sig must be a base64 string"),
        (envelope(signatures=[{"keyid": "k", "sig": "A"}]), r"signatures\[0\].sig is not valid base64"),
    ],
)
def test_a_malformed_envelope_is_refused_with_its_reason(text: str, reason: str) -> None:
    with pytest.raises(dsse.DsseError, match=reason):
        dsse.parse_envelope(text)


def test_an_envelope_at_the_size_limit_is_parsed() -> None:
    text = envelope()
    padded = text[:-1] + " " * (dsse.MAX_ENVELOPE_BYTES - len(text)) + "}"
    assert len(padded) == dsse.MAX_ENVELOPE_BYTES
    assert dsse.parse_envelope(padded).payload == dsse.parse_envelope(text).payload


def test_url_safe_base64_is_decoded_the_same() -> None:
    raw = bytes(range(256))
    standard = b64(raw)
    url_safe = base64.urlsafe_b64encode(raw).decode()
    assert standard != url_safe
    env = dsse.parse_envelope(envelope(signatures=[{"keyid": "k", "sig": url_safe}], payload=url_safe))
    assert env.payload == raw and env.signatures == [("k", raw)]


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"{", "statement is not JSON"),
        (b"[]", "statement _type must be"),
        (
            json.dumps(statement(_type="https://in-toto.io/Statement/v0.1")).encode(),
            "statement _type must be",
        ),
        (json.dumps(statement(predicateType=None)).encode(), "predicateType must be"),
        (json.dumps(statement(subject=None)).encode(), "statement has no subject"),
        (json.dumps(statement(subject=[])).encode(), "statement has no subject"),
        (json.dumps(statement(subject=["x"])).encode(), "statement has no subject"),
        (json.dumps(statement(subject=[{"name": "s"}])).encode(), "must be 64 hex chars"),
        (json.dumps(statement(subject=[{"digest": ["a" * 64]}])).encode(), "must be 64 hex chars"),
        (json.dumps(statement(subject=[{"digest": {"sha256": "a" * 63}}])).encode(), "must be 64 hex chars"),
        (json.dumps(statement(subject=[{"digest": {"sha256": 7}}])).encode(), "must be 64 hex chars"),
        (json.dumps(statement(predicate=None)).encode(), "statement has no predicate"),
        (json.dumps(statement(predicate=[])).encode(), "statement has no predicate"),
    ],
)
def test_a_malformed_statement_is_refused_with_its_reason(payload: bytes, reason: str) -> None:
    with pytest.raises(dsse.DsseError, match=reason):
        dsse.parse_statement(payload)
    env = dsse.Envelope(dsse.PAYLOAD_TYPE, payload, [])
    with pytest.raises(dsse.DsseError, match=reason):
        env.statement()


def test_only_a_signature_under_the_keys_id_counts() -> None:
    good = dsse.parse_envelope(envelope())
    (kid, sig) = good.signatures[0]
    assert kid == KEY.keyid and dsse.verify_envelope(good, KEY)
    # the right signature under another keyid is never tried against the key
    renamed = dsse.Envelope(good.payload_type, good.payload, [("ed25519:" + "0" * 64, sig)])
    assert not dsse.verify_envelope(renamed, KEY)
    # a bad signature under the key's id, then the good one: any good one verifies
    both = dsse.Envelope(good.payload_type, good.payload, [(kid, bytes(64)), (kid, sig)])
    assert dsse.verify_envelope(both, KEY)
    assert not dsse.verify_envelope(dsse.Envelope(good.payload_type, good.payload, [(kid, bytes(64))]), KEY)
    assert not dsse.verify_envelope(dsse.Envelope(good.payload_type, good.payload, []), KEY)


def test_the_signature_covers_the_payload_type() -> None:
    """PAE binds the type: the same payload and signature under another type do not verify."""
    good = dsse.parse_envelope(envelope())
    other = dsse.Envelope("application/json", good.payload, good.signatures)
    assert not dsse.verify_envelope(other, KEY)
    assert dsse.pae("ab", b"c") != dsse.pae("a", b"bc")


def test_envelope_json_is_compact_and_keeps_unicode() -> None:
    assert dsse.envelope_json({"a": "é", "b": [1, 2]}) == '{"a":"é","b":[1,2]}'


def test_the_envelope_limit_is_one_mebibyte() -> None:
    with pytest.raises(dsse.DsseError, match="envelope too large"):
        dsse.parse_envelope(b" " * (1_048_576 + 1))
    assert dsse.parse_envelope(envelope().ljust(1_048_576)).payload_type == dsse.PAYLOAD_TYPE


# The Statement's first subject is the one that binds the manifest hash: it alone is checked, and a
# good subject after a bad first one does not make the Statement acceptable.


def _payload(subject: object) -> bytes:
    st = factories.statement()
    st["subject"] = subject
    return json.dumps(st).encode()


def _good() -> dict:
    return factories.statement()["subject"][0]


def test_a_non_object_first_subject_is_no_subject_whatever_follows() -> None:
    with pytest.raises(dsse.DsseError, match="statement has no subject"):
        dsse.parse_statement(_payload(["x", _good()]))


def test_a_first_subject_without_a_digest_is_refused_whatever_follows() -> None:
    with pytest.raises(dsse.DsseError, match=r"subject\[0\]\.digest\.sha256 must be 64 hex chars"):
        dsse.parse_statement(_payload([{"name": "s"}, _good()]))


def test_subjects_after_a_good_first_one_are_not_read() -> None:
    st = dsse.parse_statement(_payload([_good(), "x"]))
    assert st["subject"][0] == _good()
    assert dsse.parse_statement(_payload([_good(), {"name": "no digest"}]))["subject"][1] == {
        "name": "no digest"
    }
