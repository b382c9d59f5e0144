"""DSSE envelopes over in-toto Statement v1, the signature format of ACX cartridges (DESIGN §4).

The signed bytes are the DSSE pre-authentication encoding
``"DSSEv1" SP len(type) SP type SP len(payload) SP payload``, so a signature over one payload type
can never be replayed as another. The payload is the canonical JSON of the Statement, whose
``subject[0].digest.sha256`` is the ROM manifest hash hex.

Does NOT stop: a signer whose key is stolen, or a verifier who trusts whatever key sits next to the
envelope; key selection is :mod:`acx.core.trust`'s job.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from acx.core import canonical
from acx.core.signing import PublicKey, Signer, keyid_for

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://acx.dev/attestation/cartridge/v1"
ACX_SCHEMA_VERSION = "0.1"
MAX_ENVELOPE_BYTES = 1 << 20


class DsseError(ValueError):
    """A malformed envelope or statement."""


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding (lengths are byte lengths, decimal ASCII)."""
    t = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


def build_statement(
    *,
    manifest_hash: str,
    subject_name: str,
    publisher_id: str,
    embedding_engine: dict[str, Any],
    signed_at: str,
    provenance_instance_id: str,
    file_count: int,
    checksum_hash: str,
) -> dict[str, Any]:
    """The in-toto Statement for a cartridge, with exactly the reference's predicate fields."""
    if not manifest_hash.startswith("sha256:") or len(manifest_hash) != 71:
        raise DsseError("manifest hash must be sha256:<64 hex>")
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": subject_name, "digest": {"sha256": manifest_hash[7:]}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "acxSchemaVersion": ACX_SCHEMA_VERSION,
            "publisherId": publisher_id,
            "romDigest": manifest_hash,
            "manifestHash": manifest_hash,
            "checksumHash": checksum_hash,
            "fileCount": file_count,
            "embeddingEngine": embedding_engine,
            "signedAt": signed_at,
            "provenanceInstanceId": provenance_instance_id,
        },
    }


def sign_statement(statement: dict[str, Any], signer: Signer) -> dict[str, Any]:
    """DSSE envelope ``{payloadType, payload, signatures: [{keyid, sig}]}`` signed by ``signer``."""
    payload = canonical.dumps(statement)
    sig = signer.sign(pae(PAYLOAD_TYPE, payload))
    keyid = keyid_for(signer.algorithm, signer.public_key_der())
    return {
        "payloadType": PAYLOAD_TYPE,
        "payload": base64.b64encode(payload).decode("ascii"),
        "signatures": [{"keyid": keyid, "sig": base64.b64encode(sig).decode("ascii")}],
    }


def envelope_json(envelope: dict[str, Any]) -> str:
    """Compact JSON in the reference's field order (the envelope itself is not hashed)."""
    return json.dumps(envelope, separators=(",", ":"), ensure_ascii=False)


@dataclass
class Envelope:
    """A structurally valid envelope: decoded payload and (keyid, signature bytes) pairs."""

    payload_type: str
    payload: bytes
    signatures: list[tuple[str, bytes]]

    def statement(self) -> dict[str, Any]:
        """The Statement, checked for type, predicate type and subject digest shape."""
        return parse_statement(self.payload)


def _b64(text: Any, what: str) -> bytes:
    if not isinstance(text, str):
        raise DsseError(f"{what} must be a base64 string")
    try:  # DSSE allows standard or URL-safe base64; both are decoded strictly (no junk skipped)
        return base64.b64decode(text.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        raise DsseError(f"{what} is not valid base64") from None


def parse_envelope(text: str | bytes) -> Envelope:
    """Parse and structurally check an envelope; raise :class:`DsseError` on anything malformed."""
    if len(text) > MAX_ENVELOPE_BYTES:
        raise DsseError("envelope too large")
    try:
        doc = canonical.loads(text)
    except canonical.CanonicalError as exc:
        raise DsseError(f"envelope is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise DsseError("envelope is not a JSON object")
    if doc.get("payloadType") != PAYLOAD_TYPE:
        raise DsseError(f"payloadType must be {PAYLOAD_TYPE}")
    payload = _b64(doc.get("payload"), "payload")
    sigs = doc.get("signatures")
    if not isinstance(sigs, list) or not sigs:
        raise DsseError("envelope has no signatures")
    out: list[tuple[str, bytes]] = []
    for i, s in enumerate(sigs):
        if not isinstance(s, dict) or not isinstance(s.get("keyid"), str):
            raise DsseError(f"signatures[{i}] must have a string keyid")
        out.append((s["keyid"], _b64(s.get("sig"), f"signatures[{i}].sig")))
    return Envelope(PAYLOAD_TYPE, payload, out)


def parse_statement(payload: bytes) -> dict[str, Any]:
    """Check the Statement's shape (type, predicate type, sha256 subject); raise DsseError otherwise."""
    try:
        st = canonical.loads(payload)
    except canonical.CanonicalError as exc:
        raise DsseError(f"statement is not JSON: {exc}") from None
    if not isinstance(st, dict) or st.get("_type") != STATEMENT_TYPE:
        raise DsseError(f"statement _type must be {STATEMENT_TYPE}")
    if st.get("predicateType") != PREDICATE_TYPE:
        raise DsseError(f"predicateType must be {PREDICATE_TYPE}")
    subject = st.get("subject")
    if not isinstance(subject, list) or not subject or not isinstance(subject[0], dict):
        raise DsseError("statement has no subject")
    digest = subject[0].get("digest")
    hexd = digest.get("sha256") if isinstance(digest, dict) else None
    if not isinstance(hexd, str) or len(hexd) != 64:
        raise DsseError("subject[0].digest.sha256 must be 64 hex chars")
    if not isinstance(st.get("predicate"), dict):
        raise DsseError("statement has no predicate")
    return st


def verify_envelope(envelope: Envelope, key: PublicKey) -> bool:
    """True when some signature whose keyid names ``key`` verifies over the PAE.

    A signature under another keyid is ignored, never tried against ``key``; does NOT stop an
    attacker who controls which ``key`` the caller passes in.
    """
    message = pae(envelope.payload_type, envelope.payload)
    return any(kid == key.keyid and key.verify(sig, message) for kid, sig in envelope.signatures)
