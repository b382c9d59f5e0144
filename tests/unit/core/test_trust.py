"""Trust taxonomy on cartridges we write: tamper cases, registry eligibility, local, inclusion proofs."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acx.core import canonical, dsse, trust
from acx.core.cartridge import CartridgeReader
from acx.core.signing import LocalEd25519Signer, PublicKey
from acx.core.trust import evaluate
from tests.factories import PUBLISHER, inclusion_attestation, registry_for, signed_cartridge


@pytest.fixture
def signed(tmp_path: Path) -> tuple[Path, LocalEd25519Signer]:
    signer = LocalEd25519Signer()
    signed_cartridge(tmp_path / "c.acx", signer)
    return tmp_path / "c.acx", signer


def test_unknown_registered_and_own(signed: tuple[Path, LocalEd25519Signer]) -> None:
    path, signer = signed
    assert evaluate(path).verdict == "portable"
    assert evaluate(path, registry_for(LocalEd25519Signer())).verdict == "portable"
    v = evaluate(path, registry_for(signer))
    assert v.verdict == "trusted" and v.publisherId == PUBLISHER
    assert evaluate(path, registry_for(signer), own_keyids={v.keyid}).verdict == "local"
    assert evaluate(path, None, own_keyids={v.keyid}).verdict == "portable"  # local needs trusted first


@pytest.mark.parametrize(
    "over, why",
    [
        ({"status": "revoked"}, "status"),
        ({"notAfter": "2021-01-01T00:00:00Z"}, "not valid at"),
        ({"notBefore": "2098-01-01T00:00:00Z"}, "not valid at"),
        ({"namespaceProof": None}, "namespace proof"),
        (
            {
                "namespaceProof": {
                    "method": "dns-txt",
                    "txtRecord": "_acx-challenge.evil.com",
                    "verifiedAt": "x",
                }
            },
            "namespace proof",
        ),
        ({"publisherId": "com.other"}, "publisherId"),
        ({"algorithm": "ecdsa-p256"}, "algorithm"),
    ],
)
def test_ineligible_registry_entries_are_portable(
    signed: tuple[Path, LocalEd25519Signer], over: dict, why: str
) -> None:
    path, signer = signed
    v = evaluate(path, registry_for(signer, **over))
    assert v.verdict == "portable"
    assert any(why in r for r in v.reasons), v.reasons


def test_registry_with_private_key_or_wrong_schema_refused(signed: tuple[Path, LocalEd25519Signer]) -> None:
    path, signer = signed
    reg = registry_for(signer)
    reg["keys"][0]["privateKeyPem"] = "-----BEGIN PRIVATE KEY-----"
    assert evaluate(path, reg).verdict == "portable"
    reg = registry_for(signer)
    reg["schemaVersion"] = "other/1"
    assert evaluate(path, reg).verdict == "portable"


def test_expiry_is_judged_at_evaluation_time(signed: tuple[Path, LocalEd25519Signer]) -> None:
    path, signer = signed
    reg = registry_for(signer)
    assert evaluate(path, reg, now=datetime(2100, 1, 1, tzinfo=UTC)).verdict == "portable"


def _edit(path: Path, sql: str, args: tuple = ()) -> None:
    db = sqlite3.connect(path)
    db.execute(sql, args)
    db.commit()
    db.close()


def test_tamper_cases(tmp_path: Path) -> None:
    signer = LocalEd25519Signer()
    reg = registry_for(signer)
    cases = {
        "stale oid": ("UPDATE sqlar SET data = ? WHERE name = 'rom/knowledge/A.md'", (b"# b\n",)),
        "payload": ("UPDATE memory SET payload = replace(payload, '\"t1\"', '\"t9\"') WHERE id = 'm-1'", ()),
        "malformed envelope": ("UPDATE signatures SET envelope = '{\"payloadType\":1}'", ()),
        "bad sig": ('UPDATE signatures SET envelope = replace(envelope, \'"sig":"\', \'"sig":"AAAA\')', ()),
        "zone move": ("UPDATE objects SET zone = 'save' WHERE source_ref = 'memory:m-2'", ()),
        "uncovered row": (
            "INSERT INTO memory SELECT 'm-x', zone, artifact_fingerprint, codebase_fingerprint,"
            " replace(payload, '\"m-0\"', '\"m-x\"'), oid, created_at FROM memory WHERE id = 'm-0'",
            (),
        ),
        "dropped object": ("DELETE FROM objects WHERE source_ref = 'memory:m-3'", ()),
    }
    for name, (sql, args) in cases.items():
        path = tmp_path / f"{name}.acx"
        signed_cartridge(path, signer)
        _edit(path, sql, args)
        v = evaluate(path, reg)
        assert v.verdict == "tampered", (name, v.reasons)


def test_wrong_key_and_subject_mismatch_are_tampered(tmp_path: Path) -> None:
    signer = LocalEd25519Signer()
    path = tmp_path / "c.acx"
    signed_cartridge(path, signer)
    other = PublicKey.from_der(LocalEd25519Signer().public_key_der())
    assert evaluate(path, registry_for(signer), other.pem).verdict == "tampered"
    # validly signed statement whose subject digest is not the manifest hash
    db = sqlite3.connect(path)
    st = dsse.parse_envelope(db.execute("SELECT envelope FROM signatures").fetchone()[0]).statement()
    st["subject"][0]["digest"]["sha256"] = "0" * 64
    db.execute("UPDATE signatures SET envelope = ?", (dsse.envelope_json(dsse.sign_statement(st, signer)),))
    db.commit()
    db.close()
    v = evaluate(path, registry_for(signer))
    assert v.verdict == "tampered" and any("subject digest" in r for r in v.reasons)


def test_inclusion_proofs_checked(tmp_path: Path) -> None:
    signer, log_signer = LocalEd25519Signer(), LocalEd25519Signer()
    reg = registry_for(signer)
    good = tmp_path / "good.acx"
    signed_cartridge(good, signer, inclusion_attestation(7, [0, 1, 2, 3], log_signer))
    v = evaluate(good, reg)
    assert v.verdict == "trusted", v.reasons
    assert v.inclusion == {
        "present": True,
        "checked": 4,
        "failed": 0,
        "origin": "com.example.team/t/p",
        "treeSize": 7,
        "root": v.inclusion["root"],
    }
    bad = tmp_path / "bad.acx"
    signed_cartridge(bad, signer, inclusion_attestation(7, [0, 1, 2, 3], log_signer, corrupt=True))
    v = evaluate(bad, reg)
    assert v.verdict == "tampered" and v.inclusion["failed"] == 1
    missing = tmp_path / "missing.acx"
    signed_cartridge(missing, signer, inclusion_attestation(7, [0, 1, 2], log_signer))
    assert evaluate(missing, reg).verdict == "tampered"
    forged = tmp_path / "forged.acx"
    doc = json.loads(inclusion_attestation(7, [0, 1, 2, 3], log_signer))
    doc["checkpoint"] = doc["checkpoint"].replace("\n7\n", "\n8\n")
    signed_cartridge(forged, signer, canonical.dumps(doc))
    v = evaluate(forged, reg)
    assert v.verdict == "tampered" and any("checkpoint" in r for r in v.reasons)


# Trust registry rules one at a time: each way an entry fails to vouch for a key, named by its reason.
#
# The registry is assumed authentic (see acx.core.trust); the cartridge, its keyid and its publisherId
# are the attacker's. A check that stops refusing would turn a ``portable`` cartridge ``trusted``.

SIGNER = LocalEd25519Signer()
KEY = PublicKey.from_der(SIGNER.public_key_der())
AT = datetime(2026, 6, 1, tzinfo=UTC)


def entry(**over: Any) -> dict[str, Any]:
    e: dict[str, Any] = dict(registry_for(SIGNER)["keys"][0])
    e.update(over)
    return e


def reasons(
    e: dict[str, Any], publisher: str | None = PUBLISHER, algorithm: str = "ed25519", at: datetime = AT
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
    signed_cartridge(path, SIGNER)
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
    signed_cartridge(path, SIGNER)
    assert trust.evaluate(path, registry_for(SIGNER), own_keyids=[KEY.keyid], now=AT).verdict == "local"
    assert trust.evaluate(path, None, own_keyids=[KEY.keyid], now=AT).verdict == "portable"
    v = trust.evaluate(path, registry_for(SIGNER), own_keyids=["ed25519:other"], now=AT)
    assert v.verdict == "trusted" and v.publisherId == PUBLISHER and v.keyid == KEY.keyid
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
    signed_cartridge(path, SIGNER)
    _edit(path, "DELETE FROM signatures")
    v = trust.evaluate(path, registry_for(SIGNER), now=AT)
    assert (v.verdict, v.reasons, v.publisherId) == ("legacy", ["no signature envelope"], PUBLISHER)
    _edit(path, "UPDATE sqlar SET data = ? WHERE name = 'rom/knowledge/A.md'", (b"# b\n",))
    v = trust.evaluate(path, registry_for(SIGNER), now=AT)
    assert v.verdict == "tampered" and v.reasons and "no signature envelope" not in v.reasons


def test_a_bad_public_key_given_by_the_caller_is_an_error_not_a_verdict(tmp_path: Path) -> None:
    path = tmp_path / "c.acx"
    signed_cartridge(path, SIGNER)
    with pytest.raises(ValueError, match="--public-key given is not"):
        trust.evaluate(path, None, "not a pem", now=AT)
    _edit(path, "UPDATE signatures SET public_key_pem = 'not a pem'")
    v = trust.evaluate(path, None, now=AT)
    assert v.verdict == "tampered" and any("public_key_pem is not a usable" in r for r in v.reasons)


def test_only_an_embedded_key_is_called_self_consistency(tmp_path: Path) -> None:
    path = tmp_path / "c.acx"
    signed_cartridge(path, SIGNER)
    embedded = trust.evaluate(path, None, now=AT)
    given = trust.evaluate(path, None, KEY.pem, now=AT)
    note = "verified with the key embedded in the cartridge (self-consistency only)"
    assert embedded.verdict == given.verdict == "portable"
    assert note in embedded.reasons and note not in given.reasons


def test_a_signature_row_whose_alg_disagrees_with_the_key_is_tampered(tmp_path: Path) -> None:
    path = tmp_path / "c.acx"
    signed_cartridge(path, SIGNER)
    _edit(path, "UPDATE signatures SET alg = 'ecdsa-p256'")
    v = trust.evaluate(path, registry_for(SIGNER), now=AT)
    assert v.verdict == "tampered" and any(
        "signatures.alg 'ecdsa-p256' does not match" in r for r in v.reasons
    )


def test_the_first_subject_is_the_one_checked(tmp_path: Path) -> None:
    path = tmp_path / "c.acx"
    signed_cartridge(path, SIGNER)
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
    signed_cartridge(path, SIGNER)
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
    signed_cartridge(path, SIGNER)
    _resign(path, lambda st: (st["predicate"].pop("fileCount"), st["predicate"].pop("checksumHash")))
    assert trust.evaluate(path, registry_for(SIGNER), now=AT).verdict == "trusted"


@pytest.mark.parametrize(
    "document",
    [b"not json", b"{}", canonical.dumps({"checkpoint": "x", "verifierKey": "y"}), b'{"proofs": []}'],
    ids=["not-json", "empty", "no-proofs", "no-checkpoint"],
)
def test_a_malformed_checkpoint_attestation_is_tampered(tmp_path: Path, document: bytes) -> None:
    path = tmp_path / "c.acx"
    signed_cartridge(path, SIGNER, document)
    v = trust.evaluate(path, registry_for(SIGNER), now=AT)
    assert v.verdict == "tampered"
    assert any("log checkpoint" in r for r in v.reasons), v.reasons


def test_a_checkpoint_attestation_with_proofs_not_a_list_is_malformed(tmp_path: Path) -> None:
    doc = canonical.loads(inclusion_attestation(4, [0, 1, 2, 3], LocalEd25519Signer()))
    doc["proofs"] = {"m-0": {}}
    path = tmp_path / "c.acx"
    signed_cartridge(path, SIGNER, canonical.dumps(doc))
    v = trust.evaluate(path, registry_for(SIGNER), now=AT)
    assert v.verdict == "tampered" and any("attestation is malformed (TypeError)" in r for r in v.reasons)


def test_inclusion_failures_are_named_and_capped_at_twenty(tmp_path: Path) -> None:
    log_signer = LocalEd25519Signer()
    path = tmp_path / "c.acx"
    # 25 ROM rows, proofs for the first two only, the second corrupted.
    signed_cartridge(path, SIGNER, inclusion_attestation(25, [0, 1], log_signer, corrupt=True), n=25)
    v = trust.evaluate(path, registry_for(SIGNER), now=AT)
    assert v.verdict == "tampered"
    assert v.inclusion["checked"] == 25 and v.inclusion["failed"] == 24
    per_memory = [r for r in v.reasons if r.startswith("memory ")]
    assert len(per_memory) == 20
    assert "memory m-1: failed inclusion proof" in per_memory
    assert "memory m-2: no inclusion proof" in per_memory


# An eligible registry entry counts wherever it stands among the key's entries, and content problems
# beyond the named ones are counted, not lost.


def test_an_eligible_entry_before_an_ineligible_one_for_the_same_key_makes_it_trusted(tmp_path: Path) -> None:
    path = tmp_path / "c.acx"
    signed_cartridge(path, SIGNER)
    good = registry_for(SIGNER)["keys"][0]
    for bad in (dict(good, status="revoked"), dict(good, notAfter="2021-01-01T00:00:00Z")):
        registry = {"schemaVersion": "acx.trust-registry/1", "keys": [good, bad]}
        v = trust.evaluate(path, registry, now=AT)
        assert v.verdict == "trusted", v.reasons
        assert not any("revoked" in r or "not valid at" in r for r in v.reasons)


def test_content_problems_beyond_the_named_fifty_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "c.acx"
    signed_cartridge(path, SIGNER, n=60)
    db = sqlite3.connect(path)
    (rows,) = db.execute("SELECT count(*) FROM objects").fetchone()
    db.close()
    _edit(path, "UPDATE objects SET sz = sz + 1")  # every objects row now disagrees with its content
    v = trust.evaluate(path, registry_for(SIGNER), now=AT)
    assert v.verdict == "tampered"
    named = [r for r in v.reasons if r.endswith("size differs from objects.sz")]
    assert len(named) == 50 and rows > 50
    assert f"... {rows - 50} more content problems" in v.reasons


# The log-checkpoint inclusion check reads every proof in the list: one entry without a memoryId is
# reported, and the proofs after it are still checked against their memory rows.


def test_a_proof_without_a_memory_id_does_not_hide_the_proofs_after_it(tmp_path: Path) -> None:
    signer, log_signer = LocalEd25519Signer(), LocalEd25519Signer()
    doc = json.loads(inclusion_attestation(7, [0, 1, 2, 3], log_signer))
    doc["proofs"].insert(0, {"index": 0})
    path = tmp_path / "a.acx"
    signed_cartridge(path, signer, canonical.dumps(doc))
    v = evaluate(path, registry_for(signer))
    assert v.verdict == "tampered"
    assert v.inclusion["checked"] == 4 and v.inclusion["failed"] == 0
    assert any("missing or duplicate memoryId" in r for r in v.reasons)


# A cartridge already open is judged like its path, and with no public key at all the verdict names
# the envelope's keyid that sorts first (whatever order the signatures come in).


def test_an_open_reader_is_judged_like_its_path(tmp_path: Path) -> None:
    signer = LocalEd25519Signer()
    path = tmp_path / "a.acx"
    signed_cartridge(path, signer)
    by_path = evaluate(path, registry_for(signer))
    with CartridgeReader(path) as reader:
        by_reader = evaluate(reader, registry_for(signer))
    assert by_reader.verdict == "trusted"
    assert by_reader == by_path


def test_without_a_public_key_the_first_sorted_envelope_keyid_is_named(tmp_path: Path) -> None:
    signer = LocalEd25519Signer()
    path = tmp_path / "a.acx"
    signed_cartridge(path, signer)
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


# The full reasons of a trusted and a local verdict, and a cartridge with content problems is not also
# charged with a checksum/file-count mismatch (the checksum is judged on a clean recompute only).

VALID = "signature valid over the recomputed ROM manifest"
ACTIVE = f"key active in the registry for {PUBLISHER}"


def test_a_trusted_or_local_verdict_gives_exactly_its_reasons(tmp_path: Path) -> None:
    """Once the registry vouches for the key, the self-consistency note goes and nothing else does:
    the signature reason stays first, the registry reason follows (and the own-key reason for local),
    whether the key was the embedded one or given."""
    path = tmp_path / "c.acx"
    signed_cartridge(path, SIGNER)
    for given in (None, KEY.pem):
        v = trust.evaluate(path, registry_for(SIGNER), given, now=AT)
        assert (v.verdict, v.reasons) == ("trusted", [VALID, ACTIVE])
        v = trust.evaluate(path, registry_for(SIGNER), given, own_keyids={KEY.keyid}, now=AT)
        assert (v.verdict, v.reasons) == ("local", [VALID, ACTIVE, "signed with one of our own keys"])


def test_content_problems_are_not_also_reported_as_a_checksum_mismatch(tmp_path: Path) -> None:
    """A dropped objects row changes the ROM file count the signed predicate carries; the verdict names
    the uncovered row (and the manifest hash it changes), not a checksum/file-count mismatch too."""
    path = tmp_path / "c.acx"
    signed_cartridge(path, SIGNER)
    _edit(path, "DELETE FROM objects WHERE source_ref = 'memory:m-3'")
    v = trust.evaluate(path, registry_for(SIGNER), now=AT)
    assert v.verdict == "tampered"
    assert v.reasons[0] == "memory row m-3 is not covered by any objects row"
    assert not any("checksumHash/fileCount" in r for r in v.reasons), v.reasons
