"""The export boundary (DESIGN §1.1): what a record looks like once it leaves the installation.

Policy, not file format: the writer stores what :func:`memory_payload` returns, and the exporter
scrubs exactly those bytes.
"""

from __future__ import annotations

from typing import Any

from acx.core import canonical
from acx.core.cartridge.format import CartridgeError
from acx.core.fingerprint import artifact_fingerprint

PORTABLE_LABEL = "portable-core"
FIELD_LABEL = "field-learned"


def export_view(record: dict[str, Any], zone: str) -> dict[str, Any]:
    """The record as it may leave the installation (the export boundary of DESIGN §1.1).

    ROM: ``repoId`` null, ``repoLabel``/``projectLabel`` ``portable-core``, ``codebaseFingerprint``
    null. SAVE (only when the caller chose to include field-learned records): ``repoId`` null, labels
    ``field-learned``, codebase fingerprint kept, ``foreign: true``. Does NOT stop secrets inside free
    text (titles, summaries): the scrub gate runs over the result.
    """
    out = dict(record)
    out.pop("artifactFingerprint", None)
    out.pop("zone", None)
    out["repoId"] = None
    if zone == "rom":
        out["repoLabel"] = PORTABLE_LABEL
        out["projectLabel"] = PORTABLE_LABEL
        out["codebaseFingerprint"] = None
        out.pop("foreign", None)
    elif zone == "save":
        out["repoLabel"] = FIELD_LABEL
        out["projectLabel"] = FIELD_LABEL
        out["foreign"] = True
    else:
        raise CartridgeError(f"unknown zone {zone!r}")
    return out


def _fingerprint(record: dict[str, Any]) -> str:
    return str(artifact_fingerprint(record))


def memory_payload(record: dict[str, Any], zone: str) -> tuple[dict[str, Any], bytes]:
    """Boundary-applied payload (with ``artifactFingerprint`` and ``zone``) and its canonical bytes."""
    payload = export_view(record, zone)
    payload["artifactFingerprint"] = _fingerprint(payload)
    payload["zone"] = zone
    return payload, canonical.dumps(payload)
