"""The one export flow: boundary, scrub gate, write, build the statement, sign, commit (no boto3).

Pure apart from the file it writes and the injected signer (``acx.core.signing.Signer``: KMS in the
service, a local key in tests and the CLI): ``writer.seal`` gives the in-toto Statement,
``dsse.sign_statement`` signs it, ``writer.commit`` stores the envelope. The caller
(``usecases.cartridges``) wires S3, DynamoDB and KMS around :func:`build_cartridge`.
Records stream through: the scrub gate scans each chunk of boundary-applied payloads before it is
written, so memory stays bounded; if anything is blocked, the partial file is deleted and
:class:`ExportBlocked` is raised, so a blocked export leaves nothing behind.

The gate does NOT stop a secret it has no rule for (fail-closed only over known shapes), nor a
publisher who signs something harmful on purpose: the signature says who, not whether it is good.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acx.core import dsse
from acx.core.cartridge import CartridgeError, CartridgeWriter, log_attestation, memory_payload, validity
from acx.core.cartridge.format import now_rfc3339
from acx.core.cartridge.log_attestation import InclusionEntry
from acx.core.checkpoint import parse_checkpoint, verify_checkpoint
from acx.core.embedding import EmbeddingEngine, LocalHash128, memory_text
from acx.core.log import content_hash
from acx.core.records import zone_of
from acx.core.scrub import scan_bundle
from acx.core.signing import Signer

CHUNK = 2000


@dataclass(frozen=True)
class EntryProof:
    """A record's log entry and its RFC 9162 inclusion proof: leaf ``index`` in a tree of ``size``,
    the audit ``path`` (hex), and the ``entry_hash`` (hex) its leaf is ``sha256(0x00 || entry)`` of."""

    index: int
    size: int
    path: list[str]
    entry_hash: str


Inclusion = Callable[[str], EntryProof | None]  # record id -> its proof (None: not in the checkpoint)
#: record id -> its version's validity entry (:mod:`acx.core.cartridge.validity`), None: unknown
Validity = Callable[[str], dict[str, Any] | None]


class ExportBlocked(Exception):
    """The scrub gate blocked the export; ``report`` names where (never the secret)."""

    def __init__(self, report: Any) -> None:
        super().__init__("the scrub gate blocked the export")
        self.report = report


@dataclass
class ExportResult:
    """What was signed: manifest hash, signing key id, counts, and how many SAVE records stayed home."""

    manifest_hash: str
    keyid: str
    counts: dict[str, Any] = field(default_factory=dict)
    quarantined: int = 0
    cartridge_id: str = ""


@dataclass
class _Gate:
    forbidden: Sequence[str]
    findings: list[Any] = field(default_factory=list)
    warnings: list[Any] = field(default_factory=list)
    report: Any = None

    def scan(
        self, records: list[dict[str, Any]], knowledge: list[tuple[str, str]], skills: list[tuple[str, str]]
    ) -> None:
        report = scan_bundle(records, knowledge, skills, list(self.forbidden))
        self.warnings.extend(getattr(report, "warnings", []) or [])
        if report.blocked:
            self.findings.extend(report.findings)
            if self.report is None:
                self.report = report

    @property
    def blocked(self) -> bool:
        return self.report is not None


def _proof_entry(
    rid: str, record: dict[str, Any], got: EntryProof | None, size: int
) -> InclusionEntry | None:
    if got is None:
        return None  # no proof against this checkpoint (the record came after it)
    if got.size != size:
        raise ValueError(f"inclusion proof for {rid} is for tree size {got.size}, checkpoint has {size}")

    return InclusionEntry(rid, content_hash(record), got.entry_hash, got.index, list(got.path))


def build_cartridge(
    path: str | Path,
    records: Iterable[dict[str, Any]],
    files: Iterable[tuple[str, bytes]],
    *,
    signer: Signer,
    publisher_id: str,
    include_field_learned: bool = False,
    checkpoint: str | None = None,
    verifier_key: str | None = None,
    inclusion: Inclusion | None = None,
    forbidden: Sequence[str] = (),
    artifact_id: str,
    artifact_version: str,
    vectors: bool = True,
    capabilities: Iterable[dict[str, Any]] = (),
    provenance_instance_id: str | None = None,
    meta: dict[str, str] | None = None,
    cartridge_id: str | None = None,
    validity_of: Validity | None = None,
    exported_at: str | None = None,
    engine: EmbeddingEngine | None = None,
) -> ExportResult:
    """Write and sign a cartridge at ``path``; raise :class:`ExportBlocked` if the gate blocks.

    ``inclusion(record_id)`` returns the :class:`EntryProof` of that record's log entry (or None).
    When every ROM record has one, a ``log-checkpoint`` attestation is embedded as the ROM file
    ``rom/attestations/log-checkpoint.json`` (see :mod:`acx.core.cartridge.log_attestation`;
    callers' files may not use ``rom/attestations/``); otherwise it is omitted and
    ``counts['inclusion']`` says which record had none.
    ``cartridge_id`` becomes the signed ``acx.cartridge_id`` (and the Statement's subject name), so
    the id the service hands out is the one the signature covers.
    ``validity_of(record_id)``: the exported version's valid time and lineage; when any ROM memory
    has changed (more than one version, or a given valid time), the memory-versions extension is
    embedded as the ROM file ``rom/attestations/memory-versions.json`` (:mod:`acx.core.cartridge.validity`).
    ``engine`` makes the SAVE-zone vectors (``vectors``: whether to write them) and is the signed
    ``acx.embedding_engine`` tag they carry: both come from the one object, so a cartridge's vectors are
    always tagged with the engine that made them. Default: the reference engine ``local-hash-128``,
    whose vectors any ACX consumer can reproduce bit for bit (a consumer re-indexes with its own
    engine either way, ACX §7.6).
    """
    embedder = engine or LocalHash128()
    engine_tag = {"id": embedder.id, "dim": embedder.dim}
    gate = _Gate(forbidden)
    quarantined = 0
    cp_size = 0
    if checkpoint is not None:
        cp = verify_checkpoint(checkpoint, verifier_key) if verifier_key else parse_checkpoint(checkpoint)
        cp_size = cp.size
    proofs: list[InclusionEntry] = []
    valid: list[dict[str, Any]] = []
    proof_note: str | None = None if checkpoint and verifier_key and inclusion else "no checkpoint given"
    with CartridgeWriter(
        path,
        artifact_id=artifact_id,
        artifact_version=artifact_version,
        embedding_engine=engine_tag,
        meta=meta,
    ) as writer:
        batch: list[tuple[dict[str, Any], str, dict[str, Any]]] = []

        def drain() -> None:
            gate.scan([p for _, _, p in batch], [], [])
            if not gate.blocked:
                texts = [memory_text(p) for _, _, p in batch]
                vecs: list[list[float] | None] = (
                    list(embedder.embed(texts)) if vectors else [None] * len(batch)
                )
                for (original, zone, _), vec in zip(batch, vecs, strict=True):
                    writer.add_memory(original, zone, vec)
            batch.clear()

        for record in records:
            zone = zone_of(record)
            if zone == "save" and not include_field_learned:
                quarantined += 1
                continue
            payload, _ = memory_payload(record, zone)
            batch.append((record, zone, payload))
            if zone == "rom" and validity_of is not None:
                entry_validity = validity_of(str(record["id"]))
                if entry_validity is not None:
                    valid.append(entry_validity)
            if zone == "rom" and proof_note is None:
                assert inclusion is not None
                entry = _proof_entry(str(record["id"]), record, inclusion(str(record["id"])), cp_size)
                if entry is None:
                    proof_note = f"no inclusion proof with an entry hash for {record['id']}"
                    proofs.clear()
                else:
                    proofs.append(entry)
            if len(batch) >= CHUNK:
                drain()
        if batch:
            drain()
        for name, data in files:
            if name.startswith(log_attestation.RESERVED_PREFIX):
                raise CartridgeError(f"{name}: rom/attestations/ is reserved for the service's attestations")
            text = bytes(data).decode("utf-8", errors="replace")
            is_skill = name.endswith("/SKILL.md")
            gate.scan([], [] if is_skill else [(name, text)], [(name, text)] if is_skill else [])
            if not gate.blocked:
                writer.add_file(name, data)
        if gate.blocked:
            raise ExportBlocked(_merged_report(gate))
        for cap in capabilities:
            writer.add_capability(cap)
        if any(v.get("versions", 1) > 1 or v.get("supersedes") for v in valid):
            validity.write(writer, validity.document(exported_at or now_rfc3339(), valid))
        inclusion_info: dict[str, Any] = {"embedded": False}
        if proof_note is None:
            assert checkpoint is not None and verifier_key is not None
            log_attestation.write(writer, log_attestation.document(checkpoint, verifier_key, proofs))
            inclusion_info = {"embedded": True, "proofs": len(proofs), "treeSize": cp_size}
        else:
            inclusion_info["reason"] = proof_note
        statement = writer.seal(
            publisher_id, cartridge_id=cartridge_id, provenance_instance_id=provenance_instance_id
        )
        envelope = dsse.sign_statement(statement, signer)
        result = writer.commit(envelope, signer.public_key_der(), signer.algorithm)
    counts: dict[str, Any] = dict(result.counts)
    counts["quarantined"] = quarantined
    counts["inclusion"] = inclusion_info
    return ExportResult(result.manifest_hash, result.keyid, counts, quarantined, result.cartridge_id)


def _merged_report(gate: _Gate) -> Any:
    """One report for every blocked chunk (the first chunk's report object, findings from all)."""
    report = gate.report
    if dataclasses.is_dataclass(report) and not isinstance(report, type):
        return dataclasses.replace(report, findings=list(gate.findings))  # type: ignore[type-var]
    return report
