"""The memory-versions extension of a cartridge: valid time and supersession of the exported memories.

A cartridge holds the versions valid at export time (one per memory, as ACX §7 wants: ``memory`` rows
are records, and the record schema has no place for validity). What a version's validity and lineage
are travels beside them, in the ROM **file** :data:`VALIDITY_FILE` (a plain sqlar entry, ``kind='sqlar'``,
``canon='raw'``, like the log-checkpoint attestation): every ACX v0.1 verifier recomputes its oid and
the signed manifest covers it, and a verifier that knows nothing of versions ignores it and still
reaches ``trusted``. Strip-to-ROM keeps it (it is ROM and names ROM memories only). Canonical JSON::

    {"schema": "acx.memory-versions/1", "asOf": "<export time, RFC 3339>",
     "memories": [{"memoryId": "...", "contentHash": "<hex>", "seq": n,
                   "validFrom": "<RFC 3339>", "versions": n,
                   "supersedes": {"seq": n, "hash": "<hex>"} | null}, ...]}

``seq`` and ``contentHash`` name the version's log entry (the log-checkpoint attestation proves it is
in the log); ``versions`` counts the memory's versions in the log (the older ones stay home, in the
service's history); ``supersedes`` is the entry the version superseded, when an update began it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acx.core import canonical
from acx.core.cartridge.reader import CartridgeReader
from acx.core.cartridge.writer import CartridgeWriter

VALIDITY_FILE = "rom/attestations/memory-versions.json"
SCHEMA = "acx.memory-versions/1"


def document(as_of: str, memories: Sequence[dict[str, Any]]) -> bytes:
    """The extension's canonical JSON bytes (``memories`` sorted by id, so equal exports are equal)."""
    ordered = sorted(memories, key=lambda m: str(m["memoryId"]))
    return canonical.dumps({"schema": SCHEMA, "asOf": as_of, "memories": ordered})


def write(writer: CartridgeWriter, doc: bytes) -> str:
    """Store the extension as the ROM file :data:`VALIDITY_FILE`; returns its oid."""
    return writer.add_file(VALIDITY_FILE, doc)


def read(reader: CartridgeReader) -> dict[str, Any] | None:
    """The extension of a cartridge (None when absent); raises ``CanonicalError`` when malformed."""
    data = reader.find_file(VALIDITY_FILE)
    if data is None:
        return None
    doc = canonical.loads(data)
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("memories"), list):
        raise canonical.CanonicalError("not an acx.memory-versions/1 document", "$")
    return doc
