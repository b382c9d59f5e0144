"""The one place tests build memory records and bundles (the record format of docs/FORMATS.md).

Each suite states only the fields its assertions depend on, as keyword overrides; everything else
comes from :func:`memory`, so a change to the record format is made here once.
"""

from __future__ import annotations

from typing import Any

#: A well-formed codebase fingerprint for field-learned records (DESIGN §1.1).
CBF = "cbf1_" + "ab" * 20
FIELD_REPO = "github.com/acme/api"
BUNDLE_SCHEMA = "acx.memory-bundle/1"


def memory(rid: str = "mem-1", **changes: Any) -> dict[str, Any]:
    """A valid portable memory record; ``changes`` replace fields (or add unknown ones, to be refused)."""
    record: dict[str, Any] = {
        "id": rid,
        "title": "Retry with backoff",
        "summary": "The flaky test passed after retries",
        "sourceType": "incident",
        "portable": True,
        "codebaseFingerprint": None,
        "repoId": None,
        "repoLabel": "portable-core",
        "projectLabel": "api",
        "timestamp": "2026-01-02T03:04:05.678Z",
        "impact": "neutral",
        "xpAwarded": 1,
        "tags": ["retry"],
    }
    record.update(changes)
    return record


def note(rid: str, text: str, **changes: Any) -> dict[str, Any]:
    """A record titled ``text`` with a summary of its own words: unrelated notes are not near copies
    of each other (the forget rules compare title and summary, and :func:`memory`'s are all equal)."""
    summary = " ".join(f"{w}-{i}" for i, w in enumerate(text.split() * 4))
    return memory(rid, title=text, summary=summary, **changes)


def tier_fields(portable: bool) -> dict[str, Any]:
    """The fields that make a record transferable (ROM) or field-learned (SAVE)."""
    if portable:
        return {"portable": True, "codebaseFingerprint": None, "repoId": None}
    return {"portable": False, "codebaseFingerprint": CBF, "repoId": FIELD_REPO}


def bundle(records: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """An upload bundle of ``records`` (no knowledge or skill files unless ``extra`` adds them)."""
    return {"schemaVersion": BUNDLE_SCHEMA, "records": records, "knowledge": [], "skills": [], **extra}


def bundle_json(records: list[dict[str, Any]], **extra: Any) -> bytes:
    """:func:`bundle` as the request body bytes an upload sends."""
    import json

    return json.dumps(bundle(records, **extra)).encode()


def tiny(rid: str, **changes: Any) -> dict[str, Any]:
    """A valid record with one-letter text fields, for tests about containers rather than content."""
    fields: dict[str, Any] = {"title": "t", "summary": "s", "sourceType": "review", "repoLabel": "x"}
    fields |= {"projectLabel": "y", "timestamp": "2026-01-01T00:00:00.000Z", "xpAwarded": 0, "tags": []}
    return memory(rid, **fields | changes)


def entry_payload(**changes: Any) -> dict[str, Any]:
    """A valid ``remember`` log-entry payload at seq 0 (``acx.core.log.make_payload`` keywords)."""
    from acx.core import log

    fields: dict[str, Any] = {
        "actor": "agent-1",
        "chain": "t1/pkg",
        "seq": 0,
        "operation": "remember",
        "tier": "rom",
        "content_hash": "a" * 64,
        "created_at": "2025-01-01T00:00:00Z",
    }
    return log.make_payload(**fields | changes)


def statement(**changes: Any) -> dict[str, Any]:
    """A well-formed in-toto statement from ``acx.core.dsse.build_statement`` (keyword overrides)."""
    from acx.core import dsse

    fields: dict[str, Any] = {
        "manifest_hash": "sha256:" + "a" * 64,
        "subject_name": "com.example/x@1",
        "publisher_id": "com.example",
        "embedding_engine": {"id": "local-hash-128", "dim": 128},
        "signed_at": "2026-01-01T00:00:00.000Z",
        "provenance_instance_id": "p-1",
        "file_count": 3,
        "checksum_hash": "sha256:" + "b" * 64,
    }
    return dsse.build_statement(**fields | changes)


class P256Signer:
    """An ECDSA P-256 signer (a fresh key each), the second algorithm a signed statement or note may use
    besides Ed25519 (``acx.core.signing.Signer``)."""

    algorithm = "ecdsa-p256"

    def __init__(self) -> None:
        from cryptography.hazmat.primitives.asymmetric import ec

        self._key = ec.generate_private_key(ec.SECP256R1())

    def public_key_der(self) -> bytes:
        from cryptography.hazmat.primitives import serialization

        return self._key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def sign(self, message: bytes) -> bytes:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec

        return self._key.sign(message, ec.ECDSA(hashes.SHA256()))


# Signed cartridges and the trust registry that vouches for their key (the trust verdict's inputs).
PUBLISHER = "com.example.team"


def signed_cartridge(path: Any, signer: Any, attestation: bytes | None = None, n: int = 4) -> str:
    """Write a cartridge of ``n`` tiny memories and one knowledge file, signed as PUBLISHER (with a
    log attestation when given); return its manifest hash."""
    from acx.core.cartridge import CartridgeWriter, log_attestation

    with CartridgeWriter(path, artifact_id="a", artifact_version="1") as w:
        for i in range(n):
            w.add_memory(tiny(f"m-{i}", title=f"t{i}"), "rom")
        w.add_file("rom/knowledge/A.md", b"# a\n")
        if attestation is not None:
            log_attestation.write(w, attestation)
        return w.finalize(signer, PUBLISHER).manifest_hash


def registry_for(signer: Any, **over: object) -> dict[str, Any]:
    """A trust registry with one active entry for ``signer``'s key (``over`` replaces its fields)."""
    from acx.core.signing import PublicKey

    key = PublicKey.from_der(signer.public_key_der())
    entry = {
        "keyid": key.keyid,
        "publisherId": PUBLISHER,
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


def inclusion_attestation(n_log: int, ids: list[int], signer: Any, corrupt: bool = False) -> bytes:
    """A log-checkpoint attestation: a checkpoint of ``n_log`` entries signed by ``signer`` and an
    inclusion proof for memory m-i at index i for each i in ``ids`` (the last one broken if
    ``corrupt``)."""
    from acx.core import canonical, merkle
    from acx.core.checkpoint import Checkpoint, sign_checkpoint, verifier_key_for

    entries = [bytes([i]) * 32 for i in range(n_log)]
    hashes = [merkle.leaf_hash(e) for e in entries]
    cp = Checkpoint(
        origin="com.example.team/t/p",
        size=n_log,
        root=merkle.root_of_leaf_hashes(hashes),
        chain_head="0" * 64,
    )
    text, vkey = sign_checkpoint(cp, "log", signer), verifier_key_for("log", signer)
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


def search_record(rid: str, title: str, summary: str = "", **over: Any) -> dict[str, Any]:
    """A record with just the fields the search index reads: id, text, tier (rom) and tags (none)."""
    return {"id": rid, "title": title, "summary": summary, "portable": True, "tags": [], **over}


# Cartridges: a small signed one of every object kind, and the edits a hostile file's author can make.
CARTRIDGE_SKILL = (
    b"---\nname: deploy-helper\ndescription: Helps with deploys.\nlicense: MIT\n---\n\n# Deploy\n"
)
LEGACY_ATTESTATION = (
    '{"checkpoint":"example.com/log\\n7\\nabc=\\n","proofs":[{"i":1},{"i":2}],"verifierKey":"k"}'
)
INSERT_ATTESTATION = (
    "INSERT INTO attestations (att_id, type, media_type, document, created_at) VALUES (?, ?, ?, ?, ?)"
)


def cartridge_record(i: int, portable: bool = True, **kw: object) -> dict[str, Any]:
    """Memory ``mem-{i:05d}``, ROM (or SAVE with ``portable=False``), tagged deploy."""
    fields: dict[str, Any] = {
        "title": f"lesson {i}",
        "summary": f"retry the deploy step {i}",
        "sourceType": "review",
    }
    fields |= {"repoLabel": "api", "projectLabel": "Acme", "timestamp": "2026-01-02T03:04:05.000Z"}
    return memory(
        f"mem-{i:05d}",
        portable=portable,
        codebaseFingerprint=None if portable else CBF,
        tags=["deploy"],
        **fields | kw,
    )


def demo_cartridge(path: Any, *, save: bool = True, signer: Any = None, n: int = 5) -> dict[str, Any]:
    """A signed cartridge at ``path``: ``n`` ROM memories with vectors, one SAVE memory (``save``), a
    knowledge file, a skill and a capability; returns the finalize result and the signer."""
    from acx.core.cartridge import CartridgeWriter
    from acx.core.signing import LocalEd25519Signer

    signer = signer or LocalEd25519Signer()
    with CartridgeWriter(path, artifact_id="demo", artifact_version="1", chunk_size=2) as w:
        for i in range(n):
            w.add_memory(cartridge_record(i), "rom", [0.5] * 128)
        if save:
            w.add_memory(cartridge_record(99999, portable=False), "save")
        w.add_file("rom/knowledge/NOTES.md", b"# notes\n")
        w.add_file("rom/skills/deploy-helper/SKILL.md", CARTRIDGE_SKILL)
        w.add_capability({"id": "cap-1", "domain": "infra"})
        res = w.finalize(signer, "com.example.team")
    return {"result": res, "signer": signer}


def add_legacy_attestation(path: Any, document: str | bytes, covered: bool = True) -> None:
    """Insert a pre-interop attestation row (and, when ``covered``, the objects row binding it)."""
    import sqlite3

    from acx.core.cartridge.format import oid_of
    from acx.core.cartridge.log_attestation import LEGACY_ATT_ID, LEGACY_ATT_TYPE

    with sqlite3.connect(path) as db:
        db.execute(
            INSERT_ATTESTATION,
            (LEGACY_ATT_ID, LEGACY_ATT_TYPE, "application/json", document, "2026-01-01T00:00:00Z"),
        )
        if covered:
            data = LEGACY_ATTESTATION.encode()
            db.execute(
                "INSERT INTO objects (oid, kind, source_ref, canon, zone, sz) VALUES (?, ?, ?, ?, ?, ?)",
                (oid_of(data), "attestation", f"attestation:{LEGACY_ATT_ID}", "raw", "rom", len(data)),
            )


def without_primary_key(db: Any, table: str) -> list[tuple[Any, ...]]:
    """Rebuild ``table`` as a plain rowid table of the same columns (no key), emptied; its old rows."""
    cols = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
    rows = db.execute(f"SELECT {', '.join(cols)} FROM {table}").fetchall()  # noqa: S608 - our table names
    db.execute(f"ALTER TABLE {table} RENAME TO {table}_old")
    db.execute(f"CREATE TABLE {table} ({', '.join(cols)})")
    db.execute(f"DROP TABLE {table}_old")
    return rows


def duplicate_row(path: Any, table: str, key: str, column: int, value: str | None, first: bool) -> None:
    """Rebuild ``table`` without its primary key and add a second row under ``key`` whose ``column``
    holds ``value``, ahead of (``first``) or behind the signed row."""
    import sqlite3

    with sqlite3.connect(path) as db:
        rows = without_primary_key(db, table)
        (row,) = [r for r in rows if r[0] == key]
        extra = (*row[:column], value, *row[column + 1 :])
        marks = ", ".join("?" * len(row))
        db.executemany(
            f"INSERT INTO {table} VALUES ({marks})",  # noqa: S608 - our table names
            [extra, *rows] if first else [*rows, extra],
        )


def tampered_cartridge(path: Any, *statements: str | tuple[str, tuple[Any, ...]]) -> Any:
    """``demo_cartridge(path, save=False)`` with ``statements`` (SQL, or SQL and its parameters) then run
    on its tables, as a hostile file's author would; returns ``path``."""
    import sqlite3

    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        for statement in statements:
            db.execute(*((statement,) if isinstance(statement, str) else statement))
    return path
