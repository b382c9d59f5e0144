"""Lists for people and scripts: a tenant's packages, a package's uploads, cartridges and log entries.

Every list is tenant-scoped like the other routes (the caller's tenant is part of every key read),
paged with an opaque cursor, and an unknown package answers 404 like another tenant's.
"""

from __future__ import annotations

from typing import Any

from acx.contract import ERR_INVALID_CURSOR
from acx.core.package import PackageRef
from acx.usecases.cartridges import describe_cartridge
from acx.usecases.deps import Deps
from acx.usecases.errors import ServiceError, not_found
from acx.usecases.uploads import describe_upload


def _bad_cursor() -> ServiceError:
    return ServiceError(400, ERR_INVALID_CURSOR, "cursor is not one this service issued", "$.cursor")


def _require(deps: Deps, tenant: str, package: str) -> None:
    if not deps.log.package_exists(PackageRef(tenant, package)):
        raise not_found()


def list_packages(deps: Deps, tenant: str, limit: int, cursor: str | None) -> dict[str, Any]:
    """The caller's packages with record count, log size, last checkpoint and lock state."""
    catalog = deps.catalog()
    try:
        names, next_cursor = catalog.packages(tenant, limit, cursor)
    except ValueError:
        raise _bad_cursor() from None
    out = []
    for package in sorted(names):
        ref = PackageRef(tenant, package)
        head = deps.log.head(ref)  # one read: size and operator lock
        out.append(
            {
                "package": package,
                "records": catalog.active_records(tenant, package),
                "logSize": head.size,
                "lastCheckpoint": deps.log.latest_checkpoint(ref),
                "locked": head.admin_locked,
            }
        )
    return {"packages": out, "nextCursor": next_cursor}


def _job_page(
    deps: Deps, tenant: str, package: str, kind: str, limit: int, cursor: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    _require(deps, tenant, package)
    try:
        return deps.jobs.page(tenant, package, kind, limit, cursor)
    except ValueError:
        raise _bad_cursor() from None


def list_uploads(deps: Deps, tenant: str, package: str, limit: int, cursor: str | None) -> dict[str, Any]:
    jobs, next_cursor = _job_page(deps, tenant, package, "upload", limit, cursor)
    return {"uploads": [describe_upload(job) for job in jobs], "nextCursor": next_cursor}


def list_cartridges(deps: Deps, tenant: str, package: str, limit: int, cursor: str | None) -> dict[str, Any]:
    jobs, next_cursor = _job_page(deps, tenant, package, "export", limit, cursor)
    return {
        "cartridges": [{**describe_cartridge(job), "createdAt": job.get("createdAt")} for job in jobs],
        "nextCursor": next_cursor,
    }


def list_entries(deps: Deps, tenant: str, package: str, limit: int, cursor: str | None) -> dict[str, Any]:
    """Log entries from seq ``cursor`` (a decimal seq; the first page starts at 0)."""
    _require(deps, tenant, package)
    start = 0
    if cursor:
        if not cursor.isdigit() or len(cursor) > 16:
            raise _bad_cursor()
        start = int(cursor)
    ref = PackageRef(tenant, package)
    size = deps.log.head(ref).size
    end = min(size, start + limit)
    out = []
    for entry in deps.log.entries(ref, start, end):
        payload = entry.payload
        key = entry.key[2:] if entry.key and entry.key.startswith("r#") else None
        out.append(
            {
                "seq": entry.seq,
                "operation": str(payload.get("operation")),
                "tier": payload.get("tier"),
                "recordId": key if isinstance(key, str) else None,
                "contentHash": payload.get("contentHash"),
                "hash": entry.hash,
                "prevHash": entry.prev_hash,
                "time": payload.get("createdAt"),
            }
        )
    return {"entries": out, "nextCursor": str(end) if end < size else None}
