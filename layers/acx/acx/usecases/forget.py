"""Forget: receipted tombstone in the log, then erase the plaintext everywhere the service keeps it.

Everywhere = the rows (every active row of the package with the same knowledge, both tiers, erased in
the same serialized commit that files the tombstones), every canonical bundle object in the data
bucket that holds the memory or file (rewritten without it; every old version purged), and every
stored cartridge that may hold it (revoked: versions purged, downloads answer 410). It does NOT reach
copies already downloaded by clients: a cartridge fetched before the forget stays on their disk.

A repeated forget is idempotent: it answers with the first forget's entry and checkpoint (``repeated``
true, no new log entry), and redoes the erasure of bundles and cartridges (a no-op unless the first
call stopped half-way).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from typing import Any

from acx.core import erasure, forgetting
from acx.core.canonical import dumps, loads
from acx.core.package import PackageRef
from acx.core.rows import LogRow, NotFound, Tombstones
from acx.usecases.deps import Deps
from acx.usecases.errors import not_found
from acx.usecases.locks import require_unlocked


def tombstones_for(keyer: forgetting.Keyer, near: forgetting.NearPolicy) -> Callable[[LogRow], Tombstones]:
    """The tombstones each forgotten row files (:func:`acx.core.erasure.tombstones_of`)."""
    return functools.partial(erasure.tombstones_of, keyer, near)


def _forgettable(deps: Deps, tenant: str, package: str) -> PackageRef:
    """The package a forget may write to: it exists in the caller's tenant (else 404) and no
    operator lock holds it (else 423)."""
    ref = PackageRef(tenant, package)
    head = deps.log.head(ref)  # one read: existence and operator lock
    if not head.size:
        raise not_found()
    require_unlocked(deps, tenant, package, head=head)
    return ref


def forget(
    deps: Deps,
    tenant: str,
    package: str,
    actor: str,
    *,
    record_id: str | None = None,
    content_hash: str | None = None,
) -> dict[str, Any]:
    ref = _forgettable(deps, tenant, package)
    stones = tombstones_for(deps.forget_keys, deps.near)
    try:
        result = deps.log.forget(
            ref, actor, record_id=record_id, content_hash=content_hash, tombstones=stones
        )
    except NotFound:
        raise not_found("memory") from None
    ids = {result.record_id, *result.also}
    keys = set(result.knowledge)
    keyer = deps.forget_keys

    def holds(r: dict[str, Any]) -> bool:
        return r.get("id") in ids or forgetting.knowledge_key(keyer, r.get("title"), r.get("summary")) in keys

    for rid in sorted(ids):
        deps.index().forgotten(ref.tenant, ref.package, rid)  # search index: before the answer
    rewritten = erase_from_bundles(deps, ref, holds, lambda _p, _c: False)
    revoked = revoke_cartridges(deps, ref, int(result.covers["seq"]))
    return {
        "forgotten": result.record_id,
        "alsoForgotten": result.also,
        "contentHash": result.content_hash,
        "log": {"fromSeq": result.seq, "toSeq": result.to_seq if result.to_seq is not None else result.seq},
        "checkpoint": result.checkpoint,
        "repeated": result.repeated,
        "bundlesRewritten": rewritten,
        "revokedCartridges": revoked,
    }


def forget_file(
    deps: Deps,
    tenant: str,
    package: str,
    actor: str,
    *,
    path: str | None = None,
    content_hash: str | None = None,
) -> dict[str, Any]:
    """Forget one knowledge or skill file (by path, or by the content hash of its log entry)."""
    ref = _forgettable(deps, tenant, package)
    keyer = deps.forget_keys
    try:
        row, plan = deps.log.forget_file(
            ref, actor, path, content_hash, lambda content: forgetting.file_key(keyer, content)
        )
    except NotFound:
        raise not_found("file") from None
    if plan is None:  # already forgotten: the first forget's entry (the row's seq) and checkpoint
        seq = row.seq
        checkpoint = deps.log.checkpoint_at(ref, seq + 1)
        covers = row.forgotten_seq if row.forgotten_seq is not None else seq
    else:
        seq, covers = plan.first_seq, row.seq
        checkpoint = deps.log.checkpoint_at(ref, plan.size)
    fk = row.file_key or (forgetting.file_key(keyer, row.content) if row.content is not None else None)

    def same(p: str, c: str) -> bool:
        return p == row.path or (fk is not None and forgetting.file_key(keyer, c) == fk)

    rewritten = erase_from_bundles(deps, ref, lambda _r: False, same)
    revoked = revoke_cartridges(deps, ref, covers)
    return {
        "forgottenFile": row.path,
        "contentHash": row.content_hash,
        "log": {"fromSeq": seq, "toSeq": seq},
        "checkpoint": checkpoint,
        "repeated": plan is None,
        "bundlesRewritten": rewritten,
        "revokedCartridges": revoked,
    }


def erase_from_bundles(
    deps: Deps,
    ref: PackageRef,
    holds: Callable[[dict[str, Any]], bool],
    holds_file: Callable[[str, str], bool],
) -> int:
    """Rewrite each canonical bundle holding a forgotten record or file without it; purge every old
    version. O(bundles of the package): forget is rare, and bundles are not indexed by record."""
    prefix = ref.prefix("bundles")
    rewritten = 0
    for key in sorted({k for k, _ in deps.data.versions(prefix)}):
        try:
            doc = loads(deps.data.get(key))
        except Exception:
            doc = None
        if doc is not None:
            records = doc.get("records", [])
            kept = [r for r in records if not (isinstance(r, dict) and holds(r))]
            files = {
                part: [
                    f for f in doc.get(part, []) if not holds_file(str(f.get("path")), str(f.get("content")))
                ]
                for part in ("knowledge", "skills")
            }
            if len(kept) == len(records) and all(len(files[p]) == len(doc.get(p, [])) for p in files):
                continue
            doc["records"] = kept
            for part, remaining in files.items():
                if part in doc:
                    doc[part] = remaining
            doc.pop("vectors", None)  # derived from the text
            body = dumps(doc)
            deps.data.put(f"{prefix}{hashlib.sha256(body).hexdigest()}.json", body)
        deps.data.purge(key)
        rewritten += 1
    return rewritten


def revoke_cartridges(deps: Deps, ref: PackageRef, covers: int) -> list[str]:
    """Revoke every stored cartridge exported while the forgotten entry was in the log."""
    revoked = []
    for job in deps.jobs.list(ref.tenant, ref.package, "export"):
        if job["status"] not in ("ready", "pending"):
            continue
        if int(job.get("logSize", 0)) <= covers:
            continue  # exported before the memory was written
        if job.get("key"):
            deps.cartridges.purge(job["key"])
        deps.jobs.finish(
            ref.tenant,
            ref.package,
            "export",
            job["jobId"],
            "revoked",
            expect=None,
            revokedReason="a memory or file it contained was forgotten",
        )
        revoked.append(job["jobId"])
    return revoked
