"""Read side of the log: head and checkpoint, verification, and RFC 9162 proofs."""

from __future__ import annotations

from typing import Any

from acx.usecases.deps import Deps
from acx.usecases.errors import ServiceError, not_found


def _require(deps: Deps, tenant: str, package: str) -> dict[str, Any]:
    head = deps.log.head(tenant, package) if deps.log.package_exists(tenant, package) else None
    if not head:
        raise not_found()
    return head


def log_head(deps: Deps, tenant: str, package: str) -> dict[str, Any]:
    head = _require(deps, tenant, package)
    return {
        "size": int(head.get("size", 0)),
        "checkpoint": deps.log.latest_checkpoint(tenant, package),
        "verifierKey": deps.log.verifier_key(),
    }


def verify(deps: Deps, tenant: str, package: str) -> dict[str, Any]:
    from acx.usecases.verify import verify_package

    _require(deps, tenant, package)
    return verify_package(deps.log, tenant, package).to_dict()  # type: ignore[no-any-return]


def inclusion(deps: Deps, tenant: str, package: str, index: int, size: int) -> dict[str, Any]:
    head = _require(deps, tenant, package)
    if not 0 <= index < size <= int(head.get("size", 0)):
        raise ServiceError(400, "invalid_range", "need 0 <= index < size <= log size", "index")
    return deps.log.inclusion_proof(tenant, package, index, size)  # type: ignore[no-any-return]


def consistency(deps: Deps, tenant: str, package: str, first: int, second: int) -> dict[str, Any]:
    head = _require(deps, tenant, package)
    if not 1 <= first <= second <= int(head.get("size", 0)):
        raise ServiceError(400, "invalid_range", "need 1 <= from <= to <= log size", "from")
    return deps.log.consistency_proof(tenant, package, first, second)  # type: ignore[no-any-return]
