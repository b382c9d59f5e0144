"""RFC 9162 Merkle tree over log entry hashes: roots, compact ranges, inclusion and consistency proofs.

Leaves are the entry hash bytes; leaf hash = sha256(0x00 || data), interior node = sha256(0x01 || l || r).
Ingest only ever touches a :class:`CompactRange` (O(log n) hashes kept in the head item), so appending
costs the same at 10 or 10 million entries. Proof generation takes a ``node_hash(lo, hi)`` callable
returning the hash of the perfect-or-rightmost subtree over leaves ``[lo, hi)``; :func:`from_leaves`
builds one from the list of all leaf hashes (fine for the sizes we serve).

Verifiers consume every proof element: a proof with an unconsumed remainder is rejected, so an attacker
cannot pad a proof. These proofs do not stop an attacker who holds the checkpoint signing key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

NodeHash = Callable[[int, int], bytes]

EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(data: bytes) -> bytes:
    """Hash of one leaf; the 0x00 prefix keeps leaves and nodes from being confused (second preimage)."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """Hash of an interior node (0x01 prefix)."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """Largest power of two strictly smaller than ``n`` (n >= 2)."""
    return 1 << ((n - 1).bit_length() - 1)


def _subtree(leaf_hashes: Sequence[bytes], lo: int, hi: int) -> bytes:
    n = hi - lo
    if n == 1:
        return leaf_hashes[lo]
    k = _split(n)
    return node_hash(_subtree(leaf_hashes, lo, lo + k), _subtree(leaf_hashes, lo + k, hi))


def root_of_leaf_hashes(leaf_hashes: Sequence[bytes]) -> bytes:
    """MTH over already-hashed leaves."""
    if not leaf_hashes:
        return EMPTY_ROOT
    return _subtree(leaf_hashes, 0, len(leaf_hashes))


def root(leaves: Sequence[bytes]) -> bytes:
    """MTH(D[n]) over raw leaf data (entry hash bytes)."""
    return root_of_leaf_hashes([leaf_hash(d) for d in leaves])


def from_leaves(leaf_hashes: Sequence[bytes]) -> NodeHash:
    """A ``node_hash(lo, hi)`` backed by the full list of leaf hashes.

    Subtree hashes are memoised: proofs for every leaf of one tree (a cartridge export) touch O(n)
    distinct subtrees in all, instead of O(n) hashing per proof.
    """
    memo: dict[tuple[int, int], bytes] = {}

    def sub(lo: int, hi: int) -> bytes:
        if hi - lo == 1:
            return leaf_hashes[lo]
        got = memo.get((lo, hi))
        if got is None:
            k = _split(hi - lo)
            got = memo[(lo, hi)] = node_hash(sub(lo, lo + k), sub(lo + k, hi))
        return got

    def get(lo: int, hi: int) -> bytes:
        if not 0 <= lo < hi <= len(leaf_hashes):
            raise IndexError(f"subtree [{lo}, {hi}) outside 0..{len(leaf_hashes)}")
        return sub(lo, hi)

    return get


@dataclass
class CompactRange:
    """The perfect subtrees covering leaves [0, size), left to right (one per set bit of ``size``)."""

    size: int = 0
    hashes: list[bytes] = field(default_factory=list)

    def append_leaf_hash(self, h: bytes) -> None:
        """Add one leaf hash, merging equal-height subtrees (amortised O(1), worst O(log n))."""
        s = self.size
        while s & 1:
            h = node_hash(self.hashes.pop(), h)
            s >>= 1
        self.hashes.append(h)
        self.size += 1

    def append(self, data: bytes) -> None:
        """Add one leaf given its data (an entry hash)."""
        self.append_leaf_hash(leaf_hash(data))

    def root(self) -> bytes:
        """Tree root in O(log n): fold the subtrees right to left."""
        if not self.hashes:
            return EMPTY_ROOT
        r = self.hashes[-1]
        for h in reversed(self.hashes[:-1]):
            r = node_hash(h, r)
        return r

    def ranges(self) -> list[tuple[int, int]]:
        """The leaf interval [lo, hi) that each stored hash covers."""
        out: list[tuple[int, int]] = []
        lo = 0
        for bit in reversed(range(self.size.bit_length())):
            if self.size >> bit & 1:
                out.append((lo, lo + (1 << bit)))
                lo += 1 << bit
        return out

    def node(self, lo: int, hi: int) -> bytes | None:
        """The stored hash for exactly [lo, hi), else None."""
        for (a, b), h in zip(self.ranges(), self.hashes, strict=True):
            if (a, b) == (lo, hi):
                return h
        return None

    def to_hex(self) -> list[str]:
        """Serialised form kept in the head item."""
        return [h.hex() for h in self.hashes]

    @classmethod
    def from_hex(cls, size: int, hashes: Sequence[str]) -> CompactRange:
        """Rebuild from the head item; raise ValueError if the hash count does not fit ``size``."""
        if size < 0 or len(hashes) != bin(size).count("1"):
            raise ValueError(f"compact range of size {size} needs {bin(size).count('1')} hashes")
        decoded = [bytes.fromhex(h) for h in hashes]
        if any(len(h) != 32 for h in decoded):
            raise ValueError("compact range hash is not 32 bytes")
        return cls(size, decoded)

    def copy(self) -> CompactRange:
        return CompactRange(self.size, list(self.hashes))


def inclusion_proof(index: int, size: int, get: NodeHash) -> list[bytes]:
    """PATH(index, D[size]) per RFC 9162 §2.1.3.1."""
    if not 0 <= index < size:
        raise ValueError(f"index {index} not in tree of size {size}")
    proof: list[bytes] = []

    def path(m: int, lo: int, hi: int) -> None:
        n = hi - lo
        if n == 1:
            return
        k = _split(n)
        if m < k:
            path(m, lo, lo + k)
            proof.append(get(lo + k, hi))
        else:
            path(m - k, lo + k, hi)
            proof.append(get(lo, lo + k))

    path(index, 0, size)
    return proof


def verify_inclusion(leaf: bytes, index: int, size: int, proof: Sequence[bytes], root_hash: bytes) -> bool:
    """RFC 9162 §2.1.3.2; ``leaf`` is the leaf hash. Every proof element must be consumed."""
    if not 0 <= index < size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root_hash


def consistency_proof(m: int, n: int, get: NodeHash) -> list[bytes]:
    """PROOF(m, D[n]) per RFC 9162 §2.1.4.1 (empty for m == n or m == 0)."""
    if not 0 <= m <= n:
        raise ValueError(f"no consistency proof from {m} to {n}")
    if m in (0, n):
        return []
    proof: list[bytes] = []

    def sub(m: int, lo: int, hi: int, whole: bool) -> None:
        n = hi - lo
        if m == n:
            if not whole:
                proof.append(get(lo, hi))
            return
        k = _split(n)
        if m <= k:
            sub(m, lo, lo + k, whole)
            proof.append(get(lo + k, hi))
        else:
            sub(m - k, lo + k, hi, False)
            proof.append(get(lo, lo + k))

    sub(m, 0, n, True)
    return proof


def verify_consistency(m: int, n: int, root_m: bytes, root_n: bytes, proof: Sequence[bytes]) -> bool:
    """RFC 9162 §2.1.4.2: does the tree of size n extend the tree of size m? Remainders fail."""
    if m < 0 or m > n:
        return False
    if m == n:
        return not proof and root_m == root_n
    if m == 0:
        return not proof
    path = list(proof)
    if m & (m - 1) == 0:
        path.insert(0, root_m)
    if not path:
        return False
    fn, sn = m - 1, n - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == root_m and sr == root_n and sn == 0
