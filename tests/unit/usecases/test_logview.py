"""usecases.logview on fakes: proofs from one read of the leaves, and the range checks before it."""

from __future__ import annotations

import pytest

from acx.core import merkle
from acx.core.package import PackageRef
from acx.usecases import logview
from acx.usecases.errors import ServiceError
from tests.fakes import fake_deps

REF = PackageRef("t1", "notes")
SIZE = 6


@pytest.fixture
def deps():
    d = fake_deps()
    d.log.create(REF, size=SIZE)
    return d


@pytest.fixture
def leaves(deps) -> list[bytes]:
    """The RFC 9162 leaf hashes of the log's entries, computed here from the entries themselves."""
    return [merkle.leaf_hash(bytes.fromhex(e.hash)) for e in deps.log.entries(REF)]


def test_an_inclusion_proof_verifies_against_the_root_of_that_size(deps, leaves) -> None:
    proof = logview.inclusion_proof(deps, REF, 4, 6)
    root = merkle.root_of_leaf_hashes(leaves)
    assert proof.leaf_hash == leaves[4]
    assert merkle.verify_inclusion(proof.leaf_hash, 4, 6, proof.proof, root)
    assert not merkle.verify_inclusion(leaves[3], 4, 6, proof.proof, root)


def test_a_consistency_proof_links_the_two_roots(deps, leaves) -> None:
    proof = logview.consistency_proof(deps, REF, 2, 5)
    old, new = (merkle.root_of_leaf_hashes(leaves[:n]) for n in (2, 5))
    assert merkle.verify_consistency(2, 5, old, new, proof.proof)
    assert not merkle.verify_consistency(2, 5, new, old, proof.proof)


@pytest.mark.parametrize(("index", "size"), [(-1, 3), (3, 3), (0, 7), (0, 0)])
def test_inclusion_outside_the_log_is_400(deps, index, size) -> None:
    with pytest.raises(ServiceError) as info:
        logview.inclusion(deps, "t1", "notes", index, size)
    assert (info.value.status, info.value.code) == (400, "invalid_range")


@pytest.mark.parametrize(("first", "second"), [(0, 3), (4, 3), (1, 7)])
def test_consistency_outside_the_log_is_400(deps, first, second) -> None:
    with pytest.raises(ServiceError) as info:
        logview.consistency(deps, "t1", "notes", first, second)
    assert info.value.status == 400


def test_the_head_of_an_unknown_package_is_404(deps) -> None:
    assert logview.log_head(deps, "t1", "notes")["size"] == 6
    with pytest.raises(ServiceError) as info:
        logview.log_head(deps, "t1", "nope")
    assert info.value.status == 404
