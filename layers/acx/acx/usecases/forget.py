"""Forget: receipted tombstone in the log, then erase the plaintext everywhere the service keeps it.

Everywhere = the row (log_store), every canonical bundle object in the data bucket that holds the
record (rewritten without it; every old version purged), and every stored cartridge that may hold it
(revoked: versions purged, downloads answer 410). It does NOT reach copies already downloaded by
clients: a cartridge fetched before the forget stays on the client's disk.
"""

from __future__ import annotations

import hashlib
from typing import Any

from acx.usecases.deps import Deps
from acx.usecases.errors import not_found


def forget(
    deps: Deps,
    tenant: str,
    package: str,
    actor: str,
    *,
    record_id: str | None = None,
    content_hash: str | None = None,
) -> dict[str, Any]:
    from acx.adapters.log_store import NotFound
    from acx.usecases.locks import require_unlocked

    if not deps.log.package_exists(tenant, package):
        raise not_found()
    require_unlocked(deps, tenant, package)
    try:
        result = deps.log.forget(tenant, package, actor, record_id=record_id, content_hash=content_hash)
    except NotFound:
        raise not_found("memory") from None
    deps.index().forgotten(tenant, package, result.record_id)  # search index: before the answer
    rewritten = erase_from_bundles(deps, tenant, package, result.record_id, result.content_hash, result.slot)
    revoked = revoke_cartridges(deps, tenant, package, int(result.covers["seq"]))
    return {
        "forgotten": result.record_id,
        "contentHash": result.content_hash,
        "log": {"fromSeq": result.seq, "toSeq": result.seq},
        "checkpoint": result.checkpoint,
        "bundlesRewritten": rewritten,
        "revokedCartridges": revoked,
    }


def erase_from_bundles(
    deps: Deps, tenant: str, package: str, record_id: str, content_hash: str, slot: str | None = None
) -> int:
    """Rewrite each canonical bundle holding the record without it and purge every old version.

    O(bundles of the package): forget is rare, and bundles are not indexed by record.
    """
    from acx.core.canonical import dumps, loads, sha256_hex
    from acx.core.fingerprint import slot_key

    def holds(r: dict[str, Any]) -> bool:
        return (
            r.get("id") == record_id
            or sha256_hex(r) == content_hash
            or (slot is not None and _slot(r) == slot)
        )

    def _slot(r: dict[str, Any]) -> str | None:
        try:
            return slot_key(r)
        except Exception:
            return None

    prefix = f"bundles/{tenant}/{package}/"
    rewritten = 0
    for key in sorted({k for k, _ in deps.data.versions(prefix)}):
        try:
            doc = loads(deps.data.get(key))
        except Exception:
            doc = None
        if doc is not None:
            records = doc.get("records", [])
            kept = [r for r in records if not holds(r)]
            if len(kept) == len(records):
                continue
            doc["records"] = kept
            body = dumps(doc)
            deps.data.put(f"{prefix}{hashlib.sha256(body).hexdigest()}.json", body)
        deps.data.purge(key)
        rewritten += 1
    return rewritten


def revoke_cartridges(deps: Deps, tenant: str, package: str, covers: int) -> list[str]:
    """Revoke every stored cartridge exported while the forgotten entry was in the log."""
    revoked = []
    for job in deps.jobs.list(tenant, package, "export"):
        if job["status"] not in ("ready", "pending"):
            continue
        if int(job.get("logSize", 0)) <= covers:
            continue  # exported before the memory was written
        if job.get("key"):
            deps.cartridges.purge(job["key"])
        deps.jobs.finish(
            tenant,
            package,
            "export",
            job["jobId"],
            "revoked",
            expect=None,
            revokedReason="a memory it contained was forgotten",
        )
        revoked.append(job["jobId"])
    return revoked
