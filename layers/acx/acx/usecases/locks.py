"""Operator lock of a package (scope ``admin``), as the seed's gate locks a session.

While a package is locked every write (inline bundle, upload creation, upload ingest, forget,
export) is refused with 423; reads (recall, log, verify, proofs, downloads) keep working. Lock and
unlock are receipted log entries whose content hash is the sha256 of the canonical
``{"locked": bool, "reason": str|null}``: the free-text reason is never stored, logged or echoed.

Limits: the write paths check the lock when they start. A write that passed the check before the
lock entry was committed can still land after it (the window is one request; the seq claim itself
does not look at the lock). An upload or asynchronous export that is still pending when the lock
lands is rejected when it is processed.
"""

from __future__ import annotations

from typing import Any

from acx.core.canonical import sha256_hex
from acx.core.package import PackageRef
from acx.usecases.deps import Deps
from acx.usecases.errors import ServiceError, not_found
from acx.usecases.ports import PackageHead

MAX_REASON_CHARS = 256
LOCKED_MESSAGE = "package is locked by an operator; writes are refused until it is unlocked"


def locked_error() -> ServiceError:
    return ServiceError(423, "locked", LOCKED_MESSAGE)


def is_locked(deps: Deps, tenant: str, package: str) -> bool:
    """One consistent read of the head item (no item, or never locked: False)."""
    state = deps.log.admin_lock(PackageRef(tenant, package))
    return bool(state and state.get("locked"))


def require_unlocked(
    deps: Deps,
    tenant: str,
    package: str,
    *,
    job: tuple[str, str] | None = None,
    head: PackageHead | None = None,
) -> None:
    """Raise 423 when the package is locked; ``job`` = (kind, id) of a pending job to reject first.
    ``head``: the request's own read of the package head, decided on instead of reading it again."""
    locked = head.admin_locked if head is not None else is_locked(deps, tenant, package)
    if not locked:
        return
    error = locked_error()
    if job is not None:
        kind, job_id = job
        deps.jobs.finish(tenant, package, kind, job_id, "rejected", error=error.body()["error"])
    raise error


def lock_content_hash(locked: bool, reason: str | None) -> str:
    return sha256_hex({"locked": locked, "reason": reason})


def check_reason(reason: Any) -> str | None:
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise ServiceError(422, "invalid_type", "wrong type for reason", "$.reason")
    if len(reason) > MAX_REASON_CHARS:
        raise ServiceError(422, "too_long", f"reason is limited to {MAX_REASON_CHARS} characters", "$.reason")
    return reason


def set_lock(
    deps: Deps, tenant: str, package: str, actor: str, locked: bool, reason: str | None = None
) -> dict[str, Any]:
    """Lock or unlock; idempotent (already in that state: no new entry, ``log`` seqs null)."""
    reason = check_reason(reason)
    ref = PackageRef(tenant, package)
    if not deps.log.package_exists(ref):
        raise not_found()
    if is_locked(deps, tenant, package) == locked:
        return {
            "locked": locked,
            "changed": False,
            "log": {"fromSeq": None, "toSeq": None},
            "checkpoint": deps.log.latest_checkpoint(ref),
        }
    content_hash = lock_content_hash(locked, reason)
    result = deps.log.set_admin_lock(ref, actor, locked, content_hash)
    return {
        "locked": locked,
        "changed": True,
        "contentHash": content_hash,
        "log": {"fromSeq": result.from_seq, "toSeq": result.to_seq},
        "checkpoint": result.checkpoint,
    }
