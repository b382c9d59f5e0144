"""Export a package as a signed cartridge, store it, and hand out short-lived download URLs.

Small packages export inside the request (201); large ones are queued for the export function
(202 + status). The signer is the KMS key: the private key never leaves KMS.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from acx.core import merkle
from acx.core.checkpoint import parse_checkpoint
from acx.core.package import PackageRef
from acx.usecases.deps import Deps
from acx.usecases.errors import ServiceError, not_found
from acx.usecases.locks import require_unlocked

if TYPE_CHECKING:
    from acx.core.export import Inclusion

SYNC_EXPORT_MAX_RECORDS = 5_000


def cartridge_key(tenant: str, package: str, cartridge_id: str) -> str:
    return f"cartridges/{tenant}/{package}/{cartridge_id}.acx"


def request_export(
    deps: Deps,
    tenant: str,
    package: str,
    actor: str,
    *,
    include_field_learned: bool = False,
    force_async: bool = False,
) -> tuple[int, dict[str, Any]]:
    """Start an export; returns (status code, body)."""
    ref = PackageRef(tenant, package)
    head = deps.log.head(ref)  # one read: existence, operator lock and size
    if not head.size:
        raise not_found()
    require_unlocked(deps, tenant, package, head=head)
    size = head.size
    queue = deps.export_queue() if force_async or size > SYNC_EXPORT_MAX_RECORDS else None
    if queue is not None and not queue.configured:  # refused before the job: no pending job no one runs
        raise ServiceError(
            503, "unavailable", "asynchronous export is not configured", headers={"Retry-After": "5"}
        )
    cartridge_id = uuid.uuid4().hex
    deps.jobs.create(
        tenant,
        package,
        "export",
        cartridge_id,
        actor=actor,
        includeFieldLearned=include_field_learned,
        logSize=size,
    )
    if queue is not None:
        queue.send({"tenant": tenant, "package": package, "cartridgeId": cartridge_id})
        return 202, {"cartridgeId": cartridge_id, "status": "pending"}
    return 201, run_export(deps, tenant, package, cartridge_id)


def run_export(deps: Deps, tenant: str, package: str, cartridge_id: str) -> dict[str, Any]:
    """Build, scrub, sign and store one cartridge; the job records the outcome."""
    # lazy: the writer, scrub gate and embedding load when an export runs, not for the listing and
    # forget routes that import this module (~60 ms of CPU measured, on top of this module)
    from acx.core.export import ExportBlocked, build_cartridge

    job = deps.jobs.get(tenant, package, "export", cartridge_id)
    if job is None:
        raise not_found("cartridge")
    if job["status"] != "pending":
        if job["status"] == "revoked" and job.get("key"):
            # A redelivery after the purge of a revoked cartridge failed (PurgeIncomplete): purge
            # again, or the object would outlive the forget that revoked it.
            deps.cartridges.purge(job["key"])
        return describe_cartridge(job)

    require_unlocked(deps, tenant, package, job=("export", cartridge_id))  # queued before the lock
    ref = PackageRef(tenant, package)
    checkpoint = deps.log.latest_checkpoint(ref)
    size = int(job.get("logSize", 0))
    fd, path = tempfile.mkstemp(suffix=".acx")
    os.close(fd)
    os.unlink(path)
    records, inclusion = _rows_with_proofs(deps, ref, checkpoint)
    try:
        try:
            result = build_cartridge(
                path,
                records,
                [(cartridge_path(p), c.encode("utf-8")) for p, c in deps.log.read_files(ref)],
                signer=deps.signer,
                publisher_id=deps.settings.publisher_id,
                include_field_learned=bool(job.get("includeFieldLearned")),
                checkpoint=checkpoint,
                verifier_key=deps.log.verifier_key(),
                inclusion=inclusion,
                forbidden=_repo_identifiers(deps, ref),
                artifact_id=f"{tenant}/{package}",
                artifact_version=str(size),
                cartridge_id=cartridge_id,  # the id the API returns is the one the signature covers
                validity_of=_validity(deps, ref),
            )
        except ExportBlocked as exc:
            report = exc.report.to_dict()
            deps.jobs.finish(tenant, package, "export", cartridge_id, "blocked", report=report)
            raise ServiceError(
                422,
                "blocked",
                "the scrub gate blocked the export",
                extra={"report": report, "cartridgeId": cartridge_id},
            ) from None
        key = cartridge_key(tenant, package, cartridge_id)
        # Name the object in the job BEFORE it exists: if the upload or the final job update fails
        # (the object may have landed anyway), a later forget still finds and purges it.
        if not deps.jobs.finish(tenant, package, "export", cartridge_id, "pending", key=key):
            return describe_cartridge(deps.jobs.get(tenant, package, "export", cartridge_id) or job)
        deps.cartridges.upload_file(key, path, "application/vnd.acx.cartridge+sqlite3")
        fields: dict[str, Any] = {
            "key": key,
            "manifestHash": result.manifest_hash,
            "keyid": result.keyid,
            "counts": result.counts,
            "quarantined": result.quarantined,
            "bytes": os.path.getsize(path),
        }
        if not deps.jobs.finish(tenant, package, "export", cartridge_id, "ready", **fields):
            # Revoked by a forget while it was being built: the object must not outlive the job.
            deps.cartridges.purge(key)
    finally:
        if os.path.exists(path):
            os.unlink(path)
    job = deps.jobs.get(tenant, package, "export", cartridge_id) or {}
    return describe_cartridge(job)


def cartridge_path(package_path: str) -> str:
    """Where a package file lives in the ROM zone: knowledge under rom/knowledge/, skills as uploaded."""
    if package_path.startswith("skills/"):
        return f"rom/{package_path}"
    return f"rom/knowledge/{package_path.removeprefix('knowledge/')}"


def _repo_identifiers(deps: Deps, ref: PackageRef) -> tuple[str, ...]:
    """The package's repo ids (of field-learned records): forbidden literals at the export boundary."""
    repos = {(row.record or {}).get("repoId") for row in deps.log.active_rows(ref)}
    return tuple(sorted(r for r in repos if isinstance(r, str) and len(r) >= 3))


def _rows_with_proofs(
    deps: Deps, ref: PackageRef, checkpoint: str | None
) -> tuple[Iterator[dict[str, Any]], Inclusion | None]:
    """Active beliefs (streamed) and, per record, its RFC 9162 inclusion proof against ``checkpoint``.

    The leaf hashes are read once and subtree hashes memoised, so proofs for n records cost O(n).
    """
    from acx.core.export import EntryProof  # lazy: as in run_export

    entry_of: dict[str, tuple[int, str]] = {}

    def records() -> Iterator[dict[str, Any]]:
        for row in deps.log.active_rows(ref):
            if row.trust != "belief":
                continue  # cartridges carry beliefs only: a candidate waits for its review
            entry_of[row.id] = (row.seq, row.entry_hash)
            assert row.record is not None
            yield row.record

    if checkpoint is None:
        return records(), None
    size = parse_checkpoint(checkpoint).size
    tree: list[merkle.NodeHash] = []

    def proof(record_id: str) -> EntryProof | None:
        seq, entry_hash = entry_of.get(record_id, (size, ""))
        if seq >= size:
            return None  # written after the checkpoint was read: no proof against it
        if not tree:
            tree.append(merkle.from_leaves(deps.log.leaf_hashes(ref, size)))
        path = merkle.inclusion_proof(seq, size, tree[0])
        return EntryProof(seq, size, [p.hex() for p in path], entry_hash)

    return records(), proof


def _validity(deps: Deps, ref: PackageRef) -> Callable[[str], dict[str, Any] | None]:
    """Per memory id, the current version's valid time and lineage (the memory-versions extension),
    from the package's entries, read once when the export asks for the first one (O(log), like the
    leaf hashes the inclusion proofs read)."""
    from acx.core import versions

    table: dict[str, dict[str, Any]] = {}

    def of(record_id: str) -> dict[str, Any] | None:
        if not table:
            for rid, entries in versions.by_memory(deps.log.entries(ref)).items():
                history = versions.versions(entries)
                current = history[-1] if history and history[-1].current else None
                if current is None:
                    continue
                began = next((e for e in entries if e.seq == current.first_seq), None)
                covers = began.covers if began is not None and began.operation == "supersede" else None
                table[rid] = {
                    "memoryId": rid,
                    "contentHash": current.content_hash,
                    "seq": current.seq,
                    "validFrom": current.valid_from,
                    "versions": len(history),
                    "supersedes": {"seq": covers.seq, "hash": covers.hash} if covers else None,
                }
            table.setdefault("", {})  # read once, even for a package with no memory entries
        return table.get(record_id)

    return of


def describe_cartridge(job: dict[str, Any]) -> dict[str, Any]:
    """The API view of an export job (no storage key, no actor)."""
    out = {"cartridgeId": job.get("jobId"), "status": job.get("status")}
    for field in ("manifestHash", "keyid", "counts", "quarantined", "bytes", "report", "revokedReason"):
        if field in job:
            out[field] = job[field]
    if job.get("status") == "ready":
        q = job.get("quarantined") or 0
        out["fieldLearned"] = (
            "included" if job.get("includeFieldLearned") else f"quarantined ({q} record(s) not exported)"
        )
    return out


def download(deps: Deps, tenant: str, package: str, cartridge_id: str) -> dict[str, Any]:
    """A presigned GET for one cartridge; 410 once revoked by a forget."""
    job = deps.jobs.get(tenant, package, "export", cartridge_id)
    if job is None:
        raise not_found("cartridge")
    if job["status"] == "revoked":
        raise ServiceError(410, "gone", "this cartridge was revoked because a memory it held was forgotten")
    if job["status"] != "ready":
        return describe_cartridge(job)
    ttl = deps.settings.download_url_ttl
    url = deps.cartridges.presign_get(job["key"], ttl)
    return {**describe_cartridge(job), "url": url.url, "expiresIn": ttl, "expiresAt": int(time.time()) + ttl}
