"""RFC 9162 Merkle tree: every size 1..40 and every index/size pair against a brute-force reference."""

from __future__ import annotations

import hashlib

import pytest

from acx.core import merkle

N = 40
DATA = [hashlib.sha256(str(i).encode()).digest() for i in range(N)]
LEAVES = [merkle.leaf_hash(d) for d in DATA]


def rfc_split(n: int) -> int:
    """RFC 9162's split point: the largest power of two smaller than ``n`` (n >= 2)."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def brute_root(hashes: list[bytes]) -> bytes:
    """Reference MTH written straight from the RFC's recursive definition."""
    if len(hashes) == 1:
        return hashes[0]
    k = rfc_split(len(hashes))
    return hashlib.sha256(b"\x01" + brute_root(hashes[:k]) + brute_root(hashes[k:])).digest()


def test_empty_and_known_values() -> None:
    assert merkle.root([]) == hashlib.sha256(b"").digest()
    assert merkle.root([b"a"]) == hashlib.sha256(b"\x00a").digest()
    two = hashlib.sha256(b"\x01" + hashlib.sha256(b"\x00a").digest() + hashlib.sha256(b"\x00b").digest())
    assert merkle.root([b"a", b"b"]) == two.digest()


def test_compact_range_matches_brute_force_and_roundtrips() -> None:
    cr = merkle.CompactRange()
    for n in range(1, N + 1):
        cr.append(DATA[n - 1])
        assert cr.size == n
        assert len(cr.hashes) == bin(n).count("1")
        expected = brute_root(LEAVES[:n])
        assert cr.root() == expected == merkle.root(DATA[:n])
        again = merkle.CompactRange.from_hex(n, cr.to_hex())
        assert again.root() == expected
        for (lo, hi), h in zip(cr.ranges(), cr.hashes, strict=True):
            assert h == brute_root(LEAVES[lo:hi])


def test_compact_range_rejects_wrong_shape() -> None:
    with pytest.raises(ValueError):
        merkle.CompactRange.from_hex(3, ["00" * 32])
    with pytest.raises(ValueError):
        merkle.CompactRange.from_hex(1, ["00" * 31])


def test_inclusion_all_pairs() -> None:
    get = merkle.from_leaves(LEAVES)
    for size in range(1, N + 1):
        r = brute_root(LEAVES[:size])
        for index in range(size):
            proof = merkle.inclusion_proof(index, size, get)
            assert merkle.verify_inclusion(LEAVES[index], index, size, proof, r)
            # wrong leaf, wrong index, a remainder and a truncation all fail
            other = LEAVES[(index + 1) % size] if size > 1 else b"\x00" * 32
            assert not merkle.verify_inclusion(other, index, size, proof, r)
            if size > 1:
                assert not merkle.verify_inclusion(LEAVES[index], (index + 1) % size, size, proof, r)
                assert not merkle.verify_inclusion(LEAVES[index], index, size, proof[:-1], r)
            assert not merkle.verify_inclusion(LEAVES[index], index, size, [*proof, b"\x00" * 32], r)
        assert not merkle.verify_inclusion(LEAVES[0], size, size, [], r)


def test_consistency_all_pairs() -> None:
    get = merkle.from_leaves(LEAVES)
    roots = [merkle.EMPTY_ROOT] + [brute_root(LEAVES[:n]) for n in range(1, N + 1)]
    for n in range(1, N + 1):
        for m in range(1, n + 1):
            proof = merkle.consistency_proof(m, n, get)
            assert merkle.verify_consistency(m, n, roots[m], roots[n], proof), (m, n)
            assert not merkle.verify_consistency(m, n, roots[m], roots[n], [*proof, roots[1]]), (m, n)
            if m < n:
                # a wrong new root or a wrong old root fails
                assert not merkle.verify_consistency(m, n, roots[m], roots[m], proof), (m, n)
                assert not merkle.verify_consistency(m, n, roots[n], roots[n], proof), (m, n)
                if proof:
                    assert not merkle.verify_consistency(m, n, roots[m], roots[n], proof[:-1]), (m, n)
                    bad = [bytes(32), *proof[1:]]
                    assert not merkle.verify_consistency(m, n, roots[m], roots[n], bad), (m, n)
    assert not merkle.verify_consistency(5, 4, roots[5], roots[4], [])


def test_compact_range_backs_consistency_proof_for_old_part() -> None:
    """The incremental verifier serves old-tree nodes from the witnessed compact range."""
    for m in range(1, 20):
        cr = merkle.CompactRange()
        for d in DATA[:m]:
            cr.append(d)
        for n in range(m, 30):
            full = merkle.from_leaves(LEAVES)

            def get(lo: int, hi: int, cr: merkle.CompactRange = cr, full: merkle.NodeHash = full) -> bytes:
                if hi <= cr.size:
                    node = cr.node(lo, hi)
                    assert node is not None, (lo, hi)
                    return node
                return full(lo, hi)

            assert merkle.consistency_proof(m, n, get) == merkle.consistency_proof(m, n, full)


# Restoring a head, subtree bounds, impossible proof requests, malformed proofs.
#
# The head item and the proofs come from the store or the network; a verifier must refuse what does not
# fit rather than compute a root over it.

SMALL_DATA = [hashlib.sha256(str(i).encode()).digest() for i in range(16)]
SMALL_LEAVES = [merkle.leaf_hash(d) for d in SMALL_DATA]


def test_an_empty_head_restores_to_the_empty_tree() -> None:
    empty = merkle.CompactRange.from_hex(0, [])
    assert empty.size == 0 and empty.hashes == []
    assert empty.root() == merkle.EMPTY_ROOT == hashlib.sha256(b"").digest()
    assert empty.ranges() == [] and empty.to_hex() == []
    empty.append(SMALL_DATA[0])
    assert empty.root() == SMALL_LEAVES[0]


@pytest.mark.parametrize(
    ("size", "count"), [(0, 1), (-1, 0), (-1, 1), (1, 0), (1, 2), (2, 2), (3, 1), (7, 2), (8, 0), (8, 2)]
)
def test_a_head_whose_hash_count_does_not_fit_its_size_is_refused(size: int, count: int) -> None:
    with pytest.raises(ValueError, match="needs"):
        merkle.CompactRange.from_hex(size, ["00" * 32] * count)


@pytest.mark.parametrize("bad", ["00" * 31, "00" * 33, ""])
def test_a_head_hash_that_is_not_32_bytes_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        merkle.CompactRange.from_hex(3, ["00" * 32, bad])


def test_a_restored_head_appends_like_the_original() -> None:
    cr = merkle.CompactRange()
    for d in SMALL_DATA[:11]:
        cr.append(d)
    again = merkle.CompactRange.from_hex(cr.size, cr.to_hex())
    copy = cr.copy()
    for d in SMALL_DATA[11:]:
        again.append(d)
        cr.append(d)
    assert again.root() == cr.root() == merkle.root(SMALL_DATA)
    assert copy.size == 11 and copy.root() == merkle.root(SMALL_DATA[:11])  # the copy did not move
    assert cr.ranges() == [(0, 16)]
    assert cr.node(0, 16) == cr.root() and cr.node(0, 8) is None


def test_compact_range_nodes_are_exactly_its_perfect_subtrees() -> None:
    cr = merkle.CompactRange()
    for d in SMALL_DATA[:13]:
        cr.append(d)
    assert cr.ranges() == [(0, 8), (8, 12), (12, 13)]
    get = merkle.from_leaves(SMALL_LEAVES[:13])
    for lo, hi in cr.ranges():
        assert cr.node(lo, hi) == get(lo, hi)
    assert cr.node(0, 4) is None and cr.node(8, 13) is None


@pytest.mark.parametrize(("lo", "hi"), [(-1, 2), (0, 0), (3, 3), (4, 3), (0, 9), (8, 9), (9, 10)])
def test_subtree_requests_outside_the_tree_are_refused(lo: int, hi: int) -> None:
    get = merkle.from_leaves(SMALL_LEAVES[:8])
    with pytest.raises(IndexError, match="outside"):
        get(lo, hi)


def test_subtree_at_the_edges_is_served() -> None:
    get = merkle.from_leaves(SMALL_LEAVES[:8])
    assert get(0, 8) == merkle.root(SMALL_DATA[:8])
    assert get(7, 8) == SMALL_LEAVES[7]
    assert get(0, 1) == SMALL_LEAVES[0]
    assert get(4, 8) == merkle.root(SMALL_DATA[4:8])
    assert get(0, 8) == get(0, 8)  # memoised answer is the same answer


@pytest.mark.parametrize(("m", "n"), [(5, 4), (1, 0), (-1, 3), (-1, -1)])
def test_no_consistency_proof_from_a_larger_or_negative_size(m: int, n: int) -> None:
    get = merkle.from_leaves(SMALL_LEAVES)
    with pytest.raises(ValueError, match="no consistency proof"):
        merkle.consistency_proof(m, n, get)


def test_trivial_consistency_proofs_are_empty() -> None:
    get = merkle.from_leaves(SMALL_LEAVES)
    assert merkle.consistency_proof(0, 0, get) == []
    assert merkle.consistency_proof(0, 16, get) == []
    assert merkle.consistency_proof(16, 16, get) == []
    r = merkle.root(SMALL_DATA)
    assert merkle.verify_consistency(16, 16, r, r, [])
    assert not merkle.verify_consistency(16, 16, r, r, [r])
    assert not merkle.verify_consistency(16, 16, r, merkle.EMPTY_ROOT, [])
    assert merkle.verify_consistency(0, 16, merkle.EMPTY_ROOT, r, [])
    assert not merkle.verify_consistency(0, 16, merkle.EMPTY_ROOT, r, [r])
    assert not merkle.verify_consistency(-1, 16, merkle.EMPTY_ROOT, r, [])


def test_a_power_of_two_old_size_needs_no_first_element() -> None:
    get = merkle.from_leaves(SMALL_LEAVES)
    proof = merkle.consistency_proof(4, 16, get)
    assert proof == [get(4, 8), get(8, 16)]
    assert merkle.verify_consistency(4, 16, merkle.root(SMALL_DATA[:4]), merkle.root(SMALL_DATA), proof)
    proof6 = merkle.consistency_proof(6, 8, get)
    assert proof6 == [get(4, 6), get(6, 8), get(0, 4)]
    assert not merkle.verify_consistency(6, 8, merkle.root(SMALL_DATA[:6]), merkle.root(SMALL_DATA[:8]), [])


@pytest.mark.parametrize(("index", "size"), [(-1, 4), (4, 4), (0, 0)])
def test_no_inclusion_proof_outside_the_tree(index: int, size: int) -> None:
    with pytest.raises(ValueError, match="not in tree"):
        merkle.inclusion_proof(index, size, merkle.from_leaves(SMALL_LEAVES))
    assert not merkle.verify_inclusion(SMALL_LEAVES[0], index, size, [], merkle.root(SMALL_DATA[:4]))


def test_inclusion_known_answer_for_a_small_tree() -> None:
    get = merkle.from_leaves(SMALL_LEAVES[:3])
    assert merkle.inclusion_proof(2, 3, get) == [get(0, 2)]
    assert merkle.inclusion_proof(0, 3, get) == [SMALL_LEAVES[1], SMALL_LEAVES[2]]
    assert merkle.inclusion_proof(0, 1, get) == []
    assert merkle.verify_inclusion(SMALL_LEAVES[0], 0, 1, [], SMALL_LEAVES[0])
    assert not merkle.verify_inclusion(SMALL_LEAVES[0], 0, 1, [SMALL_LEAVES[0]], SMALL_LEAVES[0])
    root3 = merkle.node_hash(merkle.node_hash(SMALL_LEAVES[0], SMALL_LEAVES[1]), SMALL_LEAVES[2])
    assert merkle.root_of_leaf_hashes(SMALL_LEAVES[:3]) == root3 == merkle.root(SMALL_DATA[:3])
    assert merkle.root_of_leaf_hashes([]) == merkle.EMPTY_ROOT


def test_a_negative_index_never_verifies_even_against_a_one_leaf_tree() -> None:
    assert merkle.verify_inclusion(SMALL_LEAVES[0], 0, 1, [], SMALL_LEAVES[0])
    assert not merkle.verify_inclusion(SMALL_LEAVES[0], -1, 1, [], SMALL_LEAVES[0])
    assert not merkle.verify_inclusion(SMALL_LEAVES[0], -1, 2, [SMALL_LEAVES[1]], merkle.root(SMALL_DATA[:2]))


# RFC 9162 consistency proofs with hashes appended: a proof longer than the one the RFC gives is
# refused for every pair of sizes up to 16, whatever is appended (any node of either tree, or the
# proof's own hashes again), so a padded proof can never pass as a proof of extension.


def _nodes(size: int) -> list[bytes]:
    """Every subtree root of the tree of ``size`` leaves, the hashes a forger has at hand."""
    out: list[bytes] = []

    def walk(lo: int, hi: int) -> None:
        out.append(merkle.root_of_leaf_hashes(SMALL_LEAVES[lo:hi]))
        if hi - lo > 1:
            k = rfc_split(hi - lo)
            walk(lo, lo + k)
            walk(lo + k, hi)

    walk(0, size)
    return out


def test_a_padded_consistency_proof_is_refused_for_every_pair_of_sizes() -> None:
    get = merkle.from_leaves(SMALL_LEAVES)
    for n in range(2, len(SMALL_LEAVES) + 1):
        root_n = merkle.root_of_leaf_hashes(SMALL_LEAVES[:n])
        extras = _nodes(n)
        for m in range(1, n):
            root_m = merkle.root_of_leaf_hashes(SMALL_LEAVES[:m])
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
    l4, l5 = SMALL_LEAVES[4], SMALL_LEAVES[5]
    s04 = merkle.root_of_leaf_hashes(SMALL_LEAVES[:4])
    root6 = merkle.root_of_leaf_hashes(SMALL_LEAVES[:6])
    assert h(s04, h(l4, l5)) == root6
    forged_root7 = h(s04, h(l4, h(l5, root6)))
    forged = [l5, root6, l4, s04]
    assert not merkle.verify_consistency(6, 7, root6, forged_root7, forged)
    honest7 = merkle.root_of_leaf_hashes(SMALL_LEAVES[:7])
    assert merkle.verify_consistency(
        6, 7, root6, honest7, merkle.consistency_proof(6, 7, merkle.from_leaves(SMALL_LEAVES))
    )
