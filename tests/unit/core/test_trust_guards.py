"""Trust registry rules one at a time: each way an entry fails to vouch for a key, named by its reason.

The registry is assumed authentic (see acx.core.trust); the cartridge, its keyid and its publisherId
are the attacker's. A guard that stops refusing would turn a ``portable`` cartridge ``trusted``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acx.core import canonical, dsse, trust
from acx.core.signing import LocalEd25519Signer, PublicKey
from tests.unit.core.test_trust import PUB, _attestation, _edit, build, registry_for

SIGNER = LocalEd25519Signer()
KEY = PublicKey.from_der(SIGNER.public_key_der())
AT = datetime(2026, 6, 1, tzinfo=UTC)


def entry(**over: Any) -> dict[str, Any]:
    e: dict[str, Any] = dict(registry_for(SIGNER)["keys"][0])
    e.update(over)
    return e


def reasons(
    e: dict[str, Any], publisher: str | None = PUB, algorithm: str = "ed25519", at: datetime = AT
) -> list[str]:
    return trust.eligibility(e, KEY.keyid, publisher, algorithm, at)


def test_an_eligible_entry_has_no_reasons() -> None:
    assert reasons(entry()) == []
    assert reasons(entry(namespaceProof={"method": "manual", "verifiedAt": "2025-01-01"})) == []


@pytest.mark.parametrize(
    ("over", "reason"),
    [
        ({"status": "revoked"}, "status is 'revoked', not 'active'"),
        ({"status": None}, "status is None"),
        ({"algorithm": "ecdsa-p256"}, "algorithm 'ecdsa-p256' does not match 'ed25519'"),
        ({"publicKeyPem": PublicKey.from_der(LocalEd25519Signer().public_key_der()).pem}, "does not hash to"),
        ({"publicKeyPem": "not a key"}, "not a usable public key"),
        ({"publicKeyPem": None}, "not a usable public key"),
        ({"notBefore": None}, "lacks a valid notBefore/notAfter"),
        ({"notAfter": "soon"}, "lacks a valid notBefore/notAfter"),
        ({"notBefore": "2026-06-02T00:00:00Z"}, "not valid at"),
        ({"notAfter": "2026-05-31T23:59:59Z"}, "not valid at"),
        ({"publisherId": "com.example.other"}, "publisherId 'com.example.other' does not match"),
        ({"namespaceProof": None}, "no namespace proof"),
        ({"namespaceProof": {"method": "dns-txt"}}, "no namespace proof"),
        ({"namespaceProof": {"verifiedAt": "2025-01-01"}}, "no namespace proof"),
        (
            {
                "namespaceProof": {
                    "method": "dns-txt",
                    "verifiedAt": "2025",
                    "txtRecord": "_acx-challenge.example.com",
                }
            },
            "namespace proof '_acx-challenge.example.com' is not '_acx-challenge.team.example.com'",
        ),
    ],
)
def test_each_ineligible_entry_says_why(over: dict[str, Any], reason: str) -> None:
    got = reasons(entry(**over))
    assert len(got) == 1, got
    assert reason in got[0]


def test_the_validity_window_includes_its_ends() -> None:
    start, end = "2026-06-01T00:00:00Z", "2026-06-01T00:00:00+00:00"
    assert reasons(entry(notBefore=start, notAfter=end)) == []
    assert reasons(entry(notBefore=start), at=AT - timedelta(seconds=1)) != []
    naive = entry(notBefore="2026-06-01T00:00:00", notAfter="2026-06-01T00:00:00")
    assert reasons(naive) == []  # no offset: read as UTC


def test_no_publisher_is_never_eligible() -> None:
    for publisher in (None, ""):
        got = reasons(entry(), publisher=publisher)
        assert any("publisherId" in r for r in got)


def test_namespace_record_reverses_the_publisher_id() -> None:
    assert trust.namespace_record("com.example.team") == "_acx-challenge.team.example.com"
    assert trust.namespace_record("dev") == "_acx-challenge.dev"


@pytest.mark.parametrize(
    ("registry", "problem"),
    [
        (None, "registry is not acx.trust-registry/1"),
        ([], "registry is not acx.trust-registry/1"),
        ({"schemaVersion": "acx.trust-registry/2", "keys": []}, "registry is not"),
        ({"schemaVersion": "acx.trust-registry/1"}, "registry has no keys list"),
        ({"schemaVersion": "acx.trust-registry/1", "keys": {}}, "registry has no keys list"),
        ({"schemaVersion": "acx.trust-registry/1", "keys": [{"privateKeyPem": "x"}]}, "private key material"),
        ({"schemaVersion": "acx.trust-registry/1", "keys": [{"d": "x"}]}, "private key material"),
        (
            {"schemaVersion": "acx.trust-registry/1", "keys": [], "note": "-----BEGIN PRIVATE KEY-----"},
            "private key material",
        ),
    ],
)
def test_an_unusable_registry_is_named(registry: Any, problem: str) -> None:
    got = trust.registry_problem(registry)
    assert got is not None and problem in got


def test_a_usable_registry_has_no_problem() -> None:
    assert trust.registry_problem(registry_for(SIGNER)) is None
    assert trust.registry_problem({"schemaVersion": "acx.trust-registry/1", "keys": ["odd", 1]}) is None


def test_a_later_eligible_entry_for_the_same_key_makes_it_trusted(tmp_path: Path) -> None:
    path = tmp_path / "c.acx"
    build(path, SIGNER)
    good = registry_for(SIGNER)
    revoked = dict(good["keys"][0], status="revoked")
    registry = {"schemaVersion": "acx.trust-registry/1", "keys": [revoked, good["keys"][0]]}
    assert trust.evaluate(path, registry, now=AT).verdict == "trusted"
    only_revoked = {"schemaVersion": "acx.trust-registry/1", "keys": [revoked]}
    v = trust.evaluate(path, only_revoked, now=AT)
    assert v.verdict == "portable" and any("revoked" in r for r in v.reasons)
    # Another signer's registry entry does not vouch for this key.
    other = registry_for(LocalEd25519Signer())
    v = trust.evaluate(path, other, now=AT)
    assert v.verdict == "portable" and any("is not in the registry" in r for r in v.reasons)


def test_own_keys_are_local_only_when_trusted(tmp_path: Path) -> None:
    path = tmp_path / "c.acx"
    build(path, SIGNER)
    assert trust.evaluate(path, registry_for(SIGNER), own_keyids=[KEY.keyid], now=AT).verdict == "local"
    assert trust.evaluate(path, None, own_keyids=[KEY.keyid], now=AT).verdict == "portable"
    v = trust.evaluate(path, registry_for(SIGNER), own_keyids=["ed25519:other"], now=AT)
    assert v.verdict == "trusted" and v.publisherId == PUB and v.keyid == KEY.keyid
    assert v.to_dict()["verdict"] == "trusted"


def _resign(path: Path, change: Any) -> None:
    """Re-sign the cartridge's statement after ``change(statement)``: what the key holder can do."""
    import sqlite3

    db = sqlite3.connect(path)
    st = dsse.parse_envelope(db.execute("SELECT envelope FROM signatures").fetchone()[0]).statement()
    change(st)
    db.execute("UPDATE signatures SET envelope = ?", (dsse.envelope_json(dsse.sign_statement(st, SIGNER)),))
    db.commit()
    db.close()


def test_an_unsigned_cartridge_is_legacy_unless_its_content_is_tampered(tmp_path: Path) -> None:
    path = tmp_path / "c.acx"
    build(path, SIGNER)
    _edit(path, "DELETE FROM signatures")
    v = trust.evaluate(path, registry_for(SIGNER), now=AT)
    assert (v.verdict, v.reasons, v.publisherId) == ("legacy", ["no signature envelope"], PUB)
    _edit(path, "UPDATE sqlar SET data = ? WHERE name = 'rom/knowledge/A.md'", (b"# b\n",))
    v = trust.evaluate(path, registry_for(SIGNER), now=AT)
    assert v.verdict == "tampered" and v.reasons and "no signature envelope" not in v.reasons


def test_a_bad_public_key_given_by_the_caller_is_an_error_not_a_verdict(tmp_path: Path) -> None:
    path = tmp_path / "c.acx"
    build(path, SIGNER)
    with pytest.raises(ValueError, match="--public-key given is not"):
        trust.evaluate(path, None, "not a pem", now=AT)
    _edit(path, "UPDATE signatures SET public_key_pem = 'not a pem'")
    v = trust.evaluate(path, None, now=AT)
    assert v.verdict == "tampered" and any("public_key_pem is not a usable" in r for r in v.reasons)


def test_only_an_embedded_key_is_called_self_consistency(tmp_path: Path) -> None:
    path = tmp_path / "c.acx"
    build(path, SIGNER)
    embedded = trust.evaluate(path, None, now=AT)
    given = trust.evaluate(path, None, KEY.pem, now=AT)
    note = "verified with the key embedded in the cartridge (self-consistency only)"
    assert embedded.verdict == given.verdict == "portable"
    assert note in embedded.reasons and note not in given.reasons


def test_a_signature_row_whose_alg_disagrees_with_the_key_is_tampered(tmp_path: Path) -> None:
    path = tmp_path / "c.acx"
    build(path, SIGNER)
    _edit(path, "UPDATE signatures SET alg = 'ecdsa-p256'")
    v = trust.evaluate(path, registry_for(SIGNER), now=AT)
    assert v.verdict == "tampered" and any(
        "signatures.alg 'ecdsa-p256' does not match" in r for r in v.reasons
    )


def test_the_first_subject_is_the_one_checked(tmp_path: Path) -> None:
    path = tmp_path / "c.acx"
    build(path, SIGNER)
    _resign(path, lambda st: st["subject"].append({"name": "decoy", "digest": {"sha256": "0" * 64}}))
    assert trust.evaluate(path, registry_for(SIGNER), now=AT).verdict == "trusted"
    _resign(path, lambda st: st["subject"].reverse())
    v = trust.evaluate(path, registry_for(SIGNER), now=AT)
    assert v.verdict == "tampered" and any("subject digest" in r for r in v.reasons)


@pytest.mark.parametrize(
    ("name", "value"), [("fileCount", 99), ("checksumHash", "sha256:" + "0" * 64)], ids=["count", "checksum"]
)
def test_a_signed_predicate_with_a_wrong_file_count_or_checksum_is_tampered(
    tmp_path: Path, name: str, value: Any
) -> None:
    path = tmp_path / "c.acx"
    build(path, SIGNER)
    _resign(path, lambda st: st["predicate"].update({name: value}))
    v = trust.evaluate(path, registry_for(SIGNER), now=AT)
    assert v.verdict == "tampered" and any("checksumHash/fileCount differ" in r for r in v.reasons)
    # Either field alone is checked: drop the other and the wrong one is still caught.
    other = "checksumHash" if name == "fileCount" else "fileCount"
    _resign(path, lambda st: st["predicate"].pop(other))
    v = trust.evaluate(path, registry_for(SIGNER), now=AT)
    assert v.verdict == "tampered" and any("checksumHash/fileCount differ" in r for r in v.reasons)


def test_a_predicate_without_file_count_or_checksum_is_not_checked_for_them(tmp_path: Path) -> None:
    path = tmp_path / "c.acx"
    build(path, SIGNER)
    _resign(path, lambda st: (st["predicate"].pop("fileCount"), st["predicate"].pop("checksumHash")))
    assert trust.evaluate(path, registry_for(SIGNER), now=AT).verdict == "trusted"


@pytest.mark.parametrize(
    "document",
    [b"not json", b"{}", canonical.dumps({"checkpoint": "x", "verifierKey": "y"}), b'{"proofs": []}'],
    ids=["not-json", "empty", "no-proofs", "no-checkpoint"],
)
def test_a_malformed_checkpoint_attestation_is_tampered(tmp_path: Path, document: bytes) -> None:
    path = tmp_path / "c.acx"
    build(path, SIGNER, document)
    v = trust.evaluate(path, registry_for(SIGNER), now=AT)
    assert v.verdict == "tampered"
    assert any("log checkpoint" in r for r in v.reasons), v.reasons


def test_a_checkpoint_attestation_with_proofs_not_a_list_is_malformed(tmp_path: Path) -> None:
    doc = canonical.loads(_attestation(4, [0, 1, 2, 3], LocalEd25519Signer()))
    doc["proofs"] = {"m-0": {}}
    path = tmp_path / "c.acx"
    build(path, SIGNER, canonical.dumps(doc))
    v = trust.evaluate(path, registry_for(SIGNER), now=AT)
    assert v.verdict == "tampered" and any("attestation is malformed (TypeError)" in r for r in v.reasons)


def test_inclusion_failures_are_named_and_capped_at_twenty(tmp_path: Path) -> None:
    log_signer = LocalEd25519Signer()
    path = tmp_path / "c.acx"
    # 25 ROM rows, proofs for the first two only, the second corrupted.
    build(path, SIGNER, _attestation(25, [0, 1], log_signer, corrupt=True), n=25)
    v = trust.evaluate(path, registry_for(SIGNER), now=AT)
    assert v.verdict == "tampered"
    assert v.inclusion["checked"] == 25 and v.inclusion["failed"] == 24
    per_memory = [r for r in v.reasons if r.startswith("memory ")]
    assert len(per_memory) == 20
    assert "memory m-1: failed inclusion proof" in per_memory
    assert "memory m-2: no inclusion proof" in per_memory
