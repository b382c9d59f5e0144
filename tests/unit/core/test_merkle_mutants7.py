"""RFC 9162 consistency proofs with hashes appended: a proof longer than the one the RFC gives is
refused for every pair of sizes up to 16, whatever is appended (any node of either tree, or the
proof's own hashes again), so a padded proof can never pass as a proof of extension."""

from __future__ import annotations

from acx.core import merkle

N = 16
LEAVES = [merkle.leaf_hash(f"leaf {i}".encode()) for i in range(N)]


def _nodes(size: int) -> list[bytes]:
    """Every subtree root of the tree of ``size`` leaves, the hashes a forger has at hand."""
    out: list[bytes] = []

    def walk(lo: int, hi: int) -> None:
        out.append(merkle.root_of_leaf_hashes(LEAVES[lo:hi]))
        if hi - lo > 1:
            k = merkle._split(hi - lo)
            walk(lo, lo + k)
            walk(lo + k, hi)

    walk(0, size)
    return out


def test_a_padded_consistency_proof_is_refused_for_every_pair_of_sizes() -> None:
    get = merkle.from_leaves(LEAVES)
    for n in range(2, N + 1):
        root_n = merkle.root_of_leaf_hashes(LEAVES[:n])
        extras = _nodes(n)
        for m in range(1, n):
            root_m = merkle.root_of_leaf_hashes(LEAVES[:m])
            proof = merkle.consistency_proof(m, n, get)
            assert merkle.verify_consistency(m, n, root_m, root_n, proof)
            for extra in [*extras, *_nodes(m), *proof]:
                assert not merkle.verify_consistency(m, n, root_m, root_n, [*proof, extra]), (m, n)
                assert not merkle.verify_consistency(m, n, root_m, root_n, [*proof, extra, extra]), (m, n)


def test_a_proof_one_level_deeper_than_the_tree_is_refused_with_the_root_it_forges() -> None:
    """A forger starts inside the old tree's last full subtree (its right leaf), so the proof climbs one
    level more than a 7-leaf tree has. The old root still comes out right, and the 'new root' is one the
    forger computes to match: H(s[0:4], H(l4, H(l5, root6))), which holds root6 itself as a leaf-level
    value, so it extends nothing. RFC 9162 ends the walk when the new tree's index is exhausted
    (sn == 0) and fails; only that step stops this one."""
    h = merkle.node_hash
    l4, l5 = LEAVES[4], LEAVES[5]
    s04 = merkle.root_of_leaf_hashes(LEAVES[:4])
    root6 = merkle.root_of_leaf_hashes(LEAVES[:6])
    assert h(s04, h(l4, l5)) == root6
    forged_root7 = h(s04, h(l4, h(l5, root6)))
    forged = [l5, root6, l4, s04]
    assert not merkle.verify_consistency(6, 7, root6, forged_root7, forged)
    honest7 = merkle.root_of_leaf_hashes(LEAVES[:7])
    assert merkle.verify_consistency(
        6, 7, root6, honest7, merkle.consistency_proof(6, 7, merkle.from_leaves(LEAVES))
    )
