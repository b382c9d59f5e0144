"""ACX v0.1 cartridges: one SQLite file, written as a stream and read back without trusting it.

One job per module: :mod:`.format` (tables, names, object ids, manifest hashing), :mod:`.boundary`
(what a record looks like once exported), :mod:`.frontmatter` (SKILL.md index fields),
:mod:`.writer` (stream in, seal -> sign -> commit), :mod:`.reader` (recompute everything from live
content), :mod:`.strip` (strip-to-ROM), :mod:`.log_attestation` (the log checkpoint and inclusion
proofs, written and read). The names below are the package's public surface.

Attackers this does NOT stop by itself: anyone can write a well-formed cartridge; authenticity comes
only from the signature checked in :mod:`acx.core.trust` against a key the verifier chose.
"""

from acx.core.cartridge.boundary import FIELD_LABEL, PORTABLE_LABEL, export_view, memory_payload
from acx.core.cartridge.format import (
    APPLICATION_ID,
    DEFAULT_ENGINE,
    FLAG_SAVE,
    SPEC_VERSION,
    USER_VERSION_BASE,
    CartridgeError,
    meta_binding,
    now_rfc3339,
    oid_of,
    validate_sqlar_name,
)
from acx.core.cartridge.frontmatter import parse_frontmatter
from acx.core.cartridge.reader import CartridgeReader, MemoryRow, Recomputed, SignatureRow
from acx.core.cartridge.strip import strip_to_rom
from acx.core.cartridge.writer import CartridgeWriter, FinalizeResult

__all__ = [
    "APPLICATION_ID",
    "DEFAULT_ENGINE",
    "FIELD_LABEL",
    "FLAG_SAVE",
    "PORTABLE_LABEL",
    "SPEC_VERSION",
    "USER_VERSION_BASE",
    "CartridgeError",
    "CartridgeReader",
    "CartridgeWriter",
    "FinalizeResult",
    "MemoryRow",
    "Recomputed",
    "SignatureRow",
    "export_view",
    "memory_payload",
    "meta_binding",
    "now_rfc3339",
    "oid_of",
    "parse_frontmatter",
    "strip_to_rom",
    "validate_sqlar_name",
]
