"""build_cartridge: quarantine default, include flag, scrub gate, inclusion attestation."""

from __future__ import annotations

from pathlib import Path

import pytest

from acx.core.cartridge import CartridgeReader
from acx.core.signing import LocalEd25519Signer, PublicKey
from acx.core.trust import evaluate

pytest.importorskip("acx.core.scrub")

from acx.core.export import EntryProof, ExportBlocked, build_cartridge
from tests.factories import FIELD_REPO, memory

CBF = "cbf1_" + "cd" * 20


def rec(i: int, portable: bool = True, summary: str = "retry with backoff") -> dict:
    return memory(
        f"m-{i}",
        portable=portable,
        title=f"lesson {i}",
        summary=summary,
        sourceType="review",
        codebaseFingerprint=None if portable else CBF,
        repoId=None if portable else FIELD_REPO,
        repoLabel="api",
        projectLabel="Acme",
        timestamp="2026-01-01T00:00:00.000Z",
        tags=["x"],
    )


RECORDS = [rec(0), rec(1), rec(2, portable=False), rec(3)]
FILES = [
    ("rom/knowledge/A.md", b"# a\n"),
    ("rom/skills/s1/SKILL.md", b"---\nname: s1\ndescription: d\n---\n"),
]


def _build(path: Path, signer: LocalEd25519Signer, **kw: object):  # type: ignore[no-untyped-def]
    return build_cartridge(
        path,
        kw.pop("records", RECORDS),
        kw.pop("files", FILES),
        signer=signer,
        publisher_id="com.example.team",
        artifact_id="a",
        artifact_version="1",
        **kw,
    )


def test_field_learned_quarantined_by_default(tmp_path: Path) -> None:
    signer = LocalEd25519Signer()
    res = _build(tmp_path / "a.acx", signer)
    assert res.quarantined == 1 and res.counts["rom"] == 3 and res.counts["save"] == 0
    assert res.keyid == PublicKey.from_der(signer.public_key_der()).keyid
    with CartridgeReader(tmp_path / "a.acx") as r:
        assert r.counts()["memory"] == {"rom": 3}
        assert r.counts()["vectors"] == {"rom": 3}
        assert r.recompute().manifest_hash == res.manifest_hash
    assert evaluate(tmp_path / "a.acx").verdict == "portable"


def test_include_flag_exports_field_learned_as_save(tmp_path: Path) -> None:
    res = _build(tmp_path / "a.acx", LocalEd25519Signer(), include_field_learned=True)
    assert res.quarantined == 0 and res.counts["save"] == 1
    with CartridgeReader(tmp_path / "a.acx") as r:
        (save,) = r.memory_records("save")
        assert save["foreign"] is True and save["codebaseFingerprint"] == CBF and save["repoId"] is None
        assert r.save_flag


def test_scrub_gate_blocks_and_leaves_nothing(tmp_path: Path) -> None:
    secret = "AKIA" + "IOSFODNN7EXAMPLQ"
    records = [*RECORDS, rec(9, summary=f"use key {secret} for deploys")]
    with pytest.raises(ExportBlocked) as exc:
        _build(tmp_path / "a.acx", LocalEd25519Signer(), records=records)
    assert exc.value.report.blocked
    assert secret not in repr(exc.value.report)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ExportBlocked):
        _build(
            tmp_path / "b.acx", LocalEd25519Signer(), files=[("rom/knowledge/K.md", f"x {secret}".encode())]
        )
    assert list(tmp_path.iterdir()) == []


def test_quarantined_secret_is_not_scanned_into_the_cartridge(tmp_path: Path) -> None:
    # field-learned records that stay home never enter the cartridge, so they cannot block it
    records = [rec(0), rec(5, portable=False, summary="internal host db.acme.internal")]
    res = _build(tmp_path / "a.acx", LocalEd25519Signer(), records=records)
    assert res.quarantined == 1


def _log(ids: list[str], signer: LocalEd25519Signer):  # type: ignore[no-untyped-def]
    from acx.core import merkle
    from acx.core.checkpoint import Checkpoint, sign_checkpoint, verifier_key_for

    entries = [bytes([i + 1]) * 32 for i in range(len(ids) + 2)]
    leaves = [merkle.leaf_hash(e) for e in entries]
    get = merkle.from_leaves(leaves)
    n = len(entries)
    cp = Checkpoint(
        origin="com.example.team/t/p", size=n, root=merkle.root_of_leaf_hashes(leaves), chain_head="0" * 64
    )
    index = {rid: i + 1 for i, rid in enumerate(ids)}

    def proof(rid: str):  # type: ignore[no-untyped-def]
        i = index[rid]
        return EntryProof(i, n, [p.hex() for p in merkle.inclusion_proof(i, n, get)], entries[i].hex())

    return sign_checkpoint(cp, "log", signer), verifier_key_for("log", signer), proof


def test_inclusion_attestation_embedded_and_verified(tmp_path: Path) -> None:
    signer, log = LocalEd25519Signer(), LocalEd25519Signer()
    text, vkey, proof = _log(["m-0", "m-1", "m-3"], log)
    res = _build(tmp_path / "a.acx", signer, checkpoint=text, verifier_key=vkey, inclusion=proof)
    assert res.counts["inclusion"]["embedded"] is True and res.counts["inclusion"]["proofs"] == 3
    v = evaluate(tmp_path / "a.acx")
    assert v.verdict == "portable" and v.inclusion["checked"] == 3 and v.inclusion["failed"] == 0

    def one_missing(rid: str):  # type: ignore[no-untyped-def]
        return None if rid == "m-1" else proof(rid)

    res = _build(tmp_path / "b.acx", signer, checkpoint=text, verifier_key=vkey, inclusion=one_missing)
    assert res.counts["inclusion"]["embedded"] is False


def test_the_given_cartridge_id_is_the_signed_one(tmp_path: Path) -> None:
    """The id the service hands out (its job id) is what the signature covers, not a second random id."""
    from acx.core import dsse

    res = _build(tmp_path / "a.acx", LocalEd25519Signer(), cartridge_id="0123abcd")
    assert res.cartridge_id == "0123abcd"
    with CartridgeReader(tmp_path / "a.acx") as r:
        assert r.meta()["acx.cartridge_id"] == "0123abcd"
        sig = r.signature()
        assert sig is not None
        statement = dsse.parse_envelope(sig.envelope).statement()
    assert statement["subject"][0]["name"] == "0123abcd"
    assert statement["predicate"]["provenanceInstanceId"] == "0123abcd"


def test_package_files_cannot_pose_as_the_log_attestation(tmp_path: Path) -> None:
    from acx.core.cartridge import CartridgeError

    forged = [("rom/attestations/log-checkpoint.json", b'{"checkpoint":"x","verifierKey":"y","proofs":[]}')]
    with pytest.raises(CartridgeError, match="reserved"):
        _build(tmp_path / "a.acx", LocalEd25519Signer(), files=forged)
    assert list(tmp_path.iterdir()) == []


def test_validity_of_changed_rom_memories_travels_in_a_bound_rom_file(tmp_path: Path) -> None:
    """The memory-versions extension: written when a ROM memory has history, ROM memories only,
    bound by the manifest, and ignored by trust (the verdict is the same as without it)."""
    from acx.core.cartridge import strip_to_rom, validity

    def validity_of(rid: str) -> dict:
        changed = rid == "m-1"
        return {
            "memoryId": rid,
            "contentHash": "c" * 64,
            "seq": 4 if changed else 0,
            "validFrom": "2026-02-01T00:00:00Z",
            "versions": 2 if changed else 1,
            "supersedes": {"seq": 1, "hash": "e" * 64} if changed else None,
        }

    signer = LocalEd25519Signer()
    path = tmp_path / "v.acx"
    _build(
        path, signer, include_field_learned=True, validity_of=validity_of, exported_at="2026-03-01T00:00:00Z"
    )
    with CartridgeReader(path) as r:
        doc = validity.read(r)
        assert any(e["sourceRef"] == validity.VALIDITY_FILE for e in r.manifest())
    assert doc is not None and doc["asOf"] == "2026-03-01T00:00:00Z"
    assert [m["memoryId"] for m in doc["memories"]] == ["m-0", "m-1", "m-3"]  # the SAVE m-2 stays out
    assert evaluate(path).verdict == "portable"  # signature valid, as without the extension
    before, after = strip_to_rom(path, tmp_path / "rom.acx")
    assert before == after
    with CartridgeReader(tmp_path / "rom.acx") as r:
        assert validity.read(r) == doc

    unchanged = tmp_path / "u.acx"  # nothing changed anywhere: no extension
    _build(unchanged, signer, validity_of=lambda rid: {**validity_of("m-0"), "memoryId": rid})
    with CartridgeReader(unchanged) as r:
        assert validity.read(r) is None


class _Axes:
    """An engine other than the reference: one axis per word of a tiny vocabulary."""

    id = "test-axes-4"
    dim = 4
    lexical = False
    words = ("lesson", "retry", "backoff", "deploy")

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[float(text.count(w)) + 0.5 for w in self.words] for text in texts]


def _vectors(path: Path) -> dict[str, tuple[float, ...]]:
    import sqlite3
    import struct

    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT memory_id, embedding FROM vectors").fetchall()
    finally:
        db.close()
    return {rid: struct.unpack(f"<{len(blob) // 4}f", blob) for rid, blob in rows}


def test_a_cartridges_vectors_are_tagged_with_the_engine_that_made_them(tmp_path: Path) -> None:
    import struct

    from acx.core.embedding import embed_record

    _build(tmp_path / "hash.acx", LocalEd25519Signer())
    with CartridgeReader(tmp_path / "hash.acx") as r:
        assert r.embedding_engine() == {"id": "local-hash-128", "dim": 128}
        payloads = {m["id"]: m for m in r.memory_records()}
    # The reference engine's vectors of the exported payloads (title + blank line + summary), as
    # float32: what an ACX consumer recomputes bit for bit.
    expected = {
        rid: struct.unpack("<128f", struct.pack("<128f", *embed_record(p))) for rid, p in payloads.items()
    }
    assert _vectors(tmp_path / "hash.acx") == expected and len(expected) == 3
    _build(tmp_path / "axes.acx", LocalEd25519Signer(), engine=_Axes())
    with CartridgeReader(tmp_path / "axes.acx") as r:
        assert r.embedding_engine() == {"id": "test-axes-4", "dim": 4}
        assert evaluate(tmp_path / "axes.acx").verdict == "portable"  # the tag is signed meta
    assert _vectors(tmp_path / "axes.acx")["m-0"] == (1.5, 1.5, 1.5, 0.5)  # "lesson 0\n\nretry with backoff"
    _build(tmp_path / "none.acx", LocalEd25519Signer(), vectors=False)
    assert _vectors(tmp_path / "none.acx") == {}
