"""Trust taxonomy on cartridges we write: tamper cases, registry eligibility, local, inclusion proofs."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from acx.core import canonical, dsse
from acx.core.cartridge import CartridgeWriter, log_attestation
from acx.core.signing import LocalEd25519Signer, PublicKey
from acx.core.trust import evaluate
from tests.factories import tiny

PUB = "com.example.team"


def rec(i: int) -> dict:
    return tiny(f"m-{i}", title=f"t{i}")


def build(path: Path, signer: LocalEd25519Signer, attestation: bytes | None = None, n: int = 4) -> str:
    with CartridgeWriter(path, artifact_id="a", artifact_version="1") as w:
        for i in range(n):
            w.add_memory(rec(i), "rom")
        w.add_file("rom/knowledge/A.md", b"# a\n")
        if attestation is not None:
            log_attestation.write(w, attestation)
        return w.finalize(signer, PUB).manifest_hash


def registry_for(signer: LocalEd25519Signer, **over: object) -> dict:
    key = PublicKey.from_der(signer.public_key_der())
    entry = {
        "keyid": key.keyid,
        "publisherId": PUB,
        "algorithm": "ed25519",
        "publicKeyPem": key.pem,
        "status": "active",
        "notBefore": "2020-01-01T00:00:00Z",
        "notAfter": "2099-01-01T00:00:00Z",
        "namespaceProof": {
            "method": "dns-txt",
            "txtRecord": "_acx-challenge.team.example.com",
            "verifiedAt": "2025-01-01T00:00:00Z",
        },
    }
    entry.update(over)
    return {"schemaVersion": "acx.trust-registry/1", "keys": [entry]}


@pytest.fixture
def signed(tmp_path: Path) -> tuple[Path, LocalEd25519Signer]:
    signer = LocalEd25519Signer()
    build(tmp_path / "c.acx", signer)
    return tmp_path / "c.acx", signer


def test_unknown_registered_and_own(signed: tuple[Path, LocalEd25519Signer]) -> None:
    path, signer = signed
    assert evaluate(path).verdict == "portable"
    assert evaluate(path, registry_for(LocalEd25519Signer())).verdict == "portable"
    v = evaluate(path, registry_for(signer))
    assert v.verdict == "trusted" and v.publisherId == PUB
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
        build(path, signer)
        _edit(path, sql, args)
        v = evaluate(path, reg)
        assert v.verdict == "tampered", (name, v.reasons)


def test_wrong_key_and_subject_mismatch_are_tampered(tmp_path: Path) -> None:
    signer = LocalEd25519Signer()
    path = tmp_path / "c.acx"
    build(path, signer)
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


def _log(n: int, signer: LocalEd25519Signer) -> tuple[str, str, list[bytes]]:
    from acx.core import merkle
    from acx.core.checkpoint import Checkpoint, sign_checkpoint, verifier_key_for

    entries = [bytes([i]) * 32 for i in range(n)]
    root = merkle.root_of_leaf_hashes([merkle.leaf_hash(e) for e in entries])
    cp = Checkpoint(origin="com.example.team/t/p", size=n, root=root, chain_head="0" * 64)
    return sign_checkpoint(cp, "log", signer), verifier_key_for("log", signer), entries


def _attestation(n_log: int, ids: list[int], signer: LocalEd25519Signer, corrupt: bool = False) -> bytes:
    from acx.core import merkle

    text, vkey, entries = _log(n_log, signer)
    hashes = [merkle.leaf_hash(e) for e in entries]
    get = merkle.from_leaves(hashes)
    proofs = []
    for i in ids:
        proof = [p.hex() for p in merkle.inclusion_proof(i, n_log, get)]
        if corrupt and i == ids[-1]:
            proof[0] = "00" * 32
        proofs.append(
            {
                "memoryId": f"m-{i}",
                "contentHash": "0" * 64,
                "entryHash": entries[i].hex(),
                "index": i,
                "proof": proof,
            }
        )
    return canonical.dumps({"checkpoint": text, "verifierKey": vkey, "proofs": proofs})


def test_inclusion_proofs_checked(tmp_path: Path) -> None:
    signer, log_signer = LocalEd25519Signer(), LocalEd25519Signer()
    reg = registry_for(signer)
    good = tmp_path / "good.acx"
    build(good, signer, _attestation(7, [0, 1, 2, 3], log_signer))
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
    build(bad, signer, _attestation(7, [0, 1, 2, 3], log_signer, corrupt=True))
    v = evaluate(bad, reg)
    assert v.verdict == "tampered" and v.inclusion["failed"] == 1
    missing = tmp_path / "missing.acx"
    build(missing, signer, _attestation(7, [0, 1, 2], log_signer))
    assert evaluate(missing, reg).verdict == "tampered"
    forged = tmp_path / "forged.acx"
    doc = json.loads(_attestation(7, [0, 1, 2, 3], log_signer))
    doc["checkpoint"] = doc["checkpoint"].replace("\n7\n", "\n8\n")
    build(forged, signer, canonical.dumps(doc))
    v = evaluate(forged, reg)
    assert v.verdict == "tampered" and any("checkpoint" in r for r in v.reasons)
