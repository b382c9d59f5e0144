"""The log-checkpoint attestation: written and read here, side by side.

What it is: the package log's signed checkpoint (C2SP signed note), the key that verifies it, and one
RFC 9162 inclusion proof per ROM memory, as canonical JSON::

    {"checkpoint": "<C2SP signed note>", "verifierKey": "<name+keyid+base64 key>",
     "proofs": [{"memoryId": "...", "contentHash": "<hex>", "entryHash": "<hex>",
                 "index": n, "proof": ["<hex>", ...]}, ...]}

Where it lives: the ROM **file** :data:`LOG_CHECKPOINT_FILE` (a plain sqlar entry, ``kind='sqlar'``,
``canon='raw'``), so every ACX v0.1 verifier recomputes its oid like any other ROM file and the
signed manifest covers it; a verifier that knows nothing of logs still reaches ``trusted``.
Cartridges written before this lived in the ``attestations`` table, bound as
``attestation:log-checkpoint`` (which the reference cannot resolve: it called them ``tampered``);
:func:`check_inclusion` still reads those.

The check: the checkpoint verifies under ``verifierKey``; every ROM memory row has exactly one proof;
``leaf = sha256(0x00 || entryHash)`` is included at ``index`` (every proof element consumed). What it
proves: the exported records were entries of a log whose head the log key signed. It does NOT stop a
publisher who runs its own log and key (the verifier key travels inside the document, bound only by
the publisher's signature), nor prove that a stripped ROM payload corresponds to that entry's
original content.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from acx.core import canonical
from acx.core.cartridge.reader import CartridgeReader
from acx.core.cartridge.writer import CartridgeWriter
from acx.core.checkpoint import CheckpointError, verify_checkpoint
from acx.core.merkle import leaf_hash, verify_inclusion

LOG_CHECKPOINT_FILE = "rom/attestations/log-checkpoint.json"
RESERVED_PREFIX = "rom/attestations/"
# The pre-interop form, read only (see the module docstring).
LEGACY_ATT_ID = "log-checkpoint"
LEGACY_ATT_TYPE = "acx.log-checkpoint/v1"


@dataclass(frozen=True)
class InclusionEntry:
    """One ROM memory's place in the log: its entry hash, leaf index and audit path (hex)."""

    memoryId: str
    contentHash: str
    entryHash: str
    index: int
    proof: list[str]


def document(checkpoint: str, verifier_key: str, proofs: Sequence[InclusionEntry]) -> bytes:
    """The attestation's canonical JSON bytes."""
    return canonical.dumps(
        {"checkpoint": checkpoint, "verifierKey": verifier_key, "proofs": [asdict(p) for p in proofs]}
    )


def write(writer: CartridgeWriter, doc: bytes) -> str:
    """Store the attestation as the ROM file :data:`LOG_CHECKPOINT_FILE`; returns its oid."""
    return writer.add_file(LOG_CHECKPOINT_FILE, doc)


def read(reader: CartridgeReader) -> list[bytes]:
    """Every log-checkpoint document the cartridge carries (the ROM file, then any legacy rows)."""
    docs = []
    data = reader.find_file(LOG_CHECKPOINT_FILE)
    if data is not None:
        docs.append(data)
    for att in reader.attestations():
        if att["att_id"] == LEGACY_ATT_ID or att["type"] == LEGACY_ATT_TYPE:
            text = att["document"]  # not text (a BLOB in the TEXT column): read as an empty, malformed one
            docs.append(text.encode("utf-8") if isinstance(text, str) else b"")
    return docs


def summary(reader: CartridgeReader) -> dict[str, Any] | None:
    """Origin, tree size and proof count for ``acx inspect`` (unchecked), or None when absent."""
    docs = read(reader)
    if not docs:
        return None
    try:
        doc = canonical.loads(docs[0])
        lines = str(doc.get("checkpoint", "")).split("\n")
        return {
            "origin": lines[0],
            "treeSize": lines[1] if len(lines) > 1 else None,
            "proofs": len(doc.get("proofs", [])),
            "file": LOG_CHECKPOINT_FILE,
        }
    except (canonical.CanonicalError, AttributeError, TypeError):
        return {"error": "unparseable"}


def check_inclusion(reader: CartridgeReader) -> tuple[dict[str, Any], list[str]]:
    """Verify the log-checkpoint attestation if present: (summary, failures); absent is fine."""
    docs = read(reader)
    if not docs:
        return {"present": False}, []
    if len(docs) > 1:
        return {"present": True}, ["more than one log-checkpoint attestation"]
    result: dict[str, Any] = {"present": True, "checked": 0, "failed": 0}
    try:
        doc = canonical.loads(docs[0])
        cp = verify_checkpoint(doc["checkpoint"], doc["verifierKey"])
        proofs = doc["proofs"]
        if not isinstance(proofs, list):
            raise TypeError("proofs")
    except CheckpointError as exc:
        return result, [f"log checkpoint does not verify: {exc}"]
    except (canonical.CanonicalError, KeyError, TypeError) as exc:
        return result, [f"log checkpoint attestation is malformed ({type(exc).__name__})"]
    result.update(origin=cp.origin, treeSize=cp.size, root=cp.root.hex())
    failures: list[str] = []
    by_id: dict[str, dict[str, Any]] = {}
    for p in proofs:
        mid = p.get("memoryId") if isinstance(p, dict) else None
        if not isinstance(mid, str) or mid in by_id:
            failures.append("inclusion proof list has a missing or duplicate memoryId")
            continue
        by_id[mid] = p
    for row in reader.iter_memory("rom"):
        p = by_id.pop(row.id, None)
        result["checked"] += 1
        ok = False
        if p is not None:
            try:
                leaf = leaf_hash(bytes.fromhex(p["entryHash"]))
                path = [bytes.fromhex(h) for h in p["proof"]]
                ok = isinstance(p["index"], int) and verify_inclusion(
                    leaf, p["index"], cp.size, path, cp.root
                )
            except (KeyError, TypeError, ValueError):
                ok = False
        if not ok:
            result["failed"] += 1
            if len(failures) < 20:
                failures.append(f"memory {row.id}: {'no' if p is None else 'failed'} inclusion proof")
    if by_id:
        failures.append(f"{len(by_id)} inclusion proofs name no ROM memory row")
    return result, failures
