"""RFC 9162 Merkle tree: every size 1..40 and every index/size pair against a brute-force reference."""

from __future__ import annotations

import hashlib

import pytest

from acx.core import merkle

N = 40
DATA = [hashlib.sha256(str(i).encode()).digest() for i in range(N)]
LEAVES = [merkle.leaf_hash(d) for d in DATA]


def brute_root(hashes: list[bytes]) -> bytes:
    """Reference MTH written straight from the RFC's recursive definition."""
    if len(hashes) == 1:
        return hashes[0]
    k = 1
    while k * 2 < len(hashes):
        k *= 2
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
