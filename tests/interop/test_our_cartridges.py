"""Cartridges our service exports, checked by the ACX reference: verify, inspect, strip.

The service runs in process on moto (the same handlers as in AWS); each cartridge is exported through
``POST /v1/packages/{pkg}/cartridges`` and verified by the reference given the registry that
``GET /v1/trust-registry`` serves. Every cartridge here carries the log-checkpoint attestation, which
the reference must resolve like any other ROM file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from acx.core.cartridge import CartridgeReader
from acx.core.cartridge.log_attestation import LOG_CHECKPOINT_FILE
from acx.core.trust import evaluate
from tests.integration.service import Service, bundle, record, start_service
from tests.interop.conftest import Reference

CBF = "cbf1_" + "ab" * 20
KNOWLEDGE = {
    "knowledge": [{"path": "knowledge/retries.md", "content": "# Retries\nBack off with jitter.\n"}],
    "skills": [
        {
            "path": "skills/retry-budget/SKILL.md",
            "content": "---\nname: retry-budget\ndescription: Retry within a budget.\n---\nBody\n",
        }
    ],
}


def _field(i: int) -> dict[str, Any]:
    return record(i, portable=False, repoId="github.com/acme/api", codebaseFingerprint=CBF)


# package -> (bundle uploaded, ids then forgotten, export request body). "empty": its only memory
# was forgotten (a package exists once something was written to it).
PACKAGES: dict[str, tuple[dict[str, Any], list[str], dict[str, Any]]] = {
    "rom-only": (bundle([record(i) for i in range(3)]), [], {}),
    "with-save": (bundle([record(1), record(2), _field(3)]), [], {"includeFieldLearned": True}),
    "knowledge-skills": (bundle([record(1), record(2)], **KNOWLEDGE), [], {}),
    "empty": (bundle([record(1)]), ["mem-0001"], {}),
    "updated": (bundle([record(1), record(2), record(3), _field(4)]), [], {"includeFieldLearned": True}),
}
# package -> requests run after its upload: memories that changed (issue 28), exported after it
CHANGES: dict[str, list[tuple[str, str, dict[str, Any]]]] = {
    "updated": [
        ("PUT", "mem-0001", {"record": record(1, summary="Corrected: back off with full jitter.")}),
        ("PUT", "mem-0004", {"record": dict(_field(4), summary="Corrected field lesson.")}),
        ("POST", "mem-0002/invalidate", {"reason": "no longer true"}),
    ],
}
BIG = "ten-thousand"
ALL = [*PACKAGES, BIG]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Every package of PACKAGES exported once; the cartridge files and the served registry."""
    out = tmp_path_factory.mktemp("ours")
    for svc in start_service():
        result: dict[str, Any] = {"files": {}, "exports": {}}
        for pkg, (doc, forget, body) in PACKAGES.items():
            status, got = svc.call("POST", f"/v1/packages/{pkg}/bundles", body=doc)
            assert status == 201, got
            for rid in forget:
                status, got = svc.call("DELETE", f"/v1/packages/{pkg}/memories/{rid}")
                assert status == 200, got
            for method, path, change in CHANGES.get(pkg, []):
                status, got = svc.call(method, f"/v1/packages/{pkg}/memories/{path}", body=change)
                assert status == 200, got
            result["exports"][pkg] = _export(svc, pkg, body)
            result["files"][pkg] = _download(svc, pkg, result["exports"][pkg]["cartridgeId"], out)
        result["files"][BIG] = _export_big(out / f"{BIG}.acx")
        status, registry = svc.call("GET", "/v1/trust-registry", tenant=None)
        assert status == 200
        result["registry"] = registry
        yield result


def _export(svc: Service, pkg: str, body: dict[str, Any]) -> dict[str, Any]:
    status, job = svc.call("POST", f"/v1/packages/{pkg}/cartridges", body=body)
    assert status in (201, 202), job
    if status == 202:  # large packages are exported by the export function, fed by SQS
        assert svc.pump("EXPORT_QUEUE_URL", "export") >= 1
        status, job = svc.call("GET", f"/v1/packages/{pkg}/cartridges/{job['cartridgeId']}")
        assert status == 200, job
    assert job["status"] == "ready", job
    return job


def _export_big(path: Path) -> Path:
    """10,000 records through the same export flow (acx.core.export) with the service's KMS signer.

    Ingesting and exporting 10,000 records through moto's DynamoDB takes minutes (moto scans the
    partition on every query), so the log here is built in memory: a signed checkpoint over 10,002
    entries and one inclusion proof per record, exactly what ``usecases.cartridges`` passes in.
    """
    from acx.core import merkle
    from acx.core.checkpoint import Checkpoint, sign_checkpoint, verifier_key_for
    from acx.core.export import EntryProof, build_cartridge
    from acx.core.signing import LocalEd25519Signer
    from acx.usecases.deps import deps

    service = deps()
    records = [record(i) for i in range(10_000)]
    entries = [i.to_bytes(32, "big") for i in range(len(records) + 2)]
    leaves = [merkle.leaf_hash(e) for e in entries]
    tree = merkle.from_leaves(leaves)
    n = len(entries)
    log_key = LocalEd25519Signer()
    root = merkle.root_of_leaf_hashes(leaves)
    cp = Checkpoint(origin="interop/acme/big", size=n, root=root, chain_head="0" * 64)
    index = {r["id"]: i + 1 for i, r in enumerate(records)}

    def inclusion(rid: str) -> EntryProof:
        i = index[rid]
        return EntryProof(i, n, [p.hex() for p in merkle.inclusion_proof(i, n, tree)], entries[i].hex())

    result = build_cartridge(
        path,
        records,
        [],
        signer=service.signer,
        publisher_id=service.settings.publisher_id,
        checkpoint=sign_checkpoint(cp, "interop-log", log_key),
        verifier_key=verifier_key_for("interop-log", log_key),
        inclusion=inclusion,
        artifact_id="acme/ten-thousand",
        artifact_version=str(n),
        cartridge_id="ten-thousand",
    )
    assert result.counts["inclusion"]["embedded"] is True
    return path


def _download(svc: Service, pkg: str, cartridge_id: str, out: Path) -> Path:
    key = f"cartridges/acme/{pkg}/{cartridge_id}.acx"
    path = out / f"{pkg}.acx"
    s3 = boto3.client("s3", region_name="us-east-1")
    path.write_bytes(s3.get_object(Bucket=svc.env["CARTRIDGES_BUCKET"], Key=key)["Body"].read())
    return path


@pytest.mark.parametrize("pkg", ALL)
def test_reference_verifies_our_cartridge_trusted(
    pkg: str, exported: dict[str, Any], reference: Reference, tmp_path: Path
) -> None:
    path = exported["files"][pkg]
    run = reference.verify(path, exported["registry"], tmp_path)
    assert (run.field("status"), run.field("trust")) == ("verified", "trusted"), run.out + run.err
    assert run.code == 0
    # Without the registry the signature still verifies, but nobody vouches for the key.
    assert reference.verify(path, None, tmp_path).field("trust") == "portable"


@pytest.mark.parametrize("pkg", ALL)
def test_our_cartridge_carries_the_log_attestation_as_a_rom_file(pkg: str, exported: dict[str, Any]) -> None:
    """The thing the reference used to reject is there, bound by the manifest, and still checked by us."""
    path = exported["files"][pkg]
    v = evaluate(path, exported["registry"])
    assert v.verdict == "trusted", v.reasons
    with CartridgeReader(path) as r:
        assert LOG_CHECKPOINT_FILE in r.file_names()
        assert any(e["sourceRef"] == LOG_CHECKPOINT_FILE for e in r.manifest())
        assert r.attestations() == []
        rom = r.counts()["memory"].get("rom", 0)
        # The id the API handed out is the one the signature covers.
        if pkg in exported["exports"]:
            assert r.meta()["acx.cartridge_id"] == exported["exports"][pkg]["cartridgeId"]
    assert v.inclusion["present"] is True and v.inclusion["checked"] == rom and v.inclusion["failed"] == 0


def test_exports_hold_what_their_package_holds(exported: dict[str, Any]) -> None:
    counts = {pkg: CartridgeReader(p).counts() for pkg, p in exported["files"].items()}
    assert counts["rom-only"]["memory"] == {"rom": 3}
    assert counts["with-save"]["memory"] == {"rom": 2, "save": 1}
    assert counts["empty"]["memory"] == {}
    assert counts["ten-thousand"]["memory"] == {"rom": 10_000}
    assert counts["updated"]["memory"] == {"rom": 2, "save": 1}  # the invalidated one left
    with CartridgeReader(exported["files"]["knowledge-skills"]) as r:
        assert {"rom/knowledge/retries.md", "rom/skills/retry-budget/SKILL.md"} <= set(r.file_names())


@pytest.mark.parametrize("pkg", ALL)
def test_reference_inspects_our_cartridge(pkg: str, exported: dict[str, Any], reference: Reference) -> None:
    path = exported["files"][pkg]
    run = reference.run("inspect", path)
    assert run.code == 0 and run.err.strip() == "", run.err
    meta = CartridgeReader(path).meta()
    assert f"acx.cartridge_id = {meta['acx.cartridge_id']}" in run.out
    assert f"acx.rom_manifest_hash = {meta['acx.rom_manifest_hash']}" in run.out
    if pkg == "knowledge-skills":
        assert "- retry-budget: Retry within a budget." in run.out


@pytest.mark.parametrize("pkg", ALL)
def test_reference_strips_our_cartridge_with_hash_equality(
    pkg: str, exported: dict[str, Any], reference: Reference, tmp_path: Path
) -> None:
    path = exported["files"][pkg]
    out = tmp_path / "stripped.acx"
    run = reference.run("strip", path, out)
    assert run.code == 0 and "EQUAL (ROM intact; SAVE removed)" in run.out, run.out + run.err
    signed = CartridgeReader(path).meta()["acx.rom_manifest_hash"]
    assert f"rom hash after  strip: {signed}" in run.out
    assert reference.verify(out, exported["registry"], tmp_path).field("trust") == "trusted"
    with CartridgeReader(out) as r:
        assert "save" not in r.counts()["memory"]
    assert evaluate(out, exported["registry"]).verdict == "trusted"


def test_reference_loader_accepts_the_registry_we_serve(
    exported: dict[str, Any], reference: Reference, tmp_path: Path
) -> None:
    reg = tmp_path / "registry.json"
    reg.write_text(json.dumps(exported["registry"]), encoding="utf-8")
    run = reference.node_eval(
        "import { loadTrustRegistry } from 'REF/trust.mjs';"
        "const r = loadTrustRegistry(process.argv[process.argv.length - 1]);"
        "console.log(JSON.stringify([...r.byKeyId.keys()]));",
        str(reg),
    )
    assert run.code == 0, run.err
    assert json.loads(run.out) == [k["keyid"] for k in exported["registry"]["keys"]]


def test_reference_calls_an_edited_export_tampered(
    exported: dict[str, Any], reference: Reference, tmp_path: Path
) -> None:
    """The peer is not a rubber stamp: editing our attestation file after signing is caught by it."""
    import shutil
    import sqlite3

    path = tmp_path / "edited.acx"
    shutil.copyfile(exported["files"]["rom-only"], path)
    db = sqlite3.connect(path)
    (data,) = db.execute("SELECT data FROM sqlar WHERE name = ?", (LOG_CHECKPOINT_FILE,)).fetchone()
    edited = bytes(data).replace(b'"index":0', b'"index":1')
    assert edited != bytes(data)
    db.execute("UPDATE sqlar SET data = ? WHERE name = ?", (edited, LOG_CHECKPOINT_FILE))
    db.commit()
    db.close()
    run = reference.verify(path, exported["registry"], tmp_path)
    assert run.field("trust") == "tampered" and run.code != 0
    assert evaluate(path, exported["registry"]).verdict == "tampered"


def test_versions_travel_in_a_rom_file_the_reference_ignores(exported: dict[str, Any]) -> None:
    """Only the current versions are exported; their validity and lineage are in the extension, which
    the manifest binds (the reference verifies, inspects and strips the cartridge above: ``trusted``)."""
    from acx.core.cartridge import validity

    with CartridgeReader(exported["files"]["updated"]) as r:
        records = {m["id"]: m for m in r.memory_records()}
        doc = validity.read(r)
        assert any(e["sourceRef"] == validity.VALIDITY_FILE for e in r.manifest())
    assert records["mem-0001"]["summary"] == "Corrected: back off with full jitter."
    assert doc is not None and doc["schema"] == "acx.memory-versions/1"
    by_id = {m["memoryId"]: m for m in doc["memories"]}
    assert set(by_id) == {"mem-0001", "mem-0003"}  # ROM memories only (strip-to-ROM keeps it whole)
    assert by_id["mem-0001"]["versions"] == 2 and by_id["mem-0001"]["supersedes"] is not None
    assert by_id["mem-0003"]["versions"] == 1 and by_id["mem-0003"]["supersedes"] is None
    for pkg in PACKAGES:
        if pkg != "updated":
            with CartridgeReader(exported["files"][pkg]) as r:
                assert validity.read(r) is None  # nothing changed there: no extension


@pytest.mark.parametrize("pkg", ["rom-only", "with-save", "updated"])
def test_our_cartridges_vectors_are_the_references_engine_of_their_payloads(
    pkg: str, exported: dict[str, Any], reference: Reference, tmp_path: Path
) -> None:
    """The vectors ride tagged with ``local-hash-128`` and are what the reference's engine makes of the
    exported payloads, as float32, bit for bit (a consumer still re-indexes: ACX §7.6)."""
    import sqlite3
    import struct

    path = exported["files"][pkg]
    with CartridgeReader(path) as r:
        assert r.embedding_engine() == {"id": "local-hash-128", "dim": 128}
        payloads = {m["id"]: m for m in r.memory_records()}
    db = sqlite3.connect(path)
    blobs = dict(db.execute("SELECT memory_id, embedding FROM vectors").fetchall())
    db.close()
    assert set(blobs) == set(payloads) and blobs
    data = tmp_path / "records.json"
    ids = sorted(payloads)
    data.write_text(json.dumps([payloads[i] for i in ids]), encoding="utf-8")
    run = reference.node_eval(
        "import { readFileSync } from 'node:fs'; import { embedMemory } from 'REF/embed.mjs';"
        "const recs = JSON.parse(readFileSync(process.argv[process.argv.length - 1], 'utf8'));"
        "console.log(JSON.stringify(recs.map((r) => embedMemory(r))));",
        str(data),
    )
    assert run.code == 0, run.err
    for rid, vector in zip(ids, json.loads(run.out), strict=True):
        assert bytes(blobs[rid]) == struct.pack("<128f", *vector), rid
