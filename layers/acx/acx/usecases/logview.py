"""Read side of the log: head and checkpoint, verification, and RFC 9162 proofs.

Proofs are built here from one read of the leaf hashes (``LogPort.leaf_hashes``, the same read
export uses), not in the store.
"""

from __future__ import annotations

from typing import Any

from acx.core import merkle
from acx.core.package import PackageRef
from acx.core.rows import ConsistencyProof, InclusionProof
from acx.usecases.deps import Deps
from acx.usecases.errors import ServiceError, not_found
from acx.usecases.verify import verify_package


def _require(deps: Deps, ref: PackageRef) -> int:
    """The package's log size; 404 when it has no log."""
    if not deps.log.package_exists(ref):
        raise not_found()
    return deps.log.head(ref).size


def log_head(deps: Deps, tenant: str, package: str) -> dict[str, Any]:
    ref = PackageRef(tenant, package)
    size = _require(deps, ref)
    return {
        "size": size,
        "checkpoint": deps.log.latest_checkpoint(ref),
        "verifierKey": deps.log.verifier_key(),
    }


def verify(deps: Deps, tenant: str, package: str) -> dict[str, Any]:
    ref = PackageRef(tenant, package)
    _require(deps, ref)
    return verify_package(deps.log, ref, deps.settings.publisher_id).to_dict()


def inclusion_proof(deps: Deps, ref: PackageRef, index: int, size: int) -> InclusionProof:
    leaves = deps.log.leaf_hashes(ref, size)
    proof = merkle.inclusion_proof(index, size, merkle.from_leaves(leaves))
    return InclusionProof(index, size, leaves[index], list(proof))


def consistency_proof(deps: Deps, ref: PackageRef, first: int, second: int) -> ConsistencyProof:
    leaves = deps.log.leaf_hashes(ref, second)
    return ConsistencyProof(
        first, second, list(merkle.consistency_proof(first, second, merkle.from_leaves(leaves)))
    )


def inclusion(deps: Deps, tenant: str, package: str, index: int, size: int) -> dict[str, Any]:
    ref = PackageRef(tenant, package)
    if not 0 <= index < size <= _require(deps, ref):
        raise ServiceError(400, "invalid_range", "need 0 <= index < size <= log size", "index")
    return inclusion_proof(deps, ref, index, size).to_dict()


def consistency(deps: Deps, tenant: str, package: str, first: int, second: int) -> dict[str, Any]:
    ref = PackageRef(tenant, package)
    if not 1 <= first <= second <= _require(deps, ref):
        raise ServiceError(400, "invalid_range", "need 1 <= from <= to <= log size", "from")
    return consistency_proof(deps, ref, first, second).to_dict()
