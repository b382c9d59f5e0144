"""Append planning: the pure step of a log write (Tessera's "sequence, then integrate").

Given the head the writer read and the operation's entry specs, :func:`plan_append` numbers the
entries, chains them, extends the Merkle compact range and gives the new size, root and chain head:
everything the claim transaction writes, computed without I/O. The storage adapter only claims
``size: n -> n + k`` on condition that the head is still ``n``; a stale plan fails the claim and is
planned again from the fresh head.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from acx.core import log as logcore
from acx.core import merkle
from acx.core.checkpoint import Checkpoint


@dataclass(frozen=True, slots=True)
class LogHead:
    """What a writer plans from: size, hash of the last entry, compact range of the Merkle tree."""

    size: int
    chain_head: str
    range: merkle.CompactRange

    @classmethod
    def empty(cls) -> LogHead:
        return cls(0, logcore.GENESIS, merkle.CompactRange())

    @property
    def root(self) -> bytes:
        return self.range.root()


@dataclass(frozen=True, slots=True)
class EntrySpec:
    """One entry to append: what it records, and the row key it writes (None: no row, e.g. a lock)."""

    operation: str
    tier: str
    content_hash: str
    key: str | None
    covers: logcore.Covers | None = None
    extra: tuple[tuple[str, str], ...] = ()  # optional payload fields (logcore.OPTIONAL), as pairs


@dataclass(frozen=True, slots=True)
class AppendPlan:
    """The planned entries and the head after them."""

    first_seq: int
    entries: list[logcore.Entry]
    head: LogHead

    @property
    def size(self) -> int:
        return self.head.size

    def checkpoint(self, origin: str) -> Checkpoint:
        return Checkpoint(origin, self.head.size, self.head.root, self.head.chain_head)


def plan_append(
    head: LogHead, specs: Sequence[EntrySpec], *, actor: str, chain: str, created_at: str
) -> AppendPlan:
    """Number, chain and hash ``specs`` after ``head``; raises :class:`~acx.core.log.EntryError` on a
    malformed spec (the payload is validated as the verifier will)."""
    prev = head.chain_head
    rng = head.range.copy()
    entries: list[logcore.Entry] = []
    for i, spec in enumerate(specs):
        seq = head.size + i
        payload = logcore.make_payload(
            actor=actor,
            chain=chain,
            seq=seq,
            operation=spec.operation,
            tier=spec.tier,
            content_hash=spec.content_hash,
            created_at=created_at,
            covers=_covers(spec.covers, seq, prev, i),
            extra=dict(spec.extra) if spec.extra else None,
        )
        h = logcore.entry_hash(prev, payload)
        rng.append(bytes.fromhex(h))
        entries.append(logcore.Entry(seq, h, prev, payload, spec.key))
        prev = h
    return AppendPlan(head.size, entries, LogHead(head.size + len(specs), prev, rng))


def _covers(covers: logcore.Covers | None, seq: int, prev: str, i: int) -> dict[str, object] | None:
    """A spec's ``covers`` as the payload holds it; :data:`~acx.core.log.PREVIOUS` becomes the entry
    planned just before (its seq and hash), which must be part of the same commit."""
    if covers is None:
        return None
    if covers == logcore.PREVIOUS:
        if i == 0:
            raise logcore.EntryError("only a later entry of the same commit can cover the previous one")
        return {"seq": seq - 1, "hash": prev}
    return {"seq": covers.seq, "hash": covers.hash}
