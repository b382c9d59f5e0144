"""Merkle guards: restoring a head, subtree bounds, impossible proof requests, malformed proofs.

The head item and the proofs come from the store or the network; a verifier must refuse what does not
fit rather than compute a root over it.
"""

from __future__ import annotations

import hashlib

import pytest

from acx.core import merkle

DATA = [hashlib.sha256(str(i).encode()).digest() for i in range(16)]
LEAVES = [merkle.leaf_hash(d) for d in DATA]


def test_an_empty_head_restores_to_the_empty_tree() -> None:
    empty = merkle.CompactRange.from_hex(0, [])
    assert empty.size == 0 and empty.hashes == []
    assert empty.root() == merkle.EMPTY_ROOT == hashlib.sha256(b"").digest()
    assert empty.ranges() == [] and empty.to_hex() == []
    empty.append(DATA[0])
    assert empty.root() == LEAVES[0]


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
    for d in DATA[:11]:
        cr.append(d)
    again = merkle.CompactRange.from_hex(cr.size, cr.to_hex())
    copy = cr.copy()
    for d in DATA[11:]:
        again.append(d)
        cr.append(d)
    assert again.root() == cr.root() == merkle.root(DATA)
    assert copy.size == 11 and copy.root() == merkle.root(DATA[:11])  # the copy did not move
    assert cr.ranges() == [(0, 16)]
    assert cr.node(0, 16) == cr.root() and cr.node(0, 8) is None


def test_compact_range_nodes_are_exactly_its_perfect_subtrees() -> None:
    cr = merkle.CompactRange()
    for d in DATA[:13]:
        cr.append(d)
    assert cr.ranges() == [(0, 8), (8, 12), (12, 13)]
    get = merkle.from_leaves(LEAVES[:13])
    for lo, hi in cr.ranges():
        assert cr.node(lo, hi) == get(lo, hi)
    assert cr.node(0, 4) is None and cr.node(8, 13) is None


@pytest.mark.parametrize(("lo", "hi"), [(-1, 2), (0, 0), (3, 3), (4, 3), (0, 9), (8, 9), (9, 10)])
def test_subtree_requests_outside_the_tree_are_refused(lo: int, hi: int) -> None:
    get = merkle.from_leaves(LEAVES[:8])
    with pytest.raises(IndexError, match="outside"):
        get(lo, hi)


def test_subtree_at_the_edges_is_served() -> None:
    get = merkle.from_leaves(LEAVES[:8])
    assert get(0, 8) == merkle.root(DATA[:8])
    assert get(7, 8) == LEAVES[7]
    assert get(0, 1) == LEAVES[0]
    assert get(4, 8) == merkle.root(DATA[4:8])
    assert get(0, 8) == get(0, 8)  # memoised answer is the same answer


@pytest.mark.parametrize(("m", "n"), [(5, 4), (1, 0), (-1, 3), (-1, -1)])
def test_no_consistency_proof_from_a_larger_or_negative_size(m: int, n: int) -> None:
    get = merkle.from_leaves(LEAVES)
    with pytest.raises(ValueError, match="no consistency proof"):
        merkle.consistency_proof(m, n, get)


def test_trivial_consistency_proofs_are_empty() -> None:
    get = merkle.from_leaves(LEAVES)
    assert merkle.consistency_proof(0, 0, get) == []
    assert merkle.consistency_proof(0, 16, get) == []
    assert merkle.consistency_proof(16, 16, get) == []
    r = merkle.root(DATA)
    assert merkle.verify_consistency(16, 16, r, r, [])
    assert not merkle.verify_consistency(16, 16, r, r, [r])
    assert not merkle.verify_consistency(16, 16, r, merkle.EMPTY_ROOT, [])
    assert merkle.verify_consistency(0, 16, merkle.EMPTY_ROOT, r, [])
    assert not merkle.verify_consistency(0, 16, merkle.EMPTY_ROOT, r, [r])
    assert not merkle.verify_consistency(-1, 16, merkle.EMPTY_ROOT, r, [])


def test_a_power_of_two_old_size_needs_no_first_element() -> None:
    get = merkle.from_leaves(LEAVES)
    proof = merkle.consistency_proof(4, 16, get)
    assert proof == [get(4, 8), get(8, 16)]
    assert merkle.verify_consistency(4, 16, merkle.root(DATA[:4]), merkle.root(DATA), proof)
    proof6 = merkle.consistency_proof(6, 8, get)
    assert proof6 == [get(4, 6), get(6, 8), get(0, 4)]
    assert not merkle.verify_consistency(6, 8, merkle.root(DATA[:6]), merkle.root(DATA[:8]), [])


@pytest.mark.parametrize(("index", "size"), [(-1, 4), (4, 4), (0, 0)])
def test_no_inclusion_proof_outside_the_tree(index: int, size: int) -> None:
    with pytest.raises(ValueError, match="not in tree"):
        merkle.inclusion_proof(index, size, merkle.from_leaves(LEAVES))
    assert not merkle.verify_inclusion(LEAVES[0], index, size, [], merkle.root(DATA[:4]))


def test_inclusion_known_answer_for_a_small_tree() -> None:
    get = merkle.from_leaves(LEAVES[:3])
    assert merkle.inclusion_proof(2, 3, get) == [get(0, 2)]
    assert merkle.inclusion_proof(0, 3, get) == [LEAVES[1], LEAVES[2]]
    assert merkle.inclusion_proof(0, 1, get) == []
    assert merkle.verify_inclusion(LEAVES[0], 0, 1, [], LEAVES[0])
    assert not merkle.verify_inclusion(LEAVES[0], 0, 1, [LEAVES[0]], LEAVES[0])
    root3 = merkle.node_hash(merkle.node_hash(LEAVES[0], LEAVES[1]), LEAVES[2])
    assert merkle.root_of_leaf_hashes(LEAVES[:3]) == root3 == merkle.root(DATA[:3])
    assert merkle.root_of_leaf_hashes([]) == merkle.EMPTY_ROOT


def test_a_negative_index_never_verifies_even_against_a_one_leaf_tree() -> None:
    assert merkle.verify_inclusion(LEAVES[0], 0, 1, [], LEAVES[0])
    assert not merkle.verify_inclusion(LEAVES[0], -1, 1, [], LEAVES[0])
    assert not merkle.verify_inclusion(LEAVES[0], -1, 2, [LEAVES[1]], merkle.root(DATA[:2]))
