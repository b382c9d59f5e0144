"""Offline trust evaluation of a cartridge: tampered > legacy > portable > trusted > local.

Order of checks (the first that applies wins):

- ``tampered``: any recomputed oid/size/zone differs from its objects row, content not covered by the
  manifest, a malformed envelope or statement, an envelope keyid that is not the key we verify with,
  a bad signature, a subject digest / predicate hash / checksum that is not the recomputed one, or a
  failed log-checkpoint attestation (below);
- ``legacy``: no envelope at all (nothing to verify; content may still be self-consistent);
- ``portable``: valid signature, but the signer is not in the registry or not eligible (status not
  ``active``, outside ``notBefore``/``notAfter``, no namespace proof for the publisher's domain,
  ``publisherId`` mismatch, algorithm or key mismatch);
- ``trusted``: valid and the key is active in an ``acx.trust-registry/1`` registry (public keys only);
- ``local``: trusted and one of ``own_keyids``.

Without ``public_key_pem`` the key embedded in ``signatures.public_key_pem`` is used; that proves
only self-consistency (anyone can embed their own key), which is why such a cartridge is at most
``portable`` unless the registry vouches for that exact keyid. The registry is assumed authentic:
this does NOT stop an attacker who can edit the verifier's registry file.

The optional log-checkpoint attestation (a ROM file) is checked by
:func:`acx.core.cartridge.log_attestation.check_inclusion`; any failure there is ``tampered``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acx.core import canonical, dsse
from acx.core.cartridge import CartridgeReader
from acx.core.cartridge.log_attestation import check_inclusion
from acx.core.signing import PublicKey

REGISTRY_SCHEMA = "acx.trust-registry/1"
VERDICTS = ("tampered", "legacy", "portable", "trusted", "local")


@dataclass
class Verdict:
    """Result of :func:`evaluate`; ``reasons`` say why, in check order."""

    verdict: str
    reasons: list[str] = field(default_factory=list)
    keyid: str | None = None
    publisherId: str | None = None
    manifestHash: str | None = None
    inclusion: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return asdict(self)


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def namespace_record(publisher_id: str) -> str:
    """The DNS TXT name that proves control of a reverse-DNS publisher id's domain."""
    return "_acx-challenge." + ".".join(reversed(publisher_id.split(".")))


def registry_problem(registry: Any) -> str | None:
    """Why a registry document is unusable (wrong schema, private key material), or None."""
    if not isinstance(registry, dict) or registry.get("schemaVersion") != REGISTRY_SCHEMA:
        return f"registry is not {REGISTRY_SCHEMA}"
    keys = registry.get("keys")
    if not isinstance(keys, list):
        return "registry has no keys list"
    text = canonical.dumps(registry).decode("utf-8", "replace")
    if "PRIVATE KEY" in text or any(isinstance(k, dict) and ("privateKeyPem" in k or "d" in k) for k in keys):
        return "registry carries private key material; refusing it (public keys only)"
    return None


def eligibility(
    entry: dict[str, Any], keyid: str, publisher_id: str | None, algorithm: str, at: datetime
) -> list[str]:
    """Why a registry entry does not make ``keyid`` trusted for ``publisher_id`` (empty = eligible)."""
    reasons = []
    if entry.get("status") != "active":
        reasons.append(f"registry key status is {entry.get('status')!r}, not 'active'")
    if entry.get("algorithm") != algorithm:
        reasons.append(f"registry algorithm {entry.get('algorithm')!r} does not match {algorithm!r}")
    try:
        if PublicKey.from_pem(str(entry.get("publicKeyPem", ""))).keyid != keyid:
            reasons.append("registry publicKeyPem does not hash to its keyid")
    except (ValueError, TypeError):
        reasons.append("registry publicKeyPem is not a usable public key")
    nb, na = _parse_time(entry.get("notBefore")), _parse_time(entry.get("notAfter"))
    if nb is None or na is None:
        reasons.append("registry key lacks a valid notBefore/notAfter")
    elif not nb <= at <= na:
        reasons.append(
            f"registry key not valid at {at.isoformat()} (window {entry['notBefore']}..{entry['notAfter']})"
        )
    if not publisher_id or entry.get("publisherId") != publisher_id:
        reasons.append(f"registry publisherId {entry.get('publisherId')!r} does not match {publisher_id!r}")
    proof = entry.get("namespaceProof")
    if not isinstance(proof, dict) or not proof.get("method") or not proof.get("verifiedAt"):
        reasons.append("registry key has no namespace proof")
    elif (
        publisher_id
        and proof.get("method") == "dns-txt"
        and proof.get("txtRecord") != namespace_record(publisher_id)
    ):
        reasons.append(
            f"namespace proof {proof.get('txtRecord')!r} is not {namespace_record(publisher_id)!r}"
        )
    return reasons


def evaluate(
    source: CartridgeReader | str | Path,
    registry: dict[str, Any] | None = None,
    public_key_pem: str | None = None,
    own_keyids: Iterable[str] = (),
    *,
    now: datetime | None = None,
) -> Verdict:
    """Verdict for a cartridge; raises :class:`acx.core.cartridge.CartridgeError` if unreadable."""
    if isinstance(source, CartridgeReader):
        return _evaluate(source, registry, public_key_pem, set(own_keyids), now)
    with CartridgeReader(source) as reader:
        return _evaluate(reader, registry, public_key_pem, set(own_keyids), now)


def _evaluate(
    reader: CartridgeReader,
    registry: dict[str, Any] | None,
    public_key_pem: str | None,
    own: set[str],
    now: datetime | None,
) -> Verdict:
    at = now or datetime.now(UTC)
    rec = reader.recompute()
    v = Verdict("tampered", manifestHash=rec.manifest_hash)
    tampered = list(rec.problems)
    if rec.problem_count > len(rec.problems):
        tampered.append(f"... {rec.problem_count - len(rec.problems)} more content problems")
    meta = reader.meta()
    stored_hash = meta.get("acx.rom_manifest_hash")
    if stored_hash is not None and stored_hash != rec.manifest_hash:
        tampered.append("meta acx.rom_manifest_hash differs from the recomputed manifest hash")
    inclusion, inc_failures = check_inclusion(reader)
    v.inclusion = inclusion
    tampered.extend(inc_failures)

    sig = reader.signature()
    if sig is None:
        if tampered:
            v.reasons = tampered
            return v
        v.verdict, v.reasons = "legacy", ["no signature envelope"]
        v.publisherId = meta.get("acx.publisher_id")
        return v

    key: PublicKey | None = None
    try:
        key = (
            PublicKey.from_pem(public_key_pem)
            if public_key_pem
            else (PublicKey.from_pem(sig.public_key_pem) if sig.public_key_pem else None)
        )
    except (ValueError, TypeError):
        if public_key_pem:
            raise ValueError("the --public-key given is not an Ed25519 or P-256 public key") from None
        tampered.append("signatures.public_key_pem is not a usable public key")
    statement: dict[str, Any] | None = None
    try:
        env = dsse.parse_envelope(sig.envelope)
        statement = env.statement()
    except dsse.DsseError as exc:
        tampered.append(f"malformed envelope: {exc}")
        env = None
    if env is not None:
        kids = {k for k, _ in env.signatures}
        v.keyid = key.keyid if key else sorted(kids)[0]
        if key is None:
            tampered.append("no public key to verify the envelope with")
        elif key.keyid not in kids:
            tampered.append(f"envelope keyid(s) {sorted(kids)} do not name the verifying key {key.keyid}")
        elif not dsse.verify_envelope(env, key):
            tampered.append("signature does not verify over the DSSE PAE")
        if sig.keyid not in kids:
            tampered.append("signatures.keyid is not a keyid of the envelope")
        if key is not None and sig.alg != key.algorithm:
            tampered.append(f"signatures.alg {sig.alg!r} does not match the key ({key.algorithm})")
    if statement is not None:
        hexd = statement["subject"][0]["digest"]["sha256"]
        pred = statement["predicate"]
        v.publisherId = pred.get("publisherId") if isinstance(pred.get("publisherId"), str) else None
        if "sha256:" + hexd != rec.manifest_hash:
            tampered.append("subject digest differs from the recomputed manifest hash")
        for name in ("manifestHash", "romDigest"):
            if name in pred and pred[name] != rec.manifest_hash:
                tampered.append(f"predicate {name} differs from the recomputed manifest hash")
        if sig.manifest_hash != rec.manifest_hash:
            tampered.append("signatures.manifest_hash differs from the recomputed manifest hash")
        if not rec.problems and ("checksumHash" in pred or "fileCount" in pred):
            checksum, count = reader.checksum()
            if pred.get("checksumHash", checksum) != checksum or pred.get("fileCount", count) != count:
                tampered.append("predicate checksumHash/fileCount differ from the ROM objects")
        if v.publisherId != meta.get("acx.publisher_id"):
            tampered.append("predicate publisherId differs from the bound acx.publisher_id")
    if tampered:
        v.verdict, v.reasons = "tampered", tampered
        return v
    assert key is not None and statement is not None
    v.reasons = ["signature valid over the recomputed ROM manifest"]
    if public_key_pem is None:
        v.reasons.append("verified with the key embedded in the cartridge (self-consistency only)")
    if registry is None:
        v.verdict = "portable"
        v.reasons.append("no trust registry given")
        return v
    problem = registry_problem(registry)
    if problem:
        v.verdict = "portable"
        v.reasons.append(problem)
        return v
    entries = [k for k in registry["keys"] if isinstance(k, dict) and k.get("keyid") == key.keyid]
    if not entries:
        v.verdict = "portable"
        v.reasons.append(f"signer {key.keyid} is not in the registry")
        return v
    why: list[str] = []
    for entry in entries:
        why = eligibility(entry, key.keyid, v.publisherId, key.algorithm, at)
        if not why:
            break
    if why:
        v.verdict = "portable"
        v.reasons.extend(why)
        return v
    v.reasons.append(f"key active in the registry for {v.publisherId}")
    if key.keyid in own:
        v.verdict = "local"
        v.reasons.append("signed with one of our own keys")
    else:
        v.verdict = "trusted"
    return v
